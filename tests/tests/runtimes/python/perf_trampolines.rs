//! Python 3.12+'s perf trampolines (`-X perf`): each Python function named from the
//! interpreter's perf map.

use std::{
    path::PathBuf,
    process::{Command, Stdio},
    time::Duration,
};

use tracekit_tests::{
    assert_comm_share, ensure_package, parse_folded, require_root, scratch, tracekit, workspace,
};

use crate::runtimes::profile_command;

const TIMEOUT: Duration = Duration::from_secs(120);

/// A Python 3.12+ interpreter built with perf trampolines (`-X perf`): one from pyenv or
/// PATH, else Debian's `python3.12` package (bookworm has none: then a printed skip).
fn python_with_perf_trampolines(test: &str) -> Option<PathBuf> {
    let find = || {
        let mut candidates: Vec<PathBuf> = Vec::new();
        let pyenv = std::env::var_os("PYENV_ROOT")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/root/.pyenv"));
        if let Ok(versions) = std::fs::read_dir(pyenv.join("versions")) {
            let mut dirs: Vec<PathBuf> = versions.filter_map(|e| Some(e.ok()?.path())).collect();
            dirs.sort();
            candidates.extend(dirs.into_iter().rev().map(|d| d.join("bin/python3")));
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        for dir in std::env::split_paths(&path) {
            for name in ["python3.14", "python3.13", "python3.12", "python3"] {
                candidates.push(dir.join(name));
            }
        }
        candidates.into_iter().find(|python| {
            python.is_file()
                && Command::new(python)
                    .args([
                        "-c",
                        "import sys, sysconfig; sys.exit(0 if sys.version_info >= (3, 12) and \
                         sysconfig.get_config_var('PY_HAVE_PERF_TRAMPOLINE') else 1)",
                    ])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|status| status.success())
        })
    };
    if let Some(python) = find() {
        return Some(python);
    }
    if ensure_package(test, "python3.12", || find().is_some()) {
        return find();
    }
    None
}

/// Python 3.12+ `-X perf` runs each Python function through a trampoline it names in its
/// perf map (`py::tk_hot_loop:FILE`). The interpreter is built without frame pointers, so
/// the walk reaches the trampoline only through `.eh_frame` (`--call-graph dwarf`): then
/// 90% of python's samples name the hot function.
#[test]
fn jit_python_perf_trampolines() {
    require_root();
    let test = "jit_python";
    let Some(python) = python_with_perf_trampolines(test) else {
        return;
    };
    let help = tracekit(["profile", "--help"], TIMEOUT);
    if !help.stdout.contains("--call-graph") {
        eprintln!(
            "{test}: skipped: this build's profile has no `--call-graph dwarf` (the DWARF \
             unwinder), which the interpreter's frames need"
        );
        return;
    }
    let dir = scratch(test);
    let fixture = workspace().join("tests/fixtures/tk_hot.py");
    let out = profile_command(
        &dir,
        &["--call-graph", "dwarf"],
        &[
            python.as_os_str(),
            "-X".as_ref(),
            "perf".as_ref(),
            fixture.as_os_str(),
            "3".as_ref(),
        ],
    );
    // comm is the name the interpreter was run by (`python3`, not its link's target).
    let comm: String = python
        .file_name()
        .unwrap()
        .to_string_lossy()
        .chars()
        .take(15)
        .collect();
    let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
    assert_comm_share(&folded, &comm, "py::tk_hot_loop:", 0.90);
}
