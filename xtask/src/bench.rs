//! `cargo xtask bench`: tracekit against perf and bpftrace on the same workload, rounds
//! interleaved, medians reported. Numbers come from `wait4(2)` rusage of each tool's
//! processes (CPU time and peak RSS), and from the workload's own count of work done.

use std::{
    io::{BufRead as _, BufReader, Read as _},
    os::unix::process::CommandExt as _,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, bail};
use clap::Subcommand;

use crate::util::{Cmd, find_program, workspace_root};

/// The benchmarks.
#[derive(Clone, Debug, Subcommand)]
pub enum Bench {
    /// Whole-machine profile at 999 Hz while two CPU burners keep both CPUs busy: each
    /// tool's CPU time and peak RSS (symbolizing and writing included), the burners' work
    /// rate against no profiler, and the time from start to attached
    Profile {
        /// Seconds each profile runs
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
        /// Rounds (each runs every tool once, interleaved)
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// Also measure this tracekit binary in the same rounds (the static build of
        /// `cargo xtask dist`, target/x86_64-unknown-linux-musl/release/tracekit)
        #[arg(long, value_name = "BINARY")]
        compare: Option<PathBuf>,
        /// Only tracekit's rows, not perf's and bpftrace's (perf script of a dwarf
        /// perf.data can take minutes per round)
        #[arg(long)]
        tracekit_only: bool,
    },
    /// A loop of getppid() alone and under syscount, perf stat and bpftrace: the time each
    /// adds per syscall
    Syscount {
        /// getppid() calls per run
        #[arg(long, default_value_t = 2_000_000)]
        calls: u64,
        /// Rounds (each runs every configuration once, interleaved)
        #[arg(long, default_value_t = 15)]
        rounds: usize,
    },
    /// The engine's plans on a getppid() loop against an empty program on the raw and on
    /// the classic tracepoint (the floors), perf stat and bpftrace; funclatency on a uprobe;
    /// events streamed by trace, perf trace and bpftrace printf; the exporter's memory per
    /// metric; the time `stat -e 'syscalls:sys_enter_*'` takes
    Engine {
        /// getppid() calls per run
        #[arg(long, default_value_t = 2_000_000)]
        calls: u64,
        /// Rounds (each runs every plan once, interleaved)
        #[arg(long, default_value_t = 7)]
        rounds: usize,
        /// Calls of the uprobed function per run
        #[arg(long, default_value_t = 200_000)]
        uprobe_calls: u64,
        /// getppid() calls per streaming run
        #[arg(long, default_value_t = 1_000_000)]
        stream_calls: u64,
        /// Rounds of the streaming runs
        #[arg(long, default_value_t = 3)]
        stream_rounds: usize,
        /// Rates of the paced streaming runs, calls a second
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "25000,50000,100000,200000,400000"
        )]
        stream_rates: Vec<u64>,
        /// Seconds of each paced streaming run
        #[arg(long, default_value_t = 2.0)]
        stream_seconds: f64,
        /// Run only the streaming half
        #[arg(long)]
        streaming_only: bool,
        /// Run only the getppid() plans (no uprobe, streaming, exporter or stat rows)
        #[arg(long, conflicts_with = "streaming_only")]
        plans_only: bool,
    },
    /// `opensnoop` (or `execsnoop`) against bpftrace's opensnoop.bt (execsnoop.bt) while a
    /// fixture opens a file (execs /bin/true) RATE times a second: each tool's CPU time,
    /// the events it printed and what it says it lost
    Snoops {
        /// The tool: opensnoop or execsnoop
        #[arg(long, default_value = "opensnoop", value_parser = ["opensnoop", "execsnoop"])]
        tool: String,
        /// Opens (execs) per second
        #[arg(long, default_value_t = 10_000)]
        rate: u64,
        /// Seconds each run opens
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// Rounds (each runs every tool once, interleaved)
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// Lengths of the opened path in bytes, comma-separated (0: the short
        /// `/tmp/tk-bench-open`); every length runs in each round (opensnoop only)
        #[arg(long, value_delimiter = ',', default_value = "0")]
        path_bytes: Vec<usize>,
        /// Another tracekit binary run in the same rounds (a build to compare with)
        #[arg(long)]
        compare: Option<PathBuf>,
    },
    /// The idle startup of `execsnoop`, `opensnoop`, `trace` and `profile` (each `-d 1`,
    /// rounds interleaved): median CPU time and peak RSS of a run, loading to detaching
    Startup {
        /// Rounds (each runs every command once with every binary, interleaved)
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// Also measure this tracekit binary in the same rounds (a build of main, for a
        /// before/after table)
        #[arg(long, value_name = "BINARY")]
        compare: Option<PathBuf>,
    },
    /// `profile -a -i 1`, `hist ... --by comm -i 1` and `offcpu -i 1` for MINUTES under
    /// process and thread churn (`/bin/true` 100 times a second among it): RSS and CPU every
    /// 10 s, the RSS slope after a minute; fails if a run's RSS at the end is over 1.2x its
    /// RSS at one minute
    Soak {
        /// Minutes to run
        #[arg(long, default_value_t = 10.0)]
        minutes: f64,
    },
    /// Two busy Python processes under a whole-machine 999 Hz profile with interpreters,
    /// with `--no-interpreters`, and under py-spy: each profiler's CPU and the work done
    Python {
        /// Seconds each run lasts
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
        /// Rounds (each runs every configuration once, in rotated order)
        #[arg(long, default_value_t = 3)]
        rounds: usize,
    },
    /// A busy node and a busy JVM under a whole-machine 999 Hz profile with the runtime
    /// unwinders and with `--no-interpreters`: tracekit's CPU and the work done
    Jit {
        /// Seconds each run lasts
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
        /// Rounds (each runs every configuration once, in rotated order)
        #[arg(long, default_value_t = 5)]
        rounds: usize,
    },
    /// `tracekit exporter` with its built-in set for MINUTES under process churn: RSS and
    /// its slope, scrapes answered, CPU at a 15 s scrape interval, scrape time, and the ns
    /// it adds per syscall
    Exporter {
        /// Minutes to run
        #[arg(long, default_value_t = 10.0)]
        minutes: f64,
        /// Seconds between 10 s CPU profile requests
        #[arg(long, default_value_t = 60)]
        profile_every: u64,
        /// getppid() calls per run of the syscall-cost loop
        #[arg(long, default_value_t = 2_000_000)]
        calls: u64,
        /// Rounds of the syscall-cost loop (each alone and attached)
        #[arg(long, default_value_t = 9)]
        rounds: usize,
    },
}

pub fn run(bench: Bench, tracekit: &Path) -> Result<()> {
    match bench {
        Bench::Profile {
            seconds,
            rounds,
            compare,
            tracekit_only,
        } => crate::bench_profile::profile(
            tracekit,
            compare.as_deref(),
            tracekit_only,
            seconds,
            rounds,
        ),
        Bench::Syscount { calls, rounds } => syscount(tracekit, calls, rounds),
        Bench::Engine {
            calls,
            rounds,
            uprobe_calls,
            stream_calls,
            stream_rounds,
            stream_rates,
            stream_seconds,
            streaming_only,
            plans_only,
        } => crate::engine_bench::engine(
            tracekit,
            &crate::engine_bench::Sizes {
                calls,
                rounds,
                uprobe_calls,
                stream_calls,
                stream_rounds,
                stream_rates,
                stream_seconds,
                streaming_only,
                plans_only,
            },
        ),
        Bench::Python { seconds, rounds } => {
            crate::bench_python::python_bench(tracekit, seconds, rounds)
        }
        Bench::Jit { seconds, rounds } => crate::bench_jit::jit_bench(tracekit, seconds, rounds),
        Bench::Snoops {
            tool,
            rate,
            seconds,
            rounds,
            path_bytes,
            compare,
        } => crate::bench_snoops::snoops(
            tracekit,
            compare.as_deref(),
            &tool,
            &crate::bench_snoops::Load {
                rate,
                seconds,
                rounds,
                path_bytes,
            },
        ),
        Bench::Startup { rounds, compare } => {
            crate::bench_snoops::startup(tracekit, compare.as_deref(), rounds)
        }
        Bench::Soak { minutes } => {
            crate::soak::soak(tracekit, &build_fixture("tk_churn")?, minutes)
        }
        Bench::Exporter {
            minutes,
            profile_every,
            calls,
            rounds,
        } => crate::exporter_bench::exporter(
            tracekit,
            &build_fixture("tk_churn")?,
            &build_fixture("tk_syscalls")?,
            minutes,
            profile_every,
            calls,
            rounds,
        ),
    }
}

/// Compiles a fixture from tests/fixtures into target/bench.
pub(crate) fn build_fixture(name: &str) -> Result<PathBuf> {
    let root = workspace_root();
    let dir = root.join("target/bench");
    std::fs::create_dir_all(&dir)?;
    let binary = dir.join(name);
    Cmd::new("gcc")
        .args(["-O0", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&binary)
        .arg(root.join(format!("tests/fixtures/{name}.c")))
        .run()?;
    Ok(binary)
}

/// Builds the `bench_floor` example (empty programs on a hook) and returns its path;
/// `TRACEKIT_BENCH_FLOOR=PATH` names one built before (its programs are the same in any
/// build, only their loader differs).
pub(crate) fn build_floor() -> Result<PathBuf> {
    if let Some(floor) = std::env::var_os("TRACEKIT_BENCH_FLOOR") {
        return Ok(floor.into());
    }
    crate::util::cargo()
        .args([
            "build",
            "--release",
            "--package",
            "tracekit",
            "--example",
            "bench_floor",
        ])
        .env("TRACEKIT_EBPF", "require")
        .run()?;
    Ok(workspace_root().join("target/release/examples/bench_floor"))
}

/// One way of watching a loop.
pub(crate) struct Watcher {
    pub name: &'static str,
    /// The command, or None for the loop alone.
    pub command: Option<Vec<String>>,
    /// A line on stderr (true) or stdout that says it is attached.
    pub ready: Option<(&'static str, bool)>,
    /// Perf event fds it holds once attached, when its line comes before attaching.
    pub perf_event_fds: usize,
}

fn syscount(tracekit: &Path, calls: u64, rounds: usize) -> Result<()> {
    let fixture = build_fixture("tk_syscalls")?;
    let floor = build_floor()?;
    let tk = tracekit.display().to_string();
    let mut watchers = vec![
        Watcher {
            name: "getppid loop alone",
            command: None,
            ready: None,
            perf_event_fds: 0,
        },
        Watcher {
            name: "empty BPF program on raw tracepoint sys_enter (the floor)",
            command: Some(vec![floor.display().to_string(), "sys_enter".into()]),
            ready: Some(("attached", true)),
            perf_event_fds: 0,
        },
        Watcher {
            name: "tracekit syscount",
            command: Some(vec![tk.clone(), "syscount".into()]),
            ready: Some(("Hit Ctrl-C", true)),
            perf_event_fds: 0,
        },
        Watcher {
            name: "tracekit syscount --by comm",
            command: Some(vec![
                tk.clone(),
                "syscount".into(),
                "--by".into(),
                "comm".into(),
            ]),
            ready: Some(("Hit Ctrl-C", true)),
            perf_event_fds: 0,
        },
        // The histogram slot rules side by side: the same value (the syscall number),
        // the same unkeyed per-CPU array; only the slot differs (log2 against log-linear).
        Watcher {
            name: "tracekit hist rawtracepoint:sys_enter --value id (log2 slot)",
            command: Some(vec![
                tk.clone(),
                "hist".into(),
                "rawtracepoint:sys_enter".into(),
                "--value".into(),
                "id".into(),
            ]),
            ready: Some(("Hit Ctrl-C", true)),
            perf_event_fds: 0,
        },
        Watcher {
            name: "tracekit hist rawtracepoint:sys_enter --value id --percentiles (log-linear)",
            command: Some(vec![
                tk.clone(),
                "hist".into(),
                "rawtracepoint:sys_enter".into(),
                "--value".into(),
                "id".into(),
                "--percentiles".into(),
            ]),
            ready: Some(("Hit Ctrl-C", true)),
            perf_event_fds: 0,
        },
        Watcher {
            name: "tracekit count raw_syscalls:sys_enter (classic tracepoint)",
            command: Some(vec![tk, "count".into(), "raw_syscalls:sys_enter".into()]),
            ready: Some(("Hit Ctrl-C", true)),
            perf_event_fds: 0,
        },
    ];
    if let Some(perf) = find_program("perf") {
        watchers.push(Watcher {
            name: "perf stat -e raw_syscalls:sys_enter -a",
            command: Some(vec![
                perf.display().to_string(),
                "stat".into(),
                "-e".into(),
                "raw_syscalls:sys_enter".into(),
                "-a".into(),
            ]),
            ready: None,
            perf_event_fds: 0,
        });
    }
    if let Some(bpftrace) = find_program("bpftrace") {
        for (name, program) in [
            (
                "bpftrace @[comm] = count() on raw_syscalls:sys_enter",
                "tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }",
            ),
            (
                "bpftrace empty program on raw_syscalls:sys_enter",
                "tracepoint:raw_syscalls:sys_enter { }",
            ),
        ] {
            watchers.push(Watcher {
                name,
                command: Some(vec![
                    bpftrace.display().to_string(),
                    "-e".into(),
                    program.into(),
                ]),
                // bpftrace says "Attaching" before it attaches.
                ready: Some(("Attaching", false)),
                perf_event_fds: 1,
            });
        }
    }
    eprintln!(
        "xtask: bench syscount: {rounds} rounds of {calls} getppid() calls per configuration"
    );
    let medians = time_watchers("syscount", &watchers, rounds, || {
        getppid_loop(&fixture, calls)
    })?;
    let alone = medians[0];
    println!(
        "\n| getppid() loop, {calls} calls, {rounds} rounds, medians | ns per call | added ns per syscall |"
    );
    println!("|---|---|---|");
    for (watcher, &ns) in watchers.iter().zip(&medians) {
        println!(
            "| {} | {ns:.0} | {} |",
            watcher.name,
            if watcher.command.is_none() {
                "-".to_string()
            } else {
                format!("{:+.0}", ns - alone)
            }
        );
    }
    Ok(())
}

/// Times `workload` (ns per operation) alone or under each watcher, `rounds` times with
/// the order rotated each round; returns each watcher's median.
pub(crate) fn time_watchers(
    bench: &str,
    watchers: &[Watcher],
    rounds: usize,
    mut workload: impl FnMut() -> Result<f64>,
) -> Result<Vec<f64>> {
    let mut ns_per_op: Vec<Vec<f64>> = vec![Vec::new(); watchers.len()];
    for round in 1..=rounds {
        eprintln!("xtask: bench {bench}: round {round}/{rounds}");
        for offset in 0..watchers.len() {
            let index = (offset + round) % watchers.len();
            let watcher = &watchers[index];
            let child = match &watcher.command {
                Some(argv) => {
                    let mut command = Command::new(&argv[0]);
                    command.args(&argv[1..]);
                    let (out, err) = match watcher.ready {
                        Some((_, true)) => (Stdio::null(), Stdio::piped()),
                        Some((_, false)) => (Stdio::piped(), Stdio::null()),
                        None => (Stdio::null(), Stdio::null()),
                    };
                    command.stdout(out).stderr(err);
                    Some(start_until(&mut command, watcher.ready, watcher.perf_event_fds)?.0)
                }
                None => None,
            };
            let ns = workload();
            if let Some(child) = child {
                stop(child)?;
            }
            ns_per_op[index].push(ns.with_context(|| format!("under {}", watcher.name))?);
        }
    }
    Ok(ns_per_op.into_iter().map(median).collect())
}

/// Runs `tk_syscalls CALLS` and returns its wall time per call in ns.
pub(crate) fn getppid_loop(fixture: &Path, calls: u64) -> Result<f64> {
    let started = Instant::now();
    let status = Command::new(fixture)
        .arg(calls.to_string())
        .stdout(Stdio::null())
        .status()?;
    let elapsed = started.elapsed();
    if !status.success() {
        bail!("tk_syscalls failed");
    }
    Ok(elapsed.as_secs_f64() * 1e9 / calls as f64)
}

/// CPU time and peak RSS of a process tree's parts, as `wait4(2)` reports them.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Usage {
    pub(crate) cpu: Duration,
    pub(crate) max_rss_kib: u64,
}

impl Usage {
    pub(crate) fn add(self, other: Usage) -> Usage {
        Usage {
            cpu: self.cpu + other.cpu,
            max_rss_kib: self.max_rss_kib.max(other.max_rss_kib),
        }
    }
}

/// Reaps `child` with wait4(2), returning its exit code and usage.
pub(crate) fn wait_usage(child: Child) -> Result<(i32, Usage)> {
    Ok(try_wait_usage(&child, 0)?.expect("a blocking wait4 reaps"))
}

/// wait4(2) with `flags` (WNOHANG: None while the child runs).
fn try_wait_usage(child: &Child, flags: i32) -> Result<Option<(i32, Usage)>> {
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: wait4(2) with live out-pointers; the child is ours and not yet reaped.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        match libc::wait4(pid, &mut status, flags, &mut usage) {
            0 => return Ok(None),
            reaped if reaped < 0 => {
                bail!("wait4({pid}): {}", std::io::Error::last_os_error())
            }
            _ => usage,
        }
    };
    let time = |tv: libc::timeval| {
        Duration::from_secs(tv.tv_sec as u64) + Duration::from_micros(tv.tv_usec as u64)
    };
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    Ok(Some((
        code,
        Usage {
            cpu: time(usage.ru_utime) + time(usage.ru_stime),
            max_rss_kib: usage.ru_maxrss as u64,
        },
    )))
}

/// Ends a watcher as Ctrl-C would and reaps it: closes its stdin (bench_floor waits on it)
/// and sends SIGINT, again each second, since a SIGINT that lands while bpftrace sets up its
/// poll loop is lost; SIGKILL and an error after 30 s.
pub(crate) fn stop(child: Child) -> Result<(i32, Usage)> {
    stop_with(child, true)
}

/// [`stop`] with one SIGINT: a second one ends tracekit at once, before it has written what
/// it collected, and writing a profile takes more than a second on a loaded machine.
pub(crate) fn stop_once(child: Child) -> Result<(i32, Usage)> {
    stop_with(child, false)
}

fn stop_with(mut child: Child, resend: bool) -> Result<(i32, Usage)> {
    drop(child.stdin.take());
    let started = Instant::now();
    let mut signalled: Option<Instant> = None;
    loop {
        if let Some(reaped) = try_wait_usage(&child, libc::WNOHANG)? {
            return Ok(reaped);
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            bail!("pid {} did not end within 30 s of SIGINT", child.id());
        }
        if signalled.is_none_or(|at| resend && at.elapsed() >= Duration::from_secs(1)) {
            // SAFETY: kill(2) on our own child, not yet reaped.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            signalled = Some(Instant::now());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs a command to completion with stdout to `stdout`, returning its usage.
pub(crate) fn run_measured(command: &mut Command, stdout: &Path) -> Result<Usage> {
    let child = command
        .stdout(std::fs::File::create(stdout)?)
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {command:?}"))?;
    let (code, usage) = wait_usage(child)?;
    if code != 0 {
        bail!("{command:?} exited with {code}");
    }
    Ok(usage)
}

/// Starts a command and waits until `ready` appears in the stream it names, then until it
/// holds `perf_event_fds` perf event fds.
pub(crate) fn start_until(
    command: &mut Command,
    ready: Option<(&str, bool)>,
    perf_event_fds: usize,
) -> Result<(Child, Duration)> {
    start_collecting(command, ready, perf_event_fds, None)
}

/// [`start_until`], also keeping the lines of the ready stream that contain `keep` (read
/// until the command exits) in `kept`.
pub(crate) fn start_collecting(
    command: &mut Command,
    ready: Option<(&str, bool)>,
    perf_event_fds: usize,
    kept: Option<(&'static str, Arc<Mutex<Vec<String>>>)>,
) -> Result<(Child, Duration)> {
    let started = Instant::now();
    // A piped stdin stays open until the child is interrupted (bench_floor waits on it).
    command.stdin(Stdio::piped());
    // SAFETY: only async-signal-safe signal(2) between fork and exec. A shell that starts
    // xtask in the background ignores SIGINT, and children would inherit that: interrupt()
    // must end them.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = command
        .spawn()
        .with_context(|| format!("starting {command:?}"))?;
    let Some((needle, on_stderr)) = ready else {
        // No readiness signal (perf record): give it a second, and its perf events.
        std::thread::sleep(Duration::from_secs(1));
        while count_perf_event_fds(child.id()) < perf_event_fds {
            if started.elapsed() > Duration::from_secs(60) {
                bail!("{command:?} never attached its {perf_event_fds} perf events");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        return Ok((child, Duration::ZERO));
    };
    let stream: Box<dyn std::io::Read + Send> = if on_stderr {
        Box::new(child.stderr.take().context("stderr not piped")?)
    } else {
        Box::new(child.stdout.take().context("stdout not piped")?)
    };
    let (sender, receiver) = std::sync::mpsc::channel();
    let needle = needle.to_string();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap_or(0) > 0 {
            if line.contains(&needle) {
                let _ = sender.send(());
            }
            if let Some((keep, kept)) = &kept
                && line.contains(keep)
            {
                kept.lock().unwrap().push(line.trim_end().to_string());
            }
            line.clear();
        }
        let mut rest = Vec::new();
        let _ = reader.read_to_end(&mut rest);
    });
    receiver
        .recv_timeout(Duration::from_secs(60))
        .with_context(|| format!("{command:?} never became ready"))?;
    while count_perf_event_fds(child.id()) < perf_event_fds {
        if started.elapsed() > Duration::from_secs(60) {
            bail!("{command:?} never attached its {perf_event_fds} perf events");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok((child, started.elapsed()))
}

/// The number of online CPUs.
pub(crate) fn online_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// How many perf event fds `pid` holds (tracepoint and perf event attachments).
pub(crate) fn count_perf_event_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|entries| {
            entries
                .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
                .filter(|target| target.as_os_str() == "anon_inode:[perf_event]")
                .count()
        })
        .unwrap_or(0)
}

pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}
