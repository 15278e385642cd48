//! `tracekit runqlen`: run queue length (bcc's, bpftrace's and libbpf-tools' `runqlen`),
//! sampled on every CPU by a timer (`software:cpu-clock:99hz`): at each sample the current
//! task's CFS run queue length is read through BTF (`task->se.cfs_rq->nr_queued`, on
//! kernels before 6.13 `nr_running`, whichever the kernel's BTF has) and counted in a
//! linear histogram, less the running task, as bcc does: 0 is a CPU running one task with
//! none waiting.

use super::{Flag, Group, Metric, ToolPlan, Tool};
use crate::{
    Error, Result,
    engine::request::{KeyField, Request, Shape},
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
    probe::btf_path,
};

/// `tracekit runqlen`.
pub const TOOL: Tool = Tool {
    name: "runqlen",
    summary: "Run queue length histogram, sampled on every CPU (bcc runqlen)",
    examples: "  tracekit runqlen -d 10             # queued tasks while a task runs, all CPUs
  tracekit runqlen --cpus -i 1       # a histogram per CPU, every second
  tracekit runqlen -F 999 -d 5       # sample 999 times a second per CPU

Each sample reads the CFS run queue of the task on that CPU (task->se.cfs_rq->nr_queued,
nr_running before 6.13) and counts its length less the running task. Samples of an idle
CPU are left out (an idle CPU takes few timer samples anyway, being tickless). With
cgroups the queue is the task's group's queue on that CPU, as in bcc.",
    flags: &[
        Flag::switch(
            "cpus",
            "A histogram per CPU (bcc runqlen -C; tracekit's -C is hardirqs' --count)",
        ),
        Flag::number(
            "frequency",
            "HZ",
            Some("99"),
            "Samples a second on each CPU (libbpf-tools runqlen -f)",
        )
        .short('F'),
    ],
    groups: &[Group::Common, Group::Maps],
    plan: |values| {
        let hz = values.number("frequency").unwrap_or(99);
        runqlen(hz, values.switch("cpus"), values.maps).map(ToolPlan::Aggregate)
    },
    metric: Some(Metric {
        name: "runq_length",
        help: "Run queue length sampled at 99 Hz per CPU: tasks on the current task's CFS queue, the running one included.",
        labels: &[],
        by: &["cpu"],
        unit: None,
        // Lengths 1 to 127 in buckets of their own powers of two.
        buckets: Some((0, 6)),
    }),
};

/// The longest queue with a bucket of its own; longer ones share the last.
pub const MAX_LEN: i64 = 64;

/// The run queue length member of `struct cfs_rq` in `btf`: `nr_queued` (6.13 on) or
/// `nr_running`.
///
/// # Errors
/// A runtime error naming both when the kernel has neither. Without BTF (or without the
/// right to read it) the answer is `nr_queued`, and loading the path reports what is
/// missing.
pub fn queue_member(btf: Option<&btf_path::Btf>) -> Result<&'static str> {
    let Some(btf) = btf else {
        return Ok("nr_queued");
    };
    for member in ["nr_queued", "nr_running"] {
        let steps = [
            btf_path::Step::Arrow("se".into()),
            btf_path::Step::Dot("cfs_rq".into()),
            btf_path::Step::Arrow(member.into()),
        ];
        if btf_path::resolve(btf, "task_struct", &steps).is_ok() {
            return Ok(member);
        }
    }
    Err(Error::runtime(
        "runqlen: the kernel's struct cfs_rq has neither nr_queued nor nr_running",
    ))
}

/// The job: `hz` samples a second per CPU, one histogram per CPU with `per_cpu`.
///
/// # Errors
/// A usage error for a frequency of 0 or over 100000; [`queue_member`]'s.
pub fn runqlen(hz: u64, per_cpu: bool, maps: crate::engine::request::MapSizes) -> Result<AggregateJob> {
    if hz == 0 || hz > 100_000 {
        return Err(Error::usage(format!(
            "runqlen -F {hz}: the frequency is 1 to 100000 samples a second"
        )));
    }
    let member = queue_member(btf_path::kernel_btf())?;
    Ok(AggregateJob {
        command: "runqlen",
        what: Some(format!("run queue length at {hz} Hz")),
        request: Request {
            value: Some(format!("task->se.cfs_rq->{member}")),
            // Lengths from 1 (the running task alone) up; the report labels them less one.
            shape: Shape::Linear {
                min: 1,
                max: MAX_LEN + 1,
                step: 1,
            },
            // The idle task is on no CFS queue.
            filter: Some("pid != 0".into()),
            by: if per_cpu {
                vec![KeyField::new("cpu")]
            } else {
                Vec::new()
            },
            maps,
            ..Request::probe(format!("software:cpu-clock:{hz}hz"))
        },
        report: Report::Linear {
            min: 0,
            step: 1,
            unit: "runqlen".into(),
        },
        tool_filter: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::compile::{Events, compile_in};

    #[test]
    fn runqlen_samples_the_current_tasks_queue() {
        let Some(btf) = btf_path::kernel_btf() else {
            eprintln!("skipped: no /sys/kernel/btf/vmlinux");
            return;
        };
        let member = queue_member(Some(btf)).unwrap();
        let job = runqlen(99, true, Default::default()).unwrap();
        assert_eq!(
            job.request.value.as_deref(),
            Some(format!("task->se.cfs_rq->{member}").as_str())
        );
        let listing = compile_in(&job.request, &Events::test_6_18())
            .unwrap()
            .listing();
        assert!(
            listing.starts_with("Main SoftwareEvent { config: 0, sampling: Frequency(99) }"),
            "{listing}"
        );
        assert!(listing.contains("agg: linear"), "{listing}");
        let err = runqlen(0, false, Default::default()).unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }
}
