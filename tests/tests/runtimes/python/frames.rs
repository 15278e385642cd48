//! Python functions named in stacks of interpreters started with no flags, for every
//! CPython on the machine (pyenv's 3.8-3.13 and Debian's `python3.11`). A version absent
//! here is skipped with a printed reason.

use std::{
    io::Write as _,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use tracekit_tests::{
    chain_in_order, parse_folded, require_root, scratch, share, spawn_tracekit, tracekit,
    wait_for_stderr, wait_output, workspace,
};

use crate::runtimes::fixture_path;

const TIMEOUT: Duration = Duration::from_secs(120);

/// The line of `py_chain.py`'s hot loop (all of it on one line).
fn hot_line() -> usize {
    let text = std::fs::read_to_string(workspace().join("tests/fixtures/py_chain.py")).unwrap();
    text.lines()
        .position(|line| line.contains("the hot line"))
        .unwrap()
        + 1
}

/// The CPython interpreter of pyenv version `version`, or Debian's for "debian"; `None`,
/// printed as `test`'s skip, when it is not installed.
pub(super) fn python(test: &str, version: &str) -> Option<PathBuf> {
    let path = if version == "debian" {
        PathBuf::from("/usr/bin/python3.11")
    } else {
        PathBuf::from(format!("/root/.pyenv/versions/{version}/bin/python3"))
    };
    if path.is_file() {
        Some(path)
    } else {
        eprintln!("{test}: skipped: {} is not installed here", path.display());
        None
    }
}

/// Starts `python script args`, and waits (bounded by the fixture's own run) for its
/// "ready" line: it has started its work.
fn spawn_ready(python: &Path, script: &str, args: &[&str]) -> Child {
    let mut command = Command::new(python);
    command
        .arg(workspace().join("tests/fixtures").join(script))
        .args(args);
    tracekit_tests::spawn_ready(command)
}

/// Profiles `pid` for `seconds` at 199 Hz into folded stacks, with `extra` flags.
fn profile_pid(dir: &Path, pid: u32, seconds: &str, extra: &[&str]) -> Vec<(String, u64)> {
    let out = dir.join("out.folded");
    let pid = pid.to_string();
    let mut args = vec![
        "profile", "-v", "-F", "199", "-p", &pid, "-d", seconds, "-o",
    ];
    let out_str = out.to_str().unwrap().to_string();
    args.push(&out_str);
    args.extend_from_slice(extra);
    let run = tracekit(&args, TIMEOUT);
    run.assert_code(0);
    eprintln!("{}", run.stderr);
    parse_folded(&std::fs::read_to_string(&out).unwrap())
}

fn python_chain(test: &str, version: &str) {
    require_root();
    let Some(python) = python(test, version) else {
        return;
    };
    let dir = scratch(test);
    // It burns for longer than the profile can need and is killed after it: in a TCG
    // guest on a busy host, attaching took 5.5 s of an 8 s run, the 3 s profile saw
    // the last 1.7 s and its finalization (Py_FinalizeEx, _Exit) was 5% of the samples.
    let mut child = spawn_ready(&python, "py_chain.py", &["60"]);
    let folded = profile_pid(&dir, child.id(), "3", &[]);
    let _ = child.kill();
    let _ = child.wait();
    let line = hot_line();
    let (leaf, total) = share(&folded, |path| path.contains(";leaf ("));
    let chain = [
        "outer (".to_string(),
        "middle (".to_string(),
        format!(
            "leaf ({}:{line})",
            workspace().join("tests/fixtures/py_chain.py").display()
        ),
    ];
    let (whole, _) = share(&folded, |path| chain_in_order(path, &chain));
    eprintln!(
        "{test}: {leaf} of {total} samples name leaf, {whole} the whole chain with line {line}"
    );
    assert!(total >= 50, "only {total} samples: {folded:#?}");
    assert!(
        leaf as f64 >= 0.95 * total as f64,
        "{leaf} of {total} samples name leaf (want 95%): {folded:#?}"
    );
    assert!(
        whole as f64 >= 0.90 * total as f64,
        "{whole} of {total} samples name {chain:?} (want 90%): {folded:#?}"
    );
}

#[test]
fn python_chain_3_8() {
    python_chain("python_chain_3_8", "3.8.18");
}

#[test]
fn python_chain_3_9() {
    python_chain("python_chain_3_9", "3.9.18");
}

#[test]
fn python_chain_3_10() {
    python_chain("python_chain_3_10", "3.10.13");
}

#[test]
fn python_chain_3_11() {
    python_chain("python_chain_3_11", "3.11.7");
}

#[test]
fn python_chain_3_12() {
    python_chain("python_chain_3_12", "3.12.1");
}

#[test]
fn python_chain_3_13() {
    python_chain("python_chain_3_13", "3.13.0");
}

#[test]
fn python_chain_debian_3_11() {
    python_chain("python_chain_debian_3_11", "debian");
}

/// The first CPython of `wanted` installed here, or a printed skip reason.
fn any_python(test: &str, wanted: &[&str]) -> Option<PathBuf> {
    wanted
        .iter()
        .find_map(|version| {
            let path = if *version == "debian" {
                PathBuf::from("/usr/bin/python3.11")
            } else {
                PathBuf::from(format!("/root/.pyenv/versions/{version}/bin/python3"))
            };
            path.is_file().then_some(path)
        })
        .or_else(|| {
            eprintln!("{test}: skipped: none of CPython {wanted:?} is installed here");
            None
        })
}

/// Four threads in four chains: each thread's samples (by its comm) name its own chain,
/// and never another thread's (each thread's state is its own, GIL or not).
#[test]
fn python_threads_each_their_own_chain() {
    let test = "python_threads_each_their_own_chain";
    require_root();
    // One version per frame layout: frame objects, entry frames, owner frames.
    for version in ["3.10.13", "3.11.7", "3.13.0"] {
        let Some(python) = python(test, version) else {
            continue;
        };
        let dir = scratch(&format!("{test}_{version}"));
        let mut child = spawn_ready(&python, "py_threads.py", &["8"]);
        let folded = profile_pid(&dir, child.id(), "3", &[]);
        let _ = child.kill();
        let _ = child.wait();
        for thread in ["a", "b", "c", "d"] {
            let comm = format!("py-{thread}");
            let mine: Vec<(String, u64)> = folded
                .iter()
                .filter(|(path, _)| path.split(';').next() == Some(comm.as_str()))
                .cloned()
                .collect();
            let chain = [
                format!("{thread}_outer ("),
                format!("{thread}_leaf ("),
                "burn (".into(),
            ];
            let (own, total) = share(&mine, |path| chain_in_order(path, &chain));
            let (foreign, _) = share(&mine, |path| {
                ["a", "b", "c", "d"]
                    .iter()
                    .filter(|other| **other != thread)
                    .any(|other| path.contains(&format!(";{other}_leaf (")))
            });
            eprintln!(
                "{test} {version}: {comm}: {own} of {total} samples in its chain, {foreign} in another's"
            );
            assert!(total >= 15, "only {total} samples of {comm}: {folded:#?}");
            assert!(
                own as f64 >= 0.90 * total as f64,
                "{own} of {total} samples of {comm} name {chain:?}: {folded:#?}"
            );
            assert_eq!(
                foreign, 0,
                "{comm} has another thread's frames: {folded:#?}"
            );
        }
    }
}

/// A Python call into a C extension: `compress_loop` (Python) above zlib's own
/// `zlib_compress` above libz's `deflate`, in that order.
#[test]
fn python_calls_into_a_c_extension() {
    let test = "python_calls_into_a_c_extension";
    require_root();
    let Some(python) = any_python(test, &["3.12.1", "3.11.7", "debian", "3.10.13"]) else {
        return;
    };
    let dir = scratch(test);
    let mut child = spawn_ready(&python, "py_zlib.py", &["8"]);
    let folded = profile_pid(&dir, child.id(), "3", &[]);
    let _ = child.kill();
    let _ = child.wait();
    let chain = [
        format!("compress_loop ({}:", fixture_path("py_zlib.py")),
        "zlib_compress".to_string(),
        "deflate".to_string(),
    ];
    let (mixed, total) = share(&folded, |path| chain_in_order(path, &chain));
    eprintln!("{test}: {mixed} of {total} samples name {chain:?}");
    assert!(total >= 50, "only {total} samples: {folded:#?}");
    assert!(
        mixed as f64 >= 0.80 * total as f64,
        "{mixed} of {total} samples name {chain:?}: {folded:#?}"
    );
}

/// A process that exits 1 s into a 5 s profile keeps its Python names: code objects are
/// read when the kernel first records them, not when the stacks are printed.
#[test]
fn python_names_outlive_the_process() {
    let test = "python_names_outlive_the_process";
    require_root();
    let Some(python) = any_python(test, &["3.12.1", "3.11.7", "debian", "3.8.18"]) else {
        return;
    };
    let dir = scratch(test);
    let out = dir.join("out.folded");
    let mut child = Command::new(&python)
        .arg(fixture_path("py_chain.py"))
        .args(["1", "stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let mut profiler = spawn_tracekit([
        "profile",
        "-v",
        "-F",
        "199",
        "-p",
        &pid,
        "-d",
        "5",
        "-o",
        out.to_str().unwrap(),
    ]);
    wait_for_stderr(&mut profiler, "Hit Ctrl-C", TIMEOUT);
    // Start the fixture's second of work now that it is sampled.
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "the fixture failed: {status}");
    let run = wait_output(profiler, TIMEOUT);
    run.assert_code(0);
    let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
    let (leaf, total) = share(&folded, |path| path.contains(";leaf ("));
    let (unknown, _) = share(&folded, |path| {
        path.split(';').any(|frame| frame == "[unknown]")
    });
    eprintln!("{test}: {leaf} of {total} samples name leaf, {unknown} have [unknown] frames");
    assert!(total >= 20, "only {total} samples: {folded:#?}");
    assert!(
        leaf as f64 >= 0.90 * total as f64,
        "{leaf} of {total} samples name leaf after the process exited: {folded:#?}"
    );
}

/// `--no-interpreters`: the eval loop stays a native frame, no Python frame is recorded.
#[test]
fn no_interpreters_keeps_native_frames() {
    let test = "no_interpreters_keeps_native_frames";
    require_root();
    let Some(python) = any_python(test, &["3.11.7", "debian", "3.12.1"]) else {
        return;
    };
    let dir = scratch(test);
    let mut child = spawn_ready(&python, "py_chain.py", &["6"]);
    let folded = profile_pid(&dir, child.id(), "2", &["--no-interpreters"]);
    let _ = child.kill();
    let _ = child.wait();
    let (python_frames, total) = share(&folded, |path| path.contains(" ("));
    let (eval, _) = share(&folded, |path| path.contains("_PyEval_EvalFrameDefault"));
    assert!(total >= 30, "only {total} samples: {folded:#?}");
    assert_eq!(
        python_frames, 0,
        "Python frames with --no-interpreters: {folded:#?}"
    );
    assert!(
        eval as f64 >= 0.90 * total as f64,
        "{eval} of {total} samples have _PyEval_EvalFrameDefault: {folded:#?}"
    );
}

/// Off-CPU stacks of a Python program blocked in `time.sleep` name the Python caller.
#[test]
fn offcpu_names_python_frames() {
    let test = "offcpu_names_python_frames";
    require_root();
    let Some(python) = any_python(test, &["3.11.7", "debian", "3.12.1"]) else {
        return;
    };
    let dir = scratch(test);
    let out = dir.join("offcpu.folded");
    let mut child = spawn_ready(&python, "py_sleep.py", &["8"]);
    let pid = child.id().to_string();
    let run = tracekit(
        [
            "offcpu",
            "-v",
            "-p",
            &pid,
            "-d",
            "2",
            "-o",
            out.to_str().unwrap(),
        ],
        TIMEOUT,
    );
    let _ = child.kill();
    let _ = child.wait();
    run.assert_code(0);
    let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
    let chain = [
        format!("sleepy_outer ({}:", fixture_path("py_sleep.py")),
        "sleepy_leaf (".to_string(),
        "clock_nanosleep".to_string(),
    ];
    let (named, total) = share(&folded, |path| chain_in_order(path, &chain));
    eprintln!("{test}: {named} of {total} us off-CPU name {chain:?}");
    assert!(total > 0, "no off-CPU time: {}", run.stderr);
    assert!(
        named as f64 >= 0.50 * total as f64,
        "{named} of {total} us name {chain:?}: {folded:#?}"
    );
}

/// Whole machine: `profile -a` names a Python fixture's chain beside a native burner, and
/// the burner's stacks are the same with `--no-interpreters` (which names no Python frame).
/// Python's share counts the samples walked whole (to `_start`): before the tables' thread
/// reaches a process (it builds every binary of the machine; a busy development machine has
/// libLLVM and rustc, seconds each in a debug build) its samples have no tables to walk
/// through `libpython`, which keeps no frame pointers.
#[test]
fn whole_machine_python_beside_native() {
    let test = "whole_machine_python_beside_native";
    require_root();
    let Some(python) = any_python(test, &["3.12.1", "3.11.7", "debian", "3.10.13"]) else {
        return;
    };
    let dir = scratch(test);
    let burner_path = tracekit_tests::fixture("tk_burner");
    let mut runs = Vec::new();
    for extra in [&[][..], &["--no-interpreters"][..]] {
        let mut child = spawn_ready(&python, "py_chain.py", &["20"]);
        let mut burner = Command::new(&burner_path)
            .arg("20")
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let out = dir.join(format!("all{}.folded", runs.len()));
        let mut args = vec![
            "profile",
            "-a",
            "-F",
            "99",
            "-d",
            "8",
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let run = tracekit(&args, TIMEOUT);
        let _ = child.kill();
        let _ = child.wait();
        let _ = burner.kill();
        let _ = burner.wait();
        run.assert_code(0);
        runs.push(parse_folded(&std::fs::read_to_string(&out).unwrap()));
    }
    let comm = python.file_name().unwrap().to_str().unwrap().to_string();
    let of = |folded: &[(String, u64)], comm: &str| -> Vec<(String, u64)> {
        folded
            .iter()
            .filter(|(path, _)| path.split(';').next() == Some(comm))
            .cloned()
            .collect()
    };
    let chain = [
        "outer (".to_string(),
        "middle (".to_string(),
        "leaf (".to_string(),
    ];
    let whole: Vec<(String, u64)> = of(&runs[0], &comm)
        .into_iter()
        .filter(|(path, _)| path.contains(";_start;"))
        .collect();
    let (named, total) = share(&whole, |path| chain_in_order(path, &chain));
    let (all, _) = share(&of(&runs[0], &comm), |_| true);
    eprintln!(
        "{test}: {named} of {total} samples of {comm} walked whole name the chain ({all} in all)"
    );
    if total < 20 {
        eprintln!(
            "{test}: Python part skipped: only {total} of {all} samples of {comm} were walked \
             whole; the tables' thread was still building the machine's binaries"
        );
    } else {
        assert!(named as f64 >= 0.90 * total as f64, "{:#?}", runs[0]);
    }
    let (python_frames, _) = share(&runs[1], |path| path.contains(".py:"));
    assert_eq!(
        python_frames, 0,
        "--no-interpreters named Python: {:#?}",
        runs[1]
    );
    for (i, folded) in runs.iter().enumerate() {
        let (chain, total) = share(&of(folded, "tk_burner"), |path| {
            path.ends_with(";main;a;b;leaf")
        });
        eprintln!("{test}: run {i}: {chain} of {total} burner samples end main;a;b;leaf");
        assert!(total >= 30, "only {total} burner samples: {folded:#?}");
        assert!(chain as f64 >= 0.90 * total as f64, "{folded:#?}");
    }
}

/// tracekit and py-spy (`record --format raw`) on the same process give the same chain with
/// the same hot line (py-spy names files by their base name).
#[test]
fn python_same_frames_as_py_spy() {
    let test = "python_same_frames_as_py_spy";
    require_root();
    let Some(spy) = super::py_spy(test) else {
        return;
    };
    let Some(python) = any_python(test, &["debian", "3.12.1", "3.11.7"]) else {
        return;
    };
    let dir = scratch(test);
    let mut child = spawn_ready(&python, "py_chain.py", &["30"]);
    let ours = profile_pid(&dir, child.id(), "3", &[]);
    let theirs_path = dir.join("py-spy.txt");
    let pid = child.id().to_string();
    let mut command = Command::new(&spy);
    command.args([
        "record", "--format", "raw", "-r", "99", "-d", "3", "-p", &pid, "-o",
    ]);
    command.arg(&theirs_path);
    let spy_run = tracekit_tests::run(command, TIMEOUT);
    let _ = child.kill();
    let _ = child.wait();
    spy_run.assert_code(0);
    let theirs = parse_folded(&std::fs::read_to_string(&theirs_path).unwrap());
    let line = hot_line();
    for (who, folded) in [("tracekit", &ours), ("py-spy", &theirs)] {
        let chain = [
            "outer (".to_string(),
            "middle (".to_string(),
            "leaf (".to_string(),
        ];
        let hot = format!("py_chain.py:{line})");
        let (whole, total) = share(folded, |path| {
            chain_in_order(path, &chain) && path.contains(&hot)
        });
        eprintln!("{test}: {who}: {whole} of {total} samples: outer, middle, leaf at line {line}");
        assert!(total >= 30, "{who}: only {total} samples: {folded:#?}");
        assert!(
            whole as f64 >= 0.90 * total as f64,
            "{who}: {whole} of {total}: {folded:#?}"
        );
    }
}

/// pyenv's CPython 3.7 has no layout: its frames stay native, and the run's summary (no
/// `-v`) and the JSON say which runtime, version and process, and why.
#[test]
fn python_3_7_is_said_in_the_summary() {
    let test = "python_3_7_is_said_in_the_summary";
    require_root();
    let python = PathBuf::from("/root/.pyenv/versions/3.7.16/bin/python3.7");
    if !python.is_file() {
        eprintln!(
            "{test}: skipped: {} is not installed here",
            python.display()
        );
        return;
    }
    let dir = scratch(test);
    let mut child = spawn_ready(&python, "py_chain.py", &["60"]);
    let pid = child.id().to_string();
    let folded = dir.join("out.folded");
    let json = dir.join("out.json");
    let run = tracekit(
        [
            "profile",
            "-F",
            "199",
            "-p",
            &pid,
            "-d",
            "2",
            "-o",
            folded.to_str().unwrap(),
            "-o",
            json.to_str().unwrap(),
        ],
        TIMEOUT,
    );
    let _ = child.kill();
    let _ = child.wait();
    run.assert_code(0);
    let folded = parse_folded(&std::fs::read_to_string(&folded).unwrap());
    let (named, total) = share(&folded, |path| {
        path.contains("[python]") || path.contains("leaf (")
    });
    let (native, _) = share(&folded, |path| path.contains(";_PyEval_EvalFrameDefault"));
    eprintln!("{test}: {named} of {total} samples name Python code, {native} keep the eval loop");
    assert!(total >= 50, "only {total} samples: {folded:#?}");
    assert_eq!(named, 0, "{folded:#?}");
    assert!(
        native as f64 >= 0.90 * total as f64,
        "{native} of {total} samples keep _PyEval_EvalFrameDefault: {folded:#?}"
    );
    let reason = "no layout for CPython 3.7 (known: 3.8-3.14)";
    let line = format!("tracekit: python 3.7 (pid {pid}): Python frames not named: {reason}\n");
    assert!(
        run.stderr.contains(&line),
        "want {line:?} in: {}",
        run.stderr
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        json["runtimes_not_named"],
        serde_json::json!([{
            "runtime": "python",
            "version": "3.7",
            "language": "Python",
            "reason": reason,
            "pids": [child.id()],
        }]),
        "{json}"
    );
}
