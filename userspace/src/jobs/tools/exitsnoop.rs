//! `tracekit exitsnoop`: each process exit with its age and exit code or signal (bcc's and
//! libbpf-tools' `exitsnoop`), at `sched:sched_process_exit` (include/trace/events/sched.h),
//! which runs in the exiting task after `do_exit` has set its `exit_code`. The parent, the
//! start time and the exit code are read from the current task through BTF
//! (`task->real_parent->tgid`, `task->start_time`, `task->exit_code`).
//!
//! A process exits when its last thread does: by default only that thread's exit is shown
//! (`task->signal->live.counter == 0`, the count `do_exit` has just decremented), as
//! libbpf-tools shows processes; `--threaded` shows every thread's.

use super::{CLOCK, Column, EventsJob, FAILURES, Flag, Group, NAME, ToolPlan, TIMESTAMP, Tool};
use crate::Result;

/// `tracekit exitsnoop`.
pub const TOOL: Tool = Tool {
    name: "exitsnoop",
    summary: "Print each process exit with its age and exit code or signal (bcc exitsnoop)",
    examples: "  tracekit exitsnoop                # every process exit of the machine until Ctrl-C
  tracekit exitsnoop -x -T          # only failures (a non-zero code or a signal), with the clock
  tracekit exitsnoop --threaded -- make -j2   # each thread's exit too, of make and its children

AGE(s) is the time from the process's start (task->start_time) to its exit. EXIT_CODE is 0,
`code N` for exit(N), or `signal N (NAME)` for a process a signal ended (`, core dumped`
when it dumped core).",
    flags: &[
        FAILURES.help("Only exits with a non-zero code or by a signal"),
        Flag::switch("threaded", "Show each thread's exit, not only the process's (the last thread's)"),
        NAME,
        TIMESTAMP,
        CLOCK,
    ],
    groups: &[Group::Common, Group::Maps],
    plan: |values| exitsnoop(values).map(ToolPlan::Events),
    metric: None,
};

/// The columns: libbpf-tools' `PCOMM PID PPID TID AGE(s) EXIT_CODE`.
pub const COLUMNS: [Column; 6] = [
    Column {
        header: "PCOMM",
        field: "comm",
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
        header: "TID",
        field: "tid",
    },
    Column {
        header: "AGE(s)",
        field: "age(task->start_time)",
    },
    Column {
        header: "EXIT_CODE",
        field: "exit(task->exit_code)",
    },
];

fn exitsnoop(values: &super::FlagValues) -> Result<EventsJob> {
    let mut filters = Vec::new();
    if !values.switch("threaded") {
        filters.push("task->signal->live.counter == 0".to_string());
    }
    if values.switch(FAILURES.long) {
        filters.push("task->exit_code != 0".to_string());
    }
    EventsJob::new("sched:sched_process_exit", &COLUMNS).with_flags(filters, values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::tools::{FlagValues, Value};

    #[test]
    fn exitsnoop_shows_processes_unless_threaded() {
        let plan = |threaded: bool, failures: bool| {
            let mut values = FlagValues::defaults(&TOOL);
            values.set("threaded", Value::Switch(threaded));
            values.set("failures", Value::Switch(failures));
            let ToolPlan::Events(job) = (TOOL.plan)(&values).unwrap() else {
                panic!("events");
            };
            job
        };
        let job = plan(false, false);
        assert_eq!(
            job.request.print,
            ["task->real_parent->tgid", "task->start_time", "task->exit_code"]
        );
        assert_eq!(
            job.request.filter.as_deref(),
            Some("task->signal->live.counter == 0")
        );
        assert_eq!(
            plan(true, true).request.filter.as_deref(),
            Some("task->exit_code != 0")
        );
    }
}
