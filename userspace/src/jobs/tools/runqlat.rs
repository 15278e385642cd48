//! `tracekit runqlat`: run queue (scheduler) latency (bcc's `runqlat`), the time a task
//! waits runnable before it runs, as a log2 histogram: from a task's wakeup
//! (`sched:sched_wakeup`, `sched:sched_wakeup_new`) or preemption (`sched:sched_switch` of
//! a still-runnable task) to its next `sched:sched_switch` onto a CPU
//! (include/trace/events/sched.h). Recorded in the waker's and the scheduler's context:
//! every task is measured.

use super::{Flag, Group, LatencyUnit, Metric, ToolPlan, Tool, UNIT, ValueUnit};
use crate::{
    Error,
    engine::request::{KeyField, MapSizes, Request, Start, StartProbe},
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
};

/// `tracekit runqlat`.
pub const TOOL: Tool = Tool {
    name: "runqlat",
    summary: "Run queue latency histogram: how long runnable tasks wait for a CPU (bcc runqlat)",
    examples:
        "  tracekit runqlat -d 10               # how long runnable tasks waited for a CPU, in us
  tracekit runqlat --unit ms -i 1      # a histogram every second
  tracekit runqlat --tids -d 5         # one histogram per thread
  tracekit runqlat -- make -j8         # every task's wait while make runs
  tracekit runqlat --percentiles -d 10 # p50, p90, p99, p99.9, max
  tracekit runqlat -i 1 -d 60 -o heat.svg  # heat map: a column per second

Measured from wakeup (sched_wakeup, sched_wakeup_new) or preemption (sched_switch of a
runnable task) to the task's next sched_switch onto a CPU.",
    flags: &[
        UNIT,
        Flag::switch(
            "tids",
            "One histogram per thread (bcc runqlat -L; tracekit's -L is syscount's --latency)",
        ),
    ],
    groups: &[Group::Percentiles, Group::Common, Group::Maps],
    plan: |values| {
        if let Some(flag) = values.task_flag() {
            return Err(Error::usage(format!(
                "runqlat {flag}: run queue latency is recorded in the waker's and the scheduler's \
                 context, not the task's; it measures every task (use -a, or -- CMD to measure \
                 while CMD runs)",
            )));
        }
        runqlat(&RunqlatOptions {
            unit: values.unit(),
            per_thread: values.switch("tids"),
            maps: values.maps,
        })
        .percentiles(values.percentiles, "")
        .map(ToolPlan::Aggregate)
    },
    metric: Some(Metric {
        name: "runq_latency",
        help: "Run queue latency: time from wakeup to running.",
        labels: &[("tid", "next_pid")],
        by: &[],
        unit: Some(ValueUnit::Nanoseconds),
        buckets: Some((10, 35)),
    }),
};

/// Options of [`runqlat`].
#[derive(Clone, Debug, Default)]
pub struct RunqlatOptions {
    /// The histogram's unit.
    pub unit: LatencyUnit,
    /// One histogram per thread (bcc's `-L`).
    pub per_thread: bool,
    /// Kernel map sizes.
    pub maps: MapSizes,
}

/// `prev_state` bits of a task that was still runnable when switched out: 0 (`R`, it
/// yielded) or `TASK_REPORT_MAX` (preempted), which has none of the low 8 state bits
/// (`__trace_sched_switch_state` in include/trace/events/sched.h).
const SLEEPING_STATES: u64 = 0xff;

/// The job.
pub fn runqlat(options: &RunqlatOptions) -> AggregateJob {
    AggregateJob {
        command: "runqlat",
        what: Some("run queue latency of every task".into()),
        request: Request {
            start: Some(Start {
                probes: vec![
                    StartProbe::new("sched:sched_wakeup", &["pid"]).filtered("pid != 0"),
                    StartProbe::new("sched:sched_wakeup_new", &["pid"]).filtered("pid != 0"),
                    StartProbe::new("sched:sched_switch", &["prev_pid"]).filtered(format!(
                        "prev_pid != 0 && !(prev_state & {SLEEPING_STATES})"
                    )),
                ],
                end_pair: vec!["next_pid".into()],
                all_tasks: true,
                per_thread: true,
                keep: false,
            }),
            all_tasks: true,
            filter: Some("next_pid != 0".into()),
            by: if options.per_thread {
                vec![KeyField::labeled("tid", "next_pid")]
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

    /// Three begin events share one start plan; each has its own filter behind its event
    /// index, because `pid` of the wakeups is `prev_pid` of the switch.
    #[test]
    fn runqlat_starts_at_wakeups_and_preemptions() {
        let request = runqlat(&RunqlatOptions::default()).request;
        assert_eq!(
            compile_in(&request, &Events::test_6_18())
                .unwrap()
                .listing(),
            r#"Start Tracepoints([Tracepoint { system: "sched", event: "sched_wakeup" }, Tracepoint { system: "sched", event: "sched_wakeup_new" }, Tracepoint { system: "sched", event: "sched_switch" }])
operands: #0 field@24:s4 #1 event #2 field@32:s8
corr: #0 | key: - | saves: -
value: - | agg: count | layout: array bound 0
filter: eq #1 0 ne #0 0 and eq #1 1 ne #0 0 and or eq #1 2 ne #0 0 bitand #2 255 not and and or
flags: all_tasks by_thread
Main Tracepoints([Tracepoint { system: "sched", event: "sched_switch" }])
operands: #0 field@56:s4 #1 latency
corr: #0 | key: - | saves: -
value: #1 /1000 | agg: log2 64 slots | layout: array bound 0
filter: ne #0 0
flags: needs_start all_tasks filter_first
columns: 
"#
        );
    }

    #[test]
    fn runqlat_refuses_pids() {
        let mut values = crate::jobs::tools::FlagValues::defaults(&TOOL);
        values.scope = crate::session::Scope::Pids(vec![1]);
        let err = (TOOL.plan)(&values).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().starts_with("runqlat -p: "), "{err}");
        let mut values = crate::jobs::tools::FlagValues::defaults(&TOOL);
        values.cgroup = true;
        let err = (TOOL.plan)(&values).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().starts_with("runqlat --cgroup: "), "{err}");
    }
}
