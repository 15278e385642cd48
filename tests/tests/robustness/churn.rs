//! Production conditions (issue "Production-grade"): intervals and `-o` on every command,
//! thread and process churn, long runs, a killed tracekit, a closed pipe, least privilege.
//! Each test reproduces one row of the table with a real workload.

use std::{
    io::{BufRead as _, BufReader},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use tracekit_tests::*;

const TIMEOUT: Duration = Duration::from_secs(60);

/// Row 1: `stat -o FILE` writes the report, also when stopped by SIGINT or SIGTERM.
#[test]
fn reliability_stat_writes_its_output_file() {
    require_root();
    let dir = scratch("reliability_stat_writes_its_output_file");
    let json = dir.join("stat.json");
    let run = tracekit(
        [
            "stat",
            "-e",
            "task-clock,page-faults",
            "-d",
            "0.5",
            "-o",
            json.to_str().unwrap(),
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("stat -o wrote its file"))
            .expect("JSON in the file");
    let events: Vec<&str> = report["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["cpu-clock", "page-faults"], "{report:#}");
    assert!(run.stderr.contains("Wrote "), "{run:#?}");
    for (signal, name) in [(libc::SIGINT, "int"), (libc::SIGTERM, "term")] {
        let text = dir.join(format!("stat-{name}.txt"));
        let mut child = spawn_tracekit(["stat", "-a", "-o", text.to_str().unwrap()]);
        // stat prints no start line: signal once it catches the signal (before, the
        // signal's default action ends it), after some counting.
        wait_catches(child.id(), signal);
        std::thread::sleep(Duration::from_millis(700));
        kill(child.id(), signal);
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "stat after signal {name}");
        let written = std::fs::read_to_string(&text).expect("stat -o after a signal");
        assert!(
            written.contains("Performance counter stats for system wide")
                && written.contains("seconds time elapsed"),
            "{written}"
        );
    }
}

/// Row 2: `stackcount -i` and `offcpu -i` print one report per interval, the last partial.
#[test]
fn reliability_stack_commands_report_each_interval() {
    require_root();
    for args in [
        &[
            "stackcount",
            "sched:sched_switch",
            "-i",
            "1",
            "-d",
            "3.5",
            "--top",
            "3",
        ][..],
        &["offcpu", "-i", "1", "-d", "3.5", "--top", "3"][..],
    ] {
        let run = tracekit(args, TIMEOUT);
        run.assert_code(0);
        let headers: Vec<&str> = run
            .stdout
            .lines()
            .filter(|l| l.contains("interval ending"))
            .collect();
        assert_eq!(
            headers.len(),
            4,
            "{args:?}: 3 full intervals and a half: {run:#?}"
        );
        assert!(headers[3].contains("over 0.5 s"), "{args:?}: {headers:?}");
    }
}

/// Row 3: `-i 1 -d 3` prints three reports; with `-i 2 -d 3` the last is labelled 1.0 s.
#[test]
fn reliability_intervals_end_at_the_duration() {
    require_root();
    let run = tracekit(
        ["count", "sched:sched_switch", "-i", "1", "-d", "3"],
        TIMEOUT,
    );
    run.assert_code(0);
    let headers: Vec<&str> = run.stdout.lines().filter(|l| l.ends_with(" s)")).collect();
    assert_eq!(headers.len(), 3, "{run:#?}");
    assert!(
        headers.iter().all(|h| h.ends_with("(1.0 s)")),
        "{headers:?}"
    );
    let run = tracekit(
        ["count", "sched:sched_switch", "-i", "2", "-d", "3"],
        TIMEOUT,
    );
    run.assert_code(0);
    let headers: Vec<&str> = run.stdout.lines().filter(|l| l.ends_with(" s)")).collect();
    assert_eq!(headers.len(), 2, "{run:#?}");
    assert!(
        headers[0].ends_with("(2.0 s)") && headers[1].ends_with("(1.0 s)"),
        "{headers:?}"
    );
}

/// The microseconds off CPU of the stacks whose frames include `function`.
fn off_cpu_us(json: &serde_json::Value, function: &str) -> u64 {
    json["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| {
            s["frames"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["symbol"] == function)
        })
        .map(|s| s["count"].as_u64().unwrap())
        .sum()
}

/// Row 4: 12,000 threads created and joined leave no starts behind: the 2 s sleep that
/// follows is reported as 2 s, with default map sizes.
#[test]
fn reliability_offcpu_survives_thread_churn() {
    require_root();
    let churn = fixture("tk_churn");
    let run = tracekit(
        [
            "offcpu",
            "--json",
            "--",
            churn.to_str().unwrap(),
            "threads",
            "12000",
            "2000",
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let json = parse_json(&run.stdout);
    let sleep_us = off_cpu_us(&json, "sleeper");
    assert!(
        (1_980_000..=2_020_000).contains(&sleep_us),
        "the 2 s sleep after 12000 threads: {sleep_us} us; {}",
        run.stderr
    );
    assert!(!run.stderr.contains("full start map"), "{}", run.stderr);
}

/// Row 5: under thread churn that reuses thread ids (pid_max wraps), no thread inherits a
/// dead thread's start: the total time off CPU is at most threads x duration.
#[test]
fn reliability_offcpu_total_is_bounded_under_churn() {
    require_root();
    let tasks_before = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|p| std::fs::read_dir(p.path().join("task")).ok())
        .map(|tasks| tasks.count())
        .sum::<usize>();
    let mut churners: Vec<_> = (0..2)
        .map(|_| spawn_fixture("tk_churn", &["alive", "9", "50"]))
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let seconds = 6.0;
    let run = tracekit(["offcpu", "-d", "6", "--json"], TIMEOUT);
    for churner in &mut churners {
        let _ = churner.wait();
    }
    run.assert_code(0);
    let json = parse_json(&run.stdout);
    let total_us: u64 = json["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["count"].as_u64().unwrap())
        .sum();
    // Every task alive at the start, the churners' 100 live threads, and room for the
    // processes the machine starts meanwhile.
    let bound_us = ((tasks_before + 100 + 200) as f64 * seconds * 1e6) as u64;
    assert!(
        total_us <= bound_us,
        "{} s off CPU in {seconds} s with about {} threads",
        total_us / 1_000_000,
        tasks_before + 100
    );
}

/// A memory figure of process `pid` from `/proc/PID/status`, in KiB (`field`: `VmRSS`, the
/// resident set; `RssAnon`, its heap and other anonymous memory); 0 once it is gone.
pub(crate) fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The resident set of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    status_kib(pid, "VmRSS")
}

/// Starts tracekit with `args`, its output thrown away (the tests watch its memory).
fn spawn_silent(args: &[&str]) -> std::process::Child {
    let mut child = Command::new(tracekit_bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Attached, not merely started: a loaded machine takes seconds to load the programs.
    wait_for_stderr(&mut child, "Hit Ctrl-C to end.", TIMEOUT);
    child
}

/// Row 6: `profile -a -i 1` under process churn keeps flat memory. This harness, a debug
/// binary of ~18 MiB, burns CPU after the first reading: a live process whose stacks no
/// interval needs any more gives back its binary's resolver (CI saw 14.9 -> 37.0 MiB when
/// it was kept, 18 MiB of it this binary's pages, sampled as the harness read the first
/// figure). Anonymous memory is printed beside: it grows ~1 MiB from 1.6 as the kernel's
/// names are learnt, too little to measure a leak by in 27 s.
#[test]
fn reliability_profile_intervals_keep_flat_memory() {
    require_root();
    let mut churner = spawn_fixture("tk_churn", &["procs", "48"]);
    let mut child = spawn_silent(&["profile", "-a", "-i", "1", "-d", "45", "--top", "3"]);
    let pid = child.id();
    std::thread::sleep(Duration::from_secs(15));
    let (early_anon, early_rss) = (status_kib(pid, "RssAnon"), rss_kib(pid));
    burn_cpu_until(Instant::now() + Duration::from_millis(500));
    std::thread::sleep(Duration::from_secs(26));
    let (late_anon, late_rss) = (status_kib(pid, "RssAnon"), rss_kib(pid));
    let late_mappings = largest_mappings(pid);
    let status = child.wait().unwrap();
    let _ = churner.wait();
    assert!(status.success());
    eprintln!(
        "anonymous RSS {early_anon} -> {late_anon} KiB, all RSS {early_rss} -> {late_rss} KiB"
    );
    assert!(
        late_rss as f64 <= 1.2 * early_rss as f64,
        "RSS {early_rss} KiB at 15 s, {late_rss} KiB at 42 s (anonymous {early_anon}, \
         {late_anon} KiB); the largest mappings at 42 s: {late_mappings}"
    );
}

/// Issue 25, per process: `profile -a -i` under churn holds nothing per process that has
/// exited. 2,000 short programs (`tk_burner 0.01`, each sampled ~10 times at 999 Hz, so
/// each is announced, its maps remembered and its unwind tables published) run in four
/// batches of 500, one at a time: what tracekit says it publishes at the end (`-v`: "the
/// mapping tables of N processes", each an entry of the kernel's process table) is the
/// processes alive then. Before, it published every process it had loaded until the
/// kernel's tables were full (8,192 processes): 633 published with 149 alive here. Its
/// anonymous memory, lowest reading during each batch, is printed, not asserted: on a
/// shared machine, `-a` symbolizes the other users' compilers and debug binaries, and the
/// floors moved by ±15 MiB between batches of this test with either build (the symbolizer's
/// own per-process state is checked exactly by `exited_processes_forgotten_entirely`).
/// Paced by the programs run, not by the clock.
#[test]
fn reliability_profile_forgets_exited_processes() {
    require_root();
    let burner = fixture("tk_burner");
    let churn = fixture("tk_churn");
    let mut child = Command::new(tracekit_bin())
        .args(["profile", "-a", "-F", "999", "-i", "0.5", "-d", "600"])
        .args(["--top", "1", "-v"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut banner = String::new();
    while !banner.contains("Hit Ctrl-C to end") {
        banner.clear();
        assert!(
            stderr.read_line(&mut banner).unwrap() > 0,
            "tracekit ended before sampling"
        );
    }
    let batch = 500;
    let mut floors = Vec::new();
    for _ in 0..4 {
        let mut runs = Command::new(&churn)
            .args(["runs", &batch.to_string()])
            .arg(&burner)
            .arg("0.01")
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut floor = u64::MAX;
        let deadline = Instant::now() + TIMEOUT;
        while runs.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "{batch} runs took over a minute");
            floor = floor.min(status_kib(pid, "RssAnon"));
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(runs.wait().unwrap().success());
        floors.push(floor);
    }
    kill(pid, libc::SIGINT);
    let mut report = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut report).unwrap();
    assert!(child.wait().unwrap().success(), "{report}");
    let alive = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .count();
    let published: usize = report
        .split("for the mapping tables of ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no unwind table summary in:\n{report}"));
    // From the second batch's floor to the fourth's: 1,000 processes after a warm-up batch.
    let per_1000 = floors[3] as f64 - floors[1] as f64;
    eprintln!(
        "anonymous RSS floors per batch of {batch}: {floors:?} KiB ({per_1000:+.0} KiB per \
         1,000 exited processes); {published} processes published at the end, {alive} alive"
    );
    // Those alive at the end, and those that exited in the last second (pruned each second).
    assert!(
        published <= alive + 100,
        "{published} processes published at the end, {alive} alive"
    );
}

/// The five mappings of process `pid` with the most RSS (`KiB name`, from
/// `/proc/PID/smaps`): a failure of a memory test says whether the heap grew or a binary
/// the profiler symbolized (a live test harness's debug binary) was mapped.
fn largest_mappings(pid: u32) -> String {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    let mut by_name: std::collections::HashMap<String, u64> = Default::default();
    let mut name = String::new();
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let first = fields.next().unwrap_or("");
        if first == "Rss:" {
            let kib: u64 = fields.next().and_then(|n| n.parse().ok()).unwrap_or(0);
            *by_name.entry(name.clone()).or_default() += kib;
        } else if first.contains('-') && !first.ends_with(':') {
            name = fields.nth(4).unwrap_or("[anon]").to_owned();
        }
    }
    let mut largest: Vec<(String, u64)> = by_name.into_iter().collect();
    largest.sort_by_key(|m| std::cmp::Reverse(m.1));
    largest
        .iter()
        .take(5)
        .map(|(name, kib)| format!("{kib} KiB {name}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Row 6, kernel side: an interval profile drains each interval's keys and stacks from the
/// kernel maps, so a run of hours under churn never fills them. Maps of 64 keys and 128
/// stacks hold one 0.25 s interval at 99 Hz on two CPUs (at most 50 samples) but not the
/// run: it samples more than 64 distinct processes.
#[test]
fn reliability_profile_intervals_never_fill_the_maps() {
    require_root();
    let mut churner = spawn_fixture("tk_churn", &["procs", "14"]);
    let json_path = scratch("profile_never_fills").join("run.json");
    let output = Command::new(tracekit_bin())
        .args([
            "profile", "-a", "-F", "99", "-i", "0.25", "-d", "12", "--top", "1",
        ])
        .args([
            "--count-map-size",
            "64",
            "--stack-storage-size",
            "128",
            "-o",
        ])
        .arg(&json_path)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let _ = churner.wait();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let pids: std::collections::HashSet<u64> = json["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["pid"].as_u64())
        .collect();
    assert!(
        pids.len() > 64,
        "only {} processes sampled: the run did not outgrow the maps",
        pids.len()
    );
    assert_eq!(json["lost"]["count_map_full"], 0, "{}", json["lost"]);
    assert_eq!(json["lost"]["stack_map_full"], 0, "{}", json["lost"]);
}

/// Row 6, symbols: an interval profile lets go of what it read for processes that exited
/// (blazesym keeps a resolver, with the file mapped and its DWARF parsed, per binary path),
/// so a machine that runs ever new binaries (builds, deploys) does not grow it for hours.
#[test]
fn reliability_profile_intervals_release_exited_binaries() {
    require_root();
    let dir = scratch("release_exited_binaries");
    let mut child = spawn_silent(&["profile", "-a", "-i", "0.5", "-d", "20", "--top", "1"]);
    let tracekit_pid = child.id();
    std::thread::sleep(Duration::from_secs(3));
    let mapped_copies = || {
        std::fs::read_to_string(format!("/proc/{tracekit_pid}/maps"))
            .unwrap_or_default()
            .lines()
            .filter(|line| line.contains("release_exited_binaries"))
            .count()
    };
    let mut seen_mapped = 0;
    for i in 0..8 {
        let copy = dir.join(format!("tk_burner_{i}"));
        std::fs::copy(fixture("tk_burner"), &copy).unwrap();
        let status = Command::new(&copy)
            .arg("0.4")
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        // Symbolized at the end of the interval it ran in.
        std::thread::sleep(Duration::from_millis(700));
        seen_mapped = seen_mapped.max(mapped_copies());
    }
    // Forgotten an interval after being seen dead.
    std::thread::sleep(Duration::from_secs(3));
    let left = mapped_copies();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        seen_mapped > 0,
        "tracekit never read the copies' files: nothing to let go of"
    );
    assert_eq!(left, 0, "tracekit still maps {left} files of exited copies");
}

/// Acceptance 3, memory of an interval profile: symbolizing rustc (librustc_driver, a
/// 100+ MiB library with a huge symbol table) and building its unwind tables take tens of MiB
/// of heap; once rustc has exited and been forgotten, that heap goes back to the kernel.
/// Before, glibc kept it: the run's RSS stayed at the highest any process ever needed.
#[test]
fn reliability_profile_intervals_give_back_the_heap_of_exited_processes() {
    require_root();
    let dir = scratch("give_back_heap");
    let source = dir.join("hello.rs");
    std::fs::write(&source, "fn main() { println!(\"hello\"); }\n").unwrap();
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let mut child = spawn_silent(&["profile", "-a", "-i", "0.5", "-d", "40", "--top", "1"]);
    let tracekit_pid = child.id();
    let heap_kib = || status_kib(tracekit_pid, "RssAnon");
    let compile = || {
        Command::new(&rustc)
            .args(["-O", "-o"])
            .arg(dir.join("hello"))
            .arg(&source)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("rustc runs (the tests are built with it)")
    };
    std::thread::sleep(Duration::from_secs(3));
    let before = heap_kib();
    let mut peak = before;
    // Heap once each compile's process has been forgotten (an interval after its exit). What
    // stays is what is cached once for all (the names of kernel functions): a few MiB.
    let mut kept = Vec::new();
    for _ in 0..5 {
        let mut build = compile();
        while build.try_wait().unwrap().is_none() {
            peak = peak.max(heap_kib());
            std::thread::sleep(Duration::from_millis(50));
        }
        for _ in 0..25 {
            peak = peak.max(heap_kib());
            std::thread::sleep(Duration::from_millis(100));
        }
        kept.push(heap_kib());
    }
    let _ = child.kill();
    let _ = child.wait();
    eprintln!("tracekit heap: {before} KiB before, {peak} KiB at most, after each: {kept:?} KiB");
    assert!(
        peak >= before + 16 * 1024,
        "symbolizing rustc took only {} KiB of heap: nothing to give back",
        peak - before
    );
    let most_kept = kept.iter().copied().max().unwrap();
    assert!(
        most_kept <= before + 8 * 1024,
        "tracekit kept {} KiB of heap after a rustc exited ({before} KiB before, {peak} KiB \
         at most, after each: {kept:?})",
        most_kept.saturating_sub(before)
    );
}

/// Acceptance 2, start maps under thread churn: 12,000 threads each enter `step` and exit
/// inside it (a start that no return ends; more than the 10,240 a default start map holds),
/// then the main thread calls `step` 3,000 times. Each dead thread's start is dropped at its
/// exit, so no start is lost and every call is counted, exactly.
#[test]
fn reliability_funclatency_drops_starts_of_exited_threads() {
    require_root();
    let churn = fixture("tk_churn");
    let spec = format!("{}:step", churn.display());
    let run = tracekit(
        [
            "funclatency",
            &spec,
            "--json",
            "--",
            churn.to_str().unwrap(),
            "exits",
            "12000",
            "3000",
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let json = parse_json(&run.stdout);
    let stats = &json["stats"];
    let counted: u64 = json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["count"].as_u64().unwrap())
        .sum();
    assert_eq!(stats["start_map_full"], 0, "{stats}");
    assert_eq!(counted, 3000, "{stats}");
    assert_eq!(stats["starts"], 15_000, "{stats}");
    assert_eq!(stats["starts_ended"], 3000, "{stats}");
    assert_eq!(stats["starts_exited"], 12_000, "{stats}");
    assert!(!run.stderr.contains("full start map"), "{}", run.stderr);
}

/// Acceptance 2, the other start maps under the same churn: while 12,000 threads are
/// created and joined one at a time and `dd` makes 300 O_DIRECT writes, whole-machine
/// `runqlat` (starts keyed by thread, at each wakeup) and `biolatency` (keyed by request)
/// lose no start to a full map (each default start map holds 10,240), every new thread's
/// first wait is counted, and every write's latency is counted or its loss reported.
#[test]
fn reliability_runqlat_and_biolatency_under_thread_churn() {
    require_root();
    let dir = scratch("reliability_runqlat_biolatency_churn");
    let file = format!("of={}", dir.join("file").display());
    let dd = |extra: &str| {
        let status = Command::new("dd")
            .args([
                "if=/dev/zero",
                "bs=64k",
                "count=300",
                "oflag=direct",
                "status=none",
            ])
            .args([file.as_str(), extra])
            .status()
            .unwrap();
        assert!(status.success());
    };
    // The file's blocks are allocated before tracing: the traced writes overwrite them, one
    // 64 KiB request each (a direct write that allocates may go through the page cache).
    dd("conv=fsync");
    let mut runqlat = spawn_tracekit(["runqlat", "--json"]);
    let mut biolatency = spawn_tracekit(["biolatency", "--json"]);
    wait_for_stderr(&mut runqlat, "Hit Ctrl-C to end.", TIMEOUT);
    wait_for_stderr(&mut biolatency, "Hit Ctrl-C to end.", TIMEOUT);
    let churn = fixture("tk_churn");
    let mut threads = Command::new(&churn)
        .args(["threads", "12000", "0"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    dd("conv=notrunc");
    assert!(threads.wait().unwrap().success());
    std::thread::sleep(Duration::from_millis(300));
    kill(runqlat.id(), libc::SIGINT);
    kill(biolatency.id(), libc::SIGINT);
    let (runqlat, biolatency) = (
        wait_output(runqlat, TIMEOUT),
        wait_output(biolatency, TIMEOUT),
    );
    runqlat.assert_code(0);
    biolatency.assert_code(0);
    let total = |json: &serde_json::Value| -> u64 {
        json["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["count"].as_u64().unwrap())
            .sum()
    };
    let (runqlat_json, biolatency_json) =
        (parse_json(&runqlat.stdout), parse_json(&biolatency.stdout));
    for (json, run) in [(&runqlat_json, &runqlat), (&biolatency_json, &biolatency)] {
        assert_eq!(json["stats"]["start_map_full"], 0, "{}", json["stats"]);
        assert!(!run.stderr.contains("full start map"), "{}", run.stderr);
    }
    // Each new thread waits once before it first runs.
    assert!(
        total(&runqlat_json) >= 12_000,
        "runqlat counted {} waits: {}",
        total(&runqlat_json),
        runqlat_json["stats"]
    );
    // Every write is counted or reported: a completion that came while another BPF program
    // ran on its CPU (runqlat's, at the churn's context switches) is skipped by the kernel
    // (counted as the program's recursion misses), one whose issue was skipped has no start.
    // Before misses were read, 4 of 12 runs of this workload here missed 1 to 4 completions
    // with nothing said (CI saw 298 and 299 of 300; other I/O usually hides it in the total).
    // Still, about one run in ten under this churn sees 1 to 3 completions reach no program
    // and counts no miss (the classic tracepoint's record never built, the hypothesis), while
    // their issues were started: the stats' starts not ended (`starts - starts_ended -
    // starts_exited`) account for them, and for requests still in flight at the end. An open
    // defect: the text output says "Lost: nothing." for them (issue note, 2026-11-27).
    let stats = &biolatency_json["stats"];
    let missed = stats["missed"].as_u64().unwrap_or(0);
    let no_start = stats["no_start"].as_u64().unwrap();
    let unended = stats["starts"].as_u64().unwrap()
        - stats["starts_ended"].as_u64().unwrap()
        - stats["starts_exited"].as_u64().unwrap_or(0);
    assert!(
        unended <= 64,
        "biolatency has {unended} starts never ended: {stats}"
    );
    assert!(
        total(&biolatency_json) + missed + no_start + unended >= 300,
        "biolatency counted {} requests, reported {missed} missed, {no_start} without a \
         start and {unended} starts not ended: {stats}",
        total(&biolatency_json),
    );
}

/// The pids of `pid`'s children.
fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|text| {
            text.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// Row 7: the `-- CMD` workload dies with tracekit, also when tracekit is killed.
#[test]
fn reliability_workload_dies_with_a_killed_tracekit() {
    require_root();
    let mut child = spawn_tracekit(["count", "sched:sched_switch", "--", "sleep", "30"]);
    wait_for_stderr(&mut child, "Hit Ctrl-C to end.", TIMEOUT);
    let workload = children_of(child.id());
    assert_eq!(workload.len(), 1, "one workload: {workload:?}");
    kill(child.id(), libc::SIGKILL);
    let _ = child.wait();
    let deadline = Instant::now() + Duration::from_secs(2);
    while std::path::Path::new(&format!("/proc/{}/stat", workload[0])).exists() {
        let state =
            std::fs::read_to_string(format!("/proc/{}/stat", workload[0])).unwrap_or_default();
        // A zombie waiting for init to reap it is dead.
        if state.contains(") Z ") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the workload outlived a killed tracekit: {state}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs tracekit with stdout into a pipe that this test reads one line of and then closes,
/// as `head -1` does; returns tracekit's exit status, how long it took to exit after the
/// pipe closed, its stderr, and the programs and links it held while it ran.
fn into_head(args: &[&str]) -> (Option<i32>, Duration, String, Vec<u32>, Vec<u32>) {
    let mut tracekit = Command::new(tracekit_bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = tracekit.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
            .join("\n")
    });
    let mut stdout = BufReader::new(tracekit.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(!line.is_empty(), "{args:?}: no line on stdout");
    // Running while its pipe is open: its own programs and links (not every `engine_*`
    // program on the machine: another tracekit may be tracing).
    let pid = tracekit.id();
    let programs = wait_until(TIMEOUT, || {
        let programs = programs_held_by(pid);
        if programs.is_empty() {
            Err(format!("{args:?} holds no BPF program"))
        } else {
            Ok(programs)
        }
    });
    let links = ids_held_by(pid, "link_id:");
    drop(stdout);
    let closed = Instant::now();
    let deadline = closed + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = tracekit.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = tracekit.kill();
            break tracekit.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    (
        status.code(),
        closed.elapsed(),
        reader.join().unwrap(),
        programs,
        links,
    )
}

/// Row 8: `tracekit ... | head -1` exits within 1 s of head, with status 0 and nothing
/// attached, also when no further event arrives.
#[test]
fn reliability_closed_pipe_ends_the_run() {
    require_root();
    let funcs = fixture("tk_funcs");
    let never_called = format!("uprobe:{}:answer", funcs.display());
    for args in [
        vec!["trace", "raw_syscalls:sys_enter"],
        vec!["trace", "raw_syscalls:sys_enter", "--json"],
        vec!["trace", never_called.as_str()],
        vec!["offcpu", "-i", "0.5"],
        vec!["count", "sched:sched_switch", "-i", "0.5"],
    ] {
        let (code, after, stderr, programs, links) = into_head(&args);
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
        assert!(
            after < Duration::from_secs(1),
            "{args:?} exited {after:?} after head: {stderr}"
        );
        // Freed by the kernel after the exit (deferred work): polled.
        wait_unloaded(&programs, &links);
    }
}

/// Runs tracekit as `nobody` with only these capabilities.
fn as_nobody(caps: &str, args: &[&str]) -> Output {
    // A copy nobody can execute, outside root's home.
    let copy = std::env::temp_dir().join("tracekit-nobody");
    std::fs::copy(tracekit_bin(), &copy).unwrap();
    let mut command = Command::new("setpriv");
    command
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            &format!("--inh-caps={caps}"),
            &format!("--ambient-caps={caps}"),
        ])
        .arg(&copy)
        .args(args);
    run(command, TIMEOUT)
}

/// Rows 15 and 16: with CAP_BPF and CAP_PERFMON and no root, the commands work where the
/// kernel allows, or say in one line which capability is missing and how to grant it.
#[test]
fn reliability_least_privilege() {
    require_root();
    // Raw tracepoints need no tracefs: syscount works with the two capabilities alone.
    let run = as_nobody("+bpf,+perfmon", &["syscount", "-d", "0.5"]);
    run.assert_code(0);
    assert!(run.stdout.contains("SYSCALL"), "{run:#?}");
    // Tracepoints need tracefs, readable by root only: one line naming the capability.
    for args in [
        &["count", "sched:sched_switch", "-d", "0.5"][..],
        &[
            "hist",
            "sched:sched_switch",
            "--by",
            "prev_comm",
            "-d",
            "0.5",
        ][..],
        &["trace", "sched:sched_switch", "-d", "0.2"][..],
        &["profile", "-p", "1", "-d", "0.5"][..],
    ] {
        let run = as_nobody("+bpf,+perfmon", args);
        run.assert_code(1);
        assert_eq!(run.stderr.lines().count(), 1, "{args:?}: {run:#?}");
        assert!(
            run.stderr.contains("CAP_DAC_READ_SEARCH") && run.stderr.contains("setcap"),
            "{args:?}: {}",
            run.stderr
        );
    }
    // With it, they work.
    for args in [
        &["count", "syscalls:sys_enter_getppid", "-d", "0.5"][..],
        &[
            "hist",
            "sched:sched_switch",
            "--by",
            "prev_comm",
            "-d",
            "0.5",
        ][..],
        &["trace", "sched:sched_switch", "-d", "0.2"][..],
        &["profile", "-p", "1", "-d", "0.5"][..],
    ] {
        as_nobody("+bpf,+perfmon,+dac_read_search", args).assert_code(0);
    }
    // No capabilities: listing tracepoints says why it cannot.
    let run = as_nobody("-all", &["list", "sched:*"]);
    run.assert_code(1);
    assert!(run.stderr.contains("CAP_DAC_READ_SEARCH"), "{run:#?}");
    let run = as_nobody("-all", &["count", "sched:sched_switch", "-d", "0.2"]);
    run.assert_code(1);
    assert!(
        run.stderr.contains("CAP_BPF") && run.stderr.contains("CAP_PERFMON"),
        "{run:#?}"
    );
}

/// A flood that `trace` cannot keep up with still stops at `-d` and at Ctrl-C: two processes
/// making getppid() as fast as they can, traced with their user stacks into a file. The
/// event loop used to read a ring until it was empty, which a flood never lets happen: `-d`
/// and SIGINT were seen only once the flood ended (a run stopped by SIGINT after 3 s went
/// on for minutes beside a syscall benchmark).
#[test]
fn reliability_trace_flood_stops_on_time() {
    require_root();
    let dir = scratch("reliability_trace_flood_stops_on_time");
    let mut burners: Vec<_> = (0..2)
        .map(|_| spawn_fixture("tk_syscalls", &["--seconds", "60"]))
        .collect();
    let pids = burners
        .iter()
        .map(|burner| burner.id().to_string())
        .collect::<Vec<_>>()
        .join(",");
    for stop in ["-d 2", "SIGINT"] {
        let mut args = vec!["trace", "raw_syscalls:sys_enter", "-U", "-p", pids.as_str()];
        if stop == "-d 2" {
            args.extend(["-d", "2"]);
        }
        let out = dir.join("flood.txt");
        let mut child = Command::new(tracekit_bin())
            .args(&args)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = sender.send(line);
            }
        });
        let mut seen = Vec::new();
        while !seen
            .iter()
            .any(|l: &String| l.contains("Hit Ctrl-C to end."))
        {
            seen.push(
                lines
                    .recv_timeout(TIMEOUT)
                    .unwrap_or_else(|_| panic!("{stop}: not attached: {seen:?}")),
            );
        }
        let attached = Instant::now();
        if stop == "SIGINT" {
            std::thread::sleep(Duration::from_secs(2));
            kill(child.id(), libc::SIGINT);
        }
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if attached.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                let _ = child.wait();
                for burner in &mut burners {
                    let _ = burner.kill();
                }
                panic!("{stop}: still tracing the flood 30 s after attaching");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let ended = attached.elapsed();
        seen.extend(lines.iter());
        let stderr = seen.join("\n");
        assert_eq!(status.code(), Some(0), "{stop}: {stderr}");
        assert!(
            ended < Duration::from_secs(7),
            "{stop}: ended {ended:?} after attaching: {stderr}"
        );
        let printed = std::fs::read_to_string(&out).unwrap();
        assert!(
            printed.contains("syscall_loop"),
            "{stop}: no stack named syscall_loop in {} bytes: {stderr}",
            printed.len()
        );
    }
    for burner in &mut burners {
        let _ = burner.kill();
        let _ = burner.wait();
    }
}

/// A `-- CMD` that lives about a millisecond has its user frames named: `stackcount -U` of
/// `tk_syscalls 1000` (1000 getppid calls from syscall_loop, then exit), 30 times, names
/// syscall_loop in every stack and leaves no frame `[unknown]`. The command used to exit
/// before its announcement was read (2 to 4 runs in 12 had `[unknown]` frames); its exit is
/// now held until its memory map is read.
#[test]
fn reliability_short_command_stacks_named() {
    require_root();
    let dir = scratch("reliability_short_command_stacks_named");
    let syscalls = fixture("tk_syscalls");
    let out = dir.join("out.folded");
    let mut unnamed = Vec::new();
    for run in 0..30 {
        let result = tracekit(
            [
                "stackcount",
                "-U",
                "t:syscalls:sys_enter_getppid",
                "-o",
                out.to_str().unwrap(),
                "--",
                syscalls.to_str().unwrap(),
                "1000",
            ],
            TIMEOUT,
        );
        result.assert_code(0);
        let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
        let total: u64 = folded.iter().map(|(_, count)| count).sum();
        assert_eq!(total, 1000, "run {run}: {folded:?}");
        for (stack, count) in folded {
            if stack.contains("[unknown]") || !stack.contains("syscall_loop") {
                unnamed.push(format!("run {run}: {stack} {count}"));
            }
        }
    }
    assert!(unnamed.is_empty(), "stacks not named: {unnamed:#?}");
}

/// `trace -U` whose reader stops reading (a full pipe) still names the stacks of processes
/// that come and go meanwhile: tk_syscalls fills the pipe with 3000 events, then 8 runs of
/// tk_nofp (a quarter of a second each: 20 naps of 2 ms after a first sleep of 0.2 s) start
/// and exit while nothing is read; only then does the test read. Before, `trace` wrote each
/// line from its event loop, and a write to the full pipe blocked it: no announcement was
/// read, so no memory map and no unwind table, and every nap's stack was `[unknown]`.
#[test]
fn reliability_trace_stalled_reader_names_processes_gone_meanwhile() {
    require_root();
    let dir = scratch("reliability_trace_stalled_reader");
    let marker = dir.join("all-exited");
    let _ = std::fs::remove_file(&marker);
    let script = format!(
        "exec >/dev/null; {} 3000; for i in $(seq 8); do {} --naps 20 & sleep 0.3; done; \
         wait; touch {}",
        fixture("tk_syscalls").display(),
        fixture_with("tk_nofp", fixture_flags("tk_nofp")).display(),
        marker.display()
    );
    let (mut child, stderr) = trace_json_of_script(
        &[
            "t:syscalls:sys_enter_getppid",
            "t:syscalls:sys_enter_clock_nanosleep",
        ],
        &script,
    );
    // The stall: nothing is read until every tk_nofp has exited (the workload writes to
    // /dev/null: the pipe is the trace's).
    let stalled = Instant::now();
    while !marker.exists() {
        assert!(stalled.elapsed() < TIMEOUT, "the workload did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
    let Naps {
        naps,
        whole,
        broken,
        runs,
    } = count_naps(child.stdout.take().unwrap(), Duration::ZERO);
    let status = child.wait().unwrap();
    let stderr = stderr.join().unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(runs, 8, "{stderr}");
    assert!(
        naps >= 150 && whole == naps,
        "{whole} of {naps} naps (160 made) with the whole chain; broken: {broken:#?}\n{stderr}"
    );
}

/// `trace -U` read slowly (a pipe to a slow consumer) falls seconds behind processes that
/// come and go, and still names their stacks: 10 runs of tk_nofp (no frame pointers, so
/// only the DWARF unwinder walks it, with tables loaded when the process is announced) make
/// 100 naps each (0.6 s of life) and exit, while the test reads 200 lines a second. Before, the event loop
/// read the records' ring until it was empty, so announcements waited behind the whole
/// backlog (the processes were gone before their tables were loaded); and a process seen
/// dead was forgotten a second later, with its records still waiting.
#[test]
fn reliability_trace_lagging_reader_names_exited_processes() {
    require_root();
    let nofp = fixture_with("tk_nofp", fixture_flags("tk_nofp"));
    let script = format!(
        "for i in $(seq 10); do {} --naps 100 & sleep 0.2; done; wait",
        nofp.display()
    );
    let (mut child, stderr) =
        trace_json_of_script(&["t:syscalls:sys_enter_clock_nanosleep"], &script);
    // A reader that lags: 5 ms per line.
    let Naps {
        naps,
        whole,
        broken,
        ..
    } = count_naps(child.stdout.take().unwrap(), Duration::from_millis(5));
    let status = child.wait().unwrap();
    let stderr = stderr.join().unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        whole >= 950,
        "{whole} of {naps} naps (1000 made) with the whole chain; broken: {broken:#?}\n{stderr}"
    );
}

/// `trace EVENTS -U --json -- sh -c SCRIPT` with stdout piped (for the caller to read, or
/// to stall), killed after [`TIMEOUT`]; the thread returns its stderr once it exits.
fn trace_json_of_script(
    events: &[&str],
    script: &str,
) -> (std::process::Child, std::thread::JoinHandle<String>) {
    let mut child = Command::new(tracekit_bin())
        .arg("trace")
        .args(events)
        .args(["-U", "--json", "--", "sh", "-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    std::thread::spawn(move || {
        std::thread::sleep(TIMEOUT);
        kill(pid, libc::SIGKILL);
    });
    let stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
            .join("\n")
    });
    (child, stderr)
}

/// tk_nofp's naps in a `trace -U --json` stream, read to its end.
struct Naps {
    /// Naps seen: each run's first sleep (main's usleep, before its tables may be in) is
    /// not one.
    naps: usize,
    /// Naps whose user stack holds the whole chain `nap;four;three;two;one;main`.
    whole: usize,
    /// The first 12 lines of naps without it.
    broken: Vec<String>,
    /// tk_nofp processes seen.
    runs: usize,
}

/// Reads `stdout` to its end, sleeping `delay` after each line (a reader that lags).
fn count_naps(stdout: std::process::ChildStdout, delay: Duration) -> Naps {
    let chain = ["nap", "four", "three", "two", "one", "main"];
    let (mut naps, mut whole, mut broken) = (0, 0, Vec::new());
    let mut started = std::collections::HashSet::new();
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if event["comm"] != "tk_nofp" || started.insert(event["pid"].to_string()) {
            continue;
        }
        let frames: Vec<&str> = event["user_stack"]
            .as_array()
            .map(|frames| frames.iter().filter_map(|f| f.as_str()).collect())
            .unwrap_or_default();
        naps += 1;
        if frames.windows(chain.len()).any(|w| w == chain) {
            whole += 1;
        } else if broken.len() < 12 {
            broken.push(line);
        }
    }
    Naps {
        naps,
        whole,
        broken,
        runs: started.len(),
    }
}

/// The number a trace's summary gives for events lost ("Lost: 12 events to a full ring
/// buffer."; 0 for "Lost: nothing.").
fn trace_lost(stderr: &str) -> u64 {
    let line = stderr
        .lines()
        .find(|line| line.starts_with("Lost:"))
        .unwrap_or_else(|| panic!("no Lost: line: {stderr}"));
    if line.contains("nothing") {
        return 0;
    }
    line.split_whitespace()
        .nth(1)
        .and_then(|n| n.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no count in {line:?}"))
}

/// The lines of a trace of `raw_syscalls:sys_enter` that are events.
fn sys_enter_lines(stdout: &str) -> u64 {
    stdout
        .lines()
        .filter(|line| line.contains("raw_syscalls:sys_enter"))
        .count() as u64
}

/// getppid(2)'s syscall number on x86-64 (raw_syscalls:sys_enter's `id`).
const GETPPID: &str = "110";

/// Issue 29, acceptance 4, the loss half: a trace pushed past what it can print loses
/// events, and says exactly how many: the lines printed and the loss it reports add up to
/// the loop's calls, no more and no fewer. Its reader is this test, which reads nothing
/// for the first 3 s, while a loop of 1,000,000 syscalls fills the pipe, the output
/// queue and the ring (a reader that keeps up lost nothing of 3,000,000 at full speed).
#[test]
fn reliability_trace_reports_its_loss_exactly() {
    require_root();
    let calls = 1_000_000u64;
    let filter = format!("id == {GETPPID}");
    let syscalls = fixture("tk_syscalls");
    let child = spawn_tracekit([
        "trace",
        "raw_syscalls:sys_enter",
        "--filter",
        &filter,
        "--",
        syscalls.to_str().unwrap(),
        &calls.to_string(),
    ]);
    std::thread::sleep(Duration::from_secs(3));
    let run = wait_output(child, TIMEOUT);
    run.assert_code(0);
    let printed = sys_enter_lines(&run.stdout);
    let lost = trace_lost(&run.stderr);
    assert!(lost > 0, "a flood of {calls} lost nothing: {}", run.stderr);
    assert_eq!(
        printed + lost,
        calls,
        "printed {printed}, lost {lost}: {}",
        run.stderr
    );
}

/// Issue 29, acceptance 4, the other half: at a rate a trace keeps up with (5,000 events a
/// second, paced by the fixture, committed without waking the reader for each), every event
/// is printed and nothing is lost; the ring's timer-driven reads print them as they come.
#[test]
fn reliability_trace_keeps_up_with_a_paced_loop() {
    require_root();
    let calls = 25_000u64;
    let filter = format!("id == {GETPPID}");
    let syscalls = fixture("tk_syscalls");
    let run = tracekit(
        [
            "trace",
            "raw_syscalls:sys_enter",
            "--filter",
            &filter,
            "--",
            syscalls.to_str().unwrap(),
            "--rate",
            "5000",
            &calls.to_string(),
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let printed = sys_enter_lines(&run.stdout);
    assert_eq!(trace_lost(&run.stderr), 0, "{}", run.stderr);
    assert_eq!(printed, calls, "{}", run.stderr);
}

/// Records committed without a wakeup are still printed as they come, not when the ring
/// fills or the run ends: the one getppid() of a command that then sleeps for 5 s is
/// printed while it sleeps (the reader's timer reads the ring).
#[test]
fn reliability_trace_prints_a_lone_event_while_the_command_runs() {
    require_root();
    let syscalls = fixture("tk_syscalls");
    let script = format!("{} 1 >/dev/null; sleep 5", syscalls.display());
    let filter = format!("id == {GETPPID}");
    let mut child = spawn_tracekit([
        "trace",
        "raw_syscalls:sys_enter",
        "--filter",
        &filter,
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let mut found = false;
    while stdout.read_line(&mut line).unwrap() > 0 {
        if line.contains("tk_syscalls") {
            found = true;
            break;
        }
        line.clear();
    }
    assert!(found, "the event was never printed");
    assert!(
        child.try_wait().unwrap().is_none(),
        "the event was printed only once the command had ended"
    );
    let _ = child.wait();
}
