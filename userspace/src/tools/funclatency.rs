//! `tracekit funclatency`: a log2 histogram of a function's latency, entry to return
//! (bcc's `funclatency`), the preset [`tracekit::jobs::presets::funclatency`].

use clap::Args as ClapArgs;
use tracekit::{
    Result,
    jobs::{aggregate, presets},
};

use crate::cli::{PercentileArgs, ProbeArgs, TimeUnit};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit funclatency vfs_read -d 5           # kernel function, in us
  tracekit funclatency --unit ms libc:nanosleep -p 1234
  tracekit funclatency ./app:handle -- ./app
  tracekit funclatency --percentiles vfs_read -d 5   # p50, p90, p99, p99.9, max
  tracekit funclatency vfs_read -i 1 -d 60 -o heat.svg  # heat map, a column per second";

/// `tracekit funclatency`.
#[derive(Debug, ClapArgs)]
#[command(about = "Histogram of a function's latency, entry to return (bcc funclatency)", after_help = EXAMPLES)]
pub struct Args {
    /// The function: kernel (`vfs_read`) or user (`libc:nanosleep`, `/path/app:fn`)
    pub function: String,
    /// Unit of the histogram
    #[arg(long, value_enum, default_value_t = TimeUnit::Us)]
    pub unit: TimeUnit,
    #[command(flatten)]
    pub percentiles: PercentileArgs,
    #[command(flatten)]
    pub probing: ProbeArgs,
}

/// Runs `tracekit funclatency`.
pub fn run(args: Args, verbose: u8) -> Result<()> {
    let job = presets::funclatency(&presets::FunctionOptions {
        unit: args.unit.latency(),
        maps: args.probing.maps.sizes(),
        target: args.probing.target.target(&args.probing.common.scope),
        patterns: vec![args.function],
        ..Default::default()
    })?
    .percentiles(args.percentiles.precision(), "")?;
    aggregate::run(job, &args.probing.run_options(verbose)?)
}
