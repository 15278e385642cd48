//! `cargo xtask bench soak`: long interval runs under process and thread churn, the way
//! tracekit runs under systemd for hours. Samples each tracekit's RSS and CPU time every
//! 10 s and prints the slope of its anonymous RSS after warm-up: a leak shows as a slope, not
//! as a level. File-backed RSS is reported apart: it is the page cache of the binaries being
//! symbolized (a compiler's 100 MiB libLLVM while one runs), shared and reclaimable.
//!
//! The churn: `/bin/true` run 100 times a second, a
//! process forking children that exit at once, and one keeping 50 threads coming and going.
//! The bench fails when a run's RSS at the end is over [`MAX_GROWTH`] times its RSS at one
//! minute (each the median of the readings around it, so that one reading at a profile's
//! peak does not decide).

use std::{
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result};

/// The largest RSS at the end of a run, as a multiple of the RSS at one minute.
pub(crate) const MAX_GROWTH: f64 = 1.2;

/// One long-running tracekit command.
struct Run {
    name: &'static str,
    child: Child,
    /// (seconds since start, RSS KiB, anonymous RSS KiB, CPU seconds).
    samples: Vec<(f64, u64, u64, f64)>,
    /// The largest mappings at the last reading (`KiB name`), to say what grew.
    largest: String,
}

/// The five mappings of `pid` with the most RSS, as `KiB name` (from `/proc/PID/smaps`).
pub(crate) fn largest_mappings(pid: u32) -> String {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    let mut by_name: std::collections::HashMap<String, u64> = Default::default();
    let mut name = String::new();
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let first = fields.next().unwrap_or("");
        if first == "Rss:" {
            let kib: u64 = fields.next().and_then(|n| n.parse().ok()).unwrap_or(0);
            *by_name.entry(name.clone()).or_default() += kib;
        } else if first.contains('-') && !first.ends_with(':') {
            name = fields.nth(4).unwrap_or("[anon]").to_owned();
        }
    }
    let mut largest: Vec<(String, u64)> = by_name.into_iter().collect();
    largest.sort_by_key(|m| std::cmp::Reverse(m.1));
    largest
        .iter()
        .take(5)
        .map(|(name, kib)| format!("{kib} KiB {name}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// RSS (KiB) at one minute and at the end of `samples` (seconds, RSS KiB, ...): the median
/// of the readings from 50 to 70 s, and of the last three (the last 30 s).
fn rss_at_minute_and_end(samples: &[(f64, u64, u64, f64)]) -> Option<(f64, f64)> {
    let minute: Vec<f64> = samples
        .iter()
        .filter(|s| (50.0..=70.0).contains(&s.0))
        .map(|s| s.1 as f64)
        .collect();
    let end: Vec<f64> = samples
        .iter()
        .rev()
        .take(3)
        .filter(|s| s.0 > 70.0)
        .map(|s| s.1 as f64)
        .collect();
    if minute.is_empty() || end.is_empty() {
        return None;
    }
    Some((crate::bench::median(minute), crate::bench::median(end)))
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
    // A short-lived program run 100 times a second.
    churners.push(
        Command::new(churn)
            .args(["execs", &duration, "100", "/bin/true"])
            .stdout(Stdio::null())
            .spawn()
            .context("starting exec churn")?,
    );
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
            largest: String::new(),
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
                run.largest = largest_mappings(run.child.id());
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
        "| command ({minutes} min, churn) | RSS at 1 min | RSS at end | end / 1 min | anon at \
         1 min | anon at end | anon slope after 1 min | CPU |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut grown = Vec::new();
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
        let (at_minute, at_end) = rss_at_minute_and_end(&run.samples).unwrap_or((0.0, 0.0));
        let growth = if at_minute > 0.0 {
            at_end / at_minute
        } else {
            0.0
        };
        if growth > MAX_GROWTH {
            grown.push(format!(
                "tracekit {}: RSS {:.1} -> {:.1} MiB ({growth:.2}x); largest mappings at the \
                 end: {}",
                run.name,
                at_minute / 1024.0,
                at_end / 1024.0,
                run.largest
            ));
        }
        println!(
            "| tracekit {} | {:.1} MiB | {:.1} MiB | {growth:.2}x | {:.1} MiB | {:.1} MiB | \
             {:+.1} KiB/min | {:.1} s ({:.2}% of a CPU) |",
            run.name,
            at_minute / 1024.0,
            at_end / 1024.0,
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
    if !grown.is_empty() {
        anyhow::bail!(
            "RSS grew over {MAX_GROWTH}x its figure at one minute:\n{}",
            grown.join("\n")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-minute figure is the median of the readings from 50 to 70 s, the end's of the
    /// last three.
    #[test]
    fn rss_at_a_minute_and_at_the_end() {
        let at = |t: f64, rss: u64| (t, rss, 0, 0.0);
        let samples = [
            at(40.0, 1),
            at(50.0, 100),
            at(60.0, 900),
            at(70.0, 110),
            at(80.0, 5),
            at(580.0, 130),
            at(590.0, 120),
            at(600.0, 400),
        ];
        assert_eq!(rss_at_minute_and_end(&samples), Some((110.0, 130.0)));
        assert_eq!(rss_at_minute_and_end(&samples[..3]), None);
    }

    #[test]
    fn slope_of_a_line() {
        assert_eq!(slope(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]), 2.0);
        assert_eq!(slope(&[(0.0, 7.0), (10.0, 7.0)]), 0.0);
        assert_eq!(slope(&[(0.0, 7.0)]), 0.0);
    }
}
