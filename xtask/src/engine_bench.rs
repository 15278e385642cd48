//! `cargo xtask bench engine`: what each plan of the engine costs per event, beside the
//! cheapest hook that could serve it. In one run:
//!
//! - a getppid() loop alone and under each plan (rounds interleaved, medians): ns added per
//!   syscall, and that against an empty program on the raw tracepoint `sys_enter` (the
//!   floor) and on the classic tracepoint `raw_syscalls:sys_enter` (the classic floor);
//! - `funclatency` on a uprobe, on its own loop of calls;
//! - events streamed by `trace raw_syscalls:sys_enter`, `perf trace` and bpftrace's
//!   `printf` on the same loop: events of the loop delivered per second, events lost;
//! - the exporter's anonymous memory per metric beyond the first (its built-in set of four
//!   against its first metric alone);
//! - how long `stat -e 'syscalls:sys_enter_*' -- true` takes, attaching included.

use std::{
    io::{BufRead as _, BufReader},
    os::unix::process::CommandExt as _,
    path::Path,
    process::{Command, Stdio},
    sync::mpsc,
    thread::JoinHandle,
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, bail};

use crate::{
    bench::{
        Watcher, build_fixture, build_floor, count_perf_event_fds, getppid_loop, median, stop,
        time_watchers,
    },
    util::find_program,
};

/// The loop's comm, which every tool prints with each event.
const LOOP_COMM: &str = "tk_syscalls";

/// The bench's sizes (`cargo xtask bench engine --help`).
pub struct Sizes {
    pub calls: u64,
    pub rounds: usize,
    pub uprobe_calls: u64,
    pub stream_calls: u64,
    pub stream_rounds: usize,
    /// Paced loops' rates, calls a second.
    pub stream_rates: Vec<u64>,
    /// Paced loops' length.
    pub stream_seconds: f64,
    /// Only the streaming half.
    pub streaming_only: bool,
    /// Only the getppid() plans.
    pub plans_only: bool,
}

pub fn engine(tracekit: &Path, sizes: &Sizes) -> Result<()> {
    let syscalls = build_fixture("tk_syscalls")?;
    let perf = find_program("perf");
    let bpftrace = find_program("bpftrace");
    if sizes.streaming_only {
        return streaming(
            tracekit,
            &syscalls,
            perf.as_deref(),
            bpftrace.as_deref(),
            sizes,
        );
    }
    let funcs = build_fixture("tk_funcs")?;
    let floor = build_floor()?.display().to_string();
    let tk = tracekit.display().to_string();
    let watcher = |name, args: &[&str]| Watcher {
        name,
        command: Some(
            std::iter::once(tk.as_str())
                .chain(args.iter().copied())
                .map(String::from)
                .collect(),
        ),
        ready: Some(("Hit Ctrl-C", true)),
        perf_event_fds: 0,
    };
    // A tracekit plan run with one environment variable set (`env VAR=VALUE tracekit ...`).
    let with_env = |setting: &str, name, args: &[&str]| {
        let mut watcher = watcher(name, args);
        if let Some(command) = &mut watcher.command {
            command.splice(0..0, ["env".to_string(), setting.to_string()]);
        }
        watcher
    };
    // A plan kept on classic tracepoints.
    let classic = |name, args: &[&str]| with_env("TRACEKIT_CLASSIC_TRACEPOINTS=1", name, args);
    // `--by comm` keyed by the string in the kernel, the path before the thread key.
    let string_key = |name, args: &[&str]| with_env("TRACEKIT_COMM_KEYS=string", name, args);
    // The per-CPU group cells off: every group hashed.
    let no_cache = |name, args: &[&str]| with_env("TRACEKIT_GROUP_CACHE=0", name, args);
    // Every plan through the interpreter: the general path the simple programs replace.
    let interpreted = |name, args: &[&str]| with_env("TRACEKIT_INTERPRETER=1", name, args);

    // The getppid() loop: plans against the floors.
    let mut watchers = vec![
        Watcher {
            name: "getppid loop alone",
            command: None,
            ready: None,
            perf_event_fds: 0,
        },
        Watcher {
            name: "empty BPF program on raw tracepoint sys_enter (the floor)",
            command: Some(vec![floor.clone(), "sys_enter".into()]),
            ready: Some(("attached", true)),
            perf_event_fds: 0,
        },
        Watcher {
            name: "empty BPF program on tracepoint raw_syscalls:sys_enter (the classic floor)",
            command: Some(vec![
                floor,
                "tracepoint".into(),
                "raw_syscalls/sys_enter".into(),
            ]),
            ready: Some(("attached", true)),
            perf_event_fds: 0,
        },
        watcher("syscount", &["syscount"]),
        watcher(
            "count raw_syscalls:sys_enter",
            &["count", "raw_syscalls:sys_enter"],
        ),
        watcher("syscount --by comm", &["syscount", "--by", "comm"]),
        watcher(
            "count raw_syscalls:sys_enter --by pid",
            &["count", "raw_syscalls:sys_enter", "--by", "pid"],
        ),
        watcher(
            "hist raw_syscalls:sys_enter --value id --filter 'id == 110'",
            &[
                "hist",
                "raw_syscalls:sys_enter",
                "--value",
                "id",
                "--filter",
                "id == 110",
            ],
        ),
        watcher(
            "count raw_syscalls:sys_enter --by pid,comm (two keys)",
            &["count", "raw_syscalls:sys_enter", "--by", "pid,comm"],
        ),
        interpreted(
            "count raw_syscalls:sys_enter, interpreter",
            &["count", "raw_syscalls:sys_enter"],
        ),
        interpreted(
            "count raw_syscalls:sys_enter --by pid, interpreter",
            &["count", "raw_syscalls:sys_enter", "--by", "pid"],
        ),
        no_cache(
            "count raw_syscalls:sys_enter --by pid, no group cells",
            &["count", "raw_syscalls:sys_enter", "--by", "pid"],
        ),
        no_cache(
            "syscount --by comm, no group cells",
            &["syscount", "--by", "comm"],
        ),
        string_key(
            "syscount --by comm, string key",
            &["syscount", "--by", "comm"],
        ),
        string_key(
            "count raw_syscalls:sys_enter --by pid,comm (two keys), string key",
            &["count", "raw_syscalls:sys_enter", "--by", "pid,comm"],
        ),
        // The same plans kept on the classic tracepoint, beside them (the general path).
        classic(
            "count raw_syscalls:sys_enter, classic tracepoint",
            &["count", "raw_syscalls:sys_enter"],
        ),
        classic(
            "count raw_syscalls:sys_enter --by pid, classic tracepoint",
            &["count", "raw_syscalls:sys_enter", "--by", "pid"],
        ),
        classic(
            "hist raw_syscalls:sys_enter --value id --filter 'id == 110', classic tracepoint",
            &[
                "hist",
                "raw_syscalls:sys_enter",
                "--value",
                "id",
                "--filter",
                "id == 110",
            ],
        ),
    ];
    if let Some(perf) = &perf {
        watchers.push(Watcher {
            name: "perf stat -e raw_syscalls:sys_enter -a",
            command: Some(
                [perf.display().to_string()]
                    .into_iter()
                    .chain(["stat", "-e", "raw_syscalls:sys_enter", "-a"].map(String::from))
                    .collect(),
            ),
            ready: None,
            perf_event_fds: 1,
        });
    }
    if let Some(bpftrace) = &bpftrace {
        watchers.push(Watcher {
            name: "bpftrace @[comm] = count() on raw_syscalls:sys_enter",
            command: Some(vec![
                bpftrace.display().to_string(),
                "-e".into(),
                "tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }".into(),
            ]),
            // bpftrace says "Attaching" before it attaches.
            ready: Some(("Attaching", false)),
            perf_event_fds: 1,
        });
    }
    let (calls, rounds) = (sizes.calls, sizes.rounds);
    eprintln!("xtask: bench engine: {rounds} rounds of {calls} getppid() calls per plan");
    let ns = time_watchers("engine", &watchers, rounds, || {
        getppid_loop(&syscalls, calls)
    })?;
    if sizes.plans_only {
        print_plans(&watchers, &ns, calls, rounds);
        return Ok(());
    }

    // funclatency on a uprobe, on a loop of calls to tick().
    let uprobe_calls = sizes.uprobe_calls;
    let target = format!("{}:tick", funcs.display());
    let uprobe_watchers = [
        Watcher {
            name: "tick() loop alone",
            command: None,
            ready: None,
            perf_event_fds: 0,
        },
        watcher(
            "funclatency tk_funcs:tick (uprobe + uretprobe)",
            &["funclatency", &target],
        ),
    ];
    let uprobe_ns = time_watchers("engine (uprobe)", &uprobe_watchers, rounds, || {
        let started = Instant::now();
        let status = Command::new(&funcs)
            .args(["calls", &uprobe_calls.to_string()])
            .stdout(Stdio::null())
            .status()?;
        if !status.success() {
            bail!("tk_funcs failed");
        }
        Ok(started.elapsed().as_secs_f64() * 1e9 / uprobe_calls as f64)
    })?;

    let heap = exporter_heap(tracekit)?;
    let stat = stat_attach(tracekit)?;

    print_plans(&watchers, &ns, calls, rounds);
    println!(
        "\n| tick() loop, {uprobe_calls} calls, {rounds} rounds, medians | ns per call | added \
         ns per call |"
    );
    println!("|---|---|---|");
    println!("| {} | {:.0} | - |", uprobe_watchers[0].name, uprobe_ns[0]);
    println!(
        "| {} | {:.0} | {:+.0} |",
        uprobe_watchers[1].name,
        uprobe_ns[1],
        uprobe_ns[1] - uprobe_ns[0]
    );
    streaming(
        tracekit,
        &syscalls,
        perf.as_deref(),
        bpftrace.as_deref(),
        sizes,
    )?;
    println!(
        "\nExporter, anonymous memory after start: built-in set ({} metrics) {:.1} MiB, its \
         first metric alone {:.1} MiB: {:.2} MiB per metric beyond the first.",
        heap.metrics,
        heap.all_kib as f64 / 1024.0,
        heap.one_kib as f64 / 1024.0,
        (heap.all_kib as f64 - heap.one_kib as f64) / 1024.0 / (heap.metrics - 1) as f64
    );
    println!(
        "`tracekit stat -e 'syscalls:sys_enter_*' -- true` ({} tracepoints): {:.2} s from start \
         to exit (attaching, the run of true, detaching, printing), median of {} runs.",
        stat.tracepoints, stat.seconds, stat.runs
    );
    Ok(())
}

/// The getppid() rows: ns per call, added ns, and the two floors' ratios.
fn print_plans(watchers: &[Watcher], ns: &[f64], calls: u64, rounds: usize) {
    let added: Vec<f64> = ns.iter().map(|n| n - ns[0]).collect();
    let (floor_ns, classic_ns) = (added[1], added[2]);
    let against = |value: f64, floor: f64| {
        if floor > 0.0 {
            format!("{:.2}x", value / floor)
        } else {
            "-".into()
        }
    };
    println!(
        "\n| getppid() loop, {calls} calls, {rounds} rounds, medians | ns per call | added ns \
         per syscall | against the floor | against the classic floor |"
    );
    println!("|---|---|---|---|---|");
    for (i, watcher) in watchers.iter().enumerate() {
        if i == 0 {
            println!("| {} | {:.0} | - | - | - |", watcher.name, ns[0]);
        } else {
            println!(
                "| {} | {:.0} | {:+.0} | {} | {} |",
                watcher.name,
                ns[i],
                added[i],
                against(added[i], floor_ns),
                against(added[i], classic_ns)
            );
        }
    }
}

/// The streaming half of the bench: events delivered by `trace raw_syscalls:sys_enter`,
/// `perf trace` and bpftrace's `printf` from the getppid() loop, at full speed and paced
/// at each of `sizes.stream_rates` (a tool's sustainable rate is the highest it loses
/// nothing at).
pub fn streaming(
    tracekit: &Path,
    syscalls: &Path,
    perf: Option<&Path>,
    bpftrace: Option<&Path>,
    sizes: &Sizes,
) -> Result<()> {
    let tk = tracekit.display().to_string();
    let mut streams: Vec<(&str, Vec<String>, Option<&'static str>)> = vec![(
        "tracekit trace raw_syscalls:sys_enter",
        vec![tk.clone(), "trace".into(), "raw_syscalls:sys_enter".into()],
        Some("Hit Ctrl-C"),
    )];
    if let Some(perf) = perf {
        streams.push((
            "perf trace -a -e raw_syscalls:sys_enter",
            vec![
                perf.display().to_string(),
                "trace".into(),
                "-a".into(),
                "-e".into(),
                "raw_syscalls:sys_enter".into(),
            ],
            None,
        ));
    }
    if let Some(bpftrace) = bpftrace {
        streams.push((
            "bpftrace printf(\"%s %d\\n\", comm, pid) on raw_syscalls:sys_enter /comm != \"bpftrace\"/",
            // Without the filter, each line bpftrace writes is a syscall that its probe
            // prints again: its own events filled the buffer and no event of the loop was
            // delivered (0 of 20,000; tracekit leaves itself out the same way).
            vec![
                bpftrace.display().to_string(),
                "-e".into(),
                "tracepoint:raw_syscalls:sys_enter /comm != \"bpftrace\"/ \
                 { printf(\"%s %d\\n\", comm, pid); }"
                    .into(),
            ],
            Some("Attaching"),
        ));
    }
    let stream_calls = sizes.stream_calls;
    let mut streamed: Vec<Vec<Streamed>> = vec![Vec::new(); streams.len()];
    for round in 1..=sizes.stream_rounds {
        eprintln!(
            "xtask: bench engine (streaming): round {round}/{}",
            sizes.stream_rounds
        );
        for offset in 0..streams.len() {
            let index = (offset + round) % streams.len();
            let (_, argv, ready) = &streams[index];
            streamed[index].push(stream(argv, *ready, syscalls, &[stream_calls.to_string()])?);
        }
    }

    // Paced: rate r for stream_seconds.
    let rates = &sizes.stream_rates;
    let mut paced: Vec<Vec<Vec<Streamed>>> = vec![vec![Vec::new(); rates.len()]; streams.len()];
    for round in 1..=sizes.stream_rounds {
        for (r, &rate) in rates.iter().enumerate() {
            eprintln!(
                "xtask: bench engine (streaming at {rate}/s): round {round}/{}",
                sizes.stream_rounds
            );
            let calls = (rate as f64 * sizes.stream_seconds) as u64;
            let args = ["--rate".to_string(), rate.to_string(), calls.to_string()];
            for offset in 0..streams.len() {
                let index = (offset + round) % streams.len();
                let (_, argv, ready) = &streams[index];
                let mut run = stream(argv, *ready, syscalls, &args)?;
                run.calls = calls;
                paced[index][r].push(run);
            }
        }
    }
    println!(
        "\n| events streamed: getppid() loop of {stream_calls} calls, {} rounds, medians | loop \
         events delivered | delivered per second | events lost (the tool's count) | loop ns \
         per call |",
        sizes.stream_rounds
    );
    println!("|---|---|---|---|---|");
    for ((name, _, _), runs) in streams.iter().zip(&streamed) {
        let of = |f: &dyn Fn(&Streamed) -> f64| median(runs.iter().map(f).collect());
        println!(
            "| {name} | {:.0} | {:.0} | {:.0} | {:.0} |",
            of(&|s| s.delivered as f64),
            of(&|s| s.delivered as f64 / s.loop_seconds),
            of(&|s| s.lost as f64),
            of(&|s| s.loop_seconds * 1e9 / stream_calls as f64),
        );
    }
    println!(
        "\n| events streamed: getppid() loop paced, {} s, {} rounds | {} | sustained (no loss, every event) |",
        sizes.stream_seconds,
        sizes.stream_rounds,
        rates
            .iter()
            .map(|r| format!("{r}/s: delivered per s (lost)"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|{}---|", "---|".repeat(rates.len()));
    for ((name, _, _), by_rate) in streams.iter().zip(&paced) {
        let cells: Vec<String> = by_rate
            .iter()
            .map(|runs| {
                let of = |f: &dyn Fn(&Streamed) -> f64| median(runs.iter().map(f).collect());
                format!(
                    "{:.0} ({:.0})",
                    of(&|s| s.delivered as f64 / s.loop_seconds),
                    of(&|s| s.lost as f64)
                )
            })
            .collect();
        let sustained = rates
            .iter()
            .zip(by_rate)
            .filter(|(_, runs)| runs.iter().all(|s| s.lost == 0 && s.delivered >= s.calls))
            .map(|(rate, _)| *rate)
            .max()
            .map_or("none".to_string(), |rate| format!("{rate}/s"));
        println!("| {name} | {} | {sustained} |", cells.join(" | "));
    }
    Ok(())
}

/// One run of a streaming tool over the loop.
#[derive(Clone, Copy, Debug)]
struct Streamed {
    /// Lines naming the loop's comm.
    delivered: u64,
    /// The loop's calls (0 when not paced).
    calls: u64,
    /// What the tool said it lost.
    lost: u64,
    loop_seconds: f64,
}

/// Starts `argv` (both streams read line by line), waits until it is attached (`ready` on
/// either stream and a perf event fd, or a second and a perf event fd), runs the loop,
/// interrupts the tool and counts what it printed.
fn stream(
    argv: &[String],
    ready: Option<&'static str>,
    fixture: &Path,
    loop_args: &[String],
) -> Result<Streamed> {
    let mut command = Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: only async-signal-safe signal(2) between fork and exec (see bench.rs).
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = command
        .spawn()
        .with_context(|| format!("starting {argv:?}"))?;
    let (sender, receiver) = mpsc::channel();
    let readers: Vec<JoinHandle<(u64, u64)>> = [
        Box::new(child.stdout.take().context("stdout")?) as Box<dyn std::io::Read + Send>,
        Box::new(child.stderr.take().context("stderr")?),
    ]
    .into_iter()
    .map(|stream| {
        let sender = sender.clone();
        std::thread::spawn(move || count_lines(stream, ready, &sender))
    })
    .collect();
    drop(sender);
    let started = Instant::now();
    // tracekit says it is attached when it is (raw tracepoints hold no perf event); perf
    // trace says nothing, and bpftrace says so before it attaches: wait for a perf event.
    let perf_event_fds = if ready.is_some() {
        receiver
            .recv_timeout(Duration::from_secs(60))
            .with_context(|| format!("{argv:?} never became ready"))?;
        usize::from(ready == Some("Attaching"))
    } else {
        std::thread::sleep(Duration::from_secs(1));
        1
    };
    while count_perf_event_fds(child.id()) < perf_event_fds {
        if started.elapsed() > Duration::from_secs(60) {
            bail!("{argv:?} never attached");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let loop_started = Instant::now();
    let status = Command::new(fixture)
        .args(loop_args)
        .stdout(Stdio::null())
        .status()?;
    let loop_seconds = loop_started.elapsed().as_secs_f64();
    if !status.success() {
        bail!("tk_syscalls failed");
    }
    stop(child)?;
    let (mut delivered, mut lost) = (0, 0);
    for reader in readers {
        let (d, l) = reader
            .join()
            .map_err(|_| anyhow::anyhow!("a reader panicked"))?;
        delivered += d;
        lost += l;
    }
    Ok(Streamed {
        delivered,
        calls: 0,
        lost,
        loop_seconds,
    })
}

/// Reads `stream` to its end: says when a line holds `ready`; returns the lines naming
/// [`LOOP_COMM`] and the events lost that lines saying "lost" count.
fn count_lines(
    stream: Box<dyn std::io::Read + Send>,
    ready: Option<&str>,
    sender: &mpsc::Sender<()>,
) -> (u64, u64) {
    let mut reader = BufReader::with_capacity(1 << 20, stream);
    let mut line = Vec::new();
    let (mut delivered, mut lost) = (0, 0);
    while reader.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
        let text = String::from_utf8_lossy(&line);
        if text.contains(LOOP_COMM) {
            delivered += 1;
        } else if let Some(count) = lost_in(&text) {
            lost += count;
        } else if ready.is_some_and(|needle| text.contains(needle)) {
            let _ = sender.send(());
        }
        line.clear();
    }
    (delivered, lost)
}

/// The events a tool's line says were lost: the first number after "lost" (any case), as
/// tracekit ("Lost: 12 events to a full ring buffer"), perf trace ("LOST 12 events!") and
/// bpftrace ("Lost 12 events") say it; None for other lines.
fn lost_in(line: &str) -> Option<u64> {
    let at = line.to_ascii_lowercase().find("lost")?;
    let rest = &line[at + 4..];
    // A word before any number: nothing lost ("Lost: nothing.").
    let Some(start) = rest.find(|c: char| c.is_ascii_digit()) else {
        return Some(0);
    };
    if rest[..start].chars().any(|c| c.is_ascii_alphabetic()) {
        return Some(0);
    }
    let digits: String = rest[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The exporter's anonymous memory, built-in set against its first metric alone.
struct Heap {
    metrics: usize,
    all_kib: u64,
    one_kib: u64,
}

/// The first metric of the built-in set (`exporter/config.rs`'s DEFAULT_SET).
const FIRST_METRIC: &str = "[[metric]]\nname = \"syscalls\"\npreset = \"syscount\"\n";

fn exporter_heap(tracekit: &Path) -> Result<Heap> {
    let dir = crate::util::workspace_root().join("target/bench");
    let one = dir.join("exporter-one-metric.toml");
    std::fs::write(&one, FIRST_METRIC)?;
    let all_kib = exporter_anon_kib(tracekit, None)?;
    let one_kib = exporter_anon_kib(tracekit, Some(&one))?;
    Ok(Heap {
        metrics: 4,
        all_kib,
        one_kib,
    })
}

/// Starts the exporter (with `config`, else its built-in set), waits until it serves and
/// 2 s more, and returns its `Anonymous:` KiB from smaps_rollup.
fn exporter_anon_kib(tracekit: &Path, config: Option<&Path>) -> Result<u64> {
    let mut command = Command::new(tracekit);
    command.args(["exporter", "--listen", "127.0.0.1:0"]);
    if let Some(config) = config {
        command.arg("--config").arg(config);
    }
    let (child, _) = crate::bench::start_until(
        command.stdout(Stdio::null()).stderr(Stdio::piped()),
        Some(("SIGINT or SIGTERM to stop", true)),
        0,
    )?;
    std::thread::sleep(Duration::from_secs(2));
    let rollup = std::fs::read_to_string(format!("/proc/{}/smaps_rollup", child.id()));
    stop(child)?;
    rollup?
        .lines()
        .find_map(|line| line.strip_prefix("Anonymous:"))
        .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no Anonymous: in smaps_rollup")
}

struct StatAttach {
    tracepoints: usize,
    seconds: f64,
    runs: usize,
}

fn stat_attach(tracekit: &Path) -> Result<StatAttach> {
    let tracepoints = std::fs::read_dir("/sys/kernel/tracing/events/syscalls")
        .map(|dir| {
            dir.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("sys_enter_"))
                .count()
        })
        .unwrap_or(0);
    let runs = 3;
    let mut seconds = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let status = Command::new(tracekit)
            .args(["stat", "-e", "syscalls:sys_enter_*", "--", "true"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        if !status.success() {
            bail!("tracekit stat -e 'syscalls:sys_enter_*' -- true failed");
        }
        seconds.push(started.elapsed().as_secs_f64());
    }
    Ok(StatAttach {
        tracepoints,
        seconds: median(seconds),
        runs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_counts_of_each_tool() {
        assert_eq!(lost_in("Lost: nothing.\n"), Some(0));
        assert_eq!(
            lost_in("Lost: 1,234 events to a full ring buffer; 2 stacks.\n"),
            Some(1234)
        );
        assert_eq!(lost_in("LOST 17 events!\n"), Some(17));
        assert_eq!(lost_in("Lost 5 events\n"), Some(5));
        assert_eq!(lost_in("Printed 30588 events in 1.00 s.\n"), None);
    }
}
