//! `tracekit tcpstates`: each TCP state change (bcc/libbpf-tools `tcpstates`), from
//! `sock:inet_sock_set_state` (include/trace/events/sock.h), with the socket's addresses and
//! ports. The change runs in whichever context made it: the process for `connect()`,
//! `listen()` and `close()`, the network softirq for a peer's packets, so `PID`/`COMM` are
//! those of the context (libbpf-tools' `C-PID`/`C-COMM`).

use super::{Column, EventsJob, Flag, Group, NAME, ToolPlan, Tool};
use crate::Result;

/// `TCP_ESTABLISHED` (include/net/tcp_states.h), and the other states the network tools
/// filter on.
pub const ESTABLISHED: u32 = 1;
/// `TCP_SYN_SENT`: a `connect()` sent its SYN.
pub const SYN_SENT: u32 = 2;
/// `TCP_SYN_RECV`: a listener's new socket for a SYN.
pub const SYN_RECV: u32 = 3;
/// `TCP_CLOSE`.
pub const CLOSE: u32 = 7;
/// `TCP_LISTEN`.
pub const LISTEN: u32 = 10;
/// `IPPROTO_TCP`: `sock:inet_sock_set_state` also reports SCTP and MPTCP sockets.
pub const IPPROTO_TCP: u32 = 6;

/// `tracekit tcpstates`.
pub const TOOL: Tool = Tool {
    name: "tcpstates",
    summary: "Print each TCP state change with addresses and ports (libbpf-tools tcpstates)",
    examples: "  tracekit tcpstates                  # every TCP state change until Ctrl-C
  tracekit tcpstates --lport 8080     # only sockets with local port 8080
  tracekit tcpstates --json -d 10

States are named as in include/net/tcp_states.h (ESTABLISHED, SYN_SENT, ..., without
TCP_). C-PID and C-COMM are the context the change ran in: the process for connect(),
listen() and close(), the interrupted task for the peer's packets.",
    flags: &[
        Flag::number("lport", "PORT", None, "Only sockets with this local port"),
        Flag::number("rport", "PORT", None, "Only sockets with this remote port"),
        NAME,
    ],
    groups: &[Group::Common],
    plan: |values| {
        let mut filter = vec![format!("protocol == {IPPROTO_TCP}")];
        filter.extend(port_filters(values.number("lport"), values.number("rport"))?);
        filter.extend(values.comm_filter()?);
        let mut job = EventsJob::new(
            "sock:inet_sock_set_state",
            &[
                Column {
                    header: "SKADDR",
                    field: "skaddr",
                },
                Column {
                    header: "C-PID",
                    field: "pid",
                },
                Column {
                    header: "C-COMM",
                    field: "comm",
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
                    header: "OLDSTATE",
                    field: "oldstate",
                },
                Column {
                    header: "NEWSTATE",
                    field: "newstate",
                },
            ],
        );
        job.request.filter = Some(filter.join(" && "));
        Ok(ToolPlan::Events(job))
    },
    metric: None,
};

/// `sport == L && dport == R` parts for `--lport`/`--rport` of a tracepoint whose `sport`
/// is the local port (`sock:inet_sock_set_state`, `tcp:tcp_retransmit_skb`).
///
/// # Errors
/// A usage error for a port above 65535.
pub fn port_filters(lport: Option<u64>, rport: Option<u64>) -> Result<Vec<String>> {
    let mut parts = Vec::new();
    for (flag, field, port) in [("--lport", "sport", lport), ("--rport", "dport", rport)] {
        if let Some(port) = port {
            if port > 65535 {
                return Err(crate::Error::usage(format!(
                    "{flag} {port}: a port is 0 to 65535"
                )));
            }
            parts.push(format!("{field} == {port}"));
        }
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        engine::compile::{Events, compile_in},
        jobs::tools::{FlagValues, Value},
    };

    /// Addresses read as 16 raw bytes (both families), ports and states as integers; the
    /// pid and comm come with each record and read nothing.
    #[test]
    fn tcpstates_reads_addresses_as_bytes() {
        let mut values = FlagValues::defaults(&TOOL);
        values.set("lport", Value::Number(8080));
        let ToolPlan::Events(job) = (TOOL.plan)(&values).unwrap() else {
            panic!("events");
        };
        assert_eq!(
            job.request.filter.as_deref(),
            Some("protocol == 6 && sport == 8080")
        );
        let listing = compile_in(&job.request, &Events::test_6_18())
            .unwrap()
            .listing();
        assert!(
            listing.contains(
                "operands: #0 field@8:8 #1 field_bytes@40:16 #2 field@24:2 #3 field_bytes@56:16 \
                 #4 field@26:2 #5 field@16:s4 #6 field@20:s4 #7 field@30:2\n"
            ),
            "{listing}"
        );
        assert!(
            listing.contains("filter: eq #7 6 eq #2 8080 and\n"),
            "{listing}"
        );
        values.set("lport", Value::Number(70000));
        let err = (TOOL.plan)(&values).unwrap_err();
        assert_eq!(err.to_string(), "--lport 70000: a port is 0 to 65535");
    }
}
