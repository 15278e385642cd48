//! `cargo xtask bench python`: the cost of unwinding Python frames in the kernel. Two busy CPython processes (`tests/fixtures/py_chain.py ... count`, which
//! prints the leaf calls it made) run SECONDS under each of: nothing, `tracekit profile -a
//! -F 999` with interpreters, the same with `--no-interpreters`, `tracekit profile -p PID -F
//! 999` on one of them, and `py-spy record -r 999` on the same one (when installed). Per configuration: the profiler's CPU time and peak RSS
//! (wait4, symbolizing and writing included) and the processes' work against the same
//! round's run without a profiler, the order rotated each round.

use std::{
    io::{BufRead as _, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, bail};

use crate::util::workspace_root;

/// The interpreter the bench runs: pyenv's 3.12, else Debian's 3.11.
fn python() -> Result<PathBuf> {
    [
        "/root/.pyenv/versions/3.12.1/bin/python3",
        "/usr/bin/python3.11",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|path| path.is_file())
    .context("no CPython (pyenv 3.12.1 or /usr/bin/python3.11) to run")
}

/// py-spy from PATH or pyenv's 3.11 (`pip install py-spy`).
fn py_spy() -> Option<PathBuf> {
    crate::util::find_program("py-spy").or_else(|| {
        let pyenv = PathBuf::from("/root/.pyenv/versions/3.11.7/bin/py-spy");
        pyenv.is_file().then_some(pyenv)
    })
}

/// CPU time and peak RSS of a reaped child.
#[derive(Clone, Copy, Default)]
pub(crate) struct Usage {
    pub(crate) cpu: Duration,
    pub(crate) max_rss_kib: u64,
}

impl Usage {
    /// `, C s CPU, R MiB peak RSS` of a profiler's run (none without one), for progress lines.
    pub(crate) fn note(usage: Option<Self>) -> String {
        usage.map_or(String::new(), |u| {
            format!(
                ", {:.2} s CPU, {:.1} MiB peak RSS",
                u.cpu.as_secs_f64(),
                u.max_rss_kib as f64 / 1024.0
            )
        })
    }

    /// A configuration's table cells `CPU (s) | CPU per s | peak RSS (MiB)`: the medians of
    /// its runs' usages over runs of `seconds`, `-` where no run had a profiler.
    pub(crate) fn cells(
        usages: impl Iterator<Item = Option<Self>> + Clone,
        seconds: f64,
    ) -> String {
        let mut cpu: Vec<f64> = usages
            .clone()
            .flatten()
            .map(|u| u.cpu.as_secs_f64())
            .collect();
        let mut rss: Vec<f64> = usages
            .flatten()
            .map(|u| u.max_rss_kib as f64 / 1024.0)
            .collect();
        let cpu = median(&mut cpu);
        format!(
            "{} | {} | {}",
            cpu.map_or("-".into(), |c| format!("{c:.2}")),
            cpu.map_or("-".into(), |c| format!("{:.3}", c / seconds)),
            median(&mut rss).map_or("-".into(), |r| format!("{r:.1}")),
        )
    }
}

/// Reaps `child`, with its usage.
pub(crate) fn reap(child: &Child) -> Result<(i32, Usage)> {
    let mut status = 0;
    // SAFETY: wait4(2) on our own child, not yet reaped, with live out-pointers.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) < 0 {
            bail!("wait4: {}", std::io::Error::last_os_error());
        }
        usage
    };
    let time = |tv: libc::timeval| {
        Duration::from_secs(tv.tv_sec as u64) + Duration::from_micros(tv.tv_usec as u64)
    };
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    Ok((
        code,
        Usage {
            cpu: time(usage.ru_utime) + time(usage.ru_stime),
            max_rss_kib: usage.ru_maxrss as u64,
        },
    ))
}

/// Starts the two workers and waits for both to say "ready".
fn start_workers(
    python: &Path,
    seconds: f64,
) -> Result<Vec<(Child, BufReader<std::process::ChildStdout>)>> {
    let script = workspace_root().join("tests/fixtures/py_chain.py");
    (0..2)
        .map(|_| {
            let mut child = Command::new(python)
                .arg(&script)
                .arg(seconds.to_string())
                .arg("count")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .spawn()
                .context("starting py_chain.py")?;
            let mut reader = BufReader::new(child.stdout.take().context("stdout")?);
            let mut line = String::new();
            reader.read_line(&mut line)?;
            if line.trim() != "ready" {
                bail!("py_chain.py said {line:?}");
            }
            Ok((child, reader))
        })
        .collect()
}

/// Waits for the workers; their leaf calls in all.
fn finish_workers(workers: Vec<(Child, BufReader<std::process::ChildStdout>)>) -> Result<u64> {
    let mut calls = 0;
    for (mut child, mut reader) in workers {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        calls += line
            .trim()
            .strip_prefix("calls=")
            .and_then(|n| n.parse::<u64>().ok())
            .with_context(|| format!("py_chain.py printed {line:?}"))?;
        child.wait()?;
    }
    Ok(calls)
}

/// Starts tracekit (`-a`, or on `pid`) and waits for its "Hit Ctrl-C" line.
pub(crate) fn start_tracekit(
    tracekit: &Path,
    pid: Option<u32>,
    extra: &[&str],
    out: &Path,
) -> Result<Child> {
    let scope = match pid {
        Some(pid) => vec!["-p".to_string(), pid.to_string()],
        None => vec!["-a".to_string()],
    };
    let mut child = Command::new(tracekit)
        .arg("profile")
        .args(scope)
        .args(["-F", "999", "-o"])
        .arg(out)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting tracekit")?;
    let stderr = child.stderr.take().context("stderr")?;
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stderr);
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap_or(0) > 0 {
            if line.contains("Hit Ctrl-C") {
                let _ = sender.send(());
            }
            line.clear();
        }
    });
    receiver
        .recv_timeout(Duration::from_secs(120))
        .context("tracekit never attached")?;
    Ok(child)
}

/// Interrupts tracekit as Ctrl-C does and reaps it.
pub(crate) fn stop(child: &Child) -> Result<Usage> {
    // SAFETY: kill(2) on our own child, not yet reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let (code, usage) = reap(child)?;
    if code != 0 {
        bail!("tracekit exited with {code}");
    }
    Ok(usage)
}

struct Run {
    usage: Option<Usage>,
    /// Leaf calls per second of both workers.
    rate: f64,
}

pub fn python_bench(tracekit: &Path, seconds: f64, rounds: usize) -> Result<()> {
    let python = python()?;
    let spy = py_spy();
    let dir = workspace_root().join("target/bench");
    std::fs::create_dir_all(&dir)?;
    let mut configs: Vec<(&str, Vec<Run>)> = vec![
        ("no profiler", Vec::new()),
        ("tracekit profile -a -F 999", Vec::new()),
        ("tracekit profile -a -F 999 --no-interpreters", Vec::new()),
        ("tracekit profile -p PID -F 999 (one process)", Vec::new()),
    ];
    if spy.is_some() {
        configs.push(("py-spy record -r 999 (one process)", Vec::new()));
    }
    eprintln!(
        "xtask: bench python: {rounds} rounds of {seconds} s, two busy {} processes; py-spy: {}",
        python.display(),
        spy.as_ref()
            .map_or("not installed".into(), |p| p.display().to_string())
    );
    for round in 1..=rounds {
        eprintln!("xtask: bench python: round {round}/{rounds}");
        let count = configs.len();
        for index in (0..count).map(|i| (i + round) % count) {
            let (name, runs) = &mut configs[index];
            let started = Instant::now();
            let run = match index {
                0 => {
                    let workers = start_workers(&python, seconds)?;
                    let calls = finish_workers(workers)?;
                    Run {
                        usage: None,
                        rate: calls as f64 / seconds,
                    }
                }
                1 | 2 => {
                    let extra: &[&str] = if index == 2 {
                        &["--no-interpreters"]
                    } else {
                        &[]
                    };
                    let profiler =
                        start_tracekit(tracekit, None, extra, &dir.join("python.folded"))?;
                    let workers = start_workers(&python, seconds)?;
                    let calls = finish_workers(workers)?;
                    Run {
                        usage: Some(stop(&profiler)?),
                        rate: calls as f64 / seconds,
                    }
                }
                3 => {
                    // Like py-spy: one of the two processes, ending when it does.
                    let workers = start_workers(&python, seconds)?;
                    let profiler = start_tracekit(
                        tracekit,
                        Some(workers[0].0.id()),
                        &[],
                        &dir.join("python-one.folded"),
                    )?;
                    let calls = finish_workers(workers)?;
                    let (code, usage) = reap(&profiler)?;
                    if code != 0 {
                        bail!("tracekit -p exited with {code}");
                    }
                    Run {
                        usage: Some(usage),
                        rate: calls as f64 / seconds,
                    }
                }
                _ => {
                    let workers = start_workers(&python, seconds)?;
                    let pid = workers[0].0.id().to_string();
                    let spy_child = Command::new(spy.as_ref().unwrap())
                        .args(["record", "--format", "raw", "-r", "999", "-p", &pid, "-o"])
                        .arg(dir.join("py-spy.txt"))
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                        .context("starting py-spy")?;
                    let calls = finish_workers(workers)?;
                    // py-spy ends when its process does.
                    let (_, usage) = reap(&spy_child)?;
                    Run {
                        usage: Some(usage),
                        rate: calls as f64 / seconds,
                    }
                }
            };
            eprintln!(
                "xtask: bench python:   {name}: {:.0} calls/s{} ({:.1} s)",
                run.rate,
                Usage::note(run.usage),
                started.elapsed().as_secs_f64()
            );
            runs.push(run);
        }
    }
    println!(
        "bench python: {rounds} rounds of {seconds} s, 2 busy CPython processes \
         (py_chain.py), medians; work against each round's run without a profiler"
    );
    println!("| configuration | profiler CPU (s) | profiler CPU per s | peak RSS (MiB) | work |");
    println!("|---|---|---|---|---|");
    let base: Vec<f64> = configs[0].1.iter().map(|r| r.rate).collect();
    for (name, runs) in &configs {
        let mut work: Vec<f64> = runs.iter().zip(&base).map(|(r, b)| r.rate / b).collect();
        println!(
            "| {name} | {} | {:.1}% |",
            Usage::cells(runs.iter().map(|r| r.usage), seconds),
            median(&mut work).unwrap_or(0.0) * 100.0
        );
    }
    Ok(())
}

pub(crate) fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(values[values.len() / 2])
}
