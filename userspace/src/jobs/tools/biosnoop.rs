//! `tracekit biosnoop`: each block I/O with its latency (bcc/libbpf-tools' `biosnoop`): from
//! `block:block_rq_issue` (or `block_rq_insert`, `-Q`) to `block:block_rq_complete`
//! (include/trace/events/block.h), paired by (dev, sector) as `biolatency` pairs them; the
//! issuing task (its comm and pid) and the size saved at the start, the completion's disk,
//! operation (`rwbs`) and sector printed per I/O, in libbpf-tools' columns `TIME(s) COMM PID
//! DISK T SECTOR BYTES LAT(ms)`.

use super::{CLOCK, Column, EventTime, EventsJob, Flag, Group, ToolPlan, Tool, disk_filter};
use crate::engine::request::{Start, StartProbe};

/// `tracekit biosnoop`.
pub const TOOL: Tool = Tool {
    name: "biosnoop",
    summary: "Print each block I/O with its disk, size and latency (bcc biosnoop)",
    examples: "  tracekit biosnoop                  # every block I/O until Ctrl-C
  tracekit biosnoop --disk vda -d 10
  tracekit biosnoop -Q               # latency from insertion in the queue
  tracekit biosnoop -- dd if=/dev/zero of=f bs=4k count=300 oflag=direct

TIME(s) is seconds since tracing began (-T: the wall clock instead). LAT(ms) runs from issue
to the device (block_rq_issue) to completion, or with -Q from insertion in the I/O queue
(block_rq_insert; libbpf-tools' -Q prints the queue time in a column of its own instead).
COMM and PID are the task that issued (-Q: inserted) the I/O; -p and -- CMD select by it.",
    flags: &[
        Flag::text(
            "disk",
            "NAME",
            "Only I/O to this disk (a name under /sys/block)",
        ),
        Flag::switch(
            "queued",
            "Measure from insertion in the I/O queue (block_rq_insert) instead of issue to the device",
        )
        .short('Q'),
        CLOCK,
    ],
    groups: &[Group::Common],
    plan: |values| {
        let filter = disk_filter(values.text("disk"))?;
        let mut job = EventsJob::new(
            "block:block_rq_complete",
            &[
                // COMM first: a start stage saves a comm in two words, the numbers after it.
                Column {
                    header: "COMM",
                    field: "start.comm",
                },
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
                    header: "LAT(ms)",
                    field: "ms(latency)",
                },
            ],
        );
        let begin = if values.switch("queued") {
            "block:block_rq_insert"
        } else {
            "block:block_rq_issue"
        };
        let mut issue = StartProbe::new(begin, &["dev", "sector"]);
        issue.filter = filter.clone();
        job.request.start = Some(Start {
            probes: vec![issue],
            end_pair: vec!["dev".into(), "sector".into()],
            all_tasks: false,
            per_thread: false,
            keep: false,
        });
        // Completions run in interrupt context: the issue selected the process.
        job.request.all_tasks = true;
        job.request.filter = filter;
        // libbpf-tools always prints TIME(s).
        job.time = match EventTime::of(values) {
            EventTime::Clock => EventTime::Clock,
            _ => EventTime::Relative,
        };
        Ok(ToolPlan::Events(job))
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
    fn biosnoop_saves_the_issuers_comm_pid_and_size_at_issue() {
        let ToolPlan::Events(job) = (TOOL.plan)(&FlagValues::defaults(&TOOL)).unwrap() else {
            panic!("events");
        };
        assert_eq!(
            compile_in(&job.request, &Events::test_6_18())
                .unwrap()
                .listing(),
            r#"Start Tracepoints([Tracepoint { system: "block", event: "block_rq_issue" }])
operands: #0 field@8:4 #1 field@16:8 #2 field_string@44:16 #3 pid #4 field@28:4
corr: #0 #1 | key: - | saves: #2->0 #2->1 #3->2 #4->3
value: - | agg: count | layout: array bound 0
filter: -
flags: needs_ids
Main Tracepoints([Tracepoint { system: "block", event: "block_rq_complete" }])
operands: #0 field@8:4 #1 field@16:8 #2 saved_str #3 saved2 #4 field_string@34:10 #5 saved3 #6 latency
corr: #0 #1 | key: - | saves: -
value: - | agg: trace | layout: array bound 0
filter: -
flags: needs_start all_tasks needs_ids
columns: 
"#
        );
    }
}
