//! Helpers shared by tracekit's kernel programs. Each program set is its own BPF object
//! (`src/bin/*.rs`: `cpu_sampler`, `engine`, `ksyms`): aya creates every map of an object
//! when it loads it, so one object per program set keeps one from paying for another's maps.
//!
//! Programs are thin entry points whose logic lives in `try_*` functions; load-time settings
//! are read-only globals the loader overrides, so the verifier prunes what a setting turns off.
#![no_std]
// bpfel has no AtomicU64::fetch_add; the intrinsic lowers to BPF's atomic add.
#![feature(core_intrinsics)]
#![allow(internal_features)]

pub mod engine;
pub mod log;
pub mod unwind;

use aya_ebpf::{
    EbpfContext,
    bindings::BPF_NOEXIST,
    helpers::generated::bpf_get_stack,
    maps::{HashMap, LruHashMap, RingBuf},
};
use tracekit_common::cpu_sampler::{
    MAX_STACK_DEPTH, ProcessEvent, ProcessEventKind, StackFrames, stack_hash, tag_stack_hash,
};

/// Atomically adds `value` to the map value at `ptr` (a value shared by all CPUs).
#[inline(always)]
pub fn atomic_add(ptr: *mut u64, value: u64) {
    // SAFETY: `ptr` comes from a successful map lookup and stays valid while the program runs.
    unsafe {
        core::intrinsics::atomic_xadd::<u64, u64, { core::intrinsics::AtomicOrdering::Relaxed }>(
            ptr, value,
        )
    };
}

/// The current process id (tgid) and thread id.
#[inline(always)]
pub fn current_pid_tid() -> (u32, u32) {
    let id = aya_ebpf::helpers::bpf_get_current_pid_tgid();
    ((id >> 32) as u32, id as u32)
}

/// Whether process `pid` is traced: never the loader itself (`self_pid`); when `filter` is
/// set, only the pids in `targets` (`-p`, `-- CMD` and its children).
#[inline(always)]
pub fn selected(pid: u32, self_pid: u32, filter: u8, targets: &HashMap<u32, u8>) -> bool {
    if pid == self_pid {
        return false;
    }
    // SAFETY: the value is only tested for presence.
    filter == 0 || unsafe { targets.get(pid) }.is_some()
}

/// Whether the current task is in cgroup v2 `id` or below it: its ancestor at `level`
/// (the root is 0) is `id` (`--cgroup PATH`; `id` is PATH's inode number).
#[inline(always)]
pub fn in_cgroup(id: u64, level: u32) -> bool {
    // SAFETY: plain helper call; a level deeper than the task's cgroup gives 0.
    unsafe { aya_ebpf::helpers::generated::bpf_get_current_ancestor_cgroup_id(level as i32) == id }
}

/// `syscalls:sys_enter_mmap` logic: a process mapping executable code (the dynamic linker
/// loading a library, a `dlopen`) is forgotten, so it is announced again at its next event
/// and userspace re-reads its memory map with the new code in it. `prot_offset` is `prot`'s
/// offset, from the event's format file.
#[inline(always)]
pub fn forget_on_exec_mmap(
    ctx: &aya_ebpf::programs::TracePointContext,
    prot_offset: u32,
    known: &LruHashMap<u32, u8>,
) {
    const PROT_EXEC: u64 = 4;
    // SAFETY: the offset comes from the event's format file; read_at checks the access.
    if let Ok(prot) = unsafe { ctx.read_at::<u64>(prot_offset as usize) }
        && prot & PROT_EXEC != 0
    {
        let (pid, _) = current_pid_tid();
        let _ = known.remove(pid);
    }
}

/// `sched:sched_process_fork` logic for `-- CMD`: a child of a selected process is selected.
/// `child_pid_offset` is `child_pid`'s offset, from the event's format file.
#[inline(always)]
pub fn follow_fork(
    ctx: &aya_ebpf::programs::TracePointContext,
    child_pid_offset: u32,
    targets: &HashMap<u32, u8>,
) {
    let (parent, _) = current_pid_tid();
    // SAFETY: the value is only tested for presence.
    if unsafe { targets.get(parent) }.is_none() {
        return;
    }
    // SAFETY: the offset comes from the event's format file; read_at checks the access.
    if let Ok(child) = unsafe { ctx.read_at::<i32>(child_pid_offset as usize) } {
        let _ = targets.insert(child as u32, 1, 0);
    }
}

/// What [`record_stack`] did.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// The stack is stored under this hash.
    Stack(u64),
    /// There is no stack of this kind (kernel stack of a user-mode event, user stack of a
    /// kernel thread).
    None,
    /// The kernel could not walk it.
    WalkError,
    /// The stack map is full.
    MapFull,
}

const EFAULT: i64 = 14;
const EEXIST: i64 = 17;

/// Copies the current stack (kernel, or user with `BPF_F_USER_STACK` in `flags`) into
/// `frames` and stores it in `stacks` under its [`stack_hash`]: a 64-bit content hash, so
/// distinct stacks never evict each other as they do in a `BPF_MAP_TYPE_STACK_TRACE`; its top
/// bit is the parity of `generation` ([`tag_stack_hash`]; engines always pass 0).
#[inline(always)]
pub fn record_stack<C: EbpfContext>(
    ctx: &C,
    frames: *mut StackFrames,
    stacks: &HashMap<u64, StackFrames>,
    flags: u64,
    generation: u32,
) -> Recorded {
    const BYTES: u32 = (MAX_STACK_DEPTH * 8) as u32;
    // SAFETY: `frames` is a map value of exactly BYTES bytes; the helper zero-fills what it
    // does not write.
    let copied = unsafe { bpf_get_stack(ctx.as_ptr(), frames.cast(), BYTES, flags) };
    if copied <= 0 {
        return if copied == -EFAULT || copied == 0 {
            Recorded::None
        } else {
            Recorded::WalkError
        };
    }
    let len = (copied as usize / 8).min(MAX_STACK_DEPTH);
    // SAFETY: the map value outlives this program run and nothing else aliases it.
    store_stack(unsafe { &*frames }, len, stacks, generation)
}

/// How far after the start of the function a call instruction called a leaf's PC may be:
/// more than any leaf worth repairing (libc's string functions are a few KiB), little enough
/// that a stale code address on the stack rarely passes.
const LEAF_MAX_BYTES: u64 = 32 * 1024;

/// Records the user stack of `regs` by frame pointers, as [`record_stack`] with
/// `BPF_F_USER_STACK` does, and repairs its first frame: a leaf that has not pushed a frame
/// (GCC's `-momit-leaf-frame-pointer`, libc's syscall wrappers, any function sampled before
/// its `push %rbp` or at its `ret`) leaves RBP at its caller's frame, so a frame-pointer walk
/// goes from the leaf to the caller's caller and the caller is lost. Its return address is
/// then the word at the top of the stack: when [`leaf_return`] finds one there, the walk is
/// stored one slot further and that address becomes frame 1. `regs` are the registers the
/// kernel walks from (the sampled user registers, or those saved at kernel entry).
#[inline(always)]
pub fn record_user_stack_fp<C: EbpfContext>(
    ctx: &C,
    frames: *mut StackFrames,
    stacks: &HashMap<u64, StackFrames>,
    regs: Option<&unwind::UserRegs>,
    generation: u32,
) -> Recorded {
    let flags = u64::from(aya_ebpf::bindings::BPF_F_USER_STACK);
    let Some(return_address) = regs.and_then(leaf_return) else {
        return record_stack(ctx, frames, stacks, flags, generation);
    };
    const BYTES: u32 = ((MAX_STACK_DEPTH - 1) * 8) as u32;
    // SAFETY: `frames` is a map value of MAX_STACK_DEPTH words; the walk goes to its words
    // 1.. (BYTES bytes), zero-filled after what it writes.
    let copied = unsafe {
        bpf_get_stack(
            ctx.as_ptr(),
            frames.cast::<u64>().add(1).cast(),
            BYTES,
            flags,
        )
    };
    if copied <= 0 {
        return if copied == -EFAULT || copied == 0 {
            Recorded::None
        } else {
            Recorded::WalkError
        };
    }
    // SAFETY: the map value outlives this program run and nothing else aliases it.
    let frames = unsafe { &mut *frames };
    // The walk must begin at the registers the leaf was found at; if not, walk again as is.
    if frames[1] != regs.map_or(0, |r| r.ip) {
        return record_stack(ctx, frames as *mut StackFrames, stacks, flags, generation);
    }
    // arm64: a function past its prologue (and before its first call) has the same return
    // address in x30 and in its frame record, which the walk has already followed.
    if cfg!(bpf_target_arch = "aarch64") && frames[2] == return_address {
        return record_stack(ctx, frames as *mut StackFrames, stacks, flags, generation);
    }
    frames[0] = frames[1];
    frames[1] = return_address;
    let len = (copied as usize / 8 + 1).min(MAX_STACK_DEPTH);
    store_stack(frames, len, stacks, generation)
}

/// The return address a leaf without a frame of its own left at the top of the stack:
/// the word at `regs.sp`, if the instruction before it is a call (`call rel32`, or
/// `call *rel32(%rip)` as `-fno-plt` code makes it) to a function that starts at most
/// [`LEAF_MAX_BYTES`] before `regs.ip`, directly or through a PLT stub (`jmp *GOT(%rip)`,
/// with or without `endbr64` and `bnd`). Anything else (a frame was pushed, the leaf saved
/// registers, an indirect call through a register) is `None`: the walk stays as the kernel
/// makes it.
#[cfg(bpf_target_arch = "x86_64")]
#[inline(always)]
fn leaf_return(regs: &unwind::UserRegs) -> Option<u64> {
    let return_address = read_user::<u64>(regs.sp)?;
    // The 8 bytes before the return address, as a little-endian word: the call's last byte
    // is the top byte.
    let before = read_user::<u64>(return_address.checked_sub(8)?)?;
    let rel32 = (before >> 32) as u32 as i32 as i64 as u64;
    let mut target = if (before >> 24) & 0xff == 0xe8 {
        return_address.wrapping_add(rel32)
    } else if (before >> 16) & 0xffff == 0x15ff {
        read_user::<u64>(return_address.wrapping_add(rel32))?
    } else {
        return None;
    };
    if !leaf_of(target, regs.ip) {
        target = plt_target(target)?;
    }
    leaf_of(target, regs.ip).then_some(return_address)
}

/// The return address a leaf without a frame record of its own still holds in the link
/// register (x30), if the instruction before it is a `bl` to a function that starts at most
/// [`LEAF_MAX_BYTES`] before `regs.ip`, directly or through a PLT stub (`adrp x16`,
/// `ldr x17, [x16, #off]`, ..., `br x17`). Anything else (an indirect `blr`, x30 reused
/// after a call returned) is `None`.
#[cfg(bpf_target_arch = "aarch64")]
#[inline(always)]
fn leaf_return(regs: &unwind::UserRegs) -> Option<u64> {
    // The pointer-authentication bits, if any, are above a 48-bit user address.
    let return_address = regs.lr & ((1 << 48) - 1);
    let call = read_user::<u32>(return_address.checked_sub(4)?)?;
    // bl imm26: 100101 imm26, the offset in instructions from the bl itself.
    if call & 0xfc00_0000 != 0x9400_0000 {
        return None;
    }
    let words = (((call & 0x03ff_ffff) << 6) as i32 >> 6) as i64;
    let mut target = (return_address - 4).wrapping_add((words * 4) as u64);
    if !leaf_of(target, regs.ip) {
        target = plt_target(target)?;
    }
    leaf_of(target, regs.ip).then_some(return_address)
}

/// Where the PLT stub at `stub` jumps: the GOT slot its `adrp x16, PAGE` and
/// `ldr x17, [x16, #OFF]` address, read.
#[cfg(bpf_target_arch = "aarch64")]
#[inline(always)]
fn plt_target(stub: u64) -> Option<u64> {
    let head = read_user::<u64>(stub)?;
    let (adrp, ldr) = (head as u32, (head >> 32) as u32);
    // adrp x16: 1 immlo(2) 10000 immhi(19) 10000; ldr x17, [x16, #imm12*8]: 0xf9400211 | imm12 << 10.
    if adrp & 0x9f00_001f != 0x9000_0010 || ldr & 0xffc0_03ff != 0xf940_0211 {
        return None;
    }
    let pages = ((((adrp >> 5) & 0x7_ffff) << 2 | (adrp >> 29) & 3) << 11) as i32 >> 11;
    let page = (stub & !0xfff).wrapping_add(((pages as i64) << 12) as u64);
    let slot = page + u64::from((ldr >> 10) & 0xfff) * 8;
    read_user::<u64>(slot)
}

/// Whether a function starting at `start` can hold `pc`.
#[inline(always)]
fn leaf_of(start: u64, pc: u64) -> bool {
    start <= pc && pc - start < LEAF_MAX_BYTES
}

/// Where the PLT stub at `stub` jumps: the GOT slot of its `jmp *rel32(%rip)`, read.
#[cfg(bpf_target_arch = "x86_64")]
#[inline(always)]
fn plt_target(stub: u64) -> Option<u64> {
    let head = read_user::<u64>(stub)?;
    // jmp *rel32(%rip): ff 25 rel32 (6 bytes); after endbr64 (f3 0f 1e fa), optionally
    // with a bnd prefix (f2), as .plt.sec entries are.
    let jmp_at = if head & 0xffff == 0x25ff {
        0
    } else if head & 0xffff_ffff == 0xfa1e_0ff3 && (head >> 32) & 0xff_ffff == 0x25_fff2 {
        5
    } else if head & 0xffff_ffff == 0xfa1e_0ff3 && (head >> 32) & 0xffff == 0x25ff {
        4
    } else {
        return None;
    };
    let rel32 = read_user::<u32>(stub + jmp_at + 2)? as i32 as i64 as u64;
    let slot = (stub + jmp_at + 6).wrapping_add(rel32);
    read_user::<u64>(slot)
}

#[inline(always)]
fn read_user<T>(address: u64) -> Option<T> {
    // SAFETY: bpf_probe_read_user faults safely on a bad address.
    unsafe { aya_ebpf::helpers::bpf_probe_read_user(address as *const T) }.ok()
}

/// Stores the first `len` of `frames` (zero after them) in `stacks` under its
/// [`stack_hash`] tagged with `generation`'s parity ([`tag_stack_hash`]), unless that stack
/// is there already.
#[inline(always)]
pub fn store_stack(
    frames: &StackFrames,
    len: usize,
    stacks: &HashMap<u64, StackFrames>,
    generation: u32,
) -> Recorded {
    let hash = tag_stack_hash(stack_hash(frames, len), generation);
    // SAFETY: the value is only tested for presence.
    if unsafe { stacks.get(hash) }.is_some() {
        return Recorded::Stack(hash);
    }
    match stacks.insert(hash, frames, u64::from(BPF_NOEXIST)) {
        Ok(()) => Recorded::Stack(hash),
        // Another CPU stored the same stack first.
        Err(err) if i64::from(err) == -EEXIST => Recorded::Stack(hash),
        Err(_) => Recorded::MapFull,
    }
}

/// Tells userspace, through `events`, about a process the first time it is seen (and again
/// after it calls exec, when the caller's exec hook forgets it), so its memory map can be
/// read while it lives. Returns false if the ring buffer was full (it is retried later).
#[inline(always)]
pub fn announce(pid: u32, known: &LruHashMap<u32, u8>, events: &RingBuf) -> bool {
    // SAFETY: the value is only tested for presence.
    if unsafe { known.get(pid) }.is_some() {
        return true;
    }
    let event = ProcessEvent {
        pid,
        kind: ProcessEventKind::FirstSample as u32,
    };
    if events.output::<ProcessEvent>(&event, 0).is_ok() {
        let _ = known.insert(pid, 1, 0);
        true
    } else {
        false
    }
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}
