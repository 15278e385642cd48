//! `tracekit runqlat`: run queue (scheduler) latency, the time a task waits runnable before
//! it runs, as a log2 histogram (bcc's `runqlat`), the preset
//! [`tracekit::jobs::presets::runqlat`].

use clap::Args as ClapArgs;
use tracekit::{
    Error, Result,
    jobs::{aggregate, presets},
    session::Scope,
};

use crate::cli::{Common, MapArgs, PercentileArgs, TimeUnit};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit runqlat -d 10               # how long runnable tasks waited for a CPU, in us
  tracekit runqlat --unit ms -i 1      # a histogram every second
  tracekit runqlat --tids -d 5         # one histogram per thread
  tracekit runqlat -- make -j8         # every task's wait while make runs
  tracekit runqlat --percentiles -d 10 # p50, p90, p99, p99.9, max
  tracekit runqlat -i 1 -d 60 -o heat.svg  # heat map: a column per second

Measured from wakeup (sched_wakeup, sched_wakeup_new) or preemption (sched_switch of a
runnable task) to the task's next sched_switch onto a CPU.";

/// `tracekit runqlat`.
#[derive(Debug, ClapArgs)]
#[command(
    about = "Run queue latency histogram: how long runnable tasks wait for a CPU (bcc runqlat)",
    after_help = EXAMPLES
)]
pub struct Args {
    /// Unit of the histogram
    #[arg(long, value_enum, default_value_t = TimeUnit::Us)]
    pub unit: TimeUnit,
    /// One histogram per thread (bcc runqlat -L; tracekit's -L is syscount's --latency)
    #[arg(long)]
    pub tids: bool,
    #[command(flatten)]
    pub percentiles: PercentileArgs,
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub maps: MapArgs,
}

/// Runs `tracekit runqlat`.
pub fn run(args: Args, verbose: u8) -> Result<()> {
    let options = args.common.run_options(verbose)?;
    if let Scope::Pids(_) = options.scope {
        return Err(Error::usage(
            "runqlat -p: run queue latency is recorded in the waker's and the scheduler's \
             context, not the task's; it measures every task (use -a, or -- CMD to measure \
             while CMD runs)",
        ));
    }
    let job = presets::runqlat(&presets::RunqlatOptions {
        unit: args.unit.latency(),
        per_thread: args.tids,
        maps: args.maps.sizes(),
    })
    .percentiles(args.percentiles.precision(), "")?;
    aggregate::run(job, &options)
}
