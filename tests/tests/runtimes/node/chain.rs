//! The chain fixture named under `-p`, `-- CMD` and `-a`, for a process that exits before
//! the profile ends, with V8's own lines, through on-stack replacement and garbage
//! collection; `--no-interpreters` keeps native frames.

use std::{
    path::Path,
    process::{Child, Command},
};

use tracekit_tests::{assert_share, require_root, scratch, share, spawn_ready, workspace};

use super::{
    check_chain, fixture, folded_while, have_node, names_leaf, profile_exiting_node,
    profile_node_command, profile_node_script, spawn_script,
};

const NODE: &str = "/usr/bin/node";

/// Starts the chain fixture with `args`, no flags.
fn spawn_chain(args: &[&str]) -> Child {
    spawn_script(&[], Path::new(&fixture()), args)
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
/// named with the inlined `leaf` at its line: the chain holds at the usual shares (90% the
/// leaf, 85% the whole chain) over a 14 s `-- CMD` run, and `-v` says that a fifth of its
/// samples at least were in replaced code (the run saw the replacement). Before, those
/// samples ended in `middle` at its loop. V8 does not always replace `middle` (on a busy
/// machine its concurrent compile may come too late, or it deoptimizes and never tries
/// again): a run that saw no replacement says nothing, and is run again, three times at most.
#[test]
fn node_on_stack_replaced_loop_keeps_its_inlined_leaf() {
    let test = "node_on_stack_replaced_loop_keeps_its_inlined_leaf";
    require_root();
    if !have_node(test) {
        return;
    }
    let script = fixture();
    let mut seen = Vec::new();
    for _ in 0..3 {
        let (run, folded) = profile_node_command(test, Path::new(NODE), 14);
        eprintln!("{}", run.stderr);
        check_chain(test, &folded, |path| path.contains(&script));
        let samples: u64 = folded
            .iter()
            .filter(|(path, _)| path.contains(&script))
            .map(|(_, n)| n)
            .sum();
        let replaced = verbose_count(&run.stderr, "tracekit: V8:", " in code their function");
        if replaced * 5 >= samples {
            return;
        }
        seen.push(format!("{replaced} of {samples}"));
    }
    panic!(
        "samples in replaced code per run: {}: V8 did not on-stack-replace middle in any run",
        seen.join(", ")
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
