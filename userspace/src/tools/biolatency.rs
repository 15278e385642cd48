//! `tracekit biolatency`: block I/O latency from issue (or queue insertion) to completion,
//! as a log2 histogram (bcc's `biolatency`), the preset
//! [`tracekit::jobs::presets::biolatency`].

use clap::Args as ClapArgs;
use tracekit::{
    Result,
    jobs::{aggregate, presets},
};

use crate::cli::{Common, MapArgs, PercentileArgs, TimeUnit};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit biolatency -d 10            # block I/O latency, issue to completion, in us
  tracekit biolatency --unit ms --per-disk
  tracekit biolatency --queued -i 1    # from insertion in the queue, every second
  tracekit biolatency --percentiles    # p50, p90, p99, p99.9, max (buckets 6% wide)
  tracekit biolatency -i 1 -d 60 -o heat.svg  # latency heat map, one column a second";

/// `tracekit biolatency`.
#[derive(Debug, ClapArgs)]
#[command(about = "Block I/O latency histogram, issue to completion (bcc biolatency)", after_help = EXAMPLES)]
pub struct Args {
    /// Unit of the histogram
    #[arg(long, value_enum, default_value_t = TimeUnit::Us)]
    pub unit: TimeUnit,
    /// One histogram per disk
    #[arg(long)]
    pub per_disk: bool,
    /// Measure from insertion in the I/O queue (block_rq_insert) instead of issue to the device
    #[arg(long)]
    pub queued: bool,
    /// Only I/O to this disk (a name under /sys/block)
    #[arg(long, value_name = "NAME")]
    pub disk: Option<String>,
    #[command(flatten)]
    pub percentiles: PercentileArgs,
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub maps: MapArgs,
}

/// Runs `tracekit biolatency`.
pub fn run(args: Args, verbose: u8) -> Result<()> {
    let job = presets::biolatency(&presets::BiolatencyOptions {
        unit: args.unit.latency(),
        per_disk: args.per_disk,
        queued: args.queued,
        disk: args.disk,
        maps: args.maps.sizes(),
    })?
    .percentiles(args.percentiles.precision(), "")?;
    aggregate::run(job, &args.common.run_options(verbose)?)
}
