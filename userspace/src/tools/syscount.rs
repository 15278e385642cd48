//! `tracekit syscount`: syscalls counted by name (bcc's `syscount`), the preset
//! [`tracekit::jobs::presets::syscount`].

use clap::Args as ClapArgs;
use tracekit::{
    Result,
    jobs::{aggregate, presets},
};

use crate::cli::{Common, MapArgs, PercentileArgs, ProcessKey};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit syscount -d 5               # top 10 syscalls of the machine
  tracekit syscount -p 1234 --latency  # with total and average time per syscall
  tracekit syscount --failures --by comm
  tracekit syscount -- ./app           # run ./app and count its syscalls
  tracekit syscount --latency --percentiles -- ./app  # p50..p99.9 per syscall, in us";

/// `tracekit syscount`.
#[derive(Debug, ClapArgs)]
#[command(about = "Count syscalls by name, with latency or failures (bcc syscount)", after_help = EXAMPLES)]
pub struct Args {
    /// Also group by process name or pid
    #[arg(long, value_enum)]
    pub by: Option<ProcessKey>,
    /// Show total and average time in each syscall (microseconds)
    #[arg(long, short = 'L')]
    pub latency: bool,
    /// Count only calls that returned an error
    #[arg(long, short = 'x')]
    pub failures: bool,
    /// Show the N most frequent
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
    #[command(flatten)]
    pub percentiles: PercentileArgs,
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub maps: MapArgs,
}

/// Runs `tracekit syscount`.
pub fn run(args: Args, verbose: u8) -> Result<()> {
    let job = presets::syscount(&presets::SyscountOptions {
        by: args.by.map(ProcessKey::field),
        latency: args.latency,
        failures: args.failures,
        top: args.top,
        maps: args.maps.sizes(),
    })
    .percentiles(args.percentiles.precision(), "usecs")?;
    aggregate::run(job, &args.common.run_options(verbose)?)
}
