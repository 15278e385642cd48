//! What the engine's maps hold, as read: aggregates per (key, slot), the engine's counters,
//! and stacks by hash.

use std::collections::BTreeMap;

use aya::maps::{HashMap as BpfHashMap, Map, MapData};
use tracekit_common::{
    cpu_sampler::{STACK_ERROR, StackFrames},
    engine::{AggKey, AggValue, CACHE_CELLS, CacheCell, KEY_WORDS},
};

/// The engine's counters, summed over CPUs (see `tracekit_common::engine::stat`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct EngineStats {
    /// Events aggregated.
    pub counted: u64,
    /// Events the filter rejected.
    pub filtered: u64,
    /// Events dropped: the group map was full.
    pub map_full: u64,
    /// End events whose start was not seen.
    pub no_start: u64,
    /// Starts dropped: the start map was full.
    pub start_map_full: u64,
    /// Events whose fields could not be read.
    pub read_errors: u64,
    /// Starts recorded.
    pub starts: u64,
    /// Trace records lost to a full ring buffer.
    pub trace_lost: u64,
    /// Stacks lost to a full stack map.
    pub stack_map_full: u64,
    /// Stacks the kernel could not walk.
    pub stack_errors: u64,
    /// New-process announcements lost.
    pub announce_lost: u64,
    /// Starts their end event found.
    pub starts_ended: u64,
    /// Starts dropped because their thread exited first.
    pub starts_exited: u64,
    /// Events the kernel did not run the main stage's program for: another BPF program was
    /// running on that CPU (the programs' `recursion_misses`, see [`super::Misses`]), or a
    /// kretprobe's return came while all its instances were taken (its `nmissed`).
    pub missed: u64,
    /// Start events the kernel did not run the start stage's program for (as `missed`);
    /// their ends count as ends without a start.
    pub starts_missed: u64,
}

impl EngineStats {
    pub fn add(&mut self, other: &EngineStats) {
        self.trace_lost += other.trace_lost;
        self.stack_map_full += other.stack_map_full;
        self.stack_errors += other.stack_errors;
        self.announce_lost += other.announce_lost;
        self.counted += other.counted;
        self.filtered += other.filtered;
        self.map_full += other.map_full;
        self.no_start += other.no_start;
        self.start_map_full += other.start_map_full;
        self.read_errors += other.read_errors;
        self.starts += other.starts;
        self.starts_ended += other.starts_ended;
        self.starts_exited += other.starts_exited;
        self.missed += other.missed;
        self.starts_missed += other.starts_missed;
    }

    /// Counter-wise `self - earlier`.
    pub fn since(&self, earlier: &EngineStats) -> EngineStats {
        EngineStats {
            counted: self.counted.saturating_sub(earlier.counted),
            filtered: self.filtered.saturating_sub(earlier.filtered),
            map_full: self.map_full.saturating_sub(earlier.map_full),
            no_start: self.no_start.saturating_sub(earlier.no_start),
            start_map_full: self.start_map_full.saturating_sub(earlier.start_map_full),
            read_errors: self.read_errors.saturating_sub(earlier.read_errors),
            starts: self.starts.saturating_sub(earlier.starts),
            trace_lost: self.trace_lost.saturating_sub(earlier.trace_lost),
            stack_map_full: self.stack_map_full.saturating_sub(earlier.stack_map_full),
            stack_errors: self.stack_errors.saturating_sub(earlier.stack_errors),
            announce_lost: self.announce_lost.saturating_sub(earlier.announce_lost),
            starts_ended: self.starts_ended.saturating_sub(earlier.starts_ended),
            starts_exited: self.starts_exited.saturating_sub(earlier.starts_exited),
            missed: self.missed.saturating_sub(earlier.missed),
            starts_missed: self.starts_missed.saturating_sub(earlier.starts_missed),
        }
    }
}

/// Aggregates as read: (key words, slot) to (count, sum), summed over CPUs.
#[derive(Clone, Debug, Default)]
pub struct Aggregates {
    /// Per key and slot.
    pub cells: BTreeMap<(Vec<u64>, u32), AggValue>,
    /// Counters.
    pub stats: EngineStats,
    /// The frames (leaf first) of the kernel stacks the keys hold, for plans keyed by one
    /// ([`super::keys::KeyKind::KernelStack`]).
    pub kernel_stacks: BTreeMap<u64, Vec<u64>>,
}

impl Aggregates {
    /// Adds `other`'s cells and counters (several engines behind one command).
    pub fn merge(&mut self, other: Aggregates) {
        for (key, value) in other.cells {
            let cell = self.cells.entry(key).or_default();
            cell.count += value.count;
            cell.sum = cell.sum.wrapping_add(value.sum);
        }
        self.stats.add(&other.stats);
        self.kernel_stacks.extend(other.kernel_stacks);
    }

    /// What was aggregated after `earlier` (for `-i`).
    pub fn since(&self, earlier: &Aggregates) -> Aggregates {
        let cells = self
            .cells
            .iter()
            .filter_map(|(key, value)| {
                let before = earlier.cells.get(key).copied().unwrap_or_default();
                (value.count > before.count).then(|| {
                    (
                        key.clone(),
                        AggValue {
                            count: value.count - before.count,
                            sum: value.sum.wrapping_sub(before.sum),
                        },
                    )
                })
            })
            .collect();
        Aggregates {
            cells,
            stats: self.stats.since(&earlier.stats),
            kernel_stacks: self.kernel_stacks.clone(),
        }
    }
}

/// The kernel object behind an aya map handle.
pub(crate) fn map_data(map: &Map) -> Option<&MapData> {
    match map {
        Map::Array(data)
        | Map::ArrayOfMaps(data)
        | Map::HashOfMaps(data)
        | Map::PerCpuArray(data)
        | Map::HashMap(data)
        | Map::PerCpuHashMap(data)
        | Map::LruHashMap(data)
        | Map::PerCpuLruHashMap(data)
        | Map::RingBuf(data)
        | Map::StackTraceMap(data)
        | Map::PerfEventArray(data)
        | Map::Unsupported(data) => Some(data),
        _ => None,
    }
}

pub(crate) fn sum<'a>(values: impl Iterator<Item = &'a AggValue>) -> AggValue {
    values.fold(AggValue::default(), |acc, v| AggValue {
        count: acc.count + v.count,
        sum: acc.sum.wrapping_add(v.sum),
    })
}

/// Entries `0..n` of a per-CPU array of [`AggValue`], each summed over CPUs, read with one
/// `BPF_MAP_LOOKUP_BATCH` (Linux 5.6+) instead of `n` lookups: a scrape of syscalls by name
/// reads hundreds of cells, and each lookup is a system call. `None` when the kernel cannot
/// (then the caller reads key by key).
pub(crate) fn percpu_array_batch(map: &Map, n: u32) -> Option<Vec<AggValue>> {
    let cpus = aya::util::nr_cpus().ok()?;
    let values = percpu_array_values::<AggValue>(map, n)?;
    Some(values.chunks_exact(cpus).map(|v| sum(v.iter())).collect())
}

/// The group cache's cells (`ENGINE_CACHE`, [`Plan::group_cache`]) as group-hash entries:
/// each owned cell's group, with its counts summed over the CPUs whose cell it owns. A group
/// counts on each CPU either in its cell or in the hash, never both, so these add to the
/// hash's entries exactly.
///
/// [`Plan::group_cache`]: tracekit_common::engine::Plan::group_cache
///
/// # Errors
/// A run-time error when the map cannot be read.
pub(crate) fn read_cache(map: &Map) -> crate::error::Result<BTreeMap<AggKey, AggValue>> {
    use crate::error::Context as _;
    let cells = match percpu_array_values::<CacheCell>(map, CACHE_CELLS) {
        Some(cells) => cells,
        None => {
            let array: aya::maps::PerCpuArray<_, CacheCell> =
                aya::maps::PerCpuArray::try_from(map).context("opening ENGINE_CACHE")?;
            let mut cells = Vec::new();
            for index in 0..CACHE_CELLS {
                let per_cpu = array.get(&index, 0).context("reading ENGINE_CACHE")?;
                cells.extend(per_cpu.iter().copied());
            }
            cells
        }
    };
    Ok(cache_groups(&cells))
}

/// Owned cells (of any CPU and index) added up by group.
pub(crate) fn cache_groups(cells: &[CacheCell]) -> BTreeMap<AggKey, AggValue> {
    let mut groups: BTreeMap<AggKey, AggValue> = BTreeMap::new();
    for cell in cells.iter().filter(|cell| cell.owned != 0) {
        let mut words = [0; KEY_WORDS];
        words[..2].copy_from_slice(&cell.words);
        let key = AggKey {
            words,
            slot: cell.slot,
            _pad: 0,
        };
        let group = groups.entry(key).or_default();
        group.count += cell.count;
        group.sum = group.sum.wrapping_add(cell.sum);
    }
    groups
}

/// Entries `0..n` of a per-CPU array, one value per possible CPU each (index-major), read
/// with one `BPF_MAP_LOOKUP_BATCH` (Linux 5.6+); `T`'s size must be a multiple of 8, as the
/// kernel rounds each CPU's value up to 8 bytes. `None` when the kernel cannot.
fn percpu_array_values<T: Copy + Default>(map: &Map, n: u32) -> Option<Vec<T>> {
    use std::os::fd::{AsFd as _, AsRawFd as _};

    /// `union bpf_attr`'s `batch` member (include/uapi/linux/bpf.h).
    #[repr(C)]
    struct BatchAttr {
        in_batch: u64,
        out_batch: u64,
        keys: u64,
        values: u64,
        count: u32,
        map_fd: u32,
        elem_flags: u64,
        flags: u64,
    }
    const BPF_MAP_LOOKUP_BATCH: libc::c_long = 24;

    let Map::PerCpuArray(data) = map else {
        return None;
    };
    if n == 0 {
        return Some(Vec::new());
    }
    // The kernel writes one value per possible CPU, each rounded up to 8 bytes.
    const { assert!(size_of::<T>().is_multiple_of(8)) };
    let cpus = aya::util::nr_cpus().ok()?;
    let mut keys = vec![0u32; n as usize];
    let mut values = vec![T::default(); n as usize * cpus];
    let mut next = 0u32;
    let mut attr = BatchAttr {
        in_batch: 0,
        out_batch: std::ptr::from_mut(&mut next) as u64,
        keys: keys.as_mut_ptr() as u64,
        values: values.as_mut_ptr() as u64,
        count: n,
        map_fd: data.fd().as_fd().as_raw_fd() as u32,
        elem_flags: 0,
        flags: 0,
    };
    // SAFETY: bpf(2) with a batch attr whose buffers hold `count` keys and `count * cpus`
    // values, and an out_batch of the key's size, all alive for the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_MAP_LOOKUP_BATCH,
            std::ptr::from_mut(&mut attr),
            std::mem::size_of::<BatchAttr>(),
        )
    };
    // ENOENT: the map ended before `count` entries (it has at least n: never, but then the
    // count says how many came).
    if ret < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOENT) {
        return None;
    }
    if attr.count != n || keys.iter().enumerate().any(|(i, &k)| k as usize != i) {
        return None;
    }
    Some(values)
}

/// Looks up stacks by hash in an engine's stack map.
pub struct StackReader {
    pub(crate) map: BpfHashMap<MapData, u64, StackFrames>,
}

impl StackReader {
    /// The frames of a stack, leaf first, if it is in the map.
    pub fn frames(&self, hash: u64) -> Option<Vec<u64>> {
        if hash <= STACK_ERROR {
            return None;
        }
        let frames = self.map.get(&hash, 0).ok()?;
        Some(leaf_first(&frames))
    }
}

/// A stack map value's frames, leaf first, without the zero padding after the last.
pub fn leaf_first(frames: &StackFrames) -> Vec<u64> {
    let len = frames
        .iter()
        .position(|&ip| ip == 0)
        .unwrap_or(frames.len());
    frames[..len].to_vec()
}

/// The frames of each stack in `hashes` that `map` holds (none for `STACK_NONE`,
/// `STACK_ERROR` and hashes it lost).
pub fn read_stacks<T: std::borrow::Borrow<MapData>>(
    map: &BpfHashMap<T, u64, StackFrames>,
    hashes: impl IntoIterator<Item = u64>,
) -> BTreeMap<u64, Vec<u64>> {
    let mut out = BTreeMap::new();
    for hash in hashes {
        if hash <= STACK_ERROR || out.contains_key(&hash) {
            continue;
        }
        if let Ok(frames) = map.get(&hash, 0) {
            out.insert(hash, leaf_first(&frames));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(key: u64, slot: u32, count: u64, sum: u64) -> Aggregates {
        Aggregates {
            cells: BTreeMap::from([((vec![key], slot), AggValue { count, sum })]),
            stats: EngineStats {
                counted: count,
                ..EngineStats::default()
            },
            kernel_stacks: BTreeMap::new(),
        }
    }

    #[test]
    fn merge_adds_cells_and_counters_of_several_engines() {
        let mut all = one(1, 0, 3, 30);
        all.merge(one(1, 0, 2, 20));
        all.merge(one(2, 5, 1, u64::MAX));
        assert_eq!(all.cells[&(vec![1], 0)], AggValue { count: 5, sum: 50 });
        assert_eq!(all.cells[&(vec![2], 5)].sum, u64::MAX);
        assert_eq!(all.stats.counted, 6);
    }

    /// An interval holds the cells that grew in it, by how much; cells that did not grow
    /// are left out (an interval table lists only what happened in it).
    #[test]
    fn since_keeps_what_grew() {
        let mut earlier = one(1, 0, 3, 30);
        earlier.merge(one(2, 0, 7, 70));
        let mut now = one(1, 0, 5, 45);
        now.merge(one(2, 0, 7, 70));
        now.merge(one(3, 0, 1, 1));
        let delta = now.since(&earlier);
        assert_eq!(
            delta.cells.into_iter().collect::<Vec<_>>(),
            [
                ((vec![1], 0), AggValue { count: 2, sum: 15 }),
                ((vec![3], 0), AggValue { count: 1, sum: 1 }),
            ]
        );
        assert_eq!(delta.stats.counted, 13 - 10);
    }

    /// Sums wrap in the kernel (u64 adds); the interval's sum wraps back.
    #[test]
    fn since_subtracts_wrapped_sums() {
        let earlier = one(1, 0, 1, u64::MAX - 1);
        let now = one(1, 0, 2, 3);
        assert_eq!(now.since(&earlier).cells[&(vec![1], 0)].sum, 5);
    }

    /// Counters never go backwards in an interval, even if a reset made them smaller.
    #[test]
    fn stats_since_saturates() {
        let earlier = EngineStats {
            map_full: 5,
            missed: 2,
            ..EngineStats::default()
        };
        let now = EngineStats {
            map_full: 3,
            missed: 9,
            ..EngineStats::default()
        };
        let delta = now.since(&earlier);
        assert_eq!((delta.map_full, delta.missed), (0, 7));
        let mut added = earlier;
        added.add(&now);
        assert_eq!((added.map_full, added.missed), (8, 11));
    }

    #[test]
    fn sum_adds_per_cpu_values() {
        let values = [
            AggValue { count: 1, sum: 10 },
            AggValue {
                count: 2,
                sum: u64::MAX,
            },
        ];
        assert_eq!(sum(values.iter()), AggValue { count: 3, sum: 9 });
    }

    #[test]
    fn cache_groups_add_owned_cells_of_every_cpu() {
        let cell = |words: [u64; 2], slot, owned, count, sum| CacheCell {
            words,
            slot,
            owned,
            count,
            sum,
        };
        // Two CPUs' cells: pid 7 owns a cell on both, pid 9 on one; a free cell has junk.
        let cells = [
            cell([7, 0], 0, 1, 5, 50),
            cell([9, 0], 2, 1, 1, 3),
            cell([0, 0], 0, 0, 0, 0),
            cell([7, 0], 0, 1, 2, 20),
            cell([8, 1], 0, 0, 99, 99),
        ];
        let groups = cache_groups(&cells);
        let key = |w0, slot| {
            let mut words = [0; KEY_WORDS];
            words[0] = w0;
            AggKey {
                words,
                slot,
                _pad: 0,
            }
        };
        let want: BTreeMap<AggKey, AggValue> = [
            (key(7, 0), AggValue { count: 7, sum: 70 }),
            (key(9, 2), AggValue { count: 1, sum: 3 }),
        ]
        .into_iter()
        .collect();
        assert_eq!(groups, want);
    }

    #[test]
    fn cache_index_spreads_neighbouring_pids() {
        use tracekit_common::engine::cache_index;
        let cells: std::collections::BTreeSet<u32> =
            (1000..1064).map(|pid| cache_index(pid, 0, 0)).collect();
        assert!(cells.iter().all(|&c| c < CACHE_CELLS));
        // 64 consecutive pids in 256 cells: few collide.
        assert!(cells.len() >= 48, "{} distinct cells", cells.len());
        assert_ne!(cache_index(5, 0, 0), cache_index(5, 0, 1));
    }
}
