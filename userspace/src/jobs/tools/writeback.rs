//! `tracekit writeback`: each writeback of dirty pages to a device with its latency
//! (bpftrace's `writeback.bt`): from `writeback:writeback_start` to
//! `writeback:writeback_written` of the same superblock's device (include/trace/events/
//! writeback.h), paired by `sb_dev` as bpftrace pairs them. Writeback runs in the flusher
//! kernel threads, so it is watched for the whole machine.

use super::{Column, EventsJob, Group, ToolPlan, Tool};
use crate::{
    Error,
    engine::request::{Start, StartProbe},
};

/// `tracekit writeback`.
pub const TOOL: Tool = Tool {
    name: "writeback",
    summary: "Print each writeback of dirty pages with its device, pages, reason and latency (bpftrace writeback.bt)",
    examples: "  tracekit writeback                 # every writeback until Ctrl-C
  tracekit writeback -d 30 --json

REASON is the kernel's wb_reason: 0 background, 1 vmscan, 2 sync, 3 periodic, 4 laptop_timer,
5 free_more_memory (fs_free_space on newer kernels), 6 forker_thread, ...",
    flags: &[],
    groups: &[Group::Common],
    plan: |values| {
        if let Some(flag) = values.task_flag() {
            return Err(Error::usage(format!(
                "writeback {flag}: writeback runs in the kernel's flusher threads, not the \
                 process that dirtied the pages; it watches the whole machine (use -a)",
            )));
        }
        let mut job = EventsJob::new(
            "writeback:writeback_written",
            &[
                Column {
                    header: "DEVICE",
                    field: "name",
                },
                Column {
                    header: "PAGES",
                    field: "nr_pages",
                },
                Column {
                    header: "REASON",
                    field: "reason",
                },
                Column {
                    header: "LAT(ns)",
                    field: "latency",
                },
            ],
        );
        job.request.start = Some(Start {
            probes: vec![StartProbe::new("writeback:writeback_start", &["sb_dev"])],
            end_pair: vec!["sb_dev".into()],
            all_tasks: true,
            per_thread: false,
            keep: false,
        });
        job.request.all_tasks = true;
        Ok(ToolPlan::Events(job))
    },
    metric: None,
};
