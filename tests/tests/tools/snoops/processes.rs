//! What processes do: execs (argv and parent), signals (target, sender, verdict, result),
//! forks, OOM kills, exits (code or signal), new threads, id changes, bash command lines
//! and name lookups.

use std::{
    collections::{BTreeMap, BTreeSet},
    time::Duration,
};

use serde_json::Value;
use tracekit_tests::{fixture, require_root, scratch, tracekit};

use super::{json_lines, snoop, with_bpftrace};

const TIMEOUT: Duration = Duration::from_secs(120);

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

/// The signals the fixture's `kills N` sends its child, as sigsnoop shows them: (TPID,
/// SIG, RESULT) for each event sent to the child.
fn signals_to_child(events: &[Value], child: u64) -> Vec<(u64, u64, i64)> {
    events
        .iter()
        .filter(|e| e["tpid"].as_u64() == Some(child))
        .map(|e| {
            assert_eq!(e["comm"], "tk_snoops", "sender of {e}");
            assert_ne!(e["pid"].as_u64(), Some(child), "the child sent {e}");
            (
                child,
                e["sig"].as_u64().unwrap(),
                e["result"].as_i64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn sigsnoop_shows_each_signal_with_its_sender_target_and_verdict() {
    require_root();
    let (truth, events) = snoop("sigsnoop", "sigsnoop", &[], &["kills", "200"]);
    // The child ignores every signal it can: the kernel drops each of the 200 as
    // TRACE_SIGNAL_IGNORED (1); the final SIGKILL is delivered (0).
    let sent: Vec<(u64, u64)> = truth
        .lines()
        .map(|line| {
            let parts: Vec<&str> = line.split(' ').collect();
            assert_eq!(parts[3], "0", "kill(2) failed: {line}");
            (parts[1].parse().unwrap(), parts[2].parse().unwrap())
        })
        .collect();
    assert_eq!(sent.len(), 201);
    let child = sent[0].0;
    let expected: Vec<(u64, u64, i64)> = sent
        .iter()
        .map(|&(tpid, sig)| (tpid, sig, if sig == 9 { 0 } else { 1 }))
        .collect();
    assert_eq!(signals_to_child(&events, child), expected);
    // The child's exit sends its parent SIGCHLD, from the child.
    assert!(
        events
            .iter()
            .any(|e| e["pid"].as_u64() == Some(child) && e["sig"] == 17),
        "no SIGCHLD from the child"
    );

    // -x: the 200 ignored ones, not the delivered SIGKILL; -s: one signal, by name.
    let (truth, events) = snoop("sigsnoop_x", "sigsnoop", &["-x"], &["kills", "200"]);
    let child: u64 = truth.split(' ').nth(1).unwrap().parse().unwrap();
    let ignored = signals_to_child(&events, child);
    assert_eq!(ignored.len(), 200);
    assert!(
        ignored
            .iter()
            .all(|&(_, sig, result)| sig != 9 && result == 1)
    );
    let (truth, events) = snoop(
        "sigsnoop_s",
        "sigsnoop",
        &["-k", "-s", "SIGKILL", "--signal-name"],
        &["kills", "200"],
    );
    let child: u64 = truth.split(' ').nth(1).unwrap().parse().unwrap();
    let killed: Vec<&Value> = events
        .iter()
        .filter(|e| e["tpid"].as_u64() == Some(child))
        .collect();
    assert_eq!(killed.len(), 1, "{events:?}");
    assert_eq!(killed[0]["sig"], "SIGKILL");
    assert_eq!(killed[0]["result"], 0);
    assert!(events.iter().all(|e| e["sig"] == "SIGKILL"), "{events:?}");
}

/// `pidpersec` counts the fixture's 50 forks (its exec'd children), exactly.
#[test]
fn pidpersec_counts_each_fork() {
    require_root();
    let program = fixture("tk_snoops");
    let run = tracekit(
        [
            "pidpersec",
            "--json",
            "--",
            program.to_str().unwrap(),
            "execs",
            "50",
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let json: Value = run
        .stdout
        .lines()
        .find(|line| line.starts_with('{'))
        .map(|line| serde_json::from_str(line).unwrap())
        .expect("a JSON report");
    assert_eq!(json["groups"][0]["count"], 50, "{json}");
}

/// An OOM kill forced in a memory-limited cgroup (v1 or v2, whichever holds the memory
/// controller) is shown once, naming the victim.
#[test]
fn oomkill_shows_a_kill_forced_in_a_memory_limited_cgroup() {
    require_root();
    let name = format!("tk-oom-{}", std::process::id());
    let (dir, limit_file) =
        if std::path::Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists() {
            (
                std::path::PathBuf::from("/sys/fs/cgroup/memory").join(&name),
                "memory.limit_in_bytes",
            )
        } else if std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
            (
                std::path::PathBuf::from("/sys/fs/cgroup").join(&name),
                "memory.max",
            )
        } else {
            println!("skipped: no memory cgroup controller mounted");
            return;
        };
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join(limit_file), "33554432").unwrap();
    let _ = std::fs::write(dir.join("memory.swap.max"), "0");
    let _ = std::fs::write(dir.join("memory.memsw.limit_in_bytes"), "33554432");
    let out = scratch("oomkill").join("oom.json");
    let touch = fixture("tk_funcs");
    let script = format!(
        "echo $$ > {}/cgroup.procs && exec {} touch 100000",
        dir.display(),
        touch.display()
    );
    let run = tracekit(
        [
            "oomkill",
            "--json",
            "-o",
            out.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            &script,
        ],
        TIMEOUT,
    );
    let _ = std::fs::remove_dir(&dir);
    run.assert_code(0);
    let (text, events) = json_lines(&out);
    assert_eq!(events.len(), 1, "{text}");
    assert_eq!(events[0]["tcomm"], "tk_funcs", "{text}");
    assert_eq!(events[0]["tpid"], events[0]["pid"], "{text}");
    // Killed at its 32 MiB limit: about 32 MiB of anonymous memory resident.
    let anon_kb = events[0]["anon_kb"].as_u64().unwrap();
    assert!((28_000..=33_000).contains(&anon_kb), "{text}");
}

#[test]
fn execsnoop_sees_what_bpftraces_execsnoop_sees() {
    require_root();
    let workload = ["execs", "200"];
    let (_, theirs, ours) = with_bpftrace("execsnoop_bt", "execsnoop.bt", "execsnoop", &workload);
    // `TIME(ms) PID ARGS`
    let theirs: BTreeSet<String> = theirs
        .lines()
        .filter_map(|line| {
            let parts: Vec<&str> = line.split_whitespace().collect();
            match parts[..] {
                [_, _, "tksleep", _, _] => Some(parts[2..].join(" ")),
                _ => None,
            }
        })
        .collect();
    let ours: BTreeSet<String> = ours
        .iter()
        .map(|e| e["args"].as_str().unwrap().to_string())
        .filter(|args| args.starts_with("tksleep "))
        .collect();
    // bpftrace's execsnoop.bt prints each exec in two perf-buffer events (printf, then
    // join) that other CPUs' execs can split, and loses some ("Lost 1 events") when the
    // machine execs a lot: every exec it printed whole is one of ours, and ours are all.
    assert_eq!(ours.len(), 200);
    assert!(theirs.is_subset(&ours), "{:?}", theirs.difference(&ours));
    println!(
        "bpftrace's execsnoop.bt printed {} of the 200 whole",
        theirs.len()
    );
}

#[test]
fn killsnoop_sees_what_bpftraces_killsnoop_sees() {
    require_root();
    let workload = ["kills", "200"];
    let (_, theirs, ours) = with_bpftrace("killsnoop_bt", "killsnoop.bt", "killsnoop", &workload);
    // `TIME PID COMM SIG TPID RESULT`
    let theirs: Vec<(u64, i64)> = theirs
        .lines()
        .filter_map(|line| {
            let parts: Vec<&str> = line.split_whitespace().collect();
            match parts[..] {
                [_, _, "tk_snoops", sig, _, result] => {
                    Some((sig.parse().ok()?, result.parse().ok()?))
                }
                _ => None,
            }
        })
        .collect();
    let ours: Vec<(u64, i64)> = ours
        .iter()
        .filter(|e| e["comm"] == "tk_snoops")
        .map(|e| (e["sig"].as_u64().unwrap(), e["result"].as_i64().unwrap()))
        .collect();
    assert_eq!(theirs.len(), 201);
    assert_eq!(ours, theirs);
}

/// The command lines an interactive bash (on a pseudo-terminal from `script`) reads, each
/// once, as bpftrace's bashreadline.bt prints them.
#[test]
fn bashreadline_shows_each_command_line() {
    require_root();
    if !std::path::Path::new("/usr/bin/script").is_file() {
        println!("skipped: no /usr/bin/script (util-linux) to give bash a terminal");
        return;
    }
    let lines = ["echo tk-one", "echo tk-two", "true tk-three", "exit"];
    let out = scratch("bashreadline").join("lines.json");
    let mut command = std::process::Command::new(tracekit_tests::tracekit_bin());
    command.args([
        "bashreadline",
        "--json",
        "-o",
        out.to_str().unwrap(),
        "--",
        "script",
        "-qfec",
        "bash --norc --noprofile -i",
        "/dev/null",
    ]);
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().unwrap();
        for line in lines {
            writeln!(stdin, "{line}").unwrap();
        }
    }
    let run = tracekit_tests::wait_output(child, TIMEOUT);
    run.assert_code(0);
    let text = std::fs::read_to_string(&out).unwrap();
    let seen: Vec<String> = text
        .lines()
        .map(|line| {
            let event: Value = serde_json::from_str(line).unwrap();
            event["command"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(seen, lines, "{}", run.stderr);
}

/// 50 children of the fixture ending five ways (exit 0, exit N, SIGTERM, exit after a
/// second thread, SIGKILL): one line each with its parent and exit code or signal, as
/// `waitpid` saw it; the first child slept 300 ms, so its age is at least that. Threads'
/// exits are shown only with `--threaded`, and `-x` keeps only the failures.
#[test]
fn exitsnoop_shows_each_exit_with_its_code_or_signal() {
    require_root();
    let expected = |truth: &str| -> (u64, BTreeMap<u64, String>, BTreeMap<u64, u64>) {
        let mut parent = 0;
        let mut exits = BTreeMap::new();
        let mut threads = BTreeMap::new();
        for line in truth.lines() {
            let parts: Vec<&str> = line.split(' ').collect();
            let n = |i: usize| -> u64 { parts[i].parse().unwrap() };
            match parts[0] {
                "parent" => parent = n(1),
                "exit" if n(2) == 0 => drop(exits.insert(n(1), "0".to_string())),
                "exit" => drop(exits.insert(n(1), format!("code {}", n(2)))),
                "signal" => {
                    let name = match n(2) {
                        9 => "SIGKILL",
                        15 => "SIGTERM",
                        other => panic!("signal {other}"),
                    };
                    exits.insert(n(1), format!("signal {} ({name})", n(2)));
                }
                "thread" => drop(threads.insert(n(1), n(2))),
                _ => panic!("truth line {line}"),
            }
        }
        (parent, exits, threads)
    };
    let (truth, events) = snoop("exitsnoop", "exitsnoop", &[], &["exits", "50"]);
    let (parent, exits, threads) = expected(&truth);
    assert_eq!((exits.len(), threads.len()), (50, 10));
    let children: Vec<&Value> = events.iter().filter(|e| e["ppid"] == parent).collect();
    let seen: BTreeMap<u64, String> = children
        .iter()
        .map(|e| {
            assert_eq!(e["pcomm"], "tk_snoops", "{e}");
            assert_eq!(e["tid"], e["pid"], "{e}");
            (
                e["pid"].as_u64().unwrap(),
                e["exit_code"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(children.len(), 50, "one line per child");
    assert_eq!(seen, exits);
    let first = exits.keys().next().unwrap();
    let slept = children.iter().find(|e| e["pid"] == *first).unwrap();
    assert!(slept["age_s"].as_f64().unwrap() >= 0.3, "{slept}");

    // --threaded: each second thread's exit too (code 0: it returned); -x: only the
    // exits that were not 0, and no thread's.
    let (truth, events) = snoop(
        "exitsnoop_threaded",
        "exitsnoop",
        &["--threaded", "-x"],
        &["exits", "50"],
    );
    let (parent, exits, _) = expected(&truth);
    let failed: BTreeMap<u64, String> = exits.into_iter().filter(|(_, e)| e != "0").collect();
    assert_eq!(failed.len(), 40);
    let seen: BTreeMap<u64, String> = events
        .iter()
        .filter(|e| e["ppid"] == parent)
        .map(|e| {
            (
                e["tid"].as_u64().unwrap(),
                e["exit_code"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(seen, failed);
    let (truth, events) = snoop(
        "exitsnoop_threads",
        "exitsnoop",
        &["--threaded"],
        &["exits", "50"],
    );
    let (parent, _, threads) = expected(&truth);
    let thread_exits: BTreeMap<u64, u64> = events
        .iter()
        .filter(|e| e["ppid"] == parent && e["tid"] != e["pid"])
        .map(|e| {
            assert_eq!(e["exit_code"], "0", "{e}");
            (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(thread_exits, threads);
}

/// 200 threads the fixture creates, each shown once with its id and its creator; the
/// fixture's children made by fork (none here) and other processes' threads are not its.
#[test]
fn threadsnoop_shows_each_new_thread() {
    require_root();
    let (truth, events) = snoop("threadsnoop", "threadsnoop", &[], &["threads", "200"]);
    let parent: u64 = truth
        .lines()
        .find_map(|line| line.strip_prefix("parent "))
        .expect("the fixture's pid")
        .parse()
        .unwrap();
    let expected: BTreeSet<u64> = truth
        .lines()
        .filter_map(|line| line.strip_prefix("thread "))
        .map(|tid| tid.parse().unwrap())
        .collect();
    assert_eq!(expected.len(), 200);
    let mine: Vec<&Value> = events.iter().filter(|e| e["pid"] == parent).collect();
    assert_eq!(mine.len(), 200, "one line per thread");
    let seen: BTreeSet<u64> = mine
        .iter()
        .map(|e| {
            assert_eq!(e["comm"], "tk_snoops", "{e}");
            e["tid"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(seen, expected);
}

/// 50 rounds of setresuid, setreuid, setfsuid and setuid, then a drop to uid 1000 and a
/// setuid(0) that fails with EPERM: each call once, in order, with its return value and the
/// real, effective, saved and file-system uids it left (the fixture reads them from
/// /proc/self/status); `-x` keeps only the failure.
#[test]
fn setuids_shows_each_call_with_the_ids_it_leaves() {
    require_root();
    let (truth, events) = snoop("setuids", "setuids", &[], &["setuids", "50"]);
    let expected: Vec<String> = truth.lines().map(str::to_string).collect();
    assert_eq!(expected.len(), 202);
    let line = |e: &Value| -> String {
        format!(
            "{} {} {} {} {} {}",
            e["syscall"].as_str().unwrap(),
            e["ret"],
            e["uid"],
            e["euid"],
            e["suid"],
            e["fsuid"]
        )
    };
    let seen: Vec<String> = events
        .iter()
        .filter(|e| e["comm"] == "tk_snoops")
        .map(line)
        .collect();
    assert_eq!(seen, expected);
    let (truth, events) = snoop("setuids_x", "setuids", &["-x"], &["setuids", "50"]);
    let failed: Vec<String> = events
        .iter()
        .filter(|e| e["comm"] == "tk_snoops")
        .map(line)
        .collect();
    assert_eq!(failed, [truth.lines().last().unwrap().to_string()]);
    assert_eq!(failed[0], "setuid -1 1000 1000 1000 1000");
}

/// gethostlatency shows each of tk_funcs' 200 getaddrinfo() calls (100 of "localhost", 100
/// of "127.0.0.1", in that order) with its host name, saved at the entry, and a latency
/// taken at the return of the same call.
#[test]
fn gethostlatency_shows_each_lookup() {
    require_root();
    let out = scratch("gethostlatency").join("lookups.json");
    let run = tracekit(
        [
            "gethostlatency",
            "--json",
            "-o",
            out.to_str().unwrap(),
            "--",
            fixture("tk_funcs").to_str().unwrap(),
            "resolve",
            "100",
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let text = std::fs::read_to_string(&out).unwrap();
    let events: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let hosts: Vec<&str> = events.iter().map(|e| e["host"].as_str().unwrap()).collect();
    let expected: Vec<&str> = ["localhost"; 100]
        .into_iter()
        .chain(["127.0.0.1"; 100])
        .collect();
    assert_eq!(hosts, expected, "{}", run.stderr);
    for event in &events {
        let ns = event["lat_ns"].as_u64().unwrap();
        assert!(ns > 0 && ns < 10_000_000_000, "{event}");
        assert_eq!(event["comm"], "tk_funcs", "{event}");
    }
    assert!(run.stderr.contains("Lost: nothing."), "{}", run.stderr);
}

/// The fixture's `long-execs` truth: each child's pid and its arguments.
fn long_exec_truth(truth: &str) -> BTreeMap<u64, Vec<String>> {
    truth
        .lines()
        .filter_map(|line| line.strip_prefix("exec "))
        .map(|line| {
            let mut parts = line.split(' ');
            let pid = parts.next().unwrap().parse().unwrap();
            (pid, parts.map(str::to_string).collect())
        })
        .collect()
}

/// 30 arguments of 200 bytes: all of them whole with `--max-args 30 --max-string 200`; by
/// default the first 20, each cut at 128 bytes with `...`, and a last `...` for the rest.
#[test]
fn execsnoop_shows_every_argument_up_to_max_args() {
    require_root();
    let workload = ["long-execs", "20", "30", "200"];
    let (truth, events) = snoop(
        "execsnoop_long",
        "execsnoop",
        &["--max-args", "30", "--max-string", "200"],
        &workload,
    );
    let truth = long_exec_truth(&truth);
    assert_eq!(truth.len(), 20);
    for (pid, args) in &truth {
        let event = events
            .iter()
            .find(|e| e["pid"].as_u64() == Some(*pid))
            .unwrap_or_else(|| panic!("no event of {pid}"));
        assert_eq!(event["args"].as_str().unwrap(), args.join(" "), "{pid}");
    }
    let (truth, events) = snoop("execsnoop_long_default", "execsnoop", &[], &workload);
    for (pid, args) in long_exec_truth(&truth) {
        let event = events
            .iter()
            .find(|e| e["pid"].as_u64() == Some(pid))
            .unwrap_or_else(|| panic!("no event of {pid}"));
        let mut shown: Vec<String> = args[..20]
            .iter()
            .map(|arg| format!("{}...", &arg[..128]))
            .collect();
        shown.push("...".into());
        assert_eq!(event["args"].as_str().unwrap(), shown.join(" "), "{pid}");
    }
}

/// execsnoop.bt (bpftrace's join(): 16 arguments at most) and execsnoop agree on execs
/// of 10 arguments of 100 bytes, whole in both.
#[test]
fn execsnoop_long_arguments_agree_with_bpftrace() {
    require_root();
    let workload = ["long-execs", "50", "10", "100"];
    let (truth, theirs, ours) =
        with_bpftrace("execsnoop_long_bt", "execsnoop.bt", "execsnoop", &workload);
    let truth = long_exec_truth(&truth);
    let theirs: BTreeSet<String> = theirs
        .lines()
        .filter_map(|line| {
            let parts: Vec<&str> = line.split_whitespace().collect();
            (parts.len() == 12 && parts[2].len() == 100).then(|| parts[2..].join(" "))
        })
        .collect();
    let ours: BTreeSet<String> = ours
        .iter()
        .filter(|e| {
            e["pid"]
                .as_u64()
                .is_some_and(|pid| truth.contains_key(&pid))
        })
        .map(|e| e["args"].as_str().unwrap().to_string())
        .collect();
    let expected: BTreeSet<String> = truth.values().map(|args| args.join(" ")).collect();
    assert_eq!(ours, expected);
    assert!(!theirs.is_empty(), "bpftrace printed none whole");
    assert!(theirs.is_subset(&ours), "{:?}", theirs.difference(&ours));
}
