//! `wakeuptime`: time blocked, by the kernel stack that woke the task (bcc's and
//! libbpf-tools' `wakeuptime`). Its command takes flags of its own (the binary's
//! `commands/wakeuptime.rs`); the request is here.

use super::offcpu::bounds;
use crate::{
    Result,
    engine::request::{KeyField, MapSizes, Request, Start, StartProbe},
};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::compile::{Events, compile_in};

    /// The compiled plans, against the checked-in format files of kernel 6.18.
    fn compiled(request: &Request) -> String {
        compile_in(request, &Events::test_6_18()).unwrap().listing()
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
}
