//! Thread and process churn: start maps that forget exited threads, interval profiles that
//! keep flat memory, forget exited processes, never fill their maps, and give back what
//! they read for binaries that are gone.

use std::{
    io::{BufRead as _, BufReader},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use tracekit_tests::{status_kib, *};

const TIMEOUT: Duration = Duration::from_secs(60);

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

/// 12,000 threads created and joined leave no starts behind: the 2 s sleep that
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

/// Under thread churn that reuses thread ids (pid_max wraps), no thread inherits a
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

/// `profile -a -i 1` under process churn keeps flat memory. This harness, a debug
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

/// Per process: `profile -a -i` under churn holds nothing per process that has
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

/// Kernel side: an interval profile drains each interval's keys and stacks from the
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

/// Symbols: an interval profile lets go of what it read for processes that exited
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

/// Memory of an interval profile: symbolizing rustc (librustc_driver, a
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

/// Start maps under thread churn: 12,000 threads each enter `step` and exit
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

/// The other start maps under the same churn: while 12,000 threads are
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
    // defect: the text output says "Lost: nothing." for them (noted 2026-11-27).
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
