//! `tracekit wakeuptime`: time blocked, by the kernel stack that woke the task (bcc's and
//! libbpf-tools' `wakeuptime`), the request [`tracekit::jobs::tools::wakeuptime`].

use clap::Args as ClapArgs;
use tracekit::{
    Result,
    jobs::{
        tools::wakeuptime,
        stacks::{self, Labels, ReportOptions, Weight},
    },
};

use crate::cli::{BlockTimeArgs, Common, MapArgs, SymbolArgs};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit wakeuptime -- ./app                    # who woke ./app's threads, in microseconds
  tracekit wakeuptime -p 1234 -d 10 -o wake.svg   # flame graph of the wakers' stacks
  tracekit wakeuptime -m 1000 -a -d 5              # only blocks of 1 ms or more, every task

A sleeping task (S or D) leaving the CPU starts the clock; its sched_waking stops it, in the
waker's context: the stack shown is the waker's kernel stack, the pid and comm the woken
task's. -p and -- CMD select the woken tasks; the wakers are any task.";

/// `tracekit wakeuptime`.
#[derive(Debug, ClapArgs)]
#[command(
    about = "Time blocked, by the kernel stack that woke the task (bcc wakeuptime)",
    after_help = EXAMPLES
)]
pub struct Args {
    #[command(flatten)]
    pub block_time: BlockTimeArgs,
    /// Rows in the text report
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub top: usize,
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub maps: MapArgs,
    #[command(flatten)]
    pub symbols: SymbolArgs,
}

/// Runs `tracekit wakeuptime`.
pub fn run(args: Args, verbose: u8) -> Result<()> {
    let request = wakeuptime::wakeuptime(&wakeuptime::WakeuptimeOptions {
        min_us: args.block_time.min_us,
        max_us: args.block_time.max_us,
        maps: args.maps.sizes(),
    })?;
    let labels = Labels {
        tool: "wakeuptime",
        event: "blocked time by waker (sched:sched_waking)".into(),
        unit: "us",
        banner: "blocked time by waker stack".into(),
    };
    let report = ReportOptions {
        top: args.top,
        inlined: true,
        lines: false,
        inverted: false,
        folded: false,
    };
    let options = args.symbols.apply(args.common.run_options(verbose)?);
    stacks::engine(
        &request,
        Weight::SumMicros,
        None,
        0,
        &labels,
        report,
        &options,
    )
}
