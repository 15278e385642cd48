//! `tracekit statsnoop`: each `stat` of a path with its result (bcc's and bpftrace's
//! `statsnoop`): `statx(2)` and `newfstatat(2)` (what glibc's `stat`, `lstat` and
//! `fstatat` call on x86_64), their `syscalls:sys_enter_*` saving the path under the thread
//! id, their `syscalls:sys_exit_*` printing it with the result.

use super::{
    CLOCK, Column, EventsJob, FAILURES, Group, NAME, ToolPlan, TIMESTAMP, Tool,
};
use crate::Result;

/// `tracekit statsnoop`.
pub const TOOL: Tool = Tool {
    name: "statsnoop",
    summary: "Print each stat of a path with its result (bcc statsnoop)",
    examples: "  tracekit statsnoop                # every statx/newfstatat of the machine until Ctrl-C
  tracekit statsnoop -x             # only the ones that failed
  tracekit statsnoop -n ls -t

Paths are shown whole (--max-string N cuts them at N bytes, with `...`), read at the
syscall's exit; `<unreadable>` when they cannot be read. The older stat(2), lstat(2) and
statfs(2) calls are not traced (their path is elsewhere in their records).",
    flags: &[
        FAILURES.help("Only stats that failed"),
        NAME,
        TIMESTAMP,
        CLOCK,
    ],
    groups: &[Group::Common, Group::Maps],
    plan: |values| statsnoop(values).map(ToolPlan::Events),
    metric: None,
};

/// The syscalls traced.
pub const CALLS: [&str; 2] = ["statx", "newfstatat"];

/// The columns: libbpf-tools' `PID COMM RET ERR PATH`.
pub const COLUMNS: [Column; 5] = [
    Column {
        header: "PID",
        field: "pid",
    },
    Column {
        header: "COMM",
        field: "comm",
    },
    Column {
        header: "RET",
        field: "fd(ret)",
    },
    Column {
        header: "ERR",
        field: "errno(ret)",
    },
    Column {
        header: "PATH",
        field: "start.filename",
    },
];

fn statsnoop(values: &super::FlagValues) -> Result<EventsJob> {
    EventsJob::syscall_returns(&CALLS, &COLUMNS, values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        engine::compile::{Events, compile_in},
        jobs::tools::FlagValues,
    };

    /// Both end events compile to one plan: one engine, one start map.
    #[test]
    fn statsnoop_pairs_two_syscalls_in_one_engine() {
        let ToolPlan::Events(job) = (TOOL.plan)(&FlagValues::defaults(&TOOL)).unwrap() else {
            panic!("events");
        };
        let compiled = compile_in(&job.request, &Events::test_6_18()).unwrap();
        assert_eq!(compiled.specs.len(), 1);
        assert_eq!(
            compiled.listing(),
            r#"Start Tracepoints([Tracepoint { system: "syscalls", event: "sys_enter_statx" }, Tracepoint { system: "syscalls", event: "sys_enter_newfstatat" }])
operands: #0 tid #1 field@24:8
corr: #0 | key: - | saves: #1->0
value: - | agg: count | layout: array bound 0
filter: -
flags: needs_ids by_thread
Main Tracepoints([Tracepoint { system: "syscalls", event: "sys_exit_statx" }, Tracepoint { system: "syscalls", event: "sys_exit_newfstatat" }])
operands: #0 tid #1 field@16:s8 #2 saved_user_str0 whole:4096
corr: #0 | key: - | saves: -
value: - | agg: trace | layout: array bound 0
filter: -
flags: needs_start needs_ids
columns: 
"#
        );
    }
}
