//! The process and file snoop tools (`execsnoop`, `opensnoop`, `killsnoop`) on a fixture
//! whose every call is known (`tests/fixtures/tk_snoops.c` prints its truth), each event
//! matched exactly: path, fd, errno, argv, parent, signal, target, result.

use std::{collections::BTreeSet, time::Duration};

use serde_json::Value;
use tracekit_tests::{fixture, require_root, scratch, tracekit};

const TIMEOUT: Duration = Duration::from_secs(120);

/// Runs `tracekit TOOL ARGS --json -o FILE -- tk_snoops WORKLOAD`: the fixture's truth
/// lines (stdout) and the tool's JSON objects.
fn snoop(test: &str, tool: &str, args: &[&str], workload: &[&str]) -> (String, Vec<Value>) {
    let dir = scratch(test);
    let out = dir.join("events.json");
    let out_text = out.to_str().unwrap().to_string();
    let program = fixture("tk_snoops");
    let mut all = vec![tool, "--json", "-o", out_text.as_str()];
    all.extend(args);
    all.push("--");
    all.push(program.to_str().unwrap());
    all.extend(workload);
    let run = tracekit(&all, TIMEOUT);
    run.assert_code(0);
    assert!(
        run.stderr.contains("Lost: nothing."),
        "events were lost: {}",
        run.stderr
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let events = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (run.stdout.clone(), events)
}

#[test]
fn opensnoop_shows_each_open_with_its_fd_and_each_failure_with_its_errno() {
    require_root();
    // Short, so every path fits the 32 bytes the engine reads.
    let dir = format!("/tmp/tkos{}", std::process::id());
    std::fs::create_dir_all(&dir).unwrap();
    let (truth, events) = snoop(
        "opensnoop",
        "opensnoop",
        &[],
        &["opens", &dir, "300", "100"],
    );
    let expected: BTreeSet<(String, i64, i64)> = truth
        .lines()
        .map(|line| {
            let parts: Vec<&str> = line.split(' ').collect();
            match parts[..] {
                ["open", path, fd] => (path.to_string(), fd.parse().unwrap(), 0),
                ["fail", path, errno] => (path.to_string(), -1, errno.parse().unwrap()),
                _ => panic!("truth line {line}"),
            }
        })
        .collect();
    assert_eq!(expected.len(), 400);
    let seen: BTreeSet<(String, i64, i64)> = events
        .iter()
        .filter(|e| e["path"].as_str().unwrap().starts_with(&dir))
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_string(),
                e["fd"].as_i64().unwrap(),
                e["err"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(seen, expected);
    // -x: only the 100 failures (the loader's opens of libraries succeed).
    let (_, failed) = snoop(
        "opensnoop_x",
        "opensnoop",
        &["-x"],
        &["opens", &dir, "300", "100"],
    );
    let failed: BTreeSet<(String, i64, i64)> = failed
        .iter()
        .filter(|e| e["path"].as_str().unwrap().starts_with(&dir))
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_string(),
                e["fd"].as_i64().unwrap(),
                e["err"].as_i64().unwrap(),
            )
        })
        .collect();
    let expected_failed: BTreeSet<_> = expected.into_iter().filter(|e| e.1 == -1).collect();
    assert_eq!(expected_failed.len(), 100);
    assert_eq!(failed, expected_failed);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn execsnoop_shows_each_exec_with_its_argv_and_parent() {
    require_root();
    let (truth, events) = snoop("execsnoop", "execsnoop", &[], &["execs", "500"]);
    let fixture_pid: u64 = truth
        .lines()
        .find_map(|line| line.strip_prefix("parent "))
        .expect("the fixture's pid")
        .parse()
        .unwrap();
    let expected: BTreeSet<(u64, String)> = truth
        .lines()
        .filter(|line| line.starts_with("exec "))
        .map(|line| {
            let (pid, args) = line.strip_prefix("exec ").unwrap().split_once(' ').unwrap();
            (pid.parse().unwrap(), args.to_string())
        })
        .collect();
    assert_eq!(expected.len(), 500);
    let seen: BTreeSet<(u64, String)> = events
        .iter()
        .filter(|e| e["args"].as_str().unwrap().starts_with("tksleep "))
        .map(|e| {
            assert_eq!(e["pcomm"], "sleep", "{e}");
            assert_eq!(e["ppid"].as_u64(), Some(fixture_pid), "{e}");
            (
                e["pid"].as_u64().unwrap(),
                e["args"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(seen, expected);
}

#[test]
fn killsnoop_shows_each_signal_with_its_target_and_result() {
    require_root();
    let (truth, events) = snoop("killsnoop", "killsnoop", &[], &["kills", "200"]);
    let expected: Vec<(u64, u64, i64)> = truth
        .lines()
        .map(|line| {
            let parts: Vec<&str> = line.split(' ').collect();
            (
                parts[1].parse().unwrap(),
                parts[2].parse().unwrap(),
                parts[3].parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(expected.len(), 201);
    let seen: Vec<(u64, u64, i64)> = events
        .iter()
        .filter(|e| e["comm"] == "tk_snoops")
        .map(|e| {
            (
                e["tpid"].as_u64().unwrap(),
                e["sig"].as_u64().unwrap(),
                e["result"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(seen, expected);
}
