//! tracekit's JSON profile file (`-o FILE.json`, `--json`), format version
//! [`FORMAT_VERSION`]: everything the other outputs are drawn from, so that `tracekit report`
//! re-renders a saved profile into any of them with no new tracing (`perf report` reading
//! `perf.data`). docs/json-format.md documents the fields.
//!
//! [`write`] writes a profile and its [`Header`]; [`read`] reads one back into a [`Saved`],
//! whose [`Saved::header`] and [`Saved::profile`] give every writer the same input it had
//! when the profile was taken. Files are told apart by their `kind` ([`SavedKind`]) before the
//! rest is read, so other kinds (histograms) can be added.
//!
//! ```
//! use std::time::{Duration, UNIX_EPOCH};
//! use tracekit::output::{profile::Header, saved};
//! use tracekit::cpu_sampler::SymbolizedProfile;
//! use tracekit::stacks::{Frame, Stack};
//!
//! let profile = SymbolizedProfile {
//!     stacks: vec![Stack {
//!         pid: 7,
//!         comm: "burner".into(),
//!         cgroup: None,
//!         frames: vec![Frame::user("main", Some("/bin/burner")), Frame::user("leaf", Some("/bin/burner"))],
//!         count: 3,
//!         time_slice: None,
//!     }],
//!     ..SymbolizedProfile::default()
//! };
//! let header = Header {
//!     hz: Some(99),
//!     elapsed: Duration::from_secs(1),
//!     ..Header::new("profile", "cpu-clock", "samples", "pid 7")
//! };
//! let mut json = Vec::new();
//! saved::write(&mut json, &profile, &header).unwrap();
//! let back = saved::parse(&json, std::path::Path::new("x.json")).unwrap();
//! assert_eq!(back.profile.stacks, profile.stacks);
//! assert_eq!(back.header().hz, Some(99));
//! ```

use std::{
    collections::{BTreeMap, HashMap},
    io,
    path::Path,
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use serde::{Deserialize, Serialize};

use super::profile::Header;
use crate::{
    Error, Result,
    cpu_sampler::{Stats, SymbolizedProfile},
    error::quote,
    mappings::Mapping,
    runtimes::RuntimeNotNamed,
    stacks::{CodeAddress, Frame, FrameKind, Stack},
};

/// The version of the JSON format written; files of a newer version are refused.
pub const FORMAT_VERSION: u32 = 1;
/// The value of the `format` field that marks the file as tracekit's.
pub const FORMAT_NAME: &str = "tracekit";

/// What a saved file holds, from its `kind` field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SavedKind {
    /// Stacks with counts (`profile`, `stackcount`, `offcpu`).
    Profile,
    /// Histograms (`hist` and its presets).
    Histogram,
    /// Counts per key (`count`, `syscount`, `funccount`).
    Counts,
}

impl SavedKind {
    /// The kind's name as files and messages spell it.
    pub fn name(self) -> &'static str {
        match self {
            SavedKind::Profile => "profile",
            SavedKind::Histogram => "histogram",
            SavedKind::Counts => "counts",
        }
    }
}

/// A saved profile, read back: its header's fields, owned, and the profile.
#[derive(Clone, Debug)]
pub struct Saved {
    /// The subcommand that took it (`profile`, `stackcount`, `offcpu`).
    pub tool: String,
    /// The event counted.
    pub event: String,
    /// What a count is (`samples`, `events`, `us`).
    pub unit: String,
    /// The scope as messages showed it.
    pub scope: String,
    /// Sampling rate, when sampling.
    pub hz: Option<u64>,
    /// How long it ran.
    pub elapsed: Duration,
    /// CPUs sampled.
    pub cpus: usize,
    /// When it started (wall clock).
    pub start: SystemTime,
    /// The time slice length in ns, when stacks carry time slices.
    pub time_slice_ns: Option<u64>,
    /// The cgroup of each process, as read when the profile was written.
    pub cgroups: HashMap<u32, String>,
    /// The stacks and the counters.
    pub profile: SymbolizedProfile,
    /// The runtimes found whose frames were not named, and why.
    pub runtimes_not_named: Vec<RuntimeNotNamed>,
}

impl Saved {
    /// The header the writers take, as it was when the profile was taken.
    pub fn header(&self) -> Header<'_> {
        Header {
            hz: self.hz,
            elapsed: self.elapsed,
            cpus: self.cpus,
            start: self.start,
            time_slice_ns: self.time_slice_ns,
            cgroups: Some(&self.cgroups),
            runtimes_not_named: &self.runtimes_not_named,
            ..Header::new(&self.tool, &self.event, &self.unit, &self.scope)
        }
    }
}

#[derive(Serialize, Deserialize)]
struct JsonProfile {
    format: String,
    format_version: u32,
    kind: SavedKind,
    tool: String,
    event: String,
    unit: String,
    scope: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    frequency_hz: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    period_ns: Option<u64>,
    start_unix_ns: u64,
    duration_s: f64,
    cpus: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    time_slice_ns: Option<u64>,
    samples: u64,
    lost: JsonLost,
    #[serde(default)]
    mappings: Vec<JsonMapping>,
    #[serde(default)]
    cgroups: BTreeMap<u32, String>,
    /// Runtimes found whose frames stayed native, and why (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    runtimes_not_named: Vec<RuntimeNotNamed>,
    stacks: Vec<JsonStack>,
}

/// What was not counted. The kernel's count of samples is the top level's `samples`: it
/// is not a loss, and a `samples` field here read as one (format 1 files before 2026-11-27
/// had it; readers ignore it).
#[derive(Serialize, Deserialize)]
struct JsonLost {
    count_map_full: u64,
    stack_map_full: u64,
    kernel_stack_errors: u64,
    user_stack_errors: u64,
    events_lost: u64,
    unwalked_stacks: u64,
}

#[derive(Serialize, Deserialize)]
struct JsonMapping {
    start: u64,
    end: u64,
    file_offset: u64,
    path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    build_id: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct JsonStack {
    pid: u32,
    comm: String,
    count: u64,
    /// The thread's cgroup path (`profile --by cgroup`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cgroup: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    time_slice: Option<u32>,
    frames: Vec<JsonFrame>,
}

#[derive(Serialize, Deserialize)]
struct JsonFrame {
    symbol: String,
    #[serde(default)]
    module: Option<String>,
    kind: FrameKind,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    inlined: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    jit: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    address: Option<u64>,
    /// Index into `mappings`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mapping: Option<usize>,
}

/// Writes `profile` as tracekit's JSON (one line and a newline).
pub fn write(
    out: &mut dyn io::Write,
    profile: &SymbolizedProfile,
    header: &Header<'_>,
) -> io::Result<()> {
    let mut mappings: Vec<JsonMapping> = Vec::new();
    let mut mapping_index: HashMap<Arc<Mapping>, usize> = HashMap::new();
    let mut cgroups = BTreeMap::new();
    let stacks = profile
        .stacks
        .iter()
        .map(|stack| {
            if !cgroups.contains_key(&stack.pid)
                && let Some(cgroup) = header.cgroup(stack.pid)
            {
                cgroups.insert(stack.pid, cgroup);
            }
            JsonStack {
                pid: stack.pid,
                comm: stack.comm.clone(),
                count: stack.count,
                cgroup: stack.cgroup.clone(),
                time_slice: stack.time_slice,
                frames: stack
                    .frames
                    .iter()
                    .map(|frame| {
                        let address = frame.address.as_ref();
                        let mapping = address.and_then(|a| a.mapping.as_ref()).map(|m| {
                            *mapping_index.entry(Arc::clone(m)).or_insert_with(|| {
                                mappings.push(JsonMapping {
                                    start: m.start,
                                    end: m.end,
                                    file_offset: m.file_offset,
                                    path: m.path.to_string(),
                                    build_id: m.build_id.as_ref().map(|_| m.build_id_hex()),
                                });
                                mappings.len() - 1
                            })
                        });
                        JsonFrame {
                            symbol: frame.symbol.clone(),
                            module: frame.module.clone(),
                            kind: frame.kind,
                            inlined: frame.inlined,
                            jit: frame.jit,
                            address: address.map(|a| a.address),
                            mapping,
                        }
                    })
                    .collect(),
            }
        })
        .collect();
    let json = JsonProfile {
        format: FORMAT_NAME.into(),
        format_version: FORMAT_VERSION,
        kind: SavedKind::Profile,
        tool: header.tool.into(),
        event: header.event.into(),
        unit: header.unit.into(),
        scope: header.scope.into(),
        frequency_hz: header.hz,
        period_ns: header.hz.map(|hz| 1_000_000_000 / hz.max(1)),
        start_unix_ns: header
            .start
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos() as u64),
        duration_s: header.elapsed.as_secs_f64(),
        cpus: header.cpus,
        time_slice_ns: header.time_slice_ns,
        samples: profile.stacks.iter().map(|s| s.count).sum(),
        lost: JsonLost {
            count_map_full: profile.stats.count_map_full,
            stack_map_full: profile.stats.stack_map_full,
            kernel_stack_errors: profile.stats.kernel_stack_errors,
            user_stack_errors: profile.stats.user_stack_errors,
            events_lost: profile.stats.events_lost,
            unwalked_stacks: profile.unwalked,
        },
        mappings,
        cgroups,
        runtimes_not_named: header.runtimes_not_named.to_vec(),
        stacks,
    };
    serde_json::to_writer(&mut *out, &json)?;
    writeln!(out)
}

/// The `kind` of a tracekit JSON file's content, after checking that it is ours and of a
/// version this tracekit reads. Usage errors name `path` and what is wrong.
pub fn kind(bytes: &[u8], path: &Path) -> Result<SavedKind> {
    #[derive(Deserialize)]
    struct Head {
        format: Option<String>,
        format_version: Option<u32>,
        kind: Option<serde_json::Value>,
    }
    let name = quote(&path.to_string_lossy());
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(Error::usage(format!(
            "{name}: not a tracekit JSON file (it does not start with `{{`); give a file \
             written by tracekit -o FILE.json or --json"
        )));
    }
    let head: Head = serde_json::from_slice(bytes).map_err(|err| json_error(&name, &err))?;
    if head.format.as_deref() != Some(FORMAT_NAME) {
        return Err(Error::usage(format!(
            "{name}: not a tracekit JSON file (no \"format\": \"{FORMAT_NAME}\" field); \
             give a file written by tracekit -o FILE.json or --json"
        )));
    }
    match head.format_version {
        Some(version) if version > FORMAT_VERSION => {
            return Err(Error::usage(format!(
                "{name}: written in format version {version}, newer than this tracekit \
                 reads ({FORMAT_VERSION}); re-render it with a newer tracekit"
            )));
        }
        Some(_) => {}
        None => {
            return Err(Error::usage(format!(
                "{name}: has no format_version; not a file tracekit wrote"
            )));
        }
    }
    match head.kind {
        Some(value) => serde_json::from_value(value.clone()).map_err(|_| {
            Error::usage(format!(
                "{name}: unknown kind {value}; this tracekit reads \"profile\", \"histogram\" and \"counts\""
            ))
        }),
        None => Err(Error::usage(format!("{name}: has no \"kind\" field"))),
    }
}

fn json_error(name: &str, err: &serde_json::Error) -> Error {
    if err.to_string().starts_with("trailing characters") {
        return Error::usage(format!(
            "{name}: holds several JSON documents (line {} starts another; --json -i writes \
             one per interval and the whole run last); give one, e.g. `tail -n 1 {name}`",
            err.line()
        ));
    }
    if err.is_eof() {
        Error::usage(format!(
            "{name}: truncated: the JSON ends early (line {}, column {})",
            err.line(),
            err.column()
        ))
    } else {
        Error::usage(format!("{name}: not valid tracekit JSON: {err}"))
    }
}

/// Reads the saved profile in `path` (see [`parse`]).
pub fn read(path: &Path) -> Result<Saved> {
    parse(&read_bytes(path)?, path)
}

/// A file's bytes, with an error naming it.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|err| {
        let name = quote(&path.to_string_lossy());
        match err.kind() {
            io::ErrorKind::NotFound => Error::usage(format!("{name}: no such file")),
            _ => Error::runtime(format!("reading {name}: {err}")),
        }
    })
}

/// Parses a saved profile's `bytes` (read from `path`, which errors name). Usage errors for
/// a file that is not ours, of a newer version, truncated, or of another kind.
pub fn parse(bytes: &[u8], path: &Path) -> Result<Saved> {
    let name = quote(&path.to_string_lossy());
    match kind(bytes, path)? {
        SavedKind::Profile => {}
        other => {
            return Err(Error::usage(format!(
                "{name}: holds a {}, not a profile",
                other.name()
            )));
        }
    }
    let json: JsonProfile = serde_json::from_slice(bytes).map_err(|err| json_error(&name, &err))?;
    let mappings: Vec<Arc<Mapping>> = json
        .mappings
        .into_iter()
        .map(|m| {
            Ok(Arc::new(Mapping {
                start: m.start,
                end: m.end,
                file_offset: m.file_offset,
                path: m.path.into(),
                build_id: m
                    .build_id
                    .map(|hex| parse_hex(&hex))
                    .transpose()
                    .map_err(|()| Error::usage(format!("{name}: a mapping's build_id is not hex")))?
                    .map(Into::into),
            }))
        })
        .collect::<Result<_>>()?;
    let mut stacks = Vec::with_capacity(json.stacks.len());
    for stack in json.stacks {
        let mut frames = Vec::with_capacity(stack.frames.len());
        for frame in stack.frames {
            let mapping = match frame.mapping {
                Some(i) => Some(Arc::clone(mappings.get(i).ok_or_else(|| {
                    Error::usage(format!(
                        "{name}: a frame names mapping {i} of {}",
                        mappings.len()
                    ))
                })?)),
                None => None,
            };
            frames.push(Frame {
                address: frame.address.map(|address| CodeAddress {
                    address,
                    mapping,
                    lines: None,
                }),
                symbol: frame.symbol,
                module: frame.module,
                kind: frame.kind,
                inlined: frame.inlined,
                jit: frame.jit,
            });
        }
        stacks.push(Stack {
            pid: stack.pid,
            comm: stack.comm,
            cgroup: stack.cgroup,
            frames,
            count: stack.count,
            time_slice: stack.time_slice,
        });
    }
    Ok(Saved {
        tool: json.tool,
        event: json.event,
        unit: json.unit,
        scope: json.scope,
        hz: json.frequency_hz,
        elapsed: Duration::try_from_secs_f64(json.duration_s).unwrap_or_default(),
        cpus: json.cpus,
        start: UNIX_EPOCH + Duration::from_nanos(json.start_unix_ns),
        time_slice_ns: json.time_slice_ns,
        cgroups: json.cgroups.into_iter().collect(),
        runtimes_not_named: json.runtimes_not_named,
        profile: SymbolizedProfile {
            stacks,
            stats: Stats {
                samples: json.samples,
                count_map_full: json.lost.count_map_full,
                stack_map_full: json.lost.stack_map_full,
                kernel_stack_errors: json.lost.kernel_stack_errors,
                user_stack_errors: json.lost.user_stack_errors,
                events_lost: json.lost.events_lost,
            },
            unwalked: json.lost.unwalked_stacks,
            broken: Vec::new(),
        },
    })
}

/// A saved histogram (`hist` and its presets, `-o FILE.json`), read back.
#[derive(Clone, Debug, PartialEq)]
pub struct SavedHistogram {
    /// The subcommand that took it (`hist`, `biolatency`).
    pub command: String,
    /// What was traced.
    pub traced: String,
    /// The buckets' unit (`usecs`, `bytes`).
    pub unit: String,
    /// How long it ran, seconds.
    pub duration_s: f64,
    /// The whole run's histogram per group, in the order saved.
    pub groups: Vec<SavedGroup>,
    /// With `-i`: each interval's histogram, summed over groups (the heat map).
    pub intervals: Option<super::heatmap::Intervals>,
}

/// One group of a [`SavedHistogram`].
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct SavedGroup {
    /// The group's key, column name to value, in column order.
    #[serde(default)]
    pub key: serde_json::Map<String, serde_json::Value>,
    /// Events counted.
    pub count: u64,
    /// The buckets with events, lowest first.
    #[serde(default)]
    pub hist: Vec<SavedBucket>,
    /// `--percentiles`' summary, as the run wrote it.
    #[serde(default)]
    pub percentiles: Option<SavedPercentiles>,
}

/// A group's `--percentiles` summary in a saved histogram (each as its bucket's bounds).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct SavedPercentiles {
    /// Events.
    pub count: u64,
    /// The exact mean, in the histogram's unit.
    pub mean: f64,
    /// p50, p90, p99, p99.9.
    pub percentiles: Vec<SavedPercentile>,
    /// The highest non-empty bucket.
    pub max: SavedBounds,
}

/// One quantile of [`SavedPercentiles`].
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct SavedPercentile {
    /// `p99`.
    pub name: String,
    /// 0.99.
    pub quantile: f64,
    /// Its bucket's lowest value.
    pub low: u64,
    /// Its bucket's highest value.
    pub high: u64,
}

/// A bucket's bounds, inclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub struct SavedBounds {
    /// The lowest value.
    pub low: u64,
    /// The highest value.
    pub high: u64,
}

impl SavedPercentiles {
    /// The summary the run printed, for [`super::percentiles::text`]; quantiles of other
    /// names than `--percentiles`' are left out.
    fn summary(&self) -> super::percentiles::Summary {
        use super::percentiles::{Bounds, Percentile, QUANTILES};
        super::percentiles::Summary {
            count: self.count,
            mean: self.mean,
            percentiles: self
                .percentiles
                .iter()
                .filter_map(|p| {
                    let (name, _) = QUANTILES.iter().find(|(name, _)| *name == p.name)?;
                    Some(Percentile {
                        name,
                        quantile: p.quantile,
                        bounds: Bounds {
                            low: p.low,
                            high: p.high,
                        },
                    })
                })
                .collect(),
            max: Bounds {
                low: self.max.low,
                high: self.max.high,
            },
        }
    }
}

/// One bucket: values from `low` to `high` (inclusive) in the histogram's unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub struct SavedBucket {
    /// The lowest value.
    pub low: i128,
    /// The highest value.
    pub high: i128,
    /// Events in it.
    pub count: u64,
}

#[derive(Deserialize)]
struct JsonHistogramIn {
    command: String,
    traced: String,
    unit: String,
    duration_s: f64,
    groups: Vec<SavedGroup>,
    #[serde(default)]
    intervals: Option<super::heatmap::Intervals>,
}

/// The log2 slot holding `value` (slot 0 holds 0 and 1), for values a log2 slot can hold.
fn log2_slot(value: i128) -> Option<u32> {
    let value = u64::try_from(value).ok()?;
    Some(if value < 2 {
        0
    } else {
        63 - value.leading_zeros()
    })
}

impl SavedHistogram {
    /// The heat map's title, as the run drew it.
    pub fn title(&self) -> String {
        format!("{}: {}", self.command, self.traced)
    }

    /// The histograms as text, one per group under its key: as log2 slots when every
    /// bucket lies within one (log2 and `--percentiles` histograms, the latter folded as
    /// the run showed them), else one line per bucket; then `--percentiles`' lines, as the
    /// run printed them.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for (index, group) in self.groups.iter().enumerate() {
            if !group.key.is_empty() {
                if index > 0 {
                    out.push('\n');
                }
                let key: Vec<String> = group
                    .key
                    .iter()
                    .map(|(name, value)| match value {
                        serde_json::Value::String(text) => format!("{name} = {text}"),
                        other => format!("{name} = {other}"),
                    })
                    .collect();
                out.push_str(&key.join(", "));
                out.push('\n');
            }
            let slots: Option<Vec<u32>> = group
                .hist
                .iter()
                .map(|b| log2_slot(b.low).filter(|&slot| log2_slot(b.high) == Some(slot)))
                .collect();
            match slots {
                Some(slots) => {
                    let len = slots.iter().max().map_or(0, |&s| s as usize + 1);
                    let mut counts = vec![0u64; len];
                    for (slot, bucket) in slots.iter().zip(&group.hist) {
                        counts[*slot as usize] += bucket.count;
                    }
                    out.push_str(&super::hist::log2(&counts, &self.unit));
                }
                None => {
                    let labelled: Vec<(String, u64)> = group
                        .hist
                        .iter()
                        .map(|b| {
                            let label = if b.low == i128::from(i64::MIN) {
                                format!("< {}", b.high + 1)
                            } else if b.high == i128::from(i64::MAX) {
                                format!(">= {}", b.low)
                            } else {
                                format!("{} -> {}", b.low, b.high)
                            };
                            (label, b.count)
                        })
                        .collect();
                    out.push_str(&super::hist::labelled(&labelled, &self.unit));
                }
            }
            if let Some(percentiles) = &group.percentiles {
                out.push_str(&super::percentiles::text(
                    &percentiles.summary(),
                    &self.unit,
                ));
            }
        }
        out
    }
}

/// Parses a saved histogram's `bytes` (read from `path`, which errors name). Usage errors
/// as [`parse`]'s, and for intervals whose columns do not have one count per row.
pub fn parse_histogram(bytes: &[u8], path: &Path) -> Result<SavedHistogram> {
    let name = quote(&path.to_string_lossy());
    match kind(bytes, path)? {
        SavedKind::Histogram => {}
        other => {
            let what = if other == SavedKind::Profile {
                "a profile"
            } else {
                "counts"
            };
            return Err(Error::usage(format!(
                "{name}: holds {what}, not a histogram"
            )));
        }
    }
    let json: JsonHistogramIn =
        serde_json::from_slice(bytes).map_err(|err| json_error(&name, &err))?;
    if let Some(intervals) = &json.intervals
        && let Some(column) = intervals
            .columns
            .iter()
            .position(|c| c.counts.len() != intervals.rows.len())
    {
        return Err(Error::usage(format!(
            "{name}: intervals.columns[{column}] has {} counts for {} rows; each column needs \
             one count per row",
            intervals.columns[column].counts.len(),
            intervals.rows.len()
        )));
    }
    Ok(SavedHistogram {
        command: json.command,
        traced: json.traced,
        unit: json.unit,
        duration_s: json.duration_s,
        groups: json.groups,
        intervals: json.intervals,
    })
}

fn parse_hex(hex: &str) -> std::result::Result<Vec<u8>, ()> {
    if !hex.len().is_multiple_of(2) {
        return Err(());
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2).ok_or(())?, 16).map_err(|_| ()))
        .collect()
}

#[cfg(test)]
mod tests;
