//! `tracekit exporter`: the daemon attached to the real kernel, scraped over HTTP while
//! fixtures with known numbers run; read back by a real Prometheus and by `go tool pprof`.
//!
//! Metrics are machine-wide, and other processes make syscalls and block I/O too, so each
//! test's config filters on the comm of its own copies of the fixtures.

mod histograms;
mod metrics;
mod otlp;
mod profiles;
mod tls;

use std::{
    collections::BTreeMap,
    io::{Read as _, Write as _},
    net::{SocketAddr, TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use tracekit_tests::{kill, programs_held_by, spawn_tracekit, wait_unloaded, wait_until};

const TIMEOUT: Duration = Duration::from_secs(60);

/// How long a scraper may take to see a change (Prometheus scrapes every second).
const SETTLE: Duration = Duration::from_secs(30);

/// One HTTP/1.1 GET: status and body.
fn get(addr: SocketAddr, path: &str) -> (u16, Vec<u8>) {
    get_with(addr, path, "")
}

/// [`get`] with more header lines (each ending in `\r\n`).
fn get_with(addr: SocketAddr, path: &str, headers: &str) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .unwrap_or_else(|err| panic!("connecting to {addr}: {err}"));
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP headers from {addr}{path}"));
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line: {head}"));
    assert!(
        !head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "chunked answers are not read here: {head}"
    );
    (status, raw[split + 4..].to_vec())
}

/// `GET /metrics` as text.
fn scrape(addr: SocketAddr) -> String {
    let (status, body) = get(addr, "/metrics");
    let text = String::from_utf8(body).unwrap();
    assert_eq!(status, 200, "{text}");
    text
}

/// The labels of one exposition line (`name{a="x",b="y"} value`).
fn labels_of(line: &str) -> BTreeMap<String, String> {
    let Some((_, rest)) = line.split_once('{') else {
        return BTreeMap::new();
    };
    let inside = &rest[..rest.rfind('}').unwrap_or(rest.len())];
    inside
        .split("\",")
        .filter_map(|pair| {
            let (name, value) = pair.split_once("=\"")?;
            Some((name.to_string(), value.trim_end_matches('"').to_string()))
        })
        .collect()
}

/// The sum of the samples named `name` whose labels include every `(label, value)`.
fn sample_sum(text: &str, name: &str, want: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|line| {
            line.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .filter(|line| {
            let labels = labels_of(line);
            want.iter()
                .all(|(k, v)| labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|line| {
            line.rsplit(' ')
                .next()
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or_else(|| panic!("no value in {line:?}"))
        })
        .sum()
}

/// A copy of `source` named `name` in `dir` (its processes get that comm).
fn copy_as(source: &Path, dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::copy(source, &path).expect("copy a program");
    path
}

/// Runs `program ARGS` to its end, successfully.
fn run_ok(program: &Path, args: &[&str]) {
    let status = Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap_or_else(|err| panic!("running {}: {err}", program.display()));
    assert!(status.success(), "{} {args:?} failed", program.display());
}

/// `dd` writing `count` blocks of 64 KiB with O_DIRECT into `file`.
fn dd_64k(dd: &Path, file: &Path, count: u32) {
    run_ok(
        dd,
        &[
            "if=/dev/zero",
            &format!("of={}", file.display()),
            "bs=64k",
            &format!("count={count}"),
            "oflag=direct",
        ],
    );
}

/// The config every test uses: syscalls and block I/O sizes of two comms.
fn config(dir: &Path, namespace: &str, syscaller: &str, writer: &str) -> PathBuf {
    let path = dir.join("exporter.toml");
    std::fs::write(
        &path,
        format!(
            r#"namespace = "{namespace}"

[profile]
max_seconds = 10

[[metric]]
name = "syscalls"
preset = "syscount"
by = ["syscall", "comm"]
filter = 'comm == "{syscaller}"'

[[metric]]
name = "block_io_size"
preset = "bitesize"
by = ["op", "comm"]
filter = 'comm == "{writer}"'
"#
        ),
    )
    .unwrap();
    path
}

/// A running exporter (killed if the test fails before stopping it) and its stderr lines.
struct Exporter(Option<Child>, std::sync::mpsc::Receiver<String>);

impl Drop for Exporter {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts `tracekit exporter --config CONFIG` on a free loopback port; returns it with the
/// address it serves on, once it is attached and listening.
fn start_exporter(config: &Path) -> (Exporter, SocketAddr) {
    start_exporter_with(&["--config".as_ref(), config.as_os_str()])
}

/// Starts `tracekit exporter ARGS` on a free loopback port, as [`start_exporter`].
fn start_exporter_with(args: &[&std::ffi::OsStr]) -> (Exporter, SocketAddr) {
    let mut argv: Vec<&std::ffi::OsStr> = vec![
        "exporter".as_ref(),
        "--listen".as_ref(),
        "127.0.0.1:0".as_ref(),
    ];
    argv.extend_from_slice(args);
    let mut child = spawn_tracekit(argv);
    let stderr = child.stderr.take().expect("piped stderr");
    let (lines, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead as _;
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + TIMEOUT;
    let line = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = receiver
            .recv_timeout(left)
            .unwrap_or_else(|err| panic!("no start line from the exporter: {err}"));
        if line.contains("SIGINT or SIGTERM to stop") {
            break line;
        }
        eprintln!("exporter: {line}");
    };
    let addr = line
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|addr| addr.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    (Exporter(Some(child), receiver), addr)
}

/// SIGTERM: the exporter says so, exits 0, and none of its programs stays loaded.
fn stop_exporter(mut exporter: Exporter) {
    let child = exporter.0.take().expect("a running exporter");
    let held = programs_held_by(child.id());
    assert!(!held.is_empty(), "the exporter holds no BPF programs");
    kill(child.id(), libc::SIGTERM);
    let mut child = child;
    let status = wait_until(TIMEOUT, || {
        child
            .try_wait()
            .unwrap()
            .ok_or("the exporter did not stop on SIGTERM")
    });
    // The reader ends at the pipe's end: the exporter's last lines are all there.
    let stderr: Vec<String> = exporter.1.iter().collect();
    assert_eq!(status.code(), Some(0), "{stderr:?}");
    assert!(
        stderr
            .iter()
            .any(|l| l.contains("SIGTERM received; every program detached.")),
        "{stderr:?}"
    );
    // The kernel frees a program after its last reference goes, in deferred work (a raw
    // tracepoint's was still listed ~10 ms after the exit here): poll.
    wait_unloaded(&held, &[]);
}

/// Polls `value` until `done` holds for it; the last value.
fn settle(what: &str, mut value: impl FnMut() -> f64, done: impl Fn(f64) -> bool) -> f64 {
    let deadline = Instant::now() + SETTLE;
    loop {
        let now = value();
        if done(now) {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: still {now} after {SETTLE:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// A free loopback port (there is a short window for someone else to take it).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
