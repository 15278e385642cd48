//! The engine's maps and load-time globals, defined in the `engine` object by
//! [`engine_maps!`](crate::engine_maps) (maps defined in this library would be created with
//! every object, used or not) and reached through [`EngineMaps`].

use aya_ebpf::maps::{HashMap, LruHashMap, PerCpuArray, PerCpuHashMap, RingBuf};
use tracekit_common::{
    cpu_sampler::StackFrames,
    engine::{
        AggKey, AggValue, CorrKey, MAX_OPERANDS, MAX_STRINGS, Plan, STR_BYTES, StartValue, TraceOut,
    },
};

use crate::unwind::UnwindMaps;

/// Per-CPU room for an event's values and the group key (the BPF stack is 512 bytes).
#[repr(C)]
pub struct Scratch {
    /// Integer operand values, by operand index.
    pub(crate) ints: [u64; MAX_OPERANDS],
    /// Probe arguments 0..6, and the return value at [`RET`](super::args::RET).
    pub args: [u64; 8],
    /// A stack being recorded.
    pub(crate) frames: StackFrames,
    /// String operand values, by string slot.
    pub(crate) strings: [[u8; STR_BYTES]; MAX_STRINGS],
    pub(crate) key: AggKey,
    /// By string slot: where its whole string is in `out`'s tail (`TraceRecord::str_spans`).
    pub(crate) str_spans: [u32; MAX_STRINGS],
    /// By string slot, 8 bits each: `TraceRecord::str_flags`.
    pub(crate) str_flags: u32,
    /// Bytes of `out`'s tail the event's strings use.
    pub(crate) tail_len: u32,
    /// A filter's string constant as words, the mask of its bytes, and a block of the string
    /// it is compared with (`filter::match_whole`): here, not on the stack, which a call
    /// chain shares (512 bytes).
    pub(crate) pattern: [u64; STR_BYTES / 8],
    pub(crate) mask: [u64; STR_BYTES / 8],
    pub(crate) window: [u64; STR_BYTES / 8 + 1],
    /// A record with whole strings, built to be sent ([`super::strings`]).
    pub(crate) out: TraceOut,
}

/// The engine's maps and globals in the object that defines them ([`engine_maps!`]).
/// The global readers read through a volatile load, so the compiler never folds the
/// build-time default and the verifier sees the loader's value as a constant.
///
/// [`engine_maps!`]: crate::engine_maps
pub trait EngineMaps {
    /// The unwinder's maps, for user stacks unwound from tables.
    type Unwind: UnwindMaps;
    /// `ENGINE_PLAN`: the main plan (events that are aggregated).
    fn plan() -> &'static Plan;
    /// `ENGINE_START_PLAN`: the start plan (events that only leave a timestamp).
    fn start_plan() -> &'static Plan;
    /// `ENGINE_SELF_PID`: the loader's own pid, never traced.
    fn self_pid() -> u32;
    /// `ENGINE_FILTER_PIDS`: 1 when only pids in `ENGINE_TARGETS` are traced.
    fn filter_pids() -> u8;
    /// `ENGINE_CGROUP_ID`: with `--cgroup`, the cgroup v2 id whose subtree is traced; 0
    /// without.
    fn cgroup_id() -> u64;
    /// `ENGINE_CGROUP_LEVEL`: that cgroup's depth below the hierarchy's root.
    fn cgroup_level() -> u32;
    /// `ENGINE_FORK_CHILD_PID_OFFSET`: `child_pid`'s offset in `sched:sched_process_fork`.
    fn fork_child_pid_offset() -> u32;
    /// `ENGINE_MMAP_PROT_OFFSET`: `prot`'s offset in `syscalls:sys_enter_mmap`.
    fn mmap_prot_offset() -> u32;
    /// `ENGINE_DENTRY_WALK`: the kernel's offsets for directories by their dentries
    /// (`operand::DIR_PATH`).
    fn dentry_walk() -> &'static tracekit_common::engine::DentryWalk;
    /// `ENGINE_USER_UNWIND`: 1 when user stacks are unwound from tables, 0 by frame pointers.
    fn user_unwind() -> u8;
    /// `KERNEL_FUNC_IP`: 1 when the kernel has `bpf_get_func_ip` in kprobes (5.15+), 0 when
    /// a kprobe's function is its saved instruction pointer less the `int3` (set by the
    /// loader).
    fn func_ip_helper() -> u8;
    /// `ENGINE_ARRAY`: array layout aggregates.
    fn array() -> &'static PerCpuArray<AggValue>;
    /// `ENGINE_HASH`: hash layout aggregates.
    fn hash() -> &'static PerCpuHashMap<AggKey, AggValue>;
    /// `ENGINE_CACHE`: each CPU's direct-mapped group cells in front of the hash
    /// (`Plan::group_cache`).
    fn cache() -> &'static PerCpuArray<tracekit_common::engine::CacheCell>;
    /// `ENGINE_STARTS`: start timestamps by correlation key.
    fn starts() -> &'static HashMap<CorrKey, StartValue>;
    /// `ENGINE_STATS`: per-CPU counters, indexed by `tracekit_common::engine::stat`.
    fn stats() -> &'static PerCpuArray<u64>;
    /// `ENGINE_TARGETS`: the traced pids (`-p`, `-- CMD` and its children).
    fn targets() -> &'static HashMap<u32, u8>;
    /// `ENGINE_STACKS`: stacks by content hash.
    fn stacks() -> &'static HashMap<u64, StackFrames>;
    /// `ENGINE_TRACE`: per-event records.
    fn trace() -> &'static RingBuf;
    /// `ENGINE_ANNOUNCE`: new processes, announced once.
    fn announce() -> &'static RingBuf;
    /// `ENGINE_KNOWN`: processes already announced.
    fn known() -> &'static LruHashMap<u32, u8>;
    /// `ENGINE_SCRATCH`: the per-CPU [`Scratch`].
    fn scratch() -> &'static PerCpuArray<Scratch>;
    /// `ENGINE_RENAME_PID_OFFSET`: `pid`'s offset in `task:task_rename`.
    fn rename_pid_offset() -> u32;
    /// `ENGINE_TASK_GENS`: tid to its name generation ([`operand::TASK`]), for threads
    /// renamed or exited since loading.
    ///
    /// [`operand::TASK`]: tracekit_common::engine::operand::TASK
    fn task_gens() -> &'static HashMap<u32, u32>;
    /// `ENGINE_TASK_NAMES`: `tid | generation << 32` to the thread's comm in that
    /// generation (16 bytes, NUL-padded), recorded at its first new group key.
    fn task_names() -> &'static HashMap<u64, [u8; 16]>;
    /// `ENGINE_OUTSTANDING`: allocations not yet released, by address (`agg::OUTSTANDING`).
    fn outstanding() -> &'static HashMap<u64, tracekit_common::engine::Outstanding>;
    /// `ENGINE_FOLLOWS`: each stream's end, for `operand::FOLLOWS`.
    fn follows() -> &'static HashMap<u64, u64>;
}

/// Defines the engine's globals (`ENGINE_PLAN`, `ENGINE_START_PLAN`, `ENGINE_SELF_PID`,
/// `ENGINE_FILTER_PIDS`, `ENGINE_CGROUP_ID`, `ENGINE_CGROUP_LEVEL`, `ENGINE_FORK_CHILD_PID_OFFSET`, `ENGINE_MMAP_PROT_OFFSET`,
/// `ENGINE_USER_UNWIND`) and maps (`ENGINE_*`) in the calling BPF object, and `$name`, the
/// [`EngineMaps`] whose unwinder maps are `$unwind` (from [`unwind_maps!`](crate::unwind_maps)).
/// Userspace finds all of them by these names.
#[macro_export]
macro_rules! engine_maps {
    ($name:ident, $unwind:ty) => {
        /// The main plan (events that are aggregated).
        #[unsafe(no_mangle)]
        static ENGINE_PLAN: tracekit_common::engine::Plan = tracekit_common::engine::Plan::EMPTY;
        /// The start plan (events that only leave a timestamp for the main plan).
        #[unsafe(no_mangle)]
        static ENGINE_START_PLAN: tracekit_common::engine::Plan =
            tracekit_common::engine::Plan::EMPTY;
        /// The loader's own pid: never traced.
        #[unsafe(no_mangle)]
        static ENGINE_SELF_PID: u32 = 0;
        /// 1: only pids in `ENGINE_TARGETS` are traced.
        #[unsafe(no_mangle)]
        static ENGINE_FILTER_PIDS: u8 = 0;
        /// `--cgroup`: only tasks whose cgroup v2 ancestor at `ENGINE_CGROUP_LEVEL` has this
        /// id are traced; 0: no such check.
        #[unsafe(no_mangle)]
        static ENGINE_CGROUP_ID: u64 = 0;
        /// The depth of `ENGINE_CGROUP_ID` below the cgroup v2 root (the root is 0).
        #[unsafe(no_mangle)]
        static ENGINE_CGROUP_LEVEL: u32 = 0;
        /// Offset of `child_pid` in `sched:sched_process_fork` records (for `-- CMD`).
        #[unsafe(no_mangle)]
        static ENGINE_FORK_CHILD_PID_OFFSET: u32 = 0;
        /// Offset of `prot` in `syscalls:sys_enter_mmap` records (with `Plan::announce`).
        #[unsafe(no_mangle)]
        static ENGINE_MMAP_PROT_OFFSET: u32 = 0;
        /// The kernel's offsets for directories by their dentries (`operand::DIR_PATH`).
        #[unsafe(no_mangle)]
        static ENGINE_DENTRY_WALK: tracekit_common::engine::DentryWalk =
            tracekit_common::engine::DentryWalk::EMPTY;
        /// 1: user stack operands are walked by the DWARF unwinder (`--call-graph dwarf`)
        /// from the registers the task saved when it entered the kernel; 0: by frame pointers.
        #[unsafe(no_mangle)]
        static ENGINE_USER_UNWIND: u8 = 0;
        /// 1: the kernel has `bpf_get_func_ip` in kprobes (5.15+); 0: a kprobe's function
        /// address is its saved instruction pointer less the `int3` (set by the loader).
        #[unsafe(no_mangle)]
        static KERNEL_FUNC_IP: u8 = 1;
        /// Offset of `pid` in `task:task_rename` records (plans keyed by `operand::TASK`).
        #[unsafe(no_mangle)]
        static ENGINE_RENAME_PID_OFFSET: u32 = 0;

        /// Name generations of renamed or exited threads (`operand::TASK`); the loader
        /// shrinks it when unused. Not preallocated: memory grows with the threads renamed
        /// or gone, not with the bound.
        #[aya_ebpf::macros::map]
        static ENGINE_TASK_GENS: aya_ebpf::maps::HashMap<u32, u32> =
            aya_ebpf::maps::HashMap::with_max_entries(
                tracekit_common::engine::TASK_NAMES_ENTRIES,
                aya_ebpf::bindings::BPF_F_NO_PREALLOC,
            );

        /// Each thread name generation's comm, recorded at its first new group key.
        #[aya_ebpf::macros::map]
        static ENGINE_TASK_NAMES: aya_ebpf::maps::HashMap<u64, [u8; 16]> =
            aya_ebpf::maps::HashMap::with_max_entries(
                tracekit_common::engine::TASK_NAMES_ENTRIES,
                aya_ebpf::bindings::BPF_F_NO_PREALLOC,
            );

        /// Array layout aggregates; the loader sizes it to `(array_key_bound + 1) * slots`.
        #[aya_ebpf::macros::map]
        static ENGINE_ARRAY: aya_ebpf::maps::PerCpuArray<tracekit_common::engine::AggValue> =
            aya_ebpf::maps::PerCpuArray::with_max_entries(1, 0);

        /// Hash layout aggregates.
        #[aya_ebpf::macros::map]
        static ENGINE_HASH: aya_ebpf::maps::PerCpuHashMap<
            tracekit_common::engine::AggKey,
            tracekit_common::engine::AggValue,
        > = aya_ebpf::maps::PerCpuHashMap::with_max_entries(
            tracekit_common::engine::DEFAULT_HASH_ENTRIES,
            0,
        );

        /// Group cells in front of `ENGINE_HASH` (`Plan::group_cache`); the loader sizes it
        /// to `CACHE_CELLS`, or 1 when unused.
        #[aya_ebpf::macros::map]
        static ENGINE_CACHE: aya_ebpf::maps::PerCpuArray<tracekit_common::engine::CacheCell> =
            aya_ebpf::maps::PerCpuArray::with_max_entries(1, 0);

        /// Start timestamps by correlation key.
        #[aya_ebpf::macros::map]
        static ENGINE_STARTS: aya_ebpf::maps::HashMap<
            tracekit_common::engine::CorrKey,
            tracekit_common::engine::StartValue,
        > = aya_ebpf::maps::HashMap::with_max_entries(
            tracekit_common::engine::DEFAULT_START_ENTRIES,
            0,
        );

        #[aya_ebpf::macros::map]
        static ENGINE_STATS: aya_ebpf::maps::PerCpuArray<u64> =
            aya_ebpf::maps::PerCpuArray::with_max_entries(tracekit_common::engine::STAT_COUNT, 0);

        #[aya_ebpf::macros::map]
        static ENGINE_TARGETS: aya_ebpf::maps::HashMap<u32, u8> =
            aya_ebpf::maps::HashMap::with_max_entries(tracekit_common::engine::MAX_TARGET_PIDS, 0);

        /// Stacks by content hash (stack operands); the loader shrinks it when unused.
        #[aya_ebpf::macros::map]
        static ENGINE_STACKS: aya_ebpf::maps::HashMap<
            u64,
            tracekit_common::cpu_sampler::StackFrames,
        > = aya_ebpf::maps::HashMap::with_max_entries(
            tracekit_common::engine::DEFAULT_STACK_ENTRIES,
            0,
        );

        /// Per-event records (`agg::TRACE`).
        #[aya_ebpf::macros::map]
        static ENGINE_TRACE: aya_ebpf::maps::RingBuf =
            aya_ebpf::maps::RingBuf::with_byte_size(tracekit_common::engine::TRACE_RING_BYTES, 0);

        /// New processes, announced once (`Plan::announce`).
        #[aya_ebpf::macros::map]
        static ENGINE_ANNOUNCE: aya_ebpf::maps::RingBuf = aya_ebpf::maps::RingBuf::with_byte_size(
            tracekit_common::cpu_sampler::EVENTS_RING_BYTES,
            0,
        );

        /// Processes already announced.
        #[aya_ebpf::macros::map]
        static ENGINE_KNOWN: aya_ebpf::maps::LruHashMap<u32, u8> =
            aya_ebpf::maps::LruHashMap::with_max_entries(
                tracekit_common::cpu_sampler::MAX_KNOWN_PIDS,
                0,
            );

        #[aya_ebpf::macros::map]
        static ENGINE_SCRATCH: aya_ebpf::maps::PerCpuArray<$crate::engine::Scratch> =
            aya_ebpf::maps::PerCpuArray::with_max_entries(1, 0);

        /// Allocations not yet released, by address (`agg::OUTSTANDING`); the loader shrinks
        /// it to one entry for other plans.
        #[aya_ebpf::macros::map]
        static ENGINE_OUTSTANDING: aya_ebpf::maps::HashMap<
            u64,
            tracekit_common::engine::Outstanding,
        > = aya_ebpf::maps::HashMap::with_max_entries(1, 0);

        /// Each stream's end (`operand::FOLLOWS`); the loader shrinks it to one entry for
        /// plans that do not read it.
        #[aya_ebpf::macros::map]
        static ENGINE_FOLLOWS: aya_ebpf::maps::HashMap<u64, u64> =
            aya_ebpf::maps::HashMap::with_max_entries(tracekit_common::engine::FOLLOWS_ENTRIES, 0);

        /// This object's engine maps and globals.
        struct $name;

        impl $crate::engine::EngineMaps for $name {
            type Unwind = $unwind;
            #[inline(always)]
            fn plan() -> &'static tracekit_common::engine::Plan {
                &ENGINE_PLAN
            }
            #[inline(always)]
            fn start_plan() -> &'static tracekit_common::engine::Plan {
                &ENGINE_START_PLAN
            }
            #[inline(always)]
            fn self_pid() -> u32 {
                // SAFETY: reading a static.
                unsafe { core::ptr::read_volatile(&raw const ENGINE_SELF_PID) }
            }
            #[inline(always)]
            fn filter_pids() -> u8 {
                // SAFETY: reading a static.
                unsafe { core::ptr::read_volatile(&raw const ENGINE_FILTER_PIDS) }
            }
            #[inline(always)]
            fn cgroup_id() -> u64 {
                // SAFETY: reading a static.
                unsafe { core::ptr::read_volatile(&raw const ENGINE_CGROUP_ID) }
            }
            #[inline(always)]
            fn cgroup_level() -> u32 {
                // SAFETY: reading a static.
                unsafe { core::ptr::read_volatile(&raw const ENGINE_CGROUP_LEVEL) }
            }
            #[inline(always)]
            fn fork_child_pid_offset() -> u32 {
                // SAFETY: reading a static.
                unsafe { core::ptr::read_volatile(&raw const ENGINE_FORK_CHILD_PID_OFFSET) }
            }
            #[inline(always)]
            fn mmap_prot_offset() -> u32 {
                // SAFETY: reading a static.
                unsafe { core::ptr::read_volatile(&raw const ENGINE_MMAP_PROT_OFFSET) }
            }
            #[inline(always)]
            fn dentry_walk() -> &'static tracekit_common::engine::DentryWalk {
                &ENGINE_DENTRY_WALK
            }
            #[inline(always)]
            fn user_unwind() -> u8 {
                // SAFETY: reading a static.
                unsafe { core::ptr::read_volatile(&raw const ENGINE_USER_UNWIND) }
            }
            #[inline(always)]
            fn func_ip_helper() -> u8 {
                // SAFETY: reading a static.
                unsafe { core::ptr::read_volatile(&raw const KERNEL_FUNC_IP) }
            }
            #[inline(always)]
            fn array() -> &'static aya_ebpf::maps::PerCpuArray<tracekit_common::engine::AggValue> {
                &ENGINE_ARRAY
            }
            #[inline(always)]
            fn hash() -> &'static aya_ebpf::maps::PerCpuHashMap<
                tracekit_common::engine::AggKey,
                tracekit_common::engine::AggValue,
            > {
                &ENGINE_HASH
            }
            #[inline(always)]
            fn cache() -> &'static aya_ebpf::maps::PerCpuArray<tracekit_common::engine::CacheCell> {
                &ENGINE_CACHE
            }
            #[inline(always)]
            fn starts() -> &'static aya_ebpf::maps::HashMap<
                tracekit_common::engine::CorrKey,
                tracekit_common::engine::StartValue,
            > {
                &ENGINE_STARTS
            }
            #[inline(always)]
            fn stats() -> &'static aya_ebpf::maps::PerCpuArray<u64> {
                &ENGINE_STATS
            }
            #[inline(always)]
            fn targets() -> &'static aya_ebpf::maps::HashMap<u32, u8> {
                &ENGINE_TARGETS
            }
            #[inline(always)]
            fn stacks()
            -> &'static aya_ebpf::maps::HashMap<u64, tracekit_common::cpu_sampler::StackFrames>
            {
                &ENGINE_STACKS
            }
            #[inline(always)]
            fn trace() -> &'static aya_ebpf::maps::RingBuf {
                &ENGINE_TRACE
            }
            #[inline(always)]
            fn announce() -> &'static aya_ebpf::maps::RingBuf {
                &ENGINE_ANNOUNCE
            }
            #[inline(always)]
            fn known() -> &'static aya_ebpf::maps::LruHashMap<u32, u8> {
                &ENGINE_KNOWN
            }
            #[inline(always)]
            fn scratch() -> &'static aya_ebpf::maps::PerCpuArray<$crate::engine::Scratch> {
                &ENGINE_SCRATCH
            }
            #[inline(always)]
            fn rename_pid_offset() -> u32 {
                // SAFETY: reading a static.
                unsafe { core::ptr::read_volatile(&raw const ENGINE_RENAME_PID_OFFSET) }
            }
            #[inline(always)]
            fn task_gens() -> &'static aya_ebpf::maps::HashMap<u32, u32> {
                &ENGINE_TASK_GENS
            }
            #[inline(always)]
            fn task_names() -> &'static aya_ebpf::maps::HashMap<u64, [u8; 16]> {
                &ENGINE_TASK_NAMES
            }
            #[inline(always)]
            fn outstanding()
            -> &'static aya_ebpf::maps::HashMap<u64, tracekit_common::engine::Outstanding> {
                &ENGINE_OUTSTANDING
            }
            #[inline(always)]
            fn follows() -> &'static aya_ebpf::maps::HashMap<u64, u64> {
                &ENGINE_FOLLOWS
            }
        }
    };
}
