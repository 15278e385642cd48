//! `tracekit biolatency`: block I/O latency (bcc's `biolatency`), from
//! `block:block_rq_issue` (or `block_rq_insert`) to `block:block_rq_complete`, paired by
//! (dev, sector), as a log2 histogram.

use super::{Flag, Group, LatencyUnit, Metric, ToolPlan, Tool, UNIT, ValueUnit, disk_filter};
use crate::{
    Result,
    engine::request::{KeyField, MapSizes, Request, Start, StartProbe},
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
};

/// `tracekit biolatency`.
pub const TOOL: Tool = Tool {
    name: "biolatency",
    summary: "Block I/O latency histogram, issue to completion (bcc biolatency)",
    examples:
        "  tracekit biolatency -d 10            # block I/O latency, issue to completion, in us
  tracekit biolatency --unit ms --per-disk
  tracekit biolatency --queued -i 1    # from insertion in the queue, every second
  tracekit biolatency --percentiles    # p50, p90, p99, p99.9, max (buckets 6% wide)
  tracekit biolatency -i 1 -d 60 -o heat.svg  # latency heat map, one column a second",
    flags: &[
        UNIT,
        Flag::switch("per-disk", "One histogram per disk"),
        Flag::switch(
            "queued",
            "Measure from insertion in the I/O queue (block_rq_insert) instead of issue to the device",
        ),
        Flag::text(
            "disk",
            "NAME",
            "Only I/O to this disk (a name under /sys/block)",
        ),
    ],
    groups: &[Group::Percentiles, Group::Common, Group::Maps],
    plan: |values| {
        biolatency(&BiolatencyOptions {
            unit: values.unit(),
            per_disk: values.switch("per-disk"),
            queued: values.switch("queued"),
            disk: values.text("disk").map(Into::into),
            maps: values.maps,
        })?
        .percentiles(values.percentiles, "")
        .map(ToolPlan::Aggregate)
    },
    metric: Some(Metric {
        name: "block_io_latency",
        help: "Block I/O latency from issue to completion.",
        labels: &[("disk", "dev"), ("op", "rwbs")],
        by: &["disk", "op"],
        unit: Some(ValueUnit::Nanoseconds),
        // 1 us (slot 10: 1024-2047 ns) to 68 s.
        buckets: Some((10, 35)),
    }),
};

/// Options of [`biolatency`].
#[derive(Clone, Debug, Default)]
pub struct BiolatencyOptions {
    /// The histogram's unit.
    pub unit: LatencyUnit,
    /// One histogram per disk.
    pub per_disk: bool,
    /// Measure from insertion in the I/O queue instead of issue to the device.
    pub queued: bool,
    /// Only I/O to this disk.
    pub disk: Option<String>,
    /// Kernel map sizes.
    pub maps: MapSizes,
}

/// The job. Completions run in interrupt context or another task's, so with `-p`/`-- CMD`
/// the issue selects the I/O and its completion counts whoever runs it.
///
/// # Errors
/// A usage error when the disk does not exist.
pub fn biolatency(options: &BiolatencyOptions) -> Result<AggregateJob> {
    let filter = disk_filter(options.disk.as_deref())?;
    let issue = if options.queued {
        "block:block_rq_insert"
    } else {
        "block:block_rq_issue"
    };
    let mut begin = StartProbe::new(issue, &["dev", "sector"]);
    begin.filter = filter.clone();
    Ok(AggregateJob {
        command: "biolatency",
        what: Some(format!(
            "block I/O latency ({} to completion)",
            if options.queued {
                "queue insertion"
            } else {
                "issue"
            }
        )),
        request: Request {
            start: Some(Start {
                probes: vec![begin],
                end_pair: vec!["dev".into(), "sector".into()],
                all_tasks: false,
                per_thread: false,
                keep: false,
            }),
            all_tasks: true,
            filter,
            by: if options.per_disk {
                vec![KeyField::labeled("disk", "dev")]
            } else {
                Vec::new()
            },
            value_div: options.unit.ns,
            maps: options.maps,
            ..Request::probe("block:block_rq_complete").log2("latency")
        },
        report: Report::Log2 {
            unit: options.unit.header.into(),
        },
        tool_filter: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::compile::{Events, compile_in};

    #[test]
    fn biolatency_pairs_issue_and_completion_by_dev_and_sector() {
        let options = BiolatencyOptions {
            per_disk: true,
            ..Default::default()
        };
        let request = biolatency(&options).unwrap().request;
        assert_eq!(
            compile_in(&request, &Events::test_6_18())
                .unwrap()
                .listing(),
            r#"Start Tracepoints([Tracepoint { system: "block", event: "block_rq_issue" }])
operands: #0 field@8:4 #1 field@16:8
corr: #0 #1 | key: - | saves: -
value: - | agg: count | layout: array bound 0
filter: -
flags: -
Main Tracepoints([Tracepoint { system: "block", event: "block_rq_complete" }])
operands: #0 field@8:4 #1 field@16:8 #2 latency
corr: #0 #1 | key: #0 | saves: -
value: #2 /1000 | agg: log2 64 slots | layout: hash
filter: -
flags: needs_start all_tasks
columns: disk Disk
"#
        );
    }
}
