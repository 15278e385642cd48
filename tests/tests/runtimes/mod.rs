//! Runtimes unwound with no flags: Python, Ruby, PHP, Node.js and Java, one file (or folder)
//! each, their real programs included; and several runtimes on one whole machine.

mod forky;
mod java;
mod matrix;
mod node;
mod php;
mod python;
mod ruby;
mod trixie;
mod unwalked;
mod whole_machine;

use std::{
    ffi::OsStr,
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use tracekit_tests::{
    chain_in_order, parse_folded, run, scratch, share, spawn_ready, tracekit, workspace,
};

const TIMEOUT: Duration = Duration::from_secs(120);

/// The path of script `name` of `tests/fixtures`, as text (as frames name it).
fn fixture_path(name: &str) -> String {
    workspace()
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

/// The line of `name`'s hot loop (all of it on one line, marked "the hot line").
fn hot_line(name: &str) -> usize {
    let text = std::fs::read_to_string(fixture_path(name)).unwrap();
    text.lines()
        .position(|line| line.contains("the hot line"))
        .unwrap()
        + 1
}

/// Profiles `pid` for 3 s at 199 Hz: folded stacks and tracekit's stderr (`-v`).
fn profile_pid(dir: &Path, pid: u32) -> (Vec<(String, u64)>, String) {
    let out = dir.join("out.folded");
    let pid = pid.to_string();
    let run = tracekit(
        [
            "profile",
            "-v",
            "-F",
            "199",
            "-p",
            &pid,
            "-d",
            "3",
            "-o",
            out.to_str().unwrap(),
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    eprintln!("{}", run.stderr);
    (
        parse_folded(&std::fs::read_to_string(&out).unwrap()),
        run.stderr,
    )
}

/// Profiles `command` (a fixture that prints "ready" and burns 8 s) and checks its chain:
/// at least 90% of samples name the leaf, 85% the whole chain with the hot line.
fn check_chain(test: &str, command: Command, script: &str) {
    let dir = scratch(test);
    let mut child = spawn_ready(command);
    let (folded, _) = profile_pid(&dir, child.id());
    let _ = child.kill();
    let _ = child.wait();
    let line = hot_line(script);
    let chain = [
        "outer (".to_string(),
        "middle (".to_string(),
        format!("leaf ({}:{line})", fixture_path(script)),
    ];
    let (leaf, total) = share(&folded, |path| path.contains(";leaf ("));
    let (whole, _) = share(&folded, |path| chain_in_order(path, &chain));
    eprintln!(
        "{test}: {leaf} of {total} samples name leaf, {whole} the whole chain with line {line}"
    );
    assert!(total >= 50, "only {total} samples: {folded:#?}");
    assert!(
        leaf as f64 >= 0.90 * total as f64,
        "{leaf} of {total} samples name leaf (want 90%): {folded:#?}"
    );
    assert!(
        whole as f64 >= 0.85 * total as f64,
        "{whole} of {total} samples name {chain:?} (want 85%): {folded:#?}"
    );
}

fn have(binary: &str) -> bool {
    Path::new(binary).is_file()
}

/// `tracekit profile -F 99 [EXTRA...] -o DIR/profile.folded -- COMMAND...` run in `dir`
/// (JIT runtimes may write logs and jitdumps into their working directory): the folded file.
fn profile_command(dir: &Path, extra: &[&str], command: &[&OsStr]) -> PathBuf {
    let out = dir.join("profile.folded");
    let mut profile = Command::new(tracekit_tests::tracekit_bin());
    profile
        .args(["profile", "-F", "99"])
        .args(extra)
        .arg("-o")
        .arg(&out)
        .arg("--")
        .args(command)
        .current_dir(dir);
    run(profile, TIMEOUT).assert_code(0);
    out
}
