//! `tracekit tcptop`: TCP traffic by process and connection (bcc's and libbpf-tools'
//! `tcptop`): the bytes each process received and sent on each TCP connection, IPv4 and
//! IPv6, per interval (`-i`) or for the whole run, busiest first. From
//! `sock:sock_recv_length` and `sock:sock_send_length` (Linux 6.4+; net/socket.c, every
//! `recvmsg`/`sendmsg` on a socket, `read`/`write` included, in the calling task), the
//! connection read through BTF from the socket (`(struct sock *)sk->__sk_common`: the
//! 16-byte `skc_v6_rcv_saddr` and `skc_v6_daddr`, which hold an IPv4 socket's addresses
//! IPv4-mapped, and `skc_portpair`, both ports in one word), keyed in the kernel by probe,
//! pid, comm, addresses and ports: 8 key words (an address takes 2).

use super::{Flag, FlagKind, Group, Metric, NAME, NOCLEAR, ToolPlan, Tool, ValueUnit};
use crate::{
    engine::request::{KeyField, Request},
    jobs::aggregate::AggregateJob,
    output::aggregates::{Report, split::Split},
};

/// The probes: bytes received, then sent.
const PROBES: [&str; 2] = ["sock:sock_recv_length", "sock:sock_send_length"];

/// `tracekit tcptop`.
pub const TOOL: Tool = Tool {
    name: "tcptop",
    summary: "TCP traffic by process and connection: KiB received and sent, busiest first (libbpf-tools tcptop)",
    examples: "  tracekit tcptop -i 1                # each second, the busiest TCP connections
  tracekit tcptop -p 1234 -d 10       # one process's connections, for 10 s
  tracekit tcptop --json -- ./client  # bytes per connection while ./client runs
  tracekit tcptop -6 -i 5             # IPv6 sockets only, every 5 s
  tracekit tcptop --sort sent -r 5    # the 5 connections that sent the most

RX_KB and TX_KB are what recvmsg/read and sendmsg/write returned (bytes copied, rounded
down to KiB; --json has the bytes). sendfile and splice do not pass through these
tracepoints (Linux 6.4+). IPv4 and IPv6 connections (-4, -6: one family, as the socket's
family says: an IPv6 socket's IPv4-mapped peer is IPv6 there, shown as IPv4).",
    flags: &[
        Flag::number("top", "N", Some("20"), "Show the N busiest connections (bcc tcptop -r)")
            .short('r'),
        NOCLEAR,
        Flag {
            long: "sort",
            // Not -s: that is sigsnoop's --signal, and a short flag means one thing.
            short: None,
            help: "Order the rows by (libbpf-tools tcptop -s)",
            kind: FlagKind::Choice {
                value_name: "SORT",
                choices: &[
                    ("all", "Bytes received and sent"),
                    ("received", "Bytes received"),
                    ("sent", "Bytes sent"),
                ],
                default: Some("all"),
            },
        },
        Flag::switch("ipv4", "Only IPv4 sockets (libbpf-tools tcptop -4)").short('4'),
        Flag::switch("ipv6", "Only IPv6 sockets (libbpf-tools tcptop -6)").short('6'),
        NAME,
    ],
    groups: &[Group::Common, Group::Maps],
    plan: |values| {
        // AF_INET and/or AF_INET6.
        let family = match (values.switch("ipv4"), values.switch("ipv6")) {
            (true, true) => {
                return Err(crate::Error::usage(
                    "-4/--ipv4 and -6/--ipv6: give one of them, or neither for both families",
                ));
            }
            (true, false) => "family == 2",
            (false, true) => "family == 10",
            (false, false) => "(family == 2 || family == 10)",
        };
        // IPPROTO_TCP; a MSG_PEEK read (flags & 2) copies nothing.
        let mut filter = vec![format!(
            "{family} && protocol == 6 && ret > 0 && !(flags & 2)"
        )];
        filter.extend(values.comm_filter()?);
        let sk = |member: &str| format!("(struct sock *)sk->__sk_common.{member}");
        Ok(ToolPlan::Aggregate(AggregateJob {
            command: "tcptop",
            what: Some("TCP bytes received and sent".into()),
            request: Request {
                value: Some("ret".into()),
                by: vec![
                    KeyField::labeled("PID", "pid"),
                    KeyField::labeled("COMM", "comm"),
                    KeyField::labeled("LADDR", sk("skc_v6_rcv_saddr")),
                    KeyField::labeled("RADDR", sk("skc_v6_daddr")),
                    // One word for both ports: two 16-byte addresses leave no room for two.
                    KeyField::labeled("LPORT/RPORT", sk("skc_portpair")),
                ],
                by_event: true,
                filter: Some(filter.join(" && ")),
                maps: values.maps,
                ..Request::count(PROBES.iter().map(|p| p.to_string()).collect())
            },
            report: Report::Split(Split {
                probes: vec![
                    (PROBES[0].into(), "RX_KB".into()),
                    (PROBES[1].into(), "TX_KB".into()),
                ],
                div: 1024,
                top: Some(values.number("top").unwrap_or(20) as usize),
                joined: vec![
                    ("LADDR".into(), "LPORT".into()),
                    ("RADDR".into(), "RPORT".into()),
                ],
                counts: Vec::new(),
                after: Vec::new(),
                // RX_KB is probe 0, TX_KB probe 1.
                sort: match values.text("sort") {
                    Some("received") => vec![0],
                    Some("sent") => vec![1],
                    _ => Vec::new(),
                },
                clear: !values.switch(NOCLEAR.long),
            }),
            tool_filter: true,
        }))
    },
    metric: Some(Metric {
        name: "tcp_traffic",
        help: "TCP bytes received (sock_recv_length) and sent (sock_send_length) over IPv4 and IPv6, by event and command.",
        labels: &[],
        by: &["comm"],
        unit: Some(ValueUnit::Bytes),
        buckets: None,
    }),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::tools::{FlagValues, Value};

    /// -4 and -6 select the socket's family in the kernel filter; both together are a
    /// usage error naming the two flags.
    #[test]
    fn tcptop_families() {
        let filter = |v4: bool, v6: bool| {
            let mut values = FlagValues::defaults(&TOOL);
            values.set("ipv4", Value::Switch(v4));
            values.set("ipv6", Value::Switch(v6));
            (TOOL.plan)(&values).map(|plan| match plan {
                ToolPlan::Aggregate(job) => job.request.filter.unwrap_or_default(),
                _ => panic!("aggregate"),
            })
        };
        let both = "(family == 2 || family == 10) && protocol == 6 && ret > 0 && !(flags & 2)";
        assert_eq!(filter(false, false).unwrap(), both);
        assert!(filter(true, false).unwrap().starts_with("family == 2 && "));
        assert!(filter(false, true).unwrap().starts_with("family == 10 && "));
        let err = filter(true, true).unwrap_err();
        assert_eq!(err.exit_code(), 2, "{err}");
        assert!(err.to_string().contains("-4/--ipv4 and -6/--ipv6"), "{err}");
    }
}
