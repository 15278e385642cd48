//! Debian testing's (forky's) CPython 3.14.8, run in the Debian forky root with `chroot`
//! and profiled from the host with no flags, started by tracekit and attached to: the
//! chain fixture is named with its hot line. 3.14's frames hold their code object as a
//! tagged `_PyStackRef`, and its entry frames have a new owner value; before 3.14 was
//! known, the summary said "no layout for CPython 3.14" and no Python frame was named.
//!
//! Debian forky's node 24.21 (`/usr/bin/node` linked to `libnode.so.137`, V8 13.6), the
//! same way: its library exports the `v8dbg_*` symbols but neither the builtins' symbol
//! nor their accessors, nor `IsolateGroup::default_isolate_group_`. The builtins are found
//! as the code V8 gives no unwind information, the isolate group through
//! `v8::IsolateGroup::GetDefault()`. Before, no JavaScript frame was named ("no
//! v8_Default_embedded_blob_code_ symbol").

use tracekit_tests::{distro_root, require_root};

use super::trixie::{chain_by_pid, chain_from_start};

#[test]
fn python_3_14_chain_debian_forky_by_pid() {
    let test = "python_3_14_chain_debian_forky_by_pid";
    require_root();
    let Some(root) = distro_root(test, "forky") else {
        return;
    };
    chain_by_pid(test, &root, "/usr/bin/python3.14", "py_chain.py");
}

#[test]
fn python_3_14_chain_debian_forky_from_start() {
    let test = "python_3_14_chain_debian_forky_from_start";
    require_root();
    let Some(root) = distro_root(test, "forky") else {
        return;
    };
    chain_from_start(test, &root, "/usr/bin/python3.14", "py_chain.py");
}

#[test]
fn node_24_chain_debian_forky_by_pid() {
    let test = "node_24_chain_debian_forky_by_pid";
    require_root();
    let Some(root) = distro_root(test, "forky") else {
        return;
    };
    chain_by_pid(test, &root, "/usr/bin/node", "js_chain.js");
}

#[test]
fn node_24_chain_debian_forky_from_start() {
    let test = "node_24_chain_debian_forky_from_start";
    require_root();
    let Some(root) = distro_root(test, "forky") else {
        return;
    };
    chain_from_start(test, &root, "/usr/bin/node", "js_chain.js");
}
