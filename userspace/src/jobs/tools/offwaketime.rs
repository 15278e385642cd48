//! `offwaketime`: each blocked stack joined with the stack that woke it (bcc's
//! `offwaketime`). Its command takes stack flags of its own (the binary's
//! `commands/offwaketime.rs`); the request is here.

use super::offcpu::bounds;
use crate::{
    Result,
    engine::request::{KeyField, MapSizes, Request, Start, StartProbe},
};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::compile::{Events, compile_in};

    /// The compiled plans, against the checked-in format files of kernel 6.18.
    fn compiled(request: &Request) -> String {
        compile_in(request, &Events::test_6_18()).unwrap().listing()
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
