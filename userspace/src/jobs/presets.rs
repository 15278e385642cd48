//! The bcc one-liners as data: each preset is an engine [`Request`] in the generic language
//! (probes, fields, filter strings, an optional start stage), a report, and a description,
//! as bpftrace's `tools/*.bt` are a few lines of its language. The commands (`tools/` in the
//! binary) map their flags to these options; the exporter uses them with the defaults.

use crate::{
    Result,
    engine::kinds::function_probe,
    engine::{
        keys::disk_dev,
        request::{KeyField, MapSizes, Request, Shape, Start, StartProbe, Target},
    },
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
};

/// A latency histogram's unit: nanoseconds per unit and bcc's header (`usecs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LatencyUnit {
    /// Nanoseconds per unit (1000 for microseconds).
    pub ns: u64,
    /// The histogram header, as bcc writes it (`nsecs`, `usecs`, `msecs`).
    pub header: &'static str,
}

impl LatencyUnit {
    /// Microseconds, bcc's default.
    pub const US: Self = Self {
        ns: 1_000,
        header: "usecs",
    };
}

impl Default for LatencyUnit {
    fn default() -> Self {
        Self::US
    }
}

/// Options of [`bitesize`].
#[derive(Clone, Debug, Default)]
pub struct BitesizeOptions {
    /// Only I/O to this disk (a name under /sys/block).
    pub disk: Option<String>,
    /// Kernel map sizes.
    pub maps: MapSizes,
}

/// Block I/O sizes per process (perf-tools' and bcc's `bitesize`): a log2 histogram of
/// `block:block_rq_issue`'s `bytes` (include/trace/events/block.h) by `comm`.
pub fn bitesize(options: &BitesizeOptions) -> Result<AggregateJob> {
    let filter = disk_filter(options.disk.as_deref())?;
    Ok(AggregateJob {
        command: "bitesize",
        what: Some("block I/O sizes".into()),
        request: Request {
            by: vec![KeyField::new("comm")],
            filter,
            maps: options.maps,
            ..Request::probe("block:block_rq_issue").log2("bytes")
        },
        report: Report::Log2 {
            unit: "bytes".into(),
        },
        tool_filter: false,
    })
}

/// `dev == N` for a disk name.
fn disk_filter(disk: Option<&str>) -> Result<Option<String>> {
    disk.map(|disk| disk_dev(disk).map(|dev| format!("dev == {dev}")))
        .transpose()
}

/// Options of [`biolatency`].
#[derive(Clone, Debug, Default)]
pub struct BiolatencyOptions {
    /// The histogram's unit.
    pub unit: LatencyUnit,
    /// One histogram per disk.
    pub per_disk: bool,
    /// Measure from insertion in the I/O queue instead of issue to the device.
    pub queued: bool,
    /// Only I/O to this disk.
    pub disk: Option<String>,
    /// Kernel map sizes.
    pub maps: MapSizes,
}

/// Block I/O latency (bcc's `biolatency`): from `block:block_rq_issue` (or
/// `block_rq_insert`) to `block:block_rq_complete`, paired by (dev, sector). Completions run
/// in interrupt context or another task's, so with `-p`/`-- CMD` the issue selects the I/O
/// and its completion counts whoever runs it.
pub fn biolatency(options: &BiolatencyOptions) -> Result<AggregateJob> {
    let filter = disk_filter(options.disk.as_deref())?;
    let issue = if options.queued {
        "block:block_rq_insert"
    } else {
        "block:block_rq_issue"
    };
    let mut begin = StartProbe::new(issue, &["dev", "sector"]);
    begin.filter = filter.clone();
    Ok(AggregateJob {
        command: "biolatency",
        what: Some(format!(
            "block I/O latency ({} to completion)",
            if options.queued {
                "queue insertion"
            } else {
                "issue"
            }
        )),
        request: Request {
            start: Some(Start {
                probes: vec![begin],
                end_pair: vec!["dev".into(), "sector".into()],
                all_tasks: false,
                per_thread: false,
            }),
            all_tasks: true,
            filter,
            by: if options.per_disk {
                vec![KeyField::labeled("disk", "dev")]
            } else {
                Vec::new()
            },
            value_div: options.unit.ns,
            maps: options.maps,
            ..Request::probe("block:block_rq_complete").log2("latency")
        },
        report: Report::Log2 {
            unit: options.unit.header.into(),
        },
        tool_filter: false,
    })
}

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

/// Run queue latency (bcc's `runqlat`): from a task's wakeup (`sched:sched_wakeup`,
/// `sched:sched_wakeup_new`) or preemption (`sched:sched_switch` of a still-runnable task)
/// to its next `sched:sched_switch` onto a CPU (include/trace/events/sched.h). Recorded in
/// the waker's and the scheduler's context: every task is measured.
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

/// Options of [`syscount`].
#[derive(Clone, Debug)]
pub struct SyscountOptions {
    /// Also group by this field (`comm`, `pid`).
    pub by: Option<&'static str>,
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

/// Syscalls counted by name (bcc's `syscount`), on the raw tracepoints `sys_enter` and
/// `sys_exit` (include/trace/events/syscalls.h): one attach, never one per syscall, keyed by
/// syscall number into a per-CPU array (no hashing on the hot path). `--latency` pairs
/// `sys_enter` and `sys_exit` by thread; `--failures` counts at `sys_exit` when `ret < 0`.
pub fn syscount(options: &SyscountOptions) -> AggregateJob {
    let at_exit = options.latency || options.failures;
    let mut by = vec![KeyField::labeled(
        "syscall",
        if options.latency { "start.id" } else { "id" },
    )];
    by.extend(options.by.map(KeyField::new));
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
            sum: options.latency.then(|| ("TIME(us)".to_string(), 1000.0)),
            top: Some(options.top),
        },
        tool_filter: false,
    }
}

/// Task states [`offcpu`] can select, as `sched_switch`'s `prev_state` reports them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// TASK_INTERRUPTIBLE (S): waiting for an event, a timer, I/O readiness.
    Interruptible,
    /// TASK_UNINTERRUPTIBLE (D): waiting for disk I/O or a kernel lock.
    Uninterruptible,
}

/// Options of [`offcpu`].
#[derive(Clone, Debug)]
pub struct OffcpuOptions {
    /// Only blocks of at least this many microseconds.
    pub min_us: Option<u64>,
    /// Only blocks of at most this many microseconds.
    pub max_us: Option<u64>,
    /// Only tasks that blocked in this state (default: any, preemption included).
    pub state: Option<TaskState>,
    /// Key by the kernel stack.
    pub kernel_stacks: bool,
    /// Key by the user stack.
    pub user_stacks: bool,
    /// Kernel map sizes.
    pub maps: MapSizes,
}

impl Default for OffcpuOptions {
    fn default() -> Self {
        Self {
            min_us: None,
            max_us: None,
            state: None,
            kernel_stacks: true,
            user_stacks: true,
            maps: MapSizes::default(),
        }
    }
}

/// Time spent blocked, by stack (bcc/libbpf-tools' `offcputime`), in ns summed per (pid,
/// comm, stacks): two stages on `sched:sched_switch` (include/trace/events/sched.h). The
/// task leaving the CPU (`prev_pid`) starts, saving its pid and stacks; the same thread
/// coming back (`next_pid`) ends. `prev_state` bits (`__trace_sched_switch_state`): 1
/// TASK_INTERRUPTIBLE, 2 TASK_UNINTERRUPTIBLE, 0x10 EXIT_DEAD and 0x20 EXIT_ZOMBIE, the last
/// switch of an exiting thread, which never comes back and starts nothing.
///
/// # Errors
/// A usage error when `min_us` is above `max_us`.
pub fn offcpu(options: &OffcpuOptions) -> Result<Request> {
    if let (Some(min), Some(max)) = (options.min_us, options.max_us)
        && min > max
    {
        return Err(crate::Error::usage(format!(
            "--min-us {min} is above --max-us {max}"
        )));
    }
    let start_filter = match options.state {
        None => "prev_pid != 0 && !(prev_state & 48)",
        Some(TaskState::Interruptible) => "prev_pid != 0 && prev_state & 1",
        Some(TaskState::Uninterruptible) => "prev_pid != 0 && prev_state & 2",
    };
    let bounds: Vec<String> = [
        options.min_us.map(|us| format!("latency >= {}", us * 1000)),
        options.max_us.map(|us| format!("latency <= {}", us * 1000)),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut by = vec![
        KeyField::labeled("pid", "start.pid"),
        KeyField::labeled("comm", "next_comm"),
    ];
    if options.kernel_stacks {
        by.push(KeyField::new("start.kstack"));
    }
    if options.user_stacks {
        by.push(KeyField::new("start.ustack"));
    }
    Ok(Request {
        start: Some(Start {
            probes: vec![
                StartProbe::new("sched:sched_switch", &["prev_pid"]).filtered(start_filter),
            ],
            end_pair: vec!["next_pid".into()],
            all_tasks: false,
            per_thread: true,
        }),
        all_tasks: true,
        value: Some("latency".into()),
        by,
        filter: (!bounds.is_empty()).then(|| bounds.join(" && ")),
        maps: options.maps,
        ..Request::probe("sched:sched_switch")
    })
}

/// Options of [`funccount`] and [`funclatency`].
#[derive(Clone, Debug, Default)]
pub struct FunctionOptions {
    /// Function patterns (`vfs_*`, `libc:malloc`, `k:FUNC`).
    pub patterns: Vec<String>,
    /// Also group by this field (`comm`, `pid`).
    pub by: Option<&'static str>,
    /// The N largest counts.
    pub top: Option<usize>,
    /// The latency histogram's unit.
    pub unit: LatencyUnit,
    /// Kernel map sizes.
    pub maps: MapSizes,
    /// How kernel functions attach, and the pid uprobes are limited to.
    pub target: Target,
}

/// Calls of kernel or user functions counted per function (bcc's `funccount`), through
/// kprobes/fentry or uprobes. Several kernel patterns share one probe spec: one engine.
pub fn funccount(options: &FunctionOptions) -> Result<AggregateJob> {
    let probes = options
        .patterns
        .iter()
        .map(|p| function_probe(p, false))
        .collect::<Result<Vec<_>>>()?;
    let probe = match probes.as_slice() {
        [one] => one.clone(),
        many if many.iter().all(|p| p.starts_with("kprobe:")) => format!(
            "kprobe:{}",
            many.iter()
                .map(|p| p.trim_start_matches("kprobe:"))
                .collect::<Vec<_>>()
                .join(",")
        ),
        _ => {
            return Err(crate::Error::usage(
                "funccount: give several kernel patterns, or one user pattern (BINARY:FUNC*)",
            ));
        }
    };
    Ok(AggregateJob {
        command: "funccount",
        what: None,
        request: Request {
            by: options.by.map(KeyField::new).into_iter().collect(),
            by_event: true,
            maps: options.maps,
            target: options.target,
            ..Request::probe(probe)
        },
        report: Report::Counts {
            sum: None,
            top: options.top,
        },
        tool_filter: false,
    })
}

/// A log2 histogram of a function's latency, entry to return, per thread (bcc's
/// `funclatency`): the return probe's `latency`. A recursive call overwrites its caller's
/// start: only the innermost call is timed.
pub fn funclatency(options: &FunctionOptions) -> Result<AggregateJob> {
    let [pattern] = options.patterns.as_slice() else {
        return Err(crate::Error::usage(
            "funclatency times one function pattern",
        ));
    };
    let probe = function_probe(pattern, true)?;
    Ok(AggregateJob {
        command: "funclatency",
        what: Some("latency of {probes}".into()),
        request: Request {
            shape: Shape::Log2,
            value: Some("latency".into()),
            value_div: options.unit.ns,
            maps: options.maps,
            target: options.target,
            ..Request::probe(probe)
        },
        report: Report::Log2 {
            unit: options.unit.header.into(),
        },
        tool_filter: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::compile::{Events, compile_in};

    /// The compiled plans, against the checked-in format files of kernel 6.18.
    fn compiled(request: &Request) -> String {
        compile_in(request, &Events::test_6_18()).unwrap().listing()
    }

    #[test]
    fn bitesize_is_a_log2_of_bytes_by_comm() {
        let request = bitesize(&Default::default()).unwrap().request;
        assert_eq!(
            compiled(&request),
            r#"Main Tracepoints([Tracepoint { system: "block", event: "block_rq_issue" }])
operands: #0 field_string@44:16 #1 field@28:4
corr: - | key: #0 | saves: -
value: #1 | agg: log2 64 slots | layout: hash
filter: -
flags: -
columns: comm Str
"#
        );
    }

    #[test]
    fn biolatency_pairs_issue_and_completion_by_dev_and_sector() {
        let options = BiolatencyOptions {
            per_disk: true,
            ..Default::default()
        };
        let request = biolatency(&options).unwrap().request;
        assert_eq!(
            compiled(&request),
            r#"Start Tracepoints([Tracepoint { system: "block", event: "block_rq_issue" }])
operands: #0 field@8:4 #1 field@16:8
corr: #0 #1 | key: - | saves: -
value: - | agg: count | layout: array bound 0
filter: -
flags: -
Main Tracepoints([Tracepoint { system: "block", event: "block_rq_complete" }])
operands: #0 field@8:4 #1 field@16:8 #2 latency
corr: #0 #1 | key: #0 | saves: -
value: #2 /1000 | agg: log2 64 slots | layout: hash
filter: -
flags: needs_start all_tasks
columns: disk Disk
"#
        );
    }

    /// Three begin events share one start plan; each has its own filter behind its event
    /// index, because `pid` of the wakeups is `prev_pid` of the switch.
    #[test]
    fn runqlat_starts_at_wakeups_and_preemptions() {
        let request = runqlat(&RunqlatOptions::default()).request;
        assert_eq!(
            compiled(&request),
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
            by: Some("comm"),
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

    #[test]
    fn offcpu_saves_pid_and_stacks_at_switch_out() {
        let request = offcpu(&OffcpuOptions {
            min_us: Some(1000),
            state: Some(TaskState::Uninterruptible),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            compiled(&request),
            r#"Start Tracepoints([Tracepoint { system: "sched", event: "sched_switch" }])
operands: #0 field@24:s4 #1 field@32:s8 #2 pid #3 kstack #4 ustack
corr: #0 | key: - | saves: #2->0 #3->1 #4->2
value: - | agg: count | layout: array bound 0
filter: ne #0 0 bitand #1 2 and
flags: announce needs_ids by_thread
Main Tracepoints([Tracepoint { system: "sched", event: "sched_switch" }])
operands: #0 field@56:s4 #1 saved0 #2 field_string@40:16 #3 saved1 #4 saved2 #5 latency
corr: #0 | key: #1 #2 #3 #4 | saves: -
value: #5 | agg: count | layout: hash
filter: ge #5 1000000
flags: needs_start all_tasks
columns: pid Int { signed: false }, comm Str, start.kstack Int { signed: false }, start.ustack Int { signed: false }
"#
        );
    }
}
