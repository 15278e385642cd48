//! `tracekit threadsnoop`: each new thread (bcc's and bpftrace's `threadsnoop`), at
//! `task:task_newtask` (include/trace/events/task.h) with `CLONE_THREAD` in its clone
//! flags: it runs in the creating thread, so `PID` and `COMM` are the process that made
//! the thread, and `TID` is the new thread's id. bcc's uprobe on `pthread_create` sees only
//! threads libc's `pthread_create` makes; the tracepoint sees every `clone(CLONE_THREAD)`,
//! of any language's runtime.

use super::{CLOCK, Column, EventsJob, Group, NAME, ToolPlan, TIMESTAMP, Tool};
use crate::Result;

/// `CLONE_THREAD` (include/uapi/linux/sched.h).
pub const CLONE_THREAD: u64 = 0x0001_0000;

/// `tracekit threadsnoop`.
pub const TOOL: Tool = Tool {
    name: "threadsnoop",
    summary: "Print each new thread with the process that created it (bcc threadsnoop)",
    examples: "  tracekit threadsnoop              # every new thread of the machine until Ctrl-C
  tracekit threadsnoop -t -p 1234   # threads process 1234 creates, with seconds since start
  tracekit threadsnoop --json -- ./server

TID is the new thread's id; PID and COMM are the process that created it. There is no FUNC
column (bcc's start routine, from a uprobe on pthread_create): the tracepoint sees every
clone(CLONE_THREAD), not only libc's pthread_create.",
    flags: &[NAME, TIMESTAMP, CLOCK],
    groups: &[Group::Common, Group::Maps],
    plan: |values| threadsnoop(values).map(ToolPlan::Events),
    metric: None,
};

/// The columns: bcc's `PID COMM`, then the new thread's `TID`.
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
        header: "TID",
        field: "field(pid)",
    },
];

fn threadsnoop(values: &super::FlagValues) -> Result<EventsJob> {
    let filters = vec![format!("clone_flags & {CLONE_THREAD:#x}")];
    EventsJob::new("task:task_newtask", &COLUMNS).with_flags(filters, values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        engine::compile::{Events, compile_in},
        jobs::tools::FlagValues,
    };

    #[test]
    fn threadsnoop_keeps_clone_thread_only() {
        let ToolPlan::Events(job) = (TOOL.plan)(&FlagValues::defaults(&TOOL)).unwrap() else {
            panic!("events");
        };
        assert_eq!(job.request.filter.as_deref(), Some("clone_flags & 0x10000"));
        let listing = compile_in(&job.request, &Events::test_6_18())
            .unwrap()
            .listing();
        assert!(listing.contains("task_newtask"), "{listing}");
    }
}
