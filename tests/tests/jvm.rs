//! HotSpot (issue 28): a JVM's `libjvm.so` is found and its serviceability tables
//! (`gHotSpotVMStructs`, ...) are read from its memory; `-v` says so. Interpreted Java
//! frames (`-Xint`) are named `Class.method (File.java:LINE)`, under `-p` and `-- CMD`, and
//! for a JVM that exits mid-profile. Compiled (C1/C2) frames of a JVM started with no
//! flags are named the same way, through the code cache and the nmethods' scopes (inlined
//! methods included). `--no-interpreters` reads nothing and keeps native frames. Java is not in the VM image:
//! these tests run on the host only.

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

/// The number before `what` in `text` (`12 code cache frames`), if any.
fn count_before(text: &str, what: &str) -> Option<u64> {
    let before = &text[..text.find(what)?];
    before.split_whitespace().last()?.parse().ok()
}

fn profile(pid: &str, out: &Path, extra: &[&str]) -> tracekit_tests::Output {
    let mut args = vec!["profile", "-v", "-F", "99", "-p", pid, "-d", "6", "-o"];
    args.push(out.to_str().unwrap());
    args.extend_from_slice(extra);
    tracekit(args, TIMEOUT)
}

/// The fixture's chain, outermost first: `main -> outer -> middle -> leaf -> sumCents`
/// (`sumCents` burns the CPU), each caller at the line of its call (javac's
/// `LineNumberTable`, `javap -l`), the leaf at one of its own lines (see [`is_leaf`]).
const CHAIN: [&str; 5] = [
    "Ledger.main (Ledger.java:40)",
    "Ledger.outer (Ledger.java:26)",
    "Ledger.middle (Ledger.java:22)",
    "Ledger.leaf (Ledger.java:16)",
    "Ledger.sumCents (Ledger.java:",
];

/// Whether `frame` is the leaf method at one of its lines, 6 to 10: the line of the bci the
/// interpreter last saved in the frame (the running bci is in a register), so any of them.
fn is_leaf(frame: &str) -> bool {
    frame
        .strip_prefix(CHAIN[4])
        .and_then(|rest| rest.strip_suffix(')'))
        .and_then(|line| line.parse::<u32>().ok())
        .is_some_and(|line| (6..=10).contains(&line))
}

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
    let (leaf, total) = share(&main, |path| path.split(';').any(is_leaf));
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
/// `Ledger.main (Ledger.java:40);...;Ledger.sumCents (Ledger.java:6)`, the callers' lines
/// exact. With `--no-interpreters` nothing is read and the samples keep native frames.
#[test]
fn jvm_interpreted_frames_are_named() {
    let test = "jvm_interpreted_frames_are_named";
    require_root();
    let dir = scratch(test);
    let Some(classes) = compile(test, &dir) else {
        return;
    };
    let mut child = spawn_ledger(&classes, "40");
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

/// `-- CMD`: the JVM is announced when `libjvm.so` is mapped, before it fills its tables
/// and generates its interpreter; it is probed again until it can be read, and the main
/// thread's samples name the chain (the JVM's start, a few samples, names no Java frame).
/// The command exits before the report: the names were read while it ran.
#[test]
fn jvm_interpreted_frames_are_named_under_command() {
    let test = "jvm_interpreted_frames_are_named_under_command";
    require_root();
    let dir = scratch(test);
    let Some(classes) = compile(test, &dir) else {
        return;
    };
    let out = dir.join("cmd.folded");
    let classes = classes.to_str().unwrap();
    let run = tracekit(
        [
            "profile",
            "-v",
            "-F",
            "99",
            "-o",
            out.to_str().unwrap(),
            "--",
            "java",
            "-Xint",
            "-cp",
            classes,
            "Ledger",
            "8",
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    eprintln!("{}", run.stderr);
    assert!(
        run.stderr
            .contains("tracekit: interpreters: HotSpot (interpreted frames) in 1 process;"),
        "{}",
        run.stderr
    );
    check_chain(test, &parse_folded(&std::fs::read_to_string(&out).unwrap()));
}

/// `-p` of a JVM that exits 7 s into a profile asked for 30 s: the profile ends with it,
/// and its Java frames keep their names (read from its memory while it ran; nothing
/// holds a `-p` process at its exit).
#[test]
fn jvm_exiting_mid_profile_keeps_its_names() {
    let test = "jvm_exiting_mid_profile_keeps_its_names";
    require_root();
    let dir = scratch(test);
    let Some(classes) = compile(test, &dir) else {
        return;
    };
    let mut child = spawn_ledger(&classes, "7");
    let pid = child.id().to_string();
    let out = dir.join("exit.folded");
    let mut args = vec!["profile", "-v", "-F", "99", "-p", &pid, "-d", "30", "-o"];
    args.push(out.to_str().unwrap());
    let run = tracekit(args, TIMEOUT);
    let status = child.wait().unwrap();
    run.assert_code(0);
    eprintln!("{}", run.stderr);
    assert!(status.success(), "the JVM failed: {status}");
    check_chain(test, &parse_folded(&std::fs::read_to_string(&out).unwrap()));
}

/// `-p` of a JVM started with no flags (no `-Xint`, no `-XX:+PreserveFramePointer`), warmed
/// for 8 s first so that C2 compiled the chain (its callers inlined or not): compiled frames
/// are found in the code cache, stepped by their frame size, and named from their
/// nmethod's scopes, with the callers' lines exact. `--no-interpreters` names none.
#[test]
fn jvm_compiled_frames_are_named() {
    let test = "jvm_compiled_frames_are_named";
    require_root();
    let dir = scratch(test);
    let Some(classes) = compile(test, &dir) else {
        return;
    };
    let mut java = Command::new("java");
    java.arg("-cp").arg(&classes).args(["Ledger", "40"]);
    let mut child = spawn_ready(java);
    std::thread::sleep(Duration::from_secs(8));
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
    let compiled = count_before(&on.stderr, "code cache frames recorded").unwrap_or(0);
    let interpreted = count_before(&on.stderr, "interpreter frames recorded").unwrap_or(0);
    let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
    let main_samples: u64 = folded
        .iter()
        .filter(|(path, _)| main_thread(path))
        .map(|(_, n)| n)
        .sum();
    // Warmed: the main thread runs compiled code, not the interpreter.
    assert!(
        compiled >= main_samples && interpreted * 10 <= main_samples,
        "{compiled} compiled and {interpreted} interpreted frames in {main_samples} samples"
    );
    check_chain(test, &folded);
    let folded = parse_folded(&std::fs::read_to_string(&off_out).unwrap());
    assert!(
        folded.iter().all(|(path, _)| !path.contains("Ledger.")),
        "{folded:#?}"
    );
}
