//! HotSpot (issue 28): a JVM's `libjvm.so` is found and its serviceability tables
//! (`gHotSpotVMStructs`, ...) are read from its memory; `-v` says so. Interpreted Java
//! frames (`-Xint`) are named `Class.method` (no lines yet); compiled (C1/C2) frames are
//! not unwound yet. `--no-interpreters` reads nothing and keeps native frames.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command},
    time::Duration,
};

use tracekit_tests::{
    chain_in_order, compile_java, installed, parse_folded, require_root, scratch, share,
    spawn_ready, tracekit,
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

/// The fixture's chain, outermost first: `main -> outer -> middle -> leaf -> sumCents`
/// (`sumCents` burns the CPU).
const CHAIN: [&str; 5] = [
    "Ledger.main",
    "Ledger.outer",
    "Ledger.middle",
    "Ledger.leaf",
    "Ledger.sumCents",
];

/// Samples of the JVM's main Java thread (started by the launcher's `JavaMain`); the JVM's
/// own threads (GC, compiler, VM thread) are the others.
fn main_thread(path: &str) -> bool {
    path.contains(";JavaMain;")
}

/// Asserts that of the main thread's samples in `folded`, 90% name the leaf method
/// (`Ledger.sumCents`) and 85% hold the whole chain in order, and that no other thread
/// has a Java frame.
fn check_chain(test: &str, folded: &[(String, u64)]) {
    let main: Vec<(String, u64)> = folded
        .iter()
        .filter(|(path, _)| main_thread(path))
        .cloned()
        .collect();
    let (leaf, total) = share(&main, |path| path.split(';').any(|f| f == CHAIN[4]));
    let (whole, _) = share(&main, |path| chain_in_order(path, &CHAIN));
    eprintln!("{test}: of {total} main-thread samples, {leaf} name the leaf, {whole} the chain");
    assert!(total >= 50, "only {total} main-thread samples: {folded:#?}");
    assert!(
        leaf as f64 >= 0.90 * total as f64,
        "{leaf} of {total}: {folded:#?}"
    );
    assert!(
        whole as f64 >= 0.85 * total as f64,
        "{whole} of {total}: {folded:#?}"
    );
    let others = folded
        .iter()
        .filter(|(path, _)| !main_thread(path) && path.contains("Ledger."))
        .count();
    assert_eq!(
        others, 0,
        "Java frames outside the main thread: {folded:#?}"
    );
}

/// `-p` of a running JVM under `-Xint`: its layout is read (JDK 17 states hundreds of
/// fields) and said under `-v`, and the main thread's samples name the interpreted chain
/// `Ledger.main;Ledger.outer;Ledger.middle;Ledger.leaf;Ledger.sumCents`. With
/// `--no-interpreters` nothing is read and the samples keep native frames.
#[test]
fn jvm_interpreted_frames_are_named() {
    let test = "jvm_interpreted_frames_are_named";
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
    assert!(
        on.stderr
            .contains("tracekit: interpreters: HotSpot (interpreted frames) in 1 process;"),
        "{}",
        on.stderr
    );
    assert!(!off.stderr.contains("HotSpot"), "{}", off.stderr);
    check_chain(test, &parse_folded(&std::fs::read_to_string(&out).unwrap()));
    // Without the unwinders, samples are taken and keep their native frames (the
    // interpreter's code is in the code cache, which has no symbols).
    let folded = parse_folded(&std::fs::read_to_string(&off_out).unwrap());
    let total: u64 = folded.iter().map(|(_, n)| n).sum();
    assert!(total >= 50, "only {total} samples: {folded:#?}");
    assert!(
        folded.iter().all(|(path, _)| !path.contains("Ledger.")),
        "{folded:#?}"
    );
}
