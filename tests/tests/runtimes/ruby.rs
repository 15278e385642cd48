//! Ruby and PHP frames unwound in the kernel (issue 27, point 3): Debian's `ruby` (3.1)
//! and `php8.2-cli`, installed by the tests when absent, started with no flags; their known
//! chain (`outer -> middle -> leaf`, burning CPU on one line of `leaf`) is named with the
//! hot line. A version with no offsets keeps its native frames, and `-v` says why.

use std::{path::Path, process::Command, time::Duration};

use tracekit_tests::{
    chain_in_order, ensure_package, parse_folded, require_root, scratch, share, spawn_ready,
    tracekit, workspace,
};

const TIMEOUT: Duration = Duration::from_secs(120);

fn fixture(name: &str) -> String {
    workspace()
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

/// The line of `name`'s hot loop (all of it on one line, marked "the hot line").
fn hot_line(name: &str) -> usize {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    text.lines()
        .position(|line| line.contains("the hot line"))
        .unwrap()
        + 1
}

/// Profiles `pid` for 3 s at 199 Hz: folded stacks and tracekit's stderr (`-v`).
fn profile_pid(dir: &Path, pid: u32) -> (Vec<(String, u64)>, String) {
    let out = dir.join("out.folded");
    let pid = pid.to_string();
    let run = tracekit(
        [
            "profile",
            "-v",
            "-F",
            "199",
            "-p",
            &pid,
            "-d",
            "3",
            "-o",
            out.to_str().unwrap(),
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    eprintln!("{}", run.stderr);
    (
        parse_folded(&std::fs::read_to_string(&out).unwrap()),
        run.stderr,
    )
}

/// Profiles `command` (a fixture that prints "ready" and burns 8 s) and checks its chain:
/// at least 90% of samples name the leaf, 85% the whole chain with the hot line.
fn check_chain(test: &str, command: Command, script: &str) {
    let dir = scratch(test);
    let mut child = spawn_ready(command);
    let (folded, _) = profile_pid(&dir, child.id());
    let _ = child.kill();
    let _ = child.wait();
    let line = hot_line(script);
    let chain = [
        "outer (".to_string(),
        "middle (".to_string(),
        format!("leaf ({}:{line})", fixture(script)),
    ];
    let (leaf, total) = share(&folded, |path| path.contains(";leaf ("));
    let (whole, _) = share(&folded, |path| chain_in_order(path, &chain));
    eprintln!(
        "{test}: {leaf} of {total} samples name leaf, {whole} the whole chain with line {line}"
    );
    assert!(total >= 50, "only {total} samples: {folded:#?}");
    assert!(
        leaf as f64 >= 0.90 * total as f64,
        "{leaf} of {total} samples name leaf (want 90%): {folded:#?}"
    );
    assert!(
        whole as f64 >= 0.85 * total as f64,
        "{whole} of {total} samples name {chain:?} (want 85%): {folded:#?}"
    );
}

fn have(binary: &str) -> bool {
    Path::new(binary).is_file()
}

#[test]
fn ruby_chain_debian_3_1() {
    let test = "ruby_chain_debian_3_1";
    require_root();
    if !ensure_package(test, "ruby", || have("/usr/bin/ruby3.1")) {
        return;
    }
    let mut command = Command::new("/usr/bin/ruby3.1");
    command.arg(fixture("rb_chain.rb")).arg("8");
    check_chain(test, command, "rb_chain.rb");
}

#[test]
fn php_chain_debian_8_2() {
    let test = "php_chain_debian_8_2";
    require_root();
    if !ensure_package(test, "php8.2-cli", || have("/usr/bin/php8.2")) {
        return;
    }
    let mut command = Command::new("/usr/bin/php8.2");
    command.arg(fixture("php_chain.php")).arg("8");
    check_chain(test, command, "php_chain.php");
}

/// A PHP whose version has no offsets (Debian's binary with its version literal changed to
/// 8.9) keeps native frames: `execute_ex` stays, no PHP frame is made up, and `-v` names
/// the binary and the reason.
#[test]
fn php_of_an_unknown_version_keeps_native_frames() {
    let test = "php_of_an_unknown_version_keeps_native_frames";
    require_root();
    if !ensure_package(test, "php8.2-cli", || have("/usr/bin/php8.2")) {
        return;
    }
    let dir = scratch(test);
    let mut binary = std::fs::read("/usr/bin/php8.2").unwrap();
    let needle = b"X-Powered-By: PHP/8.2.";
    let at = binary
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("php8.2 holds its version literal");
    binary[at + needle.len() - 2] = b'9';
    let php = dir.join("php8.9");
    std::fs::write(&php, &binary).unwrap();
    drop(binary);
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&php, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut command = Command::new(&php);
    command.arg(fixture("php_chain.php")).arg("8");
    let mut child = spawn_ready(command);
    let (folded, stderr) = profile_pid(&dir, child.id());
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_file(&php);
    let (named, total) = share(&folded, |path| path.contains("leaf ("));
    let (native, _) = share(&folded, |path| path.contains(";execute_ex"));
    eprintln!("{test}: {named} of {total} samples name leaf, {native} keep execute_ex");
    assert!(total >= 50, "only {total} samples: {folded:#?}");
    assert_eq!(named, 0, "{folded:#?}");
    assert!(
        native as f64 >= 0.85 * total as f64,
        "{native} of {total} samples keep execute_ex: {folded:#?}"
    );
    assert!(
        stderr.contains(&format!(
            "native frames for {} (PHP 8.9: no structure offsets for this version (8.2 is known)) in 1 process",
            php.display()
        )),
        "{stderr}"
    );
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
            fixture("rb_chain.rb")
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
            "native frames for {} (Ruby 3.9: no structure offsets for this version (3.1 is known)) in 1 process",
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
    command.arg(fixture("rb_threads.rb")).arg("8");
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

/// Off-CPU stacks of Ruby and PHP programs blocked in `sleep`/`usleep` name their callers:
/// the main thread sleeps all of the 2 s, so most of its time names the chain.
#[test]
fn offcpu_names_ruby_and_php_frames() {
    let test = "offcpu_names_ruby_and_php_frames";
    require_root();
    for (binary, package, script) in [
        ("/usr/bin/ruby3.1", "ruby", "rb_sleep.rb"),
        ("/usr/bin/php8.2", "php8.2-cli", "php_sleep.php"),
    ] {
        if !ensure_package(test, package, || have(binary)) {
            continue;
        }
        let dir = scratch(&format!("{test}_{package}"));
        let out = dir.join("offcpu.folded");
        let mut command = Command::new(binary);
        command.arg(fixture(script)).arg("8");
        let mut child = spawn_ready(command);
        let pid = child.id().to_string();
        let run = tracekit(
            [
                "offcpu",
                "-v",
                "-p",
                &pid,
                "-d",
                "2",
                "-o",
                out.to_str().unwrap(),
            ],
            TIMEOUT,
        );
        let _ = child.kill();
        let _ = child.wait();
        run.assert_code(0);
        let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
        let chain = [
            "sleepy_outer (".to_string(),
            format!("sleepy_leaf ({}:", fixture(script)),
        ];
        let (named, total) = share(&folded, |path| chain_in_order(path, &chain));
        eprintln!("{test}: {script}: {named} us of {total} off-CPU name {chain:?}");
        assert!(
            named >= 1_500_000,
            "{named} of {total} us name {chain:?} (want 1.5 s of 2): {folded:#?}"
        );
    }
}

/// Interpreted code calling C calling interpreted code: the C function's native frames
/// stay between the caller and the block or closure it runs, in the true order.
#[test]
fn ruby_and_php_frames_around_c_functions() {
    let test = "ruby_and_php_frames_around_c_functions";
    require_root();
    for (binary, package, script, chain) in [
        (
            "/usr/bin/ruby3.1",
            "ruby",
            "rb_each.rb",
            ["middle (", "rb_ary_each", "block in middle (", "leaf ("],
        ),
        (
            "/usr/bin/php8.2",
            "php8.2-cli",
            "php_map.php",
            [
                "Worker::middle (",
                "zend_call_function",
                "Worker::{closure} (",
                "Worker::leaf (",
            ],
        ),
    ] {
        if !ensure_package(test, package, || have(binary)) {
            continue;
        }
        let dir = scratch(&format!("{test}_{package}"));
        let mut command = Command::new(binary);
        command.arg(fixture(script)).arg("8");
        let mut child = spawn_ready(command);
        let (folded, _) = profile_pid(&dir, child.id());
        let _ = child.kill();
        let _ = child.wait();
        let chain = chain.map(String::from);
        let (whole, total) = share(&folded, |path| chain_in_order(path, &chain));
        eprintln!("{test}: {script}: {whole} of {total} samples name {chain:?} in order");
        assert!(total >= 50, "only {total} samples: {folded:#?}");
        assert!(
            whole as f64 >= 0.85 * total as f64,
            "{whole} of {total} samples name {chain:?}: {folded:#?}"
        );
    }
}
