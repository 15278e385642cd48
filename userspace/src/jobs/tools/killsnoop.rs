//! `tracekit killsnoop`: each `kill(2)` with its signal, target and result (bcc's and
//! libbpf-tools' `killsnoop`): `syscalls:sys_enter_kill` saves the signal and target under
//! the thread id, `syscalls:sys_exit_kill` prints them with the return value.

use super::{
    CLOCK, Column, EventsJob, FAILURES, Group, NAME, ToolPlan, TIMESTAMP, Tool,
};
use crate::Result;

/// `tracekit killsnoop`.
pub const TOOL: Tool = Tool {
    name: "killsnoop",
    summary: "Print each signal sent by kill(2) with its target and result (bcc killsnoop)",
    examples: "  tracekit killsnoop                # every kill(2) of the machine until Ctrl-C
  tracekit killsnoop -x             # only the ones that failed
  tracekit killsnoop -p 1234 -T",
    flags: &[
        FAILURES.help("Only kill(2) calls that failed"),
        NAME,
        TIMESTAMP,
        CLOCK,
    ],
    groups: &[Group::Common, Group::Maps],
    plan: |values| killsnoop(values).map(ToolPlan::Events),
    metric: None,
};

/// The columns: libbpf-tools' `PID COMM SIG TPID RESULT`.
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
        header: "SIG",
        field: "start.sig",
    },
    Column {
        header: "TPID",
        field: "start.pid",
    },
    Column {
        header: "RESULT",
        field: "ret",
    },
];

fn killsnoop(values: &super::FlagValues) -> Result<EventsJob> {
    EventsJob::syscall_returns(&["kill"], &COLUMNS, values)
}
