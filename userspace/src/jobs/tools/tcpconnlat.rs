//! `tracekit tcpconnlat`: TCP connect latency (bcc/libbpf-tools `tcpconnlat`), from a
//! socket's change to SYN_SENT (in the connecting process, whose pid is kept) to its change
//! from SYN_SENT to ESTABLISHED (the SYN-ACK arrived, in the network softirq), both on
//! `sock:inet_sock_set_state`, paired by the socket's address (`skaddr`).

use super::{
    Column, EventsJob, Flag, Group, ToolPlan, Tool,
    tcpstates::{ESTABLISHED, IPPROTO_TCP, SYN_SENT, port_filters},
};
use crate::engine::request::{Start, StartProbe};

/// `tracekit tcpconnlat`.
pub const TOOL: Tool = Tool {
    name: "tcpconnlat",
    summary: "Print each TCP connect's latency, SYN sent to connection established (libbpf-tools tcpconnlat)",
    examples: "  tracekit tcpconnlat                 # each connect's latency until Ctrl-C
  tracekit tcpconnlat --rport 443
  tracekit tcpconnlat -p 1234 --json

LAT(ns) is from the SYN sent (SYN_SENT) to the handshake's SYN-ACK (ESTABLISHED); PID is
the connecting process, kept from the SYN_SENT change.",
    flags: &[Flag::number(
        "rport",
        "PORT",
        None,
        "Only connects to this remote port",
    )],
    groups: &[Group::Common, Group::Maps],
    plan: |values| {
        let mut filter = vec![format!(
            "oldstate == {SYN_SENT} && newstate == {ESTABLISHED}"
        )];
        filter.extend(port_filters(None, values.number("rport"))?);
        let mut job = EventsJob::new(
            "sock:inet_sock_set_state",
            &[
                Column {
                    header: "PID",
                    field: "start.pid",
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
                Column {
                    header: "LAT(ns)",
                    field: "latency",
                },
            ],
        );
        job.request.start = Some(Start {
            probes: vec![
                StartProbe::new("sock:inet_sock_set_state", &["skaddr"]).filtered(format!(
                    "protocol == {IPPROTO_TCP} && newstate == {SYN_SENT}"
                )),
            ],
            end_pair: vec!["skaddr".into()],
            all_tasks: false,
            per_thread: false,
            keep: false,
        });
        // The SYN-ACK arrives in the softirq; the start (the connecting process) selects.
        job.request.all_tasks = true;
        job.request.filter = Some(filter.join(" && "));
        job.request.maps = values.maps;
        Ok(ToolPlan::Events(job))
    },
    metric: None,
};
