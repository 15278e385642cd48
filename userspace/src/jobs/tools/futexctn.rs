//! `tracekit futexctn`: futex contention (libbpf-tools' `futexctn`): the time threads wait in
//! `futex(FUTEX_WAIT)`, the sleep behind a contended `pthread_mutex_lock`, a condition
//! variable or a semaphore, per futex word address and thread, from `syscalls:sys_enter_futex`
//! to `syscalls:sys_exit_futex` of one thread, aggregated in the kernel.

use super::{Column, EventsJob, Flag, Group, Metric, NAME, ToolPlan, Tool, ValueUnit};
use crate::{
    engine::request::{KeyField, MapSizes, Request, Start, StartProbe},
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
};

/// `tracekit futexctn`.
pub const TOOL: Tool = Tool {
    name: "futexctn",
    summary: "Futex wait time per futex address and thread: user-space lock contention (libbpf-tools futexctn)",
    examples: "  tracekit futexctn -p 1234 -d 10    # which futexes (mutexes) 1234's threads waited on, how long
  tracekit futexctn --top 5 -- ./app
  tracekit futexctn -n postgres -i 5
  tracekit futexctn --stacks -p 1234 # each wait with its address, time and user stack

A wait is a futex(FUTEX_WAIT or FUTEX_WAIT_BITSET) call, from its entry to its return;
UADDR is the futex word (a pthread_mutex_t's address, give or take its lock field).",
    flags: &[
        NAME,
        Flag::number("top", "N", Some("20"), "Show the N futexes waited on longest"),
        Flag::switch(
            "stacks",
            "Print each wait with its futex address, time and the waiting user stack",
        ),
    ],
    groups: &[Group::Common, Group::Maps],
    plan: |values| {
        let job = futexctn(&FutexctnOptions {
            comm: values.comm_filter()?,
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
                    header: "UADDR",
                    field: "start.uaddr",
                },
                Column {
                    header: "WAIT(ns)",
                    field: "latency",
                },
                Column {
                    header: "STACK",
                    field: "ustack",
                },
            ],
        )))
    },
    metric: Some(Metric {
        name: "futex_wait",
        help: "Time threads waited in futex(FUTEX_WAIT).",
        labels: &[("uaddr", "start.uaddr")],
        by: &[],
        unit: Some(ValueUnit::Nanoseconds),
        // 1 us (slot 10) to 68 s.
        buckets: Some((10, 35)),
    }),
};

/// Options of [`futexctn`].
#[derive(Clone, Debug)]
pub struct FutexctnOptions {
    /// A filter on the waiting thread's name (`comm == "..."`).
    pub comm: Option<String>,
    /// The N futexes waited on longest.
    pub top: usize,
    /// Kernel map sizes.
    pub maps: MapSizes,
}

/// The command bits (`op & 127`, FUTEX_CMD_MASK without FUTEX_PRIVATE_FLAG's 128 and
/// FUTEX_CLOCK_REALTIME's 256) are FUTEX_WAIT (0) or FUTEX_WAIT_BITSET (9)
/// (include/uapi/linux/futex.h), in the filter language's bit tests: bits 1, 2, 4, 5, 6
/// clear, and bits 0 and 3 both set or both clear.
const WAITS: &str = "!(op & 118) && ((op & 1 && op & 8) || (!(op & 1) && !(op & 8)))";

/// The job: time per (futex address, pid, tid, comm), summed with its count.
pub fn futexctn(options: &FutexctnOptions) -> AggregateJob {
    let begin = StartProbe::new("syscalls:sys_enter_futex", &["tid"]).filtered(match &options.comm {
        Some(comm) => format!("({WAITS}) && {comm}"),
        None => WAITS.into(),
    });
    AggregateJob {
        command: "futexctn",
        what: Some("futex waits".into()),
        request: Request {
            start: Some(Start {
                probes: vec![begin],
                end_pair: vec!["tid".into()],
                all_tasks: false,
                per_thread: true,
                keep: false,
            }),
            value: Some("latency".into()),
            by: vec![
                KeyField::labeled("UADDR", "start.uaddr"),
                KeyField::labeled("PID", "pid"),
                KeyField::labeled("TID", "tid"),
                KeyField::labeled("COMM", "comm"),
            ],
            maps: options.maps,
            ..Request::probe("syscalls:sys_exit_futex")
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
    fn futexctn_times_waits_by_address() {
        let options = FutexctnOptions {
            comm: None,
            top: 20,
            maps: MapSizes::default(),
        };
        assert_eq!(
            compile_in(&futexctn(&options).request, &Events::test_6_18())
                .unwrap()
                .listing(),
            r#"Start Tracepoints([Tracepoint { system: "syscalls", event: "sys_enter_futex" }])
operands: #0 tid #1 field@24:8 #2 field@16:8
corr: #0 | key: - | saves: #2->0
value: - | agg: count | layout: array bound 0
filter: bitand #1 118 not bitand #1 1 bitand #1 8 and bitand #1 1 not bitand #1 8 not and or and
flags: needs_ids by_thread
Main Tracepoints([Tracepoint { system: "syscalls", event: "sys_exit_futex" }])
operands: #0 tid #1 saved0 #2 pid #3 comm #4 latency
corr: #0 | key: #1 #2 #0 #3 | saves: -
value: #4 | agg: count | layout: hash
filter: -
flags: needs_start needs_ids
columns: UADDR Address, PID Int { signed: false }, TID Int { signed: false }, COMM Str
"#
        );
    }
}
