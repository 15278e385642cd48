//! `tracekit execsnoop`: each `execve(2)` with its arguments (bcc's and libbpf-tools'
//! `execsnoop`), at `syscalls:sys_enter_execve`: the program's name (the basename of its
//! path, as the kernel names the new command), the parent process (read in the kernel
//! through BTF, `task->real_parent->tgid`, as libbpf-tools reads it), and `argv`'s
//! arguments, up to `--max-args` ([`MAX_ARGS`] by default, as bcc) of 128 bytes each
//! (`--max-string`), read whole into the record's tail (`argv[..N]`), `...` when cut.

use super::{CLOCK, Column, EventsJob, Flag, Group, NAME, ToolPlan, TIMESTAMP, Tool};
use crate::{Error, Result};

/// Arguments shown by default (bcc's `--max-args`).
pub const MAX_ARGS: u32 = 20;

/// `tracekit execsnoop`.
pub const TOOL: Tool = Tool {
    name: "execsnoop",
    summary: "Print each new program run with its arguments and parent (bcc execsnoop)",
    examples: "  tracekit execsnoop                # every execve(2) of the machine until Ctrl-C
  tracekit execsnoop -t             # with seconds since tracing began
  tracekit execsnoop -n sh --json   # only execs by sh, as JSON lines

ARGS shows argv's first --max-args arguments (20 by default, at most 128), each of up to
128 bytes (--max-string); a cut argument ends in `...`, and a `...` after the last one says
there were more. PPID is the caller's parent when it called execve (task->real_parent->tgid,
through BTF). Failed execs are shown too (the call is seen on entry, its return value is
not).",
    flags: &[
        NAME,
        TIMESTAMP,
        CLOCK,
        Flag::number(
            "max-args",
            "N",
            Some("20"),
            "Arguments shown, 1 to 128 (bcc execsnoop --max-args)",
        ),
    ],
    groups: &[Group::Common, Group::Maps],
    plan: |values| execsnoop(values).map(ToolPlan::Events),
    metric: None,
};

/// The columns: libbpf-tools' `PCOMM PID PPID ARGS` (its `RET` needs the exit).
pub const COLUMNS: [Column; 4] = [
    Column {
        header: "PCOMM",
        field: "comm_of(filename)",
    },
    Column {
        header: "PID",
        field: "pid",
    },
    Column {
        header: "PPID",
        field: "task->real_parent->tgid",
    },
    Column {
        header: "ARGS",
        field: "argv[..20]",
    },
];

fn execsnoop(values: &super::FlagValues) -> Result<EventsJob> {
    let max = values.number("max-args").unwrap_or(u64::from(MAX_ARGS));
    if !(1..=u64::from(tracekit_common::engine::MAX_ARGS)).contains(&max) {
        return Err(Error::usage(format!(
            "--max-args {max}: give 1 to {}",
            tracekit_common::engine::MAX_ARGS
        )));
    }
    let mut columns = COLUMNS;
    if max != u64::from(MAX_ARGS) {
        // A column's field is static text: one per run.
        columns[3].field = Box::leak(format!("argv[..{max}]").into_boxed_str());
    }
    EventsJob::new("syscalls:sys_enter_execve", &columns).with_flags(Vec::new(), values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        engine::compile::{Events, compile_in},
        jobs::tools::FlagValues,
    };

    #[test]
    fn execsnoop_reads_the_path_and_every_argument() {
        let ToolPlan::Events(job) = (TOOL.plan)(&FlagValues::defaults(&TOOL)).unwrap() else {
            panic!("events");
        };
        assert_eq!(
            job.request.print,
            [
                "filename",
                "task->real_parent->tgid",
                "argv[..20]"
            ]
        );
        assert_eq!(
            compile_in(&job.request, &Events::test_6_18())
                .unwrap()
                .listing(),
            r#"Main Tracepoints([Tracepoint { system: "syscalls", event: "sys_enter_execve" }])
operands: #0 user_str@16 whole:4096 #1 task_path[2]:s4 #2 user_str@24[20] whole:130..20
corr: - | key: - | saves: -
value: - | agg: trace | layout: array bound 0
filter: -
flags: needs_ids
columns: 
"#
        );
    }
}
