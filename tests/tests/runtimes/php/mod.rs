//! PHP frames unwound in the kernel: Debian's `php8.2-cli`, installed by the tests when
//! absent, started with no flags; its known chain (`outer -> middle -> leaf`, burning CPU on
//! one line of `leaf`) is named with the hot line. A version with no offsets keeps its
//! native frames, and `-v` says why. Off-CPU stacks and frames around C functions are
//! checked for Ruby and PHP together. Real programs against PHP's own profiler are in
//! [`real_programs`].

mod real_programs;

use std::{process::Command, time::Duration};

use tracekit_tests::{
    chain_in_order, ensure_package, parse_folded, require_root, scratch, share, spawn_ready,
    tracekit,
};

use super::{check_chain, fixture_path, have, hot_line, profile_pid};

const TIMEOUT: Duration = Duration::from_secs(120);

#[test]
fn php_chain_debian_8_2() {
    let test = "php_chain_debian_8_2";
    require_root();
    if !ensure_package(test, "php8.2-cli", || have("/usr/bin/php8.2")) {
        return;
    }
    let mut command = Command::new("/usr/bin/php8.2");
    command.arg(fixture_path("php_chain.php")).arg("8");
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
    command.arg(fixture_path("php_chain.php")).arg("8");
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
            "native frames for {} (no layout for PHP 8.9 (known: 8.2, 8.4)) in 1 process",
            php.display()
        )),
        "{stderr}"
    );
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
        command.arg(fixture_path(script)).arg("8");
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
            format!("sleepy_leaf ({}:", fixture_path(script)),
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
        command.arg(fixture_path(script)).arg("8");
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

/// A library unloaded before its process exits keeps its frames' names: PHP `dlclose`s its
/// extensions at shutdown, and `-- CMD` reads the memory map a last time at the exit, which
/// no longer holds them. `PhpToken::tokenize` runs in the tokenizer extension
/// (`tokenizer.so`, stripped: its frames are named `tokenizer.so+0x...`) and calls Zend's
/// `lex_scan`. 357 of the 363 samples in the call name it (the others free the last
/// call's tokens); before, its frames were `[unknown]` in all of them (279 of 279).
#[test]
fn php_extension_unloaded_at_exit_keeps_its_frames() {
    let test = "php_extension_unloaded_at_exit_keeps_its_frames";
    require_root();
    if !ensure_package(test, "php8.2-cli", || have("/usr/bin/php8.2")) {
        return;
    }
    let dir = scratch(test);
    let out = dir.join("out.folded");
    let script = fixture_path("php_tokenize.php");
    let run = tracekit(
        [
            "profile",
            "-F",
            "199",
            "-o",
            out.to_str().unwrap(),
            "--",
            "/usr/bin/php8.2",
            &script,
            "3",
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
    // The frame below the script's call: the extension's.
    let call = format!("({script}:{});", hot_line("php_tokenize.php"));
    let (calling, total) = share(&folded, |path| path.contains(&call));
    let (named, _) = share(&folded, |path| {
        path.contains(&format!("{call}tokenizer.so+0x")) && !path.contains("[unknown]")
    });
    eprintln!(
        "{test}: {named} of {calling} samples in PhpToken::tokenize name the tokenizer ({total} in all)"
    );
    assert!(
        calling >= 150,
        "only {calling} samples in PhpToken::tokenize: {folded:#?}"
    );
    assert!(
        named as f64 >= 0.95 * calling as f64,
        "{named} of {calling} samples in PhpToken::tokenize name the tokenizer: {folded:#?}"
    );
}
