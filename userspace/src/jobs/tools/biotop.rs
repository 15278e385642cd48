//! `tracekit biotop`: block I/O by process and disk (bcc/libbpf-tools' `biotop`): I/Os
//! issued and their bytes, per (pid, comm, disk), counted at
//! `block:block_rq_issue` (include/trace/events/block.h) and shown busiest first, each
//! interval (`-i`, bcc's default is 1 s) or at the end.

use super::{Flag, Group, Metric, NOCLEAR, ToolPlan, Tool, disk_filter};
use crate::{
    engine::request::{KeyField, Request},
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
};

/// `tracekit biotop`.
pub const TOOL: Tool = Tool {
    name: "biotop",
    summary: "Block I/O by process and disk: I/Os and bytes, busiest first (bcc biotop)",
    examples: "  tracekit biotop -i 1               # each second, the processes doing most block I/O
  tracekit biotop --disk vda --top 5 -d 10
  tracekit biotop -- tar xf big.tar

PID and COMM are the task that issued the request to the device (a kernel flusher thread for
buffered writes).",
    flags: &[
        Flag::text(
            "disk",
            "NAME",
            "Only I/O to this disk (a name under /sys/block)",
        ),
        Flag::number("top", "N", Some("20"), "Show the N busiest (bcc biotop -r)").short('r'),
        NOCLEAR,
    ],
    groups: &[Group::Common, Group::Maps],
    plan: |values| {
        Ok(ToolPlan::Aggregate(AggregateJob {
            command: "biotop",
            what: Some("block I/O issued".into()),
            request: Request {
                value: Some("bytes".into()),
                by: vec![
                    KeyField::labeled("PID", "pid"),
                    KeyField::labeled("COMM", "comm"),
                    KeyField::labeled("DISK", "dev"),
                ],
                filter: disk_filter(values.text("disk"))?,
                maps: values.maps,
                ..Request::probe("block:block_rq_issue")
            },
            report: Report::Counts {
                clear: !values.switch(NOCLEAR.long),
                sum: Some(("KBYTES".into(), 1024.0)),
                top: Some(values.number("top").unwrap_or(20) as usize),
            },
            tool_filter: false,
        }))
    },
    metric: Some(Metric {
        name: "block_io_issued",
        help: "Block I/O requests issued to the device, by disk and operation.",
        labels: &[("disk", "dev"), ("op", "rwbs")],
        by: &["disk", "op"],
        unit: None,
        buckets: None,
    }),
};
