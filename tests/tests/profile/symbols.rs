//! Frames named in real programs: processes in other mount namespaces, stripped binaries
//! named through debuginfod (or as `module+0xADDR`), and `profile --by line`.

use std::{
    net::TcpListener,
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use tracekit_tests::{
    assert_comm_share, fixture, installed, parse_folded, require_root, run, scratch,
    spawn_tracekit, tracekit, wait_for_stderr, wait_output, workspace,
};

const TIMEOUT: Duration = Duration::from_secs(120);

/// A fixture run from a tmpfs mounted in its own mount namespace (`unshare -m`): the path
/// in its memory map leads nowhere from tracekit's namespace. Named while alive (the run
/// ends first) and after it exited (the run outlives it).
#[test]
fn container_binary_named_alive_and_after_exit() {
    require_root();
    if !installed("container", "unshare", "util-linux") {
        return;
    }
    let dir = scratch("container");
    let burner = fixture("tk_burner");
    let script = dir.join("in-namespace.sh");
    std::fs::write(
        &script,
        "set -e\nmkdir -p /tmp/tk-private-ns\nmount -t tmpfs tk-private /tmp/tk-private-ns\n\
         cp \"$1\" /tmp/tk-private-ns/tk_burner_ns\nexec /tmp/tk-private-ns/tk_burner_ns \"$2\"\n",
    )
    .unwrap();
    let spawn = |seconds: &str| {
        Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh"])
            .arg(&script)
            .arg(&burner)
            .arg(seconds)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("unshare")
    };
    for (case, fixture_seconds, profile_seconds) in [("alive", "6", "3"), ("exited", "2", "5")] {
        let out = dir.join(format!("{case}.folded"));
        let mut profile = spawn_tracekit(
            ["profile", "-a", "-F", "99", "-d", profile_seconds, "-o"]
                .iter()
                .map(|s| s.as_ref())
                .chain([out.as_os_str()]),
        );
        wait_for_stderr(&mut profile, "Hit Ctrl-C to end.", TIMEOUT);
        let mut burner = spawn(fixture_seconds);
        let run = wait_output(profile, TIMEOUT);
        let still_running = burner.try_wait().unwrap().is_none();
        let _ = burner.kill();
        let _ = burner.wait();
        run.assert_code(0);
        assert_eq!(
            still_running,
            case == "alive",
            "{case}: the fixture's timing was off"
        );
        assert!(
            !Path::new("/tmp/tk-private-ns/tk_burner_ns").exists(),
            "the fixture's tmpfs is visible from here"
        );
        let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
        assert_comm_share(&folded, "tk_burner_ns", "main;a;b;leaf", 0.9);
    }
}

/// Stripped fixture with its debug file served by Debian's debuginfod on loopback: named
/// with `DEBUGINFOD_URLS`; `module+0xADDR` (the address `addr2line -e` takes) without a
/// server, and a server that never answers costs at most the timeout.
#[test]
fn debuginfod_names_stripped_frames() {
    require_root();
    let test = "debuginfod";
    if !installed(test, "debuginfod", "debuginfod")
        || !installed(test, "objcopy", "binutils")
        || !installed(test, "addr2line", "binutils")
    {
        return;
    }
    let dir = scratch(test);
    let full = fixture("tk_burner");
    let serve = dir.join("serve");
    std::fs::create_dir_all(&serve).unwrap();
    let stripped = dir.join("tk_burner_stripped");
    let mut keep = Command::new("objcopy");
    keep.arg("--only-keep-debug")
        .arg(&full)
        .arg(serve.join("tk_burner.debug"));
    run(keep, TIMEOUT).assert_code(0);
    let mut strip = Command::new("objcopy");
    strip.arg("--strip-all").arg(&full).arg(&stripped);
    run(strip, TIMEOUT).assert_code(0);

    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut server = Command::new("debuginfod")
        .args(["-F", "-d"])
        .arg(dir.join("db.sqlite"))
        .args(["-p", &port.to_string(), "-L"])
        .arg(&serve)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting debuginfod");
    let url = format!("http://127.0.0.1:{port}");
    // Wait until the server has scanned the directory (it answers 200 for the build ID).
    let build_id = build_id(&stripped);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !http_ok(port, &format!("/buildid/{build_id}/debuginfo")) {
        assert!(
            Instant::now() < deadline,
            "debuginfod did not index {}",
            serve.display()
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    let profile_with = |case: &str, urls: Option<&str>, flags: &[&str]| {
        let out = dir.join(format!("{case}.folded"));
        let mut command = Command::new(tracekit_tests::tracekit_bin());
        command
            .args(["profile", "-F", "99"])
            .args(flags)
            .arg("-o")
            .arg(&out)
            .arg("--")
            .arg(&stripped)
            .arg("2")
            .env("XDG_CACHE_HOME", dir.join(format!("cache-{case}")))
            .env("DEBUGINFOD_TIMEOUT", "3");
        match urls {
            Some(urls) => command.env("DEBUGINFOD_URLS", urls),
            None => command.env_remove("DEBUGINFOD_URLS"),
        };
        let started = Instant::now();
        run(command, TIMEOUT).assert_code(0);
        (
            parse_folded(&std::fs::read_to_string(&out).unwrap()),
            started.elapsed(),
        )
    };
    let profile = |case: &str, urls: Option<&str>| profile_with(case, urls, &[]);
    let comm = "tk_burner_strip";
    // --offline: the server is up, but not asked.
    let (offline, _) = profile_with("offline", Some(&url), &["--offline"]);
    assert_comm_share(&offline, comm, "tk_burner_stripped+0x", 0.9);
    assert!(
        !dir.join("cache-offline/tracekit/debuginfod").exists(),
        "--offline downloaded"
    );
    let (named, _) = profile("served", Some(&url));
    assert_comm_share(&named, comm, "main;a;b;leaf", 0.9);
    assert!(
        dir.join("cache-served/tracekit/debuginfod")
            .join(&build_id)
            .join("debuginfo")
            .is_file(),
        "the download is cached under $XDG_CACHE_HOME/tracekit"
    );

    let _ = server.kill();
    let _ = server.wait();
    let (unnamed, _) = profile("stopped", Some(&url));
    assert_comm_share(&unnamed, comm, "tk_burner_stripped+0x", 0.9);
    let (offline, _) = profile("no-urls", None);
    assert_comm_share(&offline, comm, "tk_burner_stripped+0x", 0.9);
    // The leaf's module+offset is where addr2line finds `leaf`.
    let leaf = offline
        .iter()
        .filter(|(path, _)| path.starts_with(comm))
        .max_by_key(|(_, n)| *n)
        .and_then(|(path, _)| path.rsplit(';').next())
        .and_then(|frame| frame.strip_prefix("tk_burner_stripped+"))
        .expect("a module+offset leaf")
        .to_string();
    let mut addr2line = Command::new("addr2line");
    addr2line.args(["-f", "-e"]).arg(&full).arg(&leaf);
    let lines = run(addr2line, TIMEOUT);
    assert_eq!(
        lines.stdout.lines().next(),
        Some("leaf"),
        "{leaf}: {lines:?}"
    );

    // A server that accepts and never answers: the run waits at most DEBUGINFOD_TIMEOUT,
    // or --debuginfod-timeout.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}", silent.local_addr().unwrap());
    let (_, with_silent) = profile("silent", Some(&silent_url));
    let (_, baseline) = profile("baseline", None);
    assert!(
        with_silent < baseline + Duration::from_secs(3) + Duration::from_millis(1500),
        "a silent server cost {:?} (without: {baseline:?}; timeout 3 s)",
        with_silent
    );
    let (_, with_flag) = profile_with(
        "silent-flag",
        Some(&silent_url),
        &["--debuginfod-timeout", "0.5"],
    );
    assert!(
        with_flag < baseline + Duration::from_millis(500) + Duration::from_millis(1500),
        "a silent server cost {with_flag:?} with --debuginfod-timeout 0.5 (without: {baseline:?})"
    );
    drop(silent);
}

/// The GNU build ID of an ELF file, in hex (from `readelf -n`).
fn build_id(path: &Path) -> String {
    let mut readelf = Command::new("readelf");
    readelf.arg("-n").arg(path);
    let out = run(readelf, TIMEOUT);
    out.stdout
        .lines()
        .find_map(|line| line.trim().strip_prefix("Build ID: "))
        .expect("a build ID")
        .trim()
        .to_string()
}

/// Whether `GET path` on loopback `port` answers 200.
fn http_ok(port: u16, path: &str) -> bool {
    use std::io::{Read as _, Write as _};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    if write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.ends_with(b"200")
}

/// A function's row of `profile --by line`'s report: (function, its samples, [(file:line,
/// samples)]).
type FunctionRow = (String, u64, Vec<(String, u64)>);

/// The function rows of `profile --by line`'s report, each with its lines.
fn line_report(stdout: &str) -> Vec<FunctionRow> {
    let mut rows: Vec<FunctionRow> = Vec::new();
    let body = stdout
        .split("# Overhead  Samples  Function / Line")
        .nth(1)
        .unwrap_or_else(|| panic!("no line report: {stdout}"));
    for line in body.lines().skip(2) {
        if line.starts_with('#') || line.trim().is_empty() {
            break;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let samples: u64 = words[1].parse().unwrap();
        // Line rows are indented under their function and have no module.
        let indented = line.get(21..).is_some_and(|name| name.starts_with("  "));
        if indented {
            rows.last_mut()
                .expect("a function row first")
                .2
                .push((words[2].to_string(), samples));
        } else {
            rows.push((words[2].to_string(), samples, Vec::new()));
        }
    }
    rows
}

/// `profile --by line` names the line of the fixture's hot loop (a chain of divisions on
/// one line) for at least 90% of its function's samples.
#[test]
fn profile_by_line_names_the_hot_line() {
    require_root();
    let binary = fixture("tk_lines");
    let source = std::fs::read_to_string(workspace().join("tests/fixtures/tk_lines.c")).unwrap();
    let hot_line = source
        .lines()
        .position(|l| l.trim_end().ends_with("// TK_HOT_LINE"))
        .unwrap()
        + 1;
    let out = tracekit(
        [
            "profile",
            "-F",
            "99",
            "--by",
            "line",
            "--",
            binary.to_str().unwrap(),
            "3",
        ],
        TIMEOUT,
    );
    out.assert_code(0);
    let rows = line_report(&out.stdout);
    let (_, samples, lines) = rows
        .iter()
        .find(|(function, ..)| function == "hot")
        .unwrap_or_else(|| panic!("no row for hot(): {}", out.stdout));
    let on_line = lines
        .iter()
        .find(|(location, _)| *location == format!("tk_lines.c:{hot_line}"))
        .map_or(0, |(_, n)| *n);
    eprintln!("profile_by_line: {on_line} of {samples} samples of hot() on tk_lines.c:{hot_line}");
    assert!(*samples >= 100, "{}", out.stdout);
    assert!(
        on_line * 10 >= samples * 9,
        "{on_line} of {samples} on tk_lines.c:{hot_line}: {}",
        out.stdout
    );
}
