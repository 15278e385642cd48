//! Whole outputs of aggregate jobs (`count`, `hist`, `syscount`, `biolatency`, ...) from
//! recorded map contents, through the job's own collector and end-of-run code, against
//! golden files in `userspace/tests/golden/aggregate/`.

use std::{collections::BTreeMap, io, path::PathBuf, time::Duration};

use tracekit_common::engine::AggValue;

use super::*;
use crate::{
    engine::{EngineStats, KeyColumn, KeyKind},
    jobs::source::{Replay, str_key as comm},
    output::golden::Transcript,
    session::Interval,
};

/// Recorded maps: `(key, slot, count, sum)` cells and the counters.
fn maps(cells: &[(Vec<u64>, u32, u64, u64)], stats: EngineStats) -> Aggregates {
    let mut all = Aggregates {
        cells: BTreeMap::new(),
        stats,
        kernel_stacks: BTreeMap::new(),
    };
    for (key, slot, count, sum) in cells {
        all.cells.insert(
            (key.clone(), *slot),
            AggValue {
                count: *count,
                sum: *sum,
            },
        );
    }
    all
}

fn counted(counted: u64) -> EngineStats {
    EngineStats {
        counted,
        ..EngineStats::default()
    }
}

fn comm_column() -> Vec<KeyColumn> {
    vec![KeyColumn {
        name: "comm".into(),
        kind: KeyKind::Str,
    }]
}

fn options(interval: Option<u64>, json: bool, output: Option<PathBuf>) -> RunOptions {
    RunOptions {
        scope: Scope::All,
        cgroup: None,
        duration: None,
        interval: interval.map(Duration::from_secs),
        output,
        more_outputs: Vec::new(),
        json,
        verbose: 0,
        debug_info: Default::default(),
    }
}

/// One run of `job` over recorded `reads` (one per interval, then the last, as the kernel
/// maps held them): what it printed on stdout and stderr, and what the returned flows were.
struct Run {
    stdout: String,
    stderr: String,
    flows: Vec<Flow>,
    detached: bool,
}

fn run_replay(
    job: &AggregateJob,
    columns: &[KeyColumn],
    slots: u32,
    options: &RunOptions,
    reads: Vec<Aggregates>,
    intervals: &[u64],
    ended: &Ended,
) -> Run {
    let table = Table {
        command: job.command,
        traced: "recorded events",
        columns,
        report: &job.report,
    };
    let outputs = file_outputs(job, options).unwrap();
    let heat = options.interval.is_some() && job.report.unit().is_some() && !outputs.is_empty();
    let mut collector = AggregateCollector::new(
        Replay::new(reads),
        table,
        slots,
        options.json,
        heat,
        Vec::new(),
    );
    collector.clock = || "12:00:01".to_string();
    collector.attach(&Tracees::default()).unwrap();
    let mut flows = Vec::new();
    for (i, &secs) in intervals.iter().enumerate() {
        let last = i + 1 == intervals.len();
        if last {
            collector.detach().unwrap();
        }
        flows.push(
            collector
                .interval(Interval {
                    elapsed: Duration::from_secs(secs),
                    last,
                })
                .unwrap(),
        );
    }
    if intervals.is_empty() {
        collector.detach().unwrap();
    }
    let all_tasks = false;
    let stderr = collector
        .finish(job, options, &outputs, ended, all_tasks)
        .unwrap();
    Run {
        stdout: String::from_utf8(collector.out).unwrap(),
        stderr,
        flows,
        detached: collector.source.detached,
    }
}

fn ended(secs: f64, reason: &str) -> Ended {
    Ended {
        elapsed: Duration::from_secs_f64(secs),
        reason: reason.into(),
        scope_text: "all processes".into(),
        all: true,
    }
}

fn count_job(command: &'static str, report: Report) -> AggregateJob {
    AggregateJob {
        command,
        what: None,
        request: Request::probe("syscalls:sys_enter_*"),
        report,
        tool_filter: false,
    }
}

fn counts() -> Report {
    Report::Counts {
        clear: false,
        sum: None,
        top: None,
    }
}

fn two_comms() -> Aggregates {
    maps(
        &[(comm("bash"), 0, 12, 0), (comm("sshd"), 0, 340, 0)],
        counted(352),
    )
}

#[test]
fn golden_count_by_comm() {
    let job = count_job("count", counts());
    let run = run_replay(
        &job,
        &comm_column(),
        1,
        &options(None, false, None),
        vec![two_comms()],
        &[],
        &ended(2.0, "duration reached"),
    );
    assert!(run.detached);
    Transcript::new("tracekit count -e 'syscalls:sys_enter_*' --by comm -d 2")
        .part("stdout", run.stdout)
        .part("stderr", run.stderr)
        .check("aggregate/count_by_comm.txt");
}

#[test]
fn golden_count_by_comm_json() {
    let job = count_job("count", counts());
    let run = run_replay(
        &job,
        &comm_column(),
        1,
        &options(None, true, None),
        vec![two_comms()],
        &[],
        &ended(2.0, "duration reached"),
    );
    Transcript::new("tracekit count -e 'syscalls:sys_enter_*' --by comm -d 2 --json")
        .part("stdout", run.stdout)
        .part("stderr", run.stderr)
        .check("aggregate/count_by_comm_json.txt");
}

/// Nothing counted: the table's header alone, and a summary that says so.
#[test]
fn golden_count_empty() {
    let job = count_job("count", counts());
    for json in [false, true] {
        let run = run_replay(
            &job,
            &comm_column(),
            1,
            &options(None, json, None),
            vec![Aggregates::default()],
            &[],
            &ended(1.0, "SIGINT received"),
        );
        Transcript::new(&format!(
            "tracekit count -e 'syscalls:sys_enter_*' --by comm{}  (Ctrl-C at once)",
            if json { " --json" } else { "" }
        ))
        .part("stdout", run.stdout)
        .part("stderr", run.stderr)
        .check(if json {
            "aggregate/count_empty_json.txt"
        } else {
            "aggregate/count_empty.txt"
        });
    }
}

/// Everything the kernel did not count is named on stderr: a full map, unreadable
/// fields, events the kernel skipped while another BPF program ran, ends without starts.
#[test]
fn golden_count_lost_and_missed() {
    let job = count_job("syscount", counts());
    let stats = EngineStats {
        counted: 352,
        filtered: 7,
        map_full: 25,
        read_errors: 3,
        missed: 4,
        starts_missed: 2,
        no_start: 9,
        ..EngineStats::default()
    };
    let run = run_replay(
        &job,
        &comm_column(),
        1,
        &options(None, false, None),
        vec![maps(
            &[(comm("bash"), 0, 12, 0), (comm("sshd"), 0, 340, 0)],
            stats,
        )],
        &[],
        &ended(5.0, "duration reached"),
    );
    Transcript::new("tracekit count --by comm --max-groups 2 -d 5  (maps full, BPF busy)")
        .part("stdout", run.stdout)
        .part("stderr", run.stderr)
        .check("aggregate/count_lost_and_missed.txt");
}

/// A tool's own filter (runqlat's idle task) drops events that are not the tool's: the
/// summary leaves them out.
#[test]
fn tool_filter_hides_filtered_events() {
    let mut job = count_job("runqlat", counts());
    let stats = EngineStats {
        counted: 352,
        filtered: 7,
        ..EngineStats::default()
    };
    let reads = vec![maps(&[(comm("bash"), 0, 352, 0)], stats)];
    let with = run_replay(
        &job,
        &comm_column(),
        1,
        &options(None, false, None),
        reads.clone(),
        &[],
        &ended(1.0, "duration reached"),
    );
    assert!(with.stderr.contains("(7 more did not pass the filter)"));
    job.tool_filter = true;
    let without = run_replay(
        &job,
        &comm_column(),
        1,
        &options(None, false, None),
        reads,
        &[],
        &ended(1.0, "duration reached"),
    );
    assert_eq!(
        without.stderr,
        "Counted 352 events in 1.00 s (duration reached).\nLost: nothing.\n"
    );
}

fn syscall_latency_log2() -> (AggregateJob, Vec<KeyColumn>) {
    let job = count_job(
        "hist",
        Report::Log2 {
            unit: "usecs".into(),
        },
    );
    (job, Vec::new())
}

/// `hist -i 1`: one histogram per interval with its clock banner, each holding only that
/// interval's events (the maps are cumulative), and the last, partial one.
#[test]
fn golden_hist_intervals() {
    let (job, columns) = syscall_latency_log2();
    let reads = vec![
        maps(&[(vec![], 3, 5, 0), (vec![], 4, 10, 0)], counted(15)),
        maps(
            &[(vec![], 3, 5, 0), (vec![], 4, 30, 0), (vec![], 10, 1, 0)],
            counted(36),
        ),
        maps(
            &[(vec![], 3, 5, 0), (vec![], 4, 30, 0), (vec![], 10, 1, 0)],
            EngineStats {
                map_full: 2,
                ..counted(36)
            },
        ),
    ];
    let run = run_replay(
        &job,
        &columns,
        64,
        &options(Some(1), false, None),
        reads,
        &[1, 1, 0],
        &ended(2.4, "SIGINT received"),
    );
    assert_eq!(run.flows, [Flow::Continue, Flow::Continue, Flow::Continue]);
    Transcript::new("tracekit hist -e ... --value latency_ns -i 1  (Ctrl-C after 2.4 s)")
        .part("stdout", run.stdout)
        .part("stderr", run.stderr)
        .check("aggregate/hist_intervals.txt");
}

/// `hist -i 1 --json`: one JSON document per interval, no banners.
#[test]
fn golden_hist_intervals_json() {
    let (job, columns) = syscall_latency_log2();
    let reads = vec![
        maps(&[(vec![], 3, 5, 0)], counted(5)),
        maps(&[(vec![], 3, 5, 0), (vec![], 5, 2, 0)], counted(7)),
    ];
    let run = run_replay(
        &job,
        &columns,
        64,
        &options(Some(1), true, None),
        reads,
        &[1, 1],
        &ended(2.0, "duration reached"),
    );
    Transcript::new("tracekit hist -e ... --value latency_ns -i 1 -d 2 --json")
        .part("stdout", run.stdout)
        .part("stderr", run.stderr)
        .check("aggregate/hist_intervals_json.txt");
}

/// A linear histogram, and a start stage keyed by request whose unended starts are said.
#[test]
fn golden_linear_with_unended_starts() {
    let mut job = count_job(
        "biolatency",
        Report::Linear {
            min: 0,
            step: 10,
            unit: "usecs".into(),
        },
    );
    job.request.start = Some(crate::engine::request::Start {
        probes: Vec::new(),
        end_pair: Vec::new(),
        all_tasks: false,
        per_thread: false,
        keep: false,
    });
    let stats = EngineStats {
        counted: 9,
        starts: 12,
        starts_ended: 9,
        starts_exited: 0,
        ..EngineStats::default()
    };
    let run = run_replay(
        &job,
        &[],
        6,
        &options(None, false, None),
        vec![maps(
            &[(vec![], 1, 2, 0), (vec![], 2, 4, 0), (vec![], 5, 3, 0)],
            stats,
        )],
        &[],
        &ended(3.0, "duration reached"),
    );
    Transcript::new("tracekit biolatency --linear 0,10 -d 3  (3 requests in flight at the end)")
        .part("stdout", run.stdout)
        .part("stderr", run.stderr)
        .check("aggregate/linear_unended.txt");
}

/// `-o FILE.json` writes the run to the file and nothing to stdout; the file is the same
/// document `--json` prints.
#[test]
fn output_file_holds_the_json_stdout_would() {
    let job = count_job("count", counts());
    let dir = std::env::temp_dir().join(format!("tracekit-golden-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("count.json");
    let to_file = run_replay(
        &job,
        &comm_column(),
        1,
        &options(None, false, Some(file.clone())),
        vec![two_comms()],
        &[],
        &ended(2.0, "duration reached"),
    );
    assert_eq!(to_file.stdout, "");
    let written = std::fs::read_to_string(&file).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let printed = run_replay(
        &job,
        &comm_column(),
        1,
        &options(None, true, None),
        vec![two_comms()],
        &[],
        &ended(2.0, "duration reached"),
    );
    assert_eq!(written, printed.stdout);
    assert_eq!(to_file.stderr, printed.stderr);
}

/// A closed stdout (`tracekit count -i 1 | head -3` once head exits) stops the run
/// quietly: the interval reports the output closed rather than an error.
#[test]
fn closed_stdout_stops_the_run() {
    struct Closed;
    impl io::Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let job = count_job("count", counts());
    let columns = comm_column();
    let table = Table {
        command: job.command,
        traced: "recorded events",
        columns: &columns,
        report: &job.report,
    };
    let mut collector = AggregateCollector::new(
        Replay::new(vec![two_comms()]),
        table,
        1,
        false,
        false,
        Closed,
    );
    let flow = collector
        .interval(Interval {
            elapsed: Duration::from_secs(1),
            last: false,
        })
        .unwrap();
    assert_eq!(flow, Flow::OutputClosed);
}

/// Other write errors (a full disk) are errors, not a quiet stop.
#[test]
fn other_stdout_errors_are_errors() {
    struct Full;
    impl io::Write for Full {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from_raw_os_error(libc::ENOSPC))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let job = count_job("count", counts());
    let columns = comm_column();
    let table = Table {
        command: job.command,
        traced: "recorded events",
        columns: &columns,
        report: &job.report,
    };
    let mut collector =
        AggregateCollector::new(Replay::new(vec![two_comms()]), table, 1, false, false, Full);
    let err = collector
        .interval(Interval {
            elapsed: Duration::from_secs(1),
            last: false,
        })
        .unwrap_err();
    assert!(err.to_string().contains("writing to stdout"), "{err}");
}

#[test]
fn heat_rows_sum_groups_and_fold_log_linear() {
    let group = |slots: Vec<u64>| crate::engine::Group {
        key: Vec::new(),
        count: slots.iter().sum(),
        sum: 0,
        slots,
    };
    let log2 = Report::Log2 { unit: "ns".into() };
    assert_eq!(
        heat_rows(&log2, &[group(vec![1, 2, 0]), group(vec![0, 3, 4])], 3),
        [1, 5, 4]
    );
}

#[test]
fn svg_needs_a_histogram_and_intervals() {
    let svg = Some(PathBuf::from("run.svg"));
    let err = file_outputs(
        &count_job("count", counts()),
        &options(Some(1), false, svg.clone()),
    )
    .err()
    .unwrap();
    assert!(err.to_string().contains("this one counts"), "{err}");
    let (hist, _) = syscall_latency_log2();
    let err = file_outputs(&hist, &options(None, false, svg.clone()))
        .err()
        .unwrap();
    assert!(err.to_string().contains("add -i"), "{err}");
    let ok = file_outputs(&hist, &options(Some(1), false, svg)).unwrap();
    assert!(matches!(ok.as_slice(), [(_, FileOutput::HeatMap)]));
}

#[test]
fn percentiles_need_a_value_and_no_linear() {
    let err = count_job("count", counts())
        .percentiles(Some(3), "usecs")
        .err()
        .unwrap();
    assert!(err.to_string().contains("needs a value"), "{err}");
    let linear = count_job(
        "hist",
        Report::Linear {
            min: 0,
            step: 1,
            unit: "x".into(),
        },
    );
    let err = linear.percentiles(Some(3), "usecs").err().unwrap();
    assert!(err.to_string().contains("leave out --linear"), "{err}");
    // None leaves the job as it was.
    let same = count_job("count", counts())
        .percentiles(None, "usecs")
        .unwrap();
    assert_eq!(same.report, counts());
}

/// The heat map's rows run from the lowest to the highest bucket any interval used, with
/// log2 labels.
#[test]
fn heat_map_rows_are_trimmed_to_the_used_buckets() {
    let (job, columns) = syscall_latency_log2();
    let table = Table {
        command: "hist",
        traced: "x",
        columns: &columns,
        report: &job.report,
    };
    let column = |counts: Vec<u64>| heatmap::Column {
        clock: "12:00:01".into(),
        start_ms: 0,
        length_ms: 1000,
        counts,
    };
    let intervals = heat_intervals(
        &table,
        &[column(vec![0, 0, 3, 0, 0]), column(vec![0, 0, 0, 1, 0])],
        "all processes",
    );
    let labels: Vec<&str> = intervals.rows.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels, ["4 -> 7", "8 -> 15"]);
    assert_eq!(intervals.columns[0].counts, [3, 0]);
    assert_eq!(intervals.columns[1].counts, [0, 1]);
    assert!(
        intervals.place.ends_with(", all processes"),
        "{}",
        intervals.place
    );
}

/// Linear heat maps label their first row `< MIN` and their last `>= MAX`, as the table does.
#[test]
fn linear_heat_map_rows_have_open_ends() {
    let report = Report::Linear {
        min: 0,
        step: 10,
        unit: "usecs".into(),
    };
    let columns = comm_column();
    let table = Table {
        command: "hist",
        traced: "x",
        columns: &columns,
        report: &report,
    };
    let intervals = heat_intervals(
        &table,
        &[heatmap::Column {
            clock: "12:00:01".into(),
            start_ms: 0,
            length_ms: 1000,
            counts: vec![1, 0, 2, 5],
        }],
        "all processes",
    );
    let labels: Vec<&str> = intervals.rows.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels, ["< 0", "0 -> 9", "10 -> 19", ">= 20"]);
    assert!(
        intervals.place.ends_with("; every comm summed"),
        "{}",
        intervals.place
    );
}
