//! `cargo xtask bench snoops` and `cargo xtask bench startup`: the per-event tools against
//! bpftrace's `.bt` versions on a fixture's load at a set rate, and
//! what a run of a tool costs before its first event (loading the engine, resolving BTF
//! paths). Numbers come from `wait4(2)` rusage (CPU time and peak RSS), rounds interleaved,
//! medians reported.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::{Context as _, Result};

use crate::{
    bench::{Usage, build_fixture, median, start_collecting, stop, wait_usage},
    util::{find_program, workspace_root},
};

/// The load of [`snoops`]: the fixture's rate and seconds per run, the rounds, and the
/// lengths of the path it opens (opensnoop).
pub(crate) struct Load {
    pub(crate) rate: u64,
    pub(crate) seconds: f64,
    pub(crate) rounds: usize,
    /// Bytes of the opened path, each a table of its own (0: `/tmp/tk-bench-open`).
    pub(crate) path_bytes: Vec<usize>,
}

/// The file opened at a path of about `bytes` bytes (0: the short `/tmp/tk-bench-open`):
/// directories of at most 200 bytes each (NAME_MAX is 255) under /tmp, then
/// `tk-bench-open`. Made here; the caller removes [`bench_top`] of it.
fn bench_path(bytes: usize) -> Result<PathBuf> {
    let file = "tk-bench-open";
    if bytes == 0 {
        let path = PathBuf::from("/tmp").join(file);
        std::fs::write(&path, "x")?;
        return Ok(path);
    }
    let mut dir = format!("/tmp/tk-bench-{bytes}");
    while dir.len() + 1 + file.len() < bytes {
        let room = (bytes - dir.len() - 2 - file.len()).clamp(1, 200);
        dir.push('/');
        dir.push_str(&"d".repeat(room));
    }
    std::fs::create_dir_all(&dir)?;
    let path = PathBuf::from(format!("{dir}/{file}"));
    std::fs::write(&path, "x")?;
    Ok(path)
}

/// What [`bench_path`] made under /tmp.
fn bench_top(path: &Path) -> PathBuf {
    path.components().take(3).collect()
}

/// One runner of a round: its name in the tables, its argv, and what says it is ready
/// (the text, and whether on stderr: tracekit's).
type Runner = (String, Vec<String>, (&'static str, bool));

/// One run's numbers: usage, events printed whole, events made, the loss it reported.
type Run = (Usage, u64, u64, String);

/// `tracekit TOOL` (and `compare TOOL`) and bpftrace's `TOOL.bt` (`opensnoop` on `tk_snoops
/// rate-opens` of a path of each of `load.path_bytes`, `execsnoop` on `tk_snoops
/// rate-execs`), every runner and length once per round, the order rotated: CPU time, CPU
/// per event made, events printed whole of the fixture's count, and the loss each tool
/// reports.
pub(crate) fn snoops(
    tracekit: &Path,
    compare: Option<&Path>,
    tool: &str,
    load: &Load,
) -> Result<()> {
    let fixture = build_fixture("tk_snoops")?;
    let dir = workspace_root().join("target/bench");
    std::fs::create_dir_all(&dir)?;
    let exec = tool == "execsnoop";
    let lengths: Vec<usize> = if exec {
        vec![0]
    } else {
        load.path_bytes.clone()
    };
    let paths = lengths
        .iter()
        .map(|&bytes| bench_path(bytes))
        .collect::<Result<Vec<_>>>()?;
    let out = dir.join(format!("{tool}.txt"));
    let mut runners: Vec<Runner> = Vec::new();
    for (binary, name) in [
        (Some(tracekit), format!("tracekit {tool}")),
        (
            compare,
            format!(
                "tracekit {tool} ({})",
                compare.map(|c| c.display().to_string()).unwrap_or_default()
            ),
        ),
    ] {
        if let Some(binary) = binary {
            runners.push((
                name,
                vec![
                    binary.display().to_string(),
                    tool.into(),
                    "-o".into(),
                    out.display().to_string(),
                ],
                ("Hit Ctrl-C", true),
            ));
        }
    }
    let bt = PathBuf::from(format!("/usr/sbin/{tool}.bt"));
    if let Some(bpftrace) = find_program("bpftrace")
        && bt.is_file()
    {
        runners.push((
            format!("bpftrace {tool}.bt"),
            vec![bpftrace.display().to_string(), bt.display().to_string()],
            ("Attaching", false),
        ));
    }
    let what = if exec { "execs" } else { "opens" };
    let (rate, seconds, rounds) = (load.rate, load.seconds, load.rounds);
    eprintln!(
        "xtask: bench snoops: {rounds} rounds of {rate} {what}/s for {seconds} s per tool \
         and path length {lengths:?}"
    );
    // Per length and runner: its runs; a length of `None`, tracekit's idle runs (as long,
    // no load: what a run costs besides its events, its startup and detach above all).
    let configs: Vec<(Option<usize>, usize)> = (0..lengths.len())
        .map(Some)
        .chain([None])
        .flat_map(|length| (0..runners.len()).map(move |runner| (length, runner)))
        .filter(|(length, runner)| length.is_some() || runners[*runner].2.1)
        .collect();
    let mut results: Vec<Vec<Run>> = vec![Vec::new(); configs.len()];
    for round in 1..=rounds {
        eprintln!("xtask: bench snoops: round {round}/{rounds}");
        for offset in 0..configs.len() {
            let index = (offset + round) % configs.len();
            let (length, runner) = configs[index];
            let path = length.map(|l| paths[l].as_path());
            let run = snoop_once(&fixture, &runners[runner], &out, exec, path, load)?;
            results[index].push(run);
        }
    }
    // Each tracekit runner's idle CPU (median).
    let idle = |runner: usize| {
        configs
            .iter()
            .position(|c| *c == (None, runner))
            .map(|index| {
                median(
                    results[index]
                        .iter()
                        .map(|r| r.0.cpu.as_secs_f64())
                        .collect(),
                )
            })
    };
    for (length, path) in lengths.iter().zip(&paths) {
        let shown = if *length == 0 {
            format!("path {}", path.display())
        } else {
            format!("{length}-byte path")
        };
        let subject = if exec {
            String::new()
        } else {
            format!(", {shown}")
        };
        let one = &what[..what.len() - 1];
        println!(
            "\n| {tool}, {rate} {what}/s for {seconds} s{subject}, {rounds} rounds | CPU s (median) \
             | CPU µs per {one} (median) | same, less the idle run's CPU | peak RSS MiB (median) \
             | {what} printed whole / made (all rounds) | loss reported |"
        );
        println!("|---|---|---|---|---|---|---|");
        let mut cpus = Vec::new();
        for (index, &(l, runner)) in configs.iter().enumerate() {
            if l.map(|l| lengths[l]) != Some(*length) {
                continue;
            }
            let runs = &results[index];
            let cpu = median(runs.iter().map(|r| r.0.cpu.as_secs_f64()).collect());
            let per_event = median(
                runs.iter()
                    .map(|r| r.0.cpu.as_secs_f64() * 1e6 / r.2.max(1) as f64)
                    .collect(),
            );
            let idle = idle(runner);
            let net = idle.map(|idle| {
                median(
                    runs.iter()
                        .map(|r| (r.0.cpu.as_secs_f64() - idle) * 1e6 / r.2.max(1) as f64)
                        .collect(),
                )
            });
            let rss = median(
                runs.iter()
                    .map(|r| r.0.max_rss_kib as f64 / 1024.0)
                    .collect(),
            );
            let printed: u64 = runs.iter().map(|r| r.1).sum();
            let made: u64 = runs.iter().map(|r| r.2).sum();
            let lost: Vec<&str> = runs.iter().map(|r| r.3.as_str()).collect();
            let each: Vec<String> = runs
                .iter()
                .map(|r| format!("{:.3}", r.0.cpu.as_secs_f64()))
                .collect();
            println!(
                "| {} | {cpu:.3} ({}) | {per_event:.2} | {} | {rss:.0} | {printed} / {made} | {} |",
                runners[runner].0,
                each.join(", "),
                net.map_or("-".to_string(), |net| format!(
                    "{net:.2} (idle {:.3} s)",
                    idle.unwrap_or_default()
                )),
                lost.join("; ")
            );
            cpus.push((runners[runner].0.as_str(), per_event, printed, made, net));
        }
        // tracekit against the other build, and against bpftrace: CPU per event made.
        if compare.is_some()
            && let [
                (_, ours, _, _, ours_net),
                (name, theirs, _, _, theirs_net),
                ..,
            ] = cpus[..]
        {
            println!(
                "\ncost per event against {name}{subject}: {:.2}x ({ours:.2} µs against \
                 {theirs:.2} µs); less each one's idle run: {:.2}x",
                ours / theirs,
                ours_net.unwrap_or_default() / theirs_net.unwrap_or(f64::NAN)
            );
        }
        if let (Some((_, ours, printed, made, _)), Some((_, theirs, ..))) = (
            cpus.first(),
            cpus.iter().find(|c| c.0.starts_with("bpftrace")),
        ) {
            let verdict = if printed == made && ours < theirs {
                "holds"
            } else {
                "FAILS"
            };
            println!(
                "\nevery event printed, less CPU than bpftrace ({tool}{subject}): {verdict}: \
                 tracekit printed {printed} of {made}, {ours:.2} µs per event against bpftrace's \
                 {theirs:.2} µs"
            );
        }
    }
    for (length, path) in lengths.iter().zip(&paths) {
        if *length == 0 {
            let _ = std::fs::remove_file(path);
        } else {
            let _ = std::fs::remove_dir_all(bench_top(path));
        }
    }
    let _ = std::fs::remove_file(&out);
    Ok(())
}

/// One run of `runner` while the fixture opens `path` (execs) at the load's rate, or
/// (`path` `None`) as long with no load: its usage, the events it printed whole, the events
/// the fixture made, the loss it reported.
fn snoop_once(
    fixture: &Path,
    runner: &Runner,
    out: &Path,
    exec: bool,
    path: Option<&Path>,
    load: &Load,
) -> Result<Run> {
    let (_, argv, ready) = runner;
    let (rate, seconds) = (load.rate.to_string(), load.seconds.to_string());
    // What ends each line of an event of the fixture's, and the fixture's own arguments.
    let (needle, args, made) = if exec {
        (
            "tk-bench-exec".to_string(),
            vec!["rate-execs".to_string(), rate, seconds],
            "execs=",
        )
    } else {
        let needle = path
            .unwrap_or(Path::new("/tmp/tk-bench-open"))
            .display()
            .to_string();
        (
            needle.clone(),
            vec!["rate-opens".to_string(), needle, rate, seconds],
            "opens=",
        )
    };
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]);
    let (out_stream, err_stream) = if ready.1 {
        (Stdio::null(), Stdio::piped())
    } else {
        (Stdio::piped(), Stdio::null())
    };
    command.stdout(out_stream).stderr(err_stream);
    let kept = Arc::new(Mutex::new(Vec::new()));
    // bpftrace prints events and "Lost N events" on stdout, tracekit its
    // "Lost:" line on stderr: keep what names the needle, or a loss.
    let keep: &'static str = if ready.1 {
        "Lost"
    } else if exec {
        "tk-bench-exec"
    } else {
        "tk-bench-open"
    };
    let (child, _) = start_collecting(
        &mut command,
        Some(*ready),
        if ready.1 { 0 } else { 1 },
        Some((keep, kept.clone())),
    )?;
    let count: u64 = if path.is_none() {
        std::thread::sleep(Duration::from_secs_f64(load.seconds));
        0
    } else {
        let output = Command::new(fixture).args(&args).output()?;
        String::from_utf8_lossy(&output.stdout)
            .trim()
            .strip_prefix(made)
            .and_then(|n| n.parse().ok())
            .with_context(|| format!("tk_snoops {} printed no count", args[0]))?
    };
    let (_, usage) = stop(child)?;
    // Let the reader thread finish the stream.
    std::thread::sleep(Duration::from_millis(200));
    let kept = kept.lock().unwrap().clone();
    let ends = |line: &str| line.trim_end().ends_with(needle.as_str());
    let (printed, lost) = if ready.1 {
        let text = std::fs::read_to_string(out).unwrap_or_default();
        let printed = text.lines().filter(|l| ends(l)).count() as u64;
        let _ = std::fs::remove_file(out);
        (printed, kept.join(" "))
    } else {
        let printed = kept.iter().filter(|l| ends(l)).count() as u64;
        let lost: u64 = kept
            .iter()
            .filter_map(|l| {
                l.strip_prefix("Lost ")?
                    .split(' ')
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .sum();
        (printed, format!("Lost: {lost} events"))
    };
    Ok((usage, printed, count, lost))
}

/// The commands [`startup`] measures: a tool idle for a second (`-d 1`).
const STARTUP: [&[&str]; 4] = [
    &["execsnoop", "-d", "1"],
    &["opensnoop", "-d", "1"],
    &["trace", "syscalls:sys_enter_getppid", "-d", "1"],
    &["profile", "-d", "1"],
];

/// Each command of [`STARTUP`] with `tracekit` (and `compare`, in the same rounds, the order
/// rotated): median CPU time and peak RSS per run. The second of idle tracing costs next to
/// nothing, so the CPU time is the startup's and the teardown's.
pub(crate) fn startup(tracekit: &Path, compare: Option<&Path>, rounds: usize) -> Result<()> {
    let mut binaries = vec![tracekit.to_path_buf()];
    binaries.extend(compare.map(Path::to_path_buf));
    let out = workspace_root().join("target/bench/startup.txt");
    std::fs::create_dir_all(out.parent().context("no parent")?)?;
    let configs: Vec<(usize, usize)> = (0..STARTUP.len())
        .flat_map(|command| (0..binaries.len()).map(move |binary| (command, binary)))
        .collect();
    let mut usages: Vec<Vec<Usage>> = vec![Vec::new(); configs.len()];
    eprintln!(
        "xtask: bench startup: {rounds} rounds of {} runs",
        configs.len()
    );
    for round in 0..rounds {
        for offset in 0..configs.len() {
            let index = (offset + round) % configs.len();
            let (command, binary) = configs[index];
            let child = Command::new(&binaries[binary])
                .args(STARTUP[command])
                .stdout(std::fs::File::create(&out)?)
                .stderr(Stdio::null())
                .spawn()
                .with_context(|| format!("starting {}", binaries[binary].display()))?;
            let (code, usage) = wait_usage(child)?;
            if code != 0 {
                anyhow::bail!(
                    "{} {} exited with {code}",
                    binaries[binary].display(),
                    STARTUP[command].join(" ")
                );
            }
            usages[index].push(usage);
        }
    }
    println!("\n| command, {rounds} rounds | binary | CPU s (median) | peak RSS MiB (median) |");
    println!("|---|---|---|---|");
    for ((command, binary), runs) in configs.iter().zip(&usages) {
        let cpu = median(runs.iter().map(|u| u.cpu.as_secs_f64()).collect());
        let rss = median(runs.iter().map(|u| u.max_rss_kib as f64 / 1024.0).collect());
        println!(
            "| tracekit {} | {} | {cpu:.3} | {rss:.0} |",
            STARTUP[*command].join(" "),
            binaries[*binary].display()
        );
    }
    let _ = std::fs::remove_file(&out);
    Ok(())
}
