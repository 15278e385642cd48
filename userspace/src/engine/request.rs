//! What a command asks of the engine, as data: the probes, the value, the group key, the
//! filter, the aggregation, and optionally a start stage that pairs begin and end events
//! (latencies: block I/O issue to completion, wakeup to run, switch-out to switch-in).
//!
//! Every name in a request is a field name as `tracekit list --fields PROBE` shows it, and
//! every filter is a string in the one filter language ([`crate::probe::filter`]), so a
//! preset such as bcc's `biolatency` is a request of a dozen lines, not hand-assembled
//! kernel instructions. [`super::compile`] turns a request into engine specs.
//!
//! Besides an event's own fields, requests may name:
//! - `pid`, `tid`, `cpu`, `comm` (the current task), `kstack`, `ustack` (its stacks);
//! - on the end event of a request with a [`Start`]: `latency` (ns from start to end) and
//!   `start.NAME`, the value `NAME` had at the start event (saved with the start); with
//!   [`Start::keep`], the value of the last begin event with the same key.

use tracekit_common::engine::{DEFAULT_HASH_ENTRIES, DEFAULT_START_ENTRIES};

use super::spec::KernelAttach;

/// The aggregation asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Count events (and sum the value, if any).
    Count,
    /// Log2 histogram of the value.
    Log2,
    /// Log-linear (HDR-style) histogram of the value: each power of two split into
    /// 2^`precision` linear sub-buckets, for percentiles.
    LogLinear { precision: u32 },
    /// Linear histogram of the value: buckets of `step` from `min` to `max`.
    Linear { min: i64, max: i64, step: u64 },
    /// No aggregation: each event goes to userspace (`trace`).
    Trace,
}

/// One group-key column: a field, shown under a label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyField {
    /// The field (`comm`, `dev`, `start.id`).
    pub field: String,
    /// The column header (`comm`, `disk`, `syscall`).
    pub label: String,
}

impl KeyField {
    /// A column shown under the field's own name.
    pub fn new(field: impl Into<String>) -> Self {
        let field = field.into();
        Self {
            label: field.clone(),
            field,
        }
    }

    /// A column shown under `label`.
    pub fn labeled(label: impl Into<String>, field: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            label: label.into(),
        }
    }

    /// Columns for field names as `--by` lists them. The command line splits `--by` at
    /// commas, so pieces of one name with parentheses (`follows(dev,sector,nr_sector)`) are
    /// joined again.
    pub fn all(fields: &[String]) -> Vec<Self> {
        let mut names: Vec<String> = Vec::new();
        let mut open = 0i32;
        for piece in fields {
            match names.last_mut() {
                Some(last) if open > 0 => {
                    last.push(',');
                    last.push_str(piece);
                }
                _ => names.push(piece.clone()),
            }
            open += piece.matches('(').count() as i32 - piece.matches(')').count() as i32;
            open = open.max(0);
        }
        names.into_iter().map(Self::new).collect()
    }
}

/// One begin event of a [`Start`] stage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartProbe {
    /// The probe (a tracepoint or raw tracepoint).
    pub probe: String,
    /// Its fields that pair it with the end event, in the order of [`Start::end_pair`].
    pub pair: Vec<String>,
    /// Only begin events for which this holds start a pair.
    pub filter: Option<String>,
}

impl StartProbe {
    /// A begin event paired by `pair`, unfiltered.
    pub fn new(probe: impl Into<String>, pair: &[&str]) -> Self {
        Self {
            probe: probe.into(),
            pair: pair.iter().map(|p| p.to_string()).collect(),
            filter: None,
        }
    }

    /// The same, filtered.
    pub fn filtered(mut self, filter: impl Into<String>) -> Self {
        self.filter = Some(filter.into());
        self
    }
}

/// A start stage: it stores the time (and the `start.NAME` values the request reads) under
/// the pairing key; the end event finds them, and the engine aggregates the latency.
///
/// All begin events share one kernel plan, so a pairing field must be read the same way in
/// each; a begin event whose pairing field is elsewhere is left out, with a warning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Start {
    /// The begin events (at most 4).
    pub probes: Vec<StartProbe>,
    /// The end event's fields that pair it with its start (at most 2).
    pub end_pair: Vec<String>,
    /// Begin events of any task count, also with `-p`/`-- CMD` (wakeups run in the
    /// waker's context).
    pub all_tasks: bool,
    /// The pairing field is a thread id (one field): the start of a thread that exits is
    /// dropped, and a new thread reusing the id does not inherit it. Without this, starts
    /// that never end (a thread exiting mid-call) stay until the run ends.
    pub per_thread: bool,
    /// End events read their start without taking it away: it stays the last value per
    /// pairing key (a CPU's frequency, `cpufreq`), read by every end event until the next
    /// begin event replaces it. `latency` is then the time since that begin event.
    pub keep: bool,
}

/// Kernel map sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapSizes {
    /// Distinct groups (keys and histogram slots) the kernel keeps (`--max-groups`).
    pub max_groups: u32,
    /// Starts in flight the kernel tracks (`--max-in-flight`).
    pub max_in_flight: u32,
    /// Bytes shown of each string an event carries (`--max-string`); 0: each kind's
    /// default ([`crate::engine::strings`]).
    pub max_string: u32,
}

impl Default for MapSizes {
    fn default() -> Self {
        Self {
            max_groups: DEFAULT_HASH_ENTRIES,
            max_in_flight: DEFAULT_START_ENTRIES,
            max_string: 0,
        }
    }
}

/// How function probes attach.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Target {
    /// `-p PID`: uprobes are limited to it, short library names resolve in its maps.
    pub pid: Option<u32>,
    /// `--kprobe` / `--fentry`.
    pub how: KernelAttach,
}

/// What to compile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The events aggregated: tracepoints (wildcards allowed), or one function, raw
    /// tracepoint or software-event probe.
    pub probes: Vec<String>,
    /// The stage that pairs begin events with these, if any.
    pub start: Option<Start>,
    /// The field aggregated (`--value`).
    pub value: Option<String>,
    /// The group key (`--by`).
    pub by: Vec<KeyField>,
    /// Only events for which this holds (`--filter`).
    pub filter: Option<String>,
    /// The aggregation.
    pub shape: Shape,
    /// The value is divided by this before it picks a histogram slot (ns to us: 1000).
    pub value_div: u64,
    /// Fields each event carries to userspace (`trace --print`; `kstack`, `ustack` too).
    pub print: Vec<String>,
    /// Key by event (or function) first, as `count` does.
    pub by_event: bool,
    /// End events of any task count (completions run in interrupt context): the start
    /// stage selected the process.
    pub all_tasks: bool,
    /// Kernel map sizes.
    pub maps: MapSizes,
    /// How function probes attach.
    pub target: Target,
}

impl Request {
    /// Counts `probes`' events.
    pub fn count(probes: Vec<String>) -> Self {
        Self {
            probes,
            start: None,
            value: None,
            by: Vec::new(),
            filter: None,
            shape: Shape::Count,
            value_div: 1,
            print: Vec::new(),
            by_event: false,
            all_tasks: false,
            maps: MapSizes::default(),
            target: Target::default(),
        }
    }

    /// Counts one probe's events.
    pub fn probe(probe: impl Into<String>) -> Self {
        Self::count(vec![probe.into()])
    }

    /// A log2 histogram of `value`.
    pub fn log2(mut self, value: impl Into<String>) -> Self {
        self.value = Some(value.into());
        self.shape = Shape::Log2;
        self
    }

    /// Groups by `fields`.
    pub fn by(mut self, fields: Vec<KeyField>) -> Self {
        self.by = fields;
        self
    }

    /// Filters with `filter`.
    pub fn filter(mut self, filter: Option<String>) -> Self {
        self.filter = filter;
        self
    }

    /// Every field name the request reads (group key, value, filter, printed fields), for
    /// checks before compiling; filters that do not parse contribute nothing.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.by.iter().map(|k| k.field.clone()).collect();
        names.extend(self.value.iter().cloned());
        // `dir(FD)` reads FD.
        names.extend(self.print.iter().map(|name| {
            crate::engine::compile::body::dir_of(name).map_or(name.clone(), str::to_string)
        }));
        if let Some(expr) = self
            .filter
            .as_deref()
            .and_then(|f| crate::probe::filter::parse(f).ok())
        {
            names.extend(crate::probe::filter::fields(&expr));
        }
        names
    }
}
