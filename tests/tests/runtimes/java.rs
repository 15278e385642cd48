//! HotSpot: a JVM's `libjvm.so` is found and its serviceability tables
//! (`gHotSpotVMStructs`, ...) are read from its memory; `-v` says so. Interpreted Java
//! frames (`-Xint`) are named `Class.method (File.java:LINE)`, under `-p` and `-- CMD`, and
//! for a JVM that exits mid-profile. Compiled (C1/C2) frames of a JVM started with no
//! flags are named the same way, through the code cache and the nmethods' scopes (inlined
//! methods included). `--no-interpreters` reads nothing and keeps native frames. A JVM with
//! frame pointers and a perf map is named from the map. The arm64 VM image holds Debian's
//! arm64 OpenJDK 17 and `Ledger`'s classes: the tests of `Ledger` run there too (no
//! `javac`: the others skip).

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::{Child, Command},
    time::Duration,
};

use tracekit_tests::{
    assert_comm_share, assert_share, chain_in_order, compile_java, installed, java_classes,
    parse_folded, require_root, scratch, share, spawn_ready, spawn_tracekit, tracekit, wait_output,
};

const TIMEOUT: Duration = Duration::from_secs(120);

/// `Ledger.java` compiled ([`java_classes`]: into `dir/classes`, or the VM image's);
/// `None` (the test skips, saying why) without `javac` (in the VM, `java`).
fn compile(test: &str, dir: &Path) -> Option<PathBuf> {
    java_classes(test, dir, "Ledger.java")
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
pub(super) const CHAIN: [&str; 5] = [
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
pub(super) fn main_thread(path: &str) -> bool {
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

/// A running JVM profiled twice for 6 s at 99 Hz, as the unwinder tests do: with the
/// runtime unwinders (`-v`) and with `--no-interpreters`. Stops `child` after both, checks
/// that both exited 0 and that the second read nothing of the JVM (its `-v` says nothing of
/// HotSpot; at least 50 samples, none with a Java frame: the interpreter's and the compiled
/// code are in the code cache, which has no symbols). Returns the first run's stderr and
/// folded profile.
fn profile_on_and_off(dir: &Path, mut child: Child) -> (String, Vec<(String, u64)>) {
    let pid = child.id().to_string();
    let (on_out, off_out) = (dir.join("on.folded"), dir.join("off.folded"));
    let on = profile(&pid, &on_out, &[]);
    let off = profile(&pid, &off_out, &["--no-interpreters"]);
    let _ = child.kill();
    let _ = child.wait();
    on.assert_code(0);
    off.assert_code(0);
    eprintln!("{}", on.stderr);
    assert!(!off.stderr.contains("HotSpot"), "{}", off.stderr);
    let off = parse_folded(&std::fs::read_to_string(&off_out).unwrap());
    let total: u64 = off.iter().map(|(_, n)| n).sum();
    assert!(total >= 50, "only {total} samples: {off:#?}");
    assert!(
        off.iter().all(|(path, _)| !path.contains("Ledger.")),
        "{off:#?}"
    );
    let on_folded = parse_folded(&std::fs::read_to_string(&on_out).unwrap());
    (on.stderr, on_folded)
}

/// Asserts that a warmed JVM's main thread ran compiled code: `-v`'s count of code cache
/// frames is at least the main thread's samples, and interpreter frames at most a tenth.
fn assert_compiled(stderr: &str, folded: &[(String, u64)]) {
    let compiled = count_before(stderr, "code cache frames recorded").unwrap_or(0);
    let interpreted = count_before(stderr, "interpreter frames recorded").unwrap_or(0);
    let main_samples: u64 = folded
        .iter()
        .filter(|(path, _)| main_thread(path))
        .map(|(_, n)| n)
        .sum();
    assert!(
        compiled >= main_samples && interpreted * 10 <= main_samples,
        "{compiled} compiled and {interpreted} interpreted frames in {main_samples} samples"
    );
}

/// `java [flags] -cp classes Ledger 120` with no `-Xint`, once it printed "ready" and ran
/// 8 s more (the JIT compiled the chain). Stopped by the test: 120 s outlasts two
/// profiles in the arm64 VM, where each attach takes 16 s.
fn spawn_warmed(classes: &Path, flags: &[&str]) -> Child {
    let mut java = Command::new("java");
    java.args(flags)
        .arg("-cp")
        .arg(classes)
        .args(["Ledger", "120"]);
    let child = spawn_ready(java);
    std::thread::sleep(Duration::from_secs(8));
    child
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
    let (stderr, folded) = profile_on_and_off(&dir, spawn_ledger(&classes, "40"));
    assert!(
        stderr.contains("tracekit: interpreters: HotSpot (interpreted frames) in 1 process;"),
        "{stderr}"
    );
    check_chain(test, &folded);
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
    let (stderr, folded) = profile_on_and_off(&dir, spawn_warmed(&classes, &[]));
    assert_compiled(&stderr, &folded);
    check_chain(test, &folded);
}

/// The same with C1 alone (`-XX:TieredStopAtLevel=1`, the client compiler: its frames keep
/// their own layout, with rbp saved at the frame's top as C2's): the chain is named from
/// C1's nmethods.
#[test]
fn jvm_c1_frames_are_named() {
    let test = "jvm_c1_frames_are_named";
    require_root();
    let dir = scratch(test);
    let Some(classes) = compile(test, &dir) else {
        return;
    };
    let child = spawn_warmed(&classes, &["-XX:TieredStopAtLevel=1"]);
    let (stderr, folded) = profile_on_and_off(&dir, child);
    assert_compiled(&stderr, &folded);
    check_chain(test, &folded);
}

/// The method of the innermost `Ledger.` frame of folded `path` (`Ledger.sumCents`), named
/// by HotSpot's tables (`Ledger.sumCents (Ledger.java:8)`) or by a perf map (`long
/// Ledger.sumCents(long[], long)`, a suffix or not); `None` without one.
fn innermost_ledger(path: &str) -> Option<String> {
    path.split(';').rev().find_map(|frame| {
        let at = frame.find("Ledger.")?;
        let name: String = frame[at..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '$'))
            .collect();
        (name.len() > "Ledger.".len()).then_some(name)
    })
}

/// The old recipe: a JVM with `-XX:+PreserveFramePointer`, its
/// chain compiled (kept five frames by `dontinline`), its perf map written by `jcmd PID
/// Compiler.perfmap` once warm, profiled at the same time by two tracekits: one naming the
/// frames from HotSpot's own tables, the other (`--no-interpreters`) from
/// `/tmp/perf-PID.map`. The innermost Java method of the main thread's samples agrees for
/// at least 95% of them (the overlap of the two distributions: the samples are not the same
/// ones).
#[test]
fn jvm_names_agree_with_its_perf_map() {
    let test = "jvm_names_agree_with_its_perf_map";
    require_root();
    let dir = scratch(test);
    let Some(classes) = compile(test, &dir) else {
        return;
    };
    let flags = [
        "-XX:+PreserveFramePointer",
        "-XX:CompileCommand=quiet",
        "-XX:CompileCommand=dontinline,Ledger::*",
    ];
    let mut child = spawn_warmed(&classes, &flags);
    let pid = child.id().to_string();
    let map = format!("/tmp/perf-{pid}.map");
    let mut jcmd = Command::new("jcmd");
    jcmd.args([pid.as_str(), "Compiler.perfmap"]);
    tracekit_tests::run(jcmd, TIMEOUT).assert_code(0);
    assert!(Path::new(&map).is_file(), "jcmd wrote no {map}");
    let (ours, theirs) = (dir.join("hotspot.folded"), dir.join("map.folded"));
    let start = |extra: &[&str], out: &Path| {
        let mut args = vec!["profile", "-F", "499", "-p", &pid, "-d", "4"];
        args.extend_from_slice(extra);
        args.extend(["-o", out.to_str().unwrap()]);
        spawn_tracekit(args)
    };
    let hotspot = start(&[], &ours);
    let perf_map = start(&["--no-interpreters"], &theirs);
    let (hotspot, perf_map) = (
        wait_output(hotspot, TIMEOUT),
        wait_output(perf_map, TIMEOUT),
    );
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_file(&map);
    hotspot.assert_code(0);
    perf_map.assert_code(0);
    let shares = |out: &Path| {
        let folded = parse_folded(&std::fs::read_to_string(out).unwrap());
        let main: Vec<_> = folded
            .into_iter()
            .filter(|(path, _)| main_thread(path))
            .collect();
        let total: u64 = main.iter().map(|(_, n)| n).sum();
        let mut by_name = BTreeMap::<Option<String>, f64>::new();
        for (path, n) in &main {
            *by_name.entry(innermost_ledger(path)).or_default() += *n as f64 / total as f64;
        }
        (total, by_name, main)
    };
    let (ours_total, ours_names, _) = shares(&ours);
    let (map_total, map_names, map_folded) = shares(&theirs);
    eprintln!(
        "{test}: HotSpot {ours_total} samples {ours_names:?}; perf map {map_total} samples {map_names:?}"
    );
    assert!(ours_total >= 100 && map_total >= 100, "too few samples");
    // The perf map names the compiled leaf.
    assert!(
        map_names
            .get(&Some("Ledger.sumCents".into()))
            .copied()
            .unwrap_or(0.0)
            >= 0.5,
        "the perf map named no leaf: {map_folded:#?}"
    );
    let agree: f64 = ours_names
        .iter()
        .map(|(name, share)| share.min(map_names.get(name).copied().unwrap_or(0.0)))
        .sum();
    assert!(
        agree >= 0.95,
        "HotSpot's names and the perf map's agree for {:.1}% of samples (want 95%)",
        agree * 100.0
    );
}

/// `JBlock.java` compiled and started as `java -cp classes JBlock MODE 40` (`sleep` or
/// `stat`), once it printed "ready"; `None` (the test skips, saying why) without `javac`.
fn spawn_block(test: &str, mode: &str) -> Option<Child> {
    if !installed(test, "javac", "openjdk-17-jdk-headless") {
        return None;
    }
    let classes = compile_java(&scratch(test), "JBlock.java");
    let mut java = Command::new("java");
    java.arg("-cp").arg(classes).args(["JBlock", mode, "40"]);
    Some(spawn_ready(java))
}

/// Runs `tracekit ARGS -o OUT.folded` with `-p` of `child`, then stops `child`; the run's
/// folded stacks.
fn folded_of(test: &str, mut child: Child, args: &[&str]) -> Vec<(String, u64)> {
    let pid = child.id().to_string();
    let out = scratch(test).join("out.folded");
    let mut args = args.to_vec();
    args.extend(["-p", &pid, "-o", out.to_str().unwrap()]);
    let run = tracekit(args, TIMEOUT);
    let _ = child.kill();
    let _ = child.wait();
    run.assert_code(0);
    parse_folded(&std::fs::read_to_string(&out).unwrap())
}

/// `offcpu -p` of a JVM whose main thread sleeps 1 ms at a time (`Thread.sleep`, a futex
/// wait inside `JVM_Sleep`): the main thread's time blocked is named from the Java callers
/// down to the JVM's native code. (The JVM's own threads block too, with no Java frame.)
#[test]
fn jvm_offcpu_names_java_frames() {
    let test = "jvm_offcpu_names_java_frames";
    require_root();
    let Some(child) = spawn_block(test, "sleep") else {
        return;
    };
    let folded = folded_of(test, child, &["offcpu", "-d", "3"]);
    let main: Vec<_> = folded
        .iter()
        .filter(|(path, _)| main_thread(path))
        .cloned()
        .collect();
    let chain = [
        "JBlock.blockOuter (JBlock.java:",
        "JBlock.blockLeaf (JBlock.java:",
        "JVM_Sleep",
    ];
    let named = share(&main, |path| chain_in_order(path, &chain));
    let what = format!("us of the main thread off CPU name {chain:?}");
    assert_share(test, &what, named, (1, 0.85), &folded);
}

/// `stackcount -p` of the `newfstatat` calls a JVM makes from Java (`File.exists` ->
/// libjava's `getBooleanAttributes0` -> `stat`): the counts name the Java callers above
/// the JNI function. (Not all: calls made in the first ~0.1 s after the attach, before
/// the process's unwind tables are in the kernel, are walked by frame pointer and end
/// `fstatat64;[unknown];[unknown]` or skip the JNI function's frame: 3% to 17% of a 3 s
/// run's calls by the machine's load; `trace -U` showed none after the first 0.1 s.)
#[test]
fn jvm_stackcount_names_java_frames() {
    let test = "jvm_stackcount_names_java_frames";
    require_root();
    let Some(child) = spawn_block(test, "stat") else {
        return;
    };
    let args = ["stackcount", "-d", "3", "syscalls:sys_enter_newfstatat"];
    let folded = folded_of(test, child, &args);
    let chain = [
        "JBlock.blockOuter (JBlock.java:",
        "JBlock.blockLeaf (JBlock.java:",
        "Java_java_io_UnixFileSystem_getBooleanAttributes0",
    ];
    let named = share(&folded, |path| chain_in_order(path, &chain));
    let what = format!("newfstatat calls name {chain:?}");
    assert_share(test, &what, named, (1000, 0.75), &folded);
}

/// `trace -U -p`: each printed event's user stack names the Java caller, as stackcount's
/// do. Events the ring buffer could not hold are reported, not printed.
#[test]
fn jvm_trace_user_stacks_name_java_frames() {
    let test = "jvm_trace_user_stacks_name_java_frames";
    require_root();
    let Some(mut child) = spawn_block(test, "stat") else {
        return;
    };
    let pid = child.id().to_string();
    let event = "syscalls:sys_enter_newfstatat";
    let run = tracekit(["trace", "-U", "-p", &pid, "-d", "2", event], TIMEOUT);
    let _ = child.kill();
    let _ = child.wait();
    run.assert_code(0);
    let outer = "JBlock.blockOuter (JBlock.java:";
    let (mut events, mut named, mut in_event) = (0u64, 0u64, false);
    for line in run.stdout.lines() {
        if line.ends_with(&format!(" {event}")) {
            events += 1;
            in_event = true;
        } else if in_event && line.trim_start().starts_with(outer) {
            named += 1;
            in_event = false;
        }
    }
    let what = format!("events name {outer}");
    assert_share(test, &what, (named, events), (1000, 0.75), &run.stderr);
}

/// A compiled leaf sampled in its prologue or epilogue (`JEdges.tiny`: most of its
/// instructions are its frame's set-up and tear-down) keeps its callers: under C2 (no
/// stack bang, `sub rsp` then `mov [rsp+N], rbp`) and C1 alone (stack bang, `push rbp`,
/// `sub rsp`), of the samples in `tiny`, at least 97% have the main thread's whole chain
/// `main -> spin -> tiny` (stepping every pc by the frame size kept it for about 20%).
#[test]
fn jvm_leaf_in_prologue_or_epilogue_keeps_its_callers() {
    let test = "jvm_leaf_in_prologue_or_epilogue_keeps_its_callers";
    require_root();
    if !installed(test, "javac", "openjdk-17-jdk-headless") {
        return;
    }
    let dir = scratch(test);
    let classes = compile_java(&dir, "JEdges.java");
    for (tier, flags) in [("c2", &[][..]), ("c1", &["-XX:TieredStopAtLevel=1"][..])] {
        let mut java = Command::new("java");
        java.args([
            "-XX:CompileCommand=quiet",
            "-XX:CompileCommand=dontinline,JEdges::*",
        ])
        .args(flags)
        .arg("-cp")
        .arg(&classes)
        .args(["JEdges", "30"]);
        let mut child = spawn_ready(java);
        std::thread::sleep(Duration::from_secs(6));
        let pid = child.id().to_string();
        let out = dir.join(format!("{tier}.folded"));
        let args = ["profile", "-F", "499", "-p", &pid, "-d", "4", "-o"];
        let run = tracekit(args.iter().copied().chain([out.to_str().unwrap()]), TIMEOUT);
        let _ = child.kill();
        let _ = child.wait();
        run.assert_code(0);
        let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
        // Every sample in tiny, the ones whose walk lost the main thread's frames included.
        let in_tiny = |path: &str| path.contains(";JEdges.tiny");
        let (tiny, total) = share(&folded, in_tiny);
        let chain = [
            "JEdges.main (JEdges.java:",
            "JEdges.spin (JEdges.java:",
            "JEdges.tiny",
        ];
        let (whole, _) = share(&folded, |path| {
            main_thread(path) && in_tiny(path) && chain_in_order(path, &chain)
        });
        eprintln!("{test}: {tier}: {total} samples, {tiny} in tiny, {whole} with the chain");
        assert!(
            tiny >= 50,
            "{tier}: only {tiny} samples in tiny: {folded:#?}"
        );
        assert!(
            whole as f64 >= 0.97 * tiny as f64,
            "{tier}: {whole} of {tiny}: {folded:#?}"
        );
    }
}

/// Compiled code thrown away and its code cache space given to other methods
/// (`JReuse.java`: 16 phases, each compiles `JReuse$P(k % 4).run` of a class loaded by a
/// loader of its own, runs it 600 ms in thread `reuseK`, then unloads the class, whose
/// nmethods the sweeper frees; a 4 MiB code cache makes the next phase's nmethods land
/// where the last ones were). The truth is exact: thread `reuseK` runs no other class of
/// the fixture, so a sample of `reuseK` naming `JReuse$P(j)` with `j != k % 4` is a frame
/// named by the method compiled there before (before the fix: 15 to 212 of 250-1000
/// samples, in every run). The kernel records each compiled frame with its nmethod's
/// `_compile_id`; frames of two methods whose ids the frame cannot tell apart are
/// `[unknown]`, never the other's name. At least half of the samples of the `reuseK`
/// threads name their method, in at least 8 of the 16 phases (a loaded machine samples
/// some phases little).
#[test]
fn jvm_reused_code_cache_space_is_named_by_its_new_method() {
    reused_space_is_named_by_its_new_method(
        "jvm_reused_code_cache_space_is_named_by_its_new_method",
        &[],
        "30000",
    );
}

/// The same fixture under `-Xint` (`JReuse.java`, WARM 1): nothing is compiled,
/// and each phase's class's `Method*`s are allocated in the metaspace the previous phase's
/// unloaded class left (before the fix the interpreted frames of `reuseK` were named by
/// the method first read at their `Method*`: 378 of 693 samples). The kernel records each
/// interpreted frame with a fingerprint of its method (its class name's and constant
/// pool's addresses, its name and signature indexes); a frame whose fingerprint is not
/// the method's now is `[unknown]`, never the other's name.
#[test]
fn jvm_reused_metaspace_is_named_by_its_new_method() {
    reused_space_is_named_by_its_new_method(
        "jvm_reused_metaspace_is_named_by_its_new_method",
        &["-Xint"],
        "1",
    );
}

/// Runs `JReuse 16 600 WARM` with `flags` under `profile -p` and checks that no sample of
/// a `reuseK` thread is named by another phase's class, and that most are named.
fn reused_space_is_named_by_its_new_method(test: &str, flags: &[&str], warm: &str) {
    require_root();
    let dir = scratch(test);
    if !installed(test, "javac", "openjdk-17-jdk-headless") {
        return;
    }
    let classes = compile_java(&dir, "JReuse.java");
    let mut java = Command::new("java");
    java.arg("-XX:ReservedCodeCacheSize=4m")
        .args(flags)
        .arg("-cp")
        .arg(&classes)
        .args(["JReuse", "16", "600", warm]);
    let mut child = spawn_ready(java);
    let pid = child.id().to_string();
    let out = dir.join("reuse.folded");
    let args = ["profile", "-v", "-F", "199", "-p", &pid, "-o"];
    let run = tracekit(
        args.into_iter().chain([out.to_str().unwrap()]),
        Duration::from_secs(300),
    );
    let status = child.wait().unwrap();
    run.assert_code(0);
    eprintln!("{}", run.stderr);
    assert!(status.success(), "the fixture failed: {status}");
    let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
    let (mut named, mut total, mut wrong) = (0, 0, Vec::new());
    let mut phases = std::collections::BTreeSet::new();
    for (path, n) in &folded {
        let root = path.split(';').next().unwrap_or_default();
        let Some(phase) = root
            .strip_prefix("reuse")
            .and_then(|k| k.parse::<u32>().ok())
        else {
            continue;
        };
        total += n;
        let own = format!("JReuse$P{}.", phase % 4);
        let classes: Vec<&str> = path
            .split(';')
            .filter(|frame| frame.starts_with("JReuse$P"))
            .collect();
        if classes.iter().any(|frame| !frame.starts_with(&own)) {
            wrong.push((phase, classes, *n));
        } else if !classes.is_empty() {
            named += n;
            phases.insert(phase);
        }
    }
    eprintln!(
        "{test}: {total} samples of the phases' threads, {named} name their own method, in {} \
         phases; named by another phase's method: {wrong:?}",
        phases.len()
    );
    let wrong_samples: u64 = wrong.iter().map(|w| w.2).sum();
    assert!(
        wrong_samples == 0,
        "{wrong_samples} samples named by another method: {wrong:#?}"
    );
    assert!(total >= 100, "only {total} samples: {folded:#?}");
    assert!(named * 2 >= total, "{named} of {total}: {folded:#?}");
    assert!(phases.len() >= 8, "named in phases {phases:?}: {folded:#?}");
}

/// Java with frame pointers and the perf map written at exit: the hot method and its callers
/// down to `main` are named (Netflix's recipe, JDK 17), from the perf map with the runtime
/// unwinders off (`--no-interpreters`), and from the JVM's own tables with them on: both
/// name the same chain.
#[test]
fn jit_java_hot_method_and_callers() {
    require_root();
    if !installed("jit_java", "javac", "openjdk-17-jdk-headless") {
        return;
    }
    let dir = scratch("jit_java");
    let classes = compile_java(&dir, "TkHot.java");
    for perf_map in [true, false] {
        let out = dir.join(format!("java-{perf_map}.folded"));
        let mut args: Vec<&std::ffi::OsStr> =
            vec!["profile".as_ref(), "-F".as_ref(), "99".as_ref()];
        if perf_map {
            args.push("--no-interpreters".as_ref());
        }
        args.extend::<[&std::ffi::OsStr; 11]>([
            "-o".as_ref(),
            out.as_os_str(),
            "--".as_ref(),
            "java".as_ref(),
            "-XX:+PreserveFramePointer".as_ref(),
            "-XX:+UnlockDiagnosticVMOptions".as_ref(),
            "-XX:+DumpPerfMapAtExit".as_ref(),
            "-XX:CompileCommand=quiet".as_ref(),
            "-XX:CompileCommand=dontinline,TkHot::*".as_ref(),
            "-cp".as_ref(),
            classes.as_os_str(),
        ]);
        args.extend::<[&std::ffi::OsStr; 2]>(["TkHot".as_ref(), "8".as_ref()]);
        let run = tracekit(args, TIMEOUT);
        run.assert_code(0);
        let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
        // The main thread's comm is `java`; compiler and GC threads have their own.
        let chain = if perf_map {
            "void TkHot.main(java.lang.String[])_[j];long TkHot.tkOuter(long)_[j];long TkHot.tkHotMethod(long)_[j]"
        } else {
            "TkHot.main (TkHot.java:33);TkHot.tkOuter (TkHot.java:21);TkHot.tkHotMethod"
        };
        assert_comm_share(&folded, "java", chain, 0.90);
    }
}
