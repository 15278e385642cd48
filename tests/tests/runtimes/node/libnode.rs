//! Debian's own node builds: a small `/usr/bin/node` linked to `libnode.so`, which holds V8
//! and its postmortem symbols (in `.dynsym`; its `.symtab` is stripped) and does not export
//! `v8_Default_embedded_blob_code_`. Debian 13 (trixie) ships node 20.19 (`libnode.so.115`,
//! V8 11.3), Debian 12 (bookworm) node 18.20 (`libnode.so.108`, V8 10.2, whose builtins'
//! accessor loads a relocated pointer). The chain fixture runs in each root (`chroot ROOT
//! /usr/bin/node /tmp/.../js_chain.js`) and is profiled from the host with no flags: its
//! frames are named as the host's node's are, from the library. Before, none was (trixie: 0
//! of 303 samples named the leaf, `-p`, 3 s at 199 Hz; bookworm: 0, "instructions are not the
//! load expected").

use std::path::{Path, PathBuf};

use tracekit_tests::{
    Output, ProcMount, chroot_command, distro_root, require_root, scratch, spawn_ready, tracekit,
    workspace,
};

use super::{TIMEOUT, check_chain_in, folded_while, read_folded};

/// Where the fixture is copied in the root, and the path node is given.
const SCRIPT: &str = "/tmp/tracekit-fixtures/js_chain.js";

/// The leaf's and the whole chain's shares required of the fixture's samples.
const SHARES: (f64, f64) = (0.95, 0.90);

/// Debian's node of `suite`, and the V8 its library says it is.
struct Build {
    suite: &'static str,
    v8: &'static str,
}

const TRIXIE: Build = Build {
    suite: "trixie",
    v8: "11.3",
};

const BOOKWORM: Build = Build {
    suite: "bookworm",
    v8: "10.2",
};

/// `build`'s root with the chain fixture at [`SCRIPT`]; `None` (the test skips, saying
/// why) without the root.
fn root_with_fixture(test: &str, build: &Build) -> Option<PathBuf> {
    let root = distro_root(test, build.suite)?;
    let node = root.join("usr/bin/node");
    if !node.is_file() {
        println!(
            "{test}: skipped: no {} (the root lacks nodejs)",
            node.display()
        );
        return None;
    }
    let copy = root.join(SCRIPT.trim_start_matches('/'));
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(workspace().join("tests/fixtures/js_chain.js"), &copy).unwrap();
    Some(root)
}

/// `chroot ROOT /usr/bin/node SCRIPT args`, with the root's `/proc` mounted while the
/// guard lives.
fn chroot_node(root: &Path, args: &[&str]) -> (std::process::Command, ProcMount) {
    let mut all = vec![SCRIPT];
    all.extend(args);
    chroot_command(root, "/usr/bin/node", &all)
}

/// Checks that the process ran `build`'s V8 from Debian's library, unwound.
fn check_found_in_library(run: &Output, build: &Build) {
    let found = format!("V8 {} (Node.js) in 1 process", build.v8);
    assert!(run.stderr.contains(&found), "{}", run.stderr);
    assert!(!run.stderr.contains("native frames for"), "{}", run.stderr);
}

/// `-p PID` of Debian's node running the chain: 95% of the samples name `leaf`, 90% the
/// whole chain, each frame with a line of its function.
fn chain_pid(test: &str, build: &Build) {
    require_root();
    let Some(root) = root_with_fixture(test, build) else {
        return;
    };
    let (command, _proc) = chroot_node(&root, &["8"]);
    let mut child = spawn_ready(command);
    let pid = child.id().to_string();
    let (run, folded) = folded_while(
        &mut child,
        test,
        &["profile", "-v", "-F", "199", "-p", &pid, "-d", "3"],
    );
    eprintln!("{}", run.stderr);
    check_found_in_library(&run, build);
    check_chain_in(test, SCRIPT, &folded, |_| true, SHARES);
}

/// `-- chroot ROOT /usr/bin/node js_chain.js 4`: node named from its start, the shares
/// taken of the samples that name the fixture (after node's own start-up).
fn chain_command(test: &str, build: &Build) {
    require_root();
    let Some(root) = root_with_fixture(test, build) else {
        return;
    };
    let (_, _proc) = chroot_node(&root, &[]);
    let out = scratch(test).join("out.folded");
    let run = tracekit(
        [
            "profile",
            "-v",
            "-F",
            "199",
            "-o",
            out.to_str().unwrap(),
            "--",
            "chroot",
            root.to_str().unwrap(),
            "/usr/bin/node",
            SCRIPT,
            "4",
        ],
        TIMEOUT,
    );
    eprintln!("{}", run.stderr);
    run.assert_code(0);
    check_found_in_library(&run, build);
    let folded = read_folded(&out);
    check_chain_in(test, SCRIPT, &folded, |path| path.contains(SCRIPT), SHARES);
}

#[test]
fn debian_libnode_chain_pid() {
    chain_pid("debian_libnode_chain_pid", &TRIXIE);
}

#[test]
fn debian_libnode_chain_command() {
    chain_command("debian_libnode_chain_command", &TRIXIE);
}

#[test]
fn debian_12_libnode_chain_pid() {
    chain_pid("debian_12_libnode_chain_pid", &BOOKWORM);
}

#[test]
fn debian_12_libnode_chain_command() {
    chain_command("debian_12_libnode_chain_command", &BOOKWORM);
}
