//! Whole outputs of `stat` from recorded counter readings, against golden files in
//! `userspace/tests/golden/stat/`: perf stat's report, its `-I` lines, and the JSON.

use super::*;
use crate::output::golden::Transcript;

fn row(name: &str, supported: bool, from_wildcard: bool) -> StatRow {
    StatRow {
        event: counters::named_event(name).unwrap(),
        supported,
        from_wildcard,
    }
}

fn rows() -> Vec<StatRow> {
    vec![
        row("task-clock", true, false),
        row("context-switches", true, false),
        row("page-faults", true, false),
        row("cycles", false, false),
        row("instructions", false, false),
    ]
}

fn reading(value: u64) -> Reading {
    Reading {
        value,
        enabled_ns: 2_000_000_000,
        running_ns: 2_000_000_000,
    }
}

/// The readings at the end of a 2 s run: 1.5 s of task clock, no cycles counter.
fn end() -> Vec<Reading> {
    vec![
        reading(1_500_000_000),
        reading(4_321),
        reading(1_061),
        Reading::default(),
        Reading::default(),
    ]
}

#[test]
fn golden_stat_text() {
    let elapsed = Duration::from_secs(2);
    Transcript::new("tracekit stat -e task-clock,context-switches,page-faults,cycles,instructions -a -d 2  (no PMU)")
        .part(
            "stdout",
            text_report(&rows(), &end(), elapsed, &target(&Scope::All), false),
        )
        .check("stat/text.txt");
}

#[test]
fn golden_stat_json() {
    let elapsed = Duration::from_secs(2);
    Transcript::new("tracekit stat -e ... -p 12,13 -d 2 --json")
        .part(
            "stdout",
            json_report(&rows(), &end(), elapsed, "pids 12, 13 (sshd)"),
        )
        .check("stat/json.txt");
}

/// `-I 1000`: the header, then each interval's counts (what changed since the last), then
/// the report of the whole run.
#[test]
fn golden_stat_intervals() {
    let rows = rows();
    let first = vec![
        reading(700_000_000),
        reading(2_000),
        reading(1_000),
        Reading::default(),
        Reading::default(),
    ];
    let zero = vec![Reading::default(); rows.len()];
    let mut out = INTERVAL_HEADER.to_string();
    out.push_str(&interval_report(
        &rows,
        &first,
        &zero,
        Duration::from_secs(1),
        false,
        false,
    ));
    out.push_str(&interval_report(
        &rows,
        &end(),
        &first,
        Duration::from_secs(2),
        false,
        false,
    ));
    out.push_str(&text_report(
        &rows,
        &end(),
        Duration::from_secs(2),
        &target(&Scope::Command(vec!["sleep".into(), "2".into()])),
        false,
    ));
    Transcript::new("tracekit stat -e ... -I 1000 -- sleep 2")
        .part("stdout", out)
        .check("stat/intervals.txt");
}

/// Events from a tracepoint wildcard that did not fire are left out, unless `--all`.
#[test]
fn wildcard_zeroes_hide_unless_asked() {
    let rows = vec![
        row("task-clock", true, false),
        row("page-faults", true, true),
    ];
    let readings = vec![reading(1_000_000), Reading::default()];
    let elapsed = Duration::from_secs(1);
    let hidden = text_report(&rows, &readings, elapsed, "system wide", false);
    let shown = text_report(&rows, &readings, elapsed, "system wide", true);
    assert!(!hidden.contains("page-faults"), "{hidden}");
    assert!(shown.contains("page-faults"), "{shown}");
    let zero = vec![Reading::default(); 2];
    let lines = interval_report(&rows, &readings, &zero, elapsed, false, false);
    assert_eq!(lines.lines().count(), 1, "{lines}");
}

#[test]
fn targets_are_named_as_perf_names_them() {
    assert_eq!(target(&Scope::All), "system wide");
    assert_eq!(target(&Scope::Pids(vec![12, 13])), "process id '12,13'");
    assert_eq!(
        target(&Scope::Command(vec!["ls".into(), "-l".into()])),
        "'ls -l'"
    );
}

#[test]
fn intervals_shorter_than_10_ms_are_refused() {
    let options = RunOptions {
        scope: Scope::All,
        cgroup: None,
        duration: None,
        interval: Some(Duration::from_millis(5)),
        output: None,
        more_outputs: Vec::new(),
        json: false,
        verbose: 0,
        debug_info: Default::default(),
    };
    let stat = StatOptions {
        events: Vec::new(),
        show_zero: false,
    };
    let err = run(&stat, &options).unwrap_err();
    assert_eq!(err.to_string(), "-I: the interval must be at least 10 ms");
}

/// perf stat's defaults, with `-a` counting cpu-clock where a command counts task-clock.
#[test]
fn default_events_follow_the_scope() {
    let names = |all_cpus| -> Vec<String> {
        resolve_events(&[], all_cpus)
            .unwrap()
            .into_iter()
            .map(|(event, wildcard)| {
                assert!(!wildcard);
                event.name
            })
            .collect()
    };
    assert_eq!(names(false)[0], "task-clock");
    assert_eq!(names(true)[0], "cpu-clock");
    let defaults = counters::stat_defaults();
    assert_eq!(names(false), defaults);
    assert_eq!(names(true)[1..], defaults[1..]);
}

#[test]
fn unknown_events_suggest_the_nearest() {
    let err = resolve_events(&["cycels".into()], false).unwrap_err();
    assert!(matches!(err, Error::Usage(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "-e cycels: unknown event (did you mean `cycles`?); `tracekit list` shows them"
    );
}

#[test]
fn function_probes_are_sent_to_funccount() {
    let err = resolve_events(&["kprobe:vfs_read".into()], false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "-e kprobe:vfs_read: stat counts perf events and tracepoints; use funccount for functions"
    );
}
