//! JavaScript frames in the stacks of the other commands: `offcpu`, `stackcount` and
//! `trace -U` of a node blocked or making syscalls from JavaScript.

use std::{process::Child, time::Duration};

use tracekit_tests::{assert_share, chain_in_order, require_root, share, tracekit, workspace};

use super::{folded_while, have_node, spawn_script};

const TIMEOUT: Duration = Duration::from_secs(120);

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
