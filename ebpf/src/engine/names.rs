//! Thread names without strings on the hot path ([`operand::TASK`]): an event keyed by
//! `--by comm` carries `tid | generation << 32`, and the cold-path programs on
//! `task:task_rename` (a `prctl(PR_SET_NAME)`, a write to `/proc/TID/comm`, and every exec)
//! and `sched:sched_process_exit` record the comm that generation ended with and start the
//! next one. Userspace shows a generation still running under `/proc/TID/comm`, and an ended
//! one under its recorded name, so a thread renamed half-way counts under both names, and
//! a thread id reused after an exit starts a generation of its own.

use aya_ebpf::{
    helpers::{bpf_get_current_comm, generated::bpf_get_smp_processor_id},
    programs::TracePointContext,
};
use tracekit_common::engine::{IDLE_TASK, stat};

#[cfg(doc)]
use tracekit_common::engine::operand;

use super::{EngineMaps, bump};
use crate::{current_pid_tid, selected};

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

/// Ends thread `tid`'s current name generation with `comm` and starts the next; a name that
/// does not fit is counted ([`stat::NAMES_LOST`]).
#[inline(always)]
fn end_generation<M: EngineMaps>(tid: u32, comm: &[u8; 16]) {
    // SAFETY: the value is copied out at once.
    let generation = unsafe { M::task_gens().get(&tid) }.copied().unwrap_or(0);
    let ended = u64::from(tid) | u64::from(generation) << 32;
    if M::task_names().insert(&ended, comm, 0).is_err()
        || M::task_gens()
            .insert(&tid, &generation.wrapping_add(1), 0)
            .is_err()
    {
        bump::<M>(stat::NAMES_LOST);
    }
}

/// `task:task_rename` (include/trace/events/task.h): the renamed thread's generation ends
/// under its old name. It fires before the new name is set, in the renamed thread itself
/// for `prctl` and exec (the thread's events after it count under the new generation
/// exactly); a write to another thread's `/proc/TID/comm` races with that thread's events.
#[inline(always)]
pub fn task_renamed<M: EngineMaps>(ctx: &TracePointContext) {
    // SAFETY: the offsets come from the event's format file; read_at checks the access.
    let (Ok(pid), Ok(old)) = (
        unsafe { ctx.read_at::<i32>(M::rename_pid_offset() as usize) },
        unsafe { ctx.read_at::<[u8; 16]>(M::rename_oldcomm_offset() as usize) },
    ) else {
        return;
    };
    let (current_pid, current_tid) = current_pid_tid();
    if pid as u32 == current_tid
        && !selected(current_pid, M::self_pid(), M::filter_pids(), M::targets())
    {
        return;
    }
    end_generation::<M>(pid as u32, &old);
}

/// `sched:sched_process_exit` (fired by each exiting thread): its generation ends under
/// the name it exits with, so its id, reused later, names another thread.
#[inline(always)]
pub fn task_exited<M: EngineMaps>() {
    let (pid, tid) = current_pid_tid();
    if !selected(pid, M::self_pid(), M::filter_pids(), M::targets()) {
        return;
    }
    end_generation::<M>(tid, &bpf_get_current_comm().unwrap_or_default());
}
