//! `cargo xtask bench jit`: the cost of naming V8 and HotSpot frames in the kernel. A busy node (`tests/fixtures/js_chain.js SECONDS count`) and a busy JVM
//! (`tests/fixtures/TkBusy.java`, no flags), each printing the leaf calls it made, run
//! SECONDS under each of: nothing, `tracekit profile -a -F 999` with the runtime unwinders,
//! and the same with `--no-interpreters`, the order rotated each round. Per configuration,
//! medians over the rounds: tracekit's CPU time and peak RSS (wait4: symbolizing and
//! writing included), and each workload's work against the same round's run without a
//! profiler. The spread of the no-profiler runs against their median is the drift.

use std::{
    io::{BufRead as _, BufReader},
    path::{Path, PathBuf},
    process::{Child, ChildStdout, Command, Stdio},
    time::Instant,
};

use anyhow::{Context as _, Result, bail};

use crate::{
    bench_python::{Usage, median, start_tracekit, stop},
    util::workspace_root,
};

const NODE: &str = "/usr/bin/node";

/// `TkBusy.java` compiled into `dir/jit-classes`.
fn compile(dir: &Path) -> Result<PathBuf> {
    let classes = dir.join("jit-classes");
    std::fs::create_dir_all(&classes)?;
    let status = Command::new("javac")
        .arg("-d")
        .arg(&classes)
        .arg(workspace_root().join("tests/fixtures/TkBusy.java"))
        .status()
        .context("running javac (apt-get install openjdk-17-jdk-headless)")?;
    if !status.success() {
        bail!("javac failed: {status}");
    }
    Ok(classes)
}

type Worker = (Child, BufReader<ChildStdout>);

/// Starts node and the JVM, each busy for `seconds`, and waits for both to say "ready".
fn start_workers(classes: &Path, seconds: f64) -> Result<[Worker; 2]> {
    let seconds = seconds.to_string();
    let mut node = Command::new(NODE);
    node.arg(workspace_root().join("tests/fixtures/js_chain.js"))
        .args([seconds.as_str(), "count"]);
    let mut java = Command::new("java");
    java.arg("-cp")
        .arg(classes)
        .args(["TkBusy", seconds.as_str()]);
    let start = |mut command: Command| -> Result<Worker> {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {command:?}"))?;
        let mut reader = BufReader::new(child.stdout.take().context("stdout")?);
        let mut line = String::new();
        reader.read_line(&mut line)?;
        if line.trim() != "ready" {
            bail!("{command:?} said {line:?}");
        }
        Ok((child, reader))
    };
    Ok([start(node)?, start(java)?])
}

/// Waits for the workers: (node's, the JVM's) leaf calls.
fn finish_workers(workers: [Worker; 2]) -> Result<[u64; 2]> {
    let mut calls = [0; 2];
    for (slot, (mut child, mut reader)) in calls.iter_mut().zip(workers) {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        *slot = line
            .trim()
            .strip_prefix("calls=")
            .and_then(|n| n.parse::<u64>().ok())
            .with_context(|| format!("a worker printed {line:?}"))?;
        child.wait()?;
    }
    Ok(calls)
}

struct Run {
    usage: Option<Usage>,
    /// Leaf calls per second of node and of the JVM.
    rates: [f64; 2],
}

/// Runs the bench: `rounds` rounds of every configuration, `seconds` each.
pub fn jit_bench(tracekit: &Path, seconds: f64, rounds: usize) -> Result<()> {
    if !Path::new(NODE).is_file() {
        bail!("{NODE} is not installed (apt-get install nodejs)");
    }
    let dir = workspace_root().join("target/bench");
    std::fs::create_dir_all(&dir)?;
    let classes = compile(&dir)?;
    let mut configs: Vec<(&str, Vec<Run>)> = vec![
        ("no profiler", Vec::new()),
        ("tracekit profile -a -F 999", Vec::new()),
        ("tracekit profile -a -F 999 --no-interpreters", Vec::new()),
    ];
    eprintln!("xtask: bench jit: {rounds} rounds of {seconds} s, a busy node and a busy JVM");
    for round in 1..=rounds {
        eprintln!("xtask: bench jit: round {round}/{rounds}");
        let count = configs.len();
        for index in (0..count).map(|i| (i + round) % count) {
            let (name, runs) = &mut configs[index];
            let started = Instant::now();
            let profiler = match index {
                0 => None,
                _ => {
                    let extra: &[&str] = if index == 2 {
                        &["--no-interpreters"]
                    } else {
                        &[]
                    };
                    Some(start_tracekit(
                        tracekit,
                        None,
                        extra,
                        &dir.join("jit.folded"),
                    )?)
                }
            };
            let calls = finish_workers(start_workers(&classes, seconds)?)?;
            let usage = profiler.as_ref().map(stop).transpose()?;
            let run = Run {
                usage,
                rates: calls.map(|c| c as f64 / seconds),
            };
            eprintln!(
                "xtask: bench jit:   {name}: node {:.0} calls/s, JVM {:.0} calls/s{} ({:.1} s)",
                run.rates[0],
                run.rates[1],
                Usage::note(run.usage),
                started.elapsed().as_secs_f64()
            );
            runs.push(run);
        }
    }
    println!(
        "bench jit: {rounds} rounds of {seconds} s, a busy node (js_chain.js) and a busy JVM \
         (TkBusy.java, no flags), medians; work against each round's run without a profiler"
    );
    println!(
        "| configuration | tracekit CPU (s) | CPU per s | peak RSS (MiB) | node work | JVM work |"
    );
    println!("|---|---|---|---|---|---|");
    let base: Vec<[f64; 2]> = configs[0].1.iter().map(|r| r.rates).collect();
    for (name, runs) in &configs {
        let work = |i: usize| -> f64 {
            let mut ratios: Vec<f64> = runs
                .iter()
                .zip(&base)
                .map(|(r, b)| r.rates[i] / b[i])
                .collect();
            median(&mut ratios).unwrap_or(0.0) * 100.0
        };
        let (node, jvm) = (work(0), work(1));
        println!(
            "| {name} | {} | {node:.1}% | {jvm:.1}% |",
            Usage::cells(runs.iter().map(|r| r.usage), seconds),
        );
    }
    // The drift: how far the no-profiler runs stray from their median.
    for (i, what) in ["node", "JVM"].iter().enumerate() {
        let mut rates: Vec<f64> = base.iter().map(|b| b[i]).collect();
        if let Some(mid) = median(&mut rates) {
            let spread = rates
                .iter()
                .map(|r| (r / mid - 1.0).abs() * 100.0)
                .fold(0.0, f64::max);
            println!("drift: {what} without a profiler strays up to {spread:.1}% from its median");
        }
    }
    Ok(())
}
