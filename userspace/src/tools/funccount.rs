//! `tracekit funccount`: calls of kernel or user functions counted per function (bcc's
//! `funccount`), the preset [`tracekit::jobs::presets::funccount`].

use clap::Args as ClapArgs;
use tracekit::{
    Result,
    jobs::{aggregate, presets},
};

use crate::cli::{ProbeArgs, ProcessKey};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit funccount 'vfs_*' -d 5              # kernel functions matching vfs_*
  tracekit funccount 'libc:str*' -p 1234       # libc's str* functions in pid 1234
  tracekit funccount tcp_sendmsg --by comm
  tracekit funccount ./app:parse -- ./app in.txt";

/// `tracekit funccount`: a kernel or user function pattern (`vfs_read`, `vfs_*`,
/// `libc:malloc`, `/path/app:fn`), or an explicit probe spec (`k:FUNC`, `u:BINARY:FUNC`).
#[derive(Debug, ClapArgs)]
#[command(about = "Count calls of kernel or user functions (bcc funccount)", after_help = EXAMPLES)]
pub struct Args {
    /// Functions to count
    #[arg(required = true, value_name = "PATTERN")]
    pub patterns: Vec<String>,
    /// Also group by process name or pid
    #[arg(long, value_enum)]
    pub by: Option<ProcessKey>,
    /// Show the N most called
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    #[command(flatten)]
    pub probing: ProbeArgs,
}

/// Runs `tracekit funccount`.
pub fn run(args: Args, verbose: u8) -> Result<()> {
    let job = presets::funccount(&presets::FunctionOptions {
        by: args.by.map(ProcessKey::field),
        top: args.top,
        maps: args.probing.maps.sizes(),
        target: args.probing.target.target(&args.probing.common.scope),
        patterns: args.patterns,
        ..Default::default()
    })?;
    aggregate::run(job, &args.probing.run_options(verbose)?)
}
