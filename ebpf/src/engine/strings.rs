//! Whole strings ([`LONG_STR`]): read into the per-CPU scratch's record tail, one after the
//! other, and sent with the record's header as one variable-length ring buffer record
//! (`bpf_ringbuf_output` of the bytes used), so a short string costs its bytes, not
//! [`STR_MAX`].
//!
//! Every size is bounded for the verifier: a string starts below [`TAIL_BYTES`] (an offset
//! masked with `TAIL_BYTES - 1`) and runs at most [`STR_MAX`] bytes (a size masked with
//! `STR_MAX - 1`, plus one), and the tail has room for both.

use core::ffi::c_void;

use aya_ebpf::helpers::{
    bpf_get_current_comm, bpf_probe_read_kernel, bpf_probe_read_user,
    generated::{
        bpf_get_smp_processor_id, bpf_ktime_get_ns, bpf_probe_read_kernel_str,
        bpf_probe_read_user_str,
    },
};
use tracekit_common::engine::{
    ALL_STRINGS, LONG_HEAD, MAX_ARGS, MAX_STRINGS, PTR_ARRAY, STR_BYTES, STR_CUT, STR_IN_TAIL,
    STR_MAX, STR_MORE, STR_UNREADABLE, TAIL_BYTES, TraceRecord,
};

use super::{EngineMaps, Scratch, bump};

/// [`read_long`]'s `how` bit: the string is in user memory.
pub(crate) const USER: u32 = 1 << 8;

/// `how` for [`read_long`]: string `slot`, user memory or not, the operand's flags (for
/// [`LONG_HEAD`]).
#[inline(always)]
pub(crate) fn how(slot: u32, user: bool, flags: u32) -> u32 {
    (slot & 0xff) | if user { USER } else { 0 } | (flags & LONG_HEAD) << 16
}

/// Records string slot `how & 0xff`'s flags and span.
#[inline(always)]
pub(crate) fn mark(scratch: *mut Scratch, slot: usize, flags: u32, off: usize, len: usize) {
    // SAFETY: this CPU's scratch; slot masked into range.
    unsafe {
        (*scratch).str_spans[slot & (MAX_STRINGS - 1)] = (off as u32) | (len as u32) << 16;
        (*scratch).str_flags |= flags << (8 * (slot & (MAX_STRINGS - 1)));
    }
}

/// Reads the NUL-terminated string at `src`, at most `size` bytes with its NUL, into the
/// record's tail after the strings read before it; with [`LONG_HEAD`] in `how`, its first
/// [`STR_BYTES`]` - 1` into the string slot too, and a 1 for its last byte when the string
/// is longer. Marks it cut when it filled `size` (its last
/// byte then left out: the loader asks for one more than it shows), unreadable when the
/// read failed. Never inlined: one copy serves every operand.
#[inline(never)]
pub(crate) fn read_long(scratch: *mut Scratch, src: u64, size: u32, how: u32) -> u32 {
    let slot = (how & 0xff) as usize & (MAX_STRINGS - 1);
    // SAFETY: this CPU's scratch.
    let start = unsafe { (*scratch).tail_len } as usize;
    if start >= TAIL_BYTES {
        mark(
            scratch,
            slot,
            STR_IN_TAIL | STR_CUT,
            start & (TAIL_BYTES - 1),
            0,
        );
        return 0;
    }
    let off = start & (TAIL_BYTES - 1);
    let cap = (size.wrapping_sub(1) as usize & (STR_MAX - 1)) + 1;
    // SAFETY: off < TAIL_BYTES and cap <= STR_MAX: inside the tail.
    let dst = unsafe { (*scratch).out.tail.as_mut_ptr().add(off) };
    // SAFETY: the helpers bound the copy by `cap`.
    let ret = unsafe {
        if how & USER != 0 {
            bpf_probe_read_user_str(dst as *mut c_void, cap as u32, src as *const c_void)
        } else {
            bpf_probe_read_kernel_str(dst as *mut c_void, cap as u32, src as *const c_void)
        }
    };
    if ret <= 0 {
        mark(scratch, slot, STR_IN_TAIL | STR_UNREADABLE, off, 0);
        return 0;
    }
    let mut len = (ret as usize - 1) & (STR_MAX - 1);
    let mut flags = STR_IN_TAIL;
    // The loader asks for a byte more than it shows: a string that filled the size was cut,
    // and that byte is not shown.
    if ret as usize >= cap {
        flags |= STR_CUT;
        len = len.saturating_sub(1);
    }
    if how & (LONG_HEAD << 16) != 0 {
        // SAFETY: this CPU's scratch; the helper bounds the copy by STR_BYTES.
        unsafe {
            let head = &mut (*scratch).strings[slot];
            *head = [0; STR_BYTES];
            bpf_probe_read_kernel_str(
                head.as_mut_ptr() as *mut c_void,
                STR_BYTES as u32,
                dst as *const c_void,
            );
            // A string longer than the head's bytes: its last byte, else the NUL, says so
            // (a group key shows it cut).
            if ret as usize > STR_BYTES {
                head[STR_BYTES - 1] = 1;
            }
        }
    }
    mark(scratch, slot, flags, off, len);
    // SAFETY: this CPU's scratch.
    unsafe { (*scratch).tail_len = (off + len) as u32 };
    0
}

/// [`LONG_STR`](tracekit_common::engine::LONG_STR) operand `i` of the main plan, a
/// [`USER_STR`](tracekit_common::engine::operand::USER_STR) or
/// [`KERNEL_STR`](tracekit_common::engine::operand::KERNEL_STR) through `ptr`: one
/// string, an array's element, or an array's strings. Never inlined, as [`emit_long`].
#[inline(never)]
pub(crate) fn read_operand<M: EngineMaps>(scratch: *mut Scratch, ptr: u64, i: u32) -> u32 {
    let plan = M::plan();
    let i = i as usize & (tracekit_common::engine::MAX_OPERANDS - 1);
    let flags = rd!(plan.operands[i].flags);
    let user = rd!(plan.operands[i].kind) == tracekit_common::engine::operand::USER_STR;
    let how = how(rd!(plan.operands[i].string_slot), user, flags);
    let size = rd!(plan.operands[i].size);
    let aux = rd!(plan.operands[i].aux);
    if flags & PTR_ARRAY == 0 {
        return read_long(scratch, ptr, size, how);
    }
    if flags & ALL_STRINGS != 0 {
        return read_all(scratch, ptr, size, how, aux);
    }
    let at = (ptr + 8 * u64::from(aux)) as *const u64;
    // SAFETY: the helpers check the access.
    let element = if user {
        unsafe { bpf_probe_read_user(at) }
    } else {
        unsafe { bpf_probe_read_kernel(at) }
    };
    match element {
        // Past the array's NULL end: an empty string.
        Ok(0) => 0,
        Ok(element) => read_long(scratch, element, size, how),
        Err(_) => {
            mark(
                scratch,
                how as usize & 0xff,
                STR_IN_TAIL | STR_UNREADABLE,
                0,
                0,
            );
            0
        }
    }
}

/// [`SAVED_USER_STR`](tracekit_common::engine::operand::SAVED_USER_STR) operand `i` of the
/// main plan: the user string at `ptr`, the pointer its start saved, read whole. Never
/// inlined, as [`emit_long`].
#[inline(never)]
pub(crate) fn read_saved<M: EngineMaps>(scratch: *mut Scratch, ptr: u64, i: u32) -> u32 {
    let plan = M::plan();
    let i = i as usize & (tracekit_common::engine::MAX_OPERANDS - 1);
    let how = how(
        rd!(plan.operands[i].string_slot),
        true,
        rd!(plan.operands[i].flags),
    );
    read_long(scratch, ptr, rd!(plan.operands[i].size), how)
}

/// [`ALL_STRINGS`](tracekit_common::engine::ALL_STRINGS): the strings of the NULL-ended
/// pointer array at `array`, at most `max` (at most [`MAX_ARGS`]) of `size` bytes each with
/// their NULs, one after the other, NULs kept, in the tail; [`STR_MORE`] when there were
/// more (or no room), [`STR_UNREADABLE`] when the array could not be read.
#[inline(never)]
pub(crate) fn read_all(scratch: *mut Scratch, array: u64, size: u32, how: u32, max: u32) -> u32 {
    let slot = (how & 0xff) as usize & (MAX_STRINGS - 1);
    let user = how & USER != 0;
    // SAFETY: this CPU's scratch.
    let first = unsafe { (*scratch).tail_len } as usize & (TAIL_BYTES - 1);
    let cap = (size.wrapping_sub(1) as usize & (STR_MAX - 1)) + 1;
    let mut end = first;
    let mut flags = STR_IN_TAIL;
    let mut i = 0u32;
    while i < MAX_ARGS {
        let at = (array + 8 * u64::from(i)) as *const u64;
        // SAFETY: the helpers check the access.
        let ptr = if user {
            unsafe { bpf_probe_read_user(at) }
        } else {
            unsafe { bpf_probe_read_kernel(at) }
        };
        let Ok(ptr) = ptr else {
            if i == 0 {
                flags |= STR_UNREADABLE;
            }
            break;
        };
        if ptr == 0 {
            break;
        }
        if i >= max || end + cap > TAIL_BYTES {
            flags |= STR_MORE;
            break;
        }
        let off = end & (TAIL_BYTES - 1);
        // SAFETY: off < TAIL_BYTES and cap <= STR_MAX: inside the tail.
        let dst = unsafe { (*scratch).out.tail.as_mut_ptr().add(off) };
        // SAFETY: the helpers bound the copy by `cap`.
        let ret = unsafe {
            if user {
                bpf_probe_read_user_str(dst as *mut c_void, cap as u32, ptr as *const c_void)
            } else {
                bpf_probe_read_kernel_str(dst as *mut c_void, cap as u32, ptr as *const c_void)
            }
        };
        // An argument that cannot be read shows empty, its NUL kept.
        let used = if ret <= 0 {
            // SAFETY: as above.
            unsafe { *dst = 0 };
            1
        } else {
            ret as usize & (STR_MAX * 2 - 1)
        };
        end = off + used;
        i += 1;
    }
    mark(scratch, slot, flags, first, end - first);
    // SAFETY: this CPU's scratch.
    unsafe {
        (*scratch).tail_len = end as u32;
        (*scratch).out.head.str_cap = cap as u32;
    }
    0
}

/// Sends the event with its tail: the header built in the scratch's [`TraceOut`]
/// (tracekit_common::engine::TraceOut) and `bpf_ringbuf_output` of the bytes used; a
/// full ring buffer is counted. Never inlined: its stack slots would otherwise sit in the
/// frame of the main stage, which the user-stack unwinder's call chain counts (512 bytes).
#[inline(never)]
pub(crate) fn emit_long<M: EngineMaps>(scratch: *mut Scratch, pid: u32, tid: u32, event: u32) {
    // SAFETY: this CPU's scratch.
    let len = unsafe { (*scratch).tail_len } as usize;
    if len > TAIL_BYTES + STR_MAX - 1 {
        return;
    }
    // SAFETY: this CPU's scratch, written here and sent below.
    unsafe {
        let head = &raw mut (*scratch).out.head;
        (*head).ts_ns = bpf_ktime_get_ns();
        (*head).pid = pid;
        (*head).tid = tid;
        (*head).cpu = bpf_get_smp_processor_id();
        (*head).event = event;
        (*head).comm = bpf_get_current_comm().unwrap_or_default();
        (*head).ints = (*scratch).ints;
        (*head).strings = (*scratch).strings;
        (*head).str_spans = (*scratch).str_spans;
        (*head).str_flags = (*scratch).str_flags;
    }
    let size = size_of::<TraceRecord>() + len;
    // SAFETY: the header and `len` bytes of the tail after it, inside the scratch.
    let bytes =
        unsafe { core::slice::from_raw_parts((&raw const (*scratch).out) as *const u8, size) };
    if M::trace()
        .output::<[u8]>(bytes, super::wake_flag::<M>())
        .is_err()
    {
        bump::<M>(tracekit_common::engine::stat::TRACE_LOST);
    }
}
