//! `cargo xtask bench soak`: long interval runs under process and thread churn, the way
//! tracekit runs under systemd for hours. Samples each tracekit's RSS and CPU time every
//! 10 s and prints the slope of its anonymous RSS after warm-up: a leak shows as a slope, not
//! as a level. File-backed RSS is reported apart: it is the page cache of the binaries being
//! symbolized (a compiler's 100 MiB libLLVM while one runs), shared and reclaimable.

use std::{
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result};

/// One long-running tracekit command.
struct Run {
    name: &'static str,
    child: Child,
    /// (seconds since start, RSS KiB, anonymous RSS KiB, CPU seconds).
    samples: Vec<(f64, u64, u64, f64)>,
}

/// RSS and anonymous RSS in KiB and CPU time (user + system) in seconds of `pid`, from /proc.
pub(crate) fn usage(pid: u32) -> Option<(u64, u64, f64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib = |field: &str| -> Option<u64> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()
    };
    let rss = kib("VmRSS:")?;
    let anon = kib("RssAnon:")?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // SAFETY: sysconf(3) has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((rss, anon, (utime + stime) / ticks))
}

/// The least-squares slope of `points` (x, y).
pub(crate) fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let num: f64 = points
        .iter()
        .map(|(x, y)| (x - mean_x) * (y - mean_y))
        .sum();
    let den: f64 = points.iter().map(|(x, _)| (x - mean_x).powi(2)).sum();
    if den == 0.0 { 0.0 } else { num / den }
}

/// Starts `churn` (the tk_churn fixture) for `seconds`: one process creating short-lived
/// processes, one keeping 50 threads coming and going.
pub(crate) fn start_churn(churn: &Path, seconds: &str) -> Result<Vec<Child>> {
    Ok(vec![
        Command::new(churn)
            .args(["procs", seconds])
            .stdout(Stdio::null())
            .spawn()
            .context("starting process churn")?,
        Command::new(churn)
            .args(["alive", seconds, "50"])
            .stdout(Stdio::null())
            .spawn()
            .context("starting thread churn")?,
    ])
}

/// Runs the soak for `minutes` with `churn` (the tk_churn fixture) keeping processes and
/// threads coming and going.
pub fn soak(tracekit: &Path, churn: &Path, minutes: f64) -> Result<()> {
    let seconds = minutes * 60.0;
    let duration = format!("{seconds}");
    let mut churners = start_churn(churn, &duration)?;
    let commands: [(&'static str, Vec<&str>); 3] = [
        (
            "profile -a -i 1",
            vec!["profile", "-a", "-i", "1", "--top", "5"],
        ),
        (
            "hist raw_syscalls:sys_enter --by comm -i 1",
            vec!["hist", "raw_syscalls:sys_enter", "--by", "comm", "-i", "1"],
        ),
        ("offcpu -i 1", vec!["offcpu", "-i", "1", "--top", "5"]),
    ];
    let mut runs = Vec::new();
    for (name, args) in commands {
        let child = Command::new(tracekit)
            .args(&args)
            .args(["-d", &duration])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting tracekit {name}"))?;
        runs.push(Run {
            name,
            child,
            samples: Vec::new(),
        });
    }
    let started = Instant::now();
    eprintln!(
        "xtask: soak: {} runs for {minutes} min under process and thread churn; a sample \
         every 10 s",
        runs.len()
    );
    while started.elapsed().as_secs_f64() < seconds {
        std::thread::sleep(Duration::from_secs(10));
        let at = started.elapsed().as_secs_f64();
        for run in &mut runs {
            if let Some((rss, anon, cpu)) = usage(run.child.id()) {
                run.samples.push((at, rss, anon, cpu));
            }
        }
        let line: Vec<String> = runs
            .iter()
            .filter_map(|r| {
                r.samples
                    .last()
                    .map(|s| format!("{} {} KiB ({} KiB anon)", r.name, s.1, s.2))
            })
            .collect();
        eprintln!("xtask: soak: {:>5.0} s: {}", at, line.join("; "));
    }
    println!(
        "| command ({minutes} min, churn) | RSS at 1 min | RSS at end | anon at 1 min | anon at \
         end | anon slope after 1 min | CPU |"
    );
    println!("|---|---|---|---|---|---|---|");
    for run in &mut runs {
        let _ = run.child.wait();
        let warm: Vec<(f64, f64)> = run
            .samples
            .iter()
            .filter(|s| s.0 >= 60.0)
            .map(|s| (s.0, s.2 as f64))
            .collect();
        let first = run.samples.iter().find(|s| s.0 >= 60.0);
        let last = run.samples.last();
        let mib = |kib: Option<u64>| kib.unwrap_or(0) as f64 / 1024.0;
        let cpu = last.map_or(0.0, |s| s.3);
        println!(
            "| tracekit {} | {:.1} MiB | {:.1} MiB | {:.1} MiB | {:.1} MiB | {:+.1} KiB/min | \
             {:.1} s ({:.2}% of a CPU) |",
            run.name,
            mib(first.map(|s| s.1)),
            mib(last.map(|s| s.1)),
            mib(first.map(|s| s.2)),
            mib(last.map(|s| s.2)),
            slope(&warm) * 60.0,
            cpu,
            100.0 * cpu / seconds
        );
    }
    for churner in &mut churners {
        let _ = churner.kill();
        let _ = churner.wait();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slope_of_a_line() {
        assert_eq!(slope(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]), 2.0);
        assert_eq!(slope(&[(0.0, 7.0), (10.0, 7.0)]), 0.0);
        assert_eq!(slope(&[(0.0, 7.0)]), 0.0);
    }
}
