//! HotSpot (issue 28), step 1: a JVM's `libjvm.so` is found and its serviceability tables
//! (`gHotSpotVMStructs`, ...) are read from its memory; `-v` says so. Java frames are not
//! unwound yet, so the JVM keeps its native frames, and `--no-interpreters` reads nothing.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command},
    time::Duration,
};

use tracekit_tests::{
    compile_java, installed, parse_folded, require_root, scratch, spawn_ready, tracekit,
};

const TIMEOUT: Duration = Duration::from_secs(120);

/// `Ledger.java` compiled into `dir/classes`; `None` (the test skips, saying why) without
/// `javac`.
fn compile(test: &str, dir: &Path) -> Option<PathBuf> {
    installed(test, "javac", "openjdk-17-jdk-headless").then(|| compile_java(dir, "Ledger.java"))
}

/// `java -Xint Ledger SECONDS`, once it printed "ready".
fn spawn_ledger(classes: &Path, seconds: &str) -> Child {
    let mut java = Command::new("java");
    java.args(["-Xint", "-cp"])
        .arg(classes)
        .args(["Ledger", seconds]);
    spawn_ready(java)
}

fn profile(pid: &str, out: &Path, extra: &[&str]) -> tracekit_tests::Output {
    let mut args = vec!["profile", "-v", "-F", "99", "-p", pid, "-d", "2", "-o"];
    args.push(out.to_str().unwrap());
    args.extend_from_slice(extra);
    tracekit(args, TIMEOUT)
}

/// `-p` of a running JVM: its layout is read (JDK 17 states hundreds of fields) and said
/// under `-v`; its samples keep native frames. With `--no-interpreters` nothing is read.
#[test]
fn jvm_layout_is_read_and_frames_stay_native() {
    let test = "jvm_layout_is_read_and_frames_stay_native";
    require_root();
    let dir = scratch(test);
    let Some(classes) = compile(test, &dir) else {
        return;
    };
    let mut child = spawn_ledger(&classes, "12");
    let pid = child.id().to_string();
    let out = dir.join("on.folded");
    let on = profile(&pid, &out, &[]);
    let off_out = dir.join("off.folded");
    let off = profile(&pid, &off_out, &["--no-interpreters"]);
    let _ = child.kill();
    let _ = child.wait();
    on.assert_code(0);
    off.assert_code(0);
    eprintln!("{}", on.stderr);
    let line = on
        .stderr
        .lines()
        .find(|line| line.contains("native frames for") && line.contains("libjvm.so"))
        .unwrap_or_else(|| panic!("no libjvm.so line under -v: {}", on.stderr));
    assert!(
        line.contains("(HotSpot layout read (")
            && line
                .contains("Method* at rbp-3 words): Java frames are not unwound yet) in 1 process"),
        "{line}"
    );
    let fields: u64 = line
        .split("layout read (")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no field count: {line}"));
    assert!(fields >= 500, "{line}");
    assert!(!off.stderr.contains("HotSpot"), "{}", off.stderr);
    // Samples are taken and keep their native frames (the interpreter's code is in the
    // code cache, which has no symbols; the JVM's own threads name libjvm.so functions).
    let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
    let total: u64 = folded.iter().map(|(_, n)| n).sum();
    assert!(total >= 50, "only {total} samples: {folded:#?}");
    assert!(
        folded.iter().all(|(path, _)| !path.contains("Ledger.")),
        "{folded:#?}"
    );
}
