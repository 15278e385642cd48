//! Metric families in the Prometheus text exposition format (OpenMetrics 1.0 text, what
//! Prometheus asks for first), encoded by the `prometheus-client` crate.
//!
//! The input is neutral: families of counters, gauges and histograms with their label
//! values, in base units. Kernel histograms become Prometheus histograms through
//! [`Buckets::upper_bounds`], which gives each kernel slot the honest `le` of the values it
//! holds: its inclusive upper bound, converted to base units (a log2 slot `k` holds
//! `[2^k, 2^(k+1) - 1]`, so its `le` is `2^(k+1) - 1`, not `2^k`: the off-by-one of
//! cloudflare/ebpf_exporter#488). `prometheus-client` makes the buckets cumulative and writes
//! `_bucket`, `_sum` and `_count`; counters get `_total`, and units their suffix
//! (`_seconds`, `_bytes`).
//!
//! ```
//! use tracekit::output::prometheus::{encode, Labels, MetricFamily, Value, Values};
//! let family = MetricFamily {
//!     name: "tracekit_syscalls".into(),
//!     help: "System calls entered.".into(),
//!     unit: None,
//!     label_names: vec!["syscall".into()],
//!     values: Values::Counter(vec![(Labels::from(["getppid"]), Value::Int(1000))]),
//! };
//! assert_eq!(
//!     encode(&[family]),
//!     "# HELP tracekit_syscalls System calls entered.\n\
//!      \x23 TYPE tracekit_syscalls counter\n\
//!      tracekit_syscalls_total{syscall=\"getppid\"} 1000\n\
//!      \x23 EOF\n"
//! );
//! ```

use std::{fmt, sync::Arc};

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet},
    metrics::MetricType,
    registry::{Registry, Unit},
};

mod protobuf;

pub use protobuf::{PROTOBUF_CONTENT_TYPE, encode_protobuf, proto};

/// The content type of [`encode`]'s output, for the HTTP response.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A base unit of Prometheus metric values; the metric's name ends in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BaseUnit {
    /// `_seconds`.
    Seconds,
    /// `_bytes`.
    Bytes,
}

impl BaseUnit {
    /// The name suffix without its underscore (`seconds`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Seconds => "seconds",
            Self::Bytes => "bytes",
        }
    }

    fn unit(self) -> Unit {
        match self {
            Self::Seconds => Unit::Seconds,
            Self::Bytes => Unit::Bytes,
        }
    }
}

/// How the values a kernel program reads become base units.
///
/// The program reads a raw value (nanoseconds, bytes), adds it raw to the aggregate's sum,
/// and buckets `raw / div` (the engine's `value_div`: microsecond buckets of a nanosecond
/// value have `div` 1000). A raw value is `raw / per_base` base units (`1e9` for
/// nanoseconds to seconds, `1` for bytes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale {
    /// The kernel's divisor before bucketing (1: buckets of raw values).
    pub div: u64,
    /// Raw units per base unit.
    pub per_base: f64,
}

impl Scale {
    /// Raw values are base units, bucketed as they are.
    pub const IDENTITY: Scale = Scale {
        div: 1,
        per_base: 1.0,
    };

    /// Raw `value` in base units.
    pub fn to_base(self, raw: f64) -> f64 {
        raw / self.per_base
    }
}

/// The slots of a kernel histogram (see `slot_of` in `ebpf/src/bin/engine.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buckets {
    /// Log2: slot `k` holds bucketed values `[2^k, 2^(k+1) - 1]`; slot 0 also holds 0 (and
    /// negative values of signed fields). Slots `first..=last` get buckets of their own;
    /// lower slots are counted under `first`'s `le` (buckets are cumulative), higher ones
    /// only under `+Inf`.
    Log2 {
        /// First slot with a bucket.
        first: u32,
        /// Last slot with a bucket (at most 63).
        last: u32,
    },
    /// Log-linear (`--percentiles`' histogram, `tracekit_common::engine::log_linear_slot`):
    /// each power of two `2^k` for `k` in `first..=last` split into `2^precision` buckets
    /// of their own; lower slots are counted under the first's `le`, higher ones only under
    /// `+Inf`.
    LogLinear {
        /// First power of two with buckets (0: from 0).
        first: u32,
        /// Last power of two with buckets (at most 63).
        last: u32,
        /// Sub-bucket bits.
        precision: u32,
    },
    /// Linear: slot 0 holds values below `min`, slot `i` in `1..slots - 1` holds
    /// `[min + (i-1)·step, min + i·step - 1]`, the last slot everything from
    /// `min + (slots-2)·step` up (its bucket is `+Inf`).
    Linear {
        /// Low end of slot 1.
        min: i64,
        /// Width of each slot.
        step: u64,
        /// Number of slots, the two open-ended ones included (at least 3).
        slots: u32,
    },
}

impl Buckets {
    /// The first and last kernel slot of a log-linear spec's powers of two.
    fn log_linear_range(first: u32, last: u32, precision: u32) -> (usize, usize) {
        use tracekit_common::engine::log_linear_slot;
        let low = if first == 0 { 0 } else { 1u64 << first.min(63) };
        let high = if last >= 63 {
            u64::MAX
        } else {
            (1u64 << (last + 1)) - 1
        };
        (
            log_linear_slot(low, precision) as usize,
            log_linear_slot(high, precision) as usize,
        )
    }

    /// The number of kernel slots these buckets read (log2: `last + 1`).
    pub fn kernel_slots(&self) -> usize {
        match *self {
            Buckets::Log2 { last, .. } => last as usize + 1,
            Buckets::LogLinear {
                first,
                last,
                precision,
            } => Self::log_linear_range(first, last, precision).1 + 1,
            Buckets::Linear { slots, .. } => slots as usize,
        }
    }

    /// The `le` of each bucket, in base units: the inclusive upper bound of the raw values
    /// its slot holds (`+Inf` is not included; [`Buckets::fold`] adds its count).
    ///
    /// ```
    /// use tracekit::output::prometheus::{Buckets, Scale};
    /// // Bytes: slot 16 holds 65536..=131071.
    /// let bytes = Buckets::Log2 { first: 15, last: 17 };
    /// assert_eq!(bytes.upper_bounds(Scale::IDENTITY), [65535.0, 131071.0, 262143.0]);
    /// // Nanoseconds bucketed in microseconds: slot 0 holds 0..=1999 ns.
    /// let latency = Buckets::Log2 { first: 0, last: 1 };
    /// let scale = Scale { div: 1000, per_base: 1e9 };
    /// assert_eq!(latency.upper_bounds(scale), [1.999e-6, 3.999e-6]);
    /// ```
    pub fn upper_bounds(&self, scale: Scale) -> Vec<f64> {
        let div = i128::from(scale.div.max(1));
        let bound = |exclusive_scaled_end: i128| {
            // The largest raw value whose bucketed value is below the end.
            scale.to_base((exclusive_scaled_end * div - 1) as f64)
        };
        match *self {
            Buckets::Log2 { first, last } => (first..=last.min(63))
                .map(|k| bound(1i128 << (k + 1)))
                .collect(),
            Buckets::LogLinear {
                first,
                last,
                precision,
            } => {
                let (low, high) = Self::log_linear_range(first, last, precision);
                (low..=high)
                    .map(|slot| {
                        let (_, top) =
                            tracekit_common::engine::log_linear_slot_bounds(slot as u32, precision);
                        bound(i128::from(top) + 1)
                    })
                    .collect()
            }
            Buckets::Linear { min, step, slots } => (0..slots.saturating_sub(1))
                .map(|i| bound(i128::from(min) + i128::from(i) * i128::from(step)))
                .collect(),
        }
    }

    /// A log-linear histogram's kernel slot counts as a native histogram (`None` for other
    /// buckets), all slots, not only `first..=last`.
    ///
    /// The log-linear buckets are linear within each power of two, native buckets
    /// geometric, and a nanosecond's powers of two are not a second's: their boundaries do
    /// not coincide, so no schema holds them exactly. Each slot's count goes to the native
    /// bucket (schema = `precision`, about as fine) that holds the slot's lowest value; a
    /// slot holding one value only (below `2^precision`) lands exactly. So a value counted
    /// in native bucket `(L, U]` is above `L` and below `U · (1 + 2^-precision)`: at most
    /// one log-linear bucket (6.25% at precision 4) above its native bucket. Slot 0 (values
    /// bucketed to 0) is the zero bucket, its threshold the largest raw value it holds.
    pub fn native(&self, slots: &[u64], scale: Scale) -> Option<Native> {
        let Buckets::LogLinear { precision, .. } = *self else {
            return None;
        };
        let div = scale.div.max(1);
        let mut native = Native {
            schema: precision.min(8) as i32,
            zero_threshold: if div > 1 {
                scale.to_base((div - 1) as f64)
            } else {
                // The Go client's default: only zero itself.
                2f64.powi(-128)
            },
            ..Native::default()
        };
        for (slot, &count) in slots.iter().enumerate().filter(|(_, c)| **c > 0) {
            let (low, _) = tracekit_common::engine::log_linear_slot_bounds(slot as u32, precision);
            if low == 0 {
                native.zero_count += count;
                continue;
            }
            let value = scale.to_base(low as f64 * div as f64);
            *native
                .buckets
                .entry(native_index(value, native.schema))
                .or_default() += count;
        }
        Some(native)
    }

    /// Kernel slot counts to per-bucket counts for [`Buckets::upper_bounds`], plus the
    /// count above the last bound (the `+Inf` bucket's own part) at the end.
    pub fn fold(&self, slots: &[u64]) -> Vec<u64> {
        let at = |i: usize| slots.get(i).copied().unwrap_or(0);
        match *self {
            Buckets::Log2 { .. } | Buckets::LogLinear { .. } => {
                let (first, last) = match *self {
                    Buckets::LogLinear {
                        first,
                        last,
                        precision,
                    } => Self::log_linear_range(first, last, precision),
                    Buckets::Log2 { first, last } => (first as usize, (last as usize).min(63)),
                    Buckets::Linear { .. } => unreachable!("matched above"),
                };
                let mut buckets = Vec::with_capacity(last - first + 2);
                buckets.push((0..=first).map(at).sum());
                buckets.extend((first + 1..=last).map(at));
                buckets.push((last + 1..slots.len().max(last + 1)).map(at).sum());
                buckets
            }
            Buckets::Linear { slots: n, .. } => {
                let n = n as usize;
                let mut buckets: Vec<u64> = (0..n.saturating_sub(1)).map(at).collect();
                buckets.push((n.saturating_sub(1)..slots.len().max(n)).map(at).sum());
                buckets
            }
        }
    }
}

/// Label values of one series, in the order of the family's label names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Labels(pub Vec<String>);

impl<const N: usize> From<[&str; N]> for Labels {
    fn from(values: [&str; N]) -> Self {
        Self(values.iter().map(|v| v.to_string()).collect())
    }
}

/// A counter's or gauge's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// An integer (event counts).
    Int(u64),
    /// A float (base units).
    Float(f64),
}

/// One histogram series.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    /// Observations per bucket (not cumulative), one per bound and one more for the values
    /// above the last bound.
    pub buckets: Vec<u64>,
    /// Sum of the observations, in base units.
    pub sum: f64,
    /// The same observations as a native histogram ([`Buckets::native`]), served only in
    /// the protobuf format ([`encode_protobuf`]); the text format has classic buckets only.
    pub native: Option<Native>,
}

/// A Prometheus native histogram (exponential buckets): bucket `i` of schema `s` holds
/// the values in `(2^((i-1)/2^s), 2^(i/2^s)]`, in base units; the zero bucket the values
/// in `[-zero_threshold, zero_threshold]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Native {
    /// The schema, -4 to 8: each power of two split into `2^schema` buckets.
    pub schema: i32,
    /// The zero bucket's half width, in base units.
    pub zero_threshold: f64,
    /// Observations in the zero bucket.
    pub zero_count: u64,
    /// Observations per bucket index (only buckets that hold some).
    pub buckets: std::collections::BTreeMap<i32, u64>,
}

/// The index of the native histogram bucket of `schema` (-4 to 8) that holds the positive
/// `value`: `i` with `2^((i-1)/2^schema) < value <= 2^(i/2^schema)`, the boundaries upper
/// inclusive as in Prometheus's Go client (powers of two are exact).
///
/// ```
/// use tracekit::output::prometheus::native_index;
/// assert_eq!(native_index(1.0, 0), 0);
/// assert_eq!(native_index(1.5, 0), 1);
/// assert_eq!(native_index(2.0, 0), 1);
/// assert_eq!(native_index(0.001, 4), -159);
/// ```
pub fn native_index(value: f64, schema: i32) -> i32 {
    let (frac, exp) = frexp(value);
    if schema > 0 {
        let per_octave = 1i32 << schema;
        // The first boundary at or above frac, among 2^(j/2^schema - 1) for j in
        // 0..2^schema (frac is in [0.5, 1)).
        let j = (0..per_octave)
            .find(|&j| 2f64.powf(f64::from(j) / f64::from(per_octave) - 1.0) >= frac)
            .unwrap_or(per_octave);
        j + (exp - 1) * per_octave
    } else {
        let mut key = exp;
        if frac == 0.5 {
            key -= 1;
        }
        let shift = -schema;
        let offset = (1 << shift) - 1;
        (key + offset) >> shift
    }
}

/// `value = frac * 2^exp` with `frac` in `[0.5, 1)`, for positive finite `value`.
fn frexp(value: f64) -> (f64, i32) {
    if value == 0.0 || !value.is_finite() {
        return (value, 0);
    }
    let bits = value.to_bits();
    let exp_bits = ((bits >> 52) & 0x7ff) as i32;
    if exp_bits == 0 {
        // Subnormal: scale into the normal range first.
        let (frac, exp) = frexp(value * 2f64.powi(64));
        return (frac, exp - 64);
    }
    let frac = f64::from_bits((bits & !(0x7ffu64 << 52)) | (1022u64 << 52));
    (frac, exp_bits - 1022)
}

/// The series of a family.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    /// Monotonic counts (`NAME_total`).
    Counter(Vec<(Labels, Value)>),
    /// Values that go up and down.
    Gauge(Vec<(Labels, Value)>),
    /// Histograms sharing bucket bounds.
    Histogram {
        /// Each bucket's `le` in base units, increasing; `+Inf` is added.
        upper_bounds: Vec<f64>,
        /// The series.
        series: Vec<(Labels, Histogram)>,
    },
}

/// A metric family: a name, its help, unit and label names, and its series.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricFamily {
    /// The name without unit or `_total` suffix (`tracekit_block_io_latency`).
    pub name: String,
    /// One line of help.
    pub help: String,
    /// The base unit, appended to the name (`_seconds`).
    pub unit: Option<BaseUnit>,
    /// Label names, in the order of every series' values.
    pub label_names: Vec<String>,
    /// The series.
    pub values: Values,
}

/// Encodes `families` in the OpenMetrics text format ([`CONTENT_TYPE`]), ending in `# EOF`.
pub fn encode(families: &[MetricFamily]) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Families(Arc::new(families.to_vec()))));
    let mut out = String::new();
    // Writing to a String fails only if a collector fails, and ours does not.
    prometheus_client::encoding::text::encode(&mut out, &registry).expect("writing to a String");
    out
}

/// Families as a `prometheus-client` collector, encoded at each scrape.
struct Families(Arc<Vec<MetricFamily>>);

impl fmt::Debug for Families {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Families({})", self.0.len())
    }
}

impl Collector for Families {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        for family in self.0.iter() {
            let unit = family.unit.map(BaseUnit::unit);
            let metric_type = match family.values {
                Values::Counter(_) => MetricType::Counter,
                Values::Gauge(_) => MetricType::Gauge,
                Values::Histogram { .. } => MetricType::Histogram,
            };
            let help = family.help.replace('\\', "\\\\").replace('\n', "\\n");
            let mut metric =
                encoder.encode_descriptor(&family.name, &help, unit.as_ref(), metric_type)?;
            match &family.values {
                Values::Counter(series) => {
                    for (labels, value) in series {
                        with_labels(&mut metric, &family.label_names, labels, |e| match *value {
                            Value::Int(v) => e.encode_counter::<NoLabelSet, _, u64>(&v, None),
                            Value::Float(v) => e.encode_counter::<NoLabelSet, _, f64>(&v, None),
                        })?;
                    }
                }
                Values::Gauge(series) => {
                    for (labels, value) in series {
                        with_labels(&mut metric, &family.label_names, labels, |e| match *value {
                            Value::Int(v) => e.encode_gauge(&v),
                            Value::Float(v) => e.encode_gauge(&v),
                        })?;
                    }
                }
                Values::Histogram {
                    upper_bounds,
                    series,
                } => {
                    for (labels, histogram) in series {
                        with_labels(&mut metric, &family.label_names, labels, |e| {
                            encode_histogram(e, upper_bounds, histogram)
                        })?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Encodes one series with `encode`, under its labels (none: no `{}` at all).
fn with_labels(
    metric: &mut MetricEncoder<'_>,
    names: &[String],
    labels: &Labels,
    encode: impl FnOnce(&mut MetricEncoder<'_>) -> fmt::Result,
) -> fmt::Result {
    if names.is_empty() {
        return encode(metric);
    }
    let pairs: Vec<(String, String)> = names
        .iter()
        .cloned()
        .zip(labels.0.iter().cloned())
        .collect();
    encode(&mut metric.encode_family(&pairs)?)
}

fn encode_histogram(
    encoder: &mut MetricEncoder<'_>,
    upper_bounds: &[f64],
    histogram: &Histogram,
) -> fmt::Result {
    let buckets: Vec<(f64, u64)> = upper_bounds
        .iter()
        .copied()
        .chain([f64::INFINITY])
        .zip(
            histogram
                .buckets
                .iter()
                .copied()
                .chain(std::iter::repeat(0)),
        )
        .collect();
    let count = histogram.buckets.iter().sum();
    encoder.encode_histogram::<NoLabelSet>(histogram.sum, count, &buckets, None)
}

#[cfg(test)]
mod tests;
