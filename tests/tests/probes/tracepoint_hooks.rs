//! Which hook a tracepoint plan attaches to: one that reads nothing of the record attaches as
//! the raw tracepoint (no record built), `raw_syscalls`' `id` and `ret` are read from the
//! raw arguments, and every such fast path gives the general path's answers, the general
//! path being the classic tracepoint (`TRACEKIT_CLASSIC_TRACEPOINTS=1`) with the
//! interpreter (`TRACEKIT_INTERPRETER=1`), on a loop of exactly N getppid() calls.

use std::{process::Command, time::Duration};

use serde_json::Value;
use tracekit_tests::{bucket, fixture, parse_json, require_root, run, scratch, tracekit_bin};

const TIMEOUT: Duration = Duration::from_secs(60);

/// getppid(2)'s number on this architecture (x86_64's 110, arm64's 173).
const GETPPID: libc::c_long = libc::SYS_getppid;

/// Runs `tracekit ARGS --json -v` on the fast path, on the classic tracepoint with the same
/// program choice (`TRACEKIT_CLASSIC_TRACEPOINTS=1`: for simple plans the classic
/// `engine_tp_simple_N`), and on the general path: the classic tracepoint and the interpreter
/// (`TRACEKIT_INTERPRETER=1` as well). Checks that `-v` names the hook each took (`fast` on
/// the fast path), that the classic run's groups are the general path's, and returns the
/// fast and the general outputs.
fn both_paths(args: &[&str], fast: &str) -> (Value, Value) {
    let mut out = Vec::new();
    for (classic, interpreter) in [(false, false), (true, false), (true, true)] {
        let mut command = Command::new(tracekit_bin());
        command.arg(args[0]).args(["--json", "-v"]).args(&args[1..]);
        for (set, name) in [
            (classic, "TRACEKIT_CLASSIC_TRACEPOINTS"),
            (interpreter, "TRACEKIT_INTERPRETER"),
        ] {
            if set {
                command.env(name, "1");
            } else {
                command.env_remove(name);
            }
        }
        let output = run(command, TIMEOUT);
        output.assert_code(0);
        let hook = if classic { "(classic)" } else { fast };
        assert!(
            output.stderr.contains(hook),
            "{args:?}: -v does not say `{hook}`:\n{}",
            output.stderr
        );
        let interpreted = !output.stderr.contains("its plan without the interpreter");
        assert!(
            !interpreter || interpreted,
            "{args:?}: TRACEKIT_INTERPRETER=1 did not keep the interpreter:\n{}",
            output.stderr
        );
        out.push(parse_json(&output.stdout));
    }
    let general = out.pop().unwrap();
    let classic = out.pop().unwrap();
    assert_eq!(
        groups(&classic),
        groups(&general),
        "{args:?}: the classic tracepoint's program and the interpreter disagree:\n\
         {classic:#}\n{general:#}"
    );
    (out.pop().unwrap(), general)
}

/// The groups of an engine command's JSON output as the paths must agree on them: pid and
/// tid keys (another process each run) are left out; in order of their counts.
fn groups(json: &Value) -> Vec<Value> {
    let mut groups: Vec<Value> = json["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| {
            let mut g = g.clone();
            if let Some(key) = g["key"].as_object_mut() {
                key.remove("pid");
                key.remove("tid");
            }
            g
        })
        .collect();
    groups.sort_by_key(|g| (g["count"].as_u64(), g.to_string()));
    groups
}

/// The count under comm `comm` of a `--by comm` output.
fn comm_count(json: &Value, comm: &str) -> u64 {
    json["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .filter(|g| g["key"]["comm"] == comm)
        .map(|g| g["count"].as_u64().unwrap())
        .sum()
}

/// Plans that read no field of the record (a count, `--by pid/tid/comm/cgroup`) attach as the
/// raw tracepoint and count what the classic tracepoint counts: the loop's N calls and the
/// few syscalls the process makes around them, the same number on both paths. Counts keyed
/// by the event, pid or tid are computed without the interpreter (`engine::simple`), whose
/// answers are the interpreter's.
#[test]
fn hooks_field_less_plans_count_as_the_classic_tracepoint() {
    require_root();
    let fixture = fixture("tk_syscalls");
    let fixture = fixture.to_str().unwrap();
    let n = 4321;
    let raw = "raw tracepoint sys_enter for raw_syscalls:sys_enter: the plan reads no field";
    for by in [None, Some("pid"), Some("tid"), Some("comm"), Some("cgroup")] {
        let mut args = vec!["count", "raw_syscalls:sys_enter"];
        if let Some(by) = by {
            args.extend(["--by", by]);
        }
        let count = n.to_string();
        args.extend(["--", fixture, &count]);
        let hook = match by {
            None | Some("pid") | Some("tid") => "its plan without the interpreter",
            _ => raw,
        };
        let (fast, classic) = both_paths(&args, hook);
        assert_eq!(
            groups(&fast),
            groups(&classic),
            "{args:?}: {fast:#}\n{classic:#}"
        );
        let total = tracekit_tests::total_count(&fast);
        assert!(
            (n..n + 200).contains(&total),
            "{args:?}: {total} syscalls for a loop of {n}: {fast:#}"
        );
        if by == Some("comm") {
            assert!(comm_count(&fast, "tk_syscalls") >= n, "{fast:#}");
        }
    }
}

/// `raw_syscalls`' `id` (enter and exit) and `ret` read from the raw arguments: a filter on
/// the syscall keeps exactly the loop's N calls, in the same histogram buckets as on the
/// classic tracepoint.
#[test]
fn hooks_raw_syscalls_fields_from_raw_arguments() {
    require_root();
    let fixture = fixture("tk_syscalls");
    let fixture = fixture.to_str().unwrap();
    let n = 3000;
    let count = n.to_string();
    let filter = format!("id == {GETPPID}");
    let enter = "raw tracepoint sys_enter for raw_syscalls:sys_enter: the fields the plan reads";
    let exit = "raw tracepoint sys_exit for raw_syscalls:sys_exit: the fields the plan reads";

    // hist of the id itself, filtered: all N in the 64..127 bucket (by the program without the
    // interpreter: an argument, one comparison).
    let args = [
        "hist",
        "raw_syscalls:sys_enter",
        "--value",
        "id",
        "--filter",
        &filter,
        "--",
        fixture,
        &count,
    ];
    let (fast, classic) = both_paths(&args, "its plan without the interpreter");
    assert_eq!(bucket(&fast, 64), n, "{fast:#}");
    assert_eq!(groups(&fast), groups(&classic), "{fast:#}\n{classic:#}");

    // count by comm, filtered: exactly N under the loop's comm.
    let args = [
        "count",
        "raw_syscalls:sys_enter",
        "--by",
        "comm",
        "--filter",
        &filter,
        "--",
        fixture,
        &count,
    ];
    let (fast, classic) = both_paths(&args, enter);
    assert_eq!(comm_count(&fast, "tk_syscalls"), n, "{fast:#}");
    assert_eq!(groups(&fast), groups(&classic), "{fast:#}\n{classic:#}");

    // At exit, id comes from regs->orig_ax and ret from the second argument (the parent's
    // pid, never 0 or negative for getppid).
    let filter = format!("id == {GETPPID} && ret > 0");
    let args = [
        "hist",
        "raw_syscalls:sys_exit",
        "--value",
        "id",
        "--filter",
        &filter,
        "--",
        fixture,
        &count,
    ];
    let (fast, classic) = both_paths(&args, exit);
    assert_eq!(bucket(&fast, 64), n, "{fast:#}");
    assert_eq!(groups(&fast), groups(&classic), "{fast:#}\n{classic:#}");
}

/// Events with no raw tracepoint of their own (`syscalls:*`) stay classic and say why.
#[test]
fn hooks_syscalls_events_stay_classic() {
    require_root();
    let fixture = fixture("tk_syscalls");
    let mut command = Command::new(tracekit_bin());
    command.args(["count", "syscalls:sys_enter_getppid", "--json", "-v", "--"]);
    command.arg(&fixture).arg("500");
    let output = run(command, TIMEOUT);
    output.assert_code(0);
    assert!(
        output.stderr.contains(
            "tracepoint syscalls:sys_enter_getppid (classic): syscalls events have no raw \
             tracepoint"
        ),
        "{}",
        output.stderr
    );
    assert_eq!(
        tracekit_tests::total_count(&parse_json(&output.stdout)),
        500
    );
}

/// `--by comm` keys by thread in the kernel (`operand::TASK`), alone or with other parts: a
/// program renamed half-way by `prctl(PR_SET_NAME)` is counted under both names, exactly:
/// 3000 getppid() calls as tk_syscalls, then 2000 as tk_renamed.
#[test]
fn hooks_by_comm_counts_a_rename_under_both_names() {
    require_root();
    let fixture = fixture("tk_syscalls");
    let fixture = fixture.to_str().unwrap();
    let filter = format!("id == {GETPPID}");
    for by in ["comm", "comm,pid", "comm,pid,tid"] {
        let mut command = Command::new(tracekit_bin());
        command.args(["count", "raw_syscalls:sys_enter", "--json", "--by", by]);
        command.args(["--filter", &filter, "--", fixture, "--rename", "3000"]);
        command.args(["tk_renamed", "2000"]);
        let output = run(command, TIMEOUT);
        output.assert_code(0);
        let json = parse_json(&output.stdout);
        assert_eq!(
            (
                comm_count(&json, "tk_syscalls"),
                comm_count(&json, "tk_renamed")
            ),
            (3000, 2000),
            "--by {by}: {json:#}"
        );
    }
}

/// What `-v` says when `--by comm` is keyed by thread in the kernel.
const BY_THREAD: &str = "comm keyed by thread id in the kernel";

/// Runs `tracekit ARGS --json -v` with `--by comm` keyed by thread and by the string
/// (`TRACEKIT_COMM_KEYS=string`, the general path); checks `-v` says which, and
/// returns both outputs.
fn both_comm_keys(args: &[&str]) -> (Value, Value) {
    let mut out = Vec::new();
    for string in [false, true] {
        let mut command = Command::new(tracekit_bin());
        command.arg(args[0]).args(["--json", "-v"]).args(&args[1..]);
        if string {
            command.env("TRACEKIT_COMM_KEYS", "string");
        } else {
            command.env_remove("TRACEKIT_COMM_KEYS");
        }
        let output = run(command, TIMEOUT);
        output.assert_code(0);
        assert_eq!(
            output.stderr.contains(BY_THREAD),
            !string,
            "{args:?} (string key: {string}): -v says:\n{}",
            output.stderr
        );
        out.push(parse_json(&output.stdout));
    }
    let string = out.pop().unwrap();
    (out.pop().unwrap(), string)
}

/// `--by comm` and `--by pid,comm`, counted and as a histogram, keyed by thread in the
/// kernel give the string key's groups and counts: exactly the loop's N getppid() calls
/// under the fixture's comm, in the same buckets.
#[test]
fn hooks_by_comm_by_thread_as_the_string_key() {
    require_root();
    let fixture = fixture("tk_syscalls");
    let fixture = fixture.to_str().unwrap();
    let n = 2345;
    let count = n.to_string();
    let filter = format!("id == {GETPPID}");
    for by in ["comm", "pid,comm"] {
        for command in ["count", "hist"] {
            let mut args = vec![command, "raw_syscalls:sys_enter", "--by", by];
            if command == "hist" {
                args.extend(["--value", "id"]);
            }
            args.extend(["--filter", &filter, "--", fixture, &count]);
            let (thread, string) = both_comm_keys(&args);
            assert_eq!(
                groups(&thread),
                groups(&string),
                "{args:?}: {thread:#}\n{string:#}"
            );
            assert_eq!(
                comm_count(&thread, "tk_syscalls"),
                n,
                "{args:?}: {thread:#}"
            );
            if command == "hist" {
                // The log2 bucket holding getppid's number (x86_64's 110: from 64).
                let from = 1 << GETPPID.ilog2();
                assert_eq!(bucket(&thread, from), n, "{args:?}: {thread:#}");
            }
        }
    }
}

/// Exact counts across the three ways a thread's comm changes (fixture tk_rename, exactly
/// N getppid() calls before and M after): `prctl(PR_SET_NAME)` in a process, in a thread
/// (the main thread's K calls stay under the first name), and an exec through a link named
/// otherwise. Keyed by thread, each name counts what the string key counts.
#[test]
fn hooks_by_comm_renames_threads_and_execs_exactly() {
    require_root();
    let fixture = fixture("tk_rename");
    let dir = scratch("hooks_by_comm_renames_threads_and_execs_exactly");
    let after = dir.join("tk_rename_after");
    std::os::unix::fs::symlink(&fixture, &after).expect("link to tk_rename");
    let fixture = fixture.to_str().unwrap();
    let after = after.to_str().unwrap();
    let filter = format!("id == {GETPPID}");
    // (tk_rename's arguments, the count expected under each of two comms)
    type Case<'a> = (&'a [&'a str], [(&'a str, u64); 2]);
    let cases: [Case; 3] = [
        (
            &["process", "3000", "2000"],
            [("tk_rename", 3000), ("tk_renamed", 2000)],
        ),
        (
            &["thread", "1500", "2500", "700"],
            [("tk_rename", 2200), ("tk_rn_thread", 2500)],
        ),
        (
            &["exec", "1200", "1800", after],
            [("tk_rename", 1200), ("tk_rename_after", 1800)],
        ),
    ];
    for (mode, expected) in cases {
        for by in ["comm", "pid,comm"] {
            let mut args = vec!["count", "raw_syscalls:sys_enter", "--by", by];
            args.extend(["--filter", &filter, "--", fixture]);
            args.extend(mode);
            let (thread, string) = both_comm_keys(&args);
            assert_eq!(
                groups(&thread),
                groups(&string),
                "{args:?}: {thread:#}\n{string:#}"
            );
            for (comm, n) in expected {
                assert_eq!(comm_count(&thread, comm), n, "{args:?}: {thread:#}");
            }
            assert_eq!(
                tracekit_tests::total_count(&thread),
                expected.iter().map(|(_, n)| n).sum::<u64>(),
                "{args:?}: {thread:#}"
            );
        }
    }
}

/// The group cells (`Plan::group_cache`): each group of a simple plan counts in a per-CPU
/// cell of its own, and in the hash when other groups hold both cells of its pair. 2,548
/// processes, each making exactly 37 getppid() calls, are more groups than this machine's
/// 2 CPUs have cells (1024 each): some count in cells, at least 500 in the hash, and every
/// one must come out at exactly 37, as without the cells (`TRACEKIT_GROUP_CACHE=0`).
#[test]
fn hooks_group_cache_counts_every_process_exactly() {
    require_root();
    let churn = fixture("tk_churn");
    let syscalls = fixture("tk_syscalls");
    let (runs, calls) = (2548, 37);
    for cache in [true, false] {
        let mut command = Command::new(tracekit_bin());
        command
            .args(["count", "syscalls:sys_enter_getppid", "--by", "pid"])
            .args(["--json", "-v", "--"])
            .arg(&churn)
            .args(["runs", &runs.to_string()])
            .arg(&syscalls)
            .arg(calls.to_string());
        if cache {
            command.env_remove("TRACEKIT_GROUP_CACHE");
        } else {
            command.env("TRACEKIT_GROUP_CACHE", "0");
        }
        // 2,548 execs: about 30 ms each under the VMs' emulation.
        let output = run(command, Duration::from_secs(400));
        output.assert_code(0);
        assert_eq!(
            output
                .stderr
                .contains("per-CPU cells before the group hash"),
            cache,
            "-v says whether the cache is used:\n{}",
            output.stderr
        );
        let json = parse_json(&output.stdout);
        let counts: Vec<u64> = json["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .map(|g| g["count"].as_u64().unwrap())
            .collect();
        assert_eq!(
            counts.len(),
            runs,
            "cache {cache}: one group per process: {json:#}"
        );
        assert!(
            counts.iter().all(|&c| c == calls),
            "cache {cache}: every process made exactly {calls} calls: {counts:?}"
        );
        assert_eq!(json["stats"]["map_full"].as_u64().unwrap_or(0), 0);
    }
}
