//! Helpers shared by tracekit's kernel programs. Each program set is its own BPF object
//! (`src/bin/*.rs`): aya creates every map of an object when it loads it, so one object per
//! tool keeps a tool from paying for another's maps.
//!
//! Programs are thin entry points whose logic lives in `try_*` functions; load-time settings
//! are read-only globals the loader overrides, so the verifier prunes what a setting turns off.
#![no_std]
// bpfel has no AtomicU64::fetch_add; the intrinsic lowers to BPF's atomic add.
#![feature(core_intrinsics)]
#![allow(internal_features)]

pub mod unwind;

use aya_ebpf::{
    EbpfContext,
    bindings::BPF_NOEXIST,
    helpers::generated::bpf_get_stack,
    maps::{HashMap, LruHashMap, RingBuf},
};
use tracekit_common::profile::{
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
