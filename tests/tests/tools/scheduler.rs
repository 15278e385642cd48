//! The scheduler tools, against fixtures of known truth: `offwaketime`, `wakeuptime`,
//! `runqlen`, `cpufreq`, and the engine's last value per CPU.

use std::{
    io::{BufRead, BufReader, Write},
    process::{Command, Stdio},
    time::Duration,
};

use tracekit_tests::*;

const TIMEOUT: Duration = Duration::from_secs(120);
/// The timeout of the `runqlen` and `wakeuptime` runs.
const SHORT_TIMEOUT: Duration = Duration::from_secs(60);

/// offwaketime: the thread tk_blocked blocks in read() on a pipe 100 times, from
/// blocked_outer() -> blocked_read(), each time woken by tk_waker's write() from
/// waker_outer() -> waker_middle() -> waker_write(). The folded pair (blocked stack, `--`,
/// the waker's stack leaf first, the waker's name) carries the blocked thread's own
/// measurement of its reads, within 10%.
#[test]
fn offwaketime_joins_the_blocked_stack_with_the_wakers() {
    require_root();
    let mut fixture = Command::new(fixture("tk_offwake"))
        .args(["100", "5000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawning tk_offwake");
    let mut lines = BufReader::new(fixture.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "ready");
    let pid = fixture.id().to_string();
    let mut child = spawn_tracekit(["offwaketime", "-f", "-p", &pid]);
    wait_for_stderr(&mut child, "Hit Ctrl-C to end.", TIMEOUT);
    let mut stdin = fixture.stdin.take().unwrap();
    stdin.write_all(b"go\n").unwrap();
    let result = lines.next().unwrap().unwrap();
    kill(child.id(), libc::SIGINT);
    let run = wait_output(child, TIMEOUT);
    drop(stdin);
    let _ = fixture.wait();
    run.assert_code(0);
    let measured_us = result
        .split_whitespace()
        .skip_while(|w| *w != "blocked_ns")
        .nth(1)
        .and_then(|ns| ns.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("the fixture's blocked_ns in {result:?}"))
        / 1000;
    let stacks = parse_folded(&run.stdout);
    let pairs: Vec<&(String, u64)> = stacks
        .iter()
        .filter(|(stack, _)| {
            let Some((blocked, waker)) = stack.split_once(";--;") else {
                return false;
            };
            blocked.starts_with("tk_blocked;")
                && chain_in_order(blocked, &["blocked_outer", "blocked_read", "schedule_[k]"])
                && waker.ends_with(";tk_waker")
                && chain_in_order(
                    waker,
                    &[
                        "try_to_wake_up_[k]",
                        "vfs_write_[k]",
                        "waker_write",
                        "waker_middle",
                        "waker_outer",
                    ],
                )
        })
        .collect();
    let total: u64 = pairs.iter().map(|(_, us)| us).sum();
    assert!(
        total.abs_diff(measured_us) * 10 <= measured_us,
        "the pipe pair holds {total} us, the blocked thread measured {measured_us} us\n{}",
        run.stdout
    );
}

/// Each group of an engine command's `--json` by the values of key column `column`.
fn counts_by(json: &serde_json::Value, column: &str) -> std::collections::BTreeMap<String, u64> {
    let mut counts = std::collections::BTreeMap::new();
    for group in json["groups"].as_array().expect("groups") {
        let key = match &group["key"][column] {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        *counts.entry(key).or_default() += group["count"].as_u64().unwrap();
    }
    counts
}

/// The engine's last value per key (`--last`, what cpufreq needs): the fixture, pinned to one
/// CPU, calls prctl(1000), then getppid() 500 times, then prctl(3000) and getppid() 700
/// times. Each getppid reads the option of the last prctl on its CPU without using it up:
/// exactly 500 at 1000 and 700 at 3000, in `count --by` and in `hist --value`.
#[test]
fn last_value_per_cpu_is_read_by_every_event() {
    require_root();
    let fixture = fixture("tk_syscalls");
    let fixture = fixture.to_str().unwrap();
    let workload = [fixture, "--cell", "1000", "500", "3000", "700"];
    let last = ["--last", "syscalls:sys_enter_prctl", "--last-key", "cpu"];
    let run = tracekit(
        [
            "count",
            "syscalls:sys_enter_getppid",
            "--by",
            "start.option",
            "--json",
        ]
        .iter()
        .chain(&last)
        .chain(&["--"])
        .chain(&workload),
        TIMEOUT,
    );
    run.assert_code(0);
    let json = parse_json(&run.stdout);
    let counts = counts_by(&json, "start.option");
    assert_eq!(
        counts,
        [("1000".to_string(), 500), ("3000".to_string(), 700)].into(),
        "{json:#}"
    );
    let run = tracekit(
        [
            "hist",
            "syscalls:sys_enter_getppid",
            "--value",
            "start.option",
            "--json",
        ]
        .iter()
        .chain(&last)
        .chain(&["--"])
        .chain(&workload),
        TIMEOUT,
    );
    run.assert_code(0);
    let json = parse_json(&run.stdout);
    // log2 buckets: 1000 in [512, 1024), 3000 in [2048, 4096).
    assert_eq!(
        (bucket(&json, 512), bucket(&json, 2048)),
        (500, 700),
        "{json:#}"
    );
    assert_eq!(total_count(&json), 1200, "{json:#}");
}

/// cpufreq without a cpufreq driver (this host, the VMs): one line naming what is missing,
/// exit 1, before anything is attached. With a driver, it samples: the histogram is in MHz
/// and exits 0.
#[test]
fn cpufreq_refuses_without_a_cpufreq_driver() {
    require_root();
    let run = tracekit(["cpufreq", "-d", "1"], TIMEOUT);
    let driver = std::fs::read_dir("/sys/devices/system/cpu")
        .unwrap()
        .flatten()
        .any(|cpu| cpu.path().join("cpufreq").is_dir());
    if driver {
        run.assert_code(0);
        assert!(run.stdout.contains("MHz"), "{}", run.stdout);
        return;
    }
    run.assert_code(1);
    let stderr = run.stderr.trim();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(
            "cpufreq: no cpufreq driver: /sys/devices/system/cpu/cpu*/cpufreq does not exist"
        ) && stderr.contains("power:cpu_frequency never fires"),
        "{stderr}"
    );
    assert_eq!(run.stdout, "");
}

/// runqlen samples the run queue of each CPU: 4 processes that stay runnable (sched_yield
/// in a loop), pinned to one CPU, queue 3 behind the one running, so that CPU's histogram
/// has its mode at 3 and no other CPU sees the command's processes (but for `taskset`
/// before it pins itself).
#[test]
fn runqlen_counts_the_tasks_pinned_to_one_cpu() {
    require_root();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpu = if cpus > 1 { 1 } else { 0 };
    let program = fixture("tk_yield");
    let run = tracekit(
        [
            "runqlen",
            "--cpus",
            "--json",
            "--",
            "taskset",
            "-c",
            &cpu.to_string(),
            program.to_str().unwrap(),
            "4",
            "2",
        ],
        SHORT_TIMEOUT,
    );
    run.assert_code(0);
    let json = parse_json(&run.stdout);
    let groups = json["groups"].as_array().expect("groups");
    let total = |group: &serde_json::Value| -> u64 {
        group["hist"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["count"].as_u64().unwrap())
            .sum()
    };
    let (pinned, others): (Vec<_>, Vec<_>) = groups
        .iter()
        .partition(|group| group["key"]["cpu"].as_u64() == Some(cpu as u64));
    assert_eq!(pinned.len(), 1, "the pinned CPU: {}", run.stdout);
    // `taskset` runs for a moment before it pins itself: a sample may catch it on another
    // CPU (2 runs in 9 had one sample there of ~100).
    let elsewhere: u64 = others.iter().map(|group| total(group)).sum();
    assert!(elsewhere <= 2, "samples on other CPUs: {}", run.stdout);
    let hist = pinned[0]["hist"].as_array().unwrap();
    let mode = hist
        .iter()
        .max_by_key(|b| b["count"].as_u64().unwrap())
        .expect("samples");
    assert_eq!(mode["low"].as_i64(), Some(3), "{}", run.stdout);
    // 2 s at 99 Hz: the command's processes hold the CPU most of the time.
    assert!(mode["count"].as_u64().unwrap() >= 50, "{}", run.stdout);
}

/// wakeuptime: a thread blocked in read() on a pipe 100 times, woken each time by another
/// thread's write: its blocked time shows under the writer's kernel stack through the
/// pipe's write, within 10% of the time the reader measured around its reads.
#[test]
fn wakeuptime_shows_the_pipe_writer_waking_the_reader() {
    require_root();
    let dir = scratch("wakeuptime_shows_the_pipe_writer_waking_the_reader");
    let folded = dir.join("wake.folded");
    let program = fixture("tk_wake");
    let run = tracekit(
        [
            "wakeuptime",
            "-o",
            folded.to_str().unwrap(),
            "--",
            program.to_str().unwrap(),
            "100",
            "5000",
        ],
        SHORT_TIMEOUT,
    );
    run.assert_code(0);
    let measured_us = run
        .stdout
        .split_whitespace()
        .skip_while(|w| *w != "blocked_ns")
        .nth(1)
        .and_then(|ns| ns.parse::<u64>().ok())
        .expect("the fixture's blocked_ns")
        / 1000;
    let text = std::fs::read_to_string(&folded).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let stacks = parse_folded(&text);
    let by_writer: u64 = stacks
        .iter()
        .filter(|(stack, _)| stack.starts_with("tk_reader;") && stack.contains("pipe_write"))
        .map(|(_, us)| us)
        .sum();
    let diff = by_writer.abs_diff(measured_us);
    assert!(
        diff * 10 <= measured_us,
        "pipe writer's stacks {by_writer} us, the reader measured {measured_us} us\n{text}"
    );
}
