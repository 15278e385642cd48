//! The narrow hash layout ([`layout::NARROW`]) as read: each [`NarrowKey`] widened back to
//! the words of an [`AggKey`](tracekit_common::engine::AggKey) (strings from the names map),
//! so everything after [`Engine::read`](super::Engine::read) sees one key shape.
//!
//! [`layout::NARROW`]: tracekit_common::engine::layout::NARROW

use std::collections::{BTreeMap, HashMap};

use aya::maps::{HashMap as BpfHashMap, Map, PerCpuHashMap};
use tracekit_common::engine::{
    AggValue, KEY_WORDS, NARROW_WORDS, NarrowKey, Operand, Plan, STR_BYTES, narrow_hash,
};

use crate::{Result, error::Context as _};

/// Per key part of `plan`: whether it is a string (four words wide in the wide key).
fn string_parts(plan: &Plan) -> Vec<bool> {
    plan.key_parts[..plan.n_key_parts as usize]
        .iter()
        .map(|&index| {
            Operand {
                kind: plan.operands[index as usize].kind,
                ..Operand::NONE
            }
            .is_string()
        })
        .collect()
}

/// What a string part whose name is missing from the names map reads as.
const UNKNOWN: &[u8] = b"[unknown]";

/// Adds the narrow map's cells, widened, to `cells`; the first key word gets `base` added
/// (the engine's first event index, for plans keyed by event).
///
/// # Errors
/// A run-time error when a map cannot be opened or read.
pub(crate) fn read(
    narrow: &Map,
    names: &Map,
    plan: &Plan,
    base: u64,
    cells: &mut BTreeMap<(Vec<u64>, u32), AggValue>,
) -> Result<()> {
    let strings = string_parts(plan);
    let mut by_hash: HashMap<u64, [u8; STR_BYTES]> = HashMap::new();
    if strings.iter().any(|&s| s) {
        let names: BpfHashMap<_, u64, [u8; STR_BYTES]> =
            BpfHashMap::try_from(names).context("opening ENGINE_NAMES")?;
        for entry in names.iter() {
            let (hash, name) = entry.context("reading ENGINE_NAMES")?;
            by_hash.insert(hash, name);
        }
    }
    let hash: PerCpuHashMap<_, NarrowKey, AggValue> =
        PerCpuHashMap::try_from(narrow).context("opening ENGINE_NARROW")?;
    for entry in hash.iter() {
        let (key, per_cpu) = entry.context("reading ENGINE_NARROW")?;
        let mut words = widen(&key, &strings, &by_hash);
        words[0] = words[0].wrapping_add(base);
        let value = super::maps::sum(per_cpu.iter());
        let cell = cells.entry((words, key.slot)).or_default();
        cell.count += value.count;
        cell.sum = cell.sum.wrapping_add(value.sum);
    }
    Ok(())
}

/// The wide key words of `key`.
fn widen(key: &NarrowKey, strings: &[bool], by_hash: &HashMap<u64, [u8; STR_BYTES]>) -> Vec<u64> {
    let mut words = Vec::with_capacity(KEY_WORDS);
    for (part, &string) in strings.iter().enumerate().take(NARROW_WORDS) {
        if string {
            let bytes = by_hash.get(&key.words[part]).copied().unwrap_or_else(|| {
                let mut unknown = [0u8; STR_BYTES];
                unknown[..UNKNOWN.len()].copy_from_slice(UNKNOWN);
                unknown
            });
            words.extend(
                bytes
                    .chunks_exact(8)
                    .map(|w| u64::from_ne_bytes(w.try_into().expect("8 bytes"))),
            );
        } else {
            words.push(key.words[part]);
        }
    }
    words.resize(KEY_WORDS, 0);
    words
}

/// The narrow key of wide key `words` (its first word without the event base) and `slot`.
pub(crate) fn narrow_key(plan: &Plan, words: &[u64], slot: u32) -> NarrowKey {
    let mut key = NarrowKey {
        words: [0; NARROW_WORDS],
        slot,
        _pad: 0,
    };
    let mut at = 0;
    for (part, string) in string_parts(plan)
        .into_iter()
        .enumerate()
        .take(NARROW_WORDS)
    {
        if string {
            let mut four = [0u64; STR_BYTES / 8];
            for (i, w) in four.iter_mut().enumerate() {
                *w = words.get(at + i).copied().unwrap_or(0);
            }
            key.words[part] = narrow_hash(four);
            at += STR_BYTES / 8;
        } else {
            key.words[part] = words.get(at).copied().unwrap_or(0);
            at += 1;
        }
    }
    key
}

/// Deletes the cells (wide keys, first word without the event base) from the narrow map;
/// returns how many were there. Their names stay: another key may share them.
///
/// # Errors
/// A run-time error when the map cannot be opened.
pub(crate) fn remove(
    narrow: &mut Map,
    plan: &Plan,
    cells: impl IntoIterator<Item = (Vec<u64>, u32)>,
) -> Result<usize> {
    let mut hash: PerCpuHashMap<_, NarrowKey, AggValue> =
        PerCpuHashMap::try_from(narrow).context("opening ENGINE_NARROW")?;
    let mut removed = 0;
    for (words, slot) in cells {
        if hash.remove(&narrow_key(plan, &words, slot)).is_ok() {
            removed += 1;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{engine::PlanBuilder, probe::fields::builtin};

    /// A key of a comm and a pid widens to the wide key's words and narrows back to itself.
    #[test]
    fn narrow_keys_widen_and_narrow_back() {
        let mut b = PlanBuilder::new();
        let comm = b.operand(builtin("comm").unwrap().operand).unwrap();
        b.key_part(comm).unwrap();
        let pid = b.operand(builtin("pid").unwrap().operand).unwrap();
        b.key_part(pid).unwrap();
        let plan = b.plan();
        let mut name = [0u8; STR_BYTES];
        name[..7].copy_from_slice(b"tk_loop");
        let four: Vec<u64> = name
            .chunks_exact(8)
            .map(|w| u64::from_ne_bytes(w.try_into().unwrap()))
            .collect();
        let hash = narrow_hash(four.clone().try_into().unwrap());
        let key = NarrowKey {
            words: [hash, 4242],
            slot: 3,
            _pad: 0,
        };
        let by_hash = HashMap::from([(hash, name)]);
        let wide = widen(&key, &string_parts(&plan), &by_hash);
        let mut expected = four.clone();
        expected.push(4242);
        expected.resize(KEY_WORDS, 0);
        assert_eq!(wide, expected);
        assert_eq!(narrow_key(&plan, &wide, 3), key);
        // A name the map lost reads as [unknown], not as another group's.
        let lost = widen(&key, &string_parts(&plan), &HashMap::new());
        assert_eq!(&lost[..1], &[u64::from_ne_bytes(*b"[unknown")]);
    }
}
