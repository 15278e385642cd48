//! `tracekit tcpretrans`: each TCP retransmission (bcc/libbpf-tools `tcpretrans`), from
//! `tcp:tcp_retransmit_skb` (include/trace/events/tcp.h), with the socket's addresses,
//! ports and state. Retransmissions run from timers and the network softirq, so there is
//! no process column (libbpf-tools' PID is the interrupted task's).

use super::{
    Column, EventsJob, Flag, Group, ToolPlan, Tool,
    tcpstates::port_filters,
};
use crate::Error;

/// `tracekit tcpretrans`.
pub const TOOL: Tool = Tool {
    name: "tcpretrans",
    summary: "Print each TCP retransmission with addresses, ports and state (libbpf-tools tcpretrans)",
    examples: "  tracekit tcpretrans                 # every TCP retransmission until Ctrl-C
  tracekit tcpretrans --rport 443 -d 60
  tracekit tcpretrans --json

STATE is the socket's TCP state (ESTABLISHED, SYN_SENT, ...).",
    flags: &[
        Flag::number("lport", "PORT", None, "Only sockets with this local port"),
        Flag::number("rport", "PORT", None, "Only sockets with this remote port"),
    ],
    groups: &[Group::Common],
    plan: |values| {
        if let Some(flag) = values.task_flag() {
            return Err(Error::usage(format!(
                "tcpretrans {flag}: retransmissions run from timers and the network softirq, not \
                 in a process; use --lport/--rport to select connections",
            )));
        }
        let filter = port_filters(values.number("lport"), values.number("rport"))?;
        let mut job = EventsJob::new(
            "tcp:tcp_retransmit_skb",
            &[
                Column {
                    header: "LADDR",
                    field: "saddr_v6",
                },
                Column {
                    header: "LPORT",
                    field: "sport",
                },
                Column {
                    header: "RADDR",
                    field: "daddr_v6",
                },
                Column {
                    header: "RPORT",
                    field: "dport",
                },
                Column {
                    header: "STATE",
                    field: "state",
                },
            ],
        );
        job.request.filter = (!filter.is_empty()).then(|| filter.join(" && "));
        job.request.all_tasks = true;
        Ok(ToolPlan::Events(job))
    },
    metric: None,
};
