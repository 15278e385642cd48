//! `tracekit offcpu`: time spent blocked, by stack (bcc/libbpf-tools' `offcputime`).
//!
//! Two stages on `sched:sched_switch` (include/trace/events/sched.h): the task leaving the
//! CPU (`prev_pid`) starts, saving its pid and stacks; the same thread coming back
//! (`next_pid`) ends, and the time it was away is added to (pid, comm, stacks).

use clap::Args as ClapArgs;
use tracekit::{
    Error, Result,
    engine::request::{KeyField, Request, Start, StartProbe},
    jobs::stacks::{self, Labels, ReportOptions, Weight},
};

use crate::cli::{Common, MapArgs, StackArgs};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit offcpu -- ./app                        # where ./app waits, in microseconds
  tracekit offcpu -p 1234 -d 10 -o offcpu.svg     # off-CPU flame graph of pid 1234
  tracekit offcpu --state uninterruptible -a -d 5 # D-state waits (disk, locks) machine-wide
  tracekit offcpu --min-us 1000 -- ./app          # only waits of 1 ms or more";

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
    /// Only blocks of at least US microseconds
    #[arg(long, value_name = "US")]
    pub min_us: Option<u64>,
    /// Only blocks of at most US microseconds
    #[arg(long, value_name = "US")]
    pub max_us: Option<u64>,
    /// Only tasks that blocked in this state (default: any, preemption included)
    #[arg(long, value_enum)]
    pub state: Option<TaskState>,
    #[command(flatten)]
    pub stacks: StackArgs,
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub maps: MapArgs,
}

/// Runs `tracekit offcpu`.
pub fn run(args: Args, verbose: u8) -> Result<()> {
    if let (Some(min), Some(max)) = (args.min_us, args.max_us)
        && min > max
    {
        return Err(Error::usage(format!(
            "--min-us {min} is above --max-us {max}"
        )));
    }
    // `prev_state` bits (`__trace_sched_switch_state`, include/trace/events/sched.h): 1
    // TASK_INTERRUPTIBLE, 2 TASK_UNINTERRUPTIBLE, 0x10 EXIT_DEAD and 0x20 EXIT_ZOMBIE, the last
    // switch of an exiting thread, which never comes back.
    let start_filter = match args.state {
        None => "prev_pid != 0 && !(prev_state & 48)",
        Some(TaskState::Interruptible) => "prev_pid != 0 && prev_state & 1",
        Some(TaskState::Uninterruptible) => "prev_pid != 0 && prev_state & 2",
    };
    let bounds: Vec<String> = [
        args.min_us.map(|us| format!("latency >= {}", us * 1000)),
        args.max_us.map(|us| format!("latency <= {}", us * 1000)),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut by = vec![
        KeyField::labeled("pid", "start.pid"),
        KeyField::labeled("comm", "next_comm"),
    ];
    by.extend(args.stacks.fields("start.").into_iter().map(KeyField::new));
    let request = Request {
        start: Some(Start {
            probes: vec![
                StartProbe::new("sched:sched_switch", &["prev_pid"]).filtered(start_filter),
            ],
            end_pair: vec!["next_pid".into()],
            all_tasks: false,
            per_thread: true,
        }),
        all_tasks: true,
        value: Some("latency".into()),
        by,
        filter: (!bounds.is_empty()).then(|| bounds.join(" && ")),
        maps: args.maps.sizes(),
        ..Request::probe("sched:sched_switch")
    };
    let labels = Labels {
        tool: "offcpu",
        event: "off-CPU time (sched:sched_switch)".into(),
        unit: "us",
        banner: "off-CPU time".into(),
    };
    let report = ReportOptions {
        top: args.stacks.top,
        inlined: true,
    };
    let options = args.common.run_options(verbose)?;
    stacks::engine(&request, Weight::SumMicros, &labels, report, &options)
}
