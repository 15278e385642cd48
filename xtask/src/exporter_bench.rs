//! `cargo xtask bench exporter`: `tracekit exporter` with its built-in set, the way it runs
//! under systemd for days, under heavy process churn. Four figures, each beside its goal:
//!
//! - memory: RSS and anonymous RSS at every scrape, the slope after warm-up, the highest
//!   beside the reading at the end of warm-up, and whether RSS stays flat within 10%: its
//!   lowest and its highest in the last third after warm-up against the first third (each
//!   profile holds its stacks until encoded, a sawtooth that one reading lands anywhere on);
//! - scrapes: `/metrics` every 15 s for the whole run, every one answered (failures are
//!   counted), plus a `/debug/pprof/profile?seconds=10` every `--profile-every` seconds
//!   after the first phase, during each of which this bench burns [`BIG_BINARY_BURN`] of CPU
//!   in its own process: a big binary sampled again and again (`cargo xtask` runs a debug
//!   build, ~20 MB, most of it DWARF), whose symbols the exporter must not keep growing on;
//! - CPU: the exporter's CPU time as a percentage of one CPU at the 15 s scrape interval,
//!   twice: in a first phase with no profile asked for (the built-in set alone, as most
//!   exporters run), and afterwards between the profiles, while the CPU sampler they share
//!   stays loaded (it unloads after `[profile] idle_seconds`, 300 s, longer than the gap).
//!   The time profile requests took is left out of both sides and reported apart;
//! - latency: after the run, `/metrics` scraped every 50 ms, under the churn and then
//!   without it, median and p99 of the time from connecting to the last byte;
//! - syscall cost: a getppid() loop timed alone and with the exporter attached (no churn),
//!   rounds interleaved, medians.

use std::{
    io::{BufRead as _, BufReader, Read as _, Write as _},
    net::{SocketAddr, TcpStream},
    path::Path,
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex, mpsc},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, bail};

use crate::{
    bench::{median, stop},
    soak::{slope, start_churn, usage},
};

/// The scrape interval Prometheus uses by default.
const SCRAPE_INTERVAL: Duration = Duration::from_secs(15);
/// Seconds of each profile request.
const PROFILE_SECONDS: u64 = 10;
/// CPU this bench burns in its own process during each profile.
const BIG_BINARY_BURN: Duration = Duration::from_secs(1);
/// The first phase, without profile requests, or a quarter of a short run.
const DEFAULT_SET_PHASE: Duration = Duration::from_secs(300);
/// Samples before this long after the first profile are warm-up too (the first profiles
/// load the kernel's symbols once); in a short run, the first half is.
const WARM_UP: Duration = Duration::from_secs(300);

/// A running exporter and its address.
struct Exporter {
    child: Child,
    addr: SocketAddr,
}

/// Starts `tracekit exporter` (built-in set) on a free loopback port and waits until it
/// says it serves.
fn start(tracekit: &Path) -> Result<Exporter> {
    let mut child = Command::new(tracekit)
        .args(["exporter", "--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting tracekit exporter")?;
    let stderr = child.stderr.take().context("stderr not piped")?;
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stderr);
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap_or(0) > 0 {
            if line.contains("SIGINT or SIGTERM to stop") {
                let _ = sender.send(line.clone());
            }
            line.clear();
        }
    });
    let line = match receiver.recv_timeout(Duration::from_secs(60)) {
        Ok(line) => line,
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            bail!("tracekit exporter did not start within 60 s");
        }
    };
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|addr| addr.parse().ok())
        .with_context(|| format!("no address in {line:?}"))?;
    Ok(Exporter { child, addr })
}

/// One HTTP/1.1 GET: the body of a 200 answer, else an error naming the status.
fn get(addr: SocketAddr, path: &str, timeout: Duration) -> Result<Vec<u8>> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    stream.set_read_timeout(Some(timeout))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .context("no HTTP headers")?;
    let head = String::from_utf8_lossy(&raw[..split]);
    if head.split_whitespace().nth(1) != Some("200") {
        bail!("{}", head.lines().next().unwrap_or(""));
    }
    Ok(raw[split + 4..].to_vec())
}

/// The sum of the samples of `name` (any labels) in exposition `text`.
fn sum_of(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|line| {
            line.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Processes created on this machine since boot (`/proc/stat`'s `processes`).
fn processes_created() -> u64 {
    std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|stat| {
            stat.lines()
                .find_map(|l| l.strip_prefix("processes "))
                .and_then(|n| n.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// One `/metrics` scrape during the soak.
struct Scrape {
    at: f64,
    rss_kib: u64,
    anon_kib: u64,
    cpu: f64,
    ok: bool,
}

/// What the profile requests took: their count, failures, wall time and the exporter's CPU
/// time while they ran.
#[derive(Default)]
struct Profiles {
    answered: u64,
    failed: u64,
    wall: f64,
    cpu: f64,
    bytes: u64,
}

pub fn exporter(
    tracekit: &Path,
    churn: &Path,
    syscalls: &Path,
    minutes: f64,
    profile_every: u64,
    calls: u64,
    rounds: usize,
) -> Result<()> {
    let cost = syscall_cost(tracekit, syscalls, calls, rounds)?;

    let seconds = minutes * 60.0;
    let duration = format!("{}", seconds + 60.0);
    let created_before = processes_created();
    let mut churners = start_churn(churn, &duration)?;
    // Short-lived processes that exec (the profile endpoint remembers each).
    churners.push(
        Command::new("sh")
            .args(["-c", "while :; do /bin/true; done"])
            .stdout(Stdio::null())
            .spawn()
            .context("starting exec churn")?,
    );
    let exporter = start(tracekit)?;
    let pid = exporter.child.id();
    let addr = exporter.addr;
    let own_binary_mib = std::env::current_exe()
        .and_then(std::fs::metadata)
        .map_or(0.0, |meta| meta.len() as f64 / (1 << 20) as f64);
    eprintln!(
        "xtask: bench exporter: {minutes} min on http://{addr} under process, exec and \
         thread churn; /metrics every {} s, a {PROFILE_SECONDS} s profile every \
         {profile_every} s, with {} s of CPU burnt by this bench ({own_binary_mib:.1} MiB \
         binary) in each",
        SCRAPE_INTERVAL.as_secs(),
        BIG_BINARY_BURN.as_secs()
    );

    let profiles = Arc::new(Mutex::new(Profiles::default()));
    let started = Instant::now();
    let end = started + Duration::from_secs_f64(seconds);
    let phase = DEFAULT_SET_PHASE.min(Duration::from_secs_f64(seconds / 4.0));
    let profiler = {
        let profiles = Arc::clone(&profiles);
        std::thread::spawn(move || {
            let mut next = started + phase;
            while next + Duration::from_secs(PROFILE_SECONDS) < end {
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
                let cpu_before = usage(pid).map_or(0.0, |u| u.2);
                let at = Instant::now();
                let burner = std::thread::spawn(|| burn(Instant::now() + BIG_BINARY_BURN));
                let answer = get(
                    addr,
                    &format!("/debug/pprof/profile?seconds={PROFILE_SECONDS}"),
                    Duration::from_secs(PROFILE_SECONDS + 60),
                );
                let wall = at.elapsed().as_secs_f64();
                let cpu = usage(pid).map_or(0.0, |u| u.2) - cpu_before;
                let _ = burner.join();
                let mut p = profiles.lock().unwrap();
                match answer {
                    Ok(body) if body.starts_with(&[0x1f, 0x8b]) => {
                        p.answered += 1;
                        p.bytes += body.len() as u64;
                    }
                    Ok(_) => {
                        eprintln!("xtask: bench exporter: a profile that is not gzip");
                        p.failed += 1;
                    }
                    Err(err) => {
                        eprintln!("xtask: bench exporter: profile request failed: {err:#}");
                        p.failed += 1;
                    }
                }
                p.wall += wall;
                p.cpu += cpu;
                next += Duration::from_secs(profile_every.max(1));
            }
        })
    };

    let mut scrapes: Vec<Scrape> = Vec::new();
    let mut last_text = String::new();
    // What RSS is made of at the end of warm-up and at its highest after it: a whole-machine
    // sampler maps the binaries of the processes it symbolizes while they live, so file pages
    // follow what the machine runs; the heap (anonymous) is what would show a leak.
    let warm_up_at = (phase.as_secs_f64() + WARM_UP.as_secs_f64()).min(seconds / 2.0);
    let mut at_warm_up: Option<(f64, Mappings)> = None;
    let mut at_highest: Option<(f64, u64, Mappings)> = None;
    let mut next = started;
    while next < end {
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        let answer = get(addr, "/metrics", Duration::from_secs(10));
        let at = started.elapsed().as_secs_f64();
        let ok = match answer {
            Ok(body) => {
                last_text = String::from_utf8_lossy(&body).into_owned();
                true
            }
            Err(err) => {
                eprintln!("xtask: bench exporter: scrape at {at:.0} s failed: {err:#}");
                false
            }
        };
        let (rss_kib, anon_kib, cpu) = usage(pid).context("the exporter is gone")?;
        if at >= warm_up_at {
            if at_warm_up.is_none() {
                at_warm_up = Some((at, rss_by_mapping(pid)));
            }
            if at_highest.as_ref().is_none_or(|h| rss_kib > h.1) {
                at_highest = Some((at, rss_kib, rss_by_mapping(pid)));
            }
        }
        scrapes.push(Scrape {
            at,
            rss_kib,
            anon_kib,
            cpu,
            ok,
        });
        if scrapes.len() % 4 == 1 {
            eprintln!(
                "xtask: bench exporter: {at:>5.0} s: RSS {rss_kib} KiB ({anon_kib} KiB anon), \
                 CPU {cpu:.2} s"
            );
        }
        next += SCRAPE_INTERVAL;
    }
    profiler
        .join()
        .map_err(|_| anyhow::anyhow!("the profile thread panicked"))?;
    let soaked = started.elapsed().as_secs_f64();
    let created = processes_created() - created_before;

    // Scrape latency, back to back, with the churn still running, then without it.
    let busy = latencies(addr);
    for churner in &mut churners {
        let _ = churner.kill();
        let _ = churner.wait();
    }
    std::thread::sleep(Duration::from_secs(2));
    let quiet = latencies(addr);
    let (code, _) = stop(exporter.child)?;
    if code != 0 {
        bail!("tracekit exporter exited with {code}");
    }

    // Report.
    let profiles = profiles.lock().unwrap();
    let failed = scrapes.iter().filter(|s| !s.ok).count();
    let phase = phase.as_secs_f64();
    let warm: Vec<&Scrape> = scrapes.iter().filter(|s| s.at >= warm_up_at).collect();
    let mib = |kib: u64| kib as f64 / 1024.0;
    let first = warm.first().context("the run ended before warm-up did")?;
    let last = warm.last().context("no scrape after warm-up")?;
    let max_rss = warm.iter().map(|s| s.rss_kib).max().unwrap_or(0);
    let rss_slope = slope(
        &warm
            .iter()
            .map(|s| (s.at, s.rss_kib as f64))
            .collect::<Vec<_>>(),
    ) * 60.0;
    let anon_slope = slope(
        &warm
            .iter()
            .map(|s| (s.at, s.anon_kib as f64))
            .collect::<Vec<_>>(),
    ) * 60.0;
    // Per cent from one RSS reading to another.
    let change = |from: u64, to: u64| (to as f64 / from.max(1) as f64 - 1.0) * 100.0;
    let growth = change(first.rss_kib, max_rss);
    // Each profile holds its stacks until it is encoded, so RSS is a sawtooth; a leak shows
    // as its lows and highs rising from the first third after warm-up to the last.
    let third = (last.at - first.at) / 3.0;
    let range = |from: f64, to: f64| {
        let kib = warm
            .iter()
            .filter(|s| s.at >= from && s.at <= to)
            .map(|s| s.rss_kib);
        (kib.clone().min().unwrap_or(0), kib.max().unwrap_or(0))
    };
    let early = range(first.at, first.at + third);
    let late = range(last.at - third, last.at);
    // From the first scrape on: starting (compiling and loading) is not the steady cost.
    let start = scrapes.first().context("no scrape")?;
    let phase_end = scrapes
        .iter()
        .take_while(|s| s.at <= phase)
        .last()
        .context("no scrape in the first phase")?;
    let default_cpu = (phase_end.cpu - start.cpu) / (phase_end.at - start.at) * 100.0;
    let end_scrape = scrapes.last().context("no scrape")?;
    let sampler_cpu = (end_scrape.cpu - phase_end.cpu - profiles.cpu)
        / (end_scrape.at - phase_end.at - profiles.wall)
        * 100.0;

    println!(
        "\n| tracekit exporter, built-in set, {minutes} min under churn ({created} processes \
         and threads created, {:.0}/s; a {own_binary_mib:.1} MiB binary busy in each profile) \
         | measured | goal |",
        created as f64 / soaked
    );
    println!("|---|---|---|");
    println!(
        "| RSS after {warm_up_at:.0} s warm-up / at end / highest after warm-up | {:.1} / {:.1} / \
         {:.1} MiB ({growth:+.1}%) | - |",
        mib(first.rss_kib),
        mib(last.rss_kib),
        mib(max_rss)
    );
    println!(
        "| RSS lowest-highest, first third after warm-up / last third | {:.1}-{:.1} / \
         {:.1}-{:.1} MiB (lowest {:+.1}%, highest {:+.1}%) | within 10% |",
        mib(early.0),
        mib(early.1),
        mib(late.0),
        mib(late.1),
        change(early.0, late.0),
        change(early.1, late.1)
    );
    println!(
        "| RSS slope after warm-up (anonymous RSS) | {rss_slope:+.1} KiB/min ({anon_slope:+.1} \
         KiB/min) | flat |"
    );
    println!(
        "| /metrics scrapes every 15 s answered | {} of {} | all |",
        scrapes.len() - failed,
        scrapes.len()
    );
    println!(
        "| {PROFILE_SECONDS} s CPU profiles answered (every {profile_every} s) | {} of {} \
         ({:.0} KiB each, {:.2} s CPU each) | all |",
        profiles.answered,
        profiles.answered + profiles.failed,
        profiles.bytes as f64 / 1024.0 / profiles.answered.max(1) as f64,
        profiles.cpu / (profiles.answered + profiles.failed).max(1) as f64
    );
    println!(
        "| exporter CPU at a 15 s scrape interval, no profile asked for (first {phase:.0} s) | \
         {default_cpu:.3}% of one CPU | < 0.5% |"
    );
    println!(
        "| the same between profiles, CPU sampler loaded (profile requests left out) | \
         {sampler_cpu:.3}% of one CPU | - |"
    );
    for (when, (times, failed)) in [("under the churn", &busy), ("churn stopped", &quiet)] {
        println!(
            "| time to answer /metrics, {} scrapes 50 ms apart, {when} (median / p99) | {:.2} / \
             {:.2} ms ({failed} failed) | < 10 ms |",
            times.len() + failed,
            median(times.clone()),
            p99(times)
        );
    }
    println!(
        "| added ns per getppid() with the built-in set attached ({rounds} rounds of {calls}, \
         medians) | {:+.0} ns ({:.0} alone, {:.0} attached) | - |",
        cost.1 - cost.0,
        cost.0,
        cost.1
    );
    println!(
        "\nAt the end: {} kernel map entries evicted, {} label sets folded into overflow \
         series, {} events lost.",
        sum_of(&last_text, "tracekit_exporter_map_entries_evicted_total"),
        sum_of(&last_text, "tracekit_exporter_series_folded_total"),
        sum_of(&last_text, "tracekit_exporter_events_lost_total")
    );
    for (what, at, mappings) in [
        at_warm_up.map(|(at, m)| ("RSS at the end of warm-up", at, m)),
        at_highest.map(|(at, _, m)| ("RSS at its highest after warm-up", at, m)),
    ]
    .into_iter()
    .flatten()
    {
        let total: u64 = mappings.iter().map(|m| m.1).sum();
        println!(
            "\n{what} ({at:.0} s), {:.1} MiB, by mapping (largest first):",
            mib(total)
        );
        for (name, kib) in mappings.iter().take(8) {
            println!("  {:>7.1} MiB  {name}", mib(*kib));
        }
    }
    Ok(())
}

/// Spins until `until`: the bench's own frames in the profile under way.
#[inline(never)]
fn burn(until: Instant) -> u64 {
    let mut spins = 0u64;
    while Instant::now() < until {
        spins = std::hint::black_box(spins + 1);
    }
    spins
}

/// RSS in KiB by mapping name, largest first.
type Mappings = Vec<(String, u64)>;

/// `pid`'s RSS in KiB summed by what is mapped (a file's path, `[heap]`, `[anon]` for
/// anonymous mappings without a name, `anon_inode:bpf-map` for BPF maps), largest first;
/// from /proc/PID/smaps.
fn rss_by_mapping(pid: u32) -> Mappings {
    let Ok(smaps) = std::fs::read_to_string(format!("/proc/{pid}/smaps")) else {
        return Vec::new();
    };
    let mut by_name: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    let mut name = String::new();
    for line in smaps.lines() {
        if let Some(kib) = line.strip_prefix("Rss:") {
            let kib: u64 = kib
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .unwrap_or(0);
            *by_name.entry(name.clone()).or_default() += kib;
        } else if line
            .split_whitespace()
            .next()
            .is_some_and(|range| range.contains('-') && !range.ends_with(':'))
        {
            // A mapping's header: range, perms, offset, dev, inode, then the name if any.
            let mut rest = line;
            for _ in 0..5 {
                rest = rest.trim_start();
                rest = rest.find(char::is_whitespace).map_or("", |i| &rest[i..]);
            }
            name = match rest.trim() {
                "" => "[anon]".to_owned(),
                named => named.to_owned(),
            };
        }
    }
    let mut by_name: Vec<(String, u64)> = by_name.into_iter().filter(|m| m.1 > 0).collect();
    by_name.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    by_name
}

/// Times 300 scrapes of `/metrics` 50 ms apart, from connecting to the last byte: the
/// times answered in ms, and how many failed.
fn latencies(addr: SocketAddr) -> (Vec<f64>, usize) {
    let mut times = Vec::new();
    let mut failed = 0;
    for _ in 0..300 {
        let at = Instant::now();
        match get(addr, "/metrics", Duration::from_secs(10)) {
            Ok(_) => times.push(at.elapsed().as_secs_f64() * 1e3),
            Err(_) => failed += 1,
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (times, failed)
}

/// The 99th percentile (nearest rank) of `values`.
fn p99(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted
        .get(((sorted.len() as f64 * 0.99).ceil() as usize).saturating_sub(1))
        .copied()
        .unwrap_or(0.0)
}

/// ns per getppid() alone and with the exporter attached: medians over `rounds`
/// interleaved rounds of `calls` calls.
fn syscall_cost(tracekit: &Path, syscalls: &Path, calls: u64, rounds: usize) -> Result<(f64, f64)> {
    eprintln!(
        "xtask: bench exporter: {rounds} rounds of {calls} getppid() calls, alone and with \
         the exporter attached"
    );
    let time = || -> Result<f64> {
        let started = Instant::now();
        let status = Command::new(syscalls)
            .arg(calls.to_string())
            .stdout(Stdio::null())
            .status()?;
        if !status.success() {
            bail!("tk_syscalls failed");
        }
        Ok(started.elapsed().as_secs_f64() * 1e9 / calls as f64)
    };
    let (mut alone, mut attached) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        for with in [round % 2 == 0, round % 2 != 0] {
            if with {
                let exporter = start(tracekit)?;
                attached.push(time()?);
                stop(exporter.child)?;
            } else {
                alone.push(time()?);
            }
        }
    }
    Ok((median(alone), median(attached)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_samples_of_one_name() {
        let text = "# TYPE a counter\n\
                    a_total{metric=\"x\"} 2\n\
                    a_total{metric=\"y\"} 3\n\
                    a_total_other 7\n\
                    a_total 1\n";
        assert_eq!(sum_of(text, "a_total"), 6.0);
        assert_eq!(sum_of(text, "b_total"), 0.0);
    }

    #[test]
    fn p99_is_the_nearest_rank() {
        let values: Vec<f64> = (1..=200).map(f64::from).collect();
        assert_eq!(p99(&values), 198.0);
        assert_eq!(p99(&[5.0]), 5.0);
        assert_eq!(p99(&[]), 0.0);
    }
}
