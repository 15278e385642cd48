//! `tracekit swapin`: pages read back from swap, per process (bcc's `swapin`): calls of the
//! kernel function that reads a page (folio) in from swap, `swap_read_folio` (mm/page_io.c,
//! Linux 6.10+; `swap_readpage` before), counted per (COMM, PID) in the kernel. A kernel
//! function: kprobe or fentry, whichever the kernel has.

use super::{Group, Metric, ToolPlan, Tool};
use crate::{
    engine::request::{KeyField, Request},
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
};

/// The function names, newest first: the first the running kernel has is probed.
pub const FUNCTIONS: [&str; 2] = ["swap_read_folio", "swap_readpage"];

/// `tracekit swapin`.
pub const TOOL: Tool = Tool {
    name: "swapin",
    summary: "Count pages swapped in, per process (bcc swapin)",
    examples: "  tracekit swapin -i 1               # each second, who waits for swap
  tracekit swapin -d 10
  tracekit swapin -- ./big-job

Each count is one call of swap_read_folio (swap_readpage before Linux 6.10): a page, or a
folio of pages, read back from swap for the process that faulted on it.",
    flags: &[],
    groups: &[Group::Probing],
    plan: |values| {
        Ok(ToolPlan::Aggregate(AggregateJob {
            command: "swapin",
            what: Some("swap-ins ({probes})".into()),
            request: Request {
                by: vec![
                    KeyField::labeled("COMM", "comm"),
                    KeyField::labeled("PID", "pid"),
                ],
                maps: values.maps,
                target: values.target,
                ..Request::probe(format!("kprobe:{}", swap_function()))
            },
            report: Report::Counts {
                clear: false,
                sum: None,
                top: None,
            },
            tool_filter: false,
        }))
    },
    metric: Some(Metric {
        name: "swap_ins",
        help: "Pages (folios) read back from swap (swap_read_folio or swap_readpage calls).",
        labels: &[],
        by: &["comm"],
        unit: None,
        buckets: None,
    }),
};

/// The first of [`FUNCTIONS`] that `/proc/kallsyms` lists, else the first (whose probe
/// then says it is missing).
fn swap_function() -> &'static str {
    let symbols = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    let has = |name: &str| {
        symbols
            .lines()
            .any(|line| line.split_whitespace().nth(2) == Some(name))
    };
    FUNCTIONS
        .iter()
        .copied()
        .find(|name| has(name))
        .unwrap_or(FUNCTIONS[0])
}
