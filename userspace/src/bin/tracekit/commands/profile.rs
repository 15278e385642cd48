//! `tracekit profile`: samples on-CPU stacks, counts them in the kernel, and reports the
//! hottest functions, folded stacks, a flame graph, or JSON (`perf record -g` + flame graph,
//! bcc `profile`).

use clap::Args as ClapArgs;
use tracekit::{
    Result,
    jobs::stacks::{self, Labels, ReportOptions, Sampling},
    output::Format,
};
use tracekit_common::cpu_sampler::{DEFAULT_COUNT_MAP_ENTRIES, DEFAULT_STACK_MAP_ENTRIES};

use crate::cli::{Common, SymbolArgs, UnwindArgs, parse_hash_entries};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit profile                           # all processes until Ctrl-C; top 20 functions
  tracekit profile -a -d 10 -o profile.svg   # whole machine for 10 s; flame graph
  tracekit profile -F 999 -p 1234,1235 -d 5  # two processes at 999 Hz for 5 s
  tracekit profile -o app.folded -- ./app    # run ./app; folded stacks until it exits
  tracekit profile -d 30 -i 5                # report every 5 s for 30 s
  tracekit profile -K -d 5 --json            # kernel stacks only, as JSON
  tracekit profile --by line -- ./app        # also the hottest source lines (DWARF)
  tracekit profile --by cgroup -o cg.svg     # flame graph rooted at each cgroup (container)
  tracekit profile --call-graph fp -p 1234   # frame-pointer stacks (no unwind tables)
  tracekit profile -a -d 30 -o p.json -o p.heatmap.svg
                                             # subsecond heat map + the profile to slice
  tracekit report p.json --from 12.2 --to 12.4 -o slice.svg
                                             # flame graph of one heat map cell's time
  tracekit profile -d 5 --inverted -o icicle.svg  # icicle graph (roots at the top)

Output by -o FILE's extension (-o may be given several times, all from one profile):
.txt (report), .folded (flamegraph.pl/inferno input), .svg (flame graph), .json (what
`tracekit report` re-renders), .pb.gz (pprof), .heatmap.svg (subsecond heat map: one column
per second, one row per 20 ms; implies --heatmap), .speedscope.json (speedscope),
.trace.json (Chrome trace event format), .otlp.pb (an OpenTelemetry profiles export request,
as the exporter's --otlp-endpoint sends it). Kernel frames in folded stacks end in _[k].
User stacks are unwound in the kernel from .eh_frame tables (--call-graph dwarf, the
default), so programs built without frame pointers show whole stacks; -v says which
mappings fell back to frame pointers and why.
--by cgroup counts samples by the thread's cgroup v2 path in the kernel: folded stacks and
flame graphs start with it (/system.slice/nginx.service;nginx;main;...), the report gets a
Cgroup column, JSON stacks a \"cgroup\" field, pprof samples their cgroup label.
--by line adds, after the text report, the hottest lines of the hottest functions: each
sample's leaf by file:line from DWARF line tables (perf's -g srcline, perf annotate's use).";

/// What `profile --by` breaks samples down by, besides stacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProfileKey {
    /// The source line (file:line, from DWARF) of the instruction each sample ran.
    Line,
    /// The cgroup v2 path of the sampled thread (container, systemd service), counted in
    /// the kernel: the root frame of folded stacks and flame graphs, a Cgroup column in the
    /// report, a `cgroup` field in JSON.
    Cgroup,
}

/// `tracekit profile`.
#[derive(Debug, ClapArgs)]
#[command(about = "Sample on-CPU stacks (perf record -g + flame graph, bcc profile)", after_help = EXAMPLES)]
pub struct Args {
    /// Sample at HZ samples per second per CPU
    #[arg(
        short = 'F',
        long = "frequency",
        value_name = "HZ",
        default_value_t = 99
    )]
    pub frequency: u64,
    #[command(flatten)]
    pub common: Common,
    /// Record kernel stacks only (the default records both)
    #[arg(short = 'K', long = "kernel-stack", alias = "kernel-only", conflicts_with = "user_only")]
    pub kernel_only: bool,
    /// Record user stacks only
    #[arg(short = 'U', long = "user-stack", alias = "user-only")]
    pub user_only: bool,
    #[command(flatten)]
    pub unwind: UnwindArgs,
    /// Also count samples of idle CPUs (the swapper task, pid 0)
    #[arg(long)]
    pub include_idle: bool,
    /// Do not show inlined functions as frames (skips reading DWARF line tables)
    #[arg(long)]
    pub no_inline: bool,
    /// Count samples per 20 ms time slice in the kernel, for subsecond heat maps
    /// (.heatmap.svg) and `tracekit report --from/--to`; the JSON keeps the slices
    #[arg(long)]
    pub heatmap: bool,
    /// Draw the flame graph as an icicle graph: roots at the top, callees below
    #[arg(long)]
    pub inverted: bool,
    /// Rows in the text report
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub top: usize,
    /// Also report samples by KEY (comma-separated): `line` adds the hottest source lines
    /// of the hottest functions to the text report; `cgroup` splits stacks by the thread's
    /// cgroup v2 path, the root frame of folded stacks and flame graphs
    #[arg(long, value_name = "KEY", value_enum, value_delimiter = ',')]
    pub by: Vec<ProfileKey>,
    /// Distinct stacks the kernel keeps, 1 to 134217728; each costs ~1 KiB of kernel memory,
    /// allocated up front
    #[arg(long, value_name = "N", default_value_t = DEFAULT_STACK_MAP_ENTRIES,
          value_parser = parse_hash_entries)]
    pub stack_storage_size: u32,
    /// Distinct (pid, comm, stacks) keys the kernel counts, 1 to 134217728
    #[arg(long, value_name = "N", default_value_t = DEFAULT_COUNT_MAP_ENTRIES,
          value_parser = parse_hash_entries)]
    pub count_map_size: u32,
    #[command(flatten)]
    pub symbols: SymbolArgs,
}

/// Runs `tracekit profile`.
pub fn run(args: Args, verbose: u8) -> Result<()> {
    let options = args.symbols.apply(args.common.run_options(verbose)?);
    let heatmap_file = options
        .output
        .iter()
        .chain(&options.more_outputs)
        .any(|path| Format::from_path(path).ok() == Some(Format::Heatmap));
    let sampling = Sampling {
        frequency_hz: args.frequency,
        include_idle: args.include_idle,
        kernel_stacks: !args.user_only,
        user_stacks: !args.kernel_only,
        call_graph: args.unwind.call_graph(),
        unwind_budget_bytes: args.unwind.budget_bytes(),
        stack_map_entries: args.stack_storage_size,
        count_map_entries: args.count_map_size,
        by_cgroup: args.by.contains(&ProfileKey::Cgroup),
        time_slices: args.heatmap || heatmap_file,
    };
    let labels = Labels {
        tool: "profile",
        event: "cpu-clock".into(),
        unit: "samples",
        banner: String::new(),
    };
    let report = ReportOptions {
        top: args.top,
        inlined: !args.no_inline,
        lines: args.by.contains(&ProfileKey::Line),
        inverted: args.inverted,
        folded: false,
    };
    let options = args.symbols.apply(args.common.run_options(verbose)?);
    if args.user_only {
        options.refuse_kernel_threads("so --user-only finds no stack")?;
    }
    stacks::profile(&sampling, &labels, report, &options)
}
