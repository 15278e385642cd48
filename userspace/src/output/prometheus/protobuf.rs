//! Metric families in Prometheus's protobuf exposition format, where native histograms live.

use super::{Histogram, Labels, MetricFamily, Value, Values};

/// The content type of [`encode_protobuf`]'s output: Prometheus's protobuf exposition,
/// length-delimited `io.prometheus.client.MetricFamily` messages.
pub const PROTOBUF_CONTENT_TYPE: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";

/// Encodes `families` in Prometheus's protobuf exposition format
/// ([`PROTOBUF_CONTENT_TYPE`]): each family a `MetricFamily` message preceded by its
/// length as a varint. Names carry their unit and, for counters, `_total` (the format has
/// no suffixes of its own). Histograms carry their classic buckets and, where they have
/// one, their native histogram ([`Histogram::native`]); a scraper with native histograms
/// on takes the native one. Families with no series are left out.
pub fn encode_protobuf(families: &[MetricFamily]) -> Vec<u8> {
    use prost::Message as _;
    let mut out = Vec::new();
    for family in families {
        let mut name = family.name.clone();
        if let Some(unit) = family.unit {
            name.push('_');
            name.push_str(unit.as_str());
        }
        let pairs = |labels: &Labels| -> Vec<proto::LabelPair> {
            family
                .label_names
                .iter()
                .zip(&labels.0)
                .map(|(name, value)| proto::LabelPair {
                    name: name.clone(),
                    value: value.clone(),
                })
                .collect()
        };
        let float = |value: &Value| match *value {
            Value::Int(v) => v as f64,
            Value::Float(v) => v,
        };
        let (kind, metric): (proto::MetricType, Vec<proto::Metric>) = match &family.values {
            Values::Counter(series) => {
                name.push_str("_total");
                (
                    proto::MetricType::Counter,
                    series
                        .iter()
                        .map(|(labels, value)| proto::Metric {
                            label: pairs(labels),
                            counter: Some(proto::Counter {
                                value: float(value),
                            }),
                            ..Default::default()
                        })
                        .collect(),
                )
            }
            Values::Gauge(series) => (
                proto::MetricType::Gauge,
                series
                    .iter()
                    .map(|(labels, value)| proto::Metric {
                        label: pairs(labels),
                        gauge: Some(proto::Gauge {
                            value: float(value),
                        }),
                        ..Default::default()
                    })
                    .collect(),
            ),
            Values::Histogram {
                upper_bounds,
                series,
            } => (
                proto::MetricType::Histogram,
                series
                    .iter()
                    .map(|(labels, histogram)| proto::Metric {
                        label: pairs(labels),
                        histogram: Some(proto::Histogram::new(upper_bounds, histogram)),
                        ..Default::default()
                    })
                    .collect(),
            ),
        };
        if metric.is_empty() {
            // Go's client leaves out families with no series; parsers need not take them.
            continue;
        }
        let message = proto::MetricFamily {
            name,
            help: family.help.clone(),
            r#type: kind as i32,
            metric,
        };
        // Writing to a Vec cannot fail.
        message
            .encode_length_delimited(&mut out)
            .expect("encoding to a Vec");
    }
    out
}

/// Prometheus's `io.prometheus.client` exposition messages (`metrics.proto` of
/// github.com/prometheus/client_model) as prost messages, derived by hand as
/// [`crate::output::pprof`] does: the fields tracekit writes, with the published field
/// numbers (decoders skip what they do not know).
pub mod proto {
    /// The type of a family.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
    #[repr(i32)]
    pub enum MetricType {
        /// `COUNTER`.
        Counter = 0,
        /// `GAUGE`.
        Gauge = 1,
        /// `SUMMARY`.
        Summary = 2,
        /// `UNTYPED`.
        Untyped = 3,
        /// `HISTOGRAM`.
        Histogram = 4,
    }

    /// A family: its name, help, type and series.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct MetricFamily {
        /// The full name (unit and `_total` included).
        #[prost(string, tag = "1")]
        pub name: String,
        /// One line of help.
        #[prost(string, tag = "2")]
        pub help: String,
        /// [`MetricType`].
        #[prost(enumeration = "MetricType", tag = "3")]
        pub r#type: i32,
        /// The series.
        #[prost(message, repeated, tag = "4")]
        pub metric: Vec<Metric>,
    }

    /// A label and its value.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct LabelPair {
        /// The label's name.
        #[prost(string, tag = "1")]
        pub name: String,
        /// Its value.
        #[prost(string, tag = "2")]
        pub value: String,
    }

    /// A gauge's value.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Gauge {
        /// The value.
        #[prost(double, tag = "1")]
        pub value: f64,
    }

    /// A counter's value.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Counter {
        /// The value.
        #[prost(double, tag = "1")]
        pub value: f64,
    }

    /// One series: labels and the value of the family's type.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Metric {
        /// Its labels.
        #[prost(message, repeated, tag = "1")]
        pub label: Vec<LabelPair>,
        /// A gauge's value.
        #[prost(message, optional, tag = "2")]
        pub gauge: Option<Gauge>,
        /// A counter's value.
        #[prost(message, optional, tag = "3")]
        pub counter: Option<Counter>,
        /// A histogram.
        #[prost(message, optional, tag = "7")]
        pub histogram: Option<Histogram>,
    }

    /// A histogram: classic buckets and, with a schema and spans, the native one.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Histogram {
        /// Observations.
        #[prost(uint64, tag = "1")]
        pub sample_count: u64,
        /// Their sum, in base units.
        #[prost(double, tag = "2")]
        pub sample_sum: f64,
        /// Classic buckets, cumulative, by increasing upper bound (`+Inf` left out: it is
        /// the count).
        #[prost(message, repeated, tag = "3")]
        pub bucket: Vec<Bucket>,
        /// The native schema.
        #[prost(sint32, tag = "5")]
        pub schema: i32,
        /// The zero bucket's half width.
        #[prost(double, tag = "6")]
        pub zero_threshold: f64,
        /// Observations in the zero bucket.
        #[prost(uint64, tag = "7")]
        pub zero_count: u64,
        /// Runs of consecutive positive buckets (a no-op span `0, 0` when there is none, so
        /// that the histogram still reads as native).
        #[prost(message, repeated, tag = "12")]
        pub positive_span: Vec<BucketSpan>,
        /// Each positive bucket's count minus the previous one's (the first's minus 0).
        #[prost(sint64, repeated, tag = "13")]
        pub positive_delta: Vec<i64>,
    }

    /// A classic bucket.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Bucket {
        /// Observations at or below `upper_bound`.
        #[prost(uint64, tag = "1")]
        pub cumulative_count: u64,
        /// Inclusive.
        #[prost(double, tag = "2")]
        pub upper_bound: f64,
    }

    /// `length` consecutive native buckets, `offset` after the previous span's end (the
    /// first span: from bucket index 0).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct BucketSpan {
        /// Gap to the previous span, or the first span's first index.
        #[prost(sint32, tag = "1")]
        pub offset: i32,
        /// Buckets in the span.
        #[prost(uint32, tag = "2")]
        pub length: u32,
    }

    impl Histogram {
        /// The message of `histogram` with classic buckets at `upper_bounds`.
        pub fn new(upper_bounds: &[f64], histogram: &super::Histogram) -> Self {
            let mut cumulative = 0;
            let bucket = upper_bounds
                .iter()
                .zip(&histogram.buckets)
                .map(|(&upper_bound, &count)| {
                    cumulative += count;
                    Bucket {
                        cumulative_count: cumulative,
                        upper_bound,
                    }
                })
                .collect();
            let mut message = Histogram {
                sample_count: histogram.buckets.iter().sum(),
                sample_sum: histogram.sum,
                bucket,
                ..Default::default()
            };
            if let Some(native) = &histogram.native {
                message.schema = native.schema;
                message.zero_threshold = native.zero_threshold;
                message.zero_count = native.zero_count;
                let mut previous: Option<i32> = None;
                let mut last_count = 0i64;
                for (&index, &count) in &native.buckets {
                    match previous {
                        Some(p) if index == p + 1 => {
                            message.positive_span.last_mut().expect("a span").length += 1;
                        }
                        _ => message.positive_span.push(BucketSpan {
                            offset: previous.map_or(index, |p| index - p - 1),
                            length: 1,
                        }),
                    }
                    message.positive_delta.push(count as i64 - last_count);
                    last_count = count as i64;
                    previous = Some(index);
                }
                if message.positive_span.is_empty() {
                    message.positive_span.push(BucketSpan::default());
                }
            }
            message
        }

        /// The native buckets' counts by index (spans and deltas undone).
        pub fn native_buckets(&self) -> std::collections::BTreeMap<i32, u64> {
            let mut buckets = std::collections::BTreeMap::new();
            let mut deltas = self.positive_delta.iter();
            let (mut index, mut count) = (0i32, 0i64);
            for (n, span) in self.positive_span.iter().enumerate() {
                index += if n == 0 { span.offset } else { span.offset + 1 };
                for k in 0..span.length {
                    if k > 0 {
                        index += 1;
                    }
                    count += deltas.next().copied().unwrap_or(0);
                    buckets.insert(index, count as u64);
                }
            }
            buckets
        }
    }
}
