//! The flag groups every command shares, meaning the same everywhere, as in perf and bcc:
//! `-a`, `-p PID`, `-- CMD ARGS`, `-d SECONDS`, `-i SECONDS`, `-o FILE`, `--json`, the
//! kernel map sizes and how kernel functions are probed. Each command's own flags live in
//! its file under `commands/`.

use std::{ffi::OsString, path::PathBuf, time::Duration};

use clap::Args;
use tracekit::{
    Result,
    engine::{
        KernelAttach,
        request::{MapSizes, Request, Start, StartProbe, Target},
    },
    jobs::RunOptions,
    session::Scope,
    unwind::CallGraph,
};
use tracekit_common::unwind::{DEFAULT_TABLE_BUDGET_BYTES, MAX_SHARDS, SHARD_ROWS};

/// Which processes to trace: `-a` (the default), `-p PID,...`, or `-- CMD ARGS`.
#[derive(Debug, Args)]
pub struct ScopeArgs {
    /// Trace every process on every CPU (the default)
    #[arg(short = 'a', long = "all-cpus")]
    pub all: bool,
    /// Trace only these processes (comma-separated pids); ends when they have all exited
    #[arg(
        short = 'p',
        long = "pid",
        value_name = "PID[,PID...]",
        value_delimiter = ','
    )]
    pub pids: Vec<u32>,
    /// Only tasks in cgroup v2 PATH or below it (/sys/fs/cgroup/system.slice/x.service,
    /// /system.slice/x.service as --by cgroup shows it, or a Kubernetes pod UID or container
    /// ID); checked in the kernel
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<PathBuf>,
    /// Run CMD with ARGS, trace it and its children, and end when it exits
    #[arg(last = true, value_name = "CMD [ARGS]")]
    pub command: Vec<OsString>,
}

impl ScopeArgs {
    /// The one scope these flags ask for; a usage error when they contradict each other.
    pub fn scope(&self) -> Result<Scope> {
        let chosen = [self.all, !self.pids.is_empty(), !self.command.is_empty()];
        if chosen.iter().filter(|&&c| c).count() > 1 {
            return Err(tracekit::Error::usage(
                "choose one scope: -a (every process), -p PID (running processes) \
                 or -- CMD (a command to start)",
            ));
        }
        Ok(if !self.pids.is_empty() {
            Scope::Pids(self.pids.clone())
        } else if !self.command.is_empty() {
            Scope::Command(self.command.clone())
        } else {
            Scope::All
        })
    }

    /// `--cgroup PATH` as the kernel checks it; `None` without it.
    ///
    /// # Errors
    /// A usage error when PATH is not a cgroup v2 directory.
    pub fn cgroup(&self) -> Result<Option<tracekit::cgroups::CgroupFilter>> {
        self.cgroup
            .as_deref()
            .map(tracekit::cgroups::resolve_filter)
            .transpose()
    }

    /// The pid uprobes are limited to: a single `-p PID`.
    pub fn one_pid(&self) -> Option<u32> {
        match self.pids.as_slice() {
            [one] => Some(*one),
            _ => None,
        }
    }
}

/// How long to trace and how often to print.
#[derive(Debug, Args)]
pub struct TimingArgs {
    /// Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits
    #[arg(short = 'd', long = "duration", value_name = "SECONDS", value_parser = parse_seconds)]
    pub duration: Option<f64>,
    /// Also print what was gathered in each interval of SECONDS
    #[arg(short = 'i', long = "interval", value_name = "SECONDS", value_parser = parse_seconds)]
    pub interval: Option<f64>,
}

/// Where results go.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Write the result to FILE, in the format its extension names (.txt .folded .svg .json;
    /// stack profiles also .pb.gz .otlp.pb .heatmap.svg .speedscope.json .trace.json); may be given
    /// several times (profiles, histograms, counts); for histograms with -i, .svg is a heat
    /// map (one column per interval) and .json keeps the intervals for `tracekit report`
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Vec<PathBuf>,
    /// Print JSON on stdout instead of text
    #[arg(long)]
    pub json: bool,
}

/// Scope, timing and output: what every tracing command takes.
#[derive(Debug, Args)]
pub struct Common {
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub timing: TimingArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl Common {
    /// The run options these flags ask for.
    pub fn run_options(&self, verbose: u8) -> Result<RunOptions> {
        Ok(RunOptions {
            scope: self.scope.scope()?,
            cgroup: self.scope.cgroup()?,
            duration: self.timing.duration.map(Duration::from_secs_f64),
            interval: self.timing.interval.map(Duration::from_secs_f64),
            output: self.output.output.first().cloned(),
            more_outputs: self.output.output.iter().skip(1).cloned().collect(),
            json: self.output.json,
            verbose,
            debug_info: Default::default(),
        })
    }
}

/// What the probe-taking commands share: scope, timing, output, kernel map sizes, and how
/// kernel functions are probed.
#[derive(Debug, Args)]
pub struct ProbeArgs {
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub maps: MapArgs,
    #[command(flatten)]
    pub target: TargetArgs,
}

impl ProbeArgs {
    /// A request counting `probes` with these map sizes and attach policy.
    pub fn request(&self, probes: Vec<String>) -> Request {
        Request {
            maps: self.maps.sizes(),
            target: self.target.target(&self.common.scope),
            ..Request::count(probes)
        }
    }

    /// The run options these flags ask for.
    pub fn run_options(&self, verbose: u8) -> Result<RunOptions> {
        self.common.run_options(verbose)
    }
}

/// `--last PROBE` and `--last-key`: a last-value cell per key, set by one event and read by
/// the traced events without being used up (`hist`, `count`, `trace`).
#[derive(Debug, Args)]
pub struct LastArgs {
    /// Keep the last event of PROBE (a tracepoint or raw tracepoint) per --last-key; the
    /// traced events read its fields as start.FIELD and the ns since it as latency, and
    /// leave it for the next (a CPU's frequency set by power:cpu_frequency, read by each
    /// sample); events before any PROBE event for their key are not counted
    #[arg(long, value_name = "PROBE")]
    pub last: Option<String>,
    /// What pairs --last's events with the traced ones: a field both have (cpu, pid, tid,
    /// ...) or LAST_FIELD=FIELD (cpu_id=cpu), up to 2, comma-separated [default: cpu]
    #[arg(long, value_name = "FIELD[=FIELD],...", value_parser = parse_last_key, requires = "last")]
    pub last_key: Option<LastKey>,
}

/// `--last-key`'s pairs: (the --last event's field, the traced event's field).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LastKey(pub Vec<(String, String)>);

impl LastArgs {
    /// `request` with the last-value stage these flags ask for, if any.
    pub fn apply(&self, request: Request) -> Request {
        let Some(probe) = &self.last else {
            return request;
        };
        let pairs = self
            .last_key
            .clone()
            .map_or_else(|| vec![("cpu".to_string(), "cpu".to_string())], |key| key.0);
        let begin: Vec<&str> = pairs.iter().map(|(b, _)| b.as_str()).collect();
        Request {
            start: Some(Start {
                probes: vec![StartProbe::new(probe.clone(), &begin)],
                end_pair: pairs.iter().map(|(_, e)| e.clone()).collect(),
                all_tasks: false,
                per_thread: false,
                keep: true,
            }),
            ..request
        }
    }
}

/// Parses `--last-key`: `FIELD` or `LAST_FIELD=FIELD`, 1 or 2 of them, comma-separated.
pub fn parse_last_key(text: &str) -> std::result::Result<LastKey, String> {
    let pairs: Vec<(String, String)> = text
        .split(',')
        .map(|part| match part.split_once('=') {
            Some((last, own)) => (last.trim().to_string(), own.trim().to_string()),
            None => (part.trim().to_string(), part.trim().to_string()),
        })
        .collect();
    if pairs.len() > 2 || pairs.iter().any(|(a, b)| a.is_empty() || b.is_empty()) {
        return Err(
            "expected 1 or 2 fields, FIELD or LAST_FIELD=FIELD, comma-separated (cpu, \
             cpu_id=cpu, pid)"
                .to_string(),
        );
    }
    Ok(LastKey(pairs))
}

/// How kernel functions are probed.
#[derive(Debug, Args)]
pub struct TargetArgs {
    /// Probe kernel functions with kprobes, never fentry/fexit
    #[arg(long, conflicts_with = "fentry")]
    pub kprobe: bool,
    /// Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes
    #[arg(long)]
    pub fentry: bool,
}

impl TargetArgs {
    /// The attach policy, and the pid uprobes are limited to (a single `-p PID`).
    pub fn target(&self, scope: &ScopeArgs) -> Target {
        Target {
            pid: scope.one_pid(),
            how: match (self.kprobe, self.fentry) {
                (true, _) => KernelAttach::Kprobe,
                (_, true) => KernelAttach::Fentry,
                _ => KernelAttach::Auto,
            },
        }
    }
}

/// Kernel map sizes of the aggregation engine.
#[derive(Debug, Args)]
pub struct MapArgs {
    /// Distinct groups (--by keys and histogram slots) the kernel keeps, 1 to 134217728;
    /// allocated up front
    #[arg(long, value_name = "N", default_value_t = tracekit_common::engine::DEFAULT_HASH_ENTRIES,
          value_parser = parse_hash_entries)]
    pub max_groups: u32,
    /// Requests or calls in flight the kernel tracks for latencies, 1 to 134217728
    #[arg(long, value_name = "N", default_value_t = tracekit_common::engine::DEFAULT_START_ENTRIES,
          value_parser = parse_hash_entries)]
    pub max_in_flight: u32,
    /// Bytes shown of each string an event prints, 1 to 4094 (longer ones end in `...`);
    /// default: paths and names whole, arguments 128. --filter compares this much too; --by
    /// keys keep 31 bytes (longer ones end in `...`)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4094))]
    pub max_string: Option<u32>,
}

impl MapArgs {
    /// The sizes.
    pub fn sizes(&self) -> MapSizes {
        MapSizes {
            max_groups: self.max_groups,
            max_in_flight: self.max_in_flight,
            max_string: self.max_string.unwrap_or(0),
        }
    }
}

/// `--percentiles` and `--precision`, on every histogram command.
#[derive(Debug, Args)]
pub struct PercentileArgs {
    /// Keep a log-linear histogram in the kernel and report p50, p90, p99, p99.9, max, count
    /// and mean; each percentile is the bucket it falls in
    #[arg(long)]
    pub percentiles: bool,
    /// Sub-bucket bits of --percentiles' histogram, 0 to 7: each power of two is split into
    /// 2^K buckets, at most 100/2^K % wide
    #[arg(long, value_name = "K", default_value_t = tracekit_common::engine::DEFAULT_PRECISION,
          value_parser = clap::value_parser!(u32).range(0..=7), requires = "percentiles")]
    pub precision: u32,
}

impl PercentileArgs {
    /// The precision when `--percentiles` is on.
    pub fn precision(&self) -> Option<u32> {
        self.percentiles.then_some(self.precision)
    }
}

/// Where separate debug files of stripped binaries come from, for the commands that name
/// user frames (`profile`, `stackcount`, `offcpu`, `trace`, `top`): local build-ID
/// directories first, then the debuginfod servers of `$DEBUGINFOD_URLS`.
#[derive(Debug, Args)]
pub struct SymbolArgs {
    /// Never ask debuginfod servers ($DEBUGINFOD_URLS) for debug files; use local ones only
    #[arg(long)]
    pub offline: bool,
    /// The most a run waits for debuginfod servers, over all requests [default:
    /// $DEBUGINFOD_TIMEOUT, else 5]
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds, conflicts_with = "offline")]
    pub debuginfod_timeout: Option<f64>,
}

impl SymbolArgs {
    /// `options` with these flags' debug-file lookup.
    pub fn apply(&self, mut options: RunOptions) -> RunOptions {
        options.debug_info.offline = self.offline;
        if let Some(seconds) = self.debuginfod_timeout {
            options.debug_info.timeout = Duration::from_secs_f64(seconds);
        }
        options
    }
}

/// The block-time window of `offcpu`, `wakeuptime` and `offwaketime` (bcc's `-m`/`-M` of
/// offcputime, wakeuptime and offwaketime), in microseconds.
#[derive(Debug, Args)]
pub struct BlockTimeArgs {
    /// Only blocks of at least US microseconds
    #[arg(
        short = 'm',
        long = "min-block-time",
        alias = "min-us",
        value_name = "US"
    )]
    pub min_us: Option<u64>,
    /// Only blocks of at most US microseconds
    #[arg(
        short = 'M',
        long = "max-block-time",
        alias = "max-us",
        value_name = "US"
    )]
    pub max_us: Option<u64>,
}

/// Which stacks `offcpu` and `stackcount` take (bcc's `-K`/`-U`), and report rows.
#[derive(Debug, Args)]
pub struct StackArgs {
    /// Kernel stacks only (the default takes both)
    #[arg(
        short = 'K',
        long = "kernel-stack",
        alias = "kernel-only",
        conflicts_with = "user_only"
    )]
    pub kernel_only: bool,
    /// User stacks only
    #[arg(short = 'U', long = "user-stack", alias = "user-only")]
    pub user_only: bool,
    /// Rows in the text report
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub top: usize,
    #[command(flatten)]
    pub unwind: UnwindArgs,
}

/// The tables' ceiling: every shard of `UNWIND_SHARDS` full (8-byte rows).
const MAX_TABLE_BUDGET_MIB: u64 = (MAX_SHARDS as u64 * SHARD_ROWS as u64 * 8) >> 20;

/// How user stacks are walked, for every command that takes them (`profile`, `stackcount`,
/// `offcpu`, `trace -U`).
#[derive(Debug, Args)]
pub struct UnwindArgs {
    /// How to walk user stacks: `dwarf` unwinds in the kernel from .eh_frame tables (the
    /// default where the kernel can), `fp` follows frame pointers
    #[arg(long, value_name = "MODE")]
    pub call_graph: Option<CallGraphArg>,
    /// Kernel memory for the DWARF unwinder's tables, in MiB (1 to 512); binaries whose
    /// tables do not fit are walked by frame pointers (`-v` names them)
    #[arg(long, value_name = "MIB", default_value_t = DEFAULT_TABLE_BUDGET_BYTES >> 20,
          value_parser = clap::value_parser!(u64).range(1..=MAX_TABLE_BUDGET_MIB))]
    pub unwind_table_budget: u64,
    /// Keep interpreters' eval loops as native frames (`_PyEval_EvalFrameDefault`) instead
    /// of the Python functions they run
    #[arg(long)]
    pub no_interpreters: bool,
}

impl UnwindArgs {
    /// `--call-graph`, in the library's terms. Every stack command asks for it before it
    /// loads its unwinder, so `--no-interpreters` takes effect here too.
    pub fn call_graph(&self) -> Option<CallGraph> {
        if self.no_interpreters {
            tracekit::unwind::interp::disable();
        }
        self.call_graph.map(CallGraph::from)
    }

    /// `--unwind-table-budget`, in bytes.
    pub fn budget_bytes(&self) -> u64 {
        self.unwind_table_budget << 20
    }
}

/// `--call-graph` as perf spells it (clap stays out of the library's [`CallGraph`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CallGraphArg {
    /// Follow frame pointers (the kernel's own walk)
    Fp,
    /// Unwind in the kernel from .eh_frame / .debug_frame tables
    Dwarf,
}

impl From<CallGraphArg> for CallGraph {
    fn from(arg: CallGraphArg) -> Self {
        match arg {
            CallGraphArg::Fp => CallGraph::Fp,
            CallGraphArg::Dwarf => CallGraph::Dwarf,
        }
    }
}

impl StackArgs {
    /// The stack fields to key by: `kstack`, `ustack`, or both, prefixed (`start.`).
    pub fn fields(&self, prefix: &str) -> Vec<String> {
        let mut fields = Vec::new();
        if !self.user_only {
            fields.push(format!("{prefix}kstack"));
        }
        if !self.kernel_only {
            fields.push(format!("{prefix}ustack"));
        }
        fields
    }
}

/// Parses the entries of a kernel hash map (`--max-groups`): 1 to
/// [`tracekit::bpf::MAX_HASH_ENTRIES`], what the kernel creates.
pub fn parse_hash_entries(text: &str) -> std::result::Result<u32, String> {
    text.trim()
        .parse::<u32>()
        .ok()
        .and_then(|n| tracekit::bpf::hash_entries("", n).ok())
        .ok_or_else(tracekit::bpf::hash_entries_range)
}

/// The shortest `-i`/`-d`: 10 ms, perf's minimum for `-I` (each interval reads and prints
/// every group, so shorter intervals measure tracekit itself).
pub const MIN_SECONDS: f64 = 0.01;
/// The longest `-i`/`-d`: about 31 years.
pub const MAX_SECONDS: f64 = 1e9;

/// Parses a number of seconds, fractions allowed: [`MIN_SECONDS`] to [`MAX_SECONDS`].
pub fn parse_seconds(text: &str) -> std::result::Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(seconds) if (MIN_SECONDS..=MAX_SECONDS).contains(&seconds) => Ok(seconds),
        _ => Err(format!(
            "expected seconds from {MIN_SECONDS} (10 ms) to {MAX_SECONDS:.0}, like 10 or 0.5"
        )),
    }
}

/// Parses a time offset in seconds, 0 or more (`report --from/--to`).
pub fn parse_seconds_from_zero(text: &str) -> std::result::Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds >= 0.0 => Ok(seconds),
        _ => Err("expected seconds from 0, like 3 or 3.12".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_key_takes_one_or_two_pairs() {
        assert_eq!(
            parse_last_key("cpu_id=cpu").unwrap().0,
            vec![("cpu_id".to_string(), "cpu".to_string())]
        );
        assert_eq!(
            parse_last_key("pid, tid").unwrap().0,
            vec![
                ("pid".to_string(), "pid".to_string()),
                ("tid".to_string(), "tid".to_string())
            ]
        );
        assert!(parse_last_key("a,b,c").is_err());
        assert!(parse_last_key("cpu=").is_err());
        let last = LastArgs {
            last: Some("power:cpu_frequency".into()),
            last_key: None,
        };
        let start = last.apply(Request::probe("x:y")).start.unwrap();
        assert!(start.keep);
        assert_eq!(start.end_pair, vec!["cpu".to_string()]);
        assert_eq!(start.probes[0].pair, vec!["cpu".to_string()]);
    }

    #[test]
    fn contradicting_scopes_are_refused() {
        let scope = ScopeArgs {
            all: false,
            pids: vec![1],
            cgroup: None,
            command: vec!["ls".into()],
        };
        assert_eq!(
            scope.scope().unwrap_err().to_string(),
            "choose one scope: -a (every process), -p PID (running processes) \
             or -- CMD (a command to start)"
        );
    }

    #[test]
    fn seconds_must_be_positive() {
        assert_eq!(parse_seconds("0.5"), Ok(0.5));
        assert_eq!(parse_seconds("0.01"), Ok(0.01));
        for bad in ["0", "-3", "ten", "1e-9", "0.009", "NaN", "inf", "2e9"] {
            assert_eq!(
                parse_seconds(bad),
                Err("expected seconds from 0.01 (10 ms) to 1000000000, like 10 or 0.5".into()),
                "{bad}"
            );
        }
    }

    #[test]
    fn map_sizes_are_what_the_kernel_creates() {
        assert_eq!(parse_hash_entries("1"), Ok(1));
        assert_eq!(parse_hash_entries("134217728"), Ok(134_217_728));
        for bad in ["0", "134217729", "2000000000", "-1", "99999999999", "x"] {
            assert_eq!(
                parse_hash_entries(bad),
                Err(
                    "expected 1 to 134217728 entries (the largest hash map the kernel makes)"
                        .into()
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn unwind_table_ceiling() {
        assert_eq!(MAX_TABLE_BUDGET_MIB, 512);
    }
}
