//! `tracekit oomkill`: each process the OOM killer chooses (bcc's and bpftrace's
//! `oomkill`), at `oom:mark_victim` (include/trace/events/oom.h): the victim's pid,
//! command and size, and the task whose allocation triggered the kill.

use super::{CLOCK, Column, EventTime, EventsJob, Group, ToolPlan, TIMESTAMP, Tool};
use crate::Result;

/// `tracekit oomkill`.
pub const TOOL: Tool = Tool {
    name: "oomkill",
    summary: "Print each process the OOM killer kills, and who triggered it (bcc oomkill)",
    examples: "  tracekit oomkill -T               # every OOM kill until Ctrl-C, with the wall clock
  tracekit oomkill --json -o oom.json

VM(kB) is the victim's virtual memory (total_vm), ANON(kB) its resident anonymous memory
(anon_rss). PID and COMM are the task whose allocation ran out.",
    flags: &[TIMESTAMP, CLOCK],
    groups: &[Group::Common, Group::Maps],
    plan: |values| oomkill(values).map(ToolPlan::Events),
    metric: None,
};

/// The columns: the triggering task, then the victim.
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
        header: "TPID",
        field: "field(pid)",
    },
    Column {
        header: "TCOMM",
        field: "field(comm)",
    },
    Column {
        header: "VM(kB)",
        field: "total_vm",
    },
    Column {
        header: "ANON(kB)",
        field: "anon_rss",
    },
];

fn oomkill(values: &super::FlagValues) -> Result<EventsJob> {
    let mut job = EventsJob::new("oom:mark_victim", &COLUMNS);
    job.request.maps = values.maps;
    // The kill runs in the context of the task that ran out, maybe outside -p's scope.
    job.request.all_tasks = true;
    job.time = EventTime::of(values);
    Ok(job)
}
