//! Several runtimes on the whole machine: a node, a JVM, a Python and a native fixture
//! profiled together by `profile -a` are all named in one flame graph; a node and a JVM
//! that start, warm up and exit during `profile -a -i 1` keep their names in the intervals
//! where they ran; the interpreters of exited processes leave the kernel's
//! `INTERP_PROCESSES`. Node and Java are not in the VM image: host only.

use std::{
    os::unix::fs::symlink,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use tracekit_tests::{
    chain_in_order, compile_java, ensure_package, fixture, ids_held_by, installed, parse_folded,
    require_root, scratch, share, spawn_ready, spawn_tracekit, tracekit_bin, wait_for_stderr,
    wait_output, wait_until,
};

use super::fixture_path;

const TIMEOUT: Duration = Duration::from_secs(180);

const NODE: &str = "/usr/bin/node";

const PYTHON: &str = "/root/.pyenv/versions/3.12.1/bin/python3.12";

/// Node, Java and the pyenv CPython 3.12 are here (Debian's packages installed when absent);
/// false, saying why, when one is not.
fn runtimes_here(test: &str) -> bool {
    if !ensure_package(test, "nodejs", || Path::new(NODE).is_file()) {
        return false;
    }
    if !installed(test, "javac", "openjdk-17-jdk-headless") {
        return false;
    }
    if !Path::new(PYTHON).is_file() {
        eprintln!("{test}: skipped: {PYTHON} is not installed here");
        return false;
    }
    true
}

/// `program` under the name `comm` (a symlink in `dir`): its samples start with that frame.
fn named_link(dir: &Path, program: &str, comm: &str) -> PathBuf {
    let link = dir.join(comm);
    symlink(program, &link).unwrap();
    link
}

/// `java -cp CLASSES Ledger SECONDS` (no flags) run as `comm`, once it printed "ready".
fn spawn_java(dir: &Path, classes: &Path, comm: &str, seconds: &str) -> Child {
    // The launcher finds its JDK from /proc/self/exe, which names the real binary.
    let java = std::fs::canonicalize(which("java")).unwrap();
    let mut command = Command::new(named_link(dir, java.to_str().unwrap(), comm));
    command.arg("-cp").arg(classes).args(["Ledger", seconds]);
    spawn_ready(command)
}

fn which(program: &str) -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
        .unwrap_or_else(|| panic!("{program} is not on PATH"))
}

/// Whether `path` holds `names` as whole frames, in this order.
fn frames_in_order(path: &str, names: &[&str]) -> bool {
    let mut frames = path.split(';');
    names.iter().all(|name| frames.any(|frame| frame == *name))
}

/// The JVM fixture's chain, outermost first (see `java.rs`: the callers at their call's
/// line, the leaf at any of its lines).
const JAVA_CHAIN: [&str; 5] = [
    "Ledger.main (Ledger.java:40)",
    "Ledger.outer (Ledger.java:26)",
    "Ledger.middle (Ledger.java:22)",
    "Ledger.leaf (Ledger.java:16)",
    "Ledger.sumCents (Ledger.java:",
];

/// Samples of `comm` (the first frame) in `folded` selected by `of`, the number naming the
/// leaf, and the number with the whole chain: `(leaf, whole, total)`.
fn shares(
    folded: &[(String, u64)],
    comm: &str,
    of: impl Fn(&str) -> bool,
    leaf: impl Fn(&str) -> bool,
    whole: impl Fn(&str) -> bool,
) -> (u64, u64, u64) {
    let of_comm: Vec<(String, u64)> = folded
        .iter()
        .filter(|(path, _)| path.split(';').next() == Some(comm) && of(path))
        .cloned()
        .collect();
    let (chosen, before): (Vec<_>, Vec<_>) =
        of_comm.into_iter().partition(|(path, _)| walked(path));
    let (named, total) = share(&chosen, leaf);
    let (chain, _) = share(&chosen, whole);
    let (_, early) = share(&before, |_| true);
    eprintln!("{comm}: {early} samples walked before its tables were published: {before:?}");
    assert!(
        early * 4 <= total + early,
        "{comm}: {early} of {} samples walked before its tables",
        total + early
    );
    (named, chain, total)
}

/// Whether a stack was walked with its process's tables: it reaches the thread's start
/// (`__libc_start_call_main`, `start_thread`) or holds a runtime's frame
/// (`function (file...)`). A profile of the
/// whole machine builds every process's tables as it starts; on a loaded machine a
/// process's first samples may come before its own, walked by frame pointers, which stop
/// at once in code built without them (`tk_py_mix;_PyEval_EvalFrameDefault`). Those are
/// the table builder's latency, not the naming, and are counted apart (at most a quarter).
fn walked(path: &str) -> bool {
    path.split(';').any(|frame| {
        frame == "__libc_start_call_main"
            || frame == "start_thread"
            || (frame.contains(" (") && frame.ends_with(')'))
    })
}

fn check(test: &str, what: &str, (leaf, whole, total): (u64, u64, u64), at_least: u64) {
    eprintln!("{test}: {what}: {leaf} of {total} samples name the leaf, {whole} the chain");
    assert!(total >= at_least, "{what}: only {total} samples");
    assert!(
        leaf as f64 >= 0.90 * total as f64,
        "{what}: {leaf} of {total} name the leaf (want 90%)"
    );
    assert!(
        whole as f64 >= 0.85 * total as f64,
        "{what}: {whole} of {total} have the chain (want 85%)"
    );
}

fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// `profile -a -d 10` while a node fixture, a JVM fixture (no flags: its chain
/// interpreted, then C1/C2-compiled), a Python fixture and a native burner run together,
/// each under a command name of its own. One flame graph names all four: at least 90% of
/// each one's samples name its leaf and 85% its whole chain (the JVM's: its main Java
/// thread's, the JVM's own threads keep native frames) among the samples walked with their
/// process's tables (see [`walked`]), and the SVG holds the four leaves.
#[test]
fn whole_machine_four_runtimes_in_one_flame_graph() {
    let test = "whole_machine_four_runtimes_in_one_flame_graph";
    require_root();
    if !runtimes_here(test) {
        return;
    }
    let dir = scratch(test);
    let classes = compile_java(&dir, "Ledger.java");
    let js = fixture_path("js_chain.js");
    let py = fixture_path("py_chain.py");
    // node names itself tk_js_chain (process.title).
    let mut node = Command::new(NODE);
    node.args([js.as_str(), "40"]);
    let node = spawn_ready(node);
    let java = spawn_java(&dir, &classes, "tk_java_mix", "40");
    let mut python = Command::new(named_link(&dir, PYTHON, "tk_py_mix"));
    python.args([py.as_str(), "40"]);
    let python = spawn_ready(python);
    let burner = Command::new(fixture("tk_burner"))
        .arg("40")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let folded_path = dir.join("all.folded");
    let svg_path = dir.join("all.svg");
    let profiler = spawn_tracekit([
        "profile",
        "-a",
        "-v",
        "-d",
        "10",
        "-o",
        folded_path.to_str().unwrap(),
        "-o",
        svg_path.to_str().unwrap(),
    ]);
    let run = wait_output(profiler, TIMEOUT);
    for child in [node, java, python, burner] {
        stop(child);
    }
    eprintln!("{}", run.stderr);
    run.assert_code(0);
    let folded = parse_folded(&std::fs::read_to_string(&folded_path).unwrap());
    let js_leaf = format!("leaf ({js}:");
    check(
        test,
        "node (tk_js_chain)",
        shares(
            &folded,
            "tk_js_chain",
            |_| true,
            |path| path.split(';').any(|frame| frame.starts_with(&js_leaf)),
            |path| chain_in_order(path, &["outer (", "middle (", js_leaf.as_str()]),
        ),
        40,
    );
    let py_line = std::fs::read_to_string(&py)
        .unwrap()
        .lines()
        .position(|line| line.contains("the hot line"))
        .unwrap()
        + 1;
    let py_leaf = format!("leaf ({py}:{py_line})");
    check(
        test,
        "Python (tk_py_mix)",
        shares(
            &folded,
            "tk_py_mix",
            |_| true,
            |path| path.split(';').any(|frame| frame == py_leaf),
            |path| chain_in_order(path, &["outer (", "middle (", py_leaf.as_str()]),
        ),
        40,
    );
    check(
        test,
        "JVM (tk_java_mix, main Java thread)",
        shares(
            &folded,
            "tk_java_mix",
            |path| path.contains(";JavaMain;"),
            |path| {
                path.split(';')
                    .any(|frame| frame.starts_with(JAVA_CHAIN[4]))
            },
            |path| chain_in_order(path, &JAVA_CHAIN),
        ),
        40,
    );
    check(
        test,
        "native (tk_burner)",
        shares(
            &folded,
            "tk_burner",
            |_| true,
            |path| path.ends_with(";leaf"),
            |path| frames_in_order(path, &["main", "a", "b", "leaf"]),
        ),
        40,
    );
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    for name in [
        "tk_js_chain",
        "tk_java_mix",
        "tk_py_mix",
        "tk_burner",
        "Ledger.sumCents",
    ] {
        assert!(svg.contains(name), "the flame graph lacks {name}");
    }
}

/// One row of an interval's text report: command, shared object, symbol, samples.
#[derive(Debug)]
struct Row {
    comm: String,
    module: String,
    symbol: String,
    samples: u64,
}

/// The rows of one interval of `profile -i` text output (commands without spaces only:
/// the fixtures').
fn interval_rows(block: &str) -> Vec<Row> {
    block
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let _overhead = fields.next()?;
            let samples = fields.next()?.parse().ok()?;
            let comm = fields.next()?.to_string();
            let module = fields.next()?.to_string();
            let symbol = line.split_once("[.] ")?.1.to_string();
            Some(Row {
                comm,
                module,
                symbol,
                samples,
            })
        })
        .collect()
}

/// During one `profile -a -i 1`, a node and a JVM (no flags) start 2 s in,
/// warm up, run their chain for 9 s (node) and 6 s (the JVM) and exit. In each interval's
/// report, no row of theirs is an unnamed JavaScript or Java frame (but up to 3 samples of
/// code first run in a process's last milliseconds, in its last interval, when `-v` counts
/// code objects that could not be read: the JVM's exit runs JDK methods first seen then,
/// gone before they can be read); each interval with 3 samples or more of one of them
/// (node: all its samples; the JVM: those in `Ledger` methods, its startup and its own
/// threads being native), but the first it appears in (its start) and the last (its exit:
/// node's teardown after its chain ends can fill an interval's 10-20 samples alone), names
/// its leaf for at least half of them, at least 4 intervals do, and 90% of those samples
/// over all intervals name it. The
/// shared machine gives a fixture 5 to 100 samples a second at 99 Hz. The whole run's folded
/// stacks name node's chain at the usual shares.
#[test]
fn whole_machine_jit_processes_keep_names_in_their_intervals() {
    let test = "whole_machine_jit_processes_keep_names_in_their_intervals";
    require_root();
    if !runtimes_here(test) {
        return;
    }
    let dir = scratch(test);
    let classes = compile_java(&dir, "Ledger.java");
    let folded_path = dir.join("all.folded");
    let intervals_path = dir.join("intervals.txt");
    let stderr_path = dir.join("stderr.txt");
    // Intervals to a file: a pipe read only at the end fills after a few intervals and
    // holds tracekit's writes (and its reading of samples) until then.
    let mut profiler = Command::new(tracekit_bin())
        .args([
            "profile", "-a", "-v", "-i", "1", "-d", "14", "--top", "100000", "-o",
        ])
        .arg(&folded_path)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&intervals_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    wait_until(TIMEOUT, || {
        let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        stderr.contains("Hit Ctrl-C").then_some(()).ok_or(stderr)
    });
    std::thread::sleep(Duration::from_secs(2));
    let js = fixture_path("js_chain.js");
    let mut node = Command::new(NODE);
    // 9 s: node 20 on-stack-replaces `middle` (with `leaf` inlined) 4 to 8 s into its
    // loop; the intervals after keep the leaf's name too.
    node.args([js.as_str(), "9"]);
    let mut node = spawn_ready(node);
    let mut java = spawn_java(&dir, &classes, "tk_java_churn", "6");
    assert!(node.wait().unwrap().success(), "node failed");
    assert!(java.wait().unwrap().success(), "the JVM failed");
    let status = wait_until(TIMEOUT, || {
        profiler.try_wait().unwrap().ok_or("tracekit runs")
    });
    assert!(status.success(), "tracekit failed: {status}");
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    // `-v`'s account of frames it could not name (read failures, ambiguous code), for a
    // failure's message.
    let losses: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("tracekit: interpreters:"))
        .collect();
    let stdout = std::fs::read_to_string(&intervals_path).unwrap();
    let blocks: Vec<&str> = stdout.split("interval ending").skip(1).collect();
    let js_leaf = format!("leaf ({js}:");
    for (comm, leaf) in [
        ("tk_js_chain", js_leaf.as_str()),
        ("tk_java_churn", "Ledger.sumCents (Ledger.java:"),
    ] {
        let (mut named_intervals, mut all_named, mut all_counted, mut seen) = (0, 0, 0, 0);
        // The last interval the process has samples in.
        let last = blocks
            .iter()
            .rposition(|block| interval_rows(block).iter().any(|row| row.comm == comm));
        for (index, block) in blocks.iter().enumerate() {
            let rows: Vec<Row> = interval_rows(block)
                .into_iter()
                .filter(|row| row.comm == comm)
                .collect();
            let unnamed: Vec<&Row> = rows
                .iter()
                .filter(|row| ["[js]", "[java]"].contains(&row.module.as_str()))
                .filter(|row| row.symbol.starts_with("[unknown]"))
                .collect();
            let sum = |of: &dyn Fn(&Row) -> bool| -> u64 {
                rows.iter()
                    .filter(|row| of(row))
                    .map(|row| row.samples)
                    .sum()
            };
            let named = sum(&|row| row.symbol.starts_with(leaf));
            let java_code = sum(&|row| row.symbol.starts_with("Ledger."));
            let total = sum(&|_| true);
            // The JVM's startup (class loading, its threads') is native: its intervals
            // count once the chain runs.
            let counted = if comm == "tk_java_churn" {
                java_code
            } else {
                total
            };
            eprintln!(
                "{test}: interval {index}: {comm}: {named} of {total} samples name {leaf}, \
                 {} unnamed rows",
                unnamed.len()
            );
            // A process's exit runs code first seen then (the JVM's `println` and shutdown
            // in JDK methods): code announced in its last milliseconds cannot be read once
            // it is gone. Allowed in the last interval only, a few samples, and only when
            // `-v` accounts for it ("could not be read (the process exited ...)").
            let unnamed_samples: u64 = unnamed.iter().map(|row| row.samples).sum();
            let exit_loss = Some(index) == last
                && unnamed_samples <= 3
                && losses
                    .iter()
                    .any(|line| line.contains("code objects could not be read"));
            assert!(
                unnamed.is_empty() || exit_loss,
                "interval {index}: {comm}: unnamed rows {unnamed:?} (the process's last \
                 interval is {last:?}); tracekit -v: {losses:#?}"
            );
            let first = seen == 0 && total > 0;
            if total > 0 {
                seen += 1;
            }
            // Its start (node's bootstrap before it is published, the JVM's class loading)
            // is in the first interval it appears in, its exit in the last: those are only
            // printed (and count in the whole run's share).
            if counted >= 3 && !first && Some(index) != last {
                assert!(
                    named * 2 >= counted,
                    "interval {index}: {named} of {counted} samples of {comm} name {leaf}"
                );
                named_intervals += 1;
            }
            all_named += named;
            all_counted += counted;
        }
        eprintln!(
            "{test}: {comm}: named in {named_intervals} intervals, {all_named} of \
             {all_counted} samples"
        );
        assert!(
            named_intervals >= 4,
            "{comm} named in {named_intervals} intervals"
        );
        assert!(
            all_named as f64 >= 0.90 * all_counted as f64,
            "{comm}: {all_named} of {all_counted} samples name {leaf}"
        );
    }
    let folded = parse_folded(&std::fs::read_to_string(&folded_path).unwrap());
    check(
        test,
        "node, whole run",
        shares(
            &folded,
            "tk_js_chain",
            |_| true,
            |path| path.split(';').any(|frame| frame.starts_with(&js_leaf)),
            |path| chain_in_order(path, &["outer (", "middle (", js_leaf.as_str()]),
        ),
        20,
    );
}

/// The pids in the `INTERP_PROCESSES` map of tracekit process `pid` (found among the maps
/// it holds, never by name alone: other tracekits have one too), via `bpftool`.
fn interp_processes_of(pid: u32) -> Vec<u32> {
    for id in ids_held_by(pid, "map_id:") {
        let show = Command::new("bpftool")
            .args(["-j", "map", "show", "id", &id.to_string()])
            .output()
            .unwrap();
        let info: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap_or_default();
        // The kernel cuts map names to 15 characters.
        if info["name"] != "INTERP_PROCESSE" {
            continue;
        }
        let dump = Command::new("bpftool")
            .args(["-j", "map", "dump", "id", &id.to_string()])
            .output()
            .unwrap();
        let entries: serde_json::Value = serde_json::from_slice(&dump.stdout).unwrap();
        return entries
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| {
                let bytes: Vec<u8> = entry["key"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|b| u8::from_str_radix(b.as_str().unwrap().trim_start_matches("0x"), 16))
                    .collect::<Result<_, _>>()
                    .unwrap();
                u32::from_le_bytes(bytes[..4].try_into().unwrap())
            })
            .collect();
    }
    panic!("tracekit {pid} holds no INTERP_PROCESSES map");
}

fn exited(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

/// Memory stays bounded: during `profile -a`, 64 short node and Python processes (4 at a
/// time, 0.2 s of their chain each) are published as interpreters and exit; once a later
/// process is loaded (more than a second on: exited processes are unpublished when a process
/// loads, at most once a second), `INTERP_PROCESSES` holds no exited process. Before the
/// fix, a node published ahead of its tables that exited before they were built stayed for
/// the rest of the run (4 of 40 here).
#[test]
fn interp_processes_of_exited_processes_are_removed() {
    let test = "interp_processes_of_exited_processes_are_removed";
    require_root();
    if !ensure_package(test, "nodejs", || Path::new(NODE).is_file()) {
        return;
    }
    if !Path::new(PYTHON).is_file() {
        eprintln!("{test}: skipped: {PYTHON} is not installed here");
        return;
    }
    if !installed(test, "bpftool", "bpftool") {
        return;
    }
    let mut profiler = spawn_tracekit(["profile", "-a", "-F", "49", "-d", "120"]);
    let tracekit_pid = profiler.id();
    wait_for_stderr(&mut profiler, "Hit Ctrl-C", TIMEOUT);
    let js = fixture_path("js_chain.js");
    let py = fixture_path("py_chain.py");
    let mut started = 0;
    let mut peak = 0;
    for _ in 0..16 {
        let mut wave = Vec::new();
        for _ in 0..2 {
            wave.push(
                Command::new(NODE)
                    .args([js.as_str(), "0.2"])
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap(),
            );
            wave.push(
                Command::new(PYTHON)
                    .args([py.as_str(), "0.2"])
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap(),
            );
        }
        for mut child in wave {
            assert!(child.wait().unwrap().success(), "a short process failed");
            started += 1;
        }
        peak = peak.max(interp_processes_of(tracekit_pid).len());
    }
    // Two later processes, a second and a half apart: the second one's load unpublishes.
    let mut later = Vec::new();
    for _ in 0..2 {
        let mut node = Command::new(NODE);
        node.args([js.as_str(), "30"]);
        later.push(spawn_ready(node));
        std::thread::sleep(Duration::from_millis(1500));
    }
    let left = wait_until(Duration::from_secs(20), || {
        let pids = interp_processes_of(tracekit_pid);
        let dead: Vec<u32> = pids.iter().copied().filter(|&pid| exited(pid)).collect();
        if dead.is_empty() {
            Ok(pids)
        } else {
            Err(format!(
                "INTERP_PROCESSES holds {} exited processes of {} entries: {dead:?}",
                dead.len(),
                pids.len()
            ))
        }
    });
    eprintln!(
        "{test}: {started} short processes; at most {peak} entries after a wave; {} at the \
         end, none exited",
        left.len()
    );
    for node in later {
        assert!(left.contains(&node.id()), "a live node is not published");
        stop(node);
    }
    tracekit_tests::kill(tracekit_pid, libc::SIGINT);
    wait_output(profiler, TIMEOUT).assert_code(0);
}
