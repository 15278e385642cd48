//! Debug logs from the kernel programs, through aya-log: why an event or a stack was
//! dropped, why a user-stack unwind stopped. Off unless the loader sets
//! [`TRACEKIT_KERNEL_LOG`] (tracekit does at `-vv`); the global is read-only data, so with
//! it off the verifier prunes every log call and the hot paths pay nothing. A reason is
//! logged the 1st, 2nd, 4th, 8th... time its per-CPU counter counts it, so a full map logs
//! a few lines, not one per event. Records go to the `AYA_LOGS` ring buffer under the
//! target `tracekit::kernel`; userspace forwards them to stderr.

use aya_ebpf::maps::PerCpuArray;
use aya_log_ebpf::debug;
use tracekit_common::{cpu_sampler::MAX_STACK_DEPTH, engine::stat, unwind::UnwindStat};

/// 1: the kernel programs log (set by the loader with `EbpfLoader::set_global`).
#[unsafe(no_mangle)]
static TRACEKIT_KERNEL_LOG: u8 = 0;

/// Whether the loader turned the logs on.
#[inline(always)]
pub fn enabled() -> bool {
    // SAFETY: reading a static; volatile so the build-time 0 is never folded.
    unsafe { core::ptr::read_volatile(&raw const TRACEKIT_KERNEL_LOG) != 0 }
}

/// This CPU's count in `stats[index]`, just bumped, if it is a power of two.
#[inline(always)]
fn sampled(stats: &PerCpuArray<u64>, index: u32) -> Option<u64> {
    let count = *stats.get(index)?;
    count.is_power_of_two().then_some(count)
}

/// The CPU the program runs on (the counters in the messages are per CPU).
#[inline(always)]
fn cpu() -> u32 {
    // SAFETY: plain helper call.
    unsafe { aya_ebpf::helpers::generated::bpf_get_smp_processor_id() }
}

/// Logs why the engine dropped something, after `stats[index]` (an
/// `tracekit_common::engine::stat`) counted it.
#[inline(always)]
pub fn engine_dropped(stats: &PerCpuArray<u64>, index: u32) {
    if enabled()
        && let Some(count) = sampled(stats, index)
    {
        log_engine_dropped(index, count);
    }
}

// One copy of the formatting code per object (a BPF subprogram), not one per call site.
#[inline(never)]
fn log_engine_dropped(index: u32, count: u64) {
    const T: &str = "tracekit::kernel";
    match index {
        stat::MAP_FULL => debug!(&(), target: T,
            "engine: event dropped: the group map is full (--max-groups); {} so far on CPU {}", count, cpu()),
        stat::NO_START => debug!(&(), target: T,
            "engine: event dropped: no start recorded for it (in flight when tracing began, or the start map was full); {} so far on CPU {}", count, cpu()),
        stat::START_MAP_FULL => debug!(&(), target: T,
            "engine: start dropped: the start map is full; {} so far on CPU {}", count, cpu()),
        stat::READ_ERRORS => debug!(&(), target: T,
            "engine: event dropped: an operand could not be read; {} so far on CPU {}", count, cpu()),
        stat::TRACE_LOST => debug!(&(), target: T,
            "engine: event dropped: the trace ring buffer is full (userspace fell behind); {} so far on CPU {}", count, cpu()),
        stat::STACK_MAP_FULL => debug!(&(), target: T,
            "engine: stack dropped: the stack map is full; {} so far on CPU {}", count, cpu()),
        stat::STACK_ERRORS => debug!(&(), target: T,
            "engine: stack dropped: the kernel could not walk it; {} so far on CPU {}", count, cpu()),
        stat::ANNOUNCE_LOST => debug!(&(), target: T,
            "engine: new process not announced: the ring buffer is full (retried at its next event); {} so far on CPU {}", count, cpu()),
        _ => {}
    }
}

/// Logs why the user-stack unwind of `pid` stopped after `frames` frames at `pc`, after
/// `stats[stat]` (an [`UnwindStat`]) counted it.
#[inline(always)]
pub fn unwind_stopped(stats: &PerCpuArray<u64>, stat: UnwindStat, pid: u32, frames: u32, pc: u64) {
    if enabled()
        && let Some(count) = sampled(stats, stat as u32)
    {
        log_unwind_stopped(stat as u32, pid, frames, pc, count);
    }
}

#[inline(never)]
fn log_unwind_stopped(stat: u32, pid: u32, frames: u32, pc: u64, count: u64) {
    const T: &str = "tracekit::kernel";
    if stat == UnwindStat::ReadErrors as u32 {
        debug!(&(), target: T,
            "unwind: pid {} stopped after {} frames at pc {:x}: user memory unreadable or the walk went nowhere; {} so far on CPU {}",
            pid, frames, pc, count, cpu());
    } else if stat == UnwindStat::Truncated as u32 {
        debug!(&(), target: T,
            "unwind: pid {} cut at {} frames (the frame budget, {}) at pc {:x}; {} so far on CPU {}",
            pid, frames, MAX_STACK_DEPTH as u32, pc, count, cpu());
    } else if stat == UnwindStat::NoProcess as u32 {
        debug!(&(), target: T,
            "unwind: pid {} has no mapping table yet, walked by frame pointers alone; {} so far on CPU {}",
            pid, count, cpu());
    }
}
