//! `tracekit offcpu`: time spent blocked, by stack (bcc/libbpf-tools' `offcputime`), the
//! request [`tracekit::jobs::tools::offcpu`].

use clap::Args as ClapArgs;
use tracekit::{
    Result,
    jobs::{
        tools::offcpu,
        stacks::{self, Labels, ReportOptions, Weight},
    },
};

use crate::cli::{BlockTimeArgs, Common, MapArgs, StackArgs, SymbolArgs};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit offcpu -- ./app                        # where ./app waits, in microseconds
  tracekit offcpu -p 1234 -d 10 -o offcpu.svg     # off-CPU flame graph of pid 1234
  tracekit offcpu --state uninterruptible -a -d 5 # D-state waits (disk, locks) machine-wide
  tracekit offcpu -m 1000 -- ./app                # only waits of 1 ms or more";

/// Task states `--state` selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TaskState {
    /// TASK_INTERRUPTIBLE (S): waiting for an event, a timer, I/O readiness.
    Interruptible,
    /// TASK_UNINTERRUPTIBLE (D): waiting for disk I/O or a kernel lock.
    Uninterruptible,
}

/// `tracekit offcpu`.
#[derive(Debug, ClapArgs)]
#[command(about = "Time spent blocked, by stack (bcc offcputime)", after_help = EXAMPLES)]
pub struct Args {
    #[command(flatten)]
    pub block_time: BlockTimeArgs,
    /// Only tasks that blocked in this state (default: any, preemption included)
    #[arg(long, value_enum)]
    pub state: Option<TaskState>,
    #[command(flatten)]
    pub stacks: StackArgs,
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub maps: MapArgs,
    #[command(flatten)]
    pub symbols: SymbolArgs,
}

/// Runs `tracekit offcpu`.
pub fn run(args: Args, verbose: u8) -> Result<()> {
    let request = offcpu::offcpu(&offcpu::OffcpuOptions {
        min_us: args.block_time.min_us,
        max_us: args.block_time.max_us,
        state: args.state.map(|state| match state {
            TaskState::Interruptible => offcpu::TaskState::Interruptible,
            TaskState::Uninterruptible => offcpu::TaskState::Uninterruptible,
        }),
        kernel_stacks: !args.stacks.user_only,
        user_stacks: !args.stacks.kernel_only,
        maps: args.maps.sizes(),
    })?;
    let labels = Labels {
        tool: "offcpu",
        event: "off-CPU time (sched:sched_switch)".into(),
        unit: "us",
        banner: "off-CPU time".into(),
    };
    let report = ReportOptions {
        top: args.stacks.top,
        inlined: true,
        lines: false,
        inverted: false,
        folded: false,
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
