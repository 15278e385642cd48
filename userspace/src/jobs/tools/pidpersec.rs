//! `tracekit pidpersec`: new processes per interval (bpftrace's `pidpersec`), counted in
//! the kernel at `sched:sched_process_fork` (include/trace/events/sched.h; threads
//! included, as the tracepoint fires for both).

use super::{Group, Metric, ToolPlan, Tool};
use crate::{
    engine::request::{MapSizes, Request},
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
};

/// `tracekit pidpersec`.
pub const TOOL: Tool = Tool {
    name: "pidpersec",
    summary: "Count new processes and threads (forks) per interval (bpftrace pidpersec)",
    examples: "  tracekit pidpersec -i 1           # forks each second until Ctrl-C
  tracekit pidpersec -d 10          # forks in 10 seconds",
    flags: &[],
    groups: &[Group::Common, Group::Maps],
    plan: |values| Ok(ToolPlan::Aggregate(pidpersec(values.maps))),
    metric: Some(Metric {
        name: "forks",
        help: "New processes and threads (sched_process_fork).",
        labels: &[],
        by: &[],
        unit: None,
        buckets: None,
    }),
};

/// The job: one count of `sched:sched_process_fork`.
pub fn pidpersec(maps: MapSizes) -> AggregateJob {
    AggregateJob {
        command: "pidpersec",
        what: Some("forks".into()),
        request: Request {
            maps,
            ..Request::probe("sched:sched_process_fork")
        },
        report: Report::Counts {
            clear: false,
            sum: None,
            top: None,
        },
        tool_filter: false,
    }
}
