//! `tracekit tcprtt`: TCP smoothed round-trip times as a log2 histogram (bcc/libbpf-tools
//! `tcprtt`), from `srtt` of `tcp:tcp_probe` (include/trace/events/tcp.h: `tp->srtt_us >>
//! 3`, in microseconds), which fires for each segment an established socket receives
//! (`tcp_rcv_established`), where libbpf-tools reads it too.

use super::{Flag, Group, Metric, ToolPlan, Tool, ValueUnit, tcpstates::port_filters};
use crate::{
    Result,
    engine::request::{KeyField, MapSizes, Request},
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
};

/// `tracekit tcprtt`.
pub const TOOL: Tool = Tool {
    name: "tcprtt",
    summary: "TCP round-trip time histogram, from received segments (libbpf-tools tcprtt)",
    examples: "  tracekit tcprtt -d 10               # smoothed RTT of received segments, in us
  tracekit tcprtt --ms -i 1           # in ms, a histogram every second
  tracekit tcprtt --lport 8080 --by-rport

The RTT is the socket's smoothed estimate (srtt) at each received segment.",
    flags: &[
        Flag::switch("ms", "Milliseconds instead of microseconds (bcc -m)"),
        Flag::number("lport", "PORT", None, "Only sockets with this local port (bcc -p)"),
        Flag::number("rport", "PORT", None, "Only sockets with this remote port (bcc -P)"),
        Flag::switch("by-lport", "One histogram per local port"),
        Flag::switch("by-rport", "One histogram per remote port"),
    ],
    groups: &[Group::Percentiles, Group::Common, Group::Maps],
    plan: |values| {
        if let Some(flag) = values.task_flag() {
            return Err(crate::Error::usage(format!(
                "tcprtt {flag}: segments are received in the network softirq, not in a process; \
                 use --lport/--rport to select connections",
            )));
        }
        tcprtt(&TcprttOptions {
            ms: values.switch("ms"),
            lport: values.number("lport"),
            rport: values.number("rport"),
            by_lport: values.switch("by-lport"),
            by_rport: values.switch("by-rport"),
            maps: values.maps,
        })?
        .percentiles(values.percentiles, "")
        .map(ToolPlan::Aggregate)
    },
    metric: Some(Metric {
        name: "tcp_rtt",
        help: "TCP smoothed round-trip time at each received segment.",
        labels: &[("lport", "sport"), ("rport", "dport")],
        by: &[],
        unit: Some(ValueUnit::Microseconds),
        // 1 us to 67 s.
        buckets: Some((0, 26)),
    }),
};

/// Options of [`tcprtt`].
#[derive(Clone, Debug, Default)]
pub struct TcprttOptions {
    /// Milliseconds instead of microseconds.
    pub ms: bool,
    /// Only this local port.
    pub lport: Option<u64>,
    /// Only this remote port.
    pub rport: Option<u64>,
    /// One histogram per local port.
    pub by_lport: bool,
    /// One histogram per remote port.
    pub by_rport: bool,
    /// Kernel map sizes.
    pub maps: MapSizes,
}

/// The job.
///
/// # Errors
/// A usage error for a port above 65535.
pub fn tcprtt(options: &TcprttOptions) -> Result<AggregateJob> {
    let filter = port_filters(options.lport, options.rport)?;
    let mut by = Vec::new();
    if options.by_lport {
        by.push(KeyField::labeled("lport", "sport"));
    }
    if options.by_rport {
        by.push(KeyField::labeled("rport", "dport"));
    }
    Ok(AggregateJob {
        command: "tcprtt",
        what: Some("TCP smoothed round-trip time".into()),
        request: Request {
            filter: (!filter.is_empty()).then(|| filter.join(" && ")),
            by,
            value_div: if options.ms { 1000 } else { 1 },
            maps: options.maps,
            all_tasks: true,
            ..Request::probe("tcp:tcp_probe").log2("srtt")
        },
        report: Report::Log2 {
            unit: if options.ms { "msecs" } else { "usecs" }.into(),
        },
        tool_filter: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::compile::{Events, compile_in};

    #[test]
    fn tcprtt_histograms_srtt() {
        let request = tcprtt(&TcprttOptions {
            lport: Some(8080),
            by_rport: true,
            ..TcprttOptions::default()
        })
        .unwrap()
        .request;
        let listing = compile_in(&request, &Events::test_6_18())
            .unwrap()
            .listing();
        assert!(
            listing.contains("operands: #0 field@66:2 #1 field@100:4 #2 field@64:2"),
            "{listing}"
        );
        assert!(listing.contains("filter: eq #2 8080"), "{listing}");
    }
}
