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
  tracekit list --fields kprobe:vfs_read         # a kernel function's BTF parameters
  tracekit list usdt:postgres                    # the USDT probes of a binary, with arguments
  tracekit list 'usdt:libc:*'                    # USDT probes by wildcard
  tracekit list usdt -p 1234                     # the USDT probes of every file pid 1234 maps
  tracekit list --fields usdt:postgres:transaction__commit   # its arguments (arg0..argN)";

/// `tracekit list`.
#[derive(Debug, ClapArgs)]
#[command(
    about = "List events and probes: hardware, software, tracepoints, kernel functions, USDT (perf list)",
    after_help = EXAMPLES
)]
pub struct Args {
    /// Only names matching GLOB (`block:*`, `*page*`, `vfs_*`), or one class as in perf
    /// list: `hw`/`hardware`, `sw`/`software`, `tracepoint`; `usdt:BINARY[:PROVIDER:NAME]`
    /// (or `usdt` with -p) lists USDT probes
    pub glob: Option<String>,
    /// Show the fields of PROBE (a tracepoint, function or USDT probe) with their types
    #[arg(long, value_name = "PROBE", conflicts_with = "glob")]
    pub fields: Option<String>,
    /// Resolve USDT binaries in this process's maps; `list usdt -p PID` lists the probes of
    /// every file it maps
    #[arg(short = 'p', long = "pid", value_name = "PID")]
    pub pid: Option<u32>,
}

/// Runs `tracekit list`.
pub fn run(args: Args, _verbose: u8) -> Result<()> {
    let text = match (&args.fields, args.glob.as_deref()) {
        (Some(probe), _) => list::fields(probe, args.pid)?,
        (None, Some(glob)) if list::is_usdt(glob) => list::usdt_probes(glob, args.pid)?,
        (None, glob) => {
            if args.pid.is_some() {
                return Err(tracekit::Error::usage(
                    "list -p PID: -p selects USDT probes (list usdt -p PID, list usdt:BINARY -p PID)",
                ));
            }
            list::events(glob)?
        }
    };
    tracekit::jobs::print(&text)
}
