//! `tracekit bitesize`: block I/O size histograms per process (perf-tools' and bcc's
//! `bitesize`), the preset [`tracekit::jobs::presets::bitesize`].

use clap::Args as ClapArgs;
use tracekit::{
    Result,
    jobs::{aggregate, presets},
};

use crate::cli::{Common, MapArgs};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit bitesize                 # block I/O size histograms per process until Ctrl-C
  tracekit bitesize --disk vda -d 10
  tracekit bitesize -- dd if=/dev/zero of=f bs=64k count=512 oflag=direct";

/// `tracekit bitesize`.
#[derive(Debug, ClapArgs)]
#[command(about = "Block I/O size histograms per process (perf-tools/bcc bitesize)", after_help = EXAMPLES)]
pub struct Args {
    /// Only I/O to this disk (a name under /sys/block, e.g. vda, nvme0n1)
    #[arg(long, value_name = "NAME")]
    pub disk: Option<String>,
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub maps: MapArgs,
}

/// Runs `tracekit bitesize`.
pub fn run(args: Args, verbose: u8) -> Result<()> {
    let job = presets::bitesize(&presets::BitesizeOptions {
        disk: args.disk,
        maps: args.maps.sizes(),
    })?;
    aggregate::run(job, &args.common.run_options(verbose)?)
}
