//! The filter interpreter: a plan's postfix program of comparisons (integers and strings)
//! and boolean operators, run over the event's operands.

use tracekit_common::engine::{MAX_INSNS, MAX_OPERANDS, MAX_STRINGS, Plan, STR_BYTES, op};

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
                    // SAFETY: this CPU's scratch; slot masked into range.
                    let s = unsafe { &(*scratch).strings[slot] };
                    u64::from(match_string(plan, opcode, s, b as usize))
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
