//! `--by comm` without a string on the kernel's hot path (issue 29): the plan's comm key
//! part becomes [`operand::TASK`] (`tid | generation << 32`, one 4-byte hash lookup instead
//! of copying and hashing a 32-byte string, and a plan `engine::simple` can run), and
//! [`TaskNames::translate`] turns it back into the comm when the maps are read, so the
//! groups and counts are those of the string key:
//!
//! - a generation that ended (the thread was renamed by `prctl(PR_SET_NAME)` or through
//!   `/proc/TID/comm`, it exec'd, or it exited) has its last comm in `ENGINE_TASK_NAMES`,
//!   recorded by the cold-path programs on `task:task_rename` and `sched:sched_process_exit`
//!   (`ebpf/src/engine/names.rs`);
//! - the generation still running is named by `/proc/TID/comm`.
//!
//! Plans that compare or print the comm, trace records, start stages and the exporter (whose
//! series would multiply by thread, and which deletes idle cells by key) keep the string.
//! `TRACEKIT_COMM_KEYS=string` keeps it everywhere (the tests compare the two), as does a
//! kernel without `task:task_rename`.

use std::{collections::BTreeMap, path::Path};

use aya::maps::{HashMap as BpfHashMap, Map, MapData};
use tracekit_common::engine::{
    AggValue, IDLE_TASK, KEY_WORDS, MAX_OPERANDS, NO_OPERAND, Plan, STR_BYTES, agg, operand,
};

use crate::{Result, error::Context as _, probe::tracefs::EventFormat};

/// The environment variable that keeps `--by comm` keyed by the string in the kernel when
/// set to `string` (the path before issue 29, for comparisons).
pub const COMM_KEYS: &str = "TRACEKIT_COMM_KEYS";

/// Offsets of `pid` and `oldcomm` in `task:task_rename` records, from its format file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenameOffsets {
    /// `pid_t pid`: the renamed thread.
    pub pid: u32,
    /// `char oldcomm[16]`.
    pub oldcomm: u32,
}

/// Offsets of `task:task_rename`'s fields under `tracefs`, or None (with the reason logged)
/// when the kernel lacks the event or the fields.
pub fn rename_offsets(tracefs: &Path) -> Option<RenameOffsets> {
    let format = EventFormat::read(tracefs, "task", "task_rename")
        .inspect_err(|err| log::debug!("--by comm keeps its string key: {err}"))
        .ok()?;
    let pid = format.field("pid")?;
    let old = format.field("oldcomm")?;
    (pid.size == 4 && old.size == 16).then_some(RenameOffsets {
        pid: pid.offset,
        oldcomm: old.offset,
    })
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

/// The maps that name [`operand::TASK`] values, taken from the loaded object.
pub struct TaskNames {
    gens: Map,
    names: Map,
}

/// What one [`operand::TASK`] value was shown as: the comm, NUL-padded to a string key
/// part, or `tid N` when its name was lost.
type Comm = [u8; STR_BYTES];

impl TaskNames {
    /// Keeps `ENGINE_TASK_GENS` and `ENGINE_TASK_NAMES`.
    pub fn new(gens: Map, names: Map) -> Self {
        Self { gens, names }
    }

    /// The comm of thread `tid` in name generation `generation`.
    fn comm(
        &self,
        gens: &BpfHashMap<&MapData, u32, u32>,
        names: &BpfHashMap<&MapData, u64, [u8; 16]>,
        word: u64,
    ) -> Comm {
        let mut comm = [0u8; STR_BYTES];
        let put = |comm: &mut Comm, bytes: &[u8]| {
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            let n = end.min(15);
            comm[..n].copy_from_slice(&bytes[..n]);
        };
        if word & IDLE_TASK != 0 {
            put(
                &mut comm,
                format!("swapper/{}", word & !IDLE_TASK).as_bytes(),
            );
            return comm;
        }
        let (tid, generation) = (word as u32, (word >> 32) as u32);
        let ended = |generation: u32| names.get(&(u64::from(tid) | u64::from(generation) << 32), 0);
        if let Ok(name) = ended(generation) {
            put(&mut comm, &name);
            return comm;
        }
        let current = gens.get(&tid, 0).unwrap_or(0);
        if current == generation
            && let Ok(text) = std::fs::read(format!("/proc/{tid}/comm"))
        {
            // Renamed or gone meanwhile: then the generation's name is recorded.
            match ended(generation) {
                Ok(name) => put(&mut comm, &name),
                Err(_) => put(&mut comm, text.strip_suffix(b"\n").unwrap_or(&text)),
            }
            return comm;
        }
        if let Ok(name) = ended(generation) {
            put(&mut comm, &name);
        } else if let Some(name) = generation.checked_sub(1).and_then(|g| ended(g).ok()) {
            // Events after the thread's exit tracepoint (its last switch away).
            put(&mut comm, &name);
        } else {
            put(&mut comm, format!("tid {tid}").as_bytes());
        }
        comm
    }

    /// `cells` as the string key would have made them: each [`operand::TASK`] key word
    /// becomes the comm (32 bytes, four words), and cells that name the same comm merge.
    ///
    /// # Errors
    /// A run-time error when a name map cannot be opened.
    pub fn translate(
        &self,
        plan: &Plan,
        cells: BTreeMap<(Vec<u64>, u32), AggValue>,
    ) -> Result<BTreeMap<(Vec<u64>, u32), AggValue>> {
        let gens: BpfHashMap<_, u32, u32> =
            BpfHashMap::try_from(&self.gens).context("opening ENGINE_TASK_GENS")?;
        let names: BpfHashMap<_, u64, [u8; 16]> =
            BpfHashMap::try_from(&self.names).context("opening ENGINE_TASK_NAMES")?;
        let mut known: BTreeMap<u64, Comm> = BTreeMap::new();
        let mut out: BTreeMap<(Vec<u64>, u32), AggValue> = BTreeMap::new();
        for ((words, slot), value) in cells {
            let mut key = Vec::with_capacity(KEY_WORDS);
            let mut at = 0;
            for &part in &plan.key_parts[..plan.n_key_parts as usize] {
                let o = plan.operands[(part as usize).min(MAX_OPERANDS - 1)];
                if part != NO_OPERAND && o.kind == operand::TASK {
                    let word = words.get(at).copied().unwrap_or(0);
                    let comm = *known
                        .entry(word)
                        .or_insert_with(|| self.comm(&gens, &names, word));
                    key.extend(
                        comm.chunks(8)
                            .map(|c| u64::from_ne_bytes(c.try_into().expect("8-byte chunks"))),
                    );
                    at += 1;
                } else {
                    let n = if o.is_string() { STR_BYTES / 8 } else { 1 };
                    key.extend(words.iter().skip(at).take(n));
                    at += n;
                }
            }
            key.resize(KEY_WORDS.max(key.len()), 0);
            key.truncate(KEY_WORDS);
            let cell = out
                .entry((key, slot))
                .or_insert(AggValue { count: 0, sum: 0 });
            cell.count += value.count;
            cell.sum = cell.sum.wrapping_add(value.sum);
        }
        Ok(out)
    }
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
