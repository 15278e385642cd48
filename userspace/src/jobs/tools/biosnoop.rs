//! `tracekit biosnoop`: each block I/O with its latency (bcc/libbpf-tools' `biosnoop`): from
//! `block:block_rq_issue` to `block:block_rq_complete` (include/trace/events/block.h),
//! paired by (dev, sector) as `biolatency` pairs them; the issuing task, its size and the
//! completion's disk, operation (`rwbs`) and sector printed per I/O.

use super::{Column, EventsJob, Flag, Group, Plan, Tool, disk_filter};
use crate::engine::request::{Start, StartProbe};

/// `tracekit biosnoop`.
pub const TOOL: Tool = Tool {
    name: "biosnoop",
    summary: "Print each block I/O with its disk, size and latency (bcc biosnoop)",
    examples: "  tracekit biosnoop                  # every block I/O until Ctrl-C
  tracekit biosnoop --disk vda -d 10
  tracekit biosnoop -- dd if=/dev/zero of=f bs=4k count=300 oflag=direct

The latency runs from issue to the device (block_rq_issue) to completion; PID is the
process that issued the I/O.",
    flags: &[Flag::text(
        "disk",
        "NAME",
        "Only I/O to this disk (a name under /sys/block)",
    )],
    groups: &[Group::Common],
    plan: |values| {
        let filter = disk_filter(values.text("disk"))?;
        let mut job = EventsJob::new(
            "block:block_rq_complete",
            &[
                Column {
                    header: "PID",
                    field: "start.pid",
                },
                Column {
                    header: "DISK",
                    field: "dev",
                },
                Column {
                    header: "T",
                    field: "rwbs",
                },
                Column {
                    header: "SECTOR",
                    field: "sector",
                },
                Column {
                    header: "BYTES",
                    field: "start.bytes",
                },
                Column {
                    header: "LAT(ns)",
                    field: "latency",
                },
            ],
        );
        let mut issue = StartProbe::new("block:block_rq_issue", &["dev", "sector"]);
        issue.filter = filter.clone();
        job.request.start = Some(Start {
            probes: vec![issue],
            end_pair: vec!["dev".into(), "sector".into()],
            all_tasks: false,
            per_thread: false,
        });
        // Completions run in interrupt context: the issue selected the process.
        job.request.all_tasks = true;
        job.request.filter = filter;
        Ok(Plan::Events(job))
    },
    metric: None,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        engine::compile::{Events, compile_in},
        jobs::tools::FlagValues,
    };

    #[test]
    fn biosnoop_saves_the_issuer_and_size_at_issue() {
        let Plan::Events(job) = (TOOL.plan)(&FlagValues::defaults(&TOOL)).unwrap() else {
            panic!("events");
        };
        assert_eq!(
            compile_in(&job.request, &Events::test_6_18())
                .unwrap()
                .listing(),
            r#"Start Tracepoints([Tracepoint { system: "block", event: "block_rq_issue" }])
operands: #0 field@8:4 #1 field@16:8 #2 pid #3 field@28:4
corr: #0 #1 | key: - | saves: #2->0 #3->1
value: - | agg: count | layout: array bound 0
filter: -
flags: needs_ids
Main Tracepoints([Tracepoint { system: "block", event: "block_rq_complete" }])
operands: #0 field@8:4 #1 field@16:8 #2 saved0 #3 field_string@34:10 #4 saved1 #5 latency
corr: #0 #1 | key: - | saves: -
value: - | agg: trace | layout: array bound 0
filter: -
flags: needs_start all_tasks needs_ids
columns: 
"#
        );
    }
}
