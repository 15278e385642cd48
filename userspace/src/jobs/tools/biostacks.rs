//! `tracekit biostacks`: block I/O latency per initiating kernel stack (bcc's `biostacks`,
//! bpftrace's `biostacks.bt`): the start stage at `block:block_rq_issue` (or
//! `block_rq_insert`, `--queued`; include/trace/events/block.h) saves the issuing task's
//! comm, pid and kernel stack under (dev, sector); `block:block_rq_complete` finds them and
//! adds the latency to a log2 histogram per (comm, pid, disk, stack).

use super::{Flag, Group, Metric, ToolPlan, Tool, UNIT, ValueUnit, disk_filter};
use crate::{
    engine::request::{KeyField, Request, Start, StartProbe},
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
};

/// `tracekit biostacks`.
pub const TOOL: Tool = Tool {
    name: "biostacks",
    summary: "Block I/O latency histograms per initiating kernel stack (bcc biostacks)",
    examples: "  tracekit biostacks                 # until Ctrl-C
  tracekit biostacks --disk vda -d 10 --unit ms
  tracekit biostacks -Q              # from insertion in the I/O queue, with its stack
  tracekit biostacks -- dd if=/dev/zero of=f bs=4k count=300 oflag=direct

Each group is the task that issued the I/O (COMM, PID), its disk and the kernel stack it
issued it from (root first, `;` between frames), with a histogram of the latency from issue
to completion. Buffered writes are issued by kernel flusher threads, with their stacks.",
    flags: &[
        UNIT,
        Flag::switch(
            "queued",
            "Start at insertion in the I/O queue (block_rq_insert), with that stack, instead of issue to the device",
        )
        .short('Q'),
        Flag::text(
            "disk",
            "NAME",
            "Only I/O to this disk (a name under /sys/block)",
        ),
    ],
    groups: &[Group::Common, Group::Maps],
    plan: |values| {
        let filter = disk_filter(values.text("disk"))?;
        let begin = if values.switch("queued") {
            "block:block_rq_insert"
        } else {
            "block:block_rq_issue"
        };
        let mut start = StartProbe::new(begin, &["dev", "sector"]);
        start.filter = filter.clone();
        let unit = values.unit();
        Ok(ToolPlan::Aggregate(AggregateJob {
            command: "biostacks",
            what: Some("block I/O latency by initiating stack".into()),
            request: Request {
                start: Some(Start {
                    probes: vec![start],
                    end_pair: vec!["dev".into(), "sector".into()],
                    all_tasks: false,
                    per_thread: false,
                    keep: false,
                }),
                // Completions run in interrupt context: the start selected the process.
                all_tasks: true,
                filter,
                // The comm first: a start stage saves it in two words, the numbers after it.
                by: vec![
                    KeyField::labeled("COMM", "start.comm"),
                    KeyField::labeled("PID", "start.pid"),
                    KeyField::labeled("DISK", "dev"),
                    KeyField::labeled("STACK", "start.kstack"),
                ],
                value_div: unit.ns,
                maps: values.maps,
                ..Request::probe("block:block_rq_complete").log2("latency")
            },
            report: Report::Log2 {
                unit: unit.header.into(),
            },
            tool_filter: false,
        }))
    },
    metric: Some(Metric {
        name: "block_io_stack_latency",
        help: "Block I/O latency from issue to completion, by the issuing task and disk \
               (the stack stays out of the labels).",
        labels: &[("disk", "dev"), ("comm", "start.comm")],
        by: &["disk"],
        unit: Some(ValueUnit::Nanoseconds),
        // 1 us (slot 10: 1024-2047 ns) to 68 s.
        buckets: Some((10, 35)),
    }),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        engine::compile::{Events, compile_in},
        jobs::tools::FlagValues,
    };

    #[test]
    fn biostacks_saves_the_issuer_and_its_stack_at_issue() {
        let ToolPlan::Aggregate(job) = (TOOL.plan)(&FlagValues::defaults(&TOOL)).unwrap() else {
            panic!("aggregate");
        };
        assert_eq!(
            compile_in(&job.request, &Events::test_6_18())
                .unwrap()
                .listing(),
            r#"Start Tracepoints([Tracepoint { system: "block", event: "block_rq_issue" }])
operands: #0 field@8:4 #1 field@16:8 #2 field_string@44:16 #3 pid #4 kstack
corr: #0 #1 | key: - | saves: #2->0 #2->1 #3->2 #4->3
value: - | agg: count | layout: array bound 0
filter: -
flags: needs_ids
Main Tracepoints([Tracepoint { system: "block", event: "block_rq_complete" }])
operands: #0 field@8:4 #1 field@16:8 #2 saved_str #3 saved2 #4 saved3 #5 latency
corr: #0 #1 | key: #2 #3 #0 #4 | saves: -
value: #5 /1000 | agg: log2 64 slots | layout: hash
filter: -
flags: needs_start all_tasks
columns: COMM Str, PID Int { signed: false }, DISK Disk, STACK KernelStack
"#
        );
    }
}
