//! `tracekit mountsnoop`: each `mount(2)` call with its source, target, filesystem type
//! and flags (bcc's and libbpf-tools' `mountsnoop`), at `syscalls:sys_enter_mount`.

use super::{CLOCK, Column, EventsJob, Group, NAME, ToolPlan, TIMESTAMP, Tool};
use crate::Result;

/// `tracekit mountsnoop`.
pub const TOOL: Tool = Tool {
    name: "mountsnoop",
    summary: "Print each mount(2) with its source, target, type and flags (bcc mountsnoop)",
    examples: "  tracekit mountsnoop               # every mount(2) of the machine until Ctrl-C
  tracekit mountsnoop -T --json

Strings are shown whole (up to 4094 bytes). The call is seen on entry (no return value); umount(2) is not
shown.",
    flags: &[NAME, TIMESTAMP, CLOCK],
    groups: &[Group::Common, Group::Maps],
    plan: |values| mountsnoop(values).map(ToolPlan::Events),
    metric: None,
};

/// The columns.
pub const COLUMNS: [Column; 6] = [
    Column {
        header: "PID",
        field: "pid",
    },
    Column {
        header: "COMM",
        field: "comm",
    },
    Column {
        header: "FLAGS",
        field: "flags",
    },
    Column {
        header: "FSTYPE",
        field: "str(type)",
    },
    Column {
        header: "SOURCE",
        field: "str(dev_name)",
    },
    Column {
        header: "TARGET",
        field: "str(dir_name)",
    },
];

fn mountsnoop(values: &super::FlagValues) -> Result<EventsJob> {
    EventsJob::new("syscalls:sys_enter_mount", &COLUMNS).with_flags(Vec::new(), values)
}
