//! `tracekit cpudist`: how long threads run on a CPU each time they are scheduled (bcc's
//! `cpudist`), or with `--offcpu` how long they are off it, as log2 histograms. Both are
//! intervals between two `sched:sched_switch` events of one thread (include/trace/events/
//! sched.h): on-CPU from switching in (`next_pid`) to switching out (`prev_pid`), off-CPU
//! the other way round. The idle task (tid 0) is left out.

use super::{Flag, Group, LatencyUnit, Metric, ToolPlan, Tool, UNIT, ValueUnit};
use crate::{
    engine::request::{KeyField, MapSizes, Request, Start, StartProbe},
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
};

/// `tracekit cpudist`.
pub const TOOL: Tool = Tool {
    name: "cpudist",
    summary: "On-CPU (or off-CPU) time per scheduling, as a histogram (bcc cpudist)",
    examples: "  tracekit cpudist -d 10             # how long threads run each time, in us
  tracekit cpudist --offcpu --unit ms # how long threads wait off-CPU each time
  tracekit cpudist --tids -p 1234    # one histogram per thread of process 1234
  tracekit cpudist -- make -j2

On-CPU time runs from a thread's sched_switch onto a CPU to its sched_switch off it;
--offcpu the other way (sleep and run-queue wait both count).",
    flags: &[
        UNIT,
        Flag::switch(
            "offcpu",
            "Off-CPU time: from switching out to switching back in (bcc cpudist -O)",
        )
        .short('O'),
        Flag::switch("tids", "One histogram per thread (bcc cpudist -L)"),
    ],
    groups: &[Group::Common, Group::Maps],
    plan: |values| {
        Ok(ToolPlan::Aggregate(cpudist(&CpudistOptions {
            offcpu: values.switch("offcpu"),
            per_thread: values.switch("tids"),
            unit: values.unit(),
            maps: values.maps,
        })))
    },
    metric: Some(Metric {
        name: "oncpu_time",
        help: "Time threads ran on a CPU each time they were scheduled.",
        labels: &[("tid", "prev_pid")],
        by: &[],
        unit: Some(ValueUnit::Nanoseconds),
        // 1 us (slot 10) to 68 s.
        buckets: Some((10, 35)),
    }),
};

/// Options of [`cpudist`].
#[derive(Clone, Debug, Default)]
pub struct CpudistOptions {
    /// Off-CPU time instead of on-CPU time.
    pub offcpu: bool,
    /// One histogram per thread.
    pub per_thread: bool,
    /// The histogram's unit.
    pub unit: LatencyUnit,
    /// Kernel map sizes.
    pub maps: MapSizes,
}

/// The job. The thread measured is `sched_switch`'s current task at the switch out
/// (`prev_pid`), so `-p`/`-- CMD` select there: at the end for on-CPU time, at the start for
/// off-CPU time; the other stage takes every task.
pub fn cpudist(options: &CpudistOptions) -> AggregateJob {
    let (begin, end) = if options.offcpu {
        ("prev_pid", "next_pid")
    } else {
        ("next_pid", "prev_pid")
    };
    AggregateJob {
        command: "cpudist",
        what: Some(if options.offcpu {
            "off-CPU time per switch".into()
        } else {
            "on-CPU time per switch".into()
        }),
        request: Request {
            start: Some(Start {
                probes: vec![
                    StartProbe::new("sched:sched_switch", &[begin])
                        .filtered(format!("{begin} != 0")),
                ],
                end_pair: vec![end.into()],
                all_tasks: !options.offcpu,
                per_thread: true,
                keep: false,
            }),
            all_tasks: options.offcpu,
            filter: Some(format!("{end} != 0")),
            by: if options.per_thread {
                vec![KeyField::labeled("tid", end)]
            } else {
                Vec::new()
            },
            value_div: options.unit.ns,
            maps: options.maps,
            ..Request::probe("sched:sched_switch").log2("latency")
        },
        report: Report::Log2 {
            unit: options.unit.header.into(),
        },
        tool_filter: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::compile::{Events, compile_in};

    #[test]
    fn cpudist_pairs_switch_in_and_out() {
        let listing = |offcpu| {
            let options = CpudistOptions {
                offcpu,
                ..Default::default()
            };
            compile_in(&cpudist(&options).request, &Events::test_6_18())
                .unwrap()
                .listing()
        };
        assert_eq!(listing(false), r#"Start Tracepoints([Tracepoint { system: "sched", event: "sched_switch" }])
operands: #0 field@56:s4
corr: #0 | key: - | saves: -
value: - | agg: count | layout: array bound 0
filter: ne #0 0
flags: all_tasks by_thread
Main Tracepoints([Tracepoint { system: "sched", event: "sched_switch" }])
operands: #0 field@24:s4 #1 latency
corr: #0 | key: - | saves: -
value: #1 /1000 | agg: log2 64 slots | layout: array bound 0
filter: ne #0 0
flags: needs_start filter_first
columns: 
"#);
        let offcpu = listing(true);
        assert!(offcpu.contains("operands: #0 field@24:s4\ncorr: #0 | key: - | saves: -\nvalue: - | agg: count | layout: array bound 0\nfilter: ne #0 0\nflags: by_thread\n"), "{offcpu}");
        assert!(offcpu.contains("filter: ne #0 0\nflags: needs_start all_tasks filter_first\n"), "{offcpu}");
    }
}
