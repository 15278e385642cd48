//! `tracekit syncsnoop`: each call that flushes file data to disk (bcc's and bpftrace's
//! `syncsnoop`): `sync`, `syncfs`, `fsync`, `fdatasync`, `sync_file_range` and `msync`, at
//! their `syscalls:sys_enter_*` tracepoints.

use super::{CLOCK, Column, EventTime, EventsJob, Group, NAME, ToolPlan, TIMESTAMP, Tool};
use crate::Result;

/// `tracekit syncsnoop`.
pub const TOOL: Tool = Tool {
    name: "syncsnoop",
    summary: "Print each sync, fsync, fdatasync, syncfs, sync_file_range and msync (bcc syncsnoop)",
    examples: "  tracekit syncsnoop                # every sync call of the machine until Ctrl-C
  tracekit syncsnoop -T -n postgres # one command's, with the wall clock",
    flags: &[NAME, TIMESTAMP, CLOCK],
    groups: &[Group::Common, Group::Maps],
    plan: |values| syncsnoop(values).map(ToolPlan::Events),
    metric: None,
};

/// The syscalls traced (their `syscalls:sys_enter_*` tracepoints), as bpftrace's
/// `syncsnoop.bt` traces them.
pub const CALLS: [&str; 6] = [
    "sync",
    "syncfs",
    "fsync",
    "fdatasync",
    "sync_file_range",
    "msync",
];

/// The columns: `PID COMM CALL`.
pub const COLUMNS: [Column; 3] = [
    Column {
        header: "PID",
        field: "pid",
    },
    Column {
        header: "COMM",
        field: "comm",
    },
    Column {
        header: "CALL",
        field: "syscall",
    },
];

fn syncsnoop(values: &super::FlagValues) -> Result<EventsJob> {
    let mut job = EventsJob::new("syscalls:sys_enter_sync", &COLUMNS);
    job.request.probes = CALLS
        .iter()
        .map(|call| format!("syscalls:sys_enter_{call}"))
        .collect();
    job.request.filter = values.comm_filter()?;
    job.request.maps = values.maps;
    job.time = EventTime::of(values);
    Ok(job)
}
