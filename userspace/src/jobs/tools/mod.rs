//! The table of tools, read by both the command line and the exporter. A tool (`biolatency`,
//! `syscount`, ...) is one file of data here: its name, one-line summary and examples, its
//! own few flags, the shared flag groups it takes, its plan (the engine request built from
//! the flags, as bpftrace's `tools/*.bt` are a few lines of its language), and the metric
//! the exporter serves by the tool's name. The binary makes a subcommand of each (clap
//! stays out of the library); the exporter builds the same plan with the flags' defaults.
//!
//! Adding a tool is one file here plus its line in the `table!` below; see `bitesize.rs`
//! for a histogram, `syscount.rs` for a count, and [`ToolPlan::Events`] for a tool that prints
//! one line per event (execsnoop-like).
//!
//! The stack tools whose commands take stack flags of their own (`offcpu`, `wakeuptime`,
//! `offwaketime`) are here too, one file each, as engine requests outside the table: their
//! flags are in the binary's `commands/`.

use crate::{
    Result,
    engine::{keys::disk_dev, request::Request},
    jobs::aggregate::AggregateJob,
    output::prometheus::BaseUnit,
};

mod flags;
pub mod offcpu;
pub mod offwaketime;
pub mod wakeuptime;

pub use flags::{BY_PROCESS, FAILURES, Flag, FlagKind, FlagValues, NAME, NOCLEAR, UNIT, Value};

/// Declares each tool's module (`NAME.rs`, holding `pub const TOOL: Tool`) and [`TOOLS`].
macro_rules! table {
    ($($module:ident),* $(,)?) => {
        $(pub mod $module;)*

        /// Every tool, in `--help` order (after `count`).
        pub const TOOLS: &[&Tool] = &[$(&$module::TOOL),*];
    };
}

// The table: one line per tool, its file `NAME.rs` beside this one; `--help` lists them in
// this order. New tools go under their group, at the group's end.
table! {
    bitesize,
    biolatency,
    runqlat,
    syscount,
    funccount,
    funclatency,
    // processes
    execsnoop,
    exitsnoop,
    threadsnoop,
    setuids,
    killsnoop,
    oomkill,
    pidpersec,
    sigsnoop,
    // files
    writeback,
    opensnoop,
    statsnoop,
    syncsnoop,
    mountsnoop,
    vfsstat,
    vfscount,
    fsdist,
    ext4dist,
    xfsdist,
    btrfsdist,
    nfsdist,
    cachestat,
    fsslower,
    ext4slower,
    xfsslower,
    btrfsslower,
    nfsslower,
    filelife,
    dcsnoop,
    filetop,
    // block
    biosnoop,
    biotop,
    biopattern,
    biostacks,
    mdflush,
    // CPU and scheduler
    cpudist,
    runqslower,
    runqlen,
    hardirqs,
    softirqs,
    cpufreq,
    // memory
    drsnoop,
    slabratetop,
    memleak,
    swapin,
    // network
    tcpstates,
    tcpconnect,
    tcpaccept,
    tcpconnlat,
    tcpretrans,
    tcpdrop,
    tcprtt,
    tcplife,
    solisten,
    tcpsynbl,
    bindsnoop,
    tcptop,
    // security
    capable,
    // locks
    klockstat,
    futexctn,
    // user space
    bashreadline,
    gethostlatency,
}

/// The tool named `name`.
pub fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().copied().find(|tool| tool.name == name)
}

/// One tool, as data.
#[derive(Debug)]
pub struct Tool {
    /// The subcommand (`biolatency`), and the exporter's preset name.
    pub name: &'static str,
    /// The one-line summary `--help` starts with, naming the tool it follows (`bcc
    /// biolatency`).
    pub summary: &'static str,
    /// The lines after `EXAMPLES:` in `--help`: each `  tracekit NAME ...  # what it does`,
    /// optionally followed by a blank line and a paragraph.
    pub examples: &'static str,
    /// Its own flags, in `--help` order, before the shared groups.
    pub flags: &'static [Flag],
    /// The shared flag groups it takes, in `--help` order.
    pub groups: &'static [Group],
    /// The plan: what to run for the flags given ([`FlagValues::defaults`] for the exporter).
    pub plan: fn(&FlagValues) -> Result<ToolPlan>,
    /// The metric the exporter serves by the tool's name (`None`: not servable, as a tool
    /// that needs an argument or prints events).
    pub metric: Option<Metric>,
}

/// The flag groups shared by every command, meaning the same everywhere (the binary's
/// `cli` module defines them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// `-a`, `-p PID`, `-- CMD`, `-d`, `-i`, `-o FILE`, `--json`.
    Common,
    /// `--max-groups`, `--max-in-flight`.
    Maps,
    /// [`Group::Common`], [`Group::Maps`] and `--kprobe`/`--fentry`, for tools that take
    /// function probes.
    Probing,
    /// `--percentiles`, `--precision` ([`FlagValues::percentiles`]).
    Percentiles,
}

/// What a tool runs.
#[derive(Clone, Debug)]
pub enum ToolPlan {
    /// Counts or histograms aggregated in the kernel and printed at intervals and at the
    /// end ([`crate::jobs::aggregate`]); the exporter serves these.
    Aggregate(AggregateJob),
    /// One line per event, streamed from the kernel's ring buffer (execsnoop-like):
    /// [`EventsJob`].
    Events(EventsJob),
    /// Outstanding allocations by stack, read from the kernel at intervals and at the end
    /// ([`crate::jobs::outstanding`]).
    Memleak(crate::jobs::outstanding::OutstandingJob),
}

/// A tool that prints one line per event.
#[derive(Clone, Debug)]
pub struct EventsJob {
    /// The request: of shape [`crate::engine::request::Shape::Trace`], its `print` the
    /// fields of the columns, in order.
    pub request: Request,
    /// The columns, as libbpf-tools' version of the tool heads them (`PCOMM`, `PID`,
    /// `RET`), printed in that layout ([`crate::jobs::events`]; `--json`: objects with
    /// the headers as keys, [`crate::jobs::events::json_key`]).
    pub columns: Vec<Column>,
    /// A time column first (`-t`, `-T`).
    pub time: EventTime,
    /// More probe groups printed under the same headers, each its own request with the
    /// columns' fields as its probes offer them ([`EventsJob::also`]): fsslower's opens and
    /// fsyncs, whose file is a parameter of its own, beside its reads and writes. Their
    /// events and the first group's print as one stream, in time order.
    pub parts: Vec<EventsPart>,
}

/// A further probe group of an [`EventsJob`].
#[derive(Clone, Debug)]
pub struct EventsPart {
    /// Its request (of shape [`crate::engine::request::Shape::Trace`]).
    pub request: Request,
    /// Its columns: the job's headers, its own fields.
    pub columns: Vec<Column>,
    /// `Some(WHAT)`: a group the tool runs without where the kernel lacks its probe or the
    /// types its fields read (tcpaccept's io_uring accepts: `WHAT`), left out with a `-v`
    /// line naming WHAT and why; `None`: the tool needs it.
    pub optional: Option<&'static str>,
}

/// The time column of an event tool: bcc's `-t` (seconds since tracing began) and `-T`
/// (the wall clock, `HH:MM:SS`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EventTime {
    /// None.
    #[default]
    None,
    /// `TIME(s)`, seconds since tracing began.
    Relative,
    /// `TIME`, `HH:MM:SS`.
    Clock,
}

impl EventTime {
    /// The time column [`TIMESTAMP`] and [`CLOCK`] ask for (`-T` wins), for a tool that
    /// takes them.
    pub fn of(values: &FlagValues) -> Self {
        let on = |flag: Flag| values.declares(flag.long) && values.switch(flag.long);
        if on(CLOCK) {
            EventTime::Clock
        } else if on(TIMESTAMP) {
            EventTime::Relative
        } else {
            EventTime::None
        }
    }
}

/// `-t`/`--timestamp`: a first column of seconds since tracing began (bcc's `-t`).
pub const TIMESTAMP: Flag = Flag::switch(
    "timestamp",
    "Print a TIME(s) column: seconds since tracing began",
)
.short('t');

/// `-T`/`--time`: a first column of the wall clock, `HH:MM:SS` (bcc's `-T`).
pub const CLOCK: Flag =
    Flag::switch("time", "Print a TIME column: the wall clock, HH:MM:SS").short('T');

/// A column of an [`EventsJob`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    /// The header (`PID`).
    pub header: &'static str,
    /// The printed field behind it (`pid`, `comm`, `filename`), or a view of fields
    /// (`fd(ret)`, `errno(ret)`, `argv[0..4]`, `ppid`: [`crate::jobs::events`]).
    pub field: &'static str,
}

impl EventsJob {
    /// A job printing `columns` of `probe`'s events: the request prints the fields the
    /// columns show (`pid`, `comm` come with every record).
    pub fn new(probe: &str, columns: &[Column]) -> Self {
        Self::of_events(vec![probe.into()], columns)
    }

    /// `job`'s events (its probes, start stage and map sizes) printed one per line in
    /// `columns` instead of aggregated: a counting tool's per-event mode (`--stacks`).
    pub fn each_event_of(job: AggregateJob, columns: &[Column]) -> Self {
        let mut events = Self::of_events(job.request.probes, columns);
        events.request.start = job.request.start;
        events.request.maps = job.request.maps;
        events
    }

    /// Each return of the syscalls `calls` (`openat`) printed in `columns`, paired with its
    /// entry in the same thread (`start.FIELD` reads an entry argument); `-x` keeps the
    /// failed calls (`ret < 0`), `-n` one comm; map sizes and `-t`/`-T` from the flags. The
    /// shape of opensnoop, statsnoop and killsnoop.
    ///
    /// # Errors
    /// A usage error for a bad `-n`.
    pub fn syscall_returns(
        calls: &[&str],
        columns: &[Column],
        values: &FlagValues,
    ) -> crate::Result<Self> {
        let mut job = Self::of_events(
            calls
                .iter()
                .map(|call| format!("syscalls:sys_exit_{call}"))
                .collect(),
            columns,
        );
        job.request.start = Some(crate::engine::request::Start {
            probes: calls
                .iter()
                .map(|call| {
                    crate::engine::request::StartProbe::new(
                        format!("syscalls:sys_enter_{call}"),
                        &["tid"],
                    )
                })
                .collect(),
            end_pair: vec!["tid".into()],
            all_tasks: false,
            per_thread: true,
            keep: false,
        });
        let failures = values.declares(FAILURES.long) && values.switch(FAILURES.long);
        job.with_flags(
            failures
                .then(|| "ret < 0".to_string())
                .into_iter()
                .collect(),
            values,
        )
    }

    /// The job with the common flags of an event tool applied, those the tool takes:
    /// `filters` and `-n`'s comm filter conjoined, map sizes, and `-t`/`-T`.
    ///
    /// # Errors
    /// A usage error for a bad `-n`.
    pub fn with_flags(
        mut self,
        mut filters: Vec<String>,
        values: &FlagValues,
    ) -> crate::Result<Self> {
        if values.declares(NAME.long) {
            filters.extend(values.comm_filter()?);
        }
        self.request.filter = (!filters.is_empty()).then(|| filters.join(" && "));
        self.request.maps = values.maps;
        self.time = EventTime::of(values);
        Ok(self)
    }

    /// A job printing `columns` of each of `probes`' events.
    pub fn of_events(probes: Vec<String>, columns: &[Column]) -> Self {
        Self {
            request: Request {
                shape: crate::engine::request::Shape::Trace,
                print: crate::jobs::events::prints_of(columns),
                ..Request::count(probes)
            },
            columns: columns.to_vec(),
            time: EventTime::None,
            parts: Vec::new(),
        }
    }

    /// The job with `probe`'s events too, printed in `columns` (the same headers as the
    /// job's, each with the field as `probe` offers it): its request is the job's (filter,
    /// start stage, map sizes, target) with `probe` and these fields. Call it after the
    /// job's filter and target are set.
    ///
    /// # Panics
    /// When the headers differ from the job's (a tool's own columns: a bug).
    pub fn also(mut self, probe: &str, columns: &[Column]) -> Self {
        let headers = |columns: &[Column]| columns.iter().map(|c| c.header).collect::<Vec<_>>();
        assert_eq!(headers(columns), headers(&self.columns), "{probe}");
        let request = Request {
            probes: vec![probe.to_string()],
            print: crate::jobs::events::prints_of(columns),
            ..self.request.clone()
        };
        self.parts.push(EventsPart {
            request,
            columns: columns.to_vec(),
            optional: None,
        });
        self
    }
}

/// The metric the exporter serves for a tool (`metrics = ["runqlat"]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metric {
    /// Its name without the namespace (`runq_latency`), without unit or `_total`.
    pub name: &'static str,
    /// Its help line.
    pub help: &'static str,
    /// Labels a config may ask for by a name other than the field's (`disk` is `dev`,
    /// shown by name); any other label is the field of its name (`comm`).
    pub labels: &'static [(&'static str, &'static str)],
    /// The labels it has unless the config says otherwise.
    pub by: &'static [&'static str],
    /// The value's unit; `None`: the metric counts events.
    pub unit: Option<ValueUnit>,
    /// Log2 buckets, first and last slot with a bucket of its own (slot k holds 2^k to
    /// 2^(k+1)-1 of the raw unit); `None`: a counter.
    pub buckets: Option<(u32, u32)>,
}

impl Metric {
    /// The field behind `label`.
    pub fn field<'a>(&self, label: &'a str) -> &'a str {
        self.labels
            .iter()
            .find(|(name, _)| *name == label)
            .map_or(label, |(_, field)| field)
    }
}

/// The unit of the values a kernel program reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueUnit {
    /// `ns`.
    Nanoseconds,
    /// `us`.
    Microseconds,
    /// `ms`.
    Milliseconds,
    /// `s`.
    Seconds,
    /// `bytes`.
    Bytes,
}

impl ValueUnit {
    /// Units as configs spell them.
    pub const ALL: [(&'static str, ValueUnit); 5] = [
        ("ns", ValueUnit::Nanoseconds),
        ("us", ValueUnit::Microseconds),
        ("ms", ValueUnit::Milliseconds),
        ("s", ValueUnit::Seconds),
        ("bytes", ValueUnit::Bytes),
    ];

    /// The Prometheus base unit and how many raw units make one.
    pub fn base(self) -> (BaseUnit, f64) {
        match self {
            ValueUnit::Nanoseconds => (BaseUnit::Seconds, 1e9),
            ValueUnit::Microseconds => (BaseUnit::Seconds, 1e6),
            ValueUnit::Milliseconds => (BaseUnit::Seconds, 1e3),
            ValueUnit::Seconds => (BaseUnit::Seconds, 1.0),
            ValueUnit::Bytes => (BaseUnit::Bytes, 1.0),
        }
    }
}

/// A latency histogram's unit: nanoseconds per unit and bcc's header (`usecs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LatencyUnit {
    /// Nanoseconds per unit (1000 for microseconds).
    pub ns: u64,
    /// The histogram header, as bcc writes it (`nsecs`, `usecs`, `msecs`).
    pub header: &'static str,
}

impl LatencyUnit {
    /// Microseconds, bcc's default.
    pub const US: Self = Self {
        ns: 1_000,
        header: "usecs",
    };
}

impl Default for LatencyUnit {
    fn default() -> Self {
        Self::US
    }
}

/// `dev == N` for a disk name (`--disk vda`).
///
/// # Errors
/// A usage error when no such disk exists.
pub fn disk_filter(disk: Option<&str>) -> Result<Option<String>> {
    disk.map(|disk| disk_dev(disk).map(|dev| format!("dev == {dev}")))
        .transpose()
}

#[cfg(test)]
mod tests;
