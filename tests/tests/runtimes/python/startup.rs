//! Python on a busy whole machine: a Python process that starts while the unwind tables of
//! big native binaries are being built is named from its first samples on, and `-- CMD` is
//! named from its first instruction. The churn test (`python_processes_churn`) runs in its
//! own phase: see `robustness/soak.rs`.

use std::{
    io::{BufRead as _, BufReader},
    os::unix::fs::symlink,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use tracekit_tests::{
    parse_folded, require_root, scratch, spawn_tracekit, tracekit, wait_for_stderr, wait_output,
    workspace,
};

const TIMEOUT: Duration = Duration::from_secs(180);

/// The pyenv CPython with a shared `libpython` (the hard case: its interpreter is a library
/// mapped after exec), or the first other found; None with a printed reason.
fn shared_python(test: &str) -> Option<PathBuf> {
    for version in ["3.12.1", "3.11.7", "3.13.0", "3.10.13"] {
        let minor = version.rsplit_once('.').unwrap().0;
        let path = PathBuf::from(format!("/root/.pyenv/versions/{version}/bin/python{minor}"));
        if path.is_file() {
            return Some(path);
        }
    }
    eprintln!("{test}: skipped: no pyenv CPython 3.10-3.13 under /root/.pyenv/versions");
    None
}

/// `python` under the name `comm` (a symlink in `dir`), so that its samples are told from
/// every other Python's on the machine by their first frame.
fn python_named(dir: &Path, python: &Path, comm: &str) -> PathBuf {
    let link = dir.join(comm);
    symlink(python, &link).unwrap();
    link
}

/// Samples of `comm` (the first frame) in its script, with the number that name
/// `outer;middle;leaf` with the hot line, and those that name `leaf`. Samples of the
/// interpreter's own start and end (walked whole, to `_start`, with no Python frame: the
/// dynamic linker, the parser, finalization) are not in the script, and are left out, as
/// `-p` after the fixture's "ready" leaves them out in `python/frames.rs`; a sample walked by frame
/// pointers before the process's tables were published has neither (no `_start`, no Python
/// frame) and counts against the shares.
fn named(folded: &[(String, u64)], comm: &str) -> (u64, u64, u64) {
    let text = std::fs::read_to_string(workspace().join("tests/fixtures/py_chain.py")).unwrap();
    let line = text
        .lines()
        .position(|line| line.contains("the hot line"))
        .unwrap()
        + 1;
    let leaf_at = format!(
        "leaf ({}:{line})",
        workspace().join("tests/fixtures/py_chain.py").display()
    );
    let mut counts = (0, 0, 0);
    for (path, n) in folded {
        if path.split(';').next() != Some(comm) {
            continue;
        }
        if path.contains(";_start;") && !path.contains(".py:") {
            continue;
        }
        counts.0 += n;
        let mut frames = path.split(';');
        if ["outer (", "middle (", leaf_at.as_str()]
            .iter()
            .all(|name| frames.any(|frame| frame.starts_with(name)))
        {
            counts.1 += n;
        }
        if path.contains(";leaf (") {
            counts.2 += n;
        }
    }
    counts
}

/// Busy processes each mapping a copy of `libLLVM` of their own (a new binary of some
/// 150 MB, so a new table to build for each): `llc -O2` compiling a generated module, over
/// and over, until killed. None with a printed reason when LLVM 22 is not installed.
struct NativeLoad {
    shells: Vec<Child>,
    dir: PathBuf,
}

impl NativeLoad {
    fn start(test: &str, dir: &Path, copies: usize) -> Option<Self> {
        let llvm = Path::new("/usr/lib/llvm-22");
        let library = llvm.join("lib/libLLVM.so.22.1");
        if !library.exists() || !llvm.join("bin/llvm-stress").exists() {
            eprintln!("{test}: skipped: LLVM 22 (libLLVM, llc, llvm-stress) is not installed");
            return None;
        }
        let dir = dir.join("llvm");
        std::fs::create_dir_all(&dir).unwrap();
        let module = dir.join("module.ll");
        let status = Command::new(llvm.join("bin/llvm-stress"))
            .args(["-size", "3000", "-seed", "1", "-o"])
            .arg(&module)
            .status()
            .unwrap();
        assert!(status.success(), "llvm-stress failed");
        let mut shells = Vec::new();
        for copy in 0..copies {
            let lib_dir = dir.join(format!("copy{copy}"));
            std::fs::create_dir_all(&lib_dir).unwrap();
            std::fs::copy(&library, lib_dir.join("libLLVM.so.22.1")).unwrap();
            // LD_LIBRARY_PATH is searched before llc's RUNPATH ($ORIGIN/../lib).
            let shell = Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "while :; do {} -O2 {} -o /dev/null || exit 1; done",
                    llvm.join("bin/llc").display(),
                    module.display()
                ))
                .env("LD_LIBRARY_PATH", &lib_dir)
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
            shells.push(shell);
        }
        Some(Self { shells, dir })
    }
}

impl Drop for NativeLoad {
    fn drop(&mut self) {
        for shell in &mut self.shells {
            // The shell's group: the shell and the llc it runs.
            let _ = Command::new("pkill")
                .args(["-P", &shell.id().to_string()])
                .status();
            let _ = shell.kill();
            let _ = shell.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// On a busy machine: `profile -a` while processes run three new 150 MB
/// binaries (copies of libLLVM: seconds of table building each), and a Python process
/// started 2 s into the profile. Its samples name the chain at the usual shares: its
/// tables and its interpreter are published ahead of the native binaries' (which used to
/// take 8-25 s on a development machine, its samples walked by frame pointers meanwhile).
#[test]
fn whole_machine_new_python_named_under_native_load() {
    let test = "whole_machine_new_python_named_under_native_load";
    require_root();
    let Some(python) = shared_python(test) else {
        return;
    };
    let dir = scratch(test);
    let Some(load) = NativeLoad::start(test, &dir, 3) else {
        return;
    };
    let comm = "tk_py_late";
    let python = python_named(&dir, &python, comm);
    let out = dir.join("all.folded");
    let mut profiler = spawn_tracekit([
        "profile",
        "-a",
        "-v",
        "-F",
        "499",
        "-d",
        "12",
        "-o",
        out.to_str().unwrap(),
    ]);
    wait_for_stderr(&mut profiler, "Hit Ctrl-C", TIMEOUT);
    std::thread::sleep(Duration::from_secs(2));
    let started = Instant::now();
    let mut child = Command::new(&python)
        .arg(workspace().join("tests/fixtures/py_chain.py"))
        .arg("6")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    let status = child.wait().unwrap();
    assert!(status.success(), "the fixture failed: {status}");
    eprintln!("{test}: the fixture ran {:?}", started.elapsed());
    let run = wait_output(profiler, TIMEOUT);
    drop(load);
    run.assert_code(0);
    let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
    let (total, whole, leaf) = named(&folded, comm);
    let llc: u64 = folded
        .iter()
        .filter(|(path, _)| path.starts_with("llc;"))
        .map(|(_, n)| n)
        .sum();
    eprintln!(
        "{test}: {comm}: {leaf} of {total} samples name leaf, {whole} the whole chain with the \
         hot line; {llc} samples of llc"
    );
    let others: Vec<&(String, u64)> = folded
        .iter()
        .filter(|(path, _)| path.starts_with(&format!("{comm};")) && !path.contains(";leaf ("))
        .collect();
    eprintln!("{test}: {comm}'s samples without leaf: {others:#?}");
    eprintln!("{}", run.stderr);
    assert!(llc >= 50, "the native load was not sampled: {llc} samples");
    assert!(total >= 100, "only {total} samples of {comm}: {folded:#?}");
    assert!(
        leaf as f64 >= 0.95 * total as f64,
        "{leaf} of {total} samples name leaf (want 95%)"
    );
    assert!(
        whole as f64 >= 0.90 * total as f64,
        "{whole} of {total} samples name the chain (want 90%)"
    );
}

/// `-- CMD` is held at its exec until its tables (and those of the libraries it is about
/// to map: pyenv's `libpython`) are published: a Python command that starts working at
/// once is named from its first samples, where they used to be walked by frame pointers
/// until the tables' thread caught up.
#[test]
fn command_python_named_from_its_start() {
    let test = "command_python_named_from_its_start";
    require_root();
    let Some(python) = shared_python(test) else {
        return;
    };
    let dir = scratch(test);
    let comm = "tk_py_cmd";
    let python = python_named(&dir, &python, comm);
    let out = dir.join("cmd.folded");
    let run = tracekit(
        [
            "profile",
            "-v",
            "-F",
            "499",
            "-o",
            out.to_str().unwrap(),
            "--",
            python.to_str().unwrap(),
            workspace()
                .join("tests/fixtures/py_chain.py")
                .to_str()
                .unwrap(),
            "1",
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    eprintln!("{}", run.stderr);
    let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
    let (total, whole, leaf) = named(&folded, comm);
    eprintln!("{test}: {leaf} of {total} samples name leaf, {whole} the whole chain");
    assert!(total >= 100, "only {total} samples: {folded:#?}");
    // The interpreter's own start (before `outer`) is some 20-60 ms of the second.
    assert!(
        leaf as f64 >= 0.90 * total as f64,
        "{leaf} of {total} samples name leaf (want 90%): {folded:#?}"
    );
    assert!(
        whole as f64 >= 0.85 * total as f64,
        "{whole} of {total} samples name the chain (want 85%): {folded:#?}"
    );
}
