//! `tracekit funclatency`: a log2 histogram of a function's latency, entry to return
//! (bcc's `funclatency`), the preset [`tracekit::jobs::presets::funclatency`].

use clap::Args as ClapArgs;
use tracekit::{
    Result,
    jobs::{aggregate, presets},
};

use crate::cli::{ProbeArgs, TimeUnit};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit funclatency vfs_read -d 5           # kernel function, in us
  tracekit funclatency --unit ms libc:nanosleep -p 1234
  tracekit funclatency ./app:handle -- ./app";

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
    })?;
    aggregate::run(job, &args.probing.run_options(verbose)?)
}
