//! The latency and size histograms of block I/O and the run queue: `bitesize`,
//! `biolatency` and `runqlat`.

use std::{process::Command, time::Duration};

use serde_json::Value;
use tracekit_tests::{
    block_scratch, fixture, kill, parse_json, require_root, scratch, spawn_tracekit, tracekit,
    wait_for_stderr, wait_output,
};

use super::{dd, dd_as, group_count, start, stop};

const TIMEOUT: Duration = Duration::from_secs(60);

/// bitesize puts dd's 64 KiB direct writes in the 65536 bucket and 4 KiB ones
/// in the 4096 bucket.
#[test]
fn engine_bitesize_known_block_sizes() {
    require_root();
    let dir = scratch("engine_bitesize_known_block_sizes");
    for (bs, count, low) in [("64k", 512, 65536u64), ("4k", 1024, 4096)] {
        let writer = dd_as(&dir, "tk_bitesize_dd");
        let tool = start(&["bitesize", "--json"]);
        dd(&writer, &dir.join("file"), bs, count, "write");
        let json = stop(tool);
        let group = json["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["key"]["comm"] == "tk_bitesize_dd")
            .unwrap_or_else(|| panic!("no group for the dd: {json:#}"));
        let total = group["count"].as_u64().unwrap();
        let bucket = |g: &serde_json::Value| -> u64 {
            g["hist"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|b| b["low"].as_u64() == Some(low))
                .map(|b| b["count"].as_u64().unwrap())
                .sum()
        };
        let in_bucket = bucket(group);
        // The block layer may issue some of dd's requests from a kernel worker when the queue
        // is busy (measured for biolatency: 4 of dd's requests issued by kworker/0:0H); a
        // request is counted under the task that issued it, so those are the kworkers'. CI
        // once saw 511 of 512 under dd's comm. What the kernel skipped (stats.missed) is
        // reported, never silent.
        let by_kworkers: u64 = json["groups"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| {
                g["key"]["comm"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("kworker"))
            })
            .map(bucket)
            .sum();
        let missed = json["stats"]["missed"].as_u64().unwrap_or(0);
        assert!(
            total + by_kworkers.min(u64::from(count) / 20) + missed >= u64::from(count)
                && in_bucket as f64 >= 0.95 * total as f64,
            "bs={bs}: {in_bucket} of {total} requests in the {low} bucket ({by_kworkers} of \
             that size issued by kworkers, {missed} missed): {json:#}"
        );
    }
}

/// biolatency accounts for every completion: each one `count` sees while
/// biolatency runs is counted, had no start, or was reported missed. `count` runs around
/// biolatency (attached before it, stopped after it), so the other I/O of a shared machine
/// (hundreds of requests a second here while others build) adds to `count` only: the two
/// used to stop at once but attach a second apart, and that second's I/O broke equality.
#[test]
fn engine_biolatency_counts_every_completion() {
    require_root();
    let dir = scratch("engine_biolatency_counts_every_completion");
    let writer = dd_as(&dir, "tk_latency_dd");
    let count = start(&["count", "block:block_rq_complete", "--json"]);
    let latency = start(&["biolatency", "--json"]);
    dd(&writer, &dir.join("file"), "64k", 300, "write");
    std::thread::sleep(Duration::from_millis(800));
    kill(latency.id(), libc::SIGINT);
    let latency = wait_output(latency, TIMEOUT);
    kill(count.id(), libc::SIGINT);
    let count = wait_output(count, TIMEOUT);
    latency.assert_code(0);
    count.assert_code(0);
    let (latency, count) = (parse_json(&latency.stdout), parse_json(&count.stdout));
    let histogram: u64 = latency["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["count"].as_u64().unwrap())
        .sum();
    let completions = group_count(&count, "event", "block:block_rq_complete");
    // Each run reports the completions the kernel did not run its program for (another BPF
    // program was running on that CPU): each side's count plus its misses is every one.
    let missed = |json: &Value| json["stats"]["missed"].as_u64().unwrap_or(0);
    let accounted = histogram + latency["stats"]["no_start"].as_u64().unwrap() + missed(&latency);
    assert!(accounted >= 300, "biolatency {latency:#}");
    assert!(
        accounted <= completions + missed(&count),
        "biolatency {latency:#} vs count {count:#}"
    );
    assert_eq!(
        latency["stats"]["starts_ended"].as_u64().unwrap(),
        histogram,
        "{latency:#}"
    );
    assert!(
        latency["stats"]["no_start"].as_u64().unwrap() <= 2,
        "{latency:#}"
    );
    assert_eq!(latency["unit"], "usecs");
}

/// `biolatency -- CMD`: the command's requests complete in interrupt context (another pid),
/// and still count: 300 O_DIRECT writes give about 300 latencies (a few more for exec
/// reading the binary and filesystem metadata), or the starts whose end was not seen are
/// reported: on a machine busy with others' tracers and I/O, 5 to 13 of the 300 completions
/// were skipped by the kernel (another BPF program running on the CPU).
#[test]
fn engine_biolatency_command_counts_its_io() {
    require_root();
    let dir = block_scratch("engine_biolatency_command_counts_its_io");
    let file = dir.join("file");
    let of = format!("of={}", file.display());
    let run = tracekit(
        [
            "biolatency",
            "--json",
            "--",
            "dd",
            "if=/dev/zero",
            &of,
            "bs=64k",
            "count=300",
            "oflag=direct",
            "status=none",
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let json = parse_json(&run.stdout);
    let total: u64 = json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["count"].as_u64().unwrap())
        .sum();
    let stats = &json["stats"];
    let unended = stats["starts"].as_u64().unwrap() - stats["starts_ended"].as_u64().unwrap();
    // Most likely: a request the block layer dispatches later from kblockd's worker (the
    // queue was busy) is issued in that worker's context, not dd's, and is not the command's:
    // a fresh-clone CI run counted 299 of 300 with nothing unended (and 30 others' ends).
    assert!((297..=332).contains(&(total + unended)), "{json:#}");
    assert_eq!(stats["starts_ended"].as_u64().unwrap(), total, "{json:#}");
    if unended > 0 {
        assert!(
            run.stderr.contains(&format!(
                "Not ended: {unended} starts whose end was not seen"
            )),
            "{}",
            run.stderr
        );
    }
}

/// `runqlat --tids`: a thread that sleeps N times waits for a CPU after each wakeup, so its
/// histogram holds at least N waits (one more for the wakeup that starts it, and a few for
/// preemptions). CPU burners, one more than there are CPUs, never sleep: their waits start
/// when they are preempted (sched_switch of a runnable task), every few milliseconds.
#[test]
fn engine_runqlat_counts_wakeups_and_preemptions() {
    require_root();
    const SLEEPS: u64 = 200;
    let mut sleeper = Command::new(fixture("tk_funcs"))
        .args(["--wait", "sleep", &SLEEPS.to_string(), "1"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawning tk_funcs");
    let mut child = spawn_tracekit(["runqlat", "--tids", "--json", "-v"]);
    let lines = wait_for_stderr(&mut child, "Hit Ctrl-C to end.", TIMEOUT);
    use std::io::Write as _;
    sleeper
        .stdin
        .take()
        .unwrap()
        .write_all(b"go\n")
        .expect("releasing tk_funcs");
    assert!(sleeper.wait().unwrap().success());
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let burners: Vec<_> = (0..=cpus)
        .map(|_| {
            Command::new(fixture("tk_burner"))
                .arg("1")
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("spawning tk_burner")
        })
        .collect();
    let burner_ids: Vec<u64> = burners.iter().map(|b| u64::from(b.id())).collect();
    for mut burner in burners {
        assert!(burner.wait().unwrap().success());
    }
    kill(child.id(), libc::SIGINT);
    let run = wait_output(child, TIMEOUT);
    run.assert_code(0);
    assert!(!run.stderr.contains("warning"), "{lines:?} {}", run.stderr);
    // Only tasks already waiting when tracing began lack a start. Switches to the idle task
    // (hundreds here, one per sleep) are no task's wait, and tasks woken while tracekit
    // detaches (the RCU kthreads) must not lose their start first: neither is missing.
    let no_start: u64 = run
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("Not counted: "))
        .and_then(|rest| rest.split_whitespace().next())
        .map_or(0, |n| n.parse().unwrap());
    assert!(no_start <= 20, "{}", run.stderr);
    assert!(
        !run.stderr.contains("did not pass the filter"),
        "{}",
        run.stderr
    );
    let json = parse_json(&run.stdout);
    let waits_of = |tids: &[u64]| -> u64 {
        json["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .filter(|g| g["key"]["tid"].as_u64().is_some_and(|t| tids.contains(&t)))
            .map(|g| g["count"].as_u64().unwrap())
            .sum()
    };
    let waits = waits_of(&[u64::from(sleeper.id())]);
    // Not one wait per sleep exactly: a 1 ms sleep whose timer expired before the task
    // slept is no wakeup at all. Counted beside runqlat, six runs of this sleeper gave
    // 201, 201, 201, 201, 201 and 200 `sched_wakeup`s and as many switch-ins (runqlat the
    // same each time); CI saw 199.
    assert!(
        (SLEEPS - 5..=SLEEPS + 60).contains(&waits),
        "{waits} waits for {SLEEPS} sleeps: {json:#}"
    );
    // Each burner is started once (sched_wakeup_new); the rest are preemptions: on the host
    // hundreds; Debian 6.1 under TCG emulation (fewer timer ticks per wall second) gave 56
    // for three burners.
    let preempted = waits_of(&burner_ids);
    assert!(
        preempted >= 10 * burner_ids.len() as u64,
        "{preempted} waits of {} burners sharing {cpus} CPUs for 1 s: {json:#}",
        burner_ids.len()
    );
}
