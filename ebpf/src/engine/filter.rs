//! The filter interpreter: a plan's postfix program of comparisons (integers and strings)
//! and boolean operators, run over the event's operands.

use core::ffi::c_void;

use aya_ebpf::helpers::generated::bpf_probe_read_kernel;
use tracekit_common::engine::{
    MAX_INSNS, MAX_OPERANDS, MAX_STRINGS, Plan, STR_BYTES, STR_CUT, STR_IN_TAIL, STR_MAX,
    STR_UNREADABLE, op,
};

use super::{Scratch, operands::int};

/// Runs the filter program; an empty program passes.
#[inline(always)]
pub(crate) fn filter(plan: &'static Plan, scratch: *mut Scratch) -> bool {
    let n = rd!(plan.n_insns) as usize;
    if n == 0 {
        return true;
    }
    let mut stack: u64 = 0;
    for i in 0..MAX_INSNS {
        if i >= n {
            break;
        }
        let opcode = rd!(plan.insns[i].op);
        let index = (rd!(plan.insns[i].operand) as usize) & (MAX_OPERANDS - 1);
        let a = int(scratch, index);
        let b = rd!(plan.insns[i].arg);
        let bit = match opcode {
            op::AND => {
                let top = stack & 1;
                stack >>= 1;
                let below = stack & 1;
                stack >>= 1;
                top & below
            }
            op::OR => {
                let top = stack & 1;
                stack >>= 1;
                let below = stack & 1;
                stack >>= 1;
                top | below
            }
            op::NOT => {
                let top = stack & 1;
                stack >>= 1;
                top ^ 1
            }
            _ => match compare(opcode, a, b) {
                Some(pass) => u64::from(pass),
                None => {
                    let slot = (rd!(plan.operands[index].string_slot) as usize) & (MAX_STRINGS - 1);
                    // SAFETY: this CPU's scratch.
                    let flags = unsafe { (*scratch).str_flags } >> (8 * slot);
                    if flags & STR_IN_TAIL != 0 {
                        u64::from(match_whole(plan, opcode, scratch, slot, b as u32))
                    } else {
                        // SAFETY: this CPU's scratch; slot masked into range.
                        let s = unsafe { &(*scratch).strings[slot] };
                        u64::from(match_string(plan, opcode, s, b as usize))
                    }
                }
            },
        };
        stack = (stack << 1) | bit;
    }
    stack & 1 == 1
}

/// Integer comparison `opcode` of `a` with `b` (the `S*` ones signed); None for the
/// opcodes that are not one (boolean operators, string comparisons).
#[inline(always)]
pub(crate) fn compare(opcode: u32, a: u64, b: u64) -> Option<bool> {
    Some(match opcode {
        op::EQ => a == b,
        op::NE => a != b,
        op::LT => a < b,
        op::LE => a <= b,
        op::GT => a > b,
        op::GE => a >= b,
        op::SLT => (a as i64) < (b as i64),
        op::SLE => (a as i64) <= (b as i64),
        op::SGT => (a as i64) > (b as i64),
        op::SGE => (a as i64) >= (b as i64),
        op::BITAND => a & b != 0,
        _ => return None,
    })
}

/// Compares string buffer `s` with string constant `c` of `plan` under `opcode`.
#[inline(always)]
fn match_string(plan: &'static Plan, opcode: u32, s: &[u8; STR_BYTES], c: usize) -> bool {
    let c = c & 3;
    let len = (rd!(plan.str_lens[c]) as usize).min(STR_BYTES);
    let constant = |i: usize| rd!(plan.str_consts[c][i & (STR_BYTES - 1)]);
    match opcode {
        op::STR_EQ => {
            // Both sides are NUL-padded: equal strings are equal byte arrays.
            let mut i = 0;
            while i < STR_BYTES {
                if s[i] != constant(i) {
                    return false;
                }
                i += 1;
            }
            true
        }
        op::STR_PREFIX => {
            let mut i = 0;
            while i < STR_BYTES && i < len {
                if s[i] != constant(i) {
                    return false;
                }
                i += 1;
            }
            true
        }
        _ => {
            let mut n = 0;
            while n < STR_BYTES && s[n] != 0 {
                n += 1;
            }
            if len > n {
                return false;
            }
            let last_start = n - len;
            let (first, last) = if opcode == op::STR_SUFFIX {
                (last_start, last_start)
            } else {
                (0, last_start)
            };
            let mut start = first;
            while start <= last && start < STR_BYTES {
                let mut j = 0;
                let mut equal = true;
                while j < len && j < STR_BYTES {
                    if s[(start + j) & (STR_BYTES - 1)] != constant(j) {
                        equal = false;
                        break;
                    }
                    j += 1;
                }
                if equal {
                    return true;
                }
                start += 1;
            }
            false
        }
    }
}

/// Compares string slot `slot`'s whole string, read into the record's tail, with string
/// constant `c` under `opcode`: equal when as long and alike, a prefix or suffix, or
/// contained anywhere. The places go 8 to a block: one read of 40 bytes from the tail, each
/// place's window of the constant's words shifted out of it and masked to its length, no
/// loop per byte and no branch per place: the verifier walks every block of a string of
/// [`STR_MAX`] and keeps each branch's other side open (8192 at most). A string cut at its size matches no suffix and
/// equals no constant. Never inlined: one copy serves every comparison.
#[inline(never)]
fn match_whole(
    plan: &'static Plan,
    opcode: u32,
    scratch: *mut Scratch,
    slot: usize,
    c: u32,
) -> bool {
    let slot = slot & (MAX_STRINGS - 1);
    let c = c as usize & 3;
    // SAFETY: this CPU's scratch.
    let (flags, span) = unsafe {
        (
            (*scratch).str_flags >> (8 * slot),
            (*scratch).str_spans[slot],
        )
    };
    if flags & STR_UNREADABLE != 0 {
        return false;
    }
    let cut = flags & STR_CUT != 0;
    let (off, len) = (
        (span & 0xffff) as u64,
        u64::from(span >> 16) & (STR_MAX as u64 - 1),
    );
    let n = (rd!(plan.str_lens[c]) as u64).min(STR_BYTES as u64 - 1);
    if n > len {
        return false;
    }
    // The first place, and how many more.
    let (first, more) = match opcode {
        op::STR_EQ if cut || len != n => return false,
        op::STR_EQ | op::STR_PREFIX => (0, 0),
        op::STR_SUFFIX if cut => return false,
        op::STR_SUFFIX => (len - n, 0),
        _ => (0, len - n),
    };
    // The constant's words, and the masks of its `n` bytes (little-endian), in the scratch:
    // the stack is the call chain's, 512 bytes.
    let mut j = 0;
    while j < STR_BYTES / 8 {
        let (mut word, mut bytes) = (0u64, 0u64);
        let mut b = 0;
        while b < 8 {
            if ((8 * j + b) as u64) < n {
                word |= u64::from(rd!(plan.str_consts[c][8 * j + b])) << (8 * b);
                bytes |= 0xff << (8 * b);
            }
            b += 1;
        }
        // SAFETY: this CPU's scratch.
        unsafe {
            (*scratch).pattern[j] = word;
            (*scratch).mask[j] = bytes;
        }
        j += 1;
    }
    // SAFETY: this CPU's scratch; the blocks are read by the helper, which checks them.
    let base = unsafe { (*scratch).out.tail.as_ptr() } as u64 + off + first;
    let mut block = 0u64;
    while block < (STR_MAX / 8) as u64 {
        if 8 * block > more {
            break;
        }
        // The block's 8 places' windows, from one read of 40 bytes.
        // SAFETY: the helper checks the access, and zeroes the window when it fails.
        let w = unsafe {
            let w = &mut (*scratch).window;
            bpf_probe_read_kernel(
                w.as_mut_ptr() as *mut c_void,
                (STR_BYTES + 8) as u32,
                (base + 8 * block) as *const c_void,
            );
            &*w
        };
        // SAFETY: this CPU's scratch.
        let (pattern, mask) = unsafe { (&(*scratch).pattern, &(*scratch).mask) };
        // The constant's words: a plan constant, read again rather than kept in a register.
        let words = (rd!(plan.str_lens[c]) as usize).div_ceil(8);
        // Sign bits only, and no comparison per place: LLVM makes comparisons branches.
        let mut all_differ = u64::MAX;
        let mut k = 0;
        while k < 8 {
            // Word j of the window at byte k: `<< 1 << (63 - 8k)` is 0 at k = 0.
            let mut diff = 0u64;
            let mut j = 0;
            while j < STR_BYTES / 8 {
                if j < words {
                    let window = (w[j] >> (8 * k)) | ((w[j + 1] << 1) << (63 - 8 * k));
                    diff |= (window ^ pattern[j]) & mask[j];
                }
                j += 1;
            }
            // The sign bit is set when the window differs (`diff | -diff`) or the place
            // is past the last (`more - place` wraps).
            let place = 8 * block + k as u64;
            all_differ &= diff | diff.wrapping_neg() | more.wrapping_sub(place);
            k += 1;
        }
        if (all_differ as i64) >= 0 {
            return true;
        }
        block += 1;
    }
    false
}
