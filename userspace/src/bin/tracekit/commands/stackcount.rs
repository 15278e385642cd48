//! `tracekit stackcount`: how often each stack led to an event (bcc's `stackcount`), for any
//! probe kind, counted in the kernel by (pid, comm, kernel stack, user stack); written as
//! `profile` writes (report, folded stacks, flame graph, JSON).

use clap::Args as ClapArgs;
use tracekit::{
    Result,
    engine::request::{KeyField, Request},
    jobs::stacks::{self, Labels, ReportOptions, Weight},
};

use crate::cli::{ProbeArgs, StackArgs, SymbolArgs};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit stackcount software:page-faults -- ./app       # who faults memory in
  tracekit stackcount t:sched:sched_switch -d 5 -o cs.svg # context switches, flame graph
  tracekit stackcount kprobe:tcp_sendmsg -K -o send.folded
  tracekit stackcount uprobe:libc:malloc -p 1234";

/// `tracekit stackcount`.
#[derive(Debug, ClapArgs)]
#[command(about = "Count the stacks that led to an event (bcc stackcount)", after_help = EXAMPLES)]
pub struct Args {
    /// The event: a tracepoint, a function probe, or software:EVENT (page-faults,
    /// context-switches, ...)
    pub probe: String,
    /// Only events for which EXPR holds
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    #[command(flatten)]
    pub stacks: StackArgs,
    #[command(flatten)]
    pub probing: ProbeArgs,
    #[command(flatten)]
    pub symbols: SymbolArgs,
}

/// Runs `tracekit stackcount`.
pub fn run(args: Args, verbose: u8) -> Result<()> {
    let mut by = vec![KeyField::new("pid"), KeyField::new("comm")];
    by.extend(args.stacks.fields("").into_iter().map(KeyField::new));
    let request = Request {
        by,
        filter: args.filter.clone(),
        ..args.probing.request(vec![args.probe.clone()])
    };
    let labels = Labels {
        tool: "stackcount",
        event: "{probes}".into(),
        unit: "events",
        banner: "stacks of {probes}".into(),
    };
    let report = ReportOptions {
        top: args.stacks.top,
        inlined: true,
        lines: false,
        inverted: false,
        folded: false,
    };
    let options = args.symbols.apply(args.probing.run_options(verbose)?);
    if args.stacks.user_only {
        options.refuse_kernel_threads("so --user-only finds no stack")?;
    }
    stacks::engine(
        &request,
        Weight::Count,
        args.stacks.unwind.call_graph(),
        args.stacks.unwind.budget_bytes(),
        &labels,
        report,
        &options,
    )
}
