//! Interpreted code unwound in the kernel (issue 27): Python functions named in stacks of
//! interpreters started with no flags, for every CPython on the machine (pyenv's 3.8-3.13
//! and Debian's `python3.11`). A version absent here is skipped with a printed reason.

use std::{
    io::{BufRead as _, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use tracekit_tests::{parse_folded, require_root, scratch, tracekit, workspace};

const TIMEOUT: Duration = Duration::from_secs(120);

/// The line of `py_chain.py`'s hot loop (all of it on one line).
fn hot_line() -> usize {
    let text = std::fs::read_to_string(workspace().join("tests/fixtures/py_chain.py")).unwrap();
    text.lines()
        .position(|line| line.contains("the hot line"))
        .unwrap()
        + 1
}

/// The CPython interpreter of pyenv version `version`, or Debian's for "debian".
fn python(test: &str, version: &str) -> Option<PathBuf> {
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
    let mut child = Command::new(python)
        .arg(workspace().join("tests/fixtures").join(script))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("spawning {}: {err}", python.display()));
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready", "{script} did not start");
    child
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

/// Samples whose stack satisfies `test`, of all.
fn share(folded: &[(String, u64)], test: impl Fn(&str) -> bool) -> (u64, u64) {
    let total = folded.iter().map(|(_, n)| n).sum();
    let hits = folded
        .iter()
        .filter(|(path, _)| test(path))
        .map(|(_, n)| n)
        .sum();
    (hits, total)
}

/// Whether `path` (outermost first) has `names` in this order, each a Python frame.
fn chain_in_order(path: &str, names: &[String]) -> bool {
    let mut frames = path.split(';');
    names
        .iter()
        .all(|name| frames.any(|frame| frame.starts_with(name.as_str())))
}

fn python_chain(test: &str, version: &str) {
    require_root();
    let Some(python) = python(test, version) else {
        return;
    };
    let dir = scratch(test);
    let mut child = spawn_ready(&python, "py_chain.py", &["8"]);
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
