//! The outstanding-allocation stage (`agg::OUTSTANDING`, `memleak`): an allocation event
//! stores `address -> (size, stack, time, pid)` in `ENGINE_OUTSTANDING`; a release event
//! (`Plan::release_events`) deletes its address. What is left is what was never freed.
//!
//! - Allocation: key part 0 is the address (the return value, or a tracepoint's `ptr`), key
//!   part 1 the stack; the size comes from the event's rule in `Plan::alloc_size`: the
//!   value operand (`bytes_alloc`), or the product of two values the start stage saved from
//!   the function's entry (`calloc(n, size)`: `saved[0] * saved[1]`). A null address (a
//!   failed allocation) is not stored.
//! - Release: the address is one argument or field (`Plan::release`), read without the
//!   interpreter, so a `free` costs one map delete.

use aya_ebpf::helpers::{bpf_probe_read_user, generated::bpf_ktime_get_ns};
use tracekit_common::engine::{
    MAX_ALLOC_EVENTS, MAX_OPERANDS, NO_OPERAND, Outstanding, Plan, RELEASE_SAME_PROCESS,
    SAVED_WORDS, operand, size_rule, stat,
};

use crate::current_pid_tid;

use super::{
    EngineMaps, Scratch,
    args::{ArgSource, arg, narrow, read_int},
    bump,
    operands::{int, read_operands},
    take_start,
};

/// When `event` releases (`Plan::release_events`): deletes its address, and true.
#[inline(always)]
pub(crate) fn release<M: EngineMaps, S: ArgSource>(
    plan: &'static Plan,
    source: &S,
    scratch: *mut Scratch,
    event: u32,
) -> bool {
    if event >= 64 || rd!(plan.release_events) & (1u64 << event) == 0 {
        return false;
    }
    let address = match rd!(plan.release.kind) {
        operand::FIELD => read_int(
            source,
            rd!(plan.release.offset),
            rd!(plan.release.size),
            rd!(plan.release.flags),
        )
        .unwrap_or(0),
        _ => narrow(
            arg(scratch, rd!(plan.release.offset)),
            rd!(plan.release.size),
            rd!(plan.release.flags),
        ),
    };
    if address == 0 {
        return true;
    }
    // User addresses are per process: only the allocating process's release counts.
    let known = if rd!(plan.release.aux) & RELEASE_SAME_PROCESS != 0 {
        let (pid, _) = current_pid_tid();
        // SAFETY: the pid is copied out of the entry at once.
        let owner = unsafe { M::outstanding().get(&address) }.map(|e| e.pid);
        owner == Some(pid) && M::outstanding().remove(&address).is_ok()
    } else {
        M::outstanding().remove(&address).is_ok()
    };
    if !known {
        bump::<M>(stat::RELEASE_UNKNOWN);
    }
    true
}

/// Runs an `agg::OUTSTANDING` main plan's allocation `event`.
#[inline(always)]
pub(crate) fn run<M: EngineMaps, S: ArgSource>(
    plan: &'static Plan,
    source: &S,
    scratch: *mut Scratch,
    (pid, tid): (u32, u32),
    event: u32,
) -> Option<()> {
    if !read_operands::<M, S>(plan, source, scratch, pid, tid, event) {
        bump::<M>(stat::READ_ERRORS);
        return None;
    }
    let mut saved = [0u64; SAVED_WORDS];
    if rd!(plan.needs_start) != 0 {
        saved = take_start::<M>(plan, scratch)?.saved;
    }
    let rule = rd!(plan.alloc_size[(event as usize) & (MAX_ALLOC_EVENTS - 1)]);
    let size = if rule & 0xff == size_rule::SIZE_SAVED {
        slot_value(&saved, (rule >> 8) & 0xff).wrapping_mul(slot_value(&saved, (rule >> 16) & 0xff))
    } else if rule & 0xff == size_rule::SIZE_FIELD {
        read_int(source, (rule >> 8) & 0xffff, 8, 0)?
    } else {
        let value = rd!(plan.value);
        if value == NO_OPERAND {
            0
        } else {
            int(scratch, (value as usize) & (MAX_OPERANDS - 1))
        }
    };
    let first = rd!(plan.key_parts[0]) as usize & (MAX_OPERANDS - 1);
    let mut address = int(scratch, first);
    if rule & size_rule::ADDR_AT_SAVED_0 != 0 {
        // posix_memalign: 0 on success, the block's address stored at its first argument.
        if address != 0 {
            return None;
        }
        // SAFETY: bpf_probe_read_user checks the access.
        address = unsafe { bpf_probe_read_user(saved[0] as *const u64) }.ok()?;
    }
    if address == 0 {
        return None;
    }
    let stack = if rd!(plan.n_key_parts) > 1 {
        int(
            scratch,
            rd!(plan.key_parts[1]) as usize & (MAX_OPERANDS - 1),
        )
    } else {
        0
    };
    let entry = Outstanding {
        size,
        stack,
        // SAFETY: plain helper call.
        ts_ns: unsafe { bpf_ktime_get_ns() },
        pid,
        _pad: 0,
    };
    if M::outstanding().insert(&address, &entry, 0).is_err() {
        bump::<M>(stat::OUTSTANDING_FULL);
    }
    Some(())
}

/// Saved start value `slot`, or 1 for [`size_rule::ONE`].
#[inline(always)]
fn slot_value(saved: &[u64; SAVED_WORDS], slot: u32) -> u64 {
    match slot {
        0 => saved[0],
        1 => saved[1],
        2 => saved[2],
        3 => saved[3],
        _ => 1,
    }
}
