//! `tracekit tcpconnect`: each TCP `connect()` (bcc/libbpf-tools `tcpconnect`), seen as the
//! socket's change from CLOSE to SYN_SENT on `sock:inet_sock_set_state`, which runs in the
//! connecting process's context (`tcp_v4_connect`/`tcp_v6_connect` set the state before
//! sending the SYN): its pid and comm are the connecting process's.

use super::{
    Column, EventsJob, Flag, Group, NAME, ToolPlan, Tool,
    tcpstates::{CLOSE, IPPROTO_TCP, SYN_SENT, port_filters},
};

/// `tracekit tcpconnect`.
pub const TOOL: Tool = Tool {
    name: "tcpconnect",
    summary: "Print each TCP connect() with its process, addresses and port (libbpf-tools tcpconnect)",
    examples: "  tracekit tcpconnect                 # every TCP connect() until Ctrl-C
  tracekit tcpconnect -p 1234         # connects of process 1234
  tracekit tcpconnect --rport 443 -n curl
  tracekit tcpconnect --json -- ./client

Addresses are IPv4 or IPv6 (an IPv4 socket's, and an IPv4-mapped one, show as IPv4).",
    flags: &[
        Flag::number("rport", "PORT", None, "Only connects to this remote port (bcc -P)"),
        NAME,
    ],
    groups: &[Group::Common],
    plan: |values| {
        let mut filter = vec![format!(
            "protocol == {IPPROTO_TCP} && oldstate == {CLOSE} && newstate == {SYN_SENT}"
        )];
        filter.extend(port_filters(None, values.number("rport"))?);
        filter.extend(values.comm_filter()?);
        let mut job = EventsJob::new(
            "sock:inet_sock_set_state",
            &[
                Column {
                    header: "PID",
                    field: "pid",
                },
                Column {
                    header: "COMM",
                    field: "comm",
                },
                Column {
                    header: "SADDR",
                    field: "saddr_v6",
                },
                Column {
                    header: "DADDR",
                    field: "daddr_v6",
                },
                Column {
                    header: "DPORT",
                    field: "dport",
                },
            ],
        );
        job.request.filter = Some(filter.join(" && "));
        Ok(ToolPlan::Events(job))
    },
    metric: None,
};
