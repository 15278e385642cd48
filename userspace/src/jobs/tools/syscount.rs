//! `tracekit syscount`: syscalls counted by name (bcc's `syscount`), on the raw tracepoints
//! `sys_enter` and `sys_exit` (include/trace/events/syscalls.h): one attach, never one per
//! syscall, keyed by syscall number into a per-CPU array (no hashing on the hot path).
//! `--latency` pairs `sys_enter` and `sys_exit` by thread; `--failures` counts at
//! `sys_exit` when `ret < 0`.

use super::{BY_PROCESS, FAILURES, Flag, Group, Metric, ToolPlan, Tool};
use crate::{
    engine::request::{KeyField, MapSizes, Request, Start, StartProbe},
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
};

/// `tracekit syscount`.
pub const TOOL: Tool = Tool {
    name: "syscount",
    summary: "Count syscalls by name, with latency or failures (bcc syscount)",
    examples: "  tracekit syscount -d 5               # top 10 syscalls of the machine
  tracekit syscount -p 1234 --latency  # with total and average time per syscall
  tracekit syscount --failures --by comm
  tracekit syscount -- ./app           # run ./app and count its syscalls
  tracekit syscount --latency --percentiles -- ./app  # p50..p99.9 per syscall, in us",
    flags: &[
        BY_PROCESS,
        Flag::switch(
            "latency",
            "Show total and average time in each syscall (microseconds)",
        )
        .short('L'),
        FAILURES.help("Count only calls that returned an error"),
        Flag::number("top", "N", Some("10"), "Show the N most frequent"),
    ],
    groups: &[Group::Percentiles, Group::Common, Group::Maps],
    plan: |values| {
        syscount(&SyscountOptions {
            by: values.text("by").map(Into::into),
            latency: values.switch("latency"),
            failures: values.switch("failures"),
            top: values.number("top").unwrap_or(10) as usize,
            maps: values.maps,
        })
        .percentiles(values.percentiles, "usecs")
        .map(ToolPlan::Aggregate)
    },
    metric: Some(Metric {
        name: "syscalls",
        help: "System calls entered, by name.",
        labels: &[("syscall", "id")],
        by: &["syscall"],
        unit: None,
        buckets: None,
    }),
};

/// Options of [`syscount`].
#[derive(Clone, Debug)]
pub struct SyscountOptions {
    /// Also group by this field (`comm`, `pid`).
    pub by: Option<String>,
    /// Total and average time in each syscall, in microseconds.
    pub latency: bool,
    /// Only calls that returned an error.
    pub failures: bool,
    /// The N most frequent.
    pub top: usize,
    /// Kernel map sizes.
    pub maps: MapSizes,
}

impl Default for SyscountOptions {
    fn default() -> Self {
        Self {
            by: None,
            latency: false,
            failures: false,
            top: 10,
            maps: MapSizes::default(),
        }
    }
}

/// The job.
pub fn syscount(options: &SyscountOptions) -> AggregateJob {
    let at_exit = options.latency || options.failures;
    let mut by = vec![KeyField::labeled(
        "syscall",
        if options.latency { "start.id" } else { "id" },
    )];
    by.extend(options.by.as_deref().map(KeyField::new));
    AggregateJob {
        command: "syscount",
        what: Some(format!(
            "syscalls{}",
            if options.failures { " that failed" } else { "" }
        )),
        request: Request {
            start: options.latency.then(|| Start {
                probes: vec![StartProbe::new("rawtracepoint:sys_enter", &["tid"])],
                end_pair: vec!["tid".into()],
                all_tasks: false,
                per_thread: true,
                keep: false,
            }),
            value: options.latency.then(|| "latency".into()),
            filter: options.failures.then(|| "ret < 0".into()),
            by,
            maps: options.maps,
            ..Request::probe(if at_exit {
                "rawtracepoint:sys_exit"
            } else {
                "rawtracepoint:sys_enter"
            })
        },
        report: Report::Counts {
            clear: false,
            sum: options.latency.then(|| ("TIME(us)".to_string(), 1000.0)),
            top: Some(options.top),
        },
        tool_filter: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::compile::{Events, compile_in};

    fn compiled(request: &Request) -> String {
        compile_in(request, &Events::test_6_18()).unwrap().listing()
    }

    /// The plain count keeps the shape the engine runs without its interpreter.
    #[test]
    fn syscount_counts_by_syscall_number_into_an_array() {
        let compiled_spec = compile_in(
            &syscount(&SyscountOptions::default()).request,
            &Events::test_6_18(),
        )
        .unwrap();
        assert!(crate::engine::plan::fast_count_arg1(
            &compiled_spec.specs[0].main.plan
        ));
        assert_eq!(
            compiled_spec.listing(),
            r#"Main RawTracepoint("sys_enter")
operands: #0 arg1:8
corr: - | key: #0 | saves: -
value: - | agg: count | layout: array bound 1024
filter: -
flags: raw_args=2
columns: syscall Syscall
"#
        );
        let latency = SyscountOptions {
            latency: true,
            by: Some("comm".into()),
            ..Default::default()
        };
        assert_eq!(
            compiled(&syscount(&latency).request),
            r#"Start RawTracepoint("sys_enter")
operands: #0 tid #1 arg1:8
corr: #0 | key: - | saves: #1->0
value: - | agg: count | layout: array bound 0
filter: -
flags: needs_ids by_thread raw_args=2
Main RawTracepoint("sys_exit")
operands: #0 tid #1 saved0 #2 comm #3 latency
corr: #0 | key: #1 #2 | saves: -
value: #3 | agg: count | layout: hash
filter: -
flags: needs_start needs_ids
columns: syscall Syscall, comm Str
"#
        );
        let failures = SyscountOptions {
            failures: true,
            ..Default::default()
        };
        assert_eq!(
            compiled(&syscount(&failures).request),
            r#"Main RawTracepoint("sys_exit")
operands: #0 arg_deref0+120:8 #1 arg1:s8
corr: - | key: #0 | saves: -
value: - | agg: count | layout: array bound 1024
filter: slt #1 0
flags: raw_args=2
columns: syscall Syscall
"#
        );
    }
}
