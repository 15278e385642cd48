//! `tracekit offcpu`: time spent blocked, by stack (bcc/libbpf-tools `offcputime`).
//!
//! Two engine stages on `sched:sched_switch` (include/trace/events/sched.h). The start stage
//! runs as the task leaving the CPU: it stores the time, its kernel and user stacks and its
//! pid under its thread id (`prev_pid`). The main stage finds them when the thread comes
//! back (`next_pid`) and adds the time it was away to (pid, comm, stacks), in microseconds.
//! The record's fields come from the format file; no kernel struct is read.

use std::cell::RefCell;

use tracekit::{
    Error, Result,
    engine::{
        Attach, EngineSpec, PlanBuilder, Stage, TracepointFields, builtin, saved_operand,
        simple_operand,
    },
    probe::Tracepoint,
    profile,
    symbolize::Symbolizer,
    tracefs,
};
use tracekit_common::engine::{Insn, op, operand};

use crate::{
    cli::{OffcpuArgs, TaskState},
    cmd::{
        agg::{self, Setup},
        compile::Stacks,
        profile::{Header, emit_profile, options_cpus, print_written},
        stackcount::{Weight, collect_profile},
    },
};

/// `TASK_INTERRUPTIBLE` and `TASK_UNINTERRUPTIBLE` (include/linux/sched.h), as
/// `sched_switch`'s `prev_state` reports them.
const TASK_INTERRUPTIBLE: u64 = 0x1;
const TASK_UNINTERRUPTIBLE: u64 = 0x2;

/// Runs `tracekit offcpu`.
pub fn run(args: OffcpuArgs, verbose: u8) -> Result<()> {
    let file_format = agg::check_output(&args.output, "offcpu", true)?;
    if let (Some(min), Some(max)) = (args.min_us, args.max_us)
        && min > max
    {
        return Err(Error::usage(format!(
            "--min-us {min} is above --max-us {max}"
        )));
    }
    let stacks = Stacks::from(&args.stacks);
    let tracefs = tracefs::root()?;
    let switch = Tracepoint {
        system: "sched".into(),
        event: "sched_switch".into(),
    };
    let fields = TracepointFields::read(&tracefs, &switch)?;

    // Start: the task leaving the CPU.
    let mut start = PlanBuilder::new();
    let prev_pid = start.operand(fields.operand("prev_pid")?)?;
    start.corr_part(prev_pid);
    start.push_insn(Insn {
        op: op::NE,
        operand: prev_pid,
        arg: 0,
    })?;
    if let Some(state) = args.state {
        let prev_state = start.operand(fields.operand("prev_state")?)?;
        let mask = match state {
            TaskState::Interruptible => TASK_INTERRUPTIBLE,
            TaskState::Uninterruptible => TASK_UNINTERRUPTIBLE,
        };
        start.push_insn(Insn {
            op: op::BITAND,
            operand: prev_state,
            arg: mask,
        })?;
        start.push_insn(Insn {
            op: op::AND,
            operand: 0,
            arg: 0,
        })?;
    }
    let mut kernel_slot = None;
    let mut user_slot = None;
    if stacks.kernel {
        let index = start.operand(simple_operand(operand::KERNEL_STACK))?;
        kernel_slot = Some(start.save(index)?);
    }
    if stacks.user {
        let index = start.operand(simple_operand(operand::USER_STACK))?;
        user_slot = Some(start.save(index)?);
        start.announce();
    }
    let pid = start.operand(builtin("pid").expect("builtin").operand)?;
    let pid_slot = start.save(pid)?;
    start.layout(None);

    // Main: the same thread coming back.
    let mut main = PlanBuilder::new();
    let next_pid = main.operand(fields.operand("next_pid")?)?;
    main.corr_part(next_pid);
    main.needs_start();
    main.all_tasks();
    let latency = main.operand(simple_operand(operand::LATENCY))?;
    main.value(latency);
    let key_pid = main.operand(saved_operand(pid_slot))?;
    main.key_part(key_pid)?;
    let comm = main.operand(fields.operand("next_comm")?)?;
    main.key_part(comm)?;
    for slot in [kernel_slot, user_slot].into_iter().flatten() {
        let index = main.operand(saved_operand(slot))?;
        main.key_part(index)?;
    }
    let mut insns = 0;
    if let Some(min) = args.min_us {
        main.push_insn(Insn {
            op: op::GE,
            operand: latency,
            arg: min * 1000,
        })?;
        insns += 1;
    }
    if let Some(max) = args.max_us {
        main.push_insn(Insn {
            op: op::LE,
            operand: latency,
            arg: max * 1000,
        })?;
        insns += 1;
    }
    if insns == 2 {
        main.push_insn(Insn {
            op: op::AND,
            operand: 0,
            arg: 0,
        })?;
    }
    main.layout(None);

    let specs = vec![EngineSpec {
        main: Stage {
            plan: main.plan(),
            attach: Attach::Tracepoints(vec![switch.clone()]),
        },
        start: Some(Stage {
            plan: start.plan(),
            attach: Attach::Tracepoints(vec![switch]),
        }),
        hash_entries: args.maps.max_groups,
        start_entries: args.maps.max_in_flight,
        event_base: 0,
    }];
    let symbolizer = RefCell::new(Symbolizer::default());
    let symbolizer = &symbolizer;
    let finished = agg::run_engines(
        Setup {
            command: "offcpu",
            what: "off-CPU time",
            specs: &specs,
            scope: &args.scope,
            timing: &args.timing,
            exclude_self: false,
            verbose,
        },
        |engines| agg::announce_handlers(engines, symbolizer, stacks.user),
        |_, _| Ok(()),
    )?;
    let raw = collect_profile(&finished.engines, 0, stacks, Weight::SumMicros)?;
    let profile = profile::symbolize(&raw, &symbolizer.borrow());
    let header = Header {
        tool: "offcpu",
        event: "off-CPU time (sched:sched_switch)",
        unit: "us",
        scope: &finished.scope_text,
        hz: None,
        elapsed: finished.elapsed,
        cpus: options_cpus(),
    };
    emit_profile(
        &args.output,
        file_format,
        &profile,
        &header,
        args.stacks.top,
        true,
    )?;
    let stats = agg::read_all(&finished.engines)?.stats;
    let total_us: u64 = profile.stacks.iter().map(|s| s.count).sum();
    eprintln!(
        "Off CPU: {:.3} s over {} blocks.",
        total_us as f64 / 1e6,
        stats.counted
    );
    finished.print_summary(&stats, true);
    print_written(&args.output, file_format);
    agg::print_usage(verbose, finished.attached_after);
    Ok(())
}
