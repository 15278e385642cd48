//! The runtime version matrix of the distribution roots: each runtime as a Debian suite
//! ships it (`cargo xtask` makes the roots with debootstrap: `xtask/src/roots.rs`), its
//! chain fixture (`outer -> middle -> leaf`, burning CPU on one line of `leaf`) run in the
//! root with `chroot` and profiled from the host with no flags, three ways: attached to
//! (`-p PID`), started by tracekit (`-- chroot ROOT PROGRAM ...`), and on the whole machine
//! (`-a`). Each way asks 95% of the process's samples to name `leaf` and 90% the whole
//! chain in order with the hot line ([`check_chain`]). One test per runtime and way:
//! `runtimes::matrix::{by_pid,from_start,all_cpus}::<runtime>`; `cargo xtask test
//! --runtimes` runs them with the rest of `runtimes::` and prints the table.
//!
//! Before each runtime was known: Debian 13's Ruby 3.3 and PHP 8.4, forky's CPython 3.14 and
//! node 24 (`libnode.so.137`) named no frame (0.0%), the summary saying why.
//!
//! And every runtime of a root at once, on the whole machine
//! ([`every_runtime_of_debian_trixie_named_on_all_cpus`]): the interpreters' unwind tables
//! are built before sampling starts (at most 2 s): before, on a machine at load 7, 8-17% of
//! each one's samples in a 4 s profile were walked before their tables were in, and cut at
//! their first frame.

use std::{path::Path, process::Child, time::Duration};

use tracekit_tests::{
    chroot_command, distro_root, parse_folded, require_root, scratch, spawn_ready, tracekit,
};

use super::trixie::{chain_by_pid, chain_from_start, check_chain, fixture_in_root};

const TIMEOUT: Duration = Duration::from_secs(120);

/// A runtime of a root: the suite, its program, the chain fixture it runs, and the
/// process's comm (the program's file name, or the title the fixture sets).
pub(super) struct Runtime {
    suite: &'static str,
    program: &'static str,
    script: &'static str,
    comm: &'static str,
}

/// Debian 13's CPython 3.13.
const PYTHON_3_13_TRIXIE: Runtime = Runtime {
    suite: "trixie",
    program: "/usr/bin/python3.13",
    script: "py_chain.py",
    comm: "python3.13",
};

/// Debian 13's Ruby 3.3.8 (`libruby-3.3.so`).
const RUBY_3_3_TRIXIE: Runtime = Runtime {
    suite: "trixie",
    program: "/usr/bin/ruby3.3",
    script: "rb_chain.rb",
    comm: "ruby3.3",
};

/// Debian 13's PHP 8.4 CLI.
const PHP_8_4_TRIXIE: Runtime = Runtime {
    suite: "trixie",
    program: "/usr/bin/php8.4",
    script: "php_chain.php",
    comm: "php8.4",
};

/// Debian 13's node 20.19 (`libnode.so.115`, V8 11.3).
const NODE_20_TRIXIE: Runtime = Runtime {
    suite: "trixie",
    program: "/usr/bin/node",
    script: "js_chain.js",
    // The fixture's `process.title`.
    comm: "tk_js_chain",
};

/// Debian 12's node 18.20 (`libnode.so.108`, V8 10.2).
const NODE_18_BOOKWORM: Runtime = Runtime {
    suite: "bookworm",
    program: "/usr/bin/node",
    script: "js_chain.js",
    comm: "tk_js_chain",
};

/// Debian testing's CPython 3.14.
const PYTHON_3_14_FORKY: Runtime = Runtime {
    suite: "forky",
    program: "/usr/bin/python3.14",
    script: "py_chain.py",
    comm: "python3.14",
};

/// Debian testing's node 24.21 (`libnode.so.137`, V8 13.6).
const NODE_24_FORKY: Runtime = Runtime {
    suite: "forky",
    program: "/usr/bin/node",
    script: "js_chain.js",
    comm: "tk_js_chain",
};

/// How a runtime's process is profiled.
#[derive(Clone, Copy)]
enum Way {
    /// `profile -F 199 -d 3 -p PID` of a running fixture.
    ByPid,
    /// `profile -F 199 -- chroot ROOT PROGRAM SCRIPT 8`: its start-up included.
    FromStart,
    /// `profile -a -F 199 -d 4` while the fixture runs, its comm's samples checked.
    AllCpus,
}

/// One cell of the matrix: `runtime` profiled `way`, its chain checked.
fn cell(name: &str, runtime: &'static Runtime, way: Way) {
    require_root();
    let Some(root) = distro_root(name, runtime.suite) else {
        return;
    };
    match way {
        Way::ByPid => chain_by_pid(name, &root, runtime.program, runtime.script),
        Way::FromStart => chain_from_start(name, &root, runtime.program, runtime.script),
        Way::AllCpus => all_cpus(name, &root, &[runtime]),
    }
}

/// A module `$module` of tests, one per runtime of the matrix (each named after its
/// runtime), each profiling its runtime `$way`.
macro_rules! way {
    ($module:ident, $way:expr) => {
        mod $module {
            use super::*;

            cells!(
                $module,
                $way,
                python_3_13_trixie: PYTHON_3_13_TRIXIE,
                ruby_3_3_trixie: RUBY_3_3_TRIXIE,
                php_8_4_trixie: PHP_8_4_TRIXIE,
                node_20_trixie: NODE_20_TRIXIE,
                node_18_bookworm: NODE_18_BOOKWORM,
                python_3_14_forky: PYTHON_3_14_FORKY,
                node_24_forky: NODE_24_FORKY
            );
        }
    };
}

/// One test per `$name: $runtime`, named `$name` and calling itself `$name_$module`.
macro_rules! cells {
    ($module:ident, $way:expr, $($name:ident: $runtime:ident),*) => {
        $(
            #[test]
            fn $name() {
                cell(concat!(stringify!($name), "_", stringify!($module)), &$runtime, $way);
            }
        )*
    };
}

way!(by_pid, Way::ByPid);
way!(from_start, Way::FromStart);
way!(all_cpus, Way::AllCpus);

/// Kills the fixtures when dropped (a failed check included).
struct Running(Vec<Child>);

impl Drop for Running {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts every runtime of `runtimes` in `root` (each burning 10 s, started before the
/// profile), profiles the machine (`profile -a -F 199 -d 4`), and checks each process's
/// chain among the samples of its comm.
fn all_cpus(test: &str, root: &Path, runtimes: &[&Runtime]) {
    let dir = scratch(test);
    let mut mounts = Vec::new();
    let mut running = Running(Vec::new());
    let mut paths = Vec::new();
    for runtime in runtimes {
        let path = fixture_in_root(root, runtime.script);
        let (command, proc_mount) = chroot_command(root, runtime.program, &[&path, "10"]);
        running.0.push(spawn_ready(command));
        mounts.push(proc_mount);
        paths.push(path);
    }
    let out = dir.join("out.folded");
    let run = tracekit(
        [
            "profile",
            "-a",
            "-F",
            "199",
            "-d",
            "4",
            "-o",
            out.to_str().unwrap(),
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    eprintln!("{}", run.stderr);
    let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
    for (runtime, path) in runtimes.iter().zip(&paths) {
        let comm = runtime.comm;
        let prefix = format!("{comm};");
        let own: Vec<(String, u64)> = folded
            .iter()
            .filter(|(stack, _)| stack.starts_with(&prefix))
            .cloned()
            .collect();
        check_chain(&format!("{test}: {comm}"), &own, runtime.script, path);
    }
    drop(running);
}

/// Debian 13's Python, Ruby, PHP and node in one whole-machine profile, each named.
#[test]
fn every_runtime_of_debian_trixie_named_on_all_cpus() {
    let test = "every_runtime_of_debian_trixie_named_on_all_cpus";
    require_root();
    let Some(root) = distro_root(test, "trixie") else {
        return;
    };
    all_cpus(
        test,
        &root,
        &[
            &PYTHON_3_13_TRIXIE,
            &RUBY_3_3_TRIXIE,
            &PHP_8_4_TRIXIE,
            &NODE_20_TRIXIE,
        ],
    );
}
