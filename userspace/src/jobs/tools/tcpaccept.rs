//! `tracekit tcpaccept`: each TCP connection a listener accepted (bcc/libbpf-tools
//! `tcpaccept`), seen as the new socket's change from SYN_RECV to ESTABLISHED on
//! `sock:inet_sock_set_state` (the handshake's last ACK arrived; the connection is then in
//! the listener's accept queue).
//!
//! That change runs in the network softirq, in whatever task it interrupted (on loopback
//! often the connecting client), not in the process that calls `accept()`, so this tool
//! has no PID/COMM columns: libbpf-tools reads them at the return of `inet_csk_accept`, a
//! kernel function this tool does not probe (no kprobes or fentry on every kernel).

use super::{
    Column, EventsJob, Flag, Group, Plan, Tool,
    tcpstates::{ESTABLISHED, IPPROTO_TCP, SYN_RECV, port_filters},
};
use crate::{Error, session::Scope};

/// `tracekit tcpaccept`.
pub const TOOL: Tool = Tool {
    name: "tcpaccept",
    summary: "Print each TCP connection accepted by a listener, with addresses and ports (libbpf-tools tcpaccept)",
    examples: "  tracekit tcpaccept                  # every accepted TCP connection until Ctrl-C
  tracekit tcpaccept --lport 8080     # connections to local port 8080
  tracekit tcpaccept --json -d 10

A connection is shown when its handshake completes (SYN_RECV -> ESTABLISHED), in the
network softirq: the accepting process is not known there, so there is no PID column.",
    flags: &[Flag::number(
        "lport",
        "PORT",
        None,
        "Only connections to this local port (bcc -P)",
    )],
    groups: &[Group::Common],
    plan: |values| {
        if let Scope::Pids(_) = values.scope {
            return Err(Error::usage(
                "tcpaccept -p: connections complete in the network softirq, not in the \
                 accepting process; use --lport PORT to select a listener",
            ));
        }
        let mut filter = vec![format!(
            "protocol == {IPPROTO_TCP} && oldstate == {SYN_RECV} && newstate == {ESTABLISHED}"
        )];
        filter.extend(port_filters(values.number("lport"), None)?);
        let mut job = EventsJob::new(
            "sock:inet_sock_set_state",
            &[
                Column {
                    header: "RADDR",
                    field: "daddr_v6",
                },
                Column {
                    header: "RPORT",
                    field: "dport",
                },
                Column {
                    header: "LADDR",
                    field: "saddr_v6",
                },
                Column {
                    header: "LPORT",
                    field: "sport",
                },
            ],
        );
        job.request.filter = Some(filter.join(" && "));
        // Any task's softirq: with `-- CMD`, every connection while CMD runs.
        job.request.all_tasks = true;
        Ok(Plan::Events(job))
    },
    metric: None,
};
