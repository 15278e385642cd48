//! `tracekit syscount`: syscalls counted by name, as bcc's `syscount`.
//!
//! One attach to the `raw_syscalls` raw tracepoints (include/trace/events/syscalls.h), never
//! one per syscall. Counting keys a per-CPU array by syscall number: no hashing on the hot
//! path. `--latency` adds a start stage at `sys_enter` (timestamp and syscall number per
//! thread) and aggregates at `sys_exit`; `--failures` counts at `sys_exit` when the return
//! value is negative, reading the number from `regs->orig_ax`.

use tracekit::{
    Error, Result,
    engine::{
        Attach, EngineSpec, KeyColumn, KeyKind, PlanBuilder, Stage, arg_operand, builtin,
        saved_operand, simple_operand,
    },
};
use tracekit_common::engine::{Insn, Operand, op, operand};

use crate::{
    cli::{SyscountArgs, SyscountBy},
    cmd::agg::{self, Job, Report},
};

/// Syscall numbers at or above this share one row (x86_64 has about 460).
pub const SYSCALL_BOUND: u32 = 1024;

/// Offset of `orig_ax` in x86_64's `struct pt_regs` (arch/x86/include/uapi/asm/ptrace.h,
/// a stable ABI): the syscall number at `sys_exit`.
#[cfg(target_arch = "x86_64")]
pub const ORIG_AX_OFFSET: Option<u32> = Some(15 * 8);
#[cfg(not(target_arch = "x86_64"))]
pub const ORIG_AX_OFFSET: Option<u32> = None;

/// Runs `tracekit syscount`.
pub fn run(args: SyscountArgs, verbose: u8) -> Result<()> {
    let mut main = PlanBuilder::new();
    let mut start = None;
    let at_exit = args.latency || args.failures;
    let nr = if args.latency {
        let mut builder = PlanBuilder::new();
        let tid = builder.operand(builtin("tid").expect("builtin").operand)?;
        builder.corr_part(tid);
        let id = builder.operand(arg_operand(1, 8, false))?;
        let slot = builder.save(id)?;
        start = Some(builder.plan());
        let tid = main.operand(builtin("tid").expect("builtin").operand)?;
        main.corr_part(tid);
        main.needs_start();
        let latency = main.operand(simple_operand(operand::LATENCY))?;
        main.value(latency);
        main.operand(saved_operand(slot))?
    } else if args.failures {
        let offset = ORIG_AX_OFFSET.ok_or_else(|| {
            Error::usage("--failures reads the syscall number from pt_regs: x86_64 only for now")
        })?;
        main.operand(Operand {
            kind: operand::ARG_DEREF,
            offset: 0,
            size: 8,
            aux: offset,
            ..Operand::NONE
        })?
    } else {
        main.operand(arg_operand(1, 8, false))?
    };
    if args.failures {
        let ret = main.operand(arg_operand(1, 8, true))?;
        main.push_insn(Insn {
            op: op::SLT,
            operand: ret,
            arg: 0,
        })?;
    }
    main.key_part(nr)?;
    let mut columns = vec![KeyColumn {
        name: "syscall".into(),
        kind: KeyKind::Syscall,
    }];
    if let Some(by) = args.by {
        let (name, kind) = match by {
            SyscountBy::Comm => ("comm", KeyKind::Str),
            SyscountBy::Pid => ("pid", KeyKind::Int { signed: false }),
        };
        let index = main.operand(builtin(name).expect("builtin").operand)?;
        main.key_part(index)?;
        columns.push(KeyColumn {
            name: name.into(),
            kind,
        });
    }
    main.layout(Some(SYSCALL_BOUND));

    let raw = |name: &str| Attach::RawTracepoint(name.into());
    let spec = EngineSpec {
        main: Stage {
            plan: main.plan(),
            attach: raw(if at_exit { "sys_exit" } else { "sys_enter" }),
        },
        start: start.map(|plan| Stage {
            plan,
            attach: raw("sys_enter"),
        }),
        hash_entries: args.maps.max_groups,
        start_entries: args.maps.max_in_flight,
        event_base: 0,
    };
    let job = Job {
        tool_filter: false,
        command: "syscount",
        what: format!(
            "syscalls{}",
            if args.failures { " that failed" } else { "" }
        ),
        specs: vec![spec],
        columns,
        report: Report::Counts {
            sum: args.latency.then(|| ("TIME(us)".to_string(), 1000.0)),
            top: Some(args.top),
        },
    };
    agg::run(job, &args.scope, &args.timing, &args.output, verbose)
}
