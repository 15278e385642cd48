//! `cargo xtask bench profile`: tracekit's whole-machine profile against perf record and
//! bpftrace's profile on two burners: each profiler's CPU, peak RSS and the burners' work.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::{Context as _, Result, bail};

use crate::{
    bench::*,
    util::{Cmd, find_program, workspace_root},
};

/// Runs two burners for `seconds` and returns their work rate (loops per second, summed).
fn burn(burner: &Path, seconds: f64) -> Result<f64> {
    let children: Vec<Child> = (0..2)
        .map(|_| {
            Command::new(burner)
                .arg(seconds.to_string())
                .stdout(Stdio::piped())
                .spawn()
                .context("starting tk_burner")
        })
        .collect::<Result<_>>()?;
    let mut loops = 0u64;
    for child in children {
        let output = child.wait_with_output()?;
        let text = String::from_utf8_lossy(&output.stdout);
        loops += text
            .lines()
            .find_map(|line| line.strip_prefix("loops="))
            .and_then(|n| n.parse::<u64>().ok())
            .context("tk_burner printed no loops=")?;
    }
    Ok(loops as f64 / seconds)
}

struct Sample {
    usage: Usage,
    rate: f64,
    startup: Duration,
}

/// The row names of the second tracekit binary (`--compare`).
const COMPARED: [&str; 2] = [
    "compared binary (--call-graph dwarf)",
    "compared binary --call-graph fp",
];

pub(crate) fn profile(
    tracekit: &Path,
    compare: Option<&Path>,
    tracekit_only: bool,
    seconds: f64,
    rounds: usize,
) -> Result<()> {
    let dir = workspace_root().join("target/bench");
    let burner = build_fixture("tk_burner")?;

    let others = |program| find_program(program).filter(|_| !tracekit_only);
    let perf = others("perf");
    let bpftrace = others("bpftrace");
    let collapse = match &perf {
        Some(_) => Some(inferno_collapse_perf()?),
        None => None,
    };
    eprintln!(
        "xtask: bench profile: {rounds} rounds of {seconds} s at 999 Hz, two CPU burners; \
         perf: {}, bpftrace: {}",
        if perf.is_some() {
            "yes"
        } else {
            "not run (--tracekit-only or not installed)"
        },
        if bpftrace.is_some() {
            "yes"
        } else {
            "not run (--tracekit-only or not installed)"
        }
    );

    // `-v`'s summary of the DWARF unwinder's tables, one line per dwarf run.
    let tables: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut baseline = Vec::new();
    let mut results: Vec<(&str, Vec<Sample>)> = vec![
        ("tracekit (--call-graph dwarf, the default)", Vec::new()),
        ("tracekit --call-graph fp", Vec::new()),
    ];
    if let Some(compare) = compare {
        eprintln!(
            "xtask: bench profile: also {} (rows \"{}\")",
            compare.display(),
            COMPARED[0]
        );
        for name in COMPARED {
            results.push((name, Vec::new()));
        }
    }
    if perf.is_some() {
        results.push((
            "perf record -g + perf script + inferno-collapse-perf",
            Vec::new(),
        ));
        results.push((
            "perf record --call-graph dwarf + perf script + inferno-collapse-perf",
            Vec::new(),
        ));
    }
    if bpftrace.is_some() {
        results.push(("bpftrace", Vec::new()));
    }

    for round in 1..=rounds {
        eprintln!("xtask: bench profile: round {round}/{rounds}");
        // The machine's speed drifts between runs more than a profiler slows it: compare
        // each tool with a no-profiler run of the same round, and rotate the order.
        let round_base = burn(&burner, seconds)?;
        baseline.push(round_base);
        let order: Vec<usize> = (0..results.len())
            .map(|i| (i + round) % results.len())
            .collect();
        for index in order {
            let (name, samples) = &mut results[index];
            let sample = match *name {
                tool if tool.starts_with("tracekit") || COMPARED.contains(&tool) => {
                    let out = dir.join("tracekit.folded");
                    let call_graph = if tool.contains("fp") { "fp" } else { "dwarf" };
                    let binary = match compare {
                        Some(compare) if COMPARED.contains(&tool) => compare,
                        _ => tracekit,
                    };
                    let (child, startup) = start_collecting(
                        Command::new(binary)
                            .args(["profile", "-a", "-F", "999", "-v", "--call-graph"])
                            .arg(call_graph)
                            .arg("-o")
                            .arg(&out)
                            .stdout(Stdio::null())
                            .stderr(Stdio::piped()),
                        Some(("Hit Ctrl-C", true)),
                        0,
                        Some(("unwind tables: ", tables.clone())),
                    )?;
                    let rate = burn(&burner, seconds)?;
                    let (code, usage) = stop_once(child)?;
                    if code != 0 {
                        bail!("tracekit exited with {code}");
                    }
                    Sample {
                        usage,
                        rate,
                        startup,
                    }
                }
                "bpftrace" => {
                    let (child, startup) = start_until(
                        Command::new(bpftrace.as_ref().unwrap())
                            .args([
                                "-e",
                                "profile:hz:999 { @[kstack, ustack, comm] = count(); }",
                            ])
                            .stdout(Stdio::piped())
                            .stderr(Stdio::null()),
                        // "Attaching" comes before attaching: wait for every CPU's event.
                        Some(("Attaching", false)),
                        online_cpus(),
                    )?;
                    let rate = burn(&burner, seconds)?;
                    let (_, usage) = stop(child)?;
                    Sample {
                        usage,
                        rate,
                        startup,
                    }
                }
                tool => {
                    let data = dir.join("perf.data");
                    // perf's own default for dwarf: 8 KiB of user stack per sample.
                    let call_graph = if tool.contains("dwarf") {
                        "dwarf"
                    } else {
                        "fp"
                    };
                    let (child, _) = start_until(
                        Command::new(perf.as_ref().unwrap())
                            .args([
                                "record",
                                "-q",
                                "-F",
                                "999",
                                "-a",
                                "--call-graph",
                                call_graph,
                            ])
                            .arg("-o")
                            .arg(&data)
                            .stdout(Stdio::null())
                            .stderr(Stdio::null()),
                        None,
                        0,
                    )?;
                    let rate = burn(&burner, seconds)?;
                    let (_, record) = stop(child)?;
                    let script_out = dir.join("perf.script");
                    let script = run_measured(
                        Command::new(perf.as_ref().unwrap())
                            .args(["script", "-i"])
                            .arg(&data),
                        &script_out,
                    )?;
                    let fold = run_measured(
                        Command::new(collapse.as_ref().unwrap()).arg(&script_out),
                        &dir.join("perf.folded"),
                    )?;
                    Sample {
                        usage: record.add(script).add(fold),
                        rate,
                        startup: Duration::ZERO,
                    }
                }
            };
            samples.push(Sample {
                rate: sample.rate / round_base,
                ..sample
            });
        }
    }

    let base_rate = median(baseline.clone());
    println!(
        "\n| tool ({seconds} s at 999 Hz, {rounds} rounds, medians) | CPU time | peak RSS | \
         workload rate vs none (range) | start to attached |"
    );
    println!("|---|---|---|---|---|");
    for (name, samples) in &results {
        let cpu = median(samples.iter().map(|s| s.usage.cpu.as_secs_f64()).collect());
        let rss = median(
            samples
                .iter()
                .map(|s| s.usage.max_rss_kib as f64 / 1024.0)
                .collect(),
        );
        let ratios: Vec<f64> = samples.iter().map(|s| (s.rate - 1.0) * 100.0).collect();
        let rate = median(ratios.clone());
        let (low, high) = ratios
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), &r| (lo.min(r), hi.max(r)));
        let startup = median(
            samples
                .iter()
                .map(|s| s.startup.as_secs_f64() * 1e3)
                .collect(),
        );
        println!(
            "| {name} | {cpu:.3} s | {rss:.1} MiB | {rate:+.1}% ({low:+.1}% .. {high:+.1}%) | {} |",
            if startup > 0.0 {
                format!("{startup:.0} ms")
            } else {
                "n/a".into()
            }
        );
    }
    println!(
        "\nBaseline work rate without a profiler: {base_rate:.0} loops/s (rounds: {:?}).",
        baseline.iter().map(|r| r.round()).collect::<Vec<_>>()
    );
    println!("\nThe DWARF unwinder's tables (tracekit -v), per dwarf round:");
    for line in tables.lock().unwrap().iter() {
        println!("  {}", line.trim_start_matches("tracekit: "));
    }
    Ok(())
}

/// inferno's perf collapser, installed with cargo when missing (for the perf pipeline).
fn inferno_collapse_perf() -> Result<PathBuf> {
    if let Some(path) = find_program("inferno-collapse-perf") {
        return Ok(path);
    }
    eprintln!("xtask: bench: installing inferno's command-line tools (for the perf pipeline)");
    Cmd::new("cargo")
        .args(["install", "inferno", "--version", "0.12.8", "--locked"])
        .run()?;
    find_program("inferno-collapse-perf").context("inferno-collapse-perf not found after install")
}
