//! `tracekit top`: a live view of the hottest functions (`perf top`), or of any probe's
//! counts grouped by process (`-e`).

use std::time::Duration;

use clap::Args as ClapArgs;
use tracekit::{
    Result,
    engine::request::Request,
    jobs::top::{self, TopOptions},
};

use crate::cli::{MapArgs, ScopeArgs, SymbolArgs, TargetArgs, parse_seconds};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit top                                    # hottest functions, refreshed every second
  tracekit top --sort comm,dso                    # by process and binary (perf top -ns comm,dso)
  tracekit top -p 1234 -F 999
  tracekit top -e raw_syscalls:sys_enter --sort comm   # system calls by process
  tracekit top -e block:block_rq_issue --sort comm     # who does disk I/O
  tracekit top -d 10 | tee top.log                # piped: one snapshot per interval";

/// `tracekit top`.
#[derive(Debug, ClapArgs)]
#[command(
    about = "Live view of the hottest functions, or of any event's counts (perf top)",
    after_help = EXAMPLES
)]
pub struct Args {
    /// Sample at HZ samples per second per CPU
    #[arg(
        short = 'F',
        long = "frequency",
        value_name = "HZ",
        default_value_t = 99
    )]
    pub frequency: u64,
    /// Count this probe instead of sampling CPUs (a tracepoint or function probe)
    #[arg(short = 'e', long = "event", value_name = "PROBE")]
    pub event: Option<String>,
    /// Group by these keys: sym, dso, comm, pid (comm and pid with -e)
    #[arg(
        long,
        value_name = "KEY[,KEY...]",
        value_delimiter = ',',
        default_value = "dso,sym"
    )]
    pub sort: Vec<String>,
    /// Rows shown
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub top: usize,
    /// Refresh every SECONDS
    #[arg(short = 'i', long = "interval", value_name = "SECONDS", default_value_t = 1.0,
          value_parser = parse_seconds)]
    pub interval: f64,
    /// Stop after SECONDS
    #[arg(short = 'd', long = "duration", value_name = "SECONDS", value_parser = parse_seconds)]
    pub duration: Option<f64>,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub maps: MapArgs,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub symbols: SymbolArgs,
}

/// Runs `tracekit top`.
pub fn run(args: Args, verbose: u8) -> Result<()> {
    let options = tracekit::jobs::RunOptions {
        scope: args.scope.scope()?,
        cgroup: args.scope.cgroup()?,
        duration: args.duration.map(Duration::from_secs_f64),
        interval: Some(Duration::from_secs_f64(args.interval)),
        output: None,
        more_outputs: Vec::new(),
        json: false,
        verbose,
        debug_info: Default::default(),
    };
    let options = args.symbols.apply(options);
    let top = TopOptions {
        frequency_hz: args.frequency,
        request: Request {
            maps: args.maps.sizes(),
            target: args.target.target(&args.scope),
            ..Request::count(Vec::new())
        },
        event: args.event,
        sort: args.sort,
        top: args.top,
    };
    top::run(&top, &options)
}
