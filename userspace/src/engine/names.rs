//! `--by comm` without a string on the kernel's hot path: the plan's comm key
//! part becomes [`operand::TASK`] (`tid | generation << 32`, one 4-byte hash lookup instead
//! of copying and hashing a 32-byte string, and a plan `engine::simple` can run), and
//! [`TaskNames::translate`] turns it back into the comm when the maps are read, so the
//! groups and counts are those of the string key:
//!
//! - the first event of each new group key records the thread's comm under its word in
//!   `ENGINE_TASK_NAMES` (the insert path, not the hot one), the very bytes the string key
//!   would have held (`/proc/TID/comm` differs: a kworker's shows its work queue);
//! - the cold-path programs on `task:task_rename` (`prctl(PR_SET_NAME)`, a write to
//!   `/proc/TID/comm`, every exec) and `sched:sched_process_exit` start the thread's next
//!   generation (`ebpf/src/engine/names.rs`), so its events after a rename count apart.
//!
//! Cells of generations that are over no longer change: each read moves them out of the
//! kernel's group hash into [`TaskNames`], and drops their names (and the generations of
//! threads gone), so process and thread churn does not fill the maps.
//!
//! Plans that compare or print the comm, trace records, start stages and the exporter (whose
//! series would multiply by thread, and which deletes idle cells by key) keep the string.
//! `TRACEKIT_COMM_KEYS=string` keeps it everywhere (the tests compare the two), as does a
//! kernel without `task:task_rename`.

use std::{collections::BTreeMap, path::Path};

use aya::maps::{HashMap as BpfHashMap, Map, MapData, PerCpuHashMap};
use tracekit_common::engine::{
    AggKey, AggValue, IDLE_TASK, KEY_WORDS, MAX_OPERANDS, Plan, STR_BYTES, agg, operand,
};

use crate::{Result, error::Context as _, probe::tracefs::EventFormat};

/// The environment variable that keeps `--by comm` keyed by the string in the kernel when
/// set to `string` (the string key, for comparisons in benchmarks).
pub const COMM_KEYS: &str = "TRACEKIT_COMM_KEYS";

/// The offset of `pid` in `task:task_rename` records, from its format file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenameOffsets {
    /// `pid_t pid`: the renamed thread.
    pub pid: u32,
}

/// Offsets of `task:task_rename`'s fields under `tracefs`, or None (with the reason logged)
/// when the kernel lacks the event or the fields.
pub fn rename_offsets(tracefs: &Path) -> Option<RenameOffsets> {
    let format = EventFormat::read(tracefs, "task", "task_rename")
        .inspect_err(|err| log::debug!("--by comm keeps its string key: {err}"))
        .ok()?;
    let pid = format.field("pid")?;
    (pid.size == 4).then_some(RenameOffsets { pid: pid.offset })
}

/// Whether `plan`'s operand `index` is only a group-key part: not compared, not the
/// value, not saved or correlated, in a plan that aggregates into the hash.
fn only_a_key(plan: &Plan, index: u32) -> bool {
    let insns = &plan.insns[..plan.n_insns as usize];
    plan.agg != agg::TRACE
        && plan.needs_start == 0
        && plan.key_parts[..plan.n_key_parts as usize].contains(&index)
        && !insns
            .iter()
            .any(|insn| insn.op >= tracekit_common::engine::op::EQ && insn.operand == index)
        && plan.value != index
        && !plan.saves.contains(&index)
        && !plan.corr_parts[..plan.n_corr_parts as usize].contains(&index)
}

/// Rewrites `plan`'s comm operand into [`operand::TASK`] when it is only a group-key part
/// of a hash-layout plan; returns whether it did.
pub fn key_by_task(plan: &mut Plan) -> bool {
    if plan.layout != tracekit_common::engine::layout::HASH
        || std::env::var(COMM_KEYS).is_ok_and(|value| value == "string")
    {
        return false;
    }
    let n = (plan.n_operands as usize).min(MAX_OPERANDS);
    let Some(index) = (0..n).find(|&i| plan.operands[i].kind == operand::COMM) else {
        return false;
    };
    if !only_a_key(plan, index as u32) {
        return false;
    }
    plan.operands[index].kind = operand::TASK;
    plan.operands[index].size = 8;
    plan.needs_ids = 1;
    true
}

/// The maps that name [`operand::TASK`] values, taken from the loaded object, and the
/// cells of ended generations folded out of the group hash.
pub struct TaskNames {
    maps: std::sync::Mutex<NameMaps>,
    /// What the deleted cells held, by the key the string would have made.
    folded: std::sync::Mutex<Cells>,
}

/// The kernel maps [`TaskNames`] reads and prunes.
struct NameMaps {
    /// `ENGINE_TASK_GENS`: tid to its current generation.
    gens: BpfHashMap<MapData, u32, u32>,
    /// `ENGINE_TASK_NAMES`: [`operand::TASK`] word to the comm.
    names: BpfHashMap<MapData, u64, [u8; 16]>,
    /// `ENGINE_HASH`, reopened: cells of ended generations are deleted from it.
    hash: PerCpuHashMap<MapData, AggKey, AggValue>,
}

/// Aggregate cells by key words and slot, as [`super::Engine::read`] gives them.
type Cells = BTreeMap<(Vec<u64>, u32), AggValue>;

/// What one [`operand::TASK`] value is shown as: the comm, NUL-padded to a string key
/// part, or `tid N` when its name was lost.
type Comm = [u8; STR_BYTES];

/// `bytes` up to its first NUL, at most 15 bytes (the kernel's `TASK_COMM_LEN` less its
/// NUL), NUL-padded.
fn comm_of(bytes: &[u8]) -> Comm {
    let mut comm = [0u8; STR_BYTES];
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let n = end.min(15);
    comm[..n].copy_from_slice(&bytes[..n]);
    comm
}

/// The `tid` and generation of an [`operand::TASK`] word; None for an idle task's.
fn split(word: u64) -> Option<(u32, u32)> {
    (word & IDLE_TASK == 0).then_some((word as u32, (word >> 32) as u32))
}

impl TaskNames {
    /// Takes `ENGINE_TASK_GENS` and `ENGINE_TASK_NAMES`, and reopens `hash`
    /// (`ENGINE_HASH`).
    ///
    /// # Errors
    /// A run-time error when a map cannot be opened.
    pub fn new(gens: Map, names: Map, hash: &Map) -> Result<Self> {
        let Map::PerCpuHashMap(data) = hash else {
            return Err(crate::Error::runtime("ENGINE_HASH is not a per-CPU hash"));
        };
        let id = data.info().context("ENGINE_HASH info")?.id();
        let data = MapData::from_id(id).context("reopening ENGINE_HASH")?;
        Ok(Self {
            maps: std::sync::Mutex::new(NameMaps {
                gens: BpfHashMap::try_from(gens).context("opening ENGINE_TASK_GENS")?,
                names: BpfHashMap::try_from(names).context("opening ENGINE_TASK_NAMES")?,
                hash: PerCpuHashMap::try_from(Map::PerCpuHashMap(data))
                    .context("opening ENGINE_HASH")?,
            }),
            folded: std::sync::Mutex::new(BTreeMap::new()),
        })
    }

    /// The comm of `word` (`tid | generation << 32`), and whether its generation is over
    /// (the thread was renamed, exec'd or exited since, or is gone): then no event counts
    /// under it any more, but for a write to another thread's `/proc/TID/comm` racing with
    /// its events, or a thread id reused within one read.
    fn comm(maps: &NameMaps, word: u64) -> (Comm, bool) {
        let recorded = maps.names.get(&word, 0).ok();
        let Some((tid, generation)) = split(word) else {
            let name = format!("swapper/{}", word & !IDLE_TASK);
            return (
                recorded.map_or_else(|| comm_of(name.as_bytes()), |n| comm_of(&n)),
                false,
            );
        };
        let alive = std::path::Path::new(&format!("/proc/{tid}")).exists();
        let current = maps.gens.get(&tid, 0).unwrap_or(0);
        let over = current != generation || !alive;
        let comm = match recorded {
            Some(name) => comm_of(&name),
            // Not recorded (the name map was full): the thread's name now, if it is still
            // in that generation.
            None => match std::fs::read(format!("/proc/{tid}/comm")) {
                Ok(text) if !over => comm_of(text.strip_suffix(b"\n").unwrap_or(&text)),
                _ => comm_of(format!("tid {tid}").as_bytes()),
            },
        };
        (comm, over)
    }

    /// The group hash's cells as the string key would have made them: each
    /// [`operand::TASK`] key word becomes the comm (32 bytes, four words), and cells that
    /// name the same comm merge. `base` is added to the first word (see
    /// [`super::EngineSpec::event_base`]). Cells of generations that are over are deleted
    /// from the hash and kept here, with their names and the generations of threads gone,
    /// so threads that come and go do not fill the maps.
    ///
    /// # Errors
    /// A run-time error when the hash cannot be read.
    pub fn read(
        &self,
        plan: &Plan,
        base: u64,
        cached: &BTreeMap<AggKey, AggValue>,
    ) -> Result<Cells> {
        let mut maps = self.maps.lock().unwrap_or_else(|e| e.into_inner());
        let mut folded = self.folded.lock().unwrap_or_else(|e| e.into_inner());
        let mut known: BTreeMap<u64, (Comm, bool)> = BTreeMap::new();
        let mut out = folded.clone();
        let mut over_keys = Vec::new();
        let mut entries = Vec::new();
        for entry in maps.hash.iter() {
            let (key, per_cpu) = entry.context("reading ENGINE_HASH")?;
            entries.push((key, super::maps::sum(per_cpu.iter()), false));
        }
        // A group cache cell is never given back during a load: its group is counted from
        // the cell at every read, never folded, and its thread's name stays recorded.
        entries.extend(cached.iter().map(|(&key, &value)| (key, value, true)));
        let mut in_cells = std::collections::BTreeSet::new();
        for (key, value, in_cell) in entries {
            let mut words = Vec::with_capacity(KEY_WORDS);
            let mut at = 0;
            let mut over = false;
            for &part in &plan.key_parts[..plan.n_key_parts as usize] {
                let o = plan.operands[(part as usize).min(MAX_OPERANDS - 1)];
                if o.kind == operand::TASK {
                    let word = key.words.get(at).copied().unwrap_or(0);
                    let (comm, ended) =
                        *known.entry(word).or_insert_with(|| Self::comm(&maps, word));
                    over |= ended;
                    if in_cell {
                        in_cells.insert(word);
                    }
                    words.extend(
                        comm.chunks(8)
                            .map(|c| u64::from_ne_bytes(c.try_into().expect("8-byte chunks"))),
                    );
                    at += 1;
                } else {
                    let n = o.key_words();
                    words.extend(key.words.iter().skip(at).take(n));
                    at += n;
                }
            }
            // The string layout may take more than the kernel's KEY_WORDS (a comm beside 7
            // numbers is 11 words): the cells' keys are vectors, kept whole.
            words.resize(KEY_WORDS.max(words.len()), 0);
            words[0] = words[0].wrapping_add(base);
            if over && !in_cell {
                over_keys.push(key);
                add(&mut folded, &words, key.slot, value);
            }
            add(&mut out, &words, key.slot, value);
        }
        for key in over_keys {
            let _ = maps.hash.remove(&key);
        }
        for (&word, &(_, over)) in &known {
            if over
                && !in_cells.contains(&word)
                && let Some((tid, _)) = split(word)
            {
                let _ = maps.names.remove(&word);
                if !std::path::Path::new(&format!("/proc/{tid}")).exists() {
                    let _ = maps.gens.remove(&tid);
                }
            }
        }
        Ok(out)
    }
}

/// Adds `value` to the cell of `words` and `slot`.
fn add(cells: &mut Cells, words: &[u64], slot: u32, value: AggValue) {
    let cell = cells
        .entry((words.to_vec(), slot))
        .or_insert(AggValue { count: 0, sum: 0 });
    cell.count += value.count;
    cell.sum = cell.sum.wrapping_add(value.sum);
}

#[cfg(test)]
mod tests {
    use tracekit_common::engine::{Operand, layout};

    use super::*;

    fn keyed(kinds: &[u32]) -> Plan {
        let mut plan = Plan::EMPTY;
        for (i, &kind) in kinds.iter().enumerate() {
            plan.operands[i] = Operand {
                kind,
                size: if kind == operand::COMM { 32 } else { 8 },
                ..Operand::NONE
            };
            plan.key_parts[i] = i as u32;
        }
        plan.n_operands = kinds.len() as u32;
        plan.n_key_parts = kinds.len() as u32;
        plan.layout = layout::HASH;
        plan
    }

    /// `--by comm` and `--by pid,comm` key by thread; a comm that is compared, or a plan
    /// in the array, keeps the string.
    #[test]
    fn comm_key_parts_become_task_words() {
        let mut by_comm = keyed(&[operand::COMM]);
        assert!(key_by_task(&mut by_comm));
        assert_eq!(by_comm.operands[0].kind, operand::TASK);
        assert_eq!(by_comm.needs_ids, 1);
        let mut by_pid_comm = keyed(&[operand::PID, operand::COMM]);
        assert!(key_by_task(&mut by_pid_comm));
        assert_eq!(by_pid_comm.operands[1].kind, operand::TASK);
        let mut compared = keyed(&[operand::COMM]);
        compared.n_insns = 1;
        compared.insns[0].op = tracekit_common::engine::op::STR_EQ;
        compared.insns[0].operand = 0;
        assert!(!key_by_task(&mut compared));
        let mut by_pid = keyed(&[operand::PID]);
        assert!(!key_by_task(&mut by_pid));
        let mut traced = keyed(&[operand::COMM]);
        traced.agg = agg::TRACE;
        assert!(!key_by_task(&mut traced));
    }
}
