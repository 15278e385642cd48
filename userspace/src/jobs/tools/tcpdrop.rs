//! `tracekit tcpdrop`: each IP packet the kernel drops, with the drop reason and the kernel
//! stack that dropped it (bcc's `tcpdrop`), at `skb:kfree_skb` (include/trace/events/skb.h)
//! filtered in the kernel to IPv4 and IPv6 (`protocol` 0x0800, 0x86dd). The reason is
//! named as the running kernel's own format file names it (`NO_SOCKET`,
//! `TCP_INVALID_SEQUENCE`, ...: `enum skb_drop_reason`).
//!
//! bcc's tcpdrop probes `tcp_drop()` with a kprobe, which newer kernels no longer have; the
//! tracepoint sees every protocol's drops over IP, so UDP's and ICMP's show too (their
//! stacks and reasons name them: `UDP_CSUM`, `udp_queue_rcv_one_skb`).

use super::{CLOCK, Column, EventsJob, Group, NAME, ToolPlan, TIMESTAMP, Tool};
use crate::Result;

/// `tracekit tcpdrop`.
pub const TOOL: Tool = Tool {
    name: "tcpdrop",
    summary: "Print each IP packet the kernel drops, with the reason and kernel stack (bcc tcpdrop)",
    examples: "  tracekit tcpdrop                  # every dropped IPv4/IPv6 packet until Ctrl-C
  tracekit tcpdrop -T -d 60         # for a minute, with the wall clock
  tracekit tcpdrop --json -o drops.json

PID and COMM are the task the drop ran in: packets are often received in a softirq, on top
of whichever task the CPU was running (for loopback traffic, the sender). A SYN to a port
nobody listens on is NO_SOCKET. The STACK is the kernel's, innermost first.",
    flags: &[NAME, TIMESTAMP, CLOCK],
    groups: &[Group::Common, Group::Maps],
    plan: |values| tcpdrop(values).map(ToolPlan::Events),
    metric: None,
};

/// The columns: `PID COMM REASON`, then the kernel stack.
pub const COLUMNS: [Column; 4] = [
    Column {
        header: "PID",
        field: "pid",
    },
    Column {
        header: "COMM",
        field: "comm",
    },
    Column {
        header: "REASON",
        field: "symbol(reason)",
    },
    Column {
        header: "STACK",
        field: "kstack",
    },
];

fn tcpdrop(values: &super::FlagValues) -> Result<EventsJob> {
    // Drops in a softirq run on top of any task: with -p, the packets it sent or received
    // while it ran.
    let filters = vec!["(protocol == 0x800 || protocol == 0x86dd)".to_string()];
    EventsJob::new("skb:kfree_skb", &COLUMNS).with_flags(filters, values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        engine::compile::{Events, compile_in},
        jobs::tools::FlagValues,
    };

    #[test]
    fn tcpdrop_keeps_ip_packets_and_reads_the_reason() {
        let ToolPlan::Events(job) = (TOOL.plan)(&FlagValues::defaults(&TOOL)).unwrap() else {
            panic!("events");
        };
        assert_eq!(job.request.print, ["reason", "kstack"]);
        let listing = compile_in(&job.request, &Events::test_6_18())
            .unwrap()
            .listing();
        assert!(listing.contains("kfree_skb"), "{listing}");
    }
}
