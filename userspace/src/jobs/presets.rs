//! The presets that are not tools of the table ([`crate::jobs::tools`]): `offcpu`,
//! `wakeuptime` and `offwaketime`, stack profiles whose commands take stack flags. Each is an engine [`Request`] in the generic
//! language (probes, fields, filter strings, an optional start stage).

use crate::{
    Result,
    engine::request::{KeyField, MapSizes, Request, Start, StartProbe},
};

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
    check_window(options.min_us, options.max_us)?;
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
            keep: false,
        }),
        all_tasks: true,
        value: Some("latency".into()),
        by,
        filter: (!bounds.is_empty()).then(|| bounds.join(" && ")),
        maps: options.maps,
        ..Request::probe("sched:sched_switch")
    })
}

/// Options of [`wakeuptime`].
#[derive(Clone, Debug, Default)]
pub struct WakeuptimeOptions {
    /// Only blocks of at least this many microseconds.
    pub min_us: Option<u64>,
    /// Only blocks of at most this many microseconds.
    pub max_us: Option<u64>,
    /// Kernel map sizes.
    pub maps: MapSizes,
}

/// Time blocked, by the kernel stack that woke the task (bcc/libbpf-tools' `wakeuptime`),
/// in ns summed per (woken pid, woken comm, waker's kernel stack): a sleeping task leaving
/// the CPU (`sched:sched_switch` with `prev_state` 1 or 2, TASK_INTERRUPTIBLE or
/// TASK_UNINTERRUPTIBLE) starts, saving its pid; `sched:sched_waking` of the same thread
/// ends, in the waker's context, whose kernel stack is the key (bcc probes
/// `try_to_wake_up`, which traces `sched_waking`; `sched_wakeup` can fire later on the woken
/// task's CPU, from an IPI in its idle task, when the wakeup is queued there: CI saw a tenth
/// of a pipe reader's blocked time so credited to the idle task). The task's own
/// `-p`/`-- CMD` scope selects the blocked tasks; wakers are any task. Only kernel stacks:
/// the waker's user stack would belong to another process than the key's pid.
///
/// # Errors
/// A usage error when `min_us` is above `max_us`.
pub fn wakeuptime(options: &WakeuptimeOptions) -> Result<Request> {
    let filter = bounds(options.min_us, options.max_us)?;
    Ok(Request {
        start: Some(Start {
            probes: vec![
                StartProbe::new("sched:sched_switch", &["prev_pid"])
                    .filtered("prev_pid != 0 && prev_state & 3"),
            ],
            end_pair: vec!["pid".into()],
            all_tasks: false,
            per_thread: true,
            keep: false,
        }),
        all_tasks: true,
        value: Some("latency".into()),
        by: vec![
            KeyField::labeled("pid", "start.pid"),
            KeyField::labeled("comm", "comm"),
            KeyField::new("kstack"),
        ],
        filter,
        maps: options.maps,
        ..Request::probe("sched:sched_waking")
    })
}

/// Options of [`offwaketime`].
#[derive(Clone, Debug)]
pub struct OffwaketimeOptions {
    /// Only blocks of at least this many microseconds.
    pub min_us: Option<u64>,
    /// Only blocks of at most this many microseconds.
    pub max_us: Option<u64>,
    /// Only this thread blocking (`-t TID`).
    pub tid: Option<u32>,
    /// Key by the kernel stacks (the blocked task's and the waker's).
    pub kernel_stacks: bool,
    /// Key by the user stacks (the blocked task's and the waker's).
    pub user_stacks: bool,
    /// Kernel map sizes.
    pub maps: MapSizes,
}

impl Default for OffwaketimeOptions {
    fn default() -> Self {
        Self {
            min_us: None,
            max_us: None,
            tid: None,
            kernel_stacks: true,
            user_stacks: true,
            maps: MapSizes::default(),
        }
    }
}

/// Time blocked, by the blocked task's stacks and its waker's stacks (bcc's `offwaketime`),
/// in ns summed per (blocked pid, its kernel and user stacks, waker pid, the waker's kernel
/// and user stacks, blocked tid, waker tid): a sleeping task leaving the CPU (`sched:sched_switch`
/// with `prev_state` 1 or 2) starts, saving its pid and stacks under its thread id;
/// `sched:sched_waking` of that thread ends, in the waker's context (`try_to_wake_up`
/// traces it before any cross-CPU queueing, so the current task is the waker), whose
/// stacks and ids (`task->tgid`, `task->pid`, through BTF) join the key. The time counted
/// is from switch-out to the wakeup: the block itself, without the run-queue wait after it
/// (`runqlat`'s). The key is 8 words, full: the threads' names are read from /proc.
///
/// # Errors
/// A usage error when `min_us` is above `max_us`, or when neither stack is asked for.
pub fn offwaketime(options: &OffwaketimeOptions) -> Result<Request> {
    if !options.kernel_stacks && !options.user_stacks {
        return Err(crate::Error::usage(
            "offwaketime needs kernel or user stacks (drop -K or -U)",
        ));
    }
    let filter = bounds(options.min_us, options.max_us)?;
    let mut start_filter = "prev_pid != 0 && prev_state & 3".to_string();
    if let Some(tid) = options.tid {
        start_filter += &format!(" && prev_pid == {tid}");
    }
    // pid kstack? ustack? waker_pid kstack? ustack? tid waker_tid: 8 words at most, no
    // room for the two comms (4 words each), which userspace reads from /proc by tid.
    let mut by = vec![KeyField::labeled("pid", "start.pid")];
    let stacks = |by: &mut Vec<KeyField>, prefix: &str| {
        if options.kernel_stacks {
            by.push(KeyField::new(format!("{prefix}kstack")));
        }
        if options.user_stacks {
            by.push(KeyField::new(format!("{prefix}ustack")));
        }
    };
    stacks(&mut by, "start.");
    by.push(KeyField::labeled("waker_pid", "task->tgid"));
    stacks(&mut by, "");
    by.push(KeyField::labeled("tid", "pid"));
    by.push(KeyField::labeled("waker_tid", "task->pid"));
    Ok(Request {
        start: Some(Start {
            probes: vec![
                StartProbe::new("sched:sched_switch", &["prev_pid"]).filtered(start_filter),
            ],
            end_pair: vec!["pid".into()],
            all_tasks: false,
            per_thread: true,
            keep: false,
        }),
        all_tasks: true,
        value: Some("latency".into()),
        by,
        filter,
        maps: options.maps,
        ..Request::probe("sched:sched_waking")
    })
}

/// A usage error when the block-time window is empty (`-m` above `-M`).
fn check_window(min_us: Option<u64>, max_us: Option<u64>) -> Result<()> {
    match (min_us, max_us) {
        (Some(min), Some(max)) if min > max => Err(crate::Error::usage(format!(
            "-m/--min-block-time {min} is above -M/--max-block-time {max} (microseconds)"
        ))),
        _ => Ok(()),
    }
}

/// `latency` between `min_us` and `max_us`, in ns, as a filter.
fn bounds(min_us: Option<u64>, max_us: Option<u64>) -> Result<Option<String>> {
    check_window(min_us, max_us)?;
    let bounds: Vec<String> = [
        min_us.map(|us| format!("latency >= {}", us.saturating_mul(1000))),
        max_us.map(|us| format!("latency <= {}", us.saturating_mul(1000))),
    ]
    .into_iter()
    .flatten()
    .collect();
    Ok((!bounds.is_empty()).then(|| bounds.join(" && ")))
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
    fn an_empty_block_time_window_is_a_usage_error_in_each_preset() {
        let expected =
            "-m/--min-block-time 5 is above -M/--max-block-time 2 (microseconds)".to_string();
        let offcpu = offcpu(&OffcpuOptions {
            min_us: Some(5),
            max_us: Some(2),
            ..Default::default()
        });
        let wakeuptime = wakeuptime(&WakeuptimeOptions {
            min_us: Some(5),
            max_us: Some(2),
            ..Default::default()
        });
        for result in [offcpu, wakeuptime] {
            let error = result.unwrap_err();
            assert!(matches!(error, crate::Error::Usage(_)), "{error}");
            assert_eq!(error.to_string(), expected);
        }
        assert!(check_window(Some(2), Some(2)).is_ok());
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
columns: pid Int { signed: false }, comm Str, start.kstack KernelStack, start.ustack Int { signed: false }
"#
        );
    }

    #[test]
    fn wakeuptime_starts_at_sleep_and_ends_at_the_wakeup() {
        let request = wakeuptime(&WakeuptimeOptions {
            min_us: Some(10),
            ..Default::default()
        })
        .unwrap();
        let listing = compiled(&request);
        assert!(
            listing.contains(
                "Main Tracepoints([Tracepoint { system: \"sched\", event: \"sched_waking\" }])"
            ),
            "{listing}"
        );
        assert!(listing.contains("bitand"), "{listing}");
        assert!(listing.contains("ge "), "{listing}");
        let err = wakeuptime(&WakeuptimeOptions {
            min_us: Some(2),
            max_us: Some(1),
            ..Default::default()
        })
        .unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn offwaketime_saves_the_blocked_stacks_and_keys_the_wakers_at_waking() {
        let request = offwaketime(&OffwaketimeOptions {
            tid: Some(42),
            min_us: Some(5),
            ..Default::default()
        })
        .unwrap();
        let listing = compiled(&request);
        let lines: Vec<&str> = listing.lines().collect();
        assert!(lines[0].contains("sched_switch"), "{listing}");
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("filter: ne #0 0") && l.contains("eq #0 42")),
            "{listing}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.contains("saves:") && l.contains("->2")),
            "{listing}"
        );
        assert!(
            listing.contains(
                "Main Tracepoints([Tracepoint { system: \"sched\", event: \"sched_waking\" }])"
            ),
            "{listing}"
        );
        assert!(
            lines.iter().any(|l| l.starts_with("filter: ge")),
            "{listing}"
        );
        let columns = lines.last().unwrap();
        let names: Vec<&str> = columns
            .trim_start_matches("columns: ")
            .split(", ")
            .map(|c| c.split(' ').next().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "pid",
                "start.kstack",
                "start.ustack",
                "waker_pid",
                "kstack",
                "ustack",
                "tid",
                "waker_tid"
            ],
            "{listing}"
        );
        let kernel_only = offwaketime(&OffwaketimeOptions {
            user_stacks: false,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(kernel_only.by.len(), 6);
        let neither = offwaketime(&OffwaketimeOptions {
            user_stacks: false,
            kernel_stacks: false,
            ..Default::default()
        })
        .unwrap_err();
        assert_eq!(neither.exit_code(), 2);
    }
}
