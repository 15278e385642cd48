//! Reading what the engine aggregated: its counters, its cells (the array, or the group
//! hash and the group cells in front of it), and deleting idle groups for the exporter.

use aya::maps::{PerCpuArray, PerCpuHashMap};
use tracekit_common::engine::{AggKey, AggValue, KEY_WORDS, STAT_COUNT, layout, operand, stat};

use super::{Aggregates, Engine, EngineStats, maps};
use crate::{Result, error::Context as _};

impl Engine {
    /// What the first key word is read with added: [`super::EngineSpec::event_base`] when
    /// the plan is keyed by the event first, else 0.
    fn key_base(&self) -> u64 {
        let keyed_by_event = self.plan.n_key_parts > 0
            && self.plan.operands[self.plan.key_parts[0] as usize].kind == operand::EVENT_INDEX;
        if keyed_by_event {
            u64::from(self.event_base)
        } else {
            0
        }
    }

    /// Counter `index` of `ENGINE_STATS` (a [`stat`] constant), summed over CPUs.
    ///
    /// # Errors
    /// A runtime error when the map cannot be read.
    pub fn stat(&self, index: u32) -> Result<u64> {
        let stats_map: PerCpuArray<_, u64> =
            PerCpuArray::try_from(&self.stats).context("opening ENGINE_STATS")?;
        Ok(stats_map
            .get(&index, 0)
            .context("reading ENGINE_STATS")?
            .iter()
            .sum())
    }

    /// Copies the aggregates and counters out of the kernel.
    pub fn read(&self) -> Result<Aggregates> {
        let mut cells = std::collections::BTreeMap::new();
        let base = self.key_base();
        if self.plan.layout == layout::ARRAY {
            let slots = self.plan.slots;
            let keyed = self.plan.n_key_parts > 0;
            let n = (self.plan.array_key_bound + 1) * slots;
            let values = match maps::percpu_array_batch(&self.array, n) {
                Some(values) => values,
                None => {
                    let array: PerCpuArray<_, AggValue> =
                        PerCpuArray::try_from(&self.array).context("opening ENGINE_ARRAY")?;
                    (0..n)
                        .map(|index| {
                            let per_cpu = array.get(&index, 0).context("reading ENGINE_ARRAY")?;
                            Ok(maps::sum(per_cpu.iter()))
                        })
                        .collect::<Result<Vec<_>>>()?
                }
            };
            for (index, value) in (0..n).zip(values) {
                if value.count > 0 {
                    let key = if keyed {
                        vec![u64::from(index / slots) + base]
                    } else {
                        Vec::new()
                    };
                    cells.insert((key, index % slots), value);
                }
            }
        } else {
            let cached = if self.plan.group_cache != 0 {
                maps::read_cache(&self.cache)?
            } else {
                std::collections::BTreeMap::new()
            };
            if let Some(names) = &self.names {
                cells = names.read(&self.plan, base, &cached)?;
            } else {
                let hash: PerCpuHashMap<_, AggKey, AggValue> =
                    PerCpuHashMap::try_from(&self.hash).context("opening ENGINE_HASH")?;
                let mut add = |key: AggKey, value: AggValue| {
                    let mut words = key.words.to_vec();
                    words[0] = words[0].wrapping_add(base);
                    let cell: &mut AggValue = cells.entry((words, key.slot)).or_default();
                    cell.count += value.count;
                    cell.sum = cell.sum.wrapping_add(value.sum);
                };
                for entry in hash.iter() {
                    let (key, per_cpu) = entry.context("reading ENGINE_HASH")?;
                    add(key, maps::sum(per_cpu.iter()));
                }
                for (key, value) in cached {
                    add(key, value);
                }
            }
        }
        let stats_map: PerCpuArray<_, u64> =
            PerCpuArray::try_from(&self.stats).context("opening ENGINE_STATS")?;
        let mut counters = [0u64; STAT_COUNT as usize];
        for (index, counter) in counters.iter_mut().enumerate() {
            *counter = stats_map
                .get(&(index as u32), 0)
                .context("reading ENGINE_STATS")?
                .iter()
                .sum();
        }
        let names_lost = counters[stat::NAMES_LOST as usize];
        if self.names.is_some() && names_lost > 0 {
            log::warn!(
                "{names_lost} thread names were not recorded (the name maps hold {} threads): \
                 their earlier events show under `tid N`",
                tracekit_common::engine::TASK_NAMES_ENTRIES
            );
        }
        let counted = cells.values().map(|value| value.count).sum();
        let misses = self.misses();
        let kernel_stacks = if self.kernel_stacks {
            self.stacks(cells.keys().flat_map(|(words, _)| words.iter().copied()))?
        } else {
            Default::default()
        };
        Ok(Aggregates {
            kernel_stacks,
            cells,
            stats: EngineStats {
                counted,
                filtered: counters[stat::FILTERED as usize],
                map_full: counters[stat::MAP_FULL as usize],
                no_start: counters[stat::NO_START as usize],
                start_map_full: counters[stat::START_MAP_FULL as usize],
                read_errors: counters[stat::READ_ERRORS as usize],
                starts: counters[stat::STARTS as usize],
                trace_lost: counters[stat::TRACE_LOST as usize],
                stack_map_full: counters[stat::STACK_MAP_FULL as usize],
                stack_errors: counters[stat::STACK_ERRORS as usize],
                announce_lost: counters[stat::ANNOUNCE_LOST as usize],
                starts_ended: counters[stat::STARTS_ENDED as usize],
                starts_exited: counters[stat::STARTS_EXITED as usize],
                missed: misses.main,
                starts_missed: misses.start,
            },
        })
    }
}

impl Engine {
    /// Whether the aggregates live in the group hash map, whose entries
    /// [`Engine::remove_cells`] can delete (an array layout holds every key for good).
    pub fn removes_cells(&self) -> bool {
        self.plan.layout != layout::ARRAY && self.names.is_none() && self.plan.group_cache == 0
    }

    /// Deletes `cells` (keys and slots as [`Engine::read`] gives them) from the group hash
    /// map, to make room: events counted between the read and the deletion are lost.
    /// Returns how many were there; none with an array layout.
    ///
    /// # Errors
    /// A run-time error when the map cannot be opened.
    pub fn remove_cells<'a>(
        &mut self,
        cells: impl IntoIterator<Item = (&'a [u64], u32)>,
    ) -> Result<usize> {
        if !self.removes_cells() {
            return Ok(0);
        }
        let base = self.key_base();
        let mut hash: PerCpuHashMap<_, AggKey, AggValue> =
            PerCpuHashMap::try_from(&mut self.hash).context("opening ENGINE_HASH")?;
        let mut removed = 0;
        for (words, slot) in cells {
            let Ok(mut words) = <[u64; KEY_WORDS]>::try_from(words) else {
                continue;
            };
            words[0] = words[0].wrapping_sub(base);
            let key = AggKey {
                words,
                slot,
                _pad: 0,
            };
            if hash.remove(&key).is_ok() {
                removed += 1;
            }
        }
        Ok(removed)
    }
}
