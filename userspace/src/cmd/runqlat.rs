//! `tracekit runqlat`: run queue (scheduler) latency, the time a task waits runnable before it
//! runs, as a log2 histogram, as bcc's `runqlat`. Two engine stages on the scheduler
//! tracepoints (include/trace/events/sched.h): the start stage stores a timestamp per task at
//! `sched:sched_wakeup` and `sched:sched_wakeup_new`, and at `sched:sched_switch` for a task
//! switched out while still runnable (preempted); the main stage, at `sched:sched_switch`,
//! finds the timestamp of the task switched in and aggregates the difference.
//!
//! One start plan serves the three start tracepoints: it reads the task's pid at the offset
//! `pid` and `prev_pid` share in their formats (checked at run time), and tests
//! `prev_state` only when the event is `sched_switch`.

use tracekit::{
    Error, Result,
    engine::{
        Attach, EngineSpec, KeyColumn, KeyKind, PlanBuilder, Stage, TracepointFields,
        simple_operand,
    },
    probe::Tracepoint,
    tracefs,
};
use tracekit_common::engine::{Insn, op, operand};

use crate::{
    cli::{RunqlatArgs, Scope},
    cmd::agg::{self, Job, Report},
};

fn sched(event: &str) -> Tracepoint {
    Tracepoint {
        system: "sched".into(),
        event: event.into(),
    }
}

/// `prev_state` bits of a task that was still runnable when switched out: 0 (`R`, it yielded)
/// or `TASK_REPORT_MAX` (preempted), which has none of the low 8 state bits
/// (`__trace_sched_switch_state` in include/trace/events/sched.h).
const SLEEPING_STATES: u64 = 0xff;

/// Runs `tracekit runqlat`.
pub fn run(args: RunqlatArgs, verbose: u8) -> Result<()> {
    if let Scope::Pids(_) = args.scope.scope()? {
        return Err(Error::usage(
            "runqlat -p: run queue latency is recorded in the waker's and the scheduler's \
             context, not the task's; it measures every task (use -a, or -- CMD to measure \
             while CMD runs)",
        ));
    }
    let tracefs = tracefs::root()?;
    let wakeup = TracepointFields::read(&tracefs, &sched("sched_wakeup"))?;
    let wakeup_new = TracepointFields::read(&tracefs, &sched("sched_wakeup_new"))?;
    let switch = TracepointFields::read(&tracefs, &sched("sched_switch"))?;

    let pid = wakeup.operand("pid")?;
    let mut start_tracepoints = vec![sched("sched_wakeup"), sched("sched_wakeup_new")];
    if wakeup_new.operand("pid")? != pid {
        start_tracepoints.pop();
        log::warn!(
            "sched_wakeup_new's pid is not where sched_wakeup's is; new tasks' first wait is \
             not measured"
        );
    }
    // Preempted tasks wait too; their start is at sched_switch, event index 2 when both
    // wakeups are there.
    let switch_event = start_tracepoints.len() as u64;
    let preemption = switch.operand("prev_pid")? == pid;
    if preemption {
        start_tracepoints.push(sched("sched_switch"));
    } else {
        log::warn!(
            "sched_switch's prev_pid is not where sched_wakeup's pid is on this kernel; only \
             waits after a wakeup are measured, not after preemption"
        );
    }

    let mut start = PlanBuilder::new();
    start.all_tasks();
    let task = start.operand(pid)?;
    start.corr_part(task);
    start.push_insn(Insn {
        op: op::NE,
        operand: task,
        arg: 0,
    })?;
    if preemption {
        let event = start.operand(simple_operand(operand::EVENT_INDEX))?;
        let state = start.operand(switch.operand("prev_state")?)?;
        for insn in [
            Insn {
                op: op::NE,
                operand: event,
                arg: switch_event,
            },
            Insn {
                op: op::BITAND,
                operand: state,
                arg: SLEEPING_STATES,
            },
            Insn {
                op: op::NOT,
                ..Insn::NONE
            },
            Insn {
                op: op::OR,
                ..Insn::NONE
            },
            Insn {
                op: op::AND,
                ..Insn::NONE
            },
        ] {
            start.push_insn(insn)?;
        }
    }

    let mut main = PlanBuilder::new();
    main.all_tasks();
    let next = main.operand(switch.operand("next_pid")?)?;
    main.corr_part(next);
    main.push_insn(Insn {
        op: op::NE,
        operand: next,
        arg: 0,
    })?;
    main.needs_start();
    let latency = main.operand(simple_operand(operand::LATENCY))?;
    main.value(latency);
    main.value_div(args.unit.ns());
    main.log2();
    let mut columns = Vec::new();
    if args.tids {
        main.key_part(next)?;
        columns.push(KeyColumn {
            name: "tid".into(),
            kind: KeyKind::Int { signed: false },
        });
    }
    main.layout(None);

    let spec = EngineSpec {
        main: Stage {
            plan: main.plan(),
            attach: Attach::Tracepoints(vec![sched("sched_switch")]),
        },
        start: Some(Stage {
            plan: start.plan(),
            attach: Attach::Tracepoints(start_tracepoints),
        }),
        hash_entries: args.maps.max_groups,
        start_entries: args.maps.max_in_flight,
        event_base: 0,
    };
    let job = Job {
        tool_filter: true,
        command: "runqlat",
        what: "run queue latency of every task".into(),
        specs: vec![spec],
        columns,
        report: Report::Log2 {
            unit: args.unit.header().into(),
        },
    };
    agg::run(job, &args.scope, &args.timing, &args.output, verbose)
}
