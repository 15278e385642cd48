//! CPU and scheduler tools of issue 30 (`offwaketime`), against fixtures of known truth.

use std::{
    io::{BufRead, BufReader, Write},
    process::{Command, Stdio},
    time::Duration,
};

use tracekit_tests::*;

const TIMEOUT: Duration = Duration::from_secs(120);

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
