//! `tracekit cpufreq`: the CPU frequency at each timer sample, system-wide, by process or by
//! CPU (libbpf-tools' `cpufreq`). `power:cpu_frequency` (include/trace/events/power.h:
//! `state` in kHz, `cpu_id`) sets each CPU's last frequency, kept in the kernel as a
//! [`Start::keep`] cell per CPU; a sampler (`software:cpu-clock`, 99 Hz per CPU) reads its
//! own CPU's cell at each sample and counts it in a linear histogram of MHz. Only a
//! cpufreq driver (`/sys/devices/system/cpu/cpuN/cpufreq`) emits the tracepoint: without
//! one the tool refuses, naming what is missing, before anything is attached.

use std::path::Path;

use super::{BY_PROCESS, Flag, Group, ToolPlan, Tool};
use crate::{
    Error, Result,
    engine::request::{KeyField, MapSizes, Request, Shape, Start, StartProbe},
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
};

/// `tracekit cpufreq`.
pub const TOOL: Tool = Tool {
    name: "cpufreq",
    summary: "CPU frequency of each timer sample, as a histogram in MHz (libbpf-tools cpufreq)",
    examples: "  tracekit cpufreq -d 10             # frequencies of every CPU's samples, 99 Hz
  tracekit cpufreq --by comm         # one histogram per process name (libbpf-tools' per-comm)
  tracekit cpufreq --cpus -F 999     # one per CPU, 999 samples a second

Each CPU's frequency is the last power:cpu_frequency event for it (a cpufreq driver's
change); samples of a CPU before its first change are not counted (libbpf-tools reads
scaling_cur_freq at start instead). Needs a cpufreq driver: without one (most virtual
machines) the tool says so and exits 1.",
    flags: &[
        BY_PROCESS,
        Flag::switch("cpus", "A histogram per CPU"),
        Flag::number(
            "frequency",
            "HZ",
            Some("99"),
            "Samples a second on each CPU (libbpf-tools cpufreq -f)",
        )
        .short('F'),
    ],
    groups: &[Group::Common, Group::Maps],
    plan: |values| {
        let mut by: Vec<KeyField> = values.text("by").map(KeyField::new).into_iter().collect();
        if values.switch("cpus") {
            by.push(KeyField::new("cpu"));
        }
        let hz = values.number("frequency").unwrap_or(99);
        cpufreq(hz, by, values.maps, Path::new(CPUS)).map(ToolPlan::Aggregate)
    },
    metric: None,
};

/// Where the kernel lists CPUs, each with a `cpufreq` directory under a cpufreq driver.
pub const CPUS: &str = "/sys/devices/system/cpu";

/// Width of a histogram bucket, MHz (libbpf-tools' `HIST_STEP_SIZE`).
pub const STEP_MHZ: u64 = 200;
/// The highest frequency with a bucket of its own, MHz; faster ones share the last.
pub const MAX_MHZ: i64 = 8000;

/// The job: `hz` samples a second per CPU, grouped by `by` (none: system-wide). `cpus` is
/// the sysfs CPU directory ([`CPUS`]; another root in tests).
///
/// # Errors
/// A usage error for a frequency of 0 or over 100000; a runtime error naming the missing
/// `cpufreq` directories when no CPU under `cpus` has a cpufreq driver.
pub fn cpufreq(hz: u64, by: Vec<KeyField>, maps: MapSizes, cpus: &Path) -> Result<AggregateJob> {
    if hz == 0 || hz > 100_000 {
        return Err(Error::usage(format!(
            "cpufreq -F {hz}: the frequency is 1 to 100000 samples a second"
        )));
    }
    if !has_driver(cpus) {
        return Err(Error::runtime(format!(
            "cpufreq: no cpufreq driver: {}/cpu*/cpufreq does not exist, so the kernel reports \
             no CPU frequency (power:cpu_frequency never fires); nothing was attached",
            cpus.display()
        )));
    }
    Ok(AggregateJob {
        command: "cpufreq",
        what: Some(format!("CPU frequency at {hz} Hz")),
        request: Request {
            start: Some(Start {
                probes: vec![StartProbe::new("power:cpu_frequency", &["cpu_id"])],
                end_pair: vec!["cpu".into()],
                // Frequency changes run in any task's context (a kworker, the idle task).
                all_tasks: true,
                per_thread: false,
                keep: true,
            }),
            value: Some("start.state".into()),
            // kHz to MHz.
            value_div: 1000,
            shape: Shape::Linear {
                min: 0,
                max: MAX_MHZ,
                step: STEP_MHZ,
            },
            by,
            maps,
            ..Request::probe(format!("software:cpu-clock:{hz}hz"))
        },
        report: Report::Linear {
            min: 0,
            step: STEP_MHZ,
            unit: "MHz".into(),
        },
        tool_filter: true,
    })
}

/// Whether any CPU under `cpus` has a `cpufreq` directory (a driver is bound).
fn has_driver(cpus: &Path) -> bool {
    std::fs::read_dir(cpus).is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            name.strip_prefix("cpu")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                && entry.path().join("cpufreq").is_dir()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::compile::{Events, compile_in};

    #[test]
    fn cpufreq_reads_each_cpus_kept_frequency_at_each_sample() {
        let root = std::env::temp_dir().join(format!("tk-cpufreq-{}", std::process::id()));
        std::fs::create_dir_all(root.join("cpu0")).unwrap();
        std::fs::create_dir_all(root.join("cpufreq")).unwrap();
        let err = cpufreq(99, Vec::new(), Default::default(), &root).unwrap_err();
        assert_eq!(err.exit_code(), 1);
        assert!(err.to_string().starts_with(&format!(
            "cpufreq: no cpufreq driver: {}/cpu*/cpufreq does not exist",
            root.display()
        )));
        std::fs::create_dir_all(root.join("cpu0/cpufreq")).unwrap();
        let job = cpufreq(99, vec![KeyField::new("comm")], Default::default(), &root).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
        let listing = compile_in(&job.request, &Events::test_6_18())
            .unwrap()
            .listing();
        // The start stage keeps each CPU's `state` (kHz) under its `cpu_id`; each sample
        // reads the cell of its own CPU, in MHz, and leaves it.
        assert!(
            listing.starts_with(
                "Start Tracepoints([Tracepoint { system: \"power\", event: \"cpu_frequency\" }])\n\
                 operands: #0 field@12:4 #1 field@8:4\n\
                 corr: #0 | key: - | saves: #1->0\n"
            ),
            "{listing}"
        );
        assert!(
            listing.contains(
                "Main SoftwareEvent { config: 0, sampling: Frequency(99) }\n\
                 operands: #0 cpu #1 comm #2 saved0\n\
                 corr: #0 | key: #1 | saves: -\n\
                 value: #2 /1000 | agg: linear 42 slots from 0 step 200 | layout: hash\n\
                 filter: -\n\
                 flags: needs_start keep_start\n"
            ),
            "{listing}"
        );
        let err = cpufreq(0, Vec::new(), Default::default(), &root).unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }
}
