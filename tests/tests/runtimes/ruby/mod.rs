//! Ruby frames unwound in the kernel: Debian's `ruby` (3.1), installed by the tests when
//! absent, started with no flags; its known chain (`outer -> middle -> leaf`, burning CPU
//! on one line of `leaf`) is named with the hot line, thread by thread. A version with no
//! offsets keeps its native frames, and `-v` says why. Real programs of Debian 13's Ruby
//! against stackprof: [`real_programs`].

mod real_programs;

use std::{path::Path, process::Command};

use tracekit_tests::{chain_in_order, ensure_package, require_root, scratch, share, spawn_ready};

use super::{check_chain, fixture_path, have, profile_pid};

#[test]
fn ruby_chain_debian_3_1() {
    let test = "ruby_chain_debian_3_1";
    require_root();
    if !ensure_package(test, "ruby", || have("/usr/bin/ruby3.1")) {
        return;
    }
    let mut command = Command::new("/usr/bin/ruby3.1");
    command.arg(fixture_path("rb_chain.rb")).arg("8");
    check_chain(test, command, "rb_chain.rb");
}

/// A Ruby whose version has no offsets (Debian's libruby with `ruby_version` changed to
/// 3.9.2, loaded through `LD_LIBRARY_PATH`, gems off) keeps native frames, and `-v` says
/// why.
#[test]
fn ruby_of_an_unknown_version_keeps_native_frames() {
    let test = "ruby_of_an_unknown_version_keeps_native_frames";
    require_root();
    if !ensure_package(test, "ruby", || have("/usr/bin/ruby3.1")) {
        return;
    }
    let dir = scratch(test);
    let name = "libruby-3.1.so.3.1";
    let mut library = std::fs::read(Path::new("/usr/lib/x86_64-linux-gnu").join(name)).unwrap();
    // `ruby_version` is the NUL-terminated "3.1.2" that RUBY_VERSION reports.
    let needle = b"\x003.1.2\x00";
    let at = library
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("libruby holds its version string");
    library[at + 3] = b'9';
    std::fs::write(dir.join(name), &library).unwrap();
    drop(library);
    let mut command = Command::new("/usr/bin/ruby3.1");
    command
        .env("LD_LIBRARY_PATH", &dir)
        // rubygems' rbconfig refuses a version other than its own.
        .arg("--disable-gems")
        .arg("-e")
        .arg(format!(
            "abort 'not patched' unless RUBY_VERSION == '3.9.2'; load '{}'",
            fixture_path("rb_chain.rb")
        ))
        .arg("8");
    let mut child = spawn_ready(command);
    let (folded, stderr) = profile_pid(&dir, child.id());
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_file(dir.join(name));
    let (named, total) = share(&folded, |path| path.contains("leaf ("));
    let (native, _) = share(&folded, |path| path.contains(";rb_vm_exec"));
    eprintln!("{test}: {named} of {total} samples name leaf, {native} keep rb_vm_exec");
    assert!(total >= 50, "only {total} samples: {folded:#?}");
    assert_eq!(named, 0, "{folded:#?}");
    assert!(
        native as f64 >= 0.85 * total as f64,
        "{native} of {total} samples keep rb_vm_exec: {folded:#?}"
    );
    assert!(
        stderr.contains(&format!(
            "native frames for {} (no layout for Ruby 3.9 (known: 3.1, 3.3)) in 1 process",
            dir.join(name).display()
        )),
        "{stderr}"
    );
}

/// Two Ruby threads in two chains: each thread's samples (by its comm) name its own chain,
/// never the other's (each thread's execution context is its own TLS variable).
#[test]
fn ruby_threads_each_their_own_chain() {
    let test = "ruby_threads_each_their_own_chain";
    require_root();
    if !ensure_package(test, "ruby", || have("/usr/bin/ruby3.1")) {
        return;
    }
    let dir = scratch(test);
    let mut command = Command::new("/usr/bin/ruby3.1");
    command.arg(fixture_path("rb_threads.rb")).arg("8");
    let mut child = spawn_ready(command);
    let (folded, _) = profile_pid(&dir, child.id());
    let _ = child.kill();
    let _ = child.wait();
    for (thread, other) in [("a", "b"), ("b", "a")] {
        let comm = format!("rb-{thread}");
        let mine: Vec<(String, u64)> = folded
            .iter()
            .filter(|(path, _)| path.split(';').next() == Some(comm.as_str()))
            .cloned()
            .collect();
        let chain = [
            format!("{thread}_outer ("),
            format!("{thread}_leaf ("),
            "burn (".to_string(),
        ];
        let (own, total) = share(&mine, |path| chain_in_order(path, &chain));
        let (foreign, _) = share(&mine, |path| path.contains(&format!(";{other}_leaf (")));
        eprintln!("{test}: {comm}: {own} of {total} samples in its chain, {foreign} in another's");
        assert!(total >= 15, "only {total} samples of {comm}: {folded:#?}");
        assert!(
            own as f64 >= 0.85 * total as f64,
            "{own} of {total} samples of {comm} name {chain:?}: {folded:#?}"
        );
        assert_eq!(
            foreign, 0,
            "{comm} has another thread's frames: {folded:#?}"
        );
    }
}
