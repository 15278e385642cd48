//! The exporter's OTLP profiles, read by a receiver built from the official protos
//! (`fixtures/otlp_receiver.py`, PyPI's opentelemetry-proto; grpcio for OTLP/gRPC): the same
//! samples as the pprof of the same window, a fixture's chain named with lines, Python's
//! and node's chains named, the burner's process attributes, its container and pod from a
//! containerd-style cgroup, over HTTP and over gRPC; the queue across a receiver's
//! outage, and a server's Retry-After.

use std::{
    io::BufRead as _,
    os::unix::process::CommandExt as _,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use prost::Message as _;
use serde_json::Value as Json;
use tracekit_tests::{fixture, require_root, scratch, tracekit, wait_until, workspace};

use super::{free_port, sample_sum, scrape, start_exporter_with, stop_exporter};

const TIMEOUT: Duration = Duration::from_secs(60);

/// The PyPI release whose generated classes the receiver uses (profiles v1development,
/// protos 1.10.0, the version the exporter's messages come from).
pub const OTLP_PROTO_PIP: &str = "opentelemetry-proto==1.45.2";

/// The grpcio release the receiver serves OTLP/gRPC with (the stubs need 1.63.2 or later).
pub const GRPCIO_PIP: &str = "grpcio==1.85.3";

const CONTAINER: &str = "7d1c3b2a9f8e7d6c5b4a39281716151413121110090807060504030201a0b0c0";
const POD: &str = "5f0e3c1a-9b2d-4e6f-8a7b-0c1d2e3f4a5b";

/// `python3` with the OTLP classes importable, installed with pip when missing (as
/// `cargo xtask setup` does); `None`, saying why, when they cannot be had.
fn python_or_skip(test: &str) -> Option<&'static str> {
    let importable = || {
        Command::new("python3")
            .args([
                "-c",
                "import grpc, \
                 opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2_grpc",
            ])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if importable() {
        return Some("python3");
    }
    let _ = Command::new("python3")
        .args(["-m", "pip", "install", "-q", OTLP_PROTO_PIP, GRPCIO_PIP])
        .status();
    if importable() {
        return Some("python3");
    }
    eprintln!(
        "{test}: skipped: python3 cannot import {OTLP_PROTO_PIP} and {GRPCIO_PIP} \
         (cargo xtask setup)"
    );
    None
}

/// The receiver, killed when dropped.
struct Receiver {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Receiver {
    fn start(python: &str, port: u16, dir: &Path) -> Self {
        Self::start_with(python, port, dir, &[])
    }

    /// With more arguments (`--grpc PORT`, `--fail CODE...`).
    fn start_with(python: &str, port: u16, dir: &Path, args: &[String]) -> Self {
        let script = workspace().join("tests/fixtures/otlp_receiver.py");
        let mut child = Command::new(python)
            .arg(&script)
            .arg(port.to_string())
            .arg(dir)
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("starting the OTLP receiver");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "listening", "the receiver did not start");
        Self {
            child,
            port,
            dir: dir.to_path_buf(),
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// What it received at `name` (otlp.jsonl, pprof.jsonl), one JSON value per request.
    fn lines(&self, name: &str) -> Vec<Json> {
        std::fs::read_to_string(self.dir.join(name))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// pprof's profile.proto, as much as the test reads.
#[derive(Clone, PartialEq, prost::Message)]
struct Profile {
    #[prost(message, repeated, tag = "2")]
    sample: Vec<Sample>,
    #[prost(string, repeated, tag = "6")]
    string_table: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Sample {
    #[prost(int64, repeated, tag = "2")]
    value: Vec<i64>,
    #[prost(message, repeated, tag = "3")]
    label: Vec<Label>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Label {
    #[prost(int64, tag = "1")]
    key: i64,
    #[prost(int64, tag = "2")]
    str: i64,
}

/// A pprof sample's string labels.
fn labels(profile: &Profile, sample: &Sample) -> Vec<(String, String)> {
    let text = |i: i64| profile.string_table[i as usize].clone();
    sample
        .label
        .iter()
        .map(|l| (text(l.key), text(l.str)))
        .collect()
}

/// The 1-based line of `source` holding `needle`.
fn line_of(source: &str, needle: &str) -> u64 {
    source
        .lines()
        .position(|line| line.contains(needle))
        .unwrap_or_else(|| panic!("no {needle:?} in the source")) as u64
        + 1
}

/// Where cgroup v2 is mounted.
fn cgroup2_root() -> PathBuf {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    mounts
        .lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.get(2) == Some(&"cgroup2")).then(|| PathBuf::from(fields[1]))
        })
        .expect("no cgroup2 mount: the containerd-style cgroup cannot be made")
}

fn now_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Seconds the runtimes' chain fixtures burn.
const CHAIN_SECONDS: u64 = 6;

/// A runtime running its chain fixture (`outer -> middle -> leaf`) while the exporter
/// pushes.
struct Runtime {
    /// The interpreter, as run.
    program: &'static str,
    /// Its file name as `process.executable.name` says it (`/proc/PID/exe`'s).
    executable: String,
    /// The fixture script.
    script: &'static str,
}

/// Debian's python3, and node where its package is (skipped, saying why, where not).
fn runtimes_of(test: &str) -> Vec<Runtime> {
    let mut runtimes = vec![("/usr/bin/python3", "py_chain.py")];
    if tracekit_tests::ensure_package(test, "nodejs", || Path::new("/usr/bin/node").is_file()) {
        runtimes.push(("/usr/bin/node", "js_chain.js"));
    }
    runtimes
        .into_iter()
        .map(|(program, script)| Runtime {
            program,
            executable: std::fs::canonicalize(program)
                .unwrap()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned(),
            script,
        })
        .collect()
}

impl Runtime {
    /// Its fixture, started and waiting for a line on its stdin ([`Runtime::burn`]).
    fn spawn(&self) -> Child {
        Command::new(self.program)
            .arg(workspace().join("tests/fixtures").join(self.script))
            .args([&CHAIN_SECONDS.to_string(), "stdin"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|err| panic!("spawning {}: {err}", self.program))
    }

    /// Starts the fixture `child` ([`Runtime::spawn`]) burning, for [`CHAIN_SECONDS`], once
    /// it says so.
    fn burn(&self, child: &mut Child) {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"go\n").unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready", "{} did not start", self.program);
    }

    /// Its process's OTLP stacks (`pid`'s resources in `otlp`'s requests of windows that
    /// end after `from`, unix ns) name its chain: of the samples walked to the thread's start
    /// (those taken before its unwind tables reached the kernel stop short, at most a
    /// quarter), at least 85% hold `outer`, `middle` and `leaf` in order, `leaf` in the
    /// fixture's file.
    fn assert_named(&self, test: &str, otlp: &[Json], pid: u32, from: u64) {
        let (mut walked, mut early) = (Vec::new(), 0);
        for request in otlp {
            if request["start"].as_u64().unwrap() + request["duration"].as_u64().unwrap() <= from {
                continue;
            }
            for resource in request["resources"].as_array().unwrap() {
                if resource["attributes"]["process.pid"].as_u64() != Some(pid.into()) {
                    continue;
                }
                for stack in resource["stacks"].as_array().unwrap() {
                    let count = stack["count"].as_u64().unwrap();
                    // Root first, as folded stacks are.
                    let frames: Vec<&str> = stack["frames"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .rev()
                        .map(|f| f.as_str().unwrap())
                        .collect();
                    let name = |frame: &str| frame.split(' ').next().unwrap_or("").to_string();
                    if frames
                        .iter()
                        .any(|f| super::profiles::THREAD_STARTS.contains(&name(f).as_str()))
                    {
                        walked.push((frames.join(";"), count));
                    } else {
                        early += count;
                    }
                }
            }
        }
        let total: u64 = walked.iter().map(|w| w.1).sum();
        eprintln!(
            "{test}: {}: {early} samples walked before its tables",
            self.program
        );
        assert!(
            early * 4 <= total + early,
            "{}: {early} early of {}",
            self.program,
            total + early
        );
        let chained: u64 = walked
            .iter()
            .filter(|(path, _)| {
                tracekit_tests::chain_in_order(path, &["outer", "middle", "leaf"])
                    && path
                        .split(';')
                        .any(|f| f.starts_with("leaf ") && f.contains(self.script))
            })
            .map(|w| w.1)
            .sum();
        tracekit_tests::assert_share(
            test,
            &format!("{} OTLP samples with outer;middle;leaf", self.program),
            (chained, total),
            (20, 0.85),
            &walked,
        );
    }
}

/// Pushed every second to the receiver both as OTLP/HTTP and (`--push`) as pprof, from the
/// same windows: each window's OTLP samples equal its pprof's; the burner, run in a cgroup
/// named as containerd names a pod's container and with `OTEL_SERVICE_NAME`, is its own
/// resource with its pid, executable, service, container ID and pod UID, its chain named
/// with the source's lines (`[profile] inlined = true` reads DWARF), and its pprof samples
/// carry `container_id` and `pod_uid` labels; `--cgroup` takes the pod's and the
/// container's IDs. Python's and node's chain fixtures, started with it and burning for
/// 6 s after it, are named in their OTLP stacks.
#[test]
fn exporter_pushes_otlp_profiles() {
    pushes_otlp_profiles("exporter_pushes_otlp_profiles", Protocol::Http);
}

/// The same over OTLP/gRPC (`[otlp] protocol = "grpc"`, a grpcio server): the same
/// samples, chain, lines and attributes, the headers and bearer token as metadata; and
/// the receiver's statuses honoured: its first call's `UNAVAILABLE` is retried, the
/// retry's `RESOURCE_EXHAUSTED` without a retry delay drops that profile (counted as
/// `rejected`). Python and node are named as over HTTP.
#[test]
fn exporter_pushes_otlp_profiles_over_grpc() {
    pushes_otlp_profiles("exporter_pushes_otlp_profiles_over_grpc", Protocol::Grpc);
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Protocol {
    Http,
    Grpc,
}

fn pushes_otlp_profiles(test: &str, protocol: Protocol) {
    require_root();
    let Some(python) = python_or_skip(test) else {
        return;
    };
    let dir = scratch(test);
    let grpc_port = free_port();
    // The runtimes' executables, whose stacks the receiver keeps too.
    let runtimes = runtimes_of(test);
    let mut keep = vec!["--keep".to_string()];
    keep.extend(runtimes.iter().map(|r| r.executable.clone()));
    let receiver = match protocol {
        Protocol::Http => Receiver::start_with(python, free_port(), &dir, &keep),
        Protocol::Grpc => Receiver::start_with(
            python,
            free_port(),
            &dir,
            &[
                &[
                    "--grpc".into(),
                    grpc_port.to_string(),
                    "--fail".into(),
                    "UNAVAILABLE".into(),
                    "RESOURCE_EXHAUSTED".into(),
                ],
                &keep[..],
            ]
            .concat(),
        ),
    };
    let endpoint = match protocol {
        Protocol::Http => format!("endpoint = \"{}\"", receiver.url()),
        Protocol::Grpc => {
            format!("endpoint = \"http://127.0.0.1:{grpc_port}\"\nprotocol = \"grpc\"")
        }
    };
    let config = dir.join("exporter.toml");
    std::fs::write(
        &config,
        format!(
            "metrics = [\"runqlat\"]\n\n[profile]\ninlined = true\n\n[otlp]\n{endpoint}\n\
             headers = {{ \"X-Scope-OrgID\" = \"tenant1\" }}\nbearer_token = \"t0k\"\n"
        ),
    )
    .unwrap();
    let (exporter, addr) = start_exporter_with(&[
        "--config".as_ref(),
        config.as_os_str(),
        "--push".as_ref(),
        receiver.url().as_ref(),
        "--push-interval".as_ref(),
        "1".as_ref(),
    ]);
    // A pod's container, as the kubelet and containerd name them (systemd driver), in the
    // cgroup2 hierarchy (/sys/fs/cgroup, or /sys/fs/cgroup/unified on hybrid machines).
    let pod = cgroup2_root()
        .join("kubepods.slice")
        .join(format!("kubepods-pod{}.slice", POD.replace('-', "_")));
    let container = pod.join(format!("cri-containerd-{CONTAINER}.scope"));
    std::fs::create_dir_all(&container).expect("creating the pod's cgroup");
    let procs = container.join("cgroup.procs");
    // Over gRPC, a shorter burn without the --cgroup runs (the same code as over HTTP);
    // the rejected first window may hold up to a second of it.
    let (burn, counted) = match protocol {
        Protocol::Http => (8, 8),
        Protocol::Grpc => (5, 4),
    };
    let mut command = Command::new(fixture("tk_burner"));
    command
        .arg(burn.to_string())
        .env("OTEL_SERVICE_NAME", "tk-burner-svc")
        .stdout(Stdio::null());
    // SAFETY: the child only writes a file before exec (async-signal-safe calls).
    unsafe {
        command.pre_exec(move || std::fs::write(&procs, b"0"));
    }
    // Python and node start now and wait: their tables are made while the burner runs.
    let mut running: Vec<(&Runtime, Child)> = runtimes
        .iter()
        .map(|runtime| (runtime, runtime.spawn()))
        .collect();
    let mut burner = command.spawn().expect("starting the burner in its cgroup");
    let pid = burner.id();
    // `--cgroup` takes the pod's UID and a container ID's first 12 digits.
    let ids: &[&str] = match protocol {
        Protocol::Http => &[POD, &CONTAINER[..12]],
        Protocol::Grpc => &[],
    };
    for &id in ids {
        let folded = dir.join("by-id.folded");
        let out = tracekit(
            [
                "profile".as_ref(),
                "--cgroup".as_ref(),
                id.as_ref(),
                "-d".as_ref(),
                "1".as_ref(),
                "-o".as_ref(),
                folded.as_os_str(),
            ],
            TIMEOUT,
        );
        assert!(out.status.success(), "--cgroup {id}: {}", out.stderr);
        let text = std::fs::read_to_string(&folded).unwrap();
        assert!(
            text.lines()
                .any(|l| l.starts_with("tk_burner;") && l.contains(";a;b;leaf")),
            "--cgroup {id}:\n{text}"
        );
        assert!(
            text.lines().all(|l| l.starts_with("tk_burner;")),
            "--cgroup {id}: other processes:\n{text}"
        );
    }
    assert!(burner.wait().unwrap().success());
    // Then Python's and node's chains burn (not beside the burner: on two cores they
    // would take its share), counted in the windows that end after they begin (their
    // startups, node compiling its builtins, Python its modules, are before).
    for (runtime, child) in &mut running {
        runtime.burn(child);
    }
    let chains_from = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    for (_, child) in &mut running {
        assert!(child.wait().unwrap().success());
    }
    let ended = now_seconds();
    wait_until(TIMEOUT, || {
        let last = |name: &str, key: &str| {
            receiver
                .lines(name)
                .iter()
                .filter_map(|l| l[key].as_u64())
                .max()
                .unwrap_or(0)
        };
        let otlp_start = last("otlp.jsonl", "start") / 1_000_000_000;
        let pprof_until = last("pprof.jsonl", "until");
        if otlp_start > ended && pprof_until > ended + 1 {
            Ok(())
        } else {
            Err(format!(
                "OTLP up to {otlp_start}, pprof up to {pprof_until}, ended {ended}"
            ))
        }
    });
    let text = scrape(addr);
    stop_exporter(exporter);
    for dir in [&container, &pod, &pod.parent().unwrap().to_path_buf()] {
        let _ = std::fs::remove_dir(dir);
    }
    let otlp = receiver.lines("otlp.jsonl");
    let pprof = receiver.lines("pprof.jsonl");
    eprintln!("{} OTLP requests, {} pprof pushes", otlp.len(), pprof.len());
    // Every request: the tenant header and the token; over HTTP, gzip (grpcio does not
    // show a call's grpc-encoding).
    for request in &otlp {
        let headers = &request["headers"];
        assert_eq!(headers["x-scope-orgid"], "tenant1", "{headers}");
        assert_eq!(headers["authorization"], "Bearer t0k", "{headers}");
        assert!(
            headers["user-agent"]
                .as_str()
                .is_some_and(|agent| agent.starts_with("tracekit/")),
            "{headers}"
        );
        if protocol == Protocol::Http {
            assert_eq!(headers["content-encoding"], "gzip");
            assert_eq!(headers["content-type"], "application/x-protobuf");
        }
    }
    // Window by window, the same samples.
    let mut matched = 0;
    for push in &pprof {
        let from = push["from"].as_u64().unwrap();
        let Some(request) = otlp
            .iter()
            .find(|r| r["start"].as_u64().unwrap() / 1_000_000_000 == from)
        else {
            continue;
        };
        let bytes = std::fs::read(push["file"].as_str().unwrap()).unwrap();
        let profile = Profile::decode(bytes.as_slice()).unwrap();
        let pprof_samples: i64 = profile.sample.iter().map(|s| s.value[0]).sum();
        assert_eq!(
            request["samples"].as_i64().unwrap(),
            pprof_samples,
            "the window from {from}"
        );
        matched += 1;
        // The burner's pprof samples name its container and pod.
        for sample in &profile.sample {
            let labels = labels(&profile, sample);
            if labels.contains(&("pid".into(), pid.to_string())) {
                assert!(
                    labels.contains(&("container_id".into(), CONTAINER.into())),
                    "{labels:?}"
                );
                assert!(
                    labels.contains(&("pod_uid".into(), POD.into())),
                    "{labels:?}"
                );
            }
        }
    }
    assert!(matched >= 3, "{matched} windows in both formats");
    // Counted as exported, none dropped.
    assert!(
        sample_sum(&text, "tracekit_exporter_otlp_exports_total", &[]) >= 3.0,
        "{text}"
    );
    assert!(
        sample_sum(&text, "tracekit_exporter_otlp_exported_samples_total", &[]) > 0.0,
        "{text}"
    );
    let rejected = match protocol {
        Protocol::Http => 0.0,
        Protocol::Grpc => {
            let failed = receiver.lines("failed.jsonl");
            assert_eq!(failed.len(), 2, "{failed:?}");
            assert!(
                sample_sum(&text, "tracekit_exporter_otlp_export_failures_total", &[]) >= 1.0,
                "{text}"
            );
            1.0
        }
    };
    assert_eq!(
        sample_sum(
            &text,
            "tracekit_exporter_otlp_dropped_profiles_total",
            &[("reason", "rejected")]
        ),
        rejected,
        "{text}"
    );
    assert_eq!(
        sample_sum(&text, "tracekit_exporter_otlp_dropped_profiles_total", &[]),
        rejected,
        "{text}"
    );
    // The burner: a resource of its own, its chain named with lines.
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let source = std::fs::read_to_string(workspace().join("tests/fixtures/tk_burner.c")).unwrap();
    let lines = [
        ("b", line_of(&source, "void b(double seconds)")),
        ("a", line_of(&source, "void a(double seconds)")),
        ("main", line_of(&source, "    a(seconds);")),
    ];
    let leaf = (
        line_of(&source, "void leaf(double seconds)"),
        line_of(&source, "} while (now() < end);"),
    );
    let mut burner_samples = 0;
    let mut chained = 0;
    for request in &otlp {
        for resource in request["resources"].as_array().unwrap() {
            let attributes = &resource["attributes"];
            if attributes["process.pid"].as_u64() != Some(pid.into()) {
                continue;
            }
            assert_eq!(attributes["host.name"], hostname.trim());
            assert_eq!(attributes["process.executable.name"], "tk_burner");
            assert_eq!(attributes["service.name"], "tk-burner-svc");
            assert_eq!(attributes["container.id"], CONTAINER);
            assert_eq!(attributes["k8s.pod.uid"], POD);
            for stack in resource["stacks"].as_array().unwrap() {
                let count = stack["count"].as_u64().unwrap();
                burner_samples += count;
                let frames: Vec<&str> = stack["frames"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f.as_str().unwrap())
                    .collect();
                let Some(at) = frames.iter().position(|f| f.starts_with("leaf ")) else {
                    continue;
                };
                // Not before: between fork and exec the child has its parent thread's name
                // (the test's), and a loaded machine samples it there.
                assert_eq!(stack["thread"], "tk_burner");
                let (file, line) = frames[at][5..].rsplit_once(':').unwrap();
                let line: u64 = line.parse().unwrap();
                assert!(file.ends_with("tk_burner.c"), "{frames:?}");
                assert!(leaf.0 <= line && line <= leaf.1, "{frames:?}");
                let callers: Vec<String> = lines
                    .iter()
                    .map(|(name, line)| format!("{name} {file}:{line}"))
                    .collect();
                assert_eq!(frames[at + 1..at + 4], callers[..], "{frames:?}");
                chained += count;
            }
        }
    }
    for (runtime, child) in &running {
        runtime.assert_named(test, &otlp, child.id(), chains_from);
    }
    eprintln!("the burner: {burner_samples} samples, {chained} through leaf <- b <- a <- main");
    assert!(
        burner_samples >= 25 * counted,
        "{burner_samples} samples of a {burn} s burn"
    );
    assert!(
        chained * 10 >= burner_samples * 9,
        "{chained} of {burner_samples}"
    );
}

/// The burner, burning until dropped.
struct Burning(Child);

impl Burning {
    fn start() -> Self {
        Self(
            Command::new(fixture("tk_burner"))
                .arg("600")
                .spawn()
                .unwrap(),
        )
    }
}

impl Drop for Burning {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The receiver away for 30 s with a queue of 4 profiles (one a second): the 4 newest of
/// the outage are delivered after it, the older ones are dropped and counted
/// (`dropped_profiles_total{reason="queue_full"}` and their samples), the failed attempts
/// too, and nothing else is missing: the windows received have exactly as many gaps as
/// were counted dropped.
#[test]
fn exporter_otlp_queue_survives_a_receiver_outage() {
    require_root();
    let test = "exporter_otlp_queue_survives_a_receiver_outage";
    let Some(python) = python_or_skip(test) else {
        return;
    };
    let dir = scratch(test);
    // Every interval has samples (an idle one sends nothing, and would not count).
    let _busy = Burning::start();
    let port = free_port();
    let receiver = Receiver::start(python, port, &dir);
    let config = dir.join("exporter.toml");
    std::fs::write(
        &config,
        "metrics = [\"runqlat\"]\n\n[otlp]\nqueue_size = 4\n",
    )
    .unwrap();
    let (exporter, addr) = start_exporter_with(&[
        "--config".as_ref(),
        config.as_os_str(),
        "--otlp-endpoint".as_ref(),
        receiver.url().as_ref(),
        "--push-interval".as_ref(),
        "1".as_ref(),
    ]);
    wait_until(TIMEOUT, || match receiver.lines("otlp.jsonl").len() {
        n if n >= 2 => Ok(()),
        n => Err(format!("{n} requests")),
    });
    drop(receiver);
    let away = Instant::now();
    std::thread::sleep(Duration::from_secs(30));
    let receiver = Receiver::start(python, port, &dir);
    eprintln!("receiver away {:?}", away.elapsed());
    // Delivered again, the queue emptied.
    let text = wait_until(TIMEOUT, || {
        let text = scrape(addr);
        let queued = sample_sum(&text, "tracekit_exporter_otlp_queue_length", &[]);
        let after = receiver.lines("otlp.jsonl").len();
        // Between two sends (one in flight is neither queued nor exported yet).
        let settled = sample_sum(&text, "tracekit_exporter_otlp_profiles_total", &[])
            == sample_sum(&text, "tracekit_exporter_otlp_exports_total", &[])
                + sample_sum(&text, "tracekit_exporter_otlp_dropped_profiles_total", &[]);
        if queued == 0.0 && after >= 2 + 4 + 2 && settled {
            Ok(text)
        } else {
            Err(format!("{queued} queued, {after} received"))
        }
    });
    stop_exporter(exporter);
    let dropped = sample_sum(
        &text,
        "tracekit_exporter_otlp_dropped_profiles_total",
        &[("reason", "queue_full")],
    );
    let dropped_samples = sample_sum(
        &text,
        "tracekit_exporter_otlp_dropped_samples_total",
        &[("reason", "queue_full")],
    );
    let failures = sample_sum(&text, "tracekit_exporter_otlp_export_failures_total", &[]);
    eprintln!("dropped {dropped} profiles ({dropped_samples} samples), {failures} failures");
    assert!(dropped >= 20.0, "{text}");
    assert!(dropped_samples > 0.0, "{text}");
    assert!(failures >= 1.0, "{text}");
    // Every profile taken is delivered or counted dropped, none queued at the end.
    let taken = sample_sum(&text, "tracekit_exporter_otlp_profiles_total", &[]);
    let exported = sample_sum(&text, "tracekit_exporter_otlp_exports_total", &[]);
    assert_eq!(taken, exported + dropped, "{text}");
    // And what was exported arrived: the windows received (a retried request the receiver
    // had already taken counts once).
    let mut windows: Vec<(u64, u64)> = receiver
        .lines("otlp.jsonl")
        .iter()
        .map(|r| {
            (
                r["start"].as_u64().unwrap(),
                r["duration"].as_u64().unwrap(),
            )
        })
        .collect();
    windows.sort_unstable();
    windows.dedup();
    assert!(windows.len() as f64 >= exported, "{windows:?}\n{text}");
    // The gap is where the dropped windows were: about `dropped` windows long.
    let mut durations: Vec<u64> = windows.iter().map(|w| w.1).collect();
    durations.sort_unstable();
    let median = durations[durations.len() / 2] as f64;
    let gap = windows
        .windows(2)
        .map(|pair| (pair[1].0 - pair[0].0) as f64)
        .fold(0.0, f64::max);
    let gap_windows = gap / median - 1.0;
    assert!(
        (gap_windows - dropped).abs() <= 2.0,
        "a gap of {gap_windows:.1} windows for {dropped} dropped: {windows:?}"
    );
}

/// OTLP/gRPC over TLS (`https`, ALPN h2) to a receiver whose certificate a CA made here
/// signs, trusted through `[otlp] tls.ca_file`, with basic auth as the call's
/// `authorization` metadata: profiles are delivered; with another CA, none is, and the
/// failed attempts are counted.
#[test]
fn exporter_pushes_otlp_over_grpc_with_tls() {
    require_root();
    let test = "exporter_pushes_otlp_over_grpc_with_tls";
    let Some(python) = python_or_skip(test) else {
        return;
    };
    let dir = scratch(test);
    super::tls::ca(&dir, "ca");
    super::tls::ca(&dir, "other");
    super::tls::server_certificate(&dir);
    let grpc_port = free_port();
    let receiver = Receiver::start_with(
        python,
        free_port(),
        &dir,
        &[
            "--tls".into(),
            dir.join("server.crt").display().to_string(),
            dir.join("server.key").display().to_string(),
            "--grpc".into(),
            grpc_port.to_string(),
        ],
    );
    let exporter_with = |ca: &str| {
        let config = dir.join(format!("exporter-{ca}.toml"));
        std::fs::write(
            &config,
            format!(
                "metrics = [\"runqlat\"]\n\n[otlp]\nendpoint = \"https://127.0.0.1:{grpc_port}\"\n\
                 protocol = \"grpc\"\nbasic_auth = {{ username = \"tk\", password = \"s3cret\" }}\n\
                 tls = {{ ca_file = \"{}\" }}\n",
                dir.join(format!("{ca}.crt")).display()
            ),
        )
        .unwrap();
        start_exporter_with(&[
            "--config".as_ref(),
            config.as_os_str(),
            "--push-interval".as_ref(),
            "1".as_ref(),
        ])
    };
    let (exporter, addr) = exporter_with("ca");
    let text = wait_until(TIMEOUT, || {
        let text = scrape(addr);
        match sample_sum(&text, "tracekit_exporter_otlp_exports_total", &[]) {
            n if n >= 2.0 => Ok(text),
            n => Err(format!("{n} exported")),
        }
    });
    stop_exporter(exporter);
    let received = receiver.lines("otlp.jsonl");
    assert!(received.len() >= 2, "{received:?}\n{text}");
    for request in &received {
        // base64 of tk:s3cret
        assert_eq!(request["headers"]["authorization"], "Basic dGs6czNjcmV0");
    }
    // The other CA does not vouch for the receiver: attempts fail, nothing arrives.
    let (exporter, addr) = exporter_with("other");
    let text = wait_until(TIMEOUT, || {
        let text = scrape(addr);
        match sample_sum(&text, "tracekit_exporter_otlp_export_failures_total", &[]) {
            n if n >= 2.0 => Ok(text),
            n => Err(format!("{n} failures")),
        }
    });
    stop_exporter(exporter);
    assert_eq!(
        sample_sum(&text, "tracekit_exporter_otlp_exports_total", &[]),
        0.0,
        "{text}"
    );
    assert_eq!(receiver.lines("otlp.jsonl").len(), received.len());
}

/// The receiver's `Retry-After` is waited for: its first answer, 503 with `Retry-After: 4`,
/// is retried after 4 s (the backoff would wait 1 s), its second, 429 with an HTTP-date 5 s
/// ahead, after 4 to 5 s (the backoff: 2 s); the same profile is delivered on the third
/// attempt, and the two failures are counted.
#[test]
fn exporter_otlp_push_waits_for_retry_after() {
    require_root();
    let test = "exporter_otlp_push_waits_for_retry_after";
    let Some(python) = python_or_skip(test) else {
        return;
    };
    let dir = scratch(test);
    let receiver = Receiver::start_with(
        python,
        free_port(),
        &dir,
        &["--fail-http".into(), "503:4".into(), "429:date5".into()],
    );
    let config = dir.join("exporter.toml");
    std::fs::write(&config, "metrics = [\"runqlat\"]\n").unwrap();
    let (exporter, addr) = start_exporter_with(&[
        "--config".as_ref(),
        config.as_os_str(),
        "--otlp-endpoint".as_ref(),
        receiver.url().as_ref(),
        "--push-interval".as_ref(),
        "1".as_ref(),
    ]);
    wait_until(TIMEOUT, || match receiver.lines("otlp.jsonl").len() {
        n if n >= 2 => Ok(()),
        n => Err(format!("{n} requests")),
    });
    let text = scrape(addr);
    stop_exporter(exporter);
    let failed = receiver.lines("failed.jsonl");
    let delivered = receiver.lines("otlp.jsonl");
    let at = |line: &Json| line["time"].as_f64().or(line["received"].as_f64()).unwrap();
    assert_eq!(failed.len(), 2, "{failed:?}");
    let (first, second, third) = (at(&failed[0]), at(&failed[1]), at(&delivered[0]));
    eprintln!(
        "attempts at +0, +{:.2} s, +{:.2} s",
        second - first,
        third - first
    );
    assert!(
        (4.0..7.0).contains(&(second - first)),
        "Retry-After: 4 waited {:.2} s",
        second - first
    );
    assert!(
        (3.9..7.0).contains(&(third - second)),
        "Retry-After in 5 s (an HTTP-date) waited {:.2} s",
        third - second
    );
    // Idle intervals are not sent: every request has its window and samples.
    for line in &delivered {
        assert!(
            line["start"].is_u64() && line["samples"].as_u64() > Some(0),
            "{line}"
        );
    }
    // The oldest profile goes first: the one refused twice is the first delivered.
    let oldest = delivered
        .iter()
        .map(|line| line["start"].as_u64().unwrap())
        .min()
        .unwrap();
    assert_eq!(delivered[0]["start"].as_u64().unwrap(), oldest);
    assert_eq!(
        sample_sum(&text, "tracekit_exporter_otlp_export_failures_total", &[]),
        2.0,
        "{text}"
    );
    assert_eq!(
        sample_sum(&text, "tracekit_exporter_otlp_dropped_profiles_total", &[]),
        0.0,
        "{text}"
    );
}
