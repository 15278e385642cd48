//! `tracekit stat`: counts of perf events for a command, processes, or the whole machine,
//! in the layout of `perf stat`; hardware counters the machine lacks print `<not
//! supported>`, as perf prints them.

use clap::Args as ClapArgs;
use tracekit::{
    Result,
    jobs::stat::{self, StatOptions},
};

use crate::cli::Common;

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit stat -- ./app                          # perf stat's default events for ./app
  tracekit stat -a -d 5                           # the whole machine for 5 s
  tracekit stat -e 'syscalls:sys_enter_*' -a -d 5 # every syscall tracepoint, sorted
  tracekit stat -e page-faults,cs -p 1234 -i 1    # per-second counts of one process
  tracekit stat -e cycles,instructions -- ./app   # IPC, where the hardware counts it
  tracekit stat -d 1 -o stat.json                 # the report as JSON in a file";

/// `tracekit stat`.
#[derive(Debug, ClapArgs)]
#[command(
    about = "Count events with perf counters: software, hardware, tracepoints (perf stat)",
    after_help = EXAMPLES
)]
pub struct Args {
    /// Events: perf names (task-clock, page-faults, cycles, ...) and tracepoints
    /// (SYSTEM:EVENT, wildcards allowed); comma-separated or repeated
    #[arg(
        short = 'e',
        long = "event",
        value_name = "EVENT",
        value_delimiter = ','
    )]
    pub events: Vec<String>,
    /// Also show tracepoints that counted zero
    #[arg(long = "all")]
    pub show_zero: bool,
    /// perf's interval flag, in milliseconds (same as -i MS/1000)
    #[arg(short = 'I', value_name = "MS", conflicts_with = "interval")]
    pub interval_ms: Option<u64>,
    #[command(flatten)]
    pub common: Common,
}

/// Runs `tracekit stat`.
pub fn run(args: Args, verbose: u8) -> Result<()> {
    let mut options = args.common.run_options(verbose)?;
    if let Some(ms) = args.interval_ms {
        options.interval = Some(std::time::Duration::from_millis(ms));
    }
    let stat = StatOptions {
        events: args.events,
        show_zero: args.show_zero,
    };
    stat::run(&stat, &options)
}
