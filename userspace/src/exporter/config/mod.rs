//! The exporter's config file (TOML, or YAML with the same keys): where to listen, which
//! metrics to serve, the CPU profile endpoint.
//!
//! ```toml
//! listen = "127.0.0.1:9435"     # default; ebpf_exporter's port
//! namespace = "tracekit"        # prefix of every metric name (default)
//! max_series = 1000             # label sets per metric before folding (default)
//! idle_series_seconds = 600     # default: a series that stops growing goes (0: never)
//!
//! [profile]                     # GET /debug/pprof/profile?seconds=N
//! enabled = true                # default
//! frequency_hz = 99             # default
//! max_seconds = 300             # default
//! idle_seconds = 300            # default: the sampler unloads after this long unasked
//! inlined = false               # default: names from symbol tables; true reads DWARF
//! interpreters = true           # default: Python functions in eval loops' place
//!
//! metrics = ["syscount"]        # tools by name alone, each with its defaults
//!
//! [[metric]]                    # a tool, as a metric of its own name
//! name = "block_io_latency"
//! preset = "biolatency"
//!
//! [[metric]]                    # any event, as the one-liners write it
//! name = "block_io_write_size"
//! event = "block:block_rq_issue"
//! filter = 'rwbs ~ "*W*"'
//! value = "bytes"               # a field; without `buckets`, its sum is a counter
//! unit = "bytes"                # the value's unit: ns, us, ms, s, bytes
//! buckets = "log2:9..26"        # log2 | log2:FIRST..LAST (slots) | linear:MIN,MAX,STEP
//!                               # | loglinear[:FIRST..LAST] (powers of two; adds quantiles)
//! by = ["dev", "rwbs"]          # group-by fields, the series' labels
//! ```
//!
//! (`dist/exporter.example.toml` is this example as a file, with comments;
//! `dist/exporter.example.yaml` says the same in YAML.)
//!
//! [`Config::parse`] checks everything that can be checked without the kernel: TOML syntax,
//! unknown fields, names (Prometheus's metric and label name rules, duplicates, suffixes the
//! exporter adds), presets (the tools of [`crate::jobs::tools`] that have a metric), units,
//! bucket specs, and which fields go together. Events, filters and fields are checked
//! against the kernel when the engine compiles them. Every error is one line naming the
//! metric and the bad part, a usage error (exit 2).

mod push;

use std::{collections::HashSet, net::SocketAddr};

use serde::Deserialize;
use tracekit_common::engine::MAX_LINEAR_SLOTS;

pub use self::push::{
    BasicAuth, ClientConfig, ClientTls, DEFAULT_QUEUE_SIZE, OtlpConfig, OtlpProtocol,
};
pub use crate::jobs::tools::ValueUnit;
use crate::{
    Error, Result,
    exporter::series::{SeriesKind, Spec},
    jobs::tools::{self, Metric, Tool},
    output::prometheus::{Buckets, Scale},
};

/// The default listen address: loopback, ebpf_exporter's port.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9435";
/// The default metric name prefix.
pub const DEFAULT_NAMESPACE: &str = "tracekit";
/// The default cap of label sets per metric.
pub const DEFAULT_MAX_SERIES: usize = 1000;
/// The default time a series may stay without growing before it is evicted, in seconds.
pub const DEFAULT_IDLE_SERIES_SECONDS: u64 = 600;

/// A checked exporter configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Where `/metrics` and the profile endpoint are served.
    pub listen: SocketAddr,
    /// Prefix of every metric name.
    pub namespace: String,
    /// The metrics, in file order.
    pub metrics: Vec<MetricConfig>,
    /// Seconds a series may go without growing before it is evicted (its label set's place
    /// under `max_series` freed; it restarts from zero if it counts again); 0 keeps every
    /// series for the run. Default [`DEFAULT_IDLE_SERIES_SECONDS`].
    pub idle_series_seconds: u64,
    /// The CPU profile endpoint.
    pub profile: ProfileConfig,
    /// OTLP profiles pushed (`[otlp]`).
    pub otlp: OtlpConfig,
    /// The `--push` (Pyroscope) client (`[pyroscope]`).
    pub pyroscope: ClientConfig,
}

/// The `[profile]` table.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProfileConfig {
    /// Serve `/debug/pprof/profile` (default true).
    pub enabled: bool,
    /// Samples per second per CPU (default 99).
    pub frequency_hz: u64,
    /// The longest `seconds=N` accepted (default 300).
    pub max_seconds: u64,
    /// How long the CPU sampler stays loaded with no profile under way (default 300; 0:
    /// it unloads after each). Loading it again builds the unwind tables again.
    pub idle_seconds: u64,
    /// Read the DWARF of sampled binaries that carry it, for inlined functions as frames
    /// (default false: functions are named from ELF symbol tables, as bcc names them). What
    /// that costs follows the workload: a debug build's DWARF adds about its binary's size
    /// to the exporter's RSS while it is sampled (see `SymbolizerOptions::dwarf`).
    pub inlined: bool,
    /// Record interpreted functions (Python) where stacks pass through an interpreter's
    /// eval loop (default true; false keeps the native frames, as `--no-interpreters`).
    pub interpreters: bool,
}

impl Default for ProfileConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            frequency_hz: 99,
            max_seconds: 300,
            idle_seconds: 300,
            inlined: false,
            interpreters: true,
        }
    }
}

/// A tool of the table the exporter serves by name, with its defaults ([`Tool::metric`];
/// the engine request is the tool's own plan).
#[derive(Clone, Copy)]
pub struct Preset(pub &'static Tool);

impl Preset {
    /// The servable tool named `name`.
    pub fn named(name: &str) -> Option<Self> {
        tools::find(name)
            .filter(|tool| tool.metric.is_some())
            .map(Self)
    }

    /// The name configs use.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// Its metric: name, help, labels, unit, buckets.
    pub fn metric(self) -> Metric {
        self.0.metric.expect("a preset is a servable tool")
    }

    /// Every servable tool's name, in the table's order.
    pub fn names() -> Vec<&'static str> {
        tools::TOOLS
            .iter()
            .filter(|tool| tool.metric.is_some())
            .map(|tool| tool.name)
            .collect()
    }
}

impl PartialEq for Preset {
    fn eq(&self, other: &Self) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for Preset {}

impl std::fmt::Debug for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Preset({})", self.0.name)
    }
}

/// A bucket spec as configs write it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BucketSpec {
    /// `log2` or `log2:FIRST..LAST`: log2 slots; `FIRST..LAST` picks the slots with buckets
    /// of their own (slot k holds values 2^k to 2^(k+1)-1).
    Log2 {
        /// First slot with a bucket.
        first: u32,
        /// Last slot with a bucket.
        last: u32,
    },
    /// `loglinear` or `loglinear:FIRST..LAST`: `--percentiles`' log-linear buckets (each
    /// power of two in 16), the powers of two `FIRST..LAST` with buckets of their own; the
    /// metric also exposes p50, p90, p99, p99.9 and max (`NAME_quantile_UNIT`).
    LogLinear {
        /// First power of two with buckets.
        first: u32,
        /// Last power of two with buckets.
        last: u32,
    },
    /// `linear:MIN,MAX,STEP`: buckets of STEP from MIN to MAX, as `hist --linear`.
    Linear {
        /// Low end.
        min: i64,
        /// High end.
        max: i64,
        /// Width.
        step: u64,
    },
}

impl BucketSpec {
    /// Parses `log2`, `log2:FIRST..LAST` or `linear:MIN,MAX,STEP`; the error says what is
    /// wrong (without the metric's name).
    pub fn parse(text: &str) -> std::result::Result<Self, String> {
        let bad = || {
            format!(
                "buckets \"{text}\": expected log2, log2:FIRST..LAST (slots 0 to 63), \
                 loglinear, loglinear:FIRST..LAST (powers of two 0 to 63) or linear:MIN,MAX,STEP"
            )
        };
        if text == "log2" {
            return Ok(BucketSpec::Log2 { first: 0, last: 63 });
        }
        if text == "loglinear" {
            return Ok(BucketSpec::LogLinear { first: 0, last: 63 });
        }
        if let Some(range) = text.strip_prefix("loglinear:") {
            let (first, last) = range.split_once("..").ok_or_else(bad)?;
            let first: u32 = first.trim().parse().map_err(|_| bad())?;
            let last: u32 = last.trim().parse().map_err(|_| bad())?;
            if first > last || last > 63 {
                return Err(format!(
                    "buckets \"{text}\": needs FIRST <= LAST <= 63 (powers of two)"
                ));
            }
            return Ok(BucketSpec::LogLinear { first, last });
        }
        if let Some(range) = text.strip_prefix("log2:") {
            let (first, last) = range.split_once("..").ok_or_else(bad)?;
            let first: u32 = first.trim().parse().map_err(|_| bad())?;
            let last: u32 = last.trim().parse().map_err(|_| bad())?;
            if first > last || last > 63 {
                return Err(format!(
                    "buckets \"{text}\": needs FIRST <= LAST <= 63 (log2 slots)"
                ));
            }
            return Ok(BucketSpec::Log2 { first, last });
        }
        if let Some(args) = text.strip_prefix("linear:") {
            let parts: Vec<&str> = args.split(',').map(str::trim).collect();
            let [min, max, step] = parts.as_slice() else {
                return Err(bad());
            };
            let (min, max, step): (i64, i64, u64) = (
                min.parse().map_err(|_| bad())?,
                max.parse().map_err(|_| bad())?,
                step.parse().map_err(|_| bad())?,
            );
            if step == 0 || max <= min {
                return Err(format!(
                    "buckets \"{text}\": needs MIN < MAX and a STEP above 0"
                ));
            }
            let buckets = (max.abs_diff(min)).div_ceil(step);
            if buckets + 2 > u64::from(MAX_LINEAR_SLOTS) {
                return Err(format!(
                    "buckets \"{text}\": {buckets} buckets; the kernel engine keeps at most {}",
                    MAX_LINEAR_SLOTS - 2
                ));
            }
            return Ok(BucketSpec::Linear { min, max, step });
        }
        Err(bad())
    }

    /// The kernel slots this spec makes, for [`crate::output::prometheus`].
    pub fn buckets(self) -> Buckets {
        match self {
            BucketSpec::Log2 { first, last } => Buckets::Log2 { first, last },
            BucketSpec::LogLinear { first, last } => Buckets::LogLinear {
                first,
                last,
                precision: tracekit_common::engine::DEFAULT_PRECISION,
            },
            BucketSpec::Linear { min, max, step } => Buckets::Linear {
                min,
                step,
                slots: (max.abs_diff(min)).div_ceil(step) as u32 + 2,
            },
        }
    }
}

/// One checked `[[metric]]`.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricConfig {
    /// The full metric name (namespace included), without unit or `_total`.
    pub name: String,
    /// Its help line.
    pub help: String,
    /// What the kernel counts.
    pub source: MetricSource,
    /// Extra filter (the filter language), added to a preset's own.
    pub filter: Option<String>,
    /// Group-by fields; each is a label of the same name.
    pub by: Vec<String>,
    /// The value's unit (`None`: a count, or a value without a unit).
    pub unit: Option<ValueUnit>,
    /// Histogram buckets (`None`: a counter).
    pub buckets: Option<BucketSpec>,
    /// Label sets with a series of their own.
    pub max_series: usize,
}

/// What a metric's kernel aggregate counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetricSource {
    /// A bcc tool's request.
    Preset(Preset),
    /// One event, as the one-liners write it.
    Event {
        /// `block:block_rq_issue`, `u:/bin/app:func`, `software:page-faults`.
        event: String,
        /// The field to sum or histogram (`None`: count events).
        value: Option<String>,
    },
}

impl MetricConfig {
    /// The series spec for [`crate::exporter::series::Series`]: kind, unit and labels.
    /// `div` is the kernel's divisor before bucketing (the engine's `value_div`, 1 when it
    /// buckets raw values).
    pub fn spec(&self, div: u64) -> Spec {
        let (unit, per_base) = match self.unit {
            Some(unit) => {
                let (base, per_base) = unit.base();
                (Some(base), per_base)
            }
            None => (None, 1.0),
        };
        let scale = Scale { div, per_base };
        let counts_events = match &self.source {
            MetricSource::Preset(preset) => preset.metric().unit.is_none(),
            MetricSource::Event { value, .. } => value.is_none(),
        };
        let kind = match self.buckets {
            Some(spec) => SeriesKind::Histogram {
                buckets: spec.buckets(),
                scale,
            },
            None if counts_events => SeriesKind::Count,
            None => SeriesKind::Sum { scale },
        };
        Spec {
            name: self.name.clone(),
            help: self.help.clone(),
            unit,
            label_names: self.by.clone(),
            kind,
            max_series: self.max_series,
        }
    }
}

/// The file as written, before checks.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    listen: Option<String>,
    namespace: Option<String>,
    max_series: Option<usize>,
    idle_series_seconds: Option<u64>,
    #[serde(default)]
    profile: ProfileConfig,
    #[serde(default)]
    otlp: OtlpConfig,
    #[serde(default)]
    pyroscope: ClientConfig,
    #[serde(default)]
    metrics: Vec<String>,
    #[serde(default)]
    metric: Vec<toml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetric {
    name: Option<String>,
    help: Option<String>,
    preset: Option<String>,
    event: Option<String>,
    filter: Option<String>,
    value: Option<String>,
    unit: Option<String>,
    buckets: Option<String>,
    by: Option<Vec<String>>,
    max_series: Option<usize>,
}

const METRIC_FIELDS: &str =
    "name, help, preset, event, filter, value, unit, buckets, by, max_series";

/// The language of a config file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// TOML (`.toml`, and any name not ending in `.yaml` or `.yml`).
    Toml,
    /// YAML (`.yaml`, `.yml`): the same keys, `metric` a list of mappings.
    Yaml,
}

impl Syntax {
    /// The syntax a file's name says: YAML for `.yaml` and `.yml` (any case), else TOML.
    pub fn of_path(path: &std::path::Path) -> Self {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("yaml" | "yml") => Syntax::Yaml,
            _ => Syntax::Toml,
        }
    }
}

impl Config {
    /// Parses and checks a TOML config file's text; `origin` names the file in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        Self::parse_as(text, origin, Syntax::Toml)
    }

    /// Parses and checks a config file's text in `syntax`; `origin` names the file in
    /// errors. YAML and TOML configs say the same things with the same keys and get the
    /// same checks.
    pub fn parse_as(text: &str, origin: &str, syntax: Syntax) -> Result<Self> {
        let raw: RawConfig = match syntax {
            Syntax::Toml => toml::from_str(text).map_err(|err| {
                let line = err
                    .span()
                    .map(|span| format!(" (line {})", line_of(text, span.start)))
                    .unwrap_or_default();
                Error::usage(format!("{origin}{line}: {}", one_line(err.message())))
            })?,
            Syntax::Yaml => {
                // An empty document is an empty config, as an empty TOML file is.
                let text = if text.trim().is_empty() { "{}" } else { text };
                serde_yaml_ng::from_str(text).map_err(|err| {
                    let line = err
                        .location()
                        .map(|at| format!(" (line {})", at.line()))
                        .unwrap_or_default();
                    let message = err.to_string();
                    // The message ends in " at line L column C", said once already.
                    let message = match message.rfind(" at line ") {
                        Some(at) if err.location().is_some() => &message[..at],
                        _ => &message,
                    };
                    Error::usage(format!("{origin}{line}: {}", one_line(message)))
                })?
            }
        };
        let namespace = raw.namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.into());
        if !is_metric_name(&namespace) {
            return Err(Error::usage(format!(
                "{origin}: namespace \"{namespace}\": not a Prometheus name \
                 (letters, digits, `_`, `:`, not starting with a digit)"
            )));
        }
        let listen_text = raw.listen.unwrap_or_else(|| DEFAULT_LISTEN.into());
        let listen = listen_text.parse().map_err(|_| {
            Error::usage(format!(
                "{origin}: listen \"{listen_text}\": expected ADDRESS:PORT, e.g. {DEFAULT_LISTEN} \
                 or [::1]:9435"
            ))
        })?;
        let max_series = raw.max_series.unwrap_or(DEFAULT_MAX_SERIES);
        if max_series == 0 {
            return Err(Error::usage(format!(
                "{origin}: max_series 0: needs at least 1"
            )));
        }
        if raw.profile.frequency_hz == 0 || raw.profile.max_seconds == 0 {
            return Err(Error::usage(format!(
                "{origin}: [profile]: frequency_hz and max_seconds need to be above 0"
            )));
        }
        if raw.otlp.queue_size == 0 {
            return Err(Error::usage(format!(
                "{origin}: [otlp]: queue_size 0: needs at least 1"
            )));
        }
        for (table, client) in [
            ("otlp", raw.otlp.client()),
            ("pyroscope", raw.pyroscope.clone()),
        ] {
            client
                .check(table)
                .map_err(|err| Error::usage(format!("{origin}: {err}")))?;
        }
        let mut metrics = Vec::with_capacity(raw.metrics.len() + raw.metric.len());
        let mut names = HashSet::new();
        // `metrics = ["runqlat"]` is `[[metric]] preset = "runqlat"` for each name.
        let by_name = raw.metrics.into_iter().map(|name| {
            let mut table = toml::Table::new();
            table.insert("preset".into(), toml::Value::String(name));
            toml::Value::Table(table)
        });
        for (index, value) in by_name.chain(raw.metric).enumerate() {
            let metric = check_metric(value, index, &namespace, max_series)
                .map_err(|err| Error::usage(format!("{origin}: {err}")))?;
            if !names.insert(metric.name.clone()) {
                let name = &metric.name[namespace.len() + 1..];
                return Err(Error::usage(format!(
                    "{origin}: metric \"{name}\": duplicate name (each metric needs its own)"
                )));
            }
            metrics.push(metric);
        }
        Ok(Config {
            listen,
            namespace,
            metrics,
            idle_series_seconds: raw
                .idle_series_seconds
                .unwrap_or(DEFAULT_IDLE_SERIES_SECONDS),
            profile: raw.profile,
            otlp: raw.otlp,
            pyroscope: raw.pyroscope,
        })
    }

    /// The built-in set served without a config: system calls by name, block I/O latency
    /// and sizes by disk, run queue latency, and the CPU profile endpoint.
    pub fn default_set() -> Self {
        Config::parse(DEFAULT_SET, "the built-in config").expect("the built-in config is valid")
    }
}

/// The built-in config, as a file would say it.
pub const DEFAULT_SET: &str = r#"metrics = ["syscount", "biolatency", "bitesize", "runqlat"]"#;

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Checks one `[[metric]]` table; the error names it (by name, else by position).
fn check_metric(
    value: toml::Value,
    index: usize,
    namespace: &str,
    default_max_series: usize,
) -> std::result::Result<MetricConfig, String> {
    let label = match (
        value.get("name").and_then(|n| n.as_str()),
        value.get("preset").and_then(|n| n.as_str()),
    ) {
        (Some(name), _) => format!("metric \"{name}\""),
        (None, Some(preset)) => format!("preset \"{preset}\""),
        (None, None) => format!("metric #{}", index + 1),
    };
    let raw: RawMetric = value.try_into().map_err(|err: toml::de::Error| {
        let message = one_line(err.message());
        if message.starts_with("unknown field") {
            format!(
                "{label}: {}; valid fields: {METRIC_FIELDS}",
                message.split(", expected").next().unwrap_or(&message)
            )
        } else {
            format!("{label}: {message}")
        }
    })?;
    let fail = |what: String| format!("{label}: {what}");

    let preset = raw
        .preset
        .as_deref()
        .map(|p| {
            Preset::named(p).ok_or_else(|| {
                let why = match tools::find(p) {
                    Some(_) => "a tool with no metric (it takes an argument or prints events)",
                    None => "unknown",
                };
                let unknown = format!("{why}; valid presets: {}", Preset::names().join(", "));
                match raw.name {
                    Some(_) => fail(format!("preset \"{p}\": {unknown}")),
                    None => fail(unknown),
                }
            })
        })
        .transpose()?;
    // A preset's metric is named after it unless the config names it.
    let raw_name = match (raw.name, preset) {
        (Some(name), _) => name,
        (None, Some(preset)) => preset.metric().name.to_string(),
        (None, None) => return Err(fail("needs name = \"NAME\"".into())),
    };
    if !is_metric_name(&raw_name) {
        return Err(fail(format!(
            "name \"{}\": not a Prometheus metric name (letters, digits, `_`, `:`, not \
             starting with a digit)",
            raw_name
        )));
    }
    for suffix in [
        "_total", "_bucket", "_sum", "_count", "_seconds", "_bytes", "_created",
    ] {
        if raw_name.ends_with(suffix) {
            return Err(fail(format!(
                "name \"{raw_name}\": drop the `{suffix}` suffix; the exporter adds unit and type \
                 suffixes itself"
            )));
        }
    }
    let name = format!("{namespace}_{raw_name}");

    let unit = raw
        .unit
        .as_deref()
        .map(|u| {
            ValueUnit::ALL
                .iter()
                .find(|(name, _)| *name == u)
                .map(|(_, unit)| *unit)
                .ok_or_else(|| {
                    let valid: Vec<&str> = ValueUnit::ALL.iter().map(|(n, _)| *n).collect();
                    fail(format!(
                        "unit \"{u}\": unknown; valid units: {}",
                        valid.join(", ")
                    ))
                })
        })
        .transpose()?;
    let buckets = raw
        .buckets
        .as_deref()
        .map(BucketSpec::parse)
        .transpose()
        .map_err(fail)?;

    let (source, help, default_by, unit, buckets) = match (preset, raw.event) {
        (Some(_), Some(_)) => {
            return Err(fail(
                "has both preset and event; a preset names its own events".into(),
            ));
        }
        (None, None) => {
            return Err(fail("needs preset = \"NAME\" or event = \"EVENT\"".into()));
        }
        (Some(preset), None) => {
            for (field, given) in [("value", raw.value.is_some()), ("unit", raw.unit.is_some())] {
                if given {
                    return Err(fail(format!(
                        "preset \"{}\" sets its own {field}; drop `{field}`",
                        preset.name()
                    )));
                }
            }
            let defaults = preset.metric();
            if buckets.is_some() && defaults.buckets.is_none() {
                return Err(fail(format!(
                    "preset \"{}\" counts events; it has no buckets to set",
                    preset.name()
                )));
            }
            (
                MetricSource::Preset(preset),
                defaults.help.to_string(),
                defaults.by.iter().map(|s| s.to_string()).collect(),
                defaults.unit,
                buckets.or(defaults
                    .buckets
                    .map(|(first, last)| BucketSpec::Log2 { first, last })),
            )
        }
        (None, Some(event)) => {
            if event.trim().is_empty() {
                return Err(fail("event \"\": names no event".into()));
            }
            if raw.value.is_none() {
                if buckets.is_some() {
                    return Err(fail(
                        "buckets need value = \"FIELD\" (the value to histogram)".into(),
                    ));
                }
                if unit.is_some() {
                    return Err(fail(
                        "unit needs value = \"FIELD\" (a count has no unit)".into(),
                    ));
                }
            }
            let help = match &raw.value {
                Some(value) => format!("{value} of {event}."),
                None => format!("Events of {event}."),
            };
            (
                MetricSource::Event {
                    event,
                    value: raw.value,
                },
                help,
                Vec::new(),
                unit,
                buckets,
            )
        }
    };

    let by = raw.by.unwrap_or(default_by);
    let mut seen = HashSet::new();
    for label_name in &by {
        if !is_label_name(label_name) || label_name == "le" {
            return Err(fail(format!(
                "by \"{label_name}\": not usable as a label name (letters, digits and `_`, not \
                 starting with a digit or `__`, not `le`)"
            )));
        }
        if !seen.insert(label_name) {
            return Err(fail(format!("by \"{label_name}\": listed twice")));
        }
    }
    let max_series = raw.max_series.unwrap_or(default_max_series);
    if max_series == 0 {
        return Err(fail("max_series 0: needs at least 1".into()));
    }
    Ok(MetricConfig {
        name,
        help: raw.help.unwrap_or(help),
        source,
        filter: raw.filter,
        by,
        unit,
        buckets,
        max_series,
    })
}

/// Prometheus's metric name rule: `[a-zA-Z_:][a-zA-Z0-9_:]*`.
fn is_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// Prometheus's label name rule, `[a-zA-Z_][a-zA-Z0-9_]*`, without the reserved `__`.
fn is_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    !name.starts_with("__")
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests;
