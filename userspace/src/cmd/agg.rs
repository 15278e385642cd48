//! What `hist`, `count`, `bitesize`, `biolatency` and `syscount` share: run engines over a
//! scope and a duration, then print aggregates as a table or histograms, and account for
//! every event that was not counted.

use std::{
    io::Write as _,
    time::{Duration, Instant},
};

use serde::Serialize;
use tracekit::{
    Error, Result, caps,
    engine::{Aggregates, Engine, EngineSpec, EngineStats, Group, KeyColumn, Targets, groups},
    output::{self, Format, hist},
    workload::{Exit, Workload},
};

use crate::{
    cli::{OutputArgs, Scope, ScopeArgs, TimingArgs},
    cmd::session::{self, Stop, Stopper, Wake},
};

/// How aggregates are shown.
#[derive(Clone, Debug)]
pub enum Report {
    /// A table of counts per group, sorted by count.
    Counts {
        /// Also show the value's total and average, under this header (e.g. `TIME(us)`),
        /// dividing the sums by `div`.
        sum: Option<(String, f64)>,
        /// Show only the first N rows.
        top: Option<usize>,
    },
    /// A log2 histogram per group; `unit` heads the value column.
    Log2 { unit: String },
    /// A linear histogram per group.
    Linear { min: i64, step: u64, unit: String },
}

/// One command's engines and how to show what they gathered.
pub struct Job {
    /// The subcommand, for messages.
    pub command: &'static str,
    /// What is traced, for "Tracing ...".
    pub what: String,
    /// The engines to load (several when events need different plans).
    pub specs: Vec<EngineSpec>,
    /// The group key's columns.
    pub columns: Vec<KeyColumn>,
    /// How to show it.
    pub report: Report,
}

/// Runs `job` over the scope and timing of the command line.
pub fn run(
    job: Job,
    scope: &ScopeArgs,
    timing: &TimingArgs,
    output_args: &OutputArgs,
    verbose: u8,
) -> Result<()> {
    let started = Instant::now();
    let file_format = output_args
        .output
        .as_deref()
        .map(Format::from_path)
        .transpose()?;
    if let Some(format @ (Format::Folded | Format::Svg)) = file_format {
        return Err(Error::usage(format!(
            "-o {}: {} writes .txt or .json, not {}",
            output_args.output.as_ref().unwrap().display(),
            job.command,
            if format == Format::Svg {
                ".svg"
            } else {
                ".folded"
            }
        )));
    }
    let scope_value = scope.scope()?;
    let mut exit_fds = match &scope_value {
        Scope::Pids(pids) => session::watch_pids(pids)?,
        _ => Vec::new(),
    };
    caps::require_tracing(job.command)?;
    let scope_text = session::describe_scope(&scope_value);
    let mut workload = match &scope_value {
        Scope::Command(argv) => Some(Workload::spawn(argv)?),
        _ => None,
    };
    let targets = Targets {
        pids: match &scope_value {
            Scope::All => None,
            Scope::Pids(pids) => Some(pids.clone()),
            Scope::Command(_) => workload.as_ref().map(|w| vec![w.pid()]),
        },
        follow_children: workload.is_some(),
        // Without intervals the maps are read after detaching, so tracekit's own reads are
        // never seen; with them, its events must be filtered out in the kernel.
        exclude_self: timing.interval.is_some(),
    };
    let mut engines = Vec::with_capacity(job.specs.len());
    for spec in &job.specs {
        let mut engine = Engine::load(spec, &targets)?;
        engine.attach(spec)?;
        engines.push(engine);
    }
    let attached_after = started.elapsed();
    if let Some(workload) = workload.as_mut() {
        exit_fds.push(workload.pidfd()?);
        workload.start()?;
    }
    eprintln!(
        "Tracing {} for {scope_text}{}... Hit Ctrl-C to end.",
        job.what,
        timing
            .duration
            .map(|d| format!(" for {d} s"))
            .unwrap_or_default()
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|err| Error::runtime(format!("starting the event loop: {err}")))?;
    let collect_started = Instant::now();
    let read_all = |engines: &[Engine]| -> Result<Aggregates> {
        let mut all = Aggregates::default();
        for engine in engines {
            all.merge(engine.read()?);
        }
        Ok(all)
    };
    let (stop, last) = runtime.block_on(async {
        let mut stopper = Stopper::new(timing.duration, timing.interval, exit_fds)?;
        let mut previous = Aggregates::default();
        let mut last_tick = Instant::now();
        loop {
            match stopper.next().await {
                Wake::Stop(stop) => return Ok::<_, Error>((stop, previous)),
                Wake::Tick => {
                    let now = read_all(&engines)?;
                    let tick = Instant::now();
                    print_interval(
                        &job,
                        &now.since(&previous),
                        tick - last_tick,
                        output_args.json,
                    )?;
                    previous = now;
                    last_tick = tick;
                }
            }
        }
    })?;
    let elapsed = collect_started.elapsed();
    for engine in &mut engines {
        engine.detach();
    }
    let all = read_all(&engines)?;
    drop(engines);
    session::restore_default_signals();
    let workload_exit = match workload.as_mut() {
        Some(workload) => Some(session::finish_workload(workload)?),
        None => None,
    };

    let shown = if timing.interval.is_some() {
        all.since(&last)
    } else {
        all.clone()
    };
    let slots = slots_of(&job);
    let result_groups = groups(&shown, &job.columns, slots);
    if let (Some(path), Some(format)) = (output_args.output.as_deref(), file_format) {
        let whole = groups(&all, &job.columns, slots);
        output::write_file(path, |out| {
            write_result(out, format, &job, &whole, &all.stats, elapsed)
        })?;
    }
    let stdout_format = if output_args.json {
        Some(Format::Json)
    } else if output_args.output.is_none() || timing.interval.is_some() {
        Some(Format::Text)
    } else {
        None
    };
    if let Some(format) = stdout_format {
        if timing.interval.is_some() && format == Format::Text {
            println!(
                "{}",
                interval_header(
                    elapsed.min(Duration::from_secs_f64(timing.interval.unwrap_or(0.0)))
                )
            );
        }
        let mut stdout = std::io::stdout().lock();
        write_result(
            &mut stdout,
            format,
            &job,
            &result_groups,
            &shown.stats,
            elapsed,
        )
        .and_then(|()| stdout.flush())
        .map_err(stdout_error)?;
    }
    print_summary(&all.stats, elapsed, stop, &scope_value, workload_exit);
    if verbose >= 1 {
        let (user, sys, max_rss_kib) = session::own_usage();
        eprintln!(
            "tracekit: attached in {:.1} ms; own CPU time {:.3} s user + {:.3} s sys; peak RSS {:.1} MiB",
            attached_after.as_secs_f64() * 1e3,
            user.as_secs_f64(),
            sys.as_secs_f64(),
            max_rss_kib as f64 / 1024.0
        );
    }
    Ok(())
}

fn stdout_error(err: std::io::Error) -> Error {
    Error::Runtime {
        what: "writing to stdout".into(),
        source: Some(Box::new(err)),
    }
}

/// Histogram slots per group (1 for counts), as the plans keep them.
fn slots_of(job: &Job) -> u32 {
    match job.report {
        Report::Counts { .. } => 1,
        _ => job.specs.first().map_or(1, |spec| spec.main.plan.slots),
    }
}

fn interval_header(elapsed: Duration) -> String {
    format!("{} ({:.1} s)", session::clock_time(), elapsed.as_secs_f64())
}

fn print_interval(job: &Job, delta: &Aggregates, elapsed: Duration, json: bool) -> Result<()> {
    let result_groups = groups(delta, &job.columns, slots_of(job));
    let mut stdout = std::io::stdout().lock();
    let format = if json { Format::Json } else { Format::Text };
    if !json {
        writeln!(stdout, "{}", interval_header(elapsed)).map_err(stdout_error)?;
    }
    write_result(
        &mut stdout,
        format,
        job,
        &result_groups,
        &delta.stats,
        elapsed,
    )
    .and_then(|()| if json { Ok(()) } else { writeln!(stdout) })
    .and_then(|()| stdout.flush())
    .map_err(stdout_error)
}

/// The JSON form of one bucket.
#[derive(Serialize)]
struct JsonBucket {
    low: i128,
    high: i128,
    count: u64,
}

#[derive(Serialize)]
struct JsonGroup {
    key: serde_json::Map<String, serde_json::Value>,
    count: u64,
    sum: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    hist: Vec<JsonBucket>,
}

#[derive(Serialize)]
struct JsonResult<'a> {
    command: &'a str,
    traced: &'a str,
    duration_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    unit: Option<&'a str>,
    groups: Vec<JsonGroup>,
    stats: &'a EngineStats,
}

fn buckets(report: &Report, slots: &[u64]) -> Vec<JsonBucket> {
    slots
        .iter()
        .enumerate()
        .filter(|(_, count)| **count > 0)
        .map(|(slot, &count)| {
            let (low, high) = match report {
                Report::Log2 { .. } => (
                    if slot == 0 { 0 } else { 1i128 << slot },
                    (1i128 << (slot + 1)) - 1,
                ),
                Report::Linear { min, step, .. } => {
                    let last = slots.len() - 1;
                    let (min, step) = (i128::from(*min), i128::from(*step));
                    if slot == 0 {
                        (i128::from(i64::MIN), min - 1)
                    } else if slot == last {
                        (min + step * (last as i128 - 1), i128::from(i64::MAX))
                    } else {
                        let low = min + step * (slot as i128 - 1);
                        (low, low + step - 1)
                    }
                }
                Report::Counts { .. } => (0, 0),
            };
            JsonBucket { low, high, count }
        })
        .collect()
}

/// Sorts groups as shown: counts by count (largest first), histograms by key.
fn ordered<'a>(report: &Report, groups: &'a [Group]) -> Vec<&'a Group> {
    let mut rows: Vec<&Group> = groups.iter().collect();
    if let Report::Counts { top, .. } = report {
        rows.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
        if let Some(top) = top {
            rows.truncate(*top);
        }
    }
    rows
}

fn write_result(
    out: &mut impl std::io::Write,
    format: Format,
    job: &Job,
    result_groups: &[Group],
    stats: &EngineStats,
    elapsed: Duration,
) -> std::io::Result<()> {
    let rows = ordered(&job.report, result_groups);
    if format == Format::Json {
        let unit = match &job.report {
            Report::Log2 { unit } | Report::Linear { unit, .. } => Some(unit.as_str()),
            Report::Counts { .. } => None,
        };
        let json = JsonResult {
            command: job.command,
            traced: &job.what,
            duration_s: elapsed.as_secs_f64(),
            unit,
            groups: rows
                .iter()
                .map(|group| JsonGroup {
                    key: job
                        .columns
                        .iter()
                        .zip(&group.key)
                        .map(|(column, value)| {
                            (
                                column.name.clone(),
                                serde_json::to_value(value).unwrap_or_default(),
                            )
                        })
                        .collect(),
                    count: group.count,
                    sum: group.sum,
                    hist: buckets(&job.report, &group.slots),
                })
                .collect(),
            stats,
        };
        serde_json::to_writer(&mut *out, &json)?;
        return writeln!(out);
    }
    match &job.report {
        Report::Counts { sum, .. } => {
            let mut header: Vec<String> =
                job.columns.iter().map(|c| c.name.to_uppercase()).collect();
            header.push("COUNT".into());
            if let Some((name, _)) = sum {
                header.push(name.clone());
                header.push(format!("AVG {name}"));
            }
            let table_rows: Vec<Vec<String>> = rows
                .iter()
                .map(|group| {
                    let mut row: Vec<String> = group.key.iter().map(ToString::to_string).collect();
                    row.push(group.count.to_string());
                    if let Some((_, div)) = sum {
                        let total = group.sum as f64 / div;
                        row.push(format!("{total:.3}"));
                        row.push(format!("{:.3}", total / group.count.max(1) as f64));
                    }
                    row
                })
                .collect();
            let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
            let numeric = if sum.is_some() { 3 } else { 1 };
            out.write_all(hist::table(&header_refs, &table_rows, numeric).as_bytes())
        }
        Report::Log2 { unit } | Report::Linear { unit, .. } => {
            for (index, group) in rows.iter().enumerate() {
                if !job.columns.is_empty() {
                    if index > 0 {
                        writeln!(out)?;
                    }
                    let key: Vec<String> = job
                        .columns
                        .iter()
                        .zip(&group.key)
                        .map(|(column, value)| format!("{} = {value}", column.name))
                        .collect();
                    writeln!(out, "{}", key.join(", "))?;
                }
                let text = match &job.report {
                    Report::Linear { min, step, .. } => {
                        hist::linear(&group.slots, *min, *step, unit)
                    }
                    _ => hist::log2(&group.slots, unit),
                };
                out.write_all(text.as_bytes())?;
            }
            Ok(())
        }
    }
}

fn print_summary(
    stats: &EngineStats,
    elapsed: Duration,
    stop: Stop,
    scope: &Scope,
    workload_exit: Option<Exit>,
) {
    let why = match (stop, scope) {
        (Stop::Duration, _) => "duration reached".to_string(),
        (Stop::Signal(name), _) => format!("{name} received"),
        (Stop::Exited, Scope::Command(_)) => "command exited".to_string(),
        (Stop::Exited, _) => "traced processes exited".to_string(),
    };
    let filtered = if stats.filtered > 0 {
        format!(" ({} more did not pass the filter)", stats.filtered)
    } else {
        String::new()
    };
    eprintln!(
        "Counted {} events{filtered} in {:.2} s ({why}).",
        stats.counted,
        elapsed.as_secs_f64()
    );
    let mut lost = Vec::new();
    if stats.map_full > 0 {
        lost.push(format!(
            "{} events to a full map (raise --max-groups)",
            stats.map_full
        ));
    }
    if stats.start_map_full > 0 {
        lost.push(format!(
            "{} starts to a full start map (raise --max-in-flight)",
            stats.start_map_full
        ));
    }
    if stats.read_errors > 0 {
        lost.push(format!(
            "{} events whose fields could not be read",
            stats.read_errors
        ));
    }
    if lost.is_empty() {
        eprintln!("Lost: nothing.");
    } else {
        eprintln!("Lost: {}.", lost.join("; "));
    }
    if stats.no_start > 0 {
        eprintln!(
            "Not counted: {} ends whose start was not seen (in flight when tracing began).",
            stats.no_start
        );
    }
    match workload_exit {
        Some(Exit::Code(0)) | None => {}
        Some(Exit::Code(code)) => eprintln!("The command exited with status {code}."),
        Some(Exit::Signal(signal)) => eprintln!("The command was killed by signal {signal}."),
    }
}
