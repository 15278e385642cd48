//! Monotonic Prometheus series from kernel aggregates that can lose entries.
//!
//! A kernel aggregate map holds, per key (label values, histogram slot), a count and a sum
//! that only grow while the entry lives. Entries do not always live: a full map makes room
//! (an LRU map evicts, or the exporter deletes entries), and a process exits with its keys.
//! Prometheus needs counters that never go down except at a restart. So [`Series`] keeps
//! the last reading of every live key and adds only what grew since (a key that comes back
//! starts from zero: everything it holds is new), and keeps the totals of keys long gone.
//! A key that vanishes between two readings is counted as an eviction (whatever it gained
//! after the last reading is lost, and [`Series::evicted`] says how often that can have
//! happened); a key the exporter deletes itself right after reading it
//! ([`Series::deleted`]) loses nothing.
//!
//! Label cardinality is capped per metric: the first `max_series` label sets get series of
//! their own, and every later one is folded into one overflow series whose every label is
//! [`OVERFLOW`]; [`Series::folded`] counts the label sets folded. Memory is bounded by the
//! cap and the kernel map's size.
//!
//! A series that did not grow for the idle time ([`Series::with_idle_eviction`]) is evicted
//! ([`Series::evict_idle`], counted by [`Series::series_evicted`]): a comm that ran once no
//! longer holds a series, nor one of the `max_series` places, for the rest of the run. If
//! its label set counts again, its series restarts from zero, which Prometheus's `rate()`
//! and `increase()` take as a counter reset (the series was absent from the scrapes in
//! between): nothing it counted after eviction is lost.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    time::{Duration, Instant},
};

use crate::output::prometheus::{
    BaseUnit, Buckets, Histogram, Labels, MetricFamily, Scale, Value, Values,
};

/// The label value of the overflow series.
pub const OVERFLOW: &str = "__overflow__";

/// One kernel aggregate entry as read: cumulative since the entry was created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    /// Label values, in the order of the metric's label names.
    pub labels: Labels,
    /// The histogram slot (0 for counters).
    pub slot: u32,
    /// Events counted.
    pub count: u64,
    /// Sum of the raw values, wrapping as the kernel adds them.
    pub sum: u64,
}

/// What a metric exposes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SeriesKind {
    /// The number of events (`NAME_total`).
    Count,
    /// The sum of the values, in base units (`NAME_UNIT_total`, e.g. bytes written).
    Sum {
        /// Raw values to base units.
        scale: Scale,
    },
    /// A histogram of the values (`NAME_UNIT_bucket`, `_sum`, `_count`).
    Histogram {
        /// The kernel's slots.
        buckets: Buckets,
        /// Raw values to base units.
        scale: Scale,
    },
}

/// A metric: its name, help, unit, label names, kind, and cardinality cap.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// The name without unit or `_total` suffix.
    pub name: String,
    /// One line of help.
    pub help: String,
    /// The unit of `Sum` and `Histogram` values.
    pub unit: Option<BaseUnit>,
    /// Label names.
    pub label_names: Vec<String>,
    /// What it exposes.
    pub kind: SeriesKind,
    /// Label sets with a series of their own; later ones fold into the overflow series.
    pub max_series: usize,
}

/// Running totals of one series, in raw units.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Totals {
    /// Events per kernel slot.
    slots: Vec<u64>,
    /// Sum of the raw values.
    sum: u128,
    /// The reading at which it last grew.
    grew: Instant,
}

impl Totals {
    fn new(at: Instant) -> Self {
        Self {
            slots: Vec::new(),
            sum: 0,
            grew: at,
        }
    }
}

/// A metric's monotonic series, fed with whole readings of its kernel map.
#[derive(Clone, Debug)]
pub struct Series {
    spec: Spec,
    /// The last reading of each live kernel key.
    last: HashMap<(Labels, u32), (u64, u64)>,
    /// Totals per exposed series (admitted label sets and the overflow series).
    totals: BTreeMap<Labels, Totals>,
    /// Admitted label sets (at most `max_series`).
    admitted: usize,
    /// Label sets folded into the overflow series that still have live keys.
    folding: HashSet<Labels>,
    evicted: u64,
    folded: u64,
    /// Series that do not grow for this long are evicted (`None`: never).
    idle: Option<Duration>,
    series_evicted: u64,
}

impl Series {
    /// A metric with no readings yet.
    pub fn new(spec: Spec) -> Self {
        Self {
            spec,
            last: HashMap::new(),
            totals: BTreeMap::new(),
            admitted: 0,
            folding: HashSet::new(),
            evicted: 0,
            folded: 0,
            idle: None,
            series_evicted: 0,
        }
    }

    /// The same series, evicting those that do not grow for `idle` ([`Series::evict_idle`]);
    /// `None` keeps them for the run.
    pub fn with_idle_eviction(mut self, idle: Option<Duration>) -> Self {
        self.idle = idle;
        self
    }

    /// The metric's spec.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// Adds one whole reading of the kernel map: every live entry. Keys read before and
    /// missing now count as evicted.
    pub fn observe(&mut self, cells: impl IntoIterator<Item = Cell>) {
        self.observe_at(cells, Instant::now());
    }

    /// [`Series::observe`] of a reading taken at `now` (the time a series last grew, for
    /// [`Series::evict_idle`]).
    pub fn observe_at(&mut self, cells: impl IntoIterator<Item = Cell>, now: Instant) {
        let mut seen: HashSet<(Labels, u32)> = HashSet::new();
        let mut live_folding = HashSet::new();
        for cell in cells {
            let key = (cell.labels, cell.slot);
            let (count, sum) = match self.last.get(&key) {
                // Grown since the last reading.
                Some(&(count, sum)) if cell.count >= count => {
                    (cell.count - count, cell.sum.wrapping_sub(sum))
                }
                // New, or gone and created again since: all of it is new.
                _ => (cell.count, cell.sum),
            };
            self.last.insert(key.clone(), (cell.count, cell.sum));
            let (labels, slot) = key.clone();
            seen.insert(key);
            if count == 0 && sum == 0 && !self.totals.contains_key(&labels) {
                // Unchanged, of a series evicted while its kernel entry lives on (one that
                // cannot be deleted): it comes back when it counts again.
                if self.folding.contains(&labels) {
                    live_folding.insert(labels);
                }
                continue;
            }
            let target = self.route(labels, &mut live_folding);
            let totals = self
                .totals
                .entry(target)
                .or_insert_with(|| Totals::new(now));
            if count > 0 || sum != 0 {
                totals.grew = now;
            }
            let slot = slot as usize;
            if totals.slots.len() <= slot {
                totals.slots.resize(slot + 1, 0);
            }
            totals.slots[slot] += count;
            totals.sum += u128::from(sum);
        }
        let before = self.last.len();
        self.last.retain(|key, _| seen.contains(key));
        self.evicted += (before - self.last.len()) as u64;
        self.folding = live_folding;
    }

    /// Forgets the last reading of keys the exporter deleted from the kernel map right
    /// after reading them: they are not evictions, and they start from zero when they come
    /// back.
    pub fn deleted<'a>(&mut self, keys: impl IntoIterator<Item = (&'a Labels, u32)>) {
        for (labels, slot) in keys {
            self.last.remove(&(labels.clone(), slot));
        }
    }

    /// The series a label set's counts go to: its own, or the overflow series.
    fn route(&mut self, labels: Labels, live_folding: &mut HashSet<Labels>) -> Labels {
        if self.totals.contains_key(&labels) {
            return labels;
        }
        if self.admitted < self.spec.max_series.max(1) {
            self.admitted += 1;
            return labels;
        }
        if !self.folding.contains(&labels) && !live_folding.contains(&labels) {
            self.folded += 1;
        }
        live_folding.insert(labels);
        self.overflow_labels()
    }

    /// Evicts the series that did not grow for the idle time before `now` (none without
    /// [`Series::with_idle_eviction`]), freeing their places under `max_series` for new label
    /// sets. The last readings of kernel keys still live are kept, so what such a key
    /// counts later is new counts only. Returns how many were evicted.
    pub fn evict_idle(&mut self, now: Instant) -> usize {
        let Some(idle) = self.idle else {
            return 0;
        };
        let overflow = self.overflow_labels();
        let before = self.totals.len();
        let mut admitted_evicted = 0;
        self.totals.retain(|labels, totals| {
            let keep = now.saturating_duration_since(totals.grew) < idle;
            if !keep && *labels != overflow {
                admitted_evicted += 1;
            }
            keep
        });
        self.admitted -= admitted_evicted;
        let evicted = before - self.totals.len();
        self.series_evicted += evicted as u64;
        evicted
    }

    /// Series evicted for being idle ([`Series::evict_idle`]).
    pub fn series_evicted(&self) -> u64 {
        self.series_evicted
    }

    fn overflow_labels(&self) -> Labels {
        Labels(vec![OVERFLOW.to_string(); self.spec.label_names.len()])
    }

    /// Kernel entries that vanished between readings (their last increments are lost).
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    /// Label sets folded into the overflow series (each counted when it starts folding).
    pub fn folded(&self) -> u64 {
        self.folded
    }

    /// The number of series exposed (the overflow series included).
    pub fn series_count(&self) -> usize {
        self.totals.len()
    }

    /// The metric family as it stands, series sorted by label values.
    pub fn family(&self) -> MetricFamily {
        let values = match self.spec.kind {
            SeriesKind::Count => Values::Counter(
                self.totals
                    .iter()
                    .map(|(labels, t)| (labels.clone(), Value::Int(t.slots.iter().sum())))
                    .collect(),
            ),
            SeriesKind::Sum { scale } => Values::Counter(
                self.totals
                    .iter()
                    .map(|(labels, t)| (labels.clone(), Value::Float(scale.to_base(t.sum as f64))))
                    .collect(),
            ),
            SeriesKind::Histogram { buckets, scale } => Values::Histogram {
                upper_bounds: buckets.upper_bounds(scale),
                series: self
                    .totals
                    .iter()
                    .map(|(labels, t)| {
                        (
                            labels.clone(),
                            Histogram {
                                buckets: buckets.fold(&t.slots),
                                sum: scale.to_base(t.sum as f64),
                                native: buckets.native(&t.slots, scale),
                            },
                        )
                    })
                    .collect(),
            },
        };
        MetricFamily {
            name: self.spec.name.clone(),
            help: self.spec.help.clone(),
            unit: match self.spec.kind {
                SeriesKind::Count => None,
                _ => self.spec.unit,
            },
            label_names: self.spec.label_names.clone(),
            values,
        }
    }
}

impl Series {
    /// For log-linear histograms, p50, p90, p99, p99.9 and max (`quantile="1"`) of every
    /// series since the exporter started, as gauges `NAME_quantile_UNIT` with a `quantile`
    /// and a `bound` label: `low` and `high` are the bounds of the kernel bucket the
    /// quantile falls in (the resolution it truly has), in base units. `None` for other
    /// metrics.
    pub fn quantiles(&self) -> Option<MetricFamily> {
        let SeriesKind::Histogram {
            buckets: Buckets::LogLinear { precision, .. },
            scale,
        } = self.spec.kind
        else {
            return None;
        };
        let mut values = Vec::new();
        for (labels, totals) in &self.totals {
            // The sum does not matter for the bounds.
            let Some(summary) =
                crate::output::percentiles::summarize(&totals.slots, precision, 0, 1)
            else {
                continue;
            };
            let rows = summary
                .percentiles
                .iter()
                .map(|p| (format!("{}", p.quantile), p.bounds))
                .chain([("1".to_string(), summary.max)]);
            for (quantile, bounds) in rows {
                // Buckets of `raw / div`: bucket [low, high] holds raw values from
                // low * div to (high + 1) * div - 1.
                let div = scale.div.max(1) as f64;
                let raw_bounds = [
                    ("low", bounds.low as f64 * div),
                    ("high", (bounds.high as f64 + 1.0) * div - 1.0),
                ];
                for (bound, raw) in raw_bounds {
                    let mut names = labels.0.clone();
                    names.push(quantile.clone());
                    names.push(bound.into());
                    values.push((Labels(names), Value::Float(scale.to_base(raw))));
                }
            }
        }
        let mut label_names = self.spec.label_names.clone();
        label_names.extend(["quantile".to_string(), "bound".to_string()]);
        Some(MetricFamily {
            name: format!("{}_quantile", self.spec.name),
            help: format!(
                "Quantiles of {} since the exporter started (quantile=\"1\": the maximum), as \
                 the low and high bound of the kernel bucket each falls in.",
                self.spec.name
            ),
            unit: self.spec.unit,
            label_names,
            values: Values::Gauge(values),
        })
    }
}

/// The exporter's account of its metrics: kernel entries evicted and label sets folded
/// into overflow series, per metric (`metric` label), under `namespace`.
pub fn accounting<'a>(
    namespace: &str,
    series: impl IntoIterator<Item = &'a Series>,
) -> Vec<MetricFamily> {
    let mut evicted = Vec::new();
    let mut folded = Vec::new();
    let mut series_evicted = Vec::new();
    let mut series_count = Vec::new();
    for s in series {
        let metric = Labels(vec![s.spec.name.clone()]);
        evicted.push((metric.clone(), Value::Int(s.evicted)));
        folded.push((metric.clone(), Value::Int(s.folded)));
        series_evicted.push((metric.clone(), Value::Int(s.series_evicted)));
        series_count.push((metric, Value::Int(s.totals.len() as u64)));
    }
    vec![
        MetricFamily {
            name: format!("{namespace}_exporter_map_entries_evicted"),
            help: "Kernel map entries that vanished between two readings; increments they \
                   gained after the last reading are lost."
                .into(),
            unit: None,
            label_names: vec!["metric".into()],
            values: Values::Counter(evicted),
        },
        MetricFamily {
            name: format!("{namespace}_exporter_series_folded"),
            help: format!(
                "Label sets folded into a metric's overflow series (labels \"{OVERFLOW}\") \
                 because it reached its max_series."
            ),
            unit: None,
            label_names: vec!["metric".into()],
            values: Values::Counter(folded),
        },
        MetricFamily {
            name: format!("{namespace}_exporter_series_evicted"),
            help: "Series removed because they did not grow for idle_series_seconds; one that \
                   counts again restarts from zero (a counter reset to rate())."
                .into(),
            unit: None,
            label_names: vec!["metric".into()],
            values: Values::Counter(series_evicted),
        },
        MetricFamily {
            name: format!("{namespace}_exporter_series"),
            help: "Series a metric exposes now (its overflow series included).".into(),
            unit: None,
            label_names: vec!["metric".into()],
            values: Values::Gauge(series_count),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::prometheus::encode;

    fn cell(labels: &[&str], slot: u32, count: u64, sum: u64) -> Cell {
        Cell {
            labels: Labels(labels.iter().map(|s| s.to_string()).collect()),
            slot,
            count,
            sum,
        }
    }

    fn counter(max_series: usize) -> Series {
        Series::new(Spec {
            name: "tracekit_syscalls".into(),
            help: "System calls entered.".into(),
            unit: None,
            label_names: vec!["syscall".into()],
            kind: SeriesKind::Count,
            max_series,
        })
    }

    fn values(series: &Series) -> Vec<(String, u64)> {
        match series.family().values {
            Values::Counter(v) => v
                .into_iter()
                .map(|(labels, value)| {
                    let Value::Int(n) = value else { panic!() };
                    (labels.0.join(","), n)
                })
                .collect(),
            _ => panic!(),
        }
    }

    #[test]
    fn adds_deltas_across_readings() {
        let mut s = counter(10);
        s.observe([cell(&["read"], 0, 10, 0), cell(&["write"], 0, 3, 0)]);
        s.observe([cell(&["read"], 0, 15, 0), cell(&["write"], 0, 3, 0)]);
        assert_eq!(values(&s), [("read".into(), 15), ("write".into(), 3)]);
        assert_eq!(s.evicted(), 0);
    }

    /// An entry evicted and created again restarts from zero in the kernel; the exposed
    /// counter keeps growing, and the vanished reading counts as an eviction.
    #[test]
    fn monotonic_across_evictions() {
        let mut s = counter(10);
        s.observe([cell(&["read"], 0, 100, 0)]);
        // Evicted: absent from this reading.
        s.observe([]);
        assert_eq!(values(&s), [("read".into(), 100)]);
        assert_eq!(s.evicted(), 1);
        // Back with 7 new events.
        s.observe([cell(&["read"], 0, 7, 0)]);
        assert_eq!(values(&s), [("read".into(), 107)]);
        // Evicted and back between two readings, with fewer events than before: a reset.
        s.observe([cell(&["read"], 0, 2, 0)]);
        assert_eq!(values(&s), [("read".into(), 109)]);
    }

    #[test]
    fn deleted_keys_are_not_evictions() {
        let mut s = counter(10);
        s.observe([cell(&["read"], 0, 100, 0)]);
        let read = Labels::from(["read"]);
        s.deleted([(&read, 0)]);
        s.observe([]);
        s.observe([cell(&["read"], 0, 5, 0)]);
        assert_eq!(values(&s), [("read".into(), 105)]);
        assert_eq!(s.evicted(), 0);
    }

    #[test]
    fn cardinality_cap_folds_into_overflow() {
        let mut s = counter(2);
        s.observe([
            cell(&["a"], 0, 1, 0),
            cell(&["b"], 0, 2, 0),
            cell(&["c"], 0, 3, 0),
            cell(&["d"], 0, 4, 0),
        ]);
        assert_eq!(s.folded(), 2);
        // Folded label sets keep folding (not counted again while they live); their deltas
        // still add up.
        s.observe([
            cell(&["a"], 0, 1, 0),
            cell(&["b"], 0, 2, 0),
            cell(&["c"], 0, 13, 0),
            cell(&["d"], 0, 4, 0),
        ]);
        assert_eq!(s.folded(), 2);
        assert_eq!(
            values(&s),
            [
                ("__overflow__".into(), 17),
                ("a".into(), 1),
                ("b".into(), 2)
            ]
        );
        assert_eq!(s.series_count(), 3);
        let text = encode(&accounting("tracekit", [&s]));
        assert!(
            text.contains(
                "tracekit_exporter_series_folded_total{metric=\"tracekit_syscalls\"} 2\n"
            ),
            "{text}"
        );
    }

    /// Memory stays bounded under label churn (a new pid every reading, days of them):
    /// the exposed series by the cap, the last readings by the live kernel keys; every
    /// event is still counted, the late label sets in the overflow series.
    #[test]
    fn cap_bounds_memory_under_label_churn() {
        let mut s = counter(100);
        let mut events = 0;
        for reading in 0..20_000u64 {
            // Five live keys: this reading's new pid and the four before it.
            let live: Vec<Cell> = (reading.saturating_sub(4)..=reading)
                .map(|pid| cell(&[&pid.to_string()], 0, reading - pid + 1, 0))
                .collect();
            events += 1 + reading.min(4);
            s.observe(live);
            assert!(s.series_count() <= 101);
            assert!(s.last.len() <= 5 && s.folding.len() <= 5);
        }
        assert_eq!(s.series_count(), 101);
        assert_eq!(s.folded(), 20_000 - 100);
        // Keys vanish after five readings: evictions, with nothing lost (each was read at
        // its last count).
        assert_eq!(s.evicted(), 20_000 - 5);
        let total: u64 = values(&s).iter().map(|(_, n)| n).sum();
        assert_eq!(total, events);
    }

    /// A series that did not grow for the idle time goes; its place under `max_series` goes
    /// to a new label set; one that comes back restarts from what it counted since.
    #[test]
    fn idle_series_evicted_and_restarted() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut s = counter(2).with_idle_eviction(Some(Duration::from_secs(10)));
        s.observe_at([cell(&["a"], 0, 5, 0), cell(&["b"], 0, 1, 0)], at(0));
        // "b" keeps counting, "a" stays at 5 (its kernel entry still there, unchanged).
        s.observe_at([cell(&["a"], 0, 5, 0), cell(&["b"], 0, 2, 0)], at(6));
        assert_eq!(s.evict_idle(at(9)), 0);
        assert_eq!(s.evict_idle(at(10)), 1);
        assert_eq!(values(&s), [("b".into(), 2)]);
        assert_eq!(s.series_evicted(), 1);
        // "a" unchanged in the kernel: no series for it; "c" takes the freed place.
        s.observe_at(
            [
                cell(&["a"], 0, 5, 0),
                cell(&["b"], 0, 3, 0),
                cell(&["c"], 0, 4, 0),
            ],
            at(11),
        );
        assert_eq!(values(&s), [("b".into(), 3), ("c".into(), 4)]);
        assert_eq!(s.folded(), 0);
        // "a" counts again: its series restarts with the 2 new events only, folded since
        // "b" and "c" hold the two places.
        s.observe_at(
            [
                cell(&["a"], 0, 7, 0),
                cell(&["b"], 0, 3, 0),
                cell(&["c"], 0, 4, 0),
            ],
            at(12),
        );
        assert_eq!(
            values(&s),
            [("__overflow__".into(), 2), ("b".into(), 3), ("c".into(), 4)]
        );
        // Without idle eviction nothing goes.
        let mut kept = counter(2);
        kept.observe_at([cell(&["a"], 0, 5, 0)], at(0));
        assert_eq!(kept.evict_idle(at(100_000)), 0);
        assert_eq!(kept.series_count(), 1);
    }

    /// 10,000 label sets, each counting once (a comm that ran once) and deleted from the
    /// kernel map at the next reading, as the exporter does with idle entries: the series
    /// held stay those of the last idle time (here 3 readings a second apart), none fold,
    /// and every event is counted.
    #[test]
    fn idle_eviction_bounds_series_under_label_churn() {
        let t0 = Instant::now();
        let mut s = counter(1000).with_idle_eviction(Some(Duration::from_secs(3)));
        let mut most = 0;
        for reading in 0..10_000u64 {
            let now = t0 + Duration::from_secs(reading);
            let labels = format!("tk_comm_{reading}");
            s.observe_at([cell(&[&labels], 0, 1, 0)], now);
            s.deleted([(&Labels(vec![labels]), 0)]);
            s.evict_idle(now);
            most = most.max(s.series_count());
        }
        assert_eq!(most, 3);
        assert_eq!(s.series_count(), 3);
        assert_eq!(s.series_evicted(), 10_000 - 3);
        assert_eq!(s.folded(), 0);
        let text = encode(&accounting("tracekit", [&s]));
        assert!(
            text.contains(
                "tracekit_exporter_series_evicted_total{metric=\"tracekit_syscalls\"} 9997\n"
            ) && text.contains("tracekit_exporter_series{metric=\"tracekit_syscalls\"} 3\n"),
            "{text}"
        );
    }

    /// Histogram slots accumulate per label set, sums in base units.
    #[test]
    fn histogram_series() {
        let mut s = Series::new(Spec {
            name: "tracekit_block_io_size".into(),
            help: "Block I/O request sizes.".into(),
            unit: Some(BaseUnit::Bytes),
            label_names: vec!["disk".into()],
            kind: SeriesKind::Histogram {
                buckets: Buckets::Log2 {
                    first: 15,
                    last: 16,
                },
                scale: Scale::IDENTITY,
            },
            max_series: 10,
        });
        s.observe([cell(&["vda"], 16, 10, 10 * 65536)]);
        s.observe([
            cell(&["vda"], 16, 512, 512 * 65536),
            cell(&["vda"], 12, 4, 4 * 4096),
        ]);
        assert_eq!(
            encode(&[s.family()]),
            "# HELP tracekit_block_io_size_bytes Block I/O request sizes.\n\
             # TYPE tracekit_block_io_size_bytes histogram\n\
             # UNIT tracekit_block_io_size_bytes bytes\n\
             tracekit_block_io_size_bytes_sum{disk=\"vda\"} 33570816.0\n\
             tracekit_block_io_size_bytes_count{disk=\"vda\"} 516\n\
             tracekit_block_io_size_bytes_bucket{le=\"65535.0\",disk=\"vda\"} 4\n\
             tracekit_block_io_size_bytes_bucket{le=\"131071.0\",disk=\"vda\"} 516\n\
             tracekit_block_io_size_bytes_bucket{le=\"+Inf\",disk=\"vda\"} 516\n\
             # EOF\n"
        );
    }

    /// Log-linear histograms also expose their quantiles: each as its bucket's bounds,
    /// in base units; the maximum as quantile 1. Other histograms have none.
    #[test]
    fn log_linear_quantiles_as_bucket_bounds() {
        use tracekit_common::engine::log_linear_slot;
        let spec = |buckets| Spec {
            name: "tracekit_waits".into(),
            help: "Waits.".into(),
            unit: Some(BaseUnit::Seconds),
            label_names: vec![],
            kind: SeriesKind::Histogram {
                buckets,
                scale: Scale {
                    div: 1,
                    per_base: 1e9,
                },
            },
            max_series: 1,
        };
        let mut s = Series::new(spec(Buckets::LogLinear {
            first: 19,
            last: 27,
            precision: 4,
        }));
        s.observe([
            cell(&[], log_linear_slot(1_000_000, 4), 900, 900_000_000),
            cell(&[], log_linear_slot(10_000_000, 4), 90, 900_000_000),
            cell(&[], log_linear_slot(100_000_000, 4), 10, 1_000_000_000),
        ]);
        let text = encode(&[s.quantiles().expect("log-linear")]);
        for line in [
            "tracekit_waits_quantile_seconds{quantile=\"0.5\",bound=\"low\"} 0.00098304\n",
            "tracekit_waits_quantile_seconds{quantile=\"0.5\",bound=\"high\"} 0.001015807\n",
            "tracekit_waits_quantile_seconds{quantile=\"0.99\",bound=\"low\"} 0.009961472\n",
            "tracekit_waits_quantile_seconds{quantile=\"0.999\",bound=\"high\"} 0.100663295\n",
            "tracekit_waits_quantile_seconds{quantile=\"1\",bound=\"low\"} 0.096468992\n",
        ] {
            assert!(text.contains(line), "no {line:?} in\n{text}");
        }
        assert_eq!(text.matches("tracekit_waits_quantile_seconds{").count(), 10);
        let log2 = Series::new(spec(Buckets::Log2 { first: 0, last: 3 }));
        assert_eq!(log2.quantiles(), None);
    }

    #[test]
    fn sums_as_counters_in_base_units() {
        let mut s = Series::new(Spec {
            name: "tracekit_syscall_time".into(),
            help: "Time in system calls.".into(),
            unit: Some(BaseUnit::Seconds),
            label_names: vec![],
            kind: SeriesKind::Sum {
                scale: Scale {
                    div: 1,
                    per_base: 1e9,
                },
            },
            max_series: 1,
        });
        s.observe([cell(&[], 0, 3, 1_500_000_000)]);
        s.observe([cell(&[], 0, 4, 2_000_000_000)]);
        assert_eq!(
            encode(&[s.family()]),
            "# HELP tracekit_syscall_time_seconds Time in system calls.\n\
             # TYPE tracekit_syscall_time_seconds counter\n\
             # UNIT tracekit_syscall_time_seconds seconds\n\
             tracekit_syscall_time_seconds_total 2.0\n\
             # EOF\n"
        );
    }
}
