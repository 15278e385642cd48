//! `tracekit offwaketime`: time blocked, by the blocked task's stacks joined with its
//! waker's (bcc's `offwaketime`), the request [`tracekit::jobs::tools::offwaketime`].

use clap::Args as ClapArgs;
use tracekit::{
    Result,
    jobs::{
        tools::offwaketime,
        stacks::{self, Labels, ReportOptions, Weight},
    },
};

use crate::cli::{BlockTimeArgs, Common, MapArgs, StackArgs, SymbolArgs};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit offwaketime -- ./app                 # where ./app blocks and who woke it, in us
  tracekit offwaketime -p 1234 -d 10 -f         # folded stacks of pid 1234 (bcc -f)
  tracekit offwaketime -p 1234 -d 10 -o ow.svg  # off-wake flame graph
  tracekit offwaketime --tid 4321 -m 1000 -d 5  # thread 4321's blocks of 1 ms or more
  tracekit offwaketime -K -a -d 5               # kernel stacks only, every task

A sleeping task (S or D) leaving the CPU starts the clock, saving its stacks; the
sched_waking that wakes it stops it, in the waker's context: the waker's stacks join the
blocked task's, in the kernel. Folded lines read, as bcc's -f prints them:
  blocked comm;user stack;kernel stack;--;waker kernel stack;waker user stack;waker comm N
with the waker's frames leaf first (upside down above the blocked stack in a flame graph)
and N the microseconds blocked. The time is the block itself, switch-out to wakeup; the
run-queue wait after the wakeup is runqlat's. -p, --tid and -- CMD select the blocked tasks;
the wakers are any task. Kernel frames end in _[k].";

/// `tracekit offwaketime`.
#[derive(Debug, ClapArgs)]
#[command(
    about = "Time blocked, by the blocked stack and its waker's stack (bcc offwaketime)",
    after_help = EXAMPLES
)]
pub struct Args {
    #[command(flatten)]
    pub block_time: BlockTimeArgs,
    /// Only this thread blocking (bcc's -t; -t is --timestamp in tracekit)
    #[arg(long, value_name = "TID")]
    pub tid: Option<u32>,
    /// Print folded stacks (one line per stack pair, bcc's -f) instead of the report
    #[arg(short = 'f', long)]
    pub folded: bool,
    #[command(flatten)]
    pub stacks: StackArgs,
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub maps: MapArgs,
    #[command(flatten)]
    pub symbols: SymbolArgs,
}

/// Runs `tracekit offwaketime`.
pub fn run(args: Args, verbose: u8) -> Result<()> {
    let request = offwaketime::offwaketime(&offwaketime::OffwaketimeOptions {
        min_us: args.block_time.min_us,
        max_us: args.block_time.max_us,
        tid: args.tid,
        kernel_stacks: !args.stacks.user_only,
        user_stacks: !args.stacks.kernel_only,
        maps: args.maps.sizes(),
    })?;
    let labels = Labels {
        tool: "offwaketime",
        event: "blocked time by stack and waker (sched:sched_switch, sched:sched_waking)".into(),
        unit: "us",
        banner: "blocked time by stack and waker stack".into(),
    };
    let report = ReportOptions {
        top: args.stacks.top,
        inlined: true,
        lines: false,
        inverted: false,
        folded: args.folded,
    };
    let options = args.symbols.apply(args.common.run_options(verbose)?);
    if args.stacks.user_only {
        options.refuse_kernel_threads("so --user-only finds no stack")?;
    }
    stacks::engine(
        &request,
        Weight::SumMicros,
        args.stacks.unwind.call_graph(),
        args.stacks.unwind.budget_bytes(),
        &labels,
        report,
        &options,
    )
}
