//! Debian testing's (forky's) runtimes where the matrix ([`super::matrix`]) does not
//! reach them. Its CPython 3.14.8 and node 24.21 are in the matrix: 3.14's frames hold
//! their code object as a tagged `_PyStackRef` and its entry frames have a new owner value;
//! node 24 (`/usr/bin/node` linked to `libnode.so.137`, V8 13.6) exports the `v8dbg_*`
//! symbols but neither the builtins' symbol nor their accessors, nor
//! `IsolateGroup::default_isolate_group_`: the builtins are found as the code V8 gives no
//! unwind information, the isolate group through `v8::IsolateGroup::GetDefault()`.
//!
//! Here, forky's OpenJDK 25 with `Ledger.java` (compiled by the host's javac), no flags: the
//! main thread's samples name `Ledger.sumCents` under `main -> outer -> middle -> leaf`,
//! C2's inlined methods included. JDK 25 keeps an nmethod's debug information on the C
//! heap, names its methods' line table flag in `ConstMethodFlags`, and writes its streams'
//! numbers with an excess of 1; before, every sample ended in `[unknown]` in the code
//! cache ("the JVM does not state its code heaps' or nmethods' layout").

use std::path::Path;

use tracekit_tests::{
    assert_share, chain_in_order, chroot_command, compile_java, distro_root, installed,
    require_root, scratch, share, spawn_ready,
};

use super::{
    java::{CHAIN, main_thread},
    profile_pid,
    trixie::profile_in_root,
};

/// OpenJDK 25's `java` in the forky root.
const JAVA_25: &str = "/usr/lib/jvm/java-25-openjdk-amd64/bin/java";

/// `Ledger.java` compiled into the root's `/tmp/tracekit-fixtures/classes`: the path
/// there; `None` (the test skips, saying why) without the host's `javac` or the JDK.
fn ledger_in_root(test: &str, root: &Path) -> Option<&'static str> {
    if !root.join(JAVA_25.trim_start_matches('/')).is_file() {
        println!("{test}: skipped: no {JAVA_25} in the root");
        return None;
    }
    installed(test, "javac", "openjdk-17-jdk-headless").then(|| {
        compile_java(&root.join("tmp/tracekit-fixtures"), "Ledger.java");
        "/tmp/tracekit-fixtures/classes"
    })
}

/// Of the main thread's samples in `folded`, 95% name `Ledger.sumCents` and 90% the whole
/// chain in order, each caller at its call's line.
fn check_java_chain(test: &str, folded: &[(String, u64)]) {
    let main: Vec<(String, u64)> = folded
        .iter()
        .filter(|(path, _)| main_thread(path))
        .cloned()
        .collect();
    let leaf = share(&main, |path| path.contains(CHAIN[4]));
    let what = "main-thread samples name the leaf";
    assert_share(test, what, leaf, (50, 0.95), &folded);
    let whole = share(&main, |path| chain_in_order(path, &CHAIN));
    let what = "main-thread samples name the whole chain";
    assert_share(test, what, whole, (50, 0.90), &folded);
}

#[test]
fn java_25_chain_debian_forky_by_pid() {
    let test = "java_25_chain_debian_forky_by_pid";
    require_root();
    let Some(root) = distro_root(test, "forky") else {
        return;
    };
    let Some(classes) = ledger_in_root(test, &root) else {
        return;
    };
    let (command, _proc) = chroot_command(&root, JAVA_25, &["-cp", classes, "Ledger", "10"]);
    let mut child = spawn_ready(command);
    let (folded, _) = profile_pid(&scratch(test), child.id());
    let _ = child.kill();
    let _ = child.wait();
    check_java_chain(test, &folded);
}

#[test]
fn java_25_chain_debian_forky_from_start() {
    let test = "java_25_chain_debian_forky_from_start";
    require_root();
    let Some(root) = distro_root(test, "forky") else {
        return;
    };
    let Some(classes) = ledger_in_root(test, &root) else {
        return;
    };
    let folded = profile_in_root(test, &root, &[JAVA_25, "-cp", classes, "Ledger", "8"]);
    check_java_chain(test, &folded);
}
