//! `tracekit execsnoop`: each `execve(2)` with its arguments (bcc's and libbpf-tools'
//! `execsnoop`), at `syscalls:sys_enter_execve`: the program's name (the basename of its
//! path, as the kernel names the new command), the parent process (read in the kernel
//! through BTF, `task->real_parent->tgid`, as libbpf-tools reads it), and the first
//! [`ARGS`] arguments of `argv`, each cut at 32 bytes (the engine's string size; a record
//! holds four strings).

use super::{CLOCK, Column, EventsJob, Group, NAME, ToolPlan, TIMESTAMP, Tool};
use crate::Result;

/// Arguments shown.
pub const ARGS: u32 = 3;

/// `tracekit execsnoop`.
pub const TOOL: Tool = Tool {
    name: "execsnoop",
    summary: "Print each new program run with its arguments and parent (bcc execsnoop)",
    examples: "  tracekit execsnoop                # every execve(2) of the machine until Ctrl-C
  tracekit execsnoop -t             # with seconds since tracing began
  tracekit execsnoop -n sh --json   # only execs by sh, as JSON lines

ARGS shows argv[0] to argv[2], each cut at 32 bytes. PPID is the caller's parent when it
called execve (task->real_parent->tgid, through BTF). Failed execs are shown too (the call is
seen on entry, its return value is not).",
    flags: &[NAME, TIMESTAMP, CLOCK],
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
        field: "argv[0..3]",
    },
];

fn execsnoop(values: &super::FlagValues) -> Result<EventsJob> {
    EventsJob::new("syscalls:sys_enter_execve", &COLUMNS).with_flags(Vec::new(), values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        engine::compile::{Events, compile_in},
        jobs::tools::FlagValues,
    };

    #[test]
    fn execsnoop_reads_the_path_and_three_arguments() {
        let ToolPlan::Events(job) = (TOOL.plan)(&FlagValues::defaults(&TOOL)).unwrap() else {
            panic!("events");
        };
        assert_eq!(
            job.request.print,
            [
                "filename",
                "task->real_parent->tgid",
                "argv[0]",
                "argv[1]",
                "argv[2]"
            ]
        );
        assert_eq!(
            compile_in(&job.request, &Events::test_6_18())
                .unwrap()
                .listing(),
            r#"Main Tracepoints([Tracepoint { system: "syscalls", event: "sys_enter_execve" }])
operands: #0 user_str@16 #1 task_path[2]:s4 #2 user_str@24[0] #3 user_str@24[1] #4 user_str@24[2]
corr: - | key: - | saves: -
value: - | agg: trace | layout: array bound 0
filter: -
flags: needs_ids
columns: 
"#
        );
    }
}
