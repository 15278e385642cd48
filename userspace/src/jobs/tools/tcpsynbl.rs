//! `tracekit tcpsynbl`: the TCP SYN backlog (bcc's and libbpf-tools' `tcpsynbl`): at each
//! connection a listener completes, `tcp_v4_syn_recv_sock(sk, ...)` /
//! `tcp_v6_syn_recv_sock(sk, ...)` (net/ipv4/tcp_ipv4.c, net/ipv6/tcp_ipv6.c) with `sk` the
//! listener, a log2 histogram of its accept queue's length (`sk->sk_ack_backlog`) per
//! queue limit (`sk->sk_max_ack_backlog`, listen(2)'s backlog capped at somaxconn), both
//! read through the running kernel's BTF. Kernel functions: kprobes or fentry, whichever
//! the kernel has (`--kprobe`/`--fentry` choose).

use super::{Flag, Group, Metric, ToolPlan, Tool};
use crate::{
    Result,
    engine::request::{KeyField, Request},
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
};

/// `tracekit tcpsynbl`.
pub const TOOL: Tool = Tool {
    name: "tcpsynbl",
    summary: "TCP SYN backlog: accept queue length histograms per queue limit (bcc tcpsynbl)",
    examples: "  tracekit tcpsynbl                  # histograms until Ctrl-C
  tracekit tcpsynbl -i 1 -d 10       # each second, for ten seconds
  tracekit tcpsynbl -4 --json -o synbl.json

One histogram per function (IPv4, IPv6) and backlog_max (the listener's queue limit): the
accept queue's length when each new connection was made. A length at the limit means SYNs
are being dropped (see `nstat TcpExtListenOverflows`). The functions run in the
kernel's network path, so every listener of the machine is counted: -p and -- CMD only set
how long to trace.",
    flags: &[
        Flag::switch("ipv4", "Only IPv4 listeners (tcp_v4_syn_recv_sock)").short('4'),
        Flag::switch("ipv6", "Only IPv6 listeners (tcp_v6_syn_recv_sock)").short('6'),
    ],
    groups: &[Group::Probing],
    plan: |values| {
        tcpsynbl(values.switch("ipv4"), values.switch("ipv6"), values).map(ToolPlan::Aggregate)
    },
    metric: Some(Metric {
        name: "tcp_syn_backlog",
        help: "TCP listeners' accept queue length at each new connection, by queue limit.",
        labels: &[("backlog_max", "sk->sk_max_ack_backlog")],
        by: &["backlog_max"],
        unit: None,
        // 0 to 65535 connections.
        buckets: Some((0, 16)),
    }),
};

/// The job: `sk->sk_ack_backlog` as a log2 histogram per function and
/// `sk->sk_max_ack_backlog`, on both functions unless `ipv4` or `ipv6` picks one.
///
/// # Errors
/// A usage error when both `ipv4` and `ipv6` are given.
fn tcpsynbl(ipv4: bool, ipv6: bool, values: &super::FlagValues) -> Result<AggregateJob> {
    let functions = match (ipv4, ipv6) {
        (true, true) => {
            return Err(crate::Error::usage(
                "tcpsynbl: -4/--ipv4 and -6/--ipv6 exclude each other; give neither for both",
            ));
        }
        (true, false) => "tcp_v4_syn_recv_sock",
        (false, true) => "tcp_v6_syn_recv_sock",
        (false, false) => "tcp_v*_syn_recv_sock",
    };
    Ok(AggregateJob {
        command: "tcpsynbl",
        what: Some("TCP SYN backlog".into()),
        request: Request {
            by: vec![KeyField::labeled("backlog_max", "sk->sk_max_ack_backlog")],
            by_event: true,
            // Softirq context: the task running is any task.
            all_tasks: true,
            maps: values.maps,
            target: values.target,
            ..Request::probe(format!("kprobe:{functions}")).log2("sk->sk_ack_backlog")
        },
        report: Report::Log2 {
            unit: "backlog".into(),
        },
        tool_filter: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::tools::{FlagValues, Value};

    #[test]
    fn tcpsynbl_histograms_the_listeners_queue_per_limit() {
        let mut values = FlagValues::defaults(&TOOL);
        let ToolPlan::Aggregate(job) = (TOOL.plan)(&values).unwrap() else {
            panic!("an aggregate");
        };
        assert_eq!(job.request.probes, ["kprobe:tcp_v*_syn_recv_sock"]);
        assert_eq!(job.request.value.as_deref(), Some("sk->sk_ack_backlog"));
        assert_eq!(job.request.by[0].field, "sk->sk_max_ack_backlog");
        assert!(job.request.all_tasks && job.request.by_event);
        values.set("ipv6", Value::Switch(true));
        let ToolPlan::Aggregate(job) = (TOOL.plan)(&values).unwrap() else {
            panic!("an aggregate");
        };
        assert_eq!(job.request.probes, ["kprobe:tcp_v6_syn_recv_sock"]);
        values.set("ipv4", Value::Switch(true));
        assert_eq!(
            (TOOL.plan)(&values).unwrap_err().to_string(),
            "tcpsynbl: -4/--ipv4 and -6/--ipv6 exclude each other; give neither for both"
        );
    }
}
