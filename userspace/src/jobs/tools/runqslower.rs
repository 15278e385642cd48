//! `tracekit runqslower`: each time a task waited longer than a threshold for a CPU
//! (bcc/libbpf-tools' `runqslower`), one line per event: `runqlat`'s start stage (wakeup,
//! new task's wakeup, preemption) and end event (`sched:sched_switch` onto a CPU), with the
//! threshold filtered in the kernel.

use super::{Column, EventsJob, Flag, Group, ToolPlan, Tool};
use crate::{
    Error,
    engine::request::{Start, StartProbe},
};

/// `tracekit runqslower`.
pub const TOOL: Tool = Tool {
    name: "runqslower",
    summary: "Print each run queue wait longer than a threshold (bcc runqslower)",
    examples: "  tracekit runqslower                # waits over 10 ms, until Ctrl-C
  tracekit runqslower --min-us 1000 -d 10
  tracekit runqslower --previous --json # with the task that ran before",
    flags: &[
        Flag::number(
            "min-us",
            "US",
            Some("10000"),
            "Only waits of at least US microseconds (bcc runqslower's min_us)",
        ),
        Flag::switch(
            "previous",
            "Also print the task that ran before (bcc runqslower -P)",
        )
        .short('P'),
    ],
    groups: &[Group::Common],
    plan: |values| {
        if let Some(flag) = values.task_flag() {
            return Err(Error::usage(format!(
                "runqslower {flag}: run queue waits are recorded in the waker's and the \
                 scheduler's context, not the task's; it watches every task (use -a, or -- CMD)",
            )));
        }
        let min_us = values.number("min-us").unwrap_or(10_000);
        let mut columns = vec![
            Column {
                header: "COMM",
                field: "next_comm",
            },
            Column {
                header: "TID",
                field: "next_pid",
            },
            Column {
                header: "LAT(ns)",
                field: "latency",
            },
        ];
        if values.switch("previous") {
            columns.extend([
                Column {
                    header: "PREV COMM",
                    field: "prev_comm",
                },
                Column {
                    header: "PREV TID",
                    field: "prev_pid",
                },
            ]);
        }
        let mut job = EventsJob::new("sched:sched_switch", &columns);
        job.request.start = Some(Start {
            probes: vec![
                StartProbe::new("sched:sched_wakeup", &["pid"]).filtered("pid != 0"),
                StartProbe::new("sched:sched_wakeup_new", &["pid"]).filtered("pid != 0"),
                // Preempted while runnable: no sleeping state bit (runqlat's rule).
                StartProbe::new("sched:sched_switch", &["prev_pid"])
                    .filtered("prev_pid != 0 && !(prev_state & 255)"),
            ],
            end_pair: vec!["next_pid".into()],
            all_tasks: true,
            per_thread: true,
            keep: false,
        });
        job.request.all_tasks = true;
        job.request.filter = Some(format!(
            "next_pid != 0 && latency >= {}",
            min_us.saturating_mul(1000)
        ));
        Ok(ToolPlan::Events(job))
    },
    metric: None,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        engine::compile::{Events, compile_in},
        jobs::tools::{FlagValues, Value},
    };

    #[test]
    fn runqslower_filters_the_threshold_in_the_kernel() {
        let mut values = FlagValues::defaults(&TOOL);
        values.set("min-us", Value::Number(500));
        let ToolPlan::Events(job) = (TOOL.plan)(&values).unwrap() else {
            panic!("events");
        };
        assert_eq!(
            compile_in(&job.request, &Events::test_6_18())
                .unwrap()
                .listing(),
            r#"Start Tracepoints([Tracepoint { system: "sched", event: "sched_wakeup" }, Tracepoint { system: "sched", event: "sched_wakeup_new" }, Tracepoint { system: "sched", event: "sched_switch" }])
operands: #0 field@24:s4 #1 event #2 field@32:s8
corr: #0 | key: - | saves: -
value: - | agg: count | layout: array bound 0
filter: eq #1 0 ne #0 0 and eq #1 1 ne #0 0 and or eq #1 2 ne #0 0 bitand #2 255 not and and or
flags: all_tasks by_thread
Main Tracepoints([Tracepoint { system: "sched", event: "sched_switch" }])
operands: #0 field@56:s4 #1 field_string@40:16 #2 latency
corr: #0 | key: - | saves: -
value: - | agg: trace | layout: array bound 0
filter: ne #0 0 ge #2 500000 and
flags: needs_start all_tasks needs_ids
columns: 
"#
        );
    }
}
