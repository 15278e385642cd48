//! `tracekit list`: what can be traced here (`perf list`, `bpftrace -l`); `--fields` shows a
//! probe's fields and types.

use clap::Args as ClapArgs;
use tracekit::{Result, jobs::list};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit list                                  # every event; kernel functions counted
  tracekit list 'block:*'                        # the block tracepoints
  tracekit list hw                               # hardware events (also sw, tracepoint)
  tracekit list 'vfs_*'                          # kernel functions, where tracefs lists them
  tracekit list --fields block:block_rq_issue    # a tracepoint's fields, for --filter/--value
  tracekit list --fields kprobe:vfs_read         # a kernel function's BTF parameters";

/// `tracekit list`.
#[derive(Debug, ClapArgs)]
#[command(
    about = "List events and probes: hardware, software, tracepoints, kernel functions (perf list)",
    after_help = EXAMPLES
)]
pub struct Args {
    /// Only names matching GLOB (`block:*`, `*page*`, `vfs_*`), or one class as in perf
    /// list: `hw`/`hardware`, `sw`/`software`, `tracepoint`
    pub glob: Option<String>,
    /// Show the fields of PROBE (a tracepoint or function probe) with their types
    #[arg(long, value_name = "PROBE", conflicts_with = "glob")]
    pub fields: Option<String>,
}

/// Runs `tracekit list`.
pub fn run(args: Args, _verbose: u8) -> Result<()> {
    let text = match &args.fields {
        Some(probe) => list::fields(probe)?,
        None => list::events(args.glob.as_deref())?,
    };
    tracekit::jobs::print(&text)
}
