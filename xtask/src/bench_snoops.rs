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

/// `tracekit TOOL` and bpftrace's `TOOL.bt` (`opensnoop` on `tk_snoops rate-opens`,
/// `execsnoop` on `tk_snoops rate-execs`): CPU time, events printed of the fixture's count,
/// and the loss each tool reports.
pub(crate) fn snoops(
    tracekit: &Path,
    tool: &str,
    rate: u64,
    seconds: f64,
    rounds: usize,
) -> Result<()> {
    let fixture = build_fixture("tk_snoops")?;
    let dir = workspace_root().join("target/bench");
    std::fs::create_dir_all(&dir)?;
    // Short, so tracekit's 32-byte paths hold it whole.
    let target = PathBuf::from("/tmp/tk-bench-open");
    let exec = tool == "execsnoop";
    // What ends each line of an event of the fixture's, and the fixture's own arguments.
    let (needle, load, made) = if exec {
        (
            "tk-bench-exec".to_string(),
            vec![
                "rate-execs".to_string(),
                rate.to_string(),
                seconds.to_string(),
            ],
            "execs=",
        )
    } else {
        std::fs::write(&target, "x")?;
        let needle = target.display().to_string();
        (
            needle.clone(),
            vec![
                "rate-opens".to_string(),
                needle,
                rate.to_string(),
                seconds.to_string(),
            ],
            "opens=",
        )
    };
    let out = dir.join(format!("{tool}.txt"));
    let mut tools: Vec<(String, Vec<String>, (&'static str, bool))> = vec![(
        format!("tracekit {tool}"),
        vec![
            tracekit.display().to_string(),
            tool.into(),
            "-o".into(),
            out.display().to_string(),
        ],
        ("Hit Ctrl-C", true),
    )];
    let bt = PathBuf::from(format!("/usr/sbin/{tool}.bt"));
    if let Some(bpftrace) = find_program("bpftrace")
        && bt.is_file()
    {
        tools.push((
            format!("bpftrace {tool}.bt"),
            vec![bpftrace.display().to_string(), bt.display().to_string()],
            ("Attaching", false),
        ));
    }
    let what = if exec { "execs" } else { "opens" };
    eprintln!("xtask: bench snoops: {rounds} rounds of {rate} {what}/s for {seconds} s per tool");
    // Per tool: usage, printed, made, lost (as the tool says).
    let mut results: Vec<Vec<(Usage, u64, u64, String)>> = vec![Vec::new(); tools.len()];
    for round in 1..=rounds {
        eprintln!("xtask: bench snoops: round {round}/{rounds}");
        for offset in 0..tools.len() {
            let index = (offset + round) % tools.len();
            let (_, argv, ready) = &tools[index];
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
            let output = Command::new(&fixture).args(&load).output()?;
            let count: u64 = String::from_utf8_lossy(&output.stdout)
                .trim()
                .strip_prefix(made)
                .and_then(|n| n.parse().ok())
                .with_context(|| format!("tk_snoops {} printed no count", load[0]))?;
            let (_, usage) = stop(child)?;
            // Let the reader thread finish the stream.
            std::thread::sleep(Duration::from_millis(200));
            let kept = kept.lock().unwrap().clone();
            let ends = |line: &str| line.trim_end().ends_with(needle.as_str());
            let (printed, lost) = if ready.1 {
                let text = std::fs::read_to_string(&out).unwrap_or_default();
                let printed = text.lines().filter(|l| ends(l)).count() as u64;
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
            results[index].push((usage, printed, count, lost));
        }
    }
    println!(
        "\n| {tool}, {rate} {what}/s for {seconds} s, {rounds} rounds | CPU s (median) | peak RSS MiB (median) | {what} printed / made (all rounds) | loss reported |"
    );
    println!("|---|---|---|---|---|");
    let mut cpus = Vec::new();
    for ((name, ..), runs) in tools.iter().zip(&results) {
        let cpu = median(runs.iter().map(|r| r.0.cpu.as_secs_f64()).collect());
        let rss = median(
            runs.iter()
                .map(|r| r.0.max_rss_kib as f64 / 1024.0)
                .collect(),
        );
        let printed: u64 = runs.iter().map(|r| r.1).sum();
        let made: u64 = runs.iter().map(|r| r.2).sum();
        let lost: Vec<&str> = runs.iter().map(|r| r.3.as_str()).collect();
        println!(
            "| {name} | {cpu:.3} | {rss:.0} | {printed} / {made} | {} |",
            lost.join("; ")
        );
        cpus.push((cpu, printed, made));
    }
    // The goal: tracekit printed every event and used less CPU.
    if let [(ours, printed, made), (theirs, ..)] = cpus[..] {
        let verdict = if printed == made && ours < theirs {
            "holds"
        } else {
            "FAILS"
        };
        println!(
            "\nevery event printed, less CPU than bpftrace ({tool}): {verdict}: tracekit printed {printed} of {made}, \
             CPU {ours:.3} s against bpftrace's {theirs:.3} s"
        );
    }
    let _ = std::fs::remove_file(&target);
    let _ = std::fs::remove_file(&out);
    Ok(())
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
