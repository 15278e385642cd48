//! `trace` under load: a flood that still stops on time, short commands and exited
//! processes named, stalled and lagging readers, loss reported exactly, a paced loop kept
//! up with, and a lone event printed while the command runs.

use std::{
    io::{BufRead as _, BufReader},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use tracekit_tests::*;

const TIMEOUT: Duration = Duration::from_secs(60);

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

/// Loss counted exactly: a trace pushed past what it can print loses
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

/// No loss at a rate it keeps up with: at a rate a trace keeps up with (5,000 events a
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
