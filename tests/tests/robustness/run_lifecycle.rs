//! How a run ends: output files written on SIGINT and SIGTERM, intervals that end at the
//! duration, a workload that dies with a killed tracekit, a closed pipe that ends the run,
//! and the commands that work with the least privilege.

use std::{
    io::{BufRead as _, BufReader},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use tracekit_tests::*;

const TIMEOUT: Duration = Duration::from_secs(60);

/// `stat -o FILE` writes the report, also when stopped by SIGINT or SIGTERM.
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

/// `stackcount -i` and `offcpu -i` print one report per interval, the last partial.
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

/// `-i 1 -d 3` prints three reports; with `-i 2 -d 3` the last is labelled 1.0 s.
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

/// The `-- CMD` workload dies with tracekit, also when tracekit is killed.
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

/// `tracekit ... | head -1` exits within 1 s of head, with status 0 and nothing
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

/// With CAP_BPF and CAP_PERFMON and no root, the commands work where the
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
