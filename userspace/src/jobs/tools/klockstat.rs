//! `tracekit klockstat`: kernel lock contention, as `perf lock contention -b` shows it (and
//! bcc's `klockstat`): how often and how long tasks waited for each kernel lock (mutexes,
//! rwsems such as a process's `mmap_lock`, spinlocks), from `lock:contention_begin` to
//! `lock:contention_end` of one task and lock (include/trace/events/lock.h, Linux 5.19+).

use super::{BY_PROCESS, Column, EventsJob, Flag, Group, Metric, ToolPlan, Tool, ValueUnit};
use crate::{
    engine::request::{KeyField, MapSizes, Request, Start, StartProbe},
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
};

/// `tracekit klockstat`.
pub const TOOL: Tool = Tool {
    name: "klockstat",
    summary: "Kernel lock contention by lock: waits and wait time (perf lock contention -b, bcc klockstat)",
    examples: "  tracekit klockstat -d 10           # the most contended kernel locks, by address
  tracekit klockstat --by comm -p 1234
  tracekit klockstat --top 5 -- ./mmap-storm
  tracekit klockstat --stacks -p 1234 # each wait with its lock, time and kernel stack

TYPE is contention_begin's flags: 1 SPIN, 2 READ, 4 WRITE, 8 RT, 16 PERCPU, 32 MUTEX
(an rwsem such as mmap_lock shows READ or WRITE).",
    flags: &[
        BY_PROCESS,
        Flag::number("top", "N", Some("20"), "Show the N locks waited on longest"),
        Flag::switch(
            "stacks",
            "Print each wait with its lock, type, time and the waiting kernel stack",
        ),
    ],
    groups: &[Group::Common, Group::Maps],
    plan: |values| {
        let job = klockstat(&KlockstatOptions {
            by: values.text("by").map(Into::into),
            top: values.number("top").unwrap_or(20) as usize,
            maps: values.maps,
        });
        if !values.switch("stacks") {
            return Ok(ToolPlan::Aggregate(job));
        }
        // The same stages, each wait printed with the stack it waited from.
        Ok(ToolPlan::Events(EventsJob::each_event_of(
            job,
            &[
                Column {
                    header: "LOCK",
                    field: "lock_addr",
                },
                Column {
                    header: "TYPE",
                    field: "start.flags",
                },
                Column {
                    header: "WAIT(ns)",
                    field: "latency",
                },
                Column {
                    header: "STACK",
                    field: "kstack",
                },
            ],
        )))
    },
    metric: Some(Metric {
        name: "kernel_lock_wait",
        help: "Time tasks waited for contended kernel locks.",
        labels: &[("lock", "lock_addr"), ("type", "start.flags")],
        by: &[],
        unit: Some(ValueUnit::Nanoseconds),
        // 256 ns (slot 8) to 68 s.
        buckets: Some((8, 35)),
    }),
};

/// Options of [`klockstat`].
#[derive(Clone, Debug)]
pub struct KlockstatOptions {
    /// Also group by this field (`comm`, `pid`).
    pub by: Option<String>,
    /// The N locks waited on longest.
    pub top: usize,
    /// Kernel map sizes.
    pub maps: MapSizes,
}

/// The job: paired by (tid, lock address), since a task waiting for a mutex may contend
/// for the mutex's own spinlock inside it.
pub fn klockstat(options: &KlockstatOptions) -> AggregateJob {
    let mut by = vec![
        KeyField::labeled("LOCK", "lock_addr"),
        KeyField::labeled("TYPE", "start.flags"),
    ];
    by.extend(options.by.as_deref().map(KeyField::new));
    AggregateJob {
        command: "klockstat",
        what: Some("kernel lock contention".into()),
        request: Request {
            start: Some(Start {
                probes: vec![StartProbe::new(
                    "lock:contention_begin",
                    &["tid", "lock_addr"],
                )],
                end_pair: vec!["tid".into(), "lock_addr".into()],
                all_tasks: false,
                per_thread: false,
                keep: false,
            }),
            value: Some("latency".into()),
            by,
            maps: options.maps,
            ..Request::probe("lock:contention_end")
        },
        report: Report::Counts {
            clear: false,
            sum: Some(("WAIT(us)".into(), 1000.0)),
            top: Some(options.top),
        },
        tool_filter: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::compile::{Events, compile_in};

    #[test]
    fn klockstat_pairs_by_task_and_lock() {
        let options = KlockstatOptions {
            by: None,
            top: 20,
            maps: MapSizes::default(),
        };
        assert_eq!(
            compile_in(&klockstat(&options).request, &Events::test_6_18())
                .unwrap()
                .listing(),
            r#"Start Tracepoints([Tracepoint { system: "lock", event: "contention_begin" }])
operands: #0 tid #1 field@8:8 #2 field@16:4
corr: #0 #1 | key: - | saves: #2->0
value: - | agg: count | layout: array bound 0
filter: -
flags: needs_ids
Main Tracepoints([Tracepoint { system: "lock", event: "contention_end" }])
operands: #0 tid #1 field@8:8 #2 saved0 #3 latency
corr: #0 #1 | key: #1 #2 | saves: -
value: #3 | agg: count | layout: hash
filter: -
flags: needs_start needs_ids
columns: LOCK Address, TYPE Int { signed: false }
"#
        );
    }
}
