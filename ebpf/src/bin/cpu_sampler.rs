//! `cpu_sampler`: on-CPU stack sampling (`profile`, `top`, the exporter; bcc's `profile`, `perf record -g`).
//!
//! Attached to the software `cpu-clock` perf event on every CPU. Each sample is counted in the
//! kernel under (pid, comm, kernel stack, user stack); userspace reads the maps once at the
//! end. Shared layouts: `tracekit_common::cpu_sampler`.
#![no_std]
#![no_main]

use aya_ebpf::{
    Global,
    bindings::BPF_NOEXIST,
    helpers::{bpf_get_current_cgroup_id, bpf_get_current_comm, bpf_ktime_get_ns},
    macros::{map, perf_event, tracepoint},
    maps::{Array, HashMap, LruHashMap, PerCpuArray, RingBuf},
    programs::{PerfEventContext, TracePointContext},
};
use tracekit_common::cpu_sampler::{
    DEFAULT_COUNT_MAP_ENTRIES, DEFAULT_STACK_MAP_ENTRIES, EVENTS_RING_BYTES, MAX_KNOWN_PIDS,
    MAX_TARGET_PIDS, STACK_ERROR, STACK_NONE, STAT_COUNT, SampleKey, StackFrames, Stat,
};
use tracekit_ebpf::{
    Recorded, announce, atomic_add, current_pid_tid, follow_fork, forget_on_exec_mmap, in_cgroup,
    record_stack, record_user_stack_fp, selected,
    unwind::{record_user_stack, sampled_in_exec, user_regs_at_sample},
};

/// The loader's own pid: never sampled.
#[unsafe(no_mangle)]
static PROFILE_SELF_PID: Global<u32> = Global::new(0);
/// 1: only pids in `PROFILE_TARGETS` are sampled (`-p`, `-- CMD`).
#[unsafe(no_mangle)]
static PROFILE_FILTER_PIDS: Global<u8> = Global::new(0);
/// `--cgroup`: only tasks whose cgroup v2 ancestor at `PROFILE_CGROUP_LEVEL` has this id
/// are sampled; 0: no such check.
#[unsafe(no_mangle)]
static PROFILE_CGROUP_ID: Global<u64> = Global::new(0);
/// The depth of `PROFILE_CGROUP_ID` below the cgroup v2 root (the root is 0).
#[unsafe(no_mangle)]
static PROFILE_CGROUP_LEVEL: Global<u32> = Global::new(0);
/// 1: also count samples of the idle task (pid 0).
#[unsafe(no_mangle)]
static PROFILE_INCLUDE_IDLE: Global<u8> = Global::new(0);
/// 1: collect kernel stacks.
#[unsafe(no_mangle)]
static PROFILE_KERNEL_STACKS: Global<u8> = Global::new(1);
/// 1: collect user stacks.
#[unsafe(no_mangle)]
static PROFILE_USER_STACKS: Global<u8> = Global::new(1);
/// 1: count samples by cgroup too (`SampleKey::cgroup`).
#[unsafe(no_mangle)]
static PROFILE_BY_CGROUP: Global<u8> = Global::new(0);
/// 1: walk user stacks with the DWARF unwinder (`--call-graph dwarf`); 0: frame pointers.
#[unsafe(no_mangle)]
static PROFILE_USER_UNWIND: Global<u8> = Global::new(0);
/// Offset of `child_pid` in `sched:sched_process_fork` records, from the event's format file.
#[unsafe(no_mangle)]
static PROFILE_FORK_CHILD_PID_OFFSET: Global<u32> = Global::new(0);
/// Length of a time slice in ns (`profile --heatmap`): each sample is counted under its
/// slice of `CLOCK_MONOTONIC`. 0: no slices (every sample in slice 0).
#[unsafe(no_mangle)]
static PROFILE_TIME_SLICE_NS: Global<u64> = Global::new(0);
/// Offset of `prot` in `syscalls:sys_enter_mmap` records, from the event's format file.
#[unsafe(no_mangle)]
static PROFILE_MMAP_PROT_OFFSET: Global<u32> = Global::new(0);

/// Stack hash to frames. Preallocated: perf_event programs may run in NMI context.
#[map]
static PROFILE_STACKS: HashMap<u64, StackFrames> =
    HashMap::with_max_entries(DEFAULT_STACK_MAP_ENTRIES, 0);

#[map]
static PROFILE_COUNTS: HashMap<SampleKey, u64> =
    HashMap::with_max_entries(DEFAULT_COUNT_MAP_ENTRIES, 0);

/// The generation samples count under (see `tracekit_common::cpu_sampler`), set by userspace.
#[map]
static PROFILE_GENERATION: Array<u32> = Array::with_max_entries(1, 0);

#[map]
static PROFILE_STATS: PerCpuArray<u64> = PerCpuArray::with_max_entries(STAT_COUNT, 0);

/// Per-CPU scratch space for one stack (too big for the 512-byte BPF stack).
#[map]
static PROFILE_SCRATCH: PerCpuArray<StackFrames> = PerCpuArray::with_max_entries(1, 0);

/// Pids selected by `-p` / `-- CMD` (value unused).
#[map]
static PROFILE_TARGETS: HashMap<u32, u8> = HashMap::with_max_entries(MAX_TARGET_PIDS, 0);

/// Pids already announced to userspace.
#[map]
static PROFILE_KNOWN: LruHashMap<u32, u8> = LruHashMap::with_max_entries(MAX_KNOWN_PIDS, 0);

tracekit_ebpf::unwind_maps!(Unwind);

#[map]
static PROFILE_EVENTS: RingBuf = RingBuf::with_byte_size(EVENTS_RING_BYTES, 0);

#[inline(always)]
fn bump(stat: Stat) {
    if let Some(counter) = PROFILE_STATS.get_ptr_mut(stat as u32) {
        // SAFETY: per-CPU slot, only this CPU writes it while the program runs.
        unsafe { *counter += 1 };
    }
}

#[perf_event]
pub fn profile_cpu_clock(ctx: PerfEventContext) -> u32 {
    match try_profile_cpu_clock(&ctx) {
        Ok(()) | Err(()) => 0,
    }
}

fn try_profile_cpu_clock(ctx: &PerfEventContext) -> Result<(), ()> {
    let (pid, _) = current_pid_tid();
    if pid == 0 && PROFILE_INCLUDE_IDLE.load() == 0 {
        return Ok(());
    }
    if !selected(
        pid,
        PROFILE_SELF_PID.load(),
        PROFILE_FILTER_PIDS.load(),
        &PROFILE_TARGETS,
    ) {
        return Ok(());
    }
    let cgroup = PROFILE_CGROUP_ID.load();
    if cgroup != 0 && !in_cgroup(cgroup, PROFILE_CGROUP_LEVEL.load()) {
        return Ok(());
    }

    let generation = PROFILE_GENERATION.get(0).copied().unwrap_or(0);
    let kernel_stack = if PROFILE_KERNEL_STACKS.load() != 0 {
        stack(ctx, 0, Stat::KernelStackError, generation)
    } else {
        STACK_NONE
    };
    let user_stack = if PROFILE_USER_STACKS.load() == 0 || pid == 0 {
        STACK_NONE
    } else if sampled_in_exec::<Unwind>(ctx) {
        // The saved user registers may be the replaced image's: the kernel stack says exec.
        STACK_NONE
    } else if PROFILE_USER_UNWIND.load() != 0 {
        match user_regs_at_sample::<Unwind>(ctx) {
            Some(regs) => stored(
                record_user_stack::<Unwind>(&regs, pid, &PROFILE_STACKS, generation),
                Stat::UserStackError,
            ),
            None => STACK_NONE,
        }
    } else {
        match PROFILE_SCRATCH.get_ptr_mut(0) {
            Some(frames) => stored(
                record_user_stack_fp(
                    ctx,
                    frames,
                    &PROFILE_STACKS,
                    user_regs_at_sample::<Unwind>(ctx).as_ref(),
                    generation,
                ),
                Stat::UserStackError,
            ),
            None => STACK_ERROR,
        }
    };

    let slice_ns = PROFILE_TIME_SLICE_NS.load();
    let time_slice = if slice_ns == 0 {
        0
    } else {
        // SAFETY: a helper without arguments.
        (unsafe { bpf_ktime_get_ns() } / slice_ns) as u32
    };
    let key = SampleKey {
        pid,
        generation,
        kernel_stack,
        user_stack,
        cgroup: if PROFILE_BY_CGROUP.load() != 0 {
            // SAFETY: plain helper call.
            unsafe { bpf_get_current_cgroup_id() }
        } else {
            0
        },
        comm: bpf_get_current_comm().unwrap_or_default(),
        time_slice,
        padding: 0,
    };
    count(&key);
    if pid != 0 && !announce(pid, &PROFILE_KNOWN, &PROFILE_EVENTS) {
        bump(Stat::EventsLost);
    }
    Ok(())
}

/// Records a stack, counting what could not be recorded.
#[inline(always)]
fn stack(ctx: &PerfEventContext, flags: u64, walk_error: Stat, generation: u32) -> u64 {
    let Some(frames) = PROFILE_SCRATCH.get_ptr_mut(0) else {
        return STACK_ERROR;
    };
    stored(
        record_stack(ctx, frames, &PROFILE_STACKS, flags, generation),
        walk_error,
    )
}

/// The key of a recorded stack, counting what could not be recorded.
#[inline(always)]
fn stored(recorded: Recorded, walk_error: Stat) -> u64 {
    match recorded {
        Recorded::Stack(hash) => hash,
        Recorded::None => STACK_NONE,
        Recorded::WalkError => {
            bump(walk_error);
            STACK_ERROR
        }
        Recorded::MapFull => {
            bump(Stat::StackMapFull);
            STACK_ERROR
        }
    }
}

/// Adds one to the key's count; a full map is counted, never hidden.
#[inline(always)]
fn count(key: &SampleKey) {
    if let Some(n) = PROFILE_COUNTS.get_ptr_mut(key) {
        atomic_add(n, 1);
        bump(Stat::Samples);
        return;
    }
    match PROFILE_COUNTS.insert(key, 1, u64::from(BPF_NOEXIST)) {
        Ok(()) => bump(Stat::Samples),
        Err(_) => {
            // Another CPU inserted it first (EEXIST), or the map is full (E2BIG).
            if let Some(n) = PROFILE_COUNTS.get_ptr_mut(key) {
                atomic_add(n, 1);
                bump(Stat::Samples);
            } else {
                bump(Stat::CountMapFull);
            }
        }
    }
}

/// `sched:sched_process_exec` (include/trace/events/sched.h): the process's memory map is
/// replaced, so it is announced again at its next sample. With `-p` / `-- CMD`, a selected
/// process is announced right away, so its memory map is read and its unwind tables are
/// loaded before its first samples need them (not for `-a`: every exec on the machine would
/// be).
#[tracepoint]
pub fn profile_sched_exec(_ctx: TracePointContext) -> u32 {
    let (pid, _) = current_pid_tid();
    let _ = PROFILE_KNOWN.remove(pid);
    if PROFILE_FILTER_PIDS.load() != 0
        && selected(pid, PROFILE_SELF_PID.load(), 1, &PROFILE_TARGETS)
        && !announce(pid, &PROFILE_KNOWN, &PROFILE_EVENTS)
    {
        bump(Stat::EventsLost);
    }
    0
}

/// `syscalls:sys_enter_mmap`: new executable code means a new memory map to read.
#[tracepoint]
pub fn profile_mmap_exec(ctx: TracePointContext) -> u32 {
    forget_on_exec_mmap(&ctx, PROFILE_MMAP_PROT_OFFSET.load(), &PROFILE_KNOWN);
    0
}

/// `sched:sched_process_fork` (include/trace/events/sched.h), attached for `-- CMD` only:
/// children of a selected process are selected too.
#[tracepoint]
pub fn profile_sched_fork(ctx: TracePointContext) -> u32 {
    follow_fork(&ctx, PROFILE_FORK_CHILD_PID_OFFSET.load(), &PROFILE_TARGETS);
    0
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 4] = *b"GPL\0";
