//! User stacks unwound in the kernel from `.eh_frame` tables (layouts and the map layout in
//! `tracekit_common::unwind`), with a frame-pointer step where a frame has no table.
//!
//! Any program can use it: [`user_regs_at_sample`] (perf_event) or [`user_regs_of_task`]
//! (any tracing program) give the user registers, [`record_user_stack`] walks and stores the
//! stack like [`crate::record_stack`]. The walk is a `bpf_loop` (kernel 5.17+) of
//! [`MAX_STACK_DEPTH`] steps, each with two bounded binary searches, so the verifier sees one
//! step, not 127. Kernels without `bpf_loop` (5.10) run the same step as a global BPF
//! function (5.6+: the verifier checks it once, on its own) in a bounded loop (5.3+); the
//! loader picks the path (`UNWIND_BPF_LOOP`) and, on such kernels, drops the function
//! reference `bpf_loop` takes, which they cannot load. The user registers of a task come
//! from `bpf_task_pt_regs` (5.15+), else from the top of its kernel stack
//! (`UNWIND_TASK_STACK_OFFSET`).
//!
//! The maps are defined by [`unwind_maps!`] in each object that unwinds.

use core::{ffi::c_void, ptr};

use aya_ebpf::{
    bindings::BPF_F_MMAPABLE,
    btf_maps::{Array as BtfArray, ArrayOfMaps},
    helpers::{bpf_probe_read_user, generated::bpf_loop},
    maps::{Array, HashMap, LruHashMap, PerCpuArray, RingBuf},
};
use tracekit_common::{
    cpu_sampler::{MAX_STACK_DEPTH, StackFrames},
    interp::{CodeKey, InterpConfig, InterpProcess, hotspot::CodeCache},
    unwind::{
        Cfa, MAPPING_SEARCH_STEPS, MAX_PROCESS_MAPPINGS, MAX_SHARDS, Mapping, ProcessMappings,
        ROW_SEARCH_STEPS, SHARD_ROWS, SHARD_ROWS_SHIFT, UnwindRow, UnwindStat, frame_cfa, ra,
    },
};

use crate::{Recorded, store_stack};

pub mod interp;
mod regs;

pub use regs::{sampled_in_exec, user_regs_at_sample, user_regs_of_task};

use interp::InterpWalk;

/// The array of shards `UNWIND_SHARDS` (see `tracekit_common::unwind`). Memory-mappable
/// shards, so that userspace fills one with a single copy instead of a syscall per row.
pub type Shards = ArrayOfMaps<
    BtfArray<UnwindRow, { SHARD_ROWS as usize }, { BPF_F_MMAPABLE as usize }>,
    { MAX_SHARDS as usize },
>;

/// The unwinder's maps, defined in each BPF object that unwinds by [`unwind_maps!`] (maps
/// defined in this library would be created with every object, used or not).
pub trait UnwindMaps {
    /// The rows, in shards.
    fn shards() -> &'static Shards;
    /// Every process's executable mappings, each process a sorted range.
    fn mappings() -> &'static Array<Mapping>;
    /// Pid (tgid) to its range of the mappings.
    fn processes() -> &'static HashMap<u32, ProcessMappings>;
    /// Per-CPU counters, indexed by [`UnwindStat`].
    fn stats() -> &'static PerCpuArray<u64>;
    /// Per-CPU state of the walk in progress: the `bpf_loop` callback finds it here.
    fn walk() -> &'static PerCpuArray<Walk>;
    /// Pid (tgid) to its interpreter (`tracekit_common::interp`).
    fn interp_processes() -> &'static HashMap<u32, InterpProcess>;
    /// The interpreter unwinders' kernel and libc layout (one entry).
    fn interp_config() -> &'static Array<InterpConfig>;
    /// Per-CPU counters of the interpreter unwinders, indexed by `InterpStat`.
    fn interp_stats() -> &'static PerCpuArray<u64>;
    /// Code objects announced already.
    fn interp_seen() -> &'static LruHashMap<CodeKey, u16>;
    /// Announcements of new code objects to userspace.
    fn interp_codes() -> &'static RingBuf;
    /// Pid (tgid) to its JVM's code cache (`tracekit_common::interp::hotspot::CodeCache`).
    fn hotspot_code() -> &'static HashMap<u32, CodeCache>;
    /// 1: the kernel has `bpf_loop` (`UNWIND_BPF_LOOP`, set by the loader).
    fn bpf_loop() -> u8;
    /// `task_struct.stack`'s offset where the kernel has no `bpf_task_pt_regs`
    /// (`UNWIND_TASK_STACK_OFFSET`), 0: it has.
    fn task_stack_offset() -> u32;
    /// arm64: `pt_regs.syscallno`'s offset, from the kernel's BTF
    /// (`UNWIND_SYSCALLNO_OFFSET`); 0: unknown (x86_64 reads the uapi `orig_rax`).
    fn syscallno_offset() -> u32;
    /// One [`step`], run as the object's global BPF function (`tracekit_unwind_step`).
    fn global_step(index: u64) -> i64;
}

/// Defines the unwinder's maps (`UNWIND_SHARDS`, `UNWIND_MAPPINGS`, `UNWIND_PROCESSES`,
/// `UNWIND_STATS`, `UNWIND_WALK`) in the calling BPF object, and `$name`, the
/// [`UnwindMaps`] to pass to [`record_user_stack`].
#[macro_export]
macro_rules! unwind_maps {
    ($name:ident) => {
        #[aya_ebpf::macros::btf_map]
        static UNWIND_SHARDS: $crate::unwind::Shards = $crate::unwind::Shards::new();
        #[aya_ebpf::macros::map]
        static UNWIND_MAPPINGS: aya_ebpf::maps::Array<tracekit_common::unwind::Mapping> =
            aya_ebpf::maps::Array::with_max_entries(tracekit_common::unwind::MAX_MAPPINGS, 0);
        #[aya_ebpf::macros::map]
        static UNWIND_PROCESSES: aya_ebpf::maps::HashMap<
            u32,
            tracekit_common::unwind::ProcessMappings,
        > = aya_ebpf::maps::HashMap::with_max_entries(tracekit_common::unwind::MAX_PROCESSES, 0);
        #[aya_ebpf::macros::map]
        static UNWIND_STATS: aya_ebpf::maps::PerCpuArray<u64> =
            aya_ebpf::maps::PerCpuArray::with_max_entries(
                tracekit_common::unwind::UNWIND_STAT_COUNT,
                0,
            );
        #[aya_ebpf::macros::map]
        static UNWIND_WALK: aya_ebpf::maps::PerCpuArray<$crate::unwind::Walk> =
            aya_ebpf::maps::PerCpuArray::with_max_entries(1, 0);
        #[aya_ebpf::macros::map]
        static INTERP_PROCESSES: aya_ebpf::maps::HashMap<
            u32,
            tracekit_common::interp::InterpProcess,
        > = aya_ebpf::maps::HashMap::with_max_entries(
            tracekit_common::interp::MAX_INTERP_PROCESSES,
            0,
        );
        #[aya_ebpf::macros::map]
        static INTERP_CONFIG: aya_ebpf::maps::Array<tracekit_common::interp::InterpConfig> =
            aya_ebpf::maps::Array::with_max_entries(1, 0);
        #[aya_ebpf::macros::map]
        static INTERP_STATS: aya_ebpf::maps::PerCpuArray<u64> =
            aya_ebpf::maps::PerCpuArray::with_max_entries(
                tracekit_common::interp::INTERP_STAT_COUNT,
                0,
            );
        #[aya_ebpf::macros::map]
        static INTERP_SEEN: aya_ebpf::maps::LruHashMap<tracekit_common::interp::CodeKey, u16> =
            aya_ebpf::maps::LruHashMap::with_max_entries(
                tracekit_common::interp::MAX_SEEN_CODES,
                0,
            );
        #[aya_ebpf::macros::map]
        static INTERP_CODES: aya_ebpf::maps::RingBuf =
            aya_ebpf::maps::RingBuf::with_byte_size(tracekit_common::interp::CODES_RING_BYTES, 0);
        #[aya_ebpf::macros::map]
        static HOTSPOT_CODE: aya_ebpf::maps::HashMap<
            u32,
            tracekit_common::interp::hotspot::CodeCache,
        > = aya_ebpf::maps::HashMap::with_max_entries(
            tracekit_common::interp::hotspot::MAX_JVMS,
            0,
        );

        /// 1: the kernel has `bpf_loop` (5.17+); 0: the walk is a bounded loop of calls of
        /// `tracekit_unwind_step`.
        #[unsafe(no_mangle)]
        static UNWIND_BPF_LOOP: aya_ebpf::Global<u8> = aya_ebpf::Global::new(1);
        /// `task_struct.stack`'s offset, from the kernel's BTF, on kernels without
        /// `bpf_task_pt_regs` (before 5.15); 0: the helper finds a task's user registers.
        #[unsafe(no_mangle)]
        static UNWIND_TASK_STACK_OFFSET: aya_ebpf::Global<u32> = aya_ebpf::Global::new(0);
        /// arm64: `pt_regs.syscallno`'s offset, from the kernel's BTF; 0: unknown.
        #[unsafe(no_mangle)]
        static UNWIND_SYSCALLNO_OFFSET: aya_ebpf::Global<u32> = aya_ebpf::Global::new(0);

        /// One step of the walk as a global BPF function: the verifier checks it once, on
        /// its own (it takes and returns scalars only), so a loop of 127 calls costs the
        /// verifier 127 calls, not 127 steps. For kernels without `bpf_loop`. The step is
        /// inlined here, not called: a frame more would take the engine's deepest chain
        /// past the kernel's 512 bytes of stack.
        #[unsafe(no_mangle)]
        #[inline(never)]
        pub extern "C" fn tracekit_unwind_step(_index: u64) -> i64 {
            $crate::unwind::step_inline::<$name>()
        }

        /// This object's unwinder maps.
        struct $name;

        impl $crate::unwind::UnwindMaps for $name {
            #[inline(always)]
            fn shards() -> &'static $crate::unwind::Shards {
                &UNWIND_SHARDS
            }
            #[inline(always)]
            fn mappings() -> &'static aya_ebpf::maps::Array<tracekit_common::unwind::Mapping> {
                &UNWIND_MAPPINGS
            }
            #[inline(always)]
            fn processes()
            -> &'static aya_ebpf::maps::HashMap<u32, tracekit_common::unwind::ProcessMappings> {
                &UNWIND_PROCESSES
            }
            #[inline(always)]
            fn stats() -> &'static aya_ebpf::maps::PerCpuArray<u64> {
                &UNWIND_STATS
            }
            #[inline(always)]
            fn walk() -> &'static aya_ebpf::maps::PerCpuArray<$crate::unwind::Walk> {
                &UNWIND_WALK
            }
            #[inline(always)]
            fn interp_processes()
            -> &'static aya_ebpf::maps::HashMap<u32, tracekit_common::interp::InterpProcess> {
                &INTERP_PROCESSES
            }
            #[inline(always)]
            fn interp_config()
            -> &'static aya_ebpf::maps::Array<tracekit_common::interp::InterpConfig> {
                &INTERP_CONFIG
            }
            #[inline(always)]
            fn interp_stats() -> &'static aya_ebpf::maps::PerCpuArray<u64> {
                &INTERP_STATS
            }
            #[inline(always)]
            fn interp_seen()
            -> &'static aya_ebpf::maps::LruHashMap<tracekit_common::interp::CodeKey, u16> {
                &INTERP_SEEN
            }
            #[inline(always)]
            fn interp_codes() -> &'static aya_ebpf::maps::RingBuf {
                &INTERP_CODES
            }
            #[inline(always)]
            fn hotspot_code()
            -> &'static aya_ebpf::maps::HashMap<u32, tracekit_common::interp::hotspot::CodeCache>
            {
                &HOTSPOT_CODE
            }
            #[inline(always)]
            fn bpf_loop() -> u8 {
                UNWIND_BPF_LOOP.load()
            }
            #[inline(always)]
            fn task_stack_offset() -> u32 {
                UNWIND_TASK_STACK_OFFSET.load()
            }
            #[inline(always)]
            fn syscallno_offset() -> u32 {
                UNWIND_SYSCALLNO_OFFSET.load()
            }
            #[inline(always)]
            fn global_step(index: u64) -> i64 {
                tracekit_unwind_step(index)
            }
        }
    };
}

/// The registers an unwind starts from: where user code was interrupted.
#[derive(Clone, Copy)]
pub struct UserRegs {
    pub ip: u64,
    pub sp: u64,
    /// The frame pointer (x86_64's RBP, arm64's x29).
    pub bp: u64,
    /// arm64's link register (x30): a leaf's return address until it saves it; 0 on
    /// x86_64, where calls push the return address.
    pub lr: u64,
}

const RUNNING: u32 = 0;
const COMPLETE: u32 = 1;
const FAILED: u32 = 2;

/// The walk in progress, with the frames found so far and the last mapping used.
#[repr(C)]
pub struct Walk {
    pc: u64,
    sp: u64,
    bp: u64,
    /// arm64's link register while the first frame is stepped, then 0 (no caller's is known).
    lr: u64,
    len: u32,
    status: u32,
    map_first: u32,
    map_count: u32,
    m_begin: u64,
    m_end: u64,
    m_bias: u64,
    m_first_row: u32,
    m_rows: u32,
    /// Native frames stepped past so far (0: the PC is the leaf's, exact).
    native_steps: u32,
    /// 1: `sp` is only a lower bound of the frame's stack pointer (after an arm64
    /// frame-pointer step, [`frame_cfa`]); 0: it is the frame's.
    sp_below: u32,
    /// The word the next step records after the frame just recorded: a HotSpot
    /// interpreted frame's fingerprint (`tracekit_common::interp::hotspot::
    /// encode_fingerprint`), a CPython frame's generation (`tracekit_common::interp::
    /// python::encode_generation`); 0: none.
    fingerprint: u64,
    /// Interpreter frames recorded in the place of eval-loop frames.
    interp: InterpWalk,
    frames: StackFrames,
}

#[inline(always)]
fn bump<M: UnwindMaps>(stat: UnwindStat) {
    if let Some(counter) = M::stats().get_ptr_mut(stat as u32) {
        // SAFETY: per-CPU slot, only this CPU writes it while the program runs.
        unsafe { *counter += 1 };
    }
}

/// Walks the user stack of process `pid` from `regs` and stores it in `stacks` under its
/// hash tagged with `generation` (for interval drains), as [`crate::record_stack`] does with
/// the kernel's frame-pointer walk.
#[inline(always)]
pub fn record_user_stack<M: UnwindMaps>(
    regs: &UserRegs,
    pid: u32,
    stacks: &HashMap<u64, StackFrames>,
    generation: u32,
) -> Recorded {
    let Some(walk) = M::walk().get_ptr_mut(0) else {
        return Recorded::WalkError;
    };
    // SAFETY: per-CPU map value, used by this program run alone.
    let w = unsafe { &mut *walk };
    w.frames = [0; MAX_STACK_DEPTH];
    w.pc = regs.ip;
    w.sp = regs.sp;
    w.bp = regs.bp;
    w.lr = regs.lr;
    w.len = 0;
    w.status = RUNNING;
    w.m_begin = 0;
    w.m_end = 0;
    w.native_steps = 0;
    w.sp_below = 0;
    w.fingerprint = 0;
    w.interp.start::<M>(pid);
    // SAFETY: plain lookup; the value is copied out at once.
    match unsafe { M::processes().get(&pid) } {
        Some(process) => {
            w.map_first = process.first;
            w.map_count = process.count;
        }
        None => {
            w.map_first = 0;
            w.map_count = 0;
            bump::<M>(UnwindStat::NoProcess);
            crate::log::unwind_stopped(M::stats(), UnwindStat::NoProcess, pid, 0, regs.ip);
        }
    }
    bump::<M>(UnwindStat::Stacks);
    if M::bpf_loop() != 0 {
        // SAFETY: `step` is a static function of the callback's signature; it finds its state
        // in UNWIND_WALK, so the context is null.
        unsafe {
            bpf_loop(
                MAX_STACK_DEPTH as u32,
                step::<M> as *mut c_void,
                ptr::null_mut(),
                0,
            )
        };
    } else {
        for index in 0..MAX_STACK_DEPTH as u64 {
            if M::global_step(index) != 0 {
                break;
            }
        }
    }
    // The helper may have run the callback fewer times than asked if it failed outright.
    let w = unsafe { &mut *walk };
    // The last frame's fingerprint word, when the walk ended at its frame.
    let len = w.len as usize;
    if w.fingerprint != 0 && len < MAX_STACK_DEPTH {
        w.frames[len] = w.fingerprint;
        w.len += 1;
    }
    w.interp.finish::<M>();
    let stopped = match w.status {
        COMPLETE => {
            bump::<M>(UnwindStat::Complete);
            None
        }
        FAILED => Some(UnwindStat::ReadErrors),
        _ => (w.pc != 0).then_some(UnwindStat::Truncated),
    };
    if let Some(stat) = stopped {
        bump::<M>(stat);
        crate::log::unwind_stopped(M::stats(), stat, pid, w.len, w.pc);
    }
    let len = w.len as usize;
    if len == 0 {
        return Recorded::None;
    }
    store_stack(&w.frames, len.min(MAX_STACK_DEPTH), stacks, generation)
}

/// One frame (`bpf_loop`'s callback): record the PC, then find the caller's registers.
/// Returns 1 to stop the loop.
extern "C" fn step<M: UnwindMaps>(_index: u64, _ctx: *mut c_void) -> i64 {
    step_inline::<M>()
}

/// The body of [`step`] and of the global `tracekit_unwind_step` ([`unwind_maps!`]).
#[doc(hidden)]
#[inline(always)]
pub fn step_inline<M: UnwindMaps>() -> i64 {
    let Some(walk) = M::walk().get_ptr_mut(0) else {
        return 1;
    };
    // SAFETY: per-CPU map value, used by this program run alone.
    let w = unsafe { &mut *walk };
    let len = w.len as usize;
    if len >= MAX_STACK_DEPTH {
        return 1;
    }
    // A return address points after the call; the call itself may be the function's last
    // instruction, so look up the address before it (the leaf's PC is exact).
    // A HotSpot interpreted frame's fingerprint word, in a step of its own: its index is
    // bounded by the check above (`len + 1` after a check of `len` is not, to the verifier).
    if w.fingerprint != 0 {
        w.frames[len] = w.fingerprint;
        w.fingerprint = 0;
        w.len += 1;
        return 0;
    }
    let pc = if w.native_steps == 0 { w.pc } else { w.pc - 1 };
    // An eval loop's frame is recorded as the interpreter frames it runs.
    match interp::frame_at::<M>(&mut w.interp, pc) {
        interp::InterpFrame::Native => w.frames[len] = w.pc,
        interp::InterpFrame::Frame { word, last, after } => {
            // A frame whose generation word would not fit is not recorded: the stack is
            // cut before it (without the word it would be named as another object).
            if after != 0 && len + 1 >= MAX_STACK_DEPTH {
                return 1;
            }
            w.frames[len] = word;
            w.fingerprint = after;
            if !last {
                w.len += 1;
                return 0;
            }
        }
    }
    w.len += 1;
    w.native_steps += 1;
    if pc < w.m_begin || pc >= w.m_end {
        find_mapping::<M>(w, pc);
    }
    let stepped = if interp::v8::in_code(&w.interp, pc, w.m_end == 0 || w.m_rows == 0) {
        // V8's code keeps frame pointers; its JavaScript frames are recorded as functions.
        // The frame's saved frame pointer and return address come with its slots.
        let frame = interp::v8::frame::<M>(&mut w.interp, w.bp, pc);
        if let Some(word) = frame.word {
            w.frames[len] = word;
        }
        frame_pointer_step_read::<M>(w, frame.caller)
    } else if interp::hotspot::in_interpreter(&w.interp, pc) {
        // HotSpot's interpreter keeps frame pointers; its frames are recorded as methods.
        // Its method's fingerprint follows it, written by the next step (a frame without
        // one is named `[unknown]`).
        if let Some(word) = interp::hotspot::frame::<M>(&w.interp, w.bp, &mut w.fingerprint) {
            w.frames[len] = word;
        }
        // A compiled caller's frame starts at the sender sp the frame saved, not above
        // the return address (a c2i adapter pushed the arguments between them).
        let sender_sp = interp::hotspot::sender_sp(&w.interp, w.bp);
        let stepped = frame_pointer_step::<M>(w);
        if let Some(sender_sp) = sender_sp
            && stepped
            && sender_sp >= w.sp
            && sender_sp - w.sp < interp::hotspot::MAX_SENDER_GAP
        {
            w.sp = sender_sp;
        }
        stepped
    } else if let Some(blob) = interp::hotspot::code_blob::<M>(&w.interp, pc) {
        // HotSpot's code cache: compiled methods and stubs, recorded as the blob and the
        // pc's offset in it, stepped by the blob's frame size (C1/C2 code keeps no frame
        // pointer), or by frame pointer where it states none (stubs that keep one).
        // A leaf sampled in its prologue or epilogue has a frame partly built or torn down.
        w.frames[len] = interp::hotspot::compiled_frame::<M>(&w.interp, blob.address, w.pc);
        let edge = if w.native_steps == 1 && blob.frame_bytes != 0 {
            interp::hotspot::edge(&w.interp, blob.address, pc)
        } else {
            interp::hotspot::Edge::Whole
        };
        match edge {
            _ if blob.frame_bytes == 0 => frame_pointer_step::<M>(w),
            interp::hotspot::Edge::Whole => frame_size_step::<M>(w, blob.frame_bytes, true),
            interp::hotspot::Edge::RbpInRegister => {
                frame_size_step::<M>(w, blob.frame_bytes, false)
            }
            interp::hotspot::Edge::SavedRbp => frame_size_step::<M>(w, 16, true),
            interp::hotspot::Edge::ReturnAddress => frame_size_step::<M>(w, 8, false),
            interp::hotspot::Edge::LinkRegister => link_register_step(w, 0),
            interp::hotspot::Edge::AllocatedLinkRegister => link_register_step(w, blob.frame_bytes),
        }
    } else if w.m_end == 0 {
        bump::<M>(UnwindStat::NoMappingFrames);
        frame_pointer_step::<M>(w)
    } else if w.m_rows == 0 {
        bump::<M>(UnwindStat::NoTableFrames);
        frame_pointer_step::<M>(w)
    } else {
        table_step::<M>(w, pc)
    };
    w.lr = 0;
    if !stepped {
        return 1;
    }
    if w.pc == 0 {
        w.status = COMPLETE;
        return 1;
    }
    0
}

/// Caches the mapping of `pc` in the walk (`m_end == 0`: none holds it).
#[inline(always)]
fn find_mapping<M: UnwindMaps>(w: &mut Walk, pc: u64) {
    // Volatile: two adjacent zeroed words would be a call of `memset`, a BPF function whose
    // frame the step's call chain has no room for on Debian 6.1 (512 bytes in all).
    // SAFETY: fields of this CPU's walk.
    unsafe {
        core::ptr::write_volatile(&mut w.m_begin, 0);
        core::ptr::write_volatile(&mut w.m_end, 0);
    }
    let count = w.map_count.min(MAX_PROCESS_MAPPINGS);
    if count == 0 {
        return;
    }
    let mut lo = w.map_first;
    let mut hi = w.map_first + count;
    // Invariant: the mapping holding pc, if any, is in [lo, hi).
    for _ in 0..MAPPING_SEARCH_STEPS {
        if hi - lo <= 1 {
            break;
        }
        let mid = lo + (hi - lo) / 2;
        let Some(mapping) = M::mappings().get(mid) else {
            return;
        };
        if mapping.begin <= pc {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let Some(mapping) = M::mappings().get(lo) else {
        return;
    };
    if mapping.begin <= pc && pc < mapping.end {
        w.m_begin = mapping.begin;
        w.m_end = mapping.end;
        w.m_bias = mapping.bias;
        w.m_first_row = mapping.first_row;
        w.m_rows = mapping.rows;
    }
}

/// The row covering `elf_pc` in the table `[first, first + rows)`.
#[inline(always)]
fn find_row<M: UnwindMaps>(first: u32, rows: u32, elf_pc: u32) -> Option<UnwindRow> {
    let mut lo = first;
    let mut hi = first + rows;
    // Invariant: the last row with pc <= elf_pc, if any, is in [lo, hi).
    for _ in 0..ROW_SEARCH_STEPS {
        if hi - lo <= 1 {
            break;
        }
        let mid = lo + (hi - lo) / 2;
        if row::<M>(mid)?.pc <= elf_pc {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let found = row::<M>(lo)?;
    (found.pc <= elf_pc).then_some(found)
}

#[inline(always)]
fn row<M: UnwindMaps>(index: u32) -> Option<UnwindRow> {
    M::shards()
        .get_value(index >> SHARD_ROWS_SHIFT, &(index & (SHARD_ROWS - 1)))
        .copied()
}

#[inline(always)]
fn read_user(address: u64) -> Option<u64> {
    // SAFETY: bpf_probe_read_user faults safely on a bad address.
    unsafe { bpf_probe_read_user(address as *const u64) }.ok()
}

/// Steps through the table row of `pc`; falls back to a frame-pointer step where the row
/// cannot say. Returns false when the walk ends.
#[inline(always)]
fn table_step<M: UnwindMaps>(w: &mut Walk, pc: u64) -> bool {
    let elf_pc = pc.wrapping_sub(w.m_bias);
    let found = if elf_pc <= u64::from(u32::MAX) {
        find_row::<M>(w.m_first_row, w.m_rows, elf_pc as u32)
    } else {
        None
    };
    let Some(row) = found else {
        bump::<M>(UnwindStat::UnsupportedFrames);
        return frame_pointer_step::<M>(w);
    };
    let ra_at = row.cfa_rule >> ra::SHIFT;
    let cfa = match frame_cfa(&row, w.pc, w.sp, w.bp, w.sp_below == 0) {
        Cfa::At(cfa) => cfa,
        Cfa::End => {
            w.pc = 0;
            w.status = COMPLETE;
            bump::<M>(UnwindStat::DwarfFrames);
            return false;
        }
        Cfa::Unknown => {
            bump::<M>(UnwindStat::UnsupportedFrames);
            return frame_pointer_step::<M>(w);
        }
    };
    // The CFA is above the frame's stack pointer (or at it, in an arm64 leaf that has
    // pushed nothing); anything else is a corrupt walk.
    if cfa < w.sp || (cfa == w.sp && ra_at != ra::LINK_REGISTER) {
        w.status = FAILED;
        return false;
    }
    let saved = match ra_at {
        ra::LINK_REGISTER if w.lr == 0 => {
            // Only the first frame's link register is known.
            bump::<M>(UnwindStat::UnsupportedFrames);
            return frame_pointer_step::<M>(w);
        }
        ra::LINK_REGISTER => Some(w.lr),
        ra::FRAME_RECORD => {
            read_user(cfa.wrapping_add((i64::from(row.rbp_offset_words) * 8 + 8) as u64))
        }
        words => read_user(cfa - (u64::from(words) + 1) * 8),
    };
    let Some(return_address) = saved.map(strip_pointer_authentication) else {
        w.status = FAILED;
        return false;
    };
    if row.rbp_offset_words != 0 {
        let at = cfa.wrapping_add((i64::from(row.rbp_offset_words) * 8) as u64);
        let Some(bp) = read_user(at) else {
            w.status = FAILED;
            return false;
        };
        w.bp = bp;
    }
    bump::<M>(UnwindStat::DwarfFrames);
    w.sp = cfa;
    w.sp_below = 0;
    w.pc = return_address;
    true
}

/// A HotSpot compiled frame's step: its frame (`frame_bytes`, the return address at its
/// top, and the saved RBP below it when `saved_bp`; otherwise RBP is still the caller's)
/// is above the stack pointer.
#[inline(always)]
fn frame_size_step<M: UnwindMaps>(w: &mut Walk, frame_bytes: u64, saved_bp: bool) -> bool {
    let sp = w.sp + frame_bytes;
    let Some(return_address) = read_user(sp - 8) else {
        w.status = FAILED;
        return false;
    };
    if saved_bp {
        let Some(bp) = read_user(sp - 16) else {
            w.status = FAILED;
            return false;
        };
        w.bp = bp;
    }
    w.sp = sp;
    w.pc = strip_pointer_authentication(return_address);
    true
}

/// An arm64 leaf's step whose return address is still in the link register and whose
/// caller's x29 is still in x29: its frame (`frame_bytes`, 0 when not allocated yet, or
/// freed) is above the stack pointer.
#[inline(always)]
fn link_register_step(w: &mut Walk, frame_bytes: u64) -> bool {
    if w.lr == 0 {
        w.status = FAILED;
        return false;
    }
    w.sp += frame_bytes;
    w.pc = strip_pointer_authentication(w.lr);
    true
}

/// The classic step: RBP points at the saved RBP, the return address above it.
#[inline(always)]
fn frame_pointer_step<M: UnwindMaps>(w: &mut Walk) -> bool {
    frame_pointer_step_read::<M>(w, interp::v8::NO_CALLER)
}

/// [`frame_pointer_step`] with the saved RBP and return address already read (`read`:
/// the words at RBP and RBP + 8), or reading them (`read.read` false).
#[inline(always)]
fn frame_pointer_step_read<M: UnwindMaps>(w: &mut Walk, read: interp::v8::Caller) -> bool {
    let bp = w.bp;
    if bp == 0 {
        // Code that keeps frame pointers zeroes RBP in the outermost frame.
        w.pc = 0;
        w.status = COMPLETE;
        return false;
    }
    if bp < w.sp {
        w.status = FAILED;
        return false;
    }
    let (saved_bp, return_address) = if read.read {
        (read.bp, read.pc)
    } else {
        match (read_user(bp), read_user(bp + 8)) {
            (Some(saved_bp), Some(return_address)) => (saved_bp, return_address),
            _ => {
                w.status = FAILED;
                return false;
            }
        }
    };
    // x86_64's frame record is at the top of the frame: its end is the caller's stack
    // pointer. GCC's arm64 record is at the bottom, below the frame's other slots.
    w.sp = bp + 16;
    w.sp_below = u32::from(cfg!(bpf_target_arch = "aarch64"));
    w.bp = saved_bp;
    w.pc = strip_pointer_authentication(return_address);
    true
}

/// A return address without the pointer-authentication code arm64 code built with
/// `-mbranch-protection` signs it with (bits above the 48-bit user address space).
#[inline(always)]
fn strip_pointer_authentication(address: u64) -> u64 {
    if cfg!(bpf_target_arch = "aarch64") {
        address & ((1 << 48) - 1)
    } else {
        address
    }
}
