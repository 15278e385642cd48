//! `tracekit profile` against fixtures with known call chains.

use std::{
    collections::HashSet,
    time::{Duration, Instant},
};

use tracekit_tests::{
    cgroup2_root, fixture, ids_held_by, kill, parse_folded, programs_held_by, require_root, run,
    scratch, spawn_fixture, spawn_tracekit, tracekit, tracekit_bin, wait_for_stderr, wait_output,
    wait_unloaded,
};

const TIMEOUT: Duration = Duration::from_secs(60);

/// Sum of counts of folded lines whose comm (first frame) is `comm`.
fn samples_of(folded: &[(String, u64)], comm: &str) -> u64 {
    folded
        .iter()
        .filter(|(path, _)| path.split(';').next() == Some(comm))
        .map(|(_, count)| count)
        .sum()
}

/// `-- FIXTURE` with a known chain main -> a -> b -> leaf burning ~3 s.
#[test]
fn profile_command_known_call_chain_and_rate() {
    require_root();
    let dir = scratch("profile_command_known_call_chain_and_rate");
    let out = dir.join("out.folded");
    let burner = fixture("tk_burner");
    let run = tracekit(
        ["profile", "-F", "99", "-o"]
            .iter()
            .map(|s| s.as_ref())
            .chain([
                out.as_os_str(),
                "--".as_ref(),
                burner.as_os_str(),
                "3".as_ref(),
            ]),
        TIMEOUT,
    );
    run.assert_code(0);
    let cpu_seconds: f64 = run
        .stdout
        .lines()
        .find_map(|line| line.strip_prefix("cpu_seconds="))
        .expect("the fixture prints its CPU time")
        .parse()
        .unwrap();

    let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
    let total = samples_of(&folded, "tk_burner");
    let chain: u64 = folded
        .iter()
        .filter(|(path, _)| path.starts_with("tk_burner;") && path.ends_with(";main;a;b;leaf"))
        .map(|(_, count)| count)
        .sum();
    assert!(
        chain as f64 >= 0.9 * total as f64,
        "only {chain} of {total} samples end in main;a;b;leaf: {folded:#?}"
    );
    let expected = 99.0 * cpu_seconds;
    assert!(
        (total as f64 - expected).abs() <= 0.2 * expected,
        "{total} samples for {cpu_seconds:.3} s of CPU at 99 Hz (expected {expected:.0} ± 20%)"
    );
    assert!(run.stderr.contains("Lost: nothing."), "{}", run.stderr);
}

/// `-a -d 2` sees two different fixtures, and the syscall-heavy one has
/// resolved kernel frames under its user frames.
#[test]
fn profile_all_sees_both_fixtures_with_kernel_frames() {
    require_root();
    let dir = scratch("profile_all_sees_both_fixtures_with_kernel_frames");
    let out = dir.join("all.folded");
    let mut burner = spawn_fixture("tk_burner", &["4"]);
    let mut syscalls = spawn_fixture("tk_syscalls", &["--seconds", "4"]);
    std::thread::sleep(Duration::from_millis(200));
    let run = tracekit(
        ["profile", "-a", "-d", "2", "-o", out.to_str().unwrap()],
        TIMEOUT,
    );
    let _ = (burner.wait(), syscalls.wait());
    run.assert_code(0);
    let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());

    assert!(
        folded
            .iter()
            .any(|(path, _)| path.starts_with("tk_burner;") && path.ends_with(";main;a;b;leaf")),
        "no resolved tk_burner stack: {folded:#?}"
    );
    let kernel_under_user: u64 = folded
        .iter()
        .filter(|(path, _)| {
            let frames: Vec<&str> = path.split(';').collect();
            let Some(user) = frames.iter().position(|f| *f == "syscall_loop") else {
                return false;
            };
            frames[0] == "tk_syscalls"
                && frames[..user].contains(&"main")
                && frames[user + 1..]
                    .iter()
                    .any(|f| f.ends_with("_[k]") && !f.starts_with('['))
        })
        .map(|(_, count)| count)
        .sum();
    assert!(
        kernel_under_user > 0,
        "no resolved kernel frames under tk_syscalls' syscall_loop: {folded:#?}"
    );
}

/// `-p PID` output holds only that process, checked in JSON.
#[test]
fn profile_pid_only_that_process() {
    require_root();
    let mut burner = spawn_fixture("tk_burner", &["3"]);
    let mut other = spawn_fixture("tk_syscalls", &["--seconds", "3"]);
    std::thread::sleep(Duration::from_millis(100));
    let pid = burner.id();
    let run = tracekit(
        ["profile", "-p", &pid.to_string(), "-d", "1.5", "--json"],
        TIMEOUT,
    );
    let _ = (burner.wait(), other.wait());
    run.assert_code(0);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON on stdout");
    let stacks = json["stacks"].as_array().unwrap();
    let samples: u64 = stacks.iter().map(|s| s["count"].as_u64().unwrap()).sum();
    // 148 if the burner had a CPU throughout; it shares 2 CPUs with tk_syscalls (also busy)
    // and tracekit's own start, so ask for a third of that: enough to show it was sampled.
    assert!(
        samples >= 50,
        "{samples} samples of a busy process in 1.5 s at 99 Hz"
    );
    let pids: HashSet<u64> = stacks.iter().map(|s| s["pid"].as_u64().unwrap()).collect();
    assert_eq!(pids, HashSet::from([u64::from(pid)]), "{json:#}");
    assert_eq!(json["samples"].as_u64(), Some(samples));
    let leaf_frames = stacks
        .iter()
        .filter(|s| s["frames"].as_array().unwrap().last().unwrap()["symbol"] == "leaf")
        .count();
    assert!(leaf_frames > 0, "{json:#}");
}

/// A relative `-o` path is relative to the directory tracekit was started in, for the
/// profiler and for the engine (both load their programs from a private mount namespace and
/// come back; setns(2) moves the working directory to `/`).
#[test]
fn profile_relative_output_lands_in_the_working_directory() {
    require_root();
    let dir = scratch("profile_relative_output");
    let burner = fixture("tk_burner");
    let syscalls = fixture("tk_syscalls");
    let cases = [
        (
            "cpu.folded",
            vec![
                "profile",
                "-o",
                "cpu.folded",
                "--",
                burner.to_str().unwrap(),
                "0.3",
            ],
        ),
        (
            "calls.folded",
            vec![
                "stackcount",
                "syscalls:sys_enter_getppid",
                "-o",
                "calls.folded",
                "--",
                syscalls.to_str().unwrap(),
                "100",
            ],
        ),
        (
            "count.json",
            vec![
                "count",
                "syscalls:sys_enter_getppid",
                "-o",
                "count.json",
                "--",
                syscalls.to_str().unwrap(),
                "100",
            ],
        ),
    ];
    for (file, args) in cases {
        let mut command = std::process::Command::new(tracekit_bin());
        command.args(&args).current_dir(&dir);
        run(command, TIMEOUT).assert_code(0);
        assert!(
            dir.join(file).is_file(),
            "{args:?} did not write {file} in {}",
            dir.display()
        );
    }
}

/// `-o x.svg` is well-formed SVG naming the fixture's functions.
#[test]
fn profile_svg_is_well_formed_with_function_names() {
    require_root();
    let dir = scratch("profile_svg_is_well_formed_with_function_names");
    let svg_path = dir.join("x.svg");
    let burner = fixture("tk_burner");
    let run = tracekit(
        [
            "profile".as_ref(),
            "-o".as_ref(),
            svg_path.as_os_str(),
            "--".as_ref(),
            burner.as_os_str(),
            "1.5".as_ref(),
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let document = roxmltree::Document::parse_with_options(&svg, options).expect("well-formed XML");
    assert_eq!(document.root_element().tag_name().name(), "svg");
    let titles: Vec<&str> = document
        .descendants()
        .filter(|node| node.tag_name().name() == "title")
        .filter_map(|node| node.text())
        .collect();
    for function in ["main", "a", "b", "leaf"] {
        assert!(
            titles
                .iter()
                .any(|title| title.starts_with(&format!("{function} ("))),
            "no frame titled {function}: {titles:?}"
        );
    }
    assert!(
        svg.contains("tracekit profile"),
        "the flame graph has a title"
    );
}

/// SIGINT during `-a` without `-d` exits 0, writes the output, and leaves no
/// program or link of tracekit's behind.
#[test]
fn profile_sigint_writes_output_and_detaches() {
    require_root();
    let dir = scratch("profile_sigint_writes_output_and_detaches");
    let out = dir.join("sigint.folded");

    let mut burner = spawn_fixture("tk_burner", &["3"]);
    let mut child = spawn_tracekit(["profile", "-a", "-o", out.to_str().unwrap()]);
    wait_for_stderr(&mut child, "Hit Ctrl-C to end.", TIMEOUT);
    // This tracekit's own programs and links (another tracekit on the machine loads
    // programs of the same names).
    let programs = programs_held_by(child.id());
    assert!(
        !programs.is_empty(),
        "tracekit's programs are not loaded while it runs"
    );
    let links = ids_held_by(child.id(), "link_id:");
    // Samples to write.
    std::thread::sleep(Duration::from_millis(800));
    kill(child.id(), libc::SIGINT);
    let run = wait_output(child, TIMEOUT);
    let _ = burner.wait();
    run.assert_code(0);

    let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
    assert!(
        samples_of(&folded, "tk_burner") > 0,
        "nothing written on SIGINT: {folded:?}"
    );
    // Freed by the kernel after tracekit's exit (deferred work): polled.
    wait_unloaded(&programs, &links);
}

/// A process that burns 1 s and exits during `-a -d 3` keeps its names.
#[test]
fn profile_exited_process_keeps_names() {
    require_root();
    let dir = scratch("profile_exited_process_keeps_names");
    let out = dir.join("exited.folded");
    let mut child = spawn_tracekit(["profile", "-a", "-d", "3", "-o", out.to_str().unwrap()]);
    wait_for_stderr(&mut child, "Hit Ctrl-C to end.", TIMEOUT);
    let started = Instant::now();
    let status = spawn_fixture("tk_burner", &["1"]).wait().unwrap();
    assert!(status.success());
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "fixture ended before the profile"
    );
    let run = wait_output(child, TIMEOUT);
    run.assert_code(0);
    let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
    let total = samples_of(&folded, "tk_burner");
    let named: u64 = folded
        .iter()
        .filter(|(path, _)| path.starts_with("tk_burner;") && path.ends_with(";main;a;b;leaf"))
        .map(|(_, count)| count)
        .sum();
    assert!(total >= 50, "{total} samples of a 1 s burner: {folded:#?}");
    assert!(
        named as f64 >= 0.9 * total as f64,
        "{named} of {total} samples resolved after exit: {folded:#?}"
    );
}

/// Bad input is one line on stderr with exit 2 (usage) or 1 (runtime).
#[test]
fn profile_bad_input_one_line_errors() {
    require_root();
    let missing_pid = (4_000_000..4_100_000)
        .find(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
        .unwrap()
        .to_string();
    let cases: [(&[&str], i32, &str); 6] = [
        (&["profile", "-F", "0"], 2, "-F 0"),
        (
            &["profile", "-F", "100000000"],
            2,
            "perf_event_max_sample_rate",
        ),
        (&["profile", "-p", &missing_pid], 2, "no such process"),
        (&["profile", "-o", "x.png", "-d", "1"], 2, ".png"),
        (&["profile", "--", "/no/such/binary"], 2, "/no/such/binary"),
        (&["profile", "-d", "seven"], 2, "seconds"),
    ];
    for (args, code, needle) in cases {
        let run = tracekit(args, TIMEOUT);
        assert_eq!(run.code(), code, "{args:?}: {run:#?}");
        assert_one_line_error(&run.stderr, needle, args);
    }
}

/// Without CAP_BPF/CAP_PERFMON, one line naming them, exit 1.
#[test]
fn profile_without_privileges_names_them() {
    require_root();
    let mut command = std::process::Command::new("setpriv");
    command
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(tracekit_tests::tracekit_bin())
        .args(["profile", "-d", "1"]);
    let run = tracekit_tests::run(command, TIMEOUT);
    assert_eq!(run.code(), 1, "{run:#?}");
    assert_one_line_error(
        &run.stderr,
        "CAP_BPF and CAP_PERFMON",
        &["setpriv", "profile"],
    );
}

fn assert_one_line_error(stderr: &str, needle: &str, args: &[&str]) {
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: not one line: {stderr}");
    assert!(lines[0].starts_with("tracekit: "), "{args:?}: {stderr}");
    assert!(
        lines[0].contains(needle),
        "{args:?}: no {needle:?} in {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
}

/// `profile --by cgroup` counts samples by the sampled thread's cgroup in the
/// kernel, and shows its path as the root frame of folded stacks and in JSON. The burner
/// runs in a cgroup made for the test, moved there before it execs.
#[test]
fn profile_by_cgroup_roots_stacks_at_the_cgroup() {
    require_root();
    let Some(root) = cgroup2_root() else {
        eprintln!("skipped: no cgroup2 filesystem mounted");
        return;
    };
    let name = format!("tracekit-test-{}", std::process::id());
    let cgroup = root.join(&name);
    std::fs::create_dir_all(&cgroup).expect("creating a cgroup");
    let dir = scratch("profile_by_cgroup_roots_stacks_at_the_cgroup");
    let out = dir.join("out.folded");
    let burner = fixture("tk_burner");
    let script = format!(
        "echo $$ > {}/cgroup.procs && exec {} 1",
        cgroup.display(),
        burner.display()
    );
    let run = tracekit(
        [
            "profile",
            "--by",
            "cgroup",
            "-F",
            "199",
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
    let _ = std::fs::remove_dir(&cgroup);
    run.assert_code(0);
    let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
    let path = format!("/{name}");
    // Every stack starts with a cgroup path, then the comm: the burner's with its own.
    let mut burner_samples = 0;
    for (stack, count) in &folded {
        let mut frames = stack.split(';');
        let (cgroup, comm) = (frames.next().unwrap(), frames.next().unwrap_or(""));
        assert!(cgroup.starts_with('/'), "{stack}");
        if comm == "tk_burner" {
            assert_eq!(cgroup, path, "{stack}");
            burner_samples += count;
        }
    }
    // The burner's stdout (its CPU time) is beside tracekit's JSON line.
    let cpu_seconds: f64 = run
        .stdout
        .lines()
        .find_map(|line| line.strip_prefix("cpu_seconds="))
        .expect("the fixture prints its CPU time")
        .parse()
        .unwrap();
    let expected = 199.0 * cpu_seconds;
    assert!(
        (burner_samples as f64 - expected).abs() <= 0.2 * expected,
        "{burner_samples} samples for {cpu_seconds:.3} s of CPU at 199 Hz: {folded:?}"
    );
    let json_line = run
        .stdout
        .lines()
        .find(|l| l.starts_with('{'))
        .expect("JSON");
    let json = tracekit_tests::parse_json(json_line);
    let stacks = json["stacks"].as_array().expect("stacks");
    let in_json: u64 = stacks
        .iter()
        .filter(|s| s["comm"] == "tk_burner")
        .inspect(|s| assert_eq!(s["cgroup"], path.as_str(), "{s}"))
        .map(|s| s["count"].as_u64().unwrap())
        .sum();
    assert_eq!(in_json, burner_samples);
}
