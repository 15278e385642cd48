//! Debian 13's (trixie's) runtimes in their root: what the matrix's cells share
//! ([`super::matrix`]: the fixture copied into the root, profiled by pid and from start,
//! the chain checked), and a version with no layout: it keeps whole native stacks and is
//! said in the run's summary without `-v`, and in the JSON's `runtimes_not_named`.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use tracekit_tests::{
    ProcMount, assert_share, chain_in_order, chroot_command, distro_root, parse_folded,
    require_root, run, scratch, share, spawn_ready, tracekit, tracekit_bin, workspace,
};

use super::hot_line;

const TIMEOUT: Duration = Duration::from_secs(120);

/// Copies fixture `name` into `root`'s `/tmp/tracekit-fixtures`; its path as the chrooted
/// process sees it (and names its frames).
pub(super) fn fixture_in_root(root: &Path, name: &str) -> String {
    let dir = root.join("tmp/tracekit-fixtures");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        workspace().join("tests/fixtures").join(name),
        dir.join(name),
    )
    .unwrap();
    format!("/tmp/tracekit-fixtures/{name}")
}

/// The shares of `folded` that name `leaf` and the whole chain with the hot line of
/// `script` (at `path` in the root), printed and checked: at least 95% and 90%.
pub(super) fn check_chain(test: &str, folded: &[(String, u64)], script: &str, path: &str) {
    let line = hot_line(script);
    let chain = [
        "outer (".to_string(),
        "middle (".to_string(),
        format!("leaf ({path}:{line})"),
    ];
    let leaf = share(folded, |stack| stack.contains(";leaf ("));
    assert_share(test, "samples name leaf", leaf, (50, 0.95), &folded);
    let whole = share(folded, |stack| chain_in_order(stack, &chain));
    let what = format!("samples name {chain:?} (line {line})");
    assert_share(test, &what, whole, (50, 0.90), &folded);
}

/// `tracekit profile -F 199 -d 3 -p PID` with folded and JSON outputs, no `-v`: the
/// folded stacks, the JSON, and tracekit's stderr.
fn profile_pid(dir: &Path, pid: u32) -> (Vec<(String, u64)>, serde_json::Value, String) {
    let folded = dir.join("out.folded");
    let json = dir.join("out.json");
    let pid = pid.to_string();
    let run = tracekit(
        [
            "profile",
            "-F",
            "199",
            "-p",
            &pid,
            "-d",
            "3",
            "-o",
            folded.to_str().unwrap(),
            "-o",
            json.to_str().unwrap(),
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    eprintln!("{}", run.stderr);
    (
        parse_folded(&std::fs::read_to_string(&folded).unwrap()),
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap(),
        run.stderr,
    )
}

/// Runs `program args` in `root` (a fixture burning 8 s), profiles it by pid and checks
/// its chain.
pub(super) fn chain_by_pid(test: &str, root: &Path, program: &str, script: &str) {
    let dir = scratch(test);
    let path = fixture_in_root(root, script);
    let (command, _proc) = chroot_command(root, program, &[&path, "8"]);
    let mut child = spawn_ready(command);
    let (folded, _, _) = profile_pid(&dir, child.id());
    let _ = child.kill();
    let _ = child.wait();
    check_chain(test, &folded, script, &path);
}

/// `tracekit profile -F 199 -o DIR/out.folded -- chroot ROOT program script 8`, no `-v`,
/// and checks the chain. The runtime's start-up is in the profile (rubygems' is 0.25 s,
/// all of it named Ruby frames but not the chain's): 8 s of burning keeps it under 5%.
pub(super) fn chain_from_start(test: &str, root: &Path, program: &str, script: &str) {
    let path = fixture_in_root(root, script);
    let folded = profile_in_root(test, root, &[program, &path, "8"]);
    check_chain(test, &folded, script, &path);
}

/// `tracekit profile -F 199 -o DIR/out.folded -- chroot ROOT ARGS...` (its `/proc` mounted
/// meanwhile), no `-v`, which must exit 0: its folded stacks (its stderr printed).
pub(super) fn profile_in_root(test: &str, root: &Path, args: &[&str]) -> Vec<(String, u64)> {
    let _proc = proc_mounted(root);
    let out = scratch(test).join("out.folded");
    let mut profile = Command::new(tracekit_bin());
    profile
        .args(["profile", "-F", "199", "-o"])
        .arg(&out)
        .arg("--")
        .arg("chroot")
        .arg(root)
        .args(args);
    let done = run(profile, TIMEOUT);
    done.assert_code(0);
    eprintln!("{}", done.stderr);
    parse_folded(&std::fs::read_to_string(&out).unwrap())
}

/// The root's `/proc`, mounted while the guard lives.
fn proc_mounted(root: &Path) -> ProcMount {
    chroot_command(root, "true", &[]).1
}

/// `reload` (rb_load.rb) spends most of its time in `load` (a C function) parsing and
/// compiling a file: Ruby 3.3 pushes a frame with no `pc` meanwhile, flagged as the first
/// of an eval call (`rb_vm_push_frame_fname`'s), though no eval call runs it. At least 90%
/// of the samples name `reload` at its `load` line. Before, the walk took the flag for the
/// end of the call and kept the whole stack native: 8 of 173 samples named `reload`.
#[test]
fn ruby_3_3_names_the_caller_of_a_load_that_parses() {
    let test = "ruby_3_3_names_the_caller_of_a_load_that_parses";
    require_root();
    let Some(root) = distro_root(test, "trixie") else {
        return;
    };
    let dir = scratch(test);
    let script = "rb_load.rb";
    let path = fixture_in_root(&root, script);
    let (command, _proc) = chroot_command(&root, "/usr/bin/ruby3.3", &[&path, "8"]);
    let mut child = spawn_ready(command);
    let (folded, _, _) = profile_pid(&dir, child.id());
    let _ = child.kill();
    let _ = child.wait();
    let caller = format!(";reload ({path}:{}", hot_line(script));
    let named = share(&folded, |stack| stack.contains(&caller));
    assert_share(
        test,
        &format!("samples name {caller:?}"),
        named,
        (50, 0.90),
        &folded,
    );
}

/// `rb_reuse.rb`: 400 methods `first_N` burn under `phase_one`, are freed, and 400
/// `second_N` burn under `phase_two` in the iseq slots they left. No `phase_two` sample
/// names a `first_` method, at least 90% name a `second_` one. Before, an address was
/// named by the first iseq read there: 104 of 594 `phase_two` samples named `first_`
/// methods (the same happened to RuboCop's and Rouge's methods in the slots of
/// `<top (required)>` iseqs of files required earlier).
#[test]
fn ruby_3_3_names_an_iseq_in_a_freed_ones_slot() {
    let test = "ruby_3_3_names_an_iseq_in_a_freed_ones_slot";
    require_root();
    let Some(root) = distro_root(test, "trixie") else {
        return;
    };
    let path = fixture_in_root(&root, "rb_reuse.rb");
    let folded = profile_in_root(test, &root, &["/usr/bin/ruby3.3", &path, "6"]);
    let second: Vec<(String, u64)> = folded
        .iter()
        .filter(|(stack, _)| stack.contains(";phase_two ("))
        .cloned()
        .collect();
    let innermost = |stack: &str, prefix: &str| {
        stack
            .split(';')
            .rev()
            .find(|frame| frame.ends_with(')') && frame.contains(" (<reuse>:"))
            .is_some_and(|frame| frame.starts_with(prefix))
    };
    let (stale, _) = share(&second, |stack| innermost(stack, "first_"));
    let named = share(&second, |stack| innermost(stack, "second_"));
    eprintln!("{test}: {stale} phase_two samples name a first_ method");
    assert_share(
        test,
        "phase_two samples name a second_ method",
        named,
        (100, 0.90),
        &second,
    );
    assert_eq!(stale, 0, "{second:#?}");
}

/// A copy of `file` in the root's `/tmp/<test>/` under `name`, with `from` (found once
/// or more) replaced by `to` at its first place: the copy's path on the host and in the
/// root.
fn patched_copy(
    root: &Path,
    test: &str,
    file: &str,
    name: &str,
    from: &[u8],
    to: &[u8],
) -> (PathBuf, String) {
    assert_eq!(from.len(), to.len());
    let mut bytes = std::fs::read(root.join(file.trim_start_matches('/'))).unwrap();
    let at = bytes
        .windows(from.len())
        .position(|w| w == from)
        .unwrap_or_else(|| panic!("{file} holds {:?}", String::from_utf8_lossy(from)));
    bytes[at..at + to.len()].copy_from_slice(to);
    let dir = root.join("tmp").join(test);
    std::fs::create_dir_all(&dir).unwrap();
    let host = dir.join(name);
    std::fs::write(&host, &bytes).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&host, std::fs::Permissions::from_mode(0o755)).unwrap();
    (host, format!("/tmp/{test}/{name}"))
}

/// The `runtimes_not_named` entry of `json` for `runtime`, checked to name `version`,
/// `pid` and `reason`.
fn check_json(json: &serde_json::Value, runtime: &str, version: &str, pid: u32, reason: &str) {
    let entries = json["runtimes_not_named"]
        .as_array()
        .unwrap_or_else(|| panic!("no runtimes_not_named: {json}"));
    let entry = entries
        .iter()
        .find(|entry| entry["runtime"] == runtime)
        .unwrap_or_else(|| panic!("no {runtime} in {entries:?}"));
    assert_eq!(entry["version"], version, "{entry}");
    assert_eq!(entry["reason"], reason, "{entry}");
    assert_eq!(entry["pids"], serde_json::json!([pid]), "{entry}");
}

/// Debian trixie's libruby 3.3.8 with its `ruby_version` changed to 3.9.8 (loaded through
/// `LD_LIBRARY_PATH`, gems off): no layout, so no Ruby frame is made up, the stacks stay
/// whole native ones (down to `ruby_run_node`), and the summary (no `-v`) and the JSON
/// say which runtime, version and process, and why.
#[test]
fn ruby_of_an_unknown_version_is_said_in_the_summary() {
    let test = "ruby_of_an_unknown_version_is_said_in_the_summary";
    require_root();
    let Some(root) = distro_root(test, "trixie") else {
        return;
    };
    let dir = scratch(test);
    let (library, _) = patched_copy(
        &root,
        test,
        "/usr/lib/x86_64-linux-gnu/libruby-3.3.so.3.3.8",
        "libruby-3.3.so.3.3",
        b"\x003.3.8\x00",
        b"\x003.9.8\x00",
    );
    let script = fixture_in_root(&root, "rb_chain.rb");
    let code = format!("abort 'not patched' unless RUBY_VERSION == '3.9.8'; load '{script}'");
    let (mut command, _proc) = chroot_command(
        &root,
        "/usr/bin/ruby3.3",
        &["--disable-gems", "-e", &code, "8"],
    );
    command.env("LD_LIBRARY_PATH", format!("/tmp/{test}"));
    let mut child = spawn_ready(command);
    let pid = child.id();
    let (folded, json, stderr) = profile_pid(&dir, pid);
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(library.parent().unwrap());
    let (named, total) = share(&folded, |stack| stack.contains("leaf ("));
    let (whole, _) = share(&folded, |stack| stack.contains(";ruby_run_node;"));
    eprintln!("{test}: {named} of {total} samples name leaf, {whole} pass ruby_run_node");
    assert!(total >= 50, "only {total} samples: {folded:#?}");
    assert_eq!(named, 0, "{folded:#?}");
    assert!(
        whole as f64 >= 0.90 * total as f64,
        "{whole} of {total} samples walk to ruby_run_node: {folded:#?}"
    );
    let reason = "no layout for Ruby 3.9 (known: 3.1, 3.3)";
    let line = format!("tracekit: ruby 3.9.8 (pid {pid}): Ruby frames not named: {reason}\n");
    assert!(stderr.contains(&line), "want {line:?} in: {stderr}");
    check_json(&json, "ruby", "3.9.8", pid, reason);
}

/// Debian trixie's php8.4 with its version literal changed to 8.9: `execute_ex` stays in
/// whole native stacks, no PHP frame is made up, and the summary and the JSON say why.
#[test]
fn php_of_an_unknown_version_is_said_in_the_summary() {
    let test = "php_of_an_unknown_version_is_said_in_the_summary";
    require_root();
    let Some(root) = distro_root(test, "trixie") else {
        return;
    };
    let dir = scratch(test);
    let (binary, php) = patched_copy(
        &root,
        test,
        "/usr/bin/php8.4",
        "php8.9",
        b"X-Powered-By: PHP/8.4.",
        b"X-Powered-By: PHP/8.9.",
    );
    let script = fixture_in_root(&root, "php_chain.php");
    let (command, _proc) = chroot_command(&root, &php, &[&script, "8"]);
    let mut child = spawn_ready(command);
    let pid = child.id();
    let (folded, json, stderr) = profile_pid(&dir, pid);
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(binary.parent().unwrap());
    let (named, total) = share(&folded, |stack| stack.contains("leaf ("));
    let (native, _) = share(&folded, |stack| stack.contains(";execute_ex"));
    eprintln!("{test}: {named} of {total} samples name leaf, {native} keep execute_ex");
    assert!(total >= 50, "only {total} samples: {folded:#?}");
    assert_eq!(named, 0, "{folded:#?}");
    assert!(
        native as f64 >= 0.85 * total as f64,
        "{native} of {total} samples keep execute_ex: {folded:#?}"
    );
    let version = json["runtimes_not_named"][0]["version"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(version.starts_with("8.9."), "{json}");
    let reason = "no layout for PHP 8.9 (known: 8.2, 8.4)";
    let line = format!("tracekit: php {version} (pid {pid}): PHP frames not named: {reason}\n");
    assert!(stderr.contains(&line), "want {line:?} in: {stderr}");
    check_json(&json, "php", &version, pid, reason);
}
