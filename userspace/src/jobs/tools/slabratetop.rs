//! `tracekit slabratetop`: kernel slab allocations by cache (bcc's and libbpf-tools'
//! `slabratetop`), counted in the kernel at `kmem:kmem_cache_alloc`
//! (include/trace/events/kmem.h): allocations and bytes (`bytes_alloc`, the object size
//! the cache hands out) per cache name, busiest first, each interval (`-i`) or at the end.
//! bcc probes `kmem_cache_alloc` with a kprobe; the tracepoint also sees the allocations
//! inlined callers make, and needs no kprobes.

use super::{Flag, Group, Metric, NAME, NOCLEAR, ToolPlan, Tool};
use crate::{
    engine::request::{KeyField, Request},
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
};

/// `tracekit slabratetop`.
pub const TOOL: Tool = Tool {
    name: "slabratetop",
    summary: "Kernel slab allocations by cache: allocations and bytes, busiest first (bcc slabratetop)",
    examples: "  tracekit slabratetop -i 1         # each second, the caches allocated from most
  tracekit slabratetop --top 5 -d 10
  tracekit slabratetop -- tar xf big.tar   # the allocations tar's system calls make

The name of a cache comes with each event, and names are keys of 32 bytes. Allocations an
interrupt makes are counted for the task it interrupted (use -a for the whole machine).",
    flags: &[
        NAME,
        NOCLEAR,
        Flag::number("top", "N", Some("20"), "Show the N busiest caches (bcc slabratetop -r)")
            .short('r'),
    ],
    groups: &[Group::Common, Group::Maps],
    plan: |values| {
        Ok(ToolPlan::Aggregate(AggregateJob {
            command: "slabratetop",
            what: Some("slab allocations".into()),
            request: Request {
                value: Some("bytes_alloc".into()),
                by: vec![KeyField::labeled("CACHE", "name")],
                filter: values.comm_filter()?,
                maps: values.maps,
                ..Request::probe("kmem:kmem_cache_alloc")
            },
            report: Report::Counts {
                clear: !values.switch(NOCLEAR.long),
                sum: Some(("BYTES".into(), 1.0)),
                top: Some(values.number("top").unwrap_or(20) as usize),
            },
            tool_filter: false,
        }))
    },
    metric: Some(Metric {
        name: "slab_allocations",
        help: "Kernel slab allocations (kmem_cache_alloc), by cache.",
        labels: &[("cache", "name")],
        by: &["cache"],
        unit: None,
        buckets: None,
    }),
};
