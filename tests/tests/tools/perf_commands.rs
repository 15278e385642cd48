//! perf's everyday commands: `stat`, `top`, `list`, and `offcpu`, against fixtures with
//! known page faults, sleeps, syscalls and call chains.

use std::time::Duration;

use serde_json::Value;
use tracekit_tests::{
    fixture, kill, parse_folded, parse_json, require_root, scratch, spawn_fixture, spawn_tracekit,
    tracekit, wait_for_stderr, wait_output,
};

const TIMEOUT: Duration = Duration::from_secs(60);

fn stat_json(args: &[&str]) -> Value {
    let mut all = vec!["stat", "--json"];
    all.extend(args);
    let run = tracekit(&all, TIMEOUT);
    run.assert_code(0);
    parse_json(&run.stdout)
}

fn event<'a>(json: &'a Value, name: &str) -> &'a Value {
    json["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == name)
        .unwrap_or_else(|| panic!("no {name}: {json:#}"))
}

/// Whether the machine has a hardware PMU perf can use.
fn has_hardware_pmu() -> bool {
    std::path::Path::new("/sys/bus/event_source/devices/cpu").exists()
}

/// Page faults of a fixture touching N pages, context switches of one that
/// sleeps 100 times, exact syscall tracepoint counts, unsupported hardware counters.
#[test]
fn everyday_stat_known_counts() {
    require_root();
    let funcs = fixture("tk_funcs");
    let funcs = funcs.to_str().unwrap();
    let pages = 5000u64;
    let json = stat_json(&["--", funcs, "touch", &pages.to_string()]);
    let faults = event(&json, "page-faults")["value"].as_u64().unwrap();
    assert!(
        faults >= pages && faults as f64 <= 1.1 * pages as f64 + 200.0,
        "{faults} page faults for {pages} pages"
    );
    for name in ["task-clock", "context-switches", "cpu-migrations"] {
        assert_eq!(event(&json, name)["supported"], true, "{name}");
    }
    if !has_hardware_pmu() {
        for name in ["cycles", "instructions", "branches", "branch-misses"] {
            assert_eq!(event(&json, name)["supported"], false, "{name}: {json:#}");
        }
        // And in the text layout, as perf prints it.
        let run = tracekit(["stat", "--", funcs, "calls", "1"], TIMEOUT);
        run.assert_code(0);
        for name in ["cycles", "instructions"] {
            assert!(
                run.stdout
                    .lines()
                    .any(|l| l.contains("<not supported>") && l.trim_end().ends_with(name)),
                "{}",
                run.stdout
            );
        }
    }

    let json = stat_json(&["-e", "cs", "--", funcs, "sleep", "100", "1"]);
    let switches = event(&json, "context-switches")["value"].as_u64().unwrap();
    assert!(
        switches >= 100,
        "{switches} context switches for 100 sleeps"
    );

    let syscalls = fixture("tk_syscalls");
    let json = stat_json(&[
        "-e",
        "syscalls:sys_enter_getppid",
        "--",
        syscalls.to_str().unwrap(),
        "7777",
    ]);
    assert_eq!(
        event(&json, "syscalls:sys_enter_getppid")["value"],
        7777,
        "{json:#}"
    );
}

/// A command's counters start at its exec, as perf stat's do (enable_on_exec): the forked
/// child's `execve` and its pre-exec checks (a `getppid`, which raced and made 7778 of 7777
/// once in three runs) are not the command's. `execve` was counted in every run: tracekit's
/// `PR_TASK_PERF_EVENTS_ENABLE` enabled the command's counters before its exec. perf stat
/// gives 0 and 7777 here.
#[test]
fn everyday_stat_command_counted_from_exec() {
    require_root();
    let syscalls = fixture("tk_syscalls");
    for _ in 0..5 {
        let json = stat_json(&[
            "-e",
            "syscalls:sys_enter_execve,syscalls:sys_enter_getppid",
            "--",
            syscalls.to_str().unwrap(),
            "7777",
        ]);
        assert_eq!(
            (
                &event(&json, "syscalls:sys_enter_execve")["value"],
                &event(&json, "syscalls:sys_enter_getppid")["value"]
            ),
            (&Value::from(0), &Value::from(7777)),
            "{json:#}"
        );
    }
}

/// `stat -e 'syscalls:sys_enter_*'` counts its 360-odd tracepoints with one
/// program on the raw tracepoint `sys_enter`, keyed by syscall number (one perf counter per
/// tracepoint took 12-15 s to close). The counts are exact and perf stat's: a loop of 7777
/// `getppid()` is 7777, the command is counted from its exec (its `execve` entry is not its
/// own; the exit is), and every other syscall's count equals what `perf stat` gives for the
/// same command. `-v` says how the set attached and how long attaching took.
#[test]
fn everyday_stat_syscall_set_counts_exactly() {
    require_root();
    let syscalls = fixture("tk_syscalls");
    let syscalls = syscalls.to_str().unwrap();
    let dir = scratch("everyday_stat_syscall_set_counts_exactly");
    let nonzero = |path: &std::path::Path| -> Vec<(String, u64)> {
        let json = parse_json(&std::fs::read_to_string(path).unwrap());
        let mut rows: Vec<(String, u64)> = json["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| Some((e["event"].as_str()?.to_string(), e["value"].as_u64()?)))
            .filter(|(_, value)| *value > 0)
            .collect();
        rows.sort();
        rows
    };
    let count_of = |rows: &[(String, u64)], name: &str| {
        rows.iter().find(|(n, _)| n == name).map_or(0, |r| r.1)
    };
    for set in ["sys_enter", "sys_exit"] {
        let out = dir.join(format!("{set}.json"));
        let events = format!("syscalls:{set}_*");
        let run = tracekit(
            [
                "stat",
                "-v",
                "-e",
                &events,
                "-o",
                out.to_str().unwrap(),
                "--",
                syscalls,
                "7777",
            ],
            TIMEOUT,
        );
        run.assert_code(0);
        assert!(
            run.stderr
                .contains(&format!("tracekit: attached raw tracepoint {set} for "))
                && run
                    .stderr
                    .contains("counted by syscall number in one program"),
            "{}",
            run.stderr
        );
        let attached = run
            .stderr
            .lines()
            .find_map(|l| l.strip_prefix("tracekit: attached in "))
            .and_then(|rest| rest.split(" ms").next())
            .and_then(|ms| ms.parse::<f64>().ok());
        assert!(attached.is_some_and(|ms| ms > 0.0), "{}", run.stderr);
        let rows = nonzero(&out);
        assert_eq!(
            count_of(&rows, &format!("syscalls:{set}_getppid")),
            7777,
            "{rows:?}"
        );
        let execve = u64::from(set == "sys_exit");
        assert_eq!(
            count_of(&rows, &format!("syscalls:{set}_execve")),
            execve,
            "{rows:?}"
        );
        assert_eq!(
            count_of(&rows, &format!("syscalls:{set}_exit_group")),
            // exit_group(2) never returns: no exit event.
            u64::from(set == "sys_enter"),
            "{rows:?}"
        );

        // perf stat counts the same command alike, row for row (its stdout a pipe too, as
        // under tracekit: glibc asks a terminal or /dev/null for more).
        let perf = std::process::Command::new("perf")
            .args(["stat", "-x,", "-e", &events, "--", syscalls, "7777"])
            .output();
        let Ok(perf) = perf else {
            eprintln!(
                "skipped the comparison with perf stat: no perf (apt-get install linux-perf)"
            );
            continue;
        };
        assert!(perf.status.success(), "perf stat: {perf:?}");
        let mut perf_rows: Vec<(String, u64)> = String::from_utf8_lossy(&perf.stderr)
            .lines()
            .filter_map(|line| {
                let fields: Vec<&str> = line.split(',').collect();
                Some((fields.get(2)?.to_string(), fields[0].parse().ok()?))
            })
            .filter(|(_, value)| *value > 0)
            .collect();
        perf_rows.sort();
        assert_eq!(rows, perf_rows, "tracekit (left) and perf stat (right)");
    }
}

/// `top` piped shows the CPU burner's hot function first within 3 s.
#[test]
fn everyday_top_piped_shows_hot_function() {
    require_root();
    let mut burner = spawn_fixture("tk_burner", &["5"]);
    std::thread::sleep(Duration::from_millis(200));
    let run = tracekit(["top", "-d", "3", "--sort", "comm,sym"], TIMEOUT);
    let _ = burner.kill();
    let _ = burner.wait();
    run.assert_code(0);
    let first = run
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .unwrap_or_else(|| panic!("no rows: {}", run.stdout));
    assert!(
        first.contains("tk_burner") && first.contains("[.] leaf"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.matches("tracekit top").count() >= 2,
        "snapshots: {}",
        run.stdout
    );
}

/// `top -e raw_syscalls:sys_enter --sort comm` shows the syscall fixture first.
#[test]
fn everyday_top_event_by_comm() {
    require_root();
    let mut syscalls = spawn_fixture("tk_syscalls", &["--seconds", "4"]);
    std::thread::sleep(Duration::from_millis(200));
    let run = tracekit(
        [
            "top",
            "-e",
            "raw_syscalls:sys_enter",
            "--sort",
            "comm",
            "-d",
            "2.5",
            "-i",
            "1",
        ],
        TIMEOUT,
    );
    let _ = syscalls.wait();
    run.assert_code(0);
    // Two full intervals, then the last half second when -d ends it.
    assert_eq!(
        run.stdout.matches("tracekit top").count(),
        3,
        "snapshots: {}",
        run.stdout
    );
    let first = run
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .unwrap_or_else(|| panic!("no rows: {}", run.stdout));
    assert!(first.trim_end().ends_with("tk_syscalls"), "{}", run.stdout);
}

/// Offcpu puts >= 90% of a 2 s sleep on stacks holding the sleeping
/// function, and the total within 10% of 2 s.
#[test]
fn everyday_offcpu_sleep_attributed() {
    require_root();
    let dir = scratch("everyday_offcpu_sleep_attributed");
    let out = dir.join("offcpu.folded");
    let funcs = fixture("tk_funcs");
    let run = tracekit(
        [
            "offcpu",
            "-o",
            out.to_str().unwrap(),
            "--",
            funcs.to_str().unwrap(),
            "sleep",
            "1",
            "2000",
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
    let mine: Vec<&(String, u64)> = folded
        .iter()
        .filter(|(p, _)| p.starts_with("tk_funcs;"))
        .collect();
    let total: u64 = mine.iter().map(|(_, us)| us).sum();
    let in_sleeper: u64 = mine
        .iter()
        .filter(|(p, _)| p.contains(";main;sleeper;"))
        .map(|(_, us)| us)
        .sum();
    assert!(
        in_sleeper as f64 >= 0.9 * total as f64,
        "{in_sleeper} of {total} us: {folded:#?}"
    );
    assert!(
        (in_sleeper as f64 - 2e6).abs() <= 0.1 * 2e6,
        "{in_sleeper} us in sleeper for a 2 s sleep"
    );
    // libc is mapped after the first switch (the dynamic linker maps it later): the frame
    // calling main resolves only if that later map was read too.
    assert!(
        mine.iter()
            .filter(|(p, _)| p.contains(";main;sleeper;"))
            .all(|(p, _)| !p.starts_with("tk_funcs;[unknown];main;")),
        "libc frame unresolved: {folded:#?}"
    );
}

/// SIGINT during offcpu -a still writes what was gathered.
#[test]
fn everyday_offcpu_sigint() {
    require_root();
    let mut child = spawn_tracekit(["offcpu", "-a", "--json"]);
    wait_for_stderr(&mut child, "Hit Ctrl-C to end.", TIMEOUT);
    std::thread::sleep(Duration::from_millis(500));
    kill(child.id(), libc::SIGINT);
    let run = wait_output(child, TIMEOUT);
    run.assert_code(0);
    let json: Value = serde_json::from_str(run.stdout.trim()).expect("JSON written on SIGINT");
    assert!(json["stacks"].is_array());
}

/// List.
#[test]
fn everyday_list() {
    require_root();
    let run = tracekit(["list", "block:*"], TIMEOUT);
    run.assert_code(0);
    assert!(
        run.stdout
            .lines()
            .any(|l| l.trim_start().starts_with("block:block_rq_issue ")),
        "{}",
        run.stdout
    );
    let run = tracekit(["list", "--fields", "block:block_rq_issue"], TIMEOUT);
    run.assert_code(0);
    assert!(
        run.stdout
            .lines()
            .any(|l| l.trim_start().starts_with("bytes ")),
        "{}",
        run.stdout
    );
    // perf list's class words list one class: only the 9 software events.
    let run = tracekit(["list", "sw"], TIMEOUT);
    run.assert_code(0);
    let software: Vec<&str> = run.stdout.lines().filter(|l| l.contains('[')).collect();
    assert_eq!(software.len(), 9, "{}", run.stdout);
    assert!(software.iter().all(|l| l.ends_with("[Software event]")));
    if !has_hardware_pmu() {
        let run = tracekit(["list", "hardware"], TIMEOUT);
        run.assert_code(0);
        assert!(
            run.stdout
                .lines()
                .any(|l| l.trim_start().starts_with("cycles ") && l.contains("not supported here")),
            "{}",
            run.stdout
        );
    }
}

/// Bad input, one line, exit 2.
#[test]
fn everyday_bad_input_one_line_errors() {
    require_root();
    let cases: [(&[&str], &str); 5] = [
        (
            &["stat", "-e", "cyclez", "-d", "1"],
            "did you mean `cycles`",
        ),
        (
            &["stat", "-e", "kprobe:vfs_read", "-d", "1"],
            "use funccount",
        ),
        (
            &["stat", "-e", "block:no_such_event", "-d", "1"],
            "unknown tracepoint",
        ),
        (
            &["top", "--sort", "cpu", "-d", "1"],
            "valid: sym, dso, comm, pid",
        ),
        (
            &[
                "top",
                "-e",
                "raw_syscalls:sys_enter",
                "--sort",
                "sym",
                "-d",
                "1",
            ],
            "grouped by comm or pid",
        ),
    ];
    for (args, needle) in cases {
        let run = tracekit(args, TIMEOUT);
        assert_eq!(run.code(), 2, "{args:?}: {run:#?}");
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {}", run.stderr);
        assert!(lines[0].contains(needle), "{args:?}: {}", run.stderr);
    }
}
