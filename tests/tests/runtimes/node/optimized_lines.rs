//! Optimized code's current lines: a TurboFan-compiled leaf's samples on the lines of its
//! loops, and a leaf inlined into its caller named as its own frame.

use std::{path::Path, process::Command, time::Duration};

use tracekit_tests::{
    assert_share, chain_in_order, require_root, scratch, share, tracekit, workspace,
};

use super::{check_leaf_lines, folded_while, have_node, lines_fixture, read_folded, spawn_script};

const TIMEOUT: Duration = Duration::from_secs(120);

const NODE: &str = "/usr/bin/node";

/// `-p PID` of a node running the optimized leaf.
#[test]
fn node_optimized_leaf_lines_pid() {
    let test = "node_optimized_leaf_lines_pid";
    require_root();
    if !have_node(test) {
        return;
    }
    let script = lines_fixture();
    let mut child = spawn_script(&["--allow-natives-syntax"], Path::new(&script), &["8"]);
    let pid = child.id().to_string();
    let (_, folded) = folded_while(
        &mut child,
        test,
        &["profile", "-F", "499", "-p", &pid, "-d", "3"],
    );
    check_leaf_lines(test, &folded);
}

/// `-- node js_lines.js` and `-a`: the same lines. The fixture prints its leaf's
/// optimization status (`%GetOptimizationStatus`, on stderr) before and after the burn: TurboFan's
/// code (bit 64) both times, so the frames sampled were compiled ones.
#[test]
fn node_optimized_leaf_lines_command_and_whole_machine() {
    let test = "node_optimized_leaf_lines_command_and_whole_machine";
    require_root();
    if !have_node(test) {
        return;
    }
    let script = lines_fixture();
    let out = scratch(&format!("{test}_command")).join("out.folded");
    let run = tracekit(
        [
            "profile",
            "-F",
            "499",
            "-o",
            out.to_str().unwrap(),
            "--",
            NODE,
            "--allow-natives-syntax",
            &script,
            "4",
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let statuses: Vec<u32> = run
        .stderr
        .lines()
        .filter_map(|line| line.strip_prefix("status=")?.parse().ok())
        .collect();
    assert!(
        statuses.len() == 2 && statuses.iter().all(|status| status & 64 != 0),
        "{test}: leaf not TurboFan-compiled throughout: {}",
        run.stderr
    );
    check_leaf_lines(&format!("{test} (-- CMD)"), &read_folded(&out));

    let mut child = spawn_script(&["--allow-natives-syntax"], Path::new(&script), &["8"]);
    let (_, folded) = folded_while(&mut child, test, &["profile", "-a", "-F", "499", "-d", "3"]);
    let ours: Vec<(String, u64)> = folded
        .into_iter()
        .filter(|(path, _)| path.starts_with("tk_js_lines;"))
        .collect();
    check_leaf_lines(&format!("{test} (-a)"), &ours);
}

/// `tests/fixtures/js_inline.js`: `outer -> middle -> leaf`, TurboFan inlining `leaf` into
/// `middle` (and, as it sees fit, `middle` into `outer` and `outer` into the fixture's
/// `batch`), nearly all the work in `leaf`'s one-line loop.
fn inline_fixture() -> String {
    workspace()
        .join("tests/fixtures/js_inline.js")
        .display()
        .to_string()
}

/// `js_inline.js`'s lines: `leaf`'s body (its loop), `middle`'s call of `leaf`.
const INLINED_LEAF_LINE: u32 = 14;

const INLINING_CALL_LINE: u32 = 19;

/// The function, line and inlined mark of a `go tool pprof -traces -lines` frame of the
/// inline fixture (`leaf /path/js_inline.js:14 (inline)`).
fn inline_frame(frame: &str) -> Option<(&str, u32, bool)> {
    let (frame, inlined) = match frame.strip_suffix(" (inline)") {
        Some(frame) => (frame, true),
        None => (frame, false),
    };
    let (function, place) = frame.split_once(' ')?;
    let (file, line) = place.rsplit_once(':')?;
    (file == inline_fixture()).then_some((function, line.parse().ok()?, inlined))
}

/// V8 inlined frames on Debian's node 20 (V8 11.3), `-p` of the inline fixture
/// started with no flags: `leaf` is inlined by TurboFan (`--trace-turbo-inlining` of a
/// run of its own says so), and the profile expands it from its caller's optimized code:
/// 90% of node's samples name `leaf` as an inlined frame right under `middle`'s, `leaf`
/// at its body's line and `middle` at its call's (as V8's own stack trace would say),
/// 85% have `outer`, `middle`, `leaf` in order; `-v` counts the optimized frames.
/// Read back through `go tool pprof -traces -lines`, which marks inlined frames.
#[test]
fn node_inlined_leaf_pid() {
    let test = "node_inlined_leaf_pid";
    require_root();
    if !have_node(test) {
        return;
    }
    let Some(go) = tracekit_tests::pprof::go_or_skip(test) else {
        return;
    };
    let script = inline_fixture();
    let mut traced = Command::new(NODE);
    traced.args(["--trace-turbo-inlining", &script, "1"]);
    let traced = tracekit_tests::run(traced, TIMEOUT);
    traced.assert_code(0);
    assert!(
        traced
            .stdout
            .lines()
            .any(|line| line.starts_with("Inlining ")
                && line.contains("<SharedFunctionInfo leaf>} into")
                && line.ends_with("<SharedFunctionInfo middle>}")),
        "{test}: TurboFan did not inline leaf into middle:\n{}",
        traced.stdout
    );

    let mut child = spawn_script(&[], Path::new(&script), &["10"]);
    let pid = child.id();
    let out = scratch(test).join("out.pb.gz");
    let run = tracekit(
        [
            "profile",
            "-v",
            "-F",
            "499",
            "-p",
            &pid.to_string(),
            "-d",
            "3",
            "-o",
            out.to_str().unwrap(),
        ],
        TIMEOUT,
    );
    let _ = child.kill();
    let _ = child.wait();
    run.assert_code(0);
    let optimized: u64 = run
        .stderr
        .split("V8: ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("{test}: no V8 line in -v:\n{}", run.stderr));
    let traces =
        tracekit_tests::pprof::pprof(go, &["-traces", "-lines", "-sample_index=samples"], &out);
    let traces: Vec<(String, u64)> = tracekit_tests::pprof::traces(&traces)
        .into_iter()
        .filter(|trace| trace.pid == Some(pid))
        .map(|trace| (trace.path, trace.samples))
        .collect();
    // Per sample: the fixture's frames, outermost first.
    let ours = |path: &str| -> Vec<(String, u32, bool)> {
        path.split(';')
            .filter_map(inline_frame)
            .map(|(function, line, inlined)| (function.to_string(), line, inlined))
            .collect()
    };
    let inlined_leaf = share(&traces, |path| {
        ours(path).windows(2).any(|pair| {
            let (caller, leaf) = (&pair[0], &pair[1]);
            caller.0 == "middle"
                && caller.1 == INLINING_CALL_LINE
                && leaf.0 == "leaf"
                && leaf.1 == INLINED_LEAF_LINE
                && leaf.2
        })
    });
    let leaf_lines = {
        let mut lines = std::collections::BTreeMap::new();
        for (path, n) in &traces {
            for (function, line, inlined) in ours(path) {
                if function == "leaf" {
                    *lines.entry((line, inlined)).or_insert(0) += n;
                }
            }
        }
        lines
    };
    eprintln!(
        "{test}: leaf's (line, inlined) samples: {leaf_lines:?}; -v: {optimized} optimized frames"
    );
    assert_share(
        test,
        "samples name leaf inlined under middle, at their lines",
        inlined_leaf,
        (100, 0.90),
        &traces,
    );
    let chain = share(&traces, |path| {
        let functions: Vec<String> = ours(path).into_iter().map(|(f, _, _)| f).collect();
        chain_in_order(&functions.join(";"), &["outer", "middle", "leaf"])
    });
    assert_share(
        test,
        "samples have outer;middle;leaf",
        chain,
        (100, 0.85),
        &traces,
    );
    // Every sample's optimized code was a frame recorded as its code (at least one each).
    assert!(optimized >= inlined_leaf.0, "{}", run.stderr);
}
