//! Every runtime of a distribution root at once, profiled from the host with `profile -a`
//! and no flags: each runtime's chain fixture runs in the root (`chroot ROOT`), as the
//! distribution ships the runtime, beside the others, and each process's samples name its
//! chain (`outer -> middle -> leaf`) with the hot line, as by pid and from start
//! ([`super::trixie`]). The interpreters' unwind tables are built before sampling starts
//! (at most 2 s): before, on a machine at load 7, 8-17% of each one's samples in a 4 s
//! profile were walked before their tables were in, and cut at their first frame.

use std::{path::Path, process::Child, time::Duration};

use tracekit_tests::{
    chroot_command, distro_root, parse_folded, require_root, scratch, spawn_ready, tracekit,
};

use super::trixie::{check_chain, fixture_in_root};

const TIMEOUT: Duration = Duration::from_secs(120);

/// A runtime of a root: its program, the chain fixture it runs, and the process's comm
/// (the program's file name, or the title the fixture sets).
struct Runtime {
    program: &'static str,
    script: &'static str,
    comm: &'static str,
}

/// Debian 13's runtimes: CPython 3.13, Ruby 3.3, PHP 8.4 and node 20.19 (`libnode.so.115`).
const TRIXIE: [Runtime; 4] = [
    Runtime {
        program: "/usr/bin/python3.13",
        comm: "python3.13",
        script: "py_chain.py",
    },
    Runtime {
        program: "/usr/bin/ruby3.3",
        comm: "ruby3.3",
        script: "rb_chain.rb",
    },
    Runtime {
        program: "/usr/bin/php8.4",
        comm: "php8.4",
        script: "php_chain.php",
    },
    Runtime {
        program: "/usr/bin/node",
        script: "js_chain.js",
        // The fixture's `process.title`.
        comm: "tk_js_chain",
    },
];

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
fn all_cpus(test: &str, root: &Path, runtimes: &[Runtime]) {
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
    all_cpus(test, &root, &TRIXIE);
}
