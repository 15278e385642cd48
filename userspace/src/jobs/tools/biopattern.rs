//! `tracekit biopattern`: random and sequential block I/O per disk (libbpf-tools'
//! `biopattern`): each request issued to a device (`block:block_rq_issue`,
//! include/trace/events/block.h) is sequential when it starts at the sector where the
//! disk's previous one ended (`follows(dev,sector,nr_sector)`, kept in the kernel), random
//! otherwise; counted per disk with its sectors, and shown as `DISK %RND %SEQ COUNT KBYTES`.

use super::{Flag, Group, Metric, ToolPlan, Tool, disk_filter};
use crate::{
    Result,
    engine::request::{KeyField, MapSizes, Request},
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
};

/// The pattern key: 1 when a request starts where the disk's previous one ended, 0 when
/// not, 2 for the disk's first request.
pub const FOLLOWS: &str = "follows(dev,sector,nr_sector)";

/// `tracekit biopattern`.
pub const TOOL: Tool = Tool {
    name: "biopattern",
    summary: "Random and sequential block I/O per disk, in percent (libbpf-tools biopattern)",
    examples: "  tracekit biopattern                # per disk until Ctrl-C
  tracekit biopattern -i 1 -d 10     # each second for 10 seconds
  tracekit biopattern --disk vda
  tracekit biopattern -- dd if=/dev/zero of=f bs=4k count=300 oflag=direct

A request is sequential when it starts at the sector where the previous request issued to
the same disk ended (with -p or -- CMD: the previous one of those processes), random
otherwise; a disk's first request counts neither way, as in libbpf-tools. COUNT is the
requests counted, KBYTES their size. Requests are counted when issued to the device
(block_rq_issue, as biotop counts them; libbpf-tools counts completions), so -p and -- CMD
select the process that issued them.",
    flags: &[Flag::text(
        "disk",
        "NAME",
        "Only I/O to this disk (a name under /sys/block)",
    )],
    groups: &[Group::Common, Group::Maps],
    plan: |values| {
        biopattern(values.text("disk"), values.maps).map(ToolPlan::Aggregate)
    },
    metric: Some(Metric {
        name: "block_io_pattern",
        help: "Block I/O requests issued, by disk and pattern: 1 sequential (starting where \
               the disk's previous request ended), 0 random, 2 a disk's first request.",
        labels: &[("disk", "dev"), ("pattern", FOLLOWS)],
        by: &["disk", "pattern"],
        unit: None,
        buckets: None,
    }),
};

/// The job: requests issued, keyed by (disk, [`FOLLOWS`]), with their sectors summed.
///
/// # Errors
/// A usage error when the disk does not exist.
pub fn biopattern(disk: Option<&str>, maps: MapSizes) -> Result<AggregateJob> {
    Ok(AggregateJob {
        command: "biopattern",
        what: Some("block I/O patterns (requests issued)".into()),
        request: Request {
            value: Some("nr_sector".into()),
            by: vec![
                KeyField::labeled("DISK", "dev"),
                KeyField::labeled("PATTERN", FOLLOWS),
            ],
            filter: disk_filter(disk)?,
            maps,
            ..Request::probe("block:block_rq_issue")
        },
        report: Report::Pattern,
        tool_filter: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        engine::{
            Group, KeyColumn, KeyKind, KeyValue,
            compile::{Events, compile_in},
        },
        output::aggregates::pattern_table,
    };

    #[test]
    fn biopattern_keys_each_issue_by_disk_and_whether_it_follows() {
        let request = biopattern(None, MapSizes::default()).unwrap().request;
        assert_eq!(
            compile_in(&request, &Events::test_6_18())
                .unwrap()
                .listing(),
            r#"Main Tracepoints([Tracepoint { system: "block", event: "block_rq_issue" }])
operands: #0 field@8:4 #1 field@16:8 #2 field@24:4 #3 follows(#0,#1,#2)
corr: - | key: #0 #3 | saves: -
value: #2 | agg: count | layout: hash
filter: -
flags: -
columns: DISK Disk, PATTERN Int { signed: false }
"#
        );
    }

    #[test]
    fn biopattern_table_is_libbpf_tools_layout() {
        let group = |disk: &str, pattern, count, sum| Group {
            key: vec![KeyValue::Text(disk.into()), KeyValue::Int(pattern)],
            count,
            sum,
            slots: Vec::new(),
        };
        let columns = [
            KeyColumn {
                name: "DISK".into(),
                kind: KeyKind::Disk,
            },
            KeyColumn {
                name: "PATTERN".into(),
                kind: KeyKind::Int { signed: false },
            },
        ];
        let groups = [
            group("vda", 0, 1, 8),
            group("vda", 1, 298, 2384),
            group("vda", 2, 1, 8),
            group("vdb", 2, 1, 8),
            group("nvme0n1", 0, 2, 16),
            group("nvme0n1", 1, 1, 8),
        ];
        assert_eq!(
            pattern_table(&columns, &groups),
            "DISK     %RND  %SEQ    COUNT     KBYTES
nvme0n1    66    33        3         12
vda         0    99      299       1196
"
        );
    }
}
