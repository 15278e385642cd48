//! `tracekit setuids`: each call that changes a process's user ids (bpftrace's `setuids`,
//! bcc's `setuids`): `setuid`, `setreuid`, `setresuid` and `setfsuid`, at their
//! `syscalls:sys_exit_*` tracepoints, with the return value and the task's user ids after
//! the call, read from its credentials through BTF (`task->cred->uid.val`, `euid`, `suid`,
//! `fsuid`). A failed call leaves them as they were.

use super::{CLOCK, Column, EventsJob, FAILURES, Group, NAME, ToolPlan, TIMESTAMP, Tool};
use crate::Result;

/// `tracekit setuids`.
pub const TOOL: Tool = Tool {
    name: "setuids",
    summary: "Print each setuid, setreuid, setresuid and setfsuid with the ids it leaves (bpftrace setuids)",
    examples: "  tracekit setuids                  # every user id change of the machine until Ctrl-C
  tracekit setuids -x -T            # only the calls that failed, with the wall clock
  tracekit setuids --json -- sudo -u nobody true

UID EUID SUID FSUID are the task's real, effective, saved and file-system user ids after
the call (unchanged when it failed). RET is the call's return value: 0 or -errno, and for
setfsuid the previous file-system id. bpftrace's setuids.bt shows the arguments instead.",
    flags: &[
        FAILURES.help("Only calls that failed (RET < 0; setfsuid never does)"),
        NAME,
        TIMESTAMP,
        CLOCK,
    ],
    groups: &[Group::Common, Group::Maps],
    plan: |values| setuids(values).map(ToolPlan::Events),
    metric: None,
};

/// The syscalls traced (their `syscalls:sys_exit_*` tracepoints).
pub const CALLS: [&str; 4] = ["setuid", "setreuid", "setresuid", "setfsuid"];

/// The columns: `PID COMM SYSCALL RET`, then the ids after the call.
pub const COLUMNS: [Column; 8] = [
    Column {
        header: "PID",
        field: "pid",
    },
    Column {
        header: "COMM",
        field: "comm",
    },
    Column {
        header: "SYSCALL",
        field: "syscall",
    },
    Column {
        header: "RET",
        field: "ret",
    },
    Column {
        header: "UID",
        field: "task->cred->uid.val",
    },
    Column {
        header: "EUID",
        field: "task->cred->euid.val",
    },
    Column {
        header: "SUID",
        field: "task->cred->suid.val",
    },
    Column {
        header: "FSUID",
        field: "task->cred->fsuid.val",
    },
];

fn setuids(values: &super::FlagValues) -> Result<EventsJob> {
    let probes = CALLS
        .iter()
        .map(|call| format!("syscalls:sys_exit_{call}"))
        .collect();
    let mut filters = Vec::new();
    if values.switch(FAILURES.long) {
        filters.push("ret < 0".to_string());
    }
    EventsJob::of_events(probes, &COLUMNS).with_flags(filters, values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::tools::FlagValues;

    #[test]
    fn setuids_reads_the_ids_after_each_call() {
        let ToolPlan::Events(job) = (TOOL.plan)(&FlagValues::defaults(&TOOL)).unwrap() else {
            panic!("events");
        };
        assert_eq!(job.request.probes.len(), 4);
        assert_eq!(
            job.request.print,
            [
                "ret",
                "task->cred->uid.val",
                "task->cred->euid.val",
                "task->cred->suid.val",
                "task->cred->fsuid.val"
            ]
        );
    }
}
