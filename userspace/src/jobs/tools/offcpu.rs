//! `offcpu`: time blocked off-CPU, by stack (bcc's `offcputime`). Its command takes stack
//! flags of its own (the binary's `commands/offcpu.rs`); the request, in the engine's generic
//! language (probes, fields, filter strings, a start stage), is here. The block-time window
//! (`-m`/`-M`) is shared with [`super::wakeuptime`] and [`super::offwaketime`].

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

/// A usage error when the block-time window is empty (`-m` above `-M`).
pub(super) fn check_window(min_us: Option<u64>, max_us: Option<u64>) -> Result<()> {
    match (min_us, max_us) {
        (Some(min), Some(max)) if min > max => Err(crate::Error::usage(format!(
            "-m/--min-block-time {min} is above -M/--max-block-time {max} (microseconds)"
        ))),
        _ => Ok(()),
    }
}

/// `latency` between `min_us` and `max_us`, in ns, as a filter.
pub(super) fn bounds(min_us: Option<u64>, max_us: Option<u64>) -> Result<Option<String>> {
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
        let wakeuptime =
            super::super::wakeuptime::wakeuptime(&super::super::wakeuptime::WakeuptimeOptions {
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
}
