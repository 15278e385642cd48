//! `tracekit tcplife`: each TCP connection's life when it closes (bcc/libbpf-tools
//! `tcplife`): addresses, ports, bytes sent and received, and how long it lived. From
//! `sock:inet_sock_set_state`, paired by the socket's address (`skaddr`): its start is the
//! change to SYN_SENT (`connect()`, in the connecting process, whose pid is kept) or to
//! SYN_RECV (a listener's new socket), its end the change to CLOSE, where the byte counts
//! are read from the socket through BTF (`struct tcp_sock`'s `bytes_acked` and
//! `bytes_received`, as libbpf-tools reads them; they count the SYN and FIN too).

use super::{
    Column, EventsJob, Flag, Group, ToolPlan, Tool,
    tcpstates::{CLOSE, IPPROTO_TCP, SYN_RECV, SYN_SENT, port_filters},
};
use crate::engine::request::{Start, StartProbe};

/// `tracekit tcplife`.
pub const TOOL: Tool = Tool {
    name: "tcplife",
    summary: "Print each TCP connection when it closes: addresses, ports, bytes, lifetime (libbpf-tools tcplife)",
    examples: "  tracekit tcplife                    # every TCP connection's life until Ctrl-C
  tracekit tcplife --lport 8080       # connections on local port 8080
  tracekit tcplife --json -- ./load-test

TX_B and RX_B are the socket's bytes_acked and bytes_received (the SYN and FIN count as a
byte each, as in the kernel's counters); LIFE(ns) is from SYN_SENT or SYN_RECV to CLOSE.
PID is the process that called connect(); for an accepted connection it is the task
that the SYN arrived in (the accepting process is not known there). Needs the kernel's BTF.",
    flags: &[
        Flag::number("lport", "PORT", None, "Only connections with this local port"),
        Flag::number("rport", "PORT", None, "Only connections with this remote port"),
    ],
    groups: &[Group::Common, Group::Maps],
    plan: |values| {
        let mut filter = vec![format!("newstate == {CLOSE}")];
        filter.extend(port_filters(values.number("lport"), values.number("rport"))?);
        let mut job = EventsJob::new(
            "sock:inet_sock_set_state",
            &[
                Column {
                    header: "PID",
                    field: "start.pid",
                },
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
                    header: "TX_B",
                    field: "(struct tcp_sock *)skaddr->bytes_acked",
                },
                Column {
                    header: "RX_B",
                    field: "(struct tcp_sock *)skaddr->bytes_received",
                },
                Column {
                    header: "LIFE(ns)",
                    field: "latency",
                },
            ],
        );
        job.request.start = Some(Start {
            probes: vec![
                StartProbe::new("sock:inet_sock_set_state", &["skaddr"]).filtered(format!(
                    "protocol == {IPPROTO_TCP} && (newstate == {SYN_SENT} || newstate == {SYN_RECV})"
                )),
            ],
            end_pair: vec!["skaddr".into()],
            // With -p/-- CMD: the connections the process began.
            all_tasks: false,
            per_thread: false,
            keep: false,
        });
        job.request.all_tasks = true;
        job.request.filter = Some(filter.join(" && "));
        job.request.maps = values.maps;
        Ok(ToolPlan::Events(job))
    },
    metric: None,
};
