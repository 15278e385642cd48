//! Aggregation: the histogram slot of an event's value and the per-CPU array or hash cell
//! it is counted in.

use aya_ebpf::bindings::BPF_NOEXIST;
use tracekit_common::engine::{
    AggKey, AggValue, KEY_SET_BITS, KEY_SET_WORDS, KEY_WORDS, MAX_KEY_PARTS, MAX_OPERANDS,
    MAX_PRECISION, MAX_STRINGS, NO_OPERAND, Operand, Plan, SIGNED, STR_BYTES, agg, layout,
    log_linear_slot, log2_slot, operand, stat,
};

use super::{EngineMaps, Scratch, bump, operands::int};

/// Adds one event (and `value` to the sum) to the aggregate `plan` keys it under.
#[inline(always)]
pub(crate) fn aggregate<M: EngineMaps>(plan: &'static Plan, scratch: *mut Scratch) {
    let value_index = rd!(plan.value);
    let (value, signed) = if value_index == NO_OPERAND {
        (0, false)
    } else {
        let index = (value_index as usize) & (MAX_OPERANDS - 1);
        (
            int(scratch, index),
            rd!(plan.operands[index].flags) & SIGNED != 0,
        )
    };
    let div = rd!(plan.value_div);
    let scaled = if div > 1 { value / div } else { value };
    let slot = slot_of(plan, scaled, signed);
    let n_key_parts = rd!(plan.n_key_parts) as usize;

    if rd!(plan.layout) == layout::ARRAY {
        let mut row = 0u64;
        if n_key_parts > 0 {
            let index = rd!(plan.key_parts[0]) as usize;
            row = int(scratch, index).min(u64::from(rd!(plan.array_key_bound)));
        }
        add_to_array::<M>(row as u32 * rd!(plan.slots) + slot, value);
        return;
    }

    // SAFETY: this CPU's scratch.
    let key = unsafe { &mut (*scratch).key };
    zero_words(&mut key.words, 0);
    key.slot = slot;
    key._pad = 0;
    let mut word = 0usize;
    for part in 0..MAX_KEY_PARTS {
        if part >= n_key_parts {
            break;
        }
        let index = (rd!(plan.key_parts[part]) as usize) & (MAX_OPERANDS - 1);
        // The kind, flags and size say how many words the part takes (`key_words`: raw
        // bytes as many as they fill, an IPv6 address two).
        let part_operand = Operand {
            kind: rd!(plan.operands[index].kind),
            flags: rd!(plan.operands[index].flags),
            size: rd!(plan.operands[index].size),
            ..Operand::NONE
        };
        let is_string = part_operand.is_string();
        let words = part_operand.key_words();
        if is_string {
            let slot = (rd!(plan.operands[index].string_slot) as usize) & (MAX_STRINGS - 1);
            // SAFETY: this CPU's scratch; slot masked into range.
            let s = unsafe { &(*scratch).strings[slot] };
            let mut w = 0;
            while w < STR_BYTES / 8 {
                if w < words && word + w < KEY_WORDS {
                    let mut bytes = [0u8; 8];
                    bytes.copy_from_slice(&s[w * 8..w * 8 + 8]);
                    key.words[word + w] = u64::from_ne_bytes(bytes);
                }
                w += 1;
            }
            word += words;
        } else {
            if word < KEY_WORDS {
                key.words[word] = int(scratch, index);
            }
            word += 1;
        }
    }
    // A new key: a thread name part records the thread's comm (engine::names).
    let name_tasks = || {
        for part in 0..MAX_KEY_PARTS {
            if part >= n_key_parts {
                break;
            }
            let index = (rd!(plan.key_parts[part]) as usize) & (MAX_OPERANDS - 1);
            if rd!(plan.operands[index].kind) == operand::TASK {
                super::names::name_task::<M>(int(scratch, index));
            }
        }
    };
    add_to_hash::<M>(key, value, name_tasks);
}

/// Zeroes `words[from..]` one store each: an array assignment compiles to a memset call,
/// which is a byte loop in BPF (48 iterations for a key).
#[inline(always)]
pub(crate) fn zero_words(words: &mut [u64; KEY_WORDS], from: usize) {
    let mut w = from;
    while w < KEY_WORDS {
        // SAFETY: w < KEY_WORDS; volatile so LLVM does not make it a memset again.
        unsafe { core::ptr::write_volatile(&mut words[w], 0) };
        w += 1;
    }
}

/// Adds one event of `value` to this CPU's cell `index` of the array layout.
#[inline(always)]
pub(crate) fn add_to_array<M: EngineMaps>(index: u32, value: u64) {
    if let Some(entry) = M::array().get_ptr_mut(index) {
        // SAFETY: this CPU's slot of a per-CPU array.
        unsafe {
            (*entry).count += 1;
            (*entry).sum = (*entry).sum.wrapping_add(value);
        }
    }
}

/// Adds one event of `value` to `key`'s entry of the group hash; for a key new to the hash,
/// `on_new` runs first (thread names), then the entry is inserted, or counted as dropped
/// ([`stat::MAP_FULL`]) when the map is full.
#[inline(always)]
pub(crate) fn add_to_hash<M: EngineMaps>(key: &AggKey, value: u64, on_new: impl FnOnce()) {
    if let Some(entry) = M::hash().get_ptr_mut(key) {
        // SAFETY: this CPU's value of a per-CPU hash entry.
        unsafe {
            (*entry).count += 1;
            (*entry).sum = (*entry).sum.wrapping_add(value);
        }
        return;
    }
    on_new();
    let first = AggValue {
        count: 1,
        sum: value,
    };
    if M::hash()
        .insert(key, &first, u64::from(BPF_NOEXIST))
        .is_err()
    {
        bump::<M>(stat::MAP_FULL);
    }
}

/// The histogram slot of `value` under `plan`.
#[inline(always)]
fn slot_of(plan: &'static Plan, value: u64, signed: bool) -> u32 {
    match rd!(plan.agg) {
        agg::LOG2 => {
            if signed && (value as i64) < 0 {
                0
            } else {
                log2_slot(value)
            }
        }
        agg::LOG_LINEAR => {
            if signed && (value as i64) < 0 {
                0
            } else {
                // Bounded so the verifier sees every shift below 64.
                log_linear_slot(value, rd!(plan.precision).min(MAX_PRECISION))
            }
        }
        agg::LINEAR => {
            let min = rd!(plan.linear_min);
            let step = rd!(plan.linear_step).max(1);
            let slots = rd!(plan.slots);
            let v = value as i64;
            if v < min {
                0
            } else {
                let bucket = ((v - min) as u64) / step;
                if bucket >= u64::from(slots - 2) {
                    slots - 1
                } else {
                    bucket as u32 + 1
                }
            }
        }
        _ => 0,
    }
}

/// Whether `row` (the first key part) is one the plan counts: every row unless the plan
/// names a set ([`Plan::key_set`]), as the shared `raw_syscalls` program does for a set of
/// `syscalls:*` tracepoints.
#[inline(always)]
pub(crate) fn row_wanted(plan: &'static Plan, row: u64) -> bool {
    if rd!(plan.key_set_used) == 0 {
        return true;
    }
    if row >= KEY_SET_BITS {
        return false;
    }
    let word = rd!(plan.key_set[(row / 64) as usize & (KEY_SET_WORDS - 1)]);
    (word >> (row % 64)) & 1 != 0
}
