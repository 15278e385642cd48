//! The exporter's CPU profiles: runtime frames named, pushes to a Pyroscope-style endpoint
//! and their failures counted, one DWARF sampler shared and unloaded when idle, and the
//! memory a debug build's profile costs.

use std::{
    io::{Read as _, Write as _},
    net::{SocketAddr, TcpListener, TcpStream},
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use tracekit_tests::{
    burn_cpu_until, ensure_package, fixture_flags, fixture_with, programs_held_by,
    programs_held_named, require_root, scratch, spawn_fixture, tracekit, wait_unloaded, wait_until,
};

use super::{
    config, free_port, get, sample_sum, scrape, settle, start_exporter, start_exporter_with,
    stop_exporter,
};

const TIMEOUT: Duration = Duration::from_secs(60);

/// Frames of a stack walked to its thread's start (the outermost, `clone3` or `__clone3`
/// as glibc's aliases fall, is left out).
pub(super) const THREAD_STARTS: [&str; 4] = [
    "_start",
    "__libc_start_call_main",
    "__libc_start_main",
    "start_thread",
];

/// The exporter's CPU profiles name runtime frames as `profile` does, with no
/// flags given to the runtimes: Debian's python3, node and Java 17, each running its chain
/// fixture (`outer -> middle -> leaf`; Ledger's `main -> outer -> middle -> leaf`) before
/// the profile is asked for, are read back by `go tool pprof` with the whole chain in order
/// for nearly all of their samples. (Node and Java are skipped, saying why, where Debian's
/// packages are missing.)
#[test]
fn exporter_profile_names_python_node_and_java_frames() {
    require_root();
    let test = "exporter_profile_names_python_node_and_java_frames";
    let Some(go) = tracekit_tests::pprof::go_or_skip(test) else {
        return;
    };
    let dir = scratch(test);
    let (exporter, addr) = start_exporter(&config(&dir, "tkr", "tk_exr_none", "tk_exr_none"));
    let fixtures = tracekit_tests::workspace().join("tests/fixtures");
    let spawn = |program: &str, script: &str| {
        let mut command = Command::new(program);
        command.arg(fixtures.join(script)).arg("30");
        tracekit_tests::spawn_ready(command)
    };
    let mut runtimes = vec![("python3", spawn("/usr/bin/python3", "py_chain.py"))];
    if ensure_package(test, "nodejs", || Path::new("/usr/bin/node").is_file()) {
        runtimes.push(("node", spawn("/usr/bin/node", "js_chain.js")));
    }
    if tracekit_tests::installed(test, "javac", "openjdk-17-jdk-headless") {
        let classes = tracekit_tests::compile_java(&dir, "Ledger.java");
        let mut java = Command::new("java");
        java.arg("-cp").arg(classes).args(["Ledger", "30"]);
        runtimes.push(("java", tracekit_tests::spawn_ready(java)));
    }
    // The first profile loads the sampler, which then builds every process's unwind
    // tables on its own thread; the sampler stays loaded for the next ones (a scraper's
    // steady state), which this test reads.
    let (status, _) = get(addr, "/debug/pprof/profile?seconds=2");
    assert_eq!(status, 200, "the first profile");
    let (status, profile) = get(addr, "/debug/pprof/profile?seconds=5");
    for (_, child) in &mut runtimes {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&profile));
    let file = dir.join("cpu.pb.gz");
    std::fs::write(&file, &profile).unwrap();
    let text = tracekit_tests::pprof::pprof(go, &["-traces", "-sample_index=samples"], &file);
    let traces = tracekit_tests::pprof::traces(&text);
    for (runtime, child) in &runtimes {
        // The JVM's own threads (GC, compilers) keep native frames: its Java code's samples.
        let chain: &[&str] = match *runtime {
            "java" => &[
                "Ledger.main",
                "Ledger.outer",
                "Ledger.middle",
                "Ledger.leaf",
            ],
            // A Python module's frame is `<module>`, kept whole by go tool pprof.
            "python3" => &["<module>", "outer", "middle", "leaf"],
            _ => &["outer", "middle", "leaf"],
        };
        // Samples taken before a process's unwind tables reach the kernel (among every
        // other process's, libjvm's and the builds' among them) are walked by frame
        // pointer and stop short of the thread's start: in a first profile on a loaded
        // machine here, python's first 5 to 15 samples. They may be at most a quarter;
        // the chain is counted among the others.
        let (ours, early): (Vec<_>, Vec<_>) = traces
            .iter()
            .filter(|t| t.pid == Some(child.id()))
            .filter(|t| *runtime != "java" || t.path.contains("Ledger."))
            .partition(|t| {
                t.path
                    .split(';')
                    .any(|frame| THREAD_STARTS.contains(&frame))
            });
        let total: u64 = ours.iter().map(|t| t.samples).sum();
        let early: u64 = early.iter().map(|t| t.samples).sum();
        eprintln!("{test}: {runtime}: {early} samples walked before its tables");
        assert!(
            early * 4 <= total + early,
            "{runtime}: {early} early of {}",
            total + early
        );
        let with = |chain: &[&str]| -> u64 {
            ours.iter()
                .filter(|t| tracekit_tests::chain_in_order(&t.path, chain))
                .map(|t| t.samples)
                .sum()
        };
        // `middle` also calls the clock between `leaf`'s calls: the leaf's share is lower.
        for (chain, ratio) in [(&chain[..chain.len() - 1], 0.9), (chain, 0.85)] {
            tracekit_tests::assert_share(
                test,
                &format!("{runtime} samples with {}", chain.join(";")),
                (with(chain), total),
                (20, ratio),
                &ours,
            );
        }
    }
    stop_exporter(exporter);
}

/// One request a [`Recorder`] received.
#[derive(Clone, Debug)]
struct Recorded {
    method: String,
    /// The path and query, as sent (`/ingest?name=...`).
    target: String,
    content_type: String,
    body: Vec<u8>,
}

impl Recorded {
    /// The query's `key` value, percent-decoded.
    fn query(&self, key: &str) -> Option<String> {
        let (_, query) = self.target.split_once('?')?;
        query.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            (k == key).then(|| url_decode(v))
        })
    }
}

/// `text` percent-decoded (`+` as a space, as forms encode it).
fn url_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap()
}

/// A tiny HTTP/1.1 server on loopback (std::net, one thread) that keeps every request it
/// receives and answers each with an empty 200, as Pyroscope's `/ingest` does.
struct Recorder {
    addr: SocketAddr,
    requests: std::sync::Arc<std::sync::Mutex<Vec<Recorded>>>,
}

impl Recorder {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = std::sync::Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                if let Some(request) = read_request(&mut stream) {
                    kept.lock().unwrap().push(request);
                    let _ = stream.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                }
            }
        });
        Self { addr, requests }
    }

    fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

/// One request off `stream`: the request line, headers and a `Content-Length` body.
fn read_request(stream: &mut TcpStream) -> Option<Recorded> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 65536];
    let split = loop {
        if let Some(at) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        raw.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.lines();
    let mut request_line = lines.next()?.split_whitespace();
    let (method, target) = (request_line.next()?, request_line.next()?);
    let header = |name: &str| {
        head.lines().skip(1).find_map(|line| {
            let (k, v) = line.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    let length: usize = header("content-length")?.parse().ok()?;
    let mut body = raw[split + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&buf[..n]);
    }
    Some(Recorded {
        method: method.into(),
        target: target.into(),
        content_type: header("content-type").unwrap_or_default(),
        body,
    })
}

/// `go tool pprof -top -sample_index=samples` of `profile`: the flat sample count of the
/// function named `function`, 0 when it is not in the profile.
fn flat_samples(go: &str, file: &Path, profile: &[u8], function: &str) -> u64 {
    std::fs::write(file, profile).unwrap();
    let top = tracekit_tests::pprof::pprof(go, &["-top", "-sample_index=samples"], file);
    top.lines()
        .find(|line| line.split_whitespace().last() == Some(function))
        .map_or(0, |line| {
            line.split_whitespace()
                .next()
                .and_then(|flat| flat.parse().ok())
                .unwrap_or_else(|| panic!("no flat count in {line:?}:\n{top}"))
        })
}

/// `--push URL --push-interval 1`: while the burner burns, the exporter POSTs a pprof CPU
/// profile of each second to a (recording) Pyroscope `/ingest` with the query Pyroscope's
/// API documents (name with the hostname label, from < until one interval apart, unix
/// seconds, format=pprof); the bodies are gzipped pprof that `go tool pprof` reads, with
/// samples in the burner's `leaf`; SIGTERM stops the pushes and detaches everything.
#[test]
fn exporter_pushes_profiles_to_pyroscope() {
    require_root();
    let test = "exporter_pushes_profiles_to_pyroscope";
    let dir = scratch(test);
    let pyroscope = Recorder::start();
    let url = format!("http://{}", pyroscope.addr);
    let (exporter, addr) = start_exporter_with(&[
        "--push".as_ref(),
        url.as_ref(),
        "--push-interval".as_ref(),
        "1".as_ref(),
    ]);
    let mut burner = spawn_fixture("tk_burner", &["5"]);
    let started = Instant::now();
    assert!(burner.wait().unwrap().success(), "the burner failed");
    let ended = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // The window under way when the burner ended is pushed a second later.
    let requests = wait_until(TIMEOUT, || {
        let requests = pyroscope.requests();
        let last_until = requests
            .iter()
            .filter_map(|r| r.query("until")?.parse::<u64>().ok())
            .max();
        if requests.len() >= 3 && last_until.is_some_and(|until| until >= ended) {
            Ok(requests)
        } else {
            Err(format!(
                "{} pushes, the last until {last_until:?}; the burner ended at {ended}",
                requests.len()
            ))
        }
    });
    eprintln!("{} pushes in {:?}", requests.len(), started.elapsed());
    assert!(requests.len() >= 3, "{requests:#?}");
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let name = format!("tracekit{{hostname={}}}", hostname.trim());
    for request in &requests {
        assert_eq!(request.method, "POST", "{request:?}");
        assert!(request.target.starts_with("/ingest?"), "{request:?}");
        assert_eq!(request.query("name").as_deref(), Some(name.as_str()));
        assert_eq!(request.query("format").as_deref(), Some("pprof"));
        assert_eq!(request.query("sampleRate").as_deref(), Some("99"));
        assert_eq!(request.content_type, "binary/octet-stream");
        let seconds = |key| -> u64 { request.query(key).unwrap().parse().unwrap() };
        let (from, until) = (seconds("from"), seconds("until"));
        // A 1 s window in whole seconds: 1 apart, 2 when the window straddles two
        // second boundaries (its own overhead).
        assert!(
            from < until && until - from <= 2,
            "from={from} until={until}: {}",
            request.target
        );
        assert_eq!(request.body.get(..2), Some(&[0x1f, 0x8b][..]), "not gzip");
    }
    // Consecutive windows follow each other.
    for pair in requests.windows(2) {
        let at = |r: &Recorded, key| -> u64 { r.query(key).unwrap().parse().unwrap() };
        assert!(
            at(&pair[1], "from") >= at(&pair[0], "until") - 1,
            "{pair:?}"
        );
    }
    // /metrics keeps answering and counts the pushes.
    let text = scrape(addr);
    let pushed = sample_sum(&text, "tracekit_exporter_pushes_total", &[]);
    assert!(pushed >= requests.len() as f64, "{pushed}:\n{text}");
    assert_eq!(
        sample_sum(&text, "tracekit_exporter_push_failures_total", &[]),
        0.0,
        "{text}"
    );
    match tracekit_tests::pprof::go_or_skip(test) {
        Some(go) => {
            let file = dir.join("pushed.pb.gz");
            let leaf: Vec<u64> = requests
                .iter()
                .map(|request| flat_samples(go, &file, &request.body, "leaf"))
                .collect();
            // The burner ran 5 s: at least two whole 1 s windows saw it burn in leaf.
            assert!(
                leaf.iter().filter(|&&n| n > 0).count() >= 2,
                "leaf's samples per push: {leaf:?}"
            );
        }
        None => eprintln!("{test}: the pushes are gzip; not parsed (no go tool pprof)"),
    }
    stop_exporter(exporter);
    // No push after the exporter ended.
    let after = pyroscope.requests().len();
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(pyroscope.requests().len(), after);
}

/// Pushes to a port nobody listens on fail: each is counted in
/// `tracekit_exporter_push_failures_total`, logged once for the streak, and /metrics keeps
/// answering meanwhile. Bad `--push` URLs and intervals are usage errors naming the flag.
#[test]
fn exporter_push_failures_are_counted() {
    require_root();
    for (args, message) in [
        (
            vec!["--push", "ftp://host"],
            "--push ftp://host: scheme ftp: expected http or https",
        ),
        (vec!["--push", "http://"], "--push http://: empty host"),
        (
            vec!["--push", "http://h", "--push-interval", "0"],
            "'--push-interval <SECONDS>': 0 is not in 1..=3600",
        ),
        (
            vec!["--push-interval", "5"],
            "--push-interval 5: pushes need --push URL",
        ),
    ] {
        let out = tracekit(
            ["exporter", "--listen", "127.0.0.1:0"]
                .into_iter()
                .chain(args.iter().copied()),
            TIMEOUT,
        );
        out.assert_code(2);
        assert!(out.stderr.contains(message), "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
    }

    let closed = free_port();
    let url = format!("http://127.0.0.1:{closed}");
    let (exporter, addr) = start_exporter_with(&[
        "--push".as_ref(),
        url.as_ref(),
        "--push-interval".as_ref(),
        "1".as_ref(),
    ]);
    let failures = settle(
        "push failures",
        || sample_sum(&scrape(addr), "tracekit_exporter_push_failures_total", &[]),
        |n| n >= 3.0,
    );
    let text = scrape(addr);
    assert_eq!(
        sample_sum(&text, "tracekit_exporter_pushes_total", &[]),
        0.0,
        "{text}"
    );
    assert!(failures >= 3.0);
    let (status, body) = get(addr, "/healthz");
    assert_eq!((status, body.as_slice()), (200, &b"ok\n"[..]));
    // One warning for the whole streak, naming the URL and the cause.
    let warnings: Vec<String> = exporter
        .1
        .try_iter()
        .filter(|line| line.contains("pushing a CPU profile to"))
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains(&format!("{url}/ingest failed: ")),
        "{warnings:?}"
    );
    stop_exporter(exporter);
}

/// `go tool pprof -traces -sample_index=samples` of `profile`: each sample of a process
/// named `comm`, its functions leaf first with its count.
fn traces_of(go: &str, file: &Path, profile: &[u8], comm: &str) -> Vec<(Vec<String>, u64)> {
    std::fs::write(file, profile).unwrap();
    tracekit_tests::pprof::pprof(go, &["-traces", "-sample_index=samples"], file)
        .split("-----------+-")
        .filter(|block| {
            block
                .lines()
                .any(|line| line.trim().starts_with("comm:") && line.contains(comm))
        })
        .filter_map(|block| {
            let mut frames = Vec::new();
            let mut count = None;
            for line in block.lines().map(str::trim) {
                if line.is_empty() || line.contains(':') || line.starts_with('-') {
                    continue;
                }
                let words: Vec<&str> = line.split_whitespace().collect();
                if count.is_none() && words.len() >= 2 {
                    count = words[0].parse().ok();
                }
                frames.push(words.last()?.to_string());
            }
            Some((frames, count?))
        })
        .collect()
}

/// The profile endpoint keeps one sampler, with the DWARF unwinder's
/// tables, across requests. None is loaded before the first profile; two consecutive
/// `?seconds=1` requests on the fixture built without frame pointers both show its whole
/// chain leaf <- four <- three <- two <- one <- main (frame pointers cannot: see
/// profile/unwinding.rs), and the second loads nothing (`cpu_samplers_loaded_total` stays 1).
#[test]
fn exporter_profiles_share_one_dwarf_sampler() {
    require_root();
    let test = "exporter_profiles_share_one_dwarf_sampler";
    let Some(go) = tracekit_tests::pprof::go_or_skip(test) else {
        return;
    };
    let dir = scratch(test);
    let nofp = fixture_with("tk_nofp", fixture_flags("tk_nofp"));
    let (exporter, addr) = start_exporter_with(&[]);
    let loaded = |addr| {
        sample_sum(
            &scrape(addr),
            "tracekit_exporter_cpu_samplers_loaded_total",
            &[],
        )
    };
    assert_eq!(loaded(addr), 0.0, "a sampler loaded before any profile");
    let mut burner = Command::new(&nofp)
        .arg("30")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let chain = ["leaf", "four", "three", "two", "one", "main"];
    let file = dir.join("cpu.pb.gz");
    let mut took = Vec::new();
    for request in ["first", "second"] {
        let started = Instant::now();
        let (status, profile) = get(addr, "/debug/pprof/profile?seconds=1");
        took.push(started.elapsed());
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&profile));
        let traces = traces_of(go, &file, &profile, "tk_nofp");
        let in_leaf: u64 = traces
            .iter()
            .filter(|(frames, _)| frames.first().map(String::as_str) == Some("leaf"))
            .map(|(_, count)| count)
            .sum();
        let whole: u64 = traces
            .iter()
            .filter(|(frames, _)| frames.starts_with(&chain.map(String::from)))
            .map(|(_, count)| count)
            .sum();
        eprintln!(
            "{request} profile: {whole} of {in_leaf} samples in leaf whole, in {:?}",
            took.last().unwrap()
        );
        // A loaded 2-core machine gives the fixture a fraction of a CPU (9 samples in leaf
        // in a second were seen). Frame pointers give none whole (profile/unwinding.rs); the first
        // profile loads the sampler, so the fixture's tables come in while it runs.
        assert!(
            whole >= 3 && whole as f64 >= 0.5 * in_leaf as f64,
            "{request}: {whole} of {in_leaf} samples in leaf have the whole chain: {traces:?}"
        );
        assert_eq!(loaded(addr), 1.0, "{request}");
    }
    let _ = burner.kill();
    let _ = burner.wait();
    stop_exporter(exporter);
}

/// A profile that samples a debug build names its functions from the binary's symbol table
/// without parsing its DWARF (`[profile] inlined = false`, the default): this harness (a
/// debug binary of ~35 MB, most of it DWARF) burns CPU during a profile, which names its
/// burning function, and the exporter's RSS grows by less than a fifth of the binary's
/// size. Before, the exporter parsed the DWARF and read its pages: its RSS rose by about the
/// binary's size (20 MiB for the bench's 21 MB `xtask`, +44% over the hour's lows) for as
/// long as the process was sampled, plus 10 s.
#[test]
fn exporter_profile_of_a_debug_build_costs_its_symbols_not_its_dwarf() {
    require_root();
    let test = "exporter_profile_of_a_debug_build_costs_its_symbols_not_its_dwarf";
    let Some(go) = tracekit_tests::pprof::go_or_skip(test) else {
        return;
    };
    let file = scratch(test).join("cpu.pb.gz");
    let (exporter, addr) = start_exporter_with(&[]);
    let pid = exporter.0.as_ref().expect("running").id();
    // The first profile loads the sampler and builds the machine's unwind tables.
    let (status, profile) = get(addr, "/debug/pprof/profile?seconds=1");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&profile));
    let before = tracekit_tests::status_kib(pid, "VmRSS");
    let burner = std::thread::spawn(|| burn_cpu_until(Instant::now() + Duration::from_secs(3)));
    let (status, profile) = get(addr, "/debug/pprof/profile?seconds=2");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&profile));
    // The harness's resolvers are still held (for 10 s after its last sample).
    let after = tracekit_tests::status_kib(pid, "VmRSS");
    burner.join().unwrap();
    stop_exporter(exporter);
    std::fs::write(&file, &profile).unwrap();
    let top = tracekit_tests::pprof::pprof(go, &["-top", "-sample_index=samples"], &file);
    assert!(
        top.contains("tracekit_tests::burn_cpu_until"),
        "the profile does not name the harness's burning function: {top}"
    );
    let binary_kib = std::fs::metadata("/proc/self/exe").unwrap().len() / 1024;
    eprintln!("exporter RSS {before} -> {after} KiB; this harness is {binary_kib} KiB");
    assert!(
        after.saturating_sub(before) < binary_kib / 5,
        "the exporter's RSS grew {before} -> {after} KiB naming a {binary_kib} KiB debug binary"
    );
}

/// A sampler nobody asks for profiles goes away: with `idle_seconds = 1`, a profile loads it,
/// its programs are gone 3 s after the profile ended, and the next profile loads it again
/// (`..._cpu_samplers_loaded_total` 2) and still answers. Before, a profile asked for once
/// left the sampler loaded for the exporter's life: ~0.6% of a CPU under heavy process
/// churn, against 0.02% for the default set.
#[test]
fn exporter_sampler_unloads_when_idle() {
    require_root();
    let dir = scratch("exporter_sampler_unloads_when_idle");
    let config = dir.join("idle.toml");
    // A metric beside the profile endpoint: its programs stay while the sampler goes.
    std::fs::write(
        &config,
        "[[metric]]\nname = \"syscalls\"\npreset = \"syscount\"\n\n[profile]\nidle_seconds = 1\n",
    )
    .unwrap();
    let (exporter, addr) = start_exporter(&config);
    let pid = exporter.0.as_ref().expect("a running exporter").id();
    let serving = programs_held_by(pid);
    assert!(!serving.is_empty(), "the metric's programs are not held");
    let loaded = |addr| {
        sample_sum(
            &scrape(addr),
            "tracekit_exporter_cpu_samplers_loaded_total",
            &[],
        )
    };
    for load in [1.0, 2.0] {
        // The sampler's programs (`profile_*`) among the exporter's own, seen while the
        // profile runs and once it is answered: not every `profile_*` program on the
        // machine (another tracekit may be profiling), and not the kernel-symbol lookup
        // (`ksyms_lookup`), loaded with the first profile and kept for the exporter's life.
        let request = std::thread::spawn(move || get(addr, "/debug/pprof/profile?seconds=1"));
        let mut sampler = Vec::new();
        let mut look = || {
            for id in programs_held_named(pid, "profile_") {
                if !sampler.contains(&id) {
                    sampler.push(id);
                }
            }
        };
        while !request.is_finished() {
            look();
            std::thread::sleep(Duration::from_millis(20));
        }
        look();
        assert!(
            !sampler.is_empty(),
            "the profile request loaded no programs"
        );
        let (status, profile) = request.join().unwrap();
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&profile));
        assert!(!profile.is_empty());
        assert_eq!(loaded(addr), load);
        // Idle for 1 s, the exporter closes the sampler; then the kernel frees it.
        let asked = Instant::now();
        wait_until(TIMEOUT, || {
            let held = programs_held_by(pid);
            let kept: Vec<&u32> = sampler.iter().filter(|id| held.contains(id)).collect();
            if kept.is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "the exporter still holds the sampler's programs {kept:?} \
                     (idle_seconds = 1)"
                ))
            }
        });
        eprintln!(
            "the sampler was closed {:?} after its profile",
            asked.elapsed()
        );
        wait_unloaded(&sampler, &[]);
        let held = programs_held_by(pid);
        assert!(
            serving.iter().all(|id| held.contains(id)),
            "the metric's programs {serving:?} are not all held: {held:?}"
        );
    }
    // stop_exporter checks that the metric's programs were still held, then that SIGTERM
    // leaves none.
    stop_exporter(exporter);
}
