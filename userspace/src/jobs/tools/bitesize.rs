//! `tracekit bitesize`: block I/O sizes per process (perf-tools' and bcc's `bitesize`): a
//! log2 histogram of `block:block_rq_issue`'s `bytes` (include/trace/events/block.h) by
//! `comm`.

use super::{Flag, Group, Metric, ToolPlan, Tool, ValueUnit, disk_filter};
use crate::{
    Result,
    engine::request::{KeyField, MapSizes, Request},
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
};

/// `tracekit bitesize`.
pub const TOOL: Tool = Tool {
    name: "bitesize",
    summary: "Block I/O size histograms per process (perf-tools/bcc bitesize)",
    examples:
        "  tracekit bitesize                 # block I/O size histograms per process until Ctrl-C
  tracekit bitesize --disk vda -d 10
  tracekit bitesize -- dd if=/dev/zero of=f bs=64k count=512 oflag=direct",
    flags: &[Flag::text(
        "disk",
        "NAME",
        "Only I/O to this disk (a name under /sys/block, e.g. vda, nvme0n1)",
    )],
    groups: &[Group::Common, Group::Maps],
    plan: |values| {
        bitesize(&BitesizeOptions {
            disk: values.text("disk").map(Into::into),
            maps: values.maps,
        })
        .map(ToolPlan::Aggregate)
    },
    metric: Some(Metric {
        name: "block_io_size",
        help: "Block I/O request sizes.",
        labels: &[("disk", "dev"), ("op", "rwbs")],
        by: &["disk", "op"],
        unit: Some(ValueUnit::Bytes),
        // 512 B to 64 MiB.
        buckets: Some((9, 26)),
    }),
};

/// Options of [`bitesize`].
#[derive(Clone, Debug, Default)]
pub struct BitesizeOptions {
    /// Only I/O to this disk (a name under /sys/block).
    pub disk: Option<String>,
    /// Kernel map sizes.
    pub maps: MapSizes,
}

/// The job: a log2 histogram of the bytes of each issued request, by `comm`.
///
/// # Errors
/// A usage error when the disk does not exist.
pub fn bitesize(options: &BitesizeOptions) -> Result<AggregateJob> {
    let filter = disk_filter(options.disk.as_deref())?;
    Ok(AggregateJob {
        command: "bitesize",
        what: Some("block I/O sizes".into()),
        request: Request {
            by: vec![KeyField::new("comm")],
            filter,
            maps: options.maps,
            ..Request::probe("block:block_rq_issue").log2("bytes")
        },
        report: Report::Log2 {
            unit: "bytes".into(),
        },
        tool_filter: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::compile::{Events, compile_in};

    #[test]
    fn bitesize_is_a_log2_of_bytes_by_comm() {
        let request = bitesize(&Default::default()).unwrap().request;
        assert_eq!(
            compile_in(&request, &Events::test_6_18())
                .unwrap()
                .listing(),
            r#"Main Tracepoints([Tracepoint { system: "block", event: "block_rq_issue" }])
operands: #0 field_string@44:16 #1 field@28:4
corr: - | key: #0 | saves: -
value: #1 | agg: log2 64 slots | layout: hash
filter: -
flags: -
columns: comm Str
"#
        );
    }
}
