//! Thread names without strings on the hot path ([`operand::TASK`]): an event keyed by
//! `--by comm` carries `tid | generation << 32`. The first event of a group key (the insert
//! path, not the hot one) records the comm under that word ([`name_task`]), so userspace
//! shows each word under exactly the comm the string key would have read. The cold-path
//! programs on `task:task_rename` (a `prctl(PR_SET_NAME)`, a write to `/proc/TID/comm`,
//! every exec) and `sched:sched_process_exit` start the thread's next generation, so a
//! thread renamed half-way counts under both names, and a thread id reused after an exit
//! starts a generation of its own.

use aya_ebpf::{
    bindings::BPF_NOEXIST,
    helpers::{bpf_get_current_comm, generated::bpf_get_smp_processor_id},
    programs::TracePointContext,
};
use tracekit_common::engine::{IDLE_TASK, stat};

#[cfg(doc)]
use tracekit_common::engine::operand;

use super::{EngineMaps, bump};
use crate::{current_pid_tid, selected};

/// `EEXIST` (include/uapi/asm-generic/errno-base.h): the name is recorded already.
const EEXIST: i32 = 17;

/// The [`operand::TASK`] value of thread `tid` now: one hash lookup of a 4-byte key (most
/// threads are absent: generation 0).
#[inline(always)]
pub fn task_word<M: EngineMaps>(tid: u32) -> u64 {
    if tid == 0 {
        // SAFETY: plain helper call.
        return IDLE_TASK | u64::from(unsafe { bpf_get_smp_processor_id() });
    }
    // SAFETY: the value is copied out at once.
    let generation = unsafe { M::task_gens().get(&tid) }.copied().unwrap_or(0);
    u64::from(tid) | u64::from(generation) << 32
}

/// Records the current comm under `word` (an [`operand::TASK`] value of the current
/// thread) unless it is there: called when a group key is new. A name that does not fit is
/// counted ([`stat::NAMES_LOST`]).
#[inline(always)]
pub fn name_task<M: EngineMaps>(word: u64) {
    let comm = bpf_get_current_comm().unwrap_or_default();
    if let Err(err) = M::task_names().insert(&word, &comm, u64::from(BPF_NOEXIST))
        && err != -EEXIST
    {
        bump::<M>(stat::NAMES_LOST);
    }
}

/// Ends thread `tid`'s current name generation: its next events count under the next.
#[inline(always)]
fn end_generation<M: EngineMaps>(tid: u32) {
    // SAFETY: the value is copied out at once.
    let generation = unsafe { M::task_gens().get(&tid) }.copied().unwrap_or(0);
    if M::task_gens()
        .insert(&tid, &generation.wrapping_add(1), 0)
        .is_err()
    {
        bump::<M>(stat::NAMES_LOST);
    }
}

/// `task:task_rename` (include/trace/events/task.h): the renamed thread's generation ends.
/// It fires in the renamed thread itself for `prctl` and exec (its events after it count
/// under the new generation exactly); a write to another thread's `/proc/TID/comm` races
/// with that thread's events.
#[inline(always)]
pub fn task_renamed<M: EngineMaps>(ctx: &TracePointContext) {
    // SAFETY: the offset comes from the event's format file; read_at checks the access.
    let Ok(pid) = (unsafe { ctx.read_at::<i32>(M::rename_pid_offset() as usize) }) else {
        return;
    };
    let (current_pid, current_tid) = current_pid_tid();
    if pid as u32 == current_tid
        && !selected(current_pid, M::self_pid(), M::filter_pids(), M::targets())
    {
        return;
    }
    end_generation::<M>(pid as u32);
}

/// `sched:sched_process_exit` (fired by each exiting thread): its generation ends, so its
/// id, reused later, starts another.
#[inline(always)]
pub fn task_exited<M: EngineMaps>() {
    let (pid, tid) = current_pid_tid();
    if !selected(pid, M::self_pid(), M::filter_pids(), M::targets()) {
        return;
    }
    end_generation::<M>(tid);
}
