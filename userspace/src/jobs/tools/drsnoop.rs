//! `tracekit drsnoop`: each direct reclaim, a task allocating memory made to free pages
//! itself (bcc/libbpf-tools' `drsnoop`): from `vmscan:mm_vmscan_direct_reclaim_begin` to
//! `_end` of one thread (include/trace/events/vmscan.h), with the pages it reclaimed.

use super::{Column, EventsJob, Group, NAME, ToolPlan, Tool};
use crate::engine::request::{Start, StartProbe};

/// `tracekit drsnoop`.
pub const TOOL: Tool = Tool {
    name: "drsnoop",
    summary: "Print each direct memory reclaim with its latency and pages freed (bcc drsnoop)",
    examples: "  tracekit drsnoop                   # every direct reclaim until Ctrl-C
  tracekit drsnoop -p 1234 -d 60
  tracekit drsnoop -n postgres --json",
    flags: &[NAME],
    groups: &[Group::Common],
    plan: |values| {
        let mut job = EventsJob::new(
            "vmscan:mm_vmscan_direct_reclaim_end",
            &[
                Column {
                    header: "COMM",
                    field: "comm",
                },
                Column {
                    header: "TID",
                    field: "tid",
                },
                Column {
                    header: "LAT(ns)",
                    field: "latency",
                },
                Column {
                    header: "PAGES",
                    field: "nr_reclaimed",
                },
            ],
        );
        job.request.start = Some(Start {
            probes: vec![StartProbe::new(
                "vmscan:mm_vmscan_direct_reclaim_begin",
                &["tid"],
            )],
            end_pair: vec!["tid".into()],
            all_tasks: false,
            per_thread: true,
            keep: false,
        });
        job.request.filter = values.comm_filter()?;
        Ok(ToolPlan::Events(job))
    },
    metric: None,
};
