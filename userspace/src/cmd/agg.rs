//! What `hist`, `count`, `bitesize`, `biolatency` and `syscount` share: run engines over a
//! scope and a duration, then print aggregates as a table or histograms, and account for
//! every event that was not counted.

use std::{
    io::Write as _,
    time::{Duration, Instant},
};

use aya::maps::{MapData, RingBuf};
use serde::Serialize;
use tokio::io::{Interest, unix::AsyncFd};
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
    /// The filter is the tool's own, not the user's (`runqlat` skips switches to the idle
    /// task): the events it drops are not events of the tool, so they are not reported.
    pub tool_filter: bool,
}

/// What to do with each record of a ring buffer.
pub type RecordHandler<'a> = Box<dyn FnMut(&[u8]) + 'a>;

/// A ring buffer and what to do with each record.
pub type RingHandler<'a> = (RingBuf<MapData>, RecordHandler<'a>);

/// Remembers the memory map of each process the engine announces (the first time one of its
/// stacks is taken, and after `exec`), so that user frames of processes that exit before the
/// end still symbolize.
pub fn announce_handler<'a>(
    engine: &mut Engine,
    symbolizer: &'a std::cell::RefCell<tracekit::symbolize::Symbolizer>,
) -> Result<RingHandler<'a>> {
    Ok((
        engine.take_announce()?,
        Box::new(move |record: &[u8]| {
            if let Some(pid) = tracekit::profile::announced_pid(record) {
                symbolizer.borrow_mut().remember_process(pid);
            }
        }),
    ))
}

/// [`announce_handler`] for each engine when user stacks are taken, else none.
pub fn announce_handlers<'a>(
    engines: &mut [Engine],
    symbolizer: &'a std::cell::RefCell<tracekit::symbolize::Symbolizer>,
    user_stacks: bool,
) -> Result<Vec<RingHandler<'a>>> {
    if !user_stacks {
        return Ok(Vec::new());
    }
    engines
        .iter_mut()
        .map(|engine| announce_handler(engine, symbolizer))
        .collect()
}

/// What [`run_engines`] needs.
pub struct Setup<'a> {
    /// The subcommand, for messages.
    pub command: &'static str,
    /// What is traced, for "Tracing ...".
    pub what: &'a str,
    /// The engines.
    pub specs: &'a [EngineSpec],
    pub scope: &'a ScopeArgs,
    pub timing: &'a TimingArgs,
    /// Filter tracekit's own events out in the kernel (needed when maps are read, or
    /// events streamed, while attached).
    pub exclude_self: bool,
    /// `-v`: say how each probe attached.
    pub verbose: u8,
}

/// How a run ended.
pub struct Finished {
    /// The engines, detached; their maps still readable.
    pub engines: Vec<Engine>,
    pub stop: Stop,
    /// From attached to stopped.
    pub elapsed: Duration,
    pub scope: Scope,
    pub scope_text: String,
    pub workload_exit: Option<Exit>,
    pub attached_after: Duration,
}

impl Finished {
    /// [`print_summary`] of this run.
    pub fn print_summary(&self, stats: &EngineStats, all_tasks: bool) {
        print_summary(
            stats,
            self.elapsed,
            self.stop,
            &self.scope,
            self.workload_exit,
            all_tasks,
        );
    }
}

/// Loads and attaches the engines over the scope (starting `-- CMD` once attached), polls
/// the ring buffers `rings` returns, calls `on_tick` every `-i` interval, and stops at `-d`,
/// Ctrl-C, SIGTERM or when the traced processes exit. The engines are detached before
/// returning; the rings are drained once more.
pub fn run_engines<'a>(
    setup: Setup<'_>,
    rings: impl FnOnce(&mut [Engine]) -> Result<Vec<RingHandler<'a>>>,
    mut on_tick: impl FnMut(&[Engine], Duration) -> Result<()>,
) -> Result<Finished> {
    let started = Instant::now();
    let scope = setup.scope.scope()?;
    let mut exit_fds = match &scope {
        Scope::Pids(pids) => session::watch_pids(pids)?,
        _ => Vec::new(),
    };
    caps::require_tracing(setup.command)?;
    let scope_text = session::describe_scope(&scope);
    let mut workload = match &scope {
        Scope::Command(argv) => Some(Workload::spawn(argv)?),
        _ => None,
    };
    let targets = Targets {
        pids: match &scope {
            Scope::All => None,
            Scope::Pids(pids) => Some(pids.clone()),
            Scope::Command(_) => workload.as_ref().map(|w| vec![w.pid()]),
        },
        follow_children: workload.is_some(),
        exclude_self: setup.exclude_self,
    };
    let mut engines = Vec::with_capacity(setup.specs.len());
    for spec in setup.specs {
        let mut engine = Engine::load(spec, &targets)?;
        engine.attach(spec)?;
        if setup.verbose >= 1 {
            for note in engine.notes() {
                eprintln!("tracekit: attached {note}");
            }
        }
        engines.push(engine);
    }
    let attached_after = started.elapsed();
    let handlers = rings(&mut engines)?;
    if let Some(workload) = workload.as_ref() {
        exit_fds.push(workload.pidfd()?);
    }
    let runtime = session::runtime()?;
    let collect_started = Instant::now();
    let io = |err: std::io::Error| Error::runtime(format!("polling a ring buffer: {err}"));
    let stop = runtime.block_on(async {
        let mut stopper = Stopper::new(setup.timing.duration, setup.timing.interval, exit_fds)?;
        // Only now, with Ctrl-C handled, invite it.
        eprintln!(
            "Tracing {} for {scope_text}{}... Hit Ctrl-C to end.",
            setup.what,
            setup
                .timing
                .duration
                .map(|d| format!(" for {d} s"))
                .unwrap_or_default()
        );
        let mut rings = Vec::with_capacity(handlers.len());
        for (ring, handler) in handlers {
            // SAFETY: the ring buffer owns its map fd, which stays open and unchanged.
            let fd = unsafe { AsyncFd::register_with_interest(ring, Interest::READABLE) }
                .map_err(|err| io(err.into()))?;
            rings.push((fd, handler));
        }
        // Released only now, with the event loop ready: a command that runs for a
        // millisecond must still have its memory map read before it exits.
        if let Some(workload) = workload.as_mut() {
            workload.start()?;
        }
        let mut last_tick = Instant::now();
        let stop = loop {
            let readable = async {
                if rings.is_empty() {
                    return std::future::pending().await;
                }
                let polls = rings.iter().map(|(fd, _)| Box::pin(fd.readable()));
                let (result, index, _) = futures_select_all(polls).await;
                (result, index)
            };
            tokio::select! {
                (ready, index) = readable => {
                    let mut guard = ready.map_err(io)?;
                    guard.clear_ready();
                    drop(guard);
                    let (fd, handler) = &mut rings[index];
                    drain(fd.get_mut(), handler);
                }
                wake = stopper.next() => match wake {
                    Wake::Stop(stop) => break stop,
                    Wake::Tick => {
                        let now = Instant::now();
                        on_tick(&engines, now - last_tick)?;
                        last_tick = now;
                    }
                },
            }
        };
        for (fd, handler) in &mut rings {
            drain(fd.get_mut(), handler);
        }
        Ok::<_, Error>(stop)
    })?;
    let elapsed = collect_started.elapsed();
    for engine in &mut engines {
        engine.detach();
    }
    session::restore_default_signals();
    let workload_exit = match workload.as_mut() {
        Some(workload) => Some(session::finish_workload(workload)?),
        None => None,
    };
    Ok(Finished {
        engines,
        stop,
        elapsed,
        scope,
        scope_text,
        workload_exit,
        attached_after,
    })
}

fn drain(ring: &mut RingBuf<MapData>, handler: &mut RecordHandler<'_>) {
    while let Some(item) = ring.next() {
        handler(&item);
    }
}

/// Waits for the first of several futures (a small `select_all`, to avoid a dependency).
async fn futures_select_all<F: std::future::Future + Unpin>(
    futures: impl Iterator<Item = F>,
) -> (F::Output, usize, ()) {
    let mut futures: Vec<F> = futures.collect();
    std::future::poll_fn(move |cx| {
        for (index, future) in futures.iter_mut().enumerate() {
            if let std::task::Poll::Ready(output) = std::pin::Pin::new(future).poll(cx) {
                return std::task::Poll::Ready((output, index, ()));
            }
        }
        std::task::Poll::Pending
    })
    .await
}

/// Reads every engine's aggregates, merged.
pub fn read_all(engines: &[Engine]) -> Result<Aggregates> {
    let mut all = Aggregates::default();
    for engine in engines {
        all.merge(engine.read()?);
    }
    Ok(all)
}

/// Runs `job` over the scope and timing of the command line, printing its aggregates.
pub fn run(
    job: Job,
    scope: &ScopeArgs,
    timing: &TimingArgs,
    output_args: &OutputArgs,
    verbose: u8,
) -> Result<()> {
    let file_format = check_output(output_args, job.command, false)?;
    let mut previous = Aggregates::default();
    let finished = run_engines(
        Setup {
            command: job.command,
            what: &job.what,
            specs: &job.specs,
            scope,
            timing,
            // Without intervals the maps are read after detaching, so tracekit's own
            // reads are never seen; with them, its events must be filtered in the kernel.
            exclude_self: timing.interval.is_some(),
            verbose,
        },
        |_| Ok(Vec::new()),
        |engines, elapsed| {
            let now = read_all(engines)?;
            print_interval(&job, &now.since(&previous), elapsed, output_args.json)?;
            previous = now;
            Ok(())
        },
    )?;
    let all = read_all(&finished.engines)?;
    let elapsed = finished.elapsed;

    let shown = if timing.interval.is_some() {
        all.since(&previous)
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
    let mut stats = all.stats;
    if job.tool_filter {
        stats.filtered = 0;
    }
    finished.print_summary(
        &stats,
        // Other tasks' ends are expected then; with -a they are in-flight requests.
        !matches!(finished.scope, Scope::All)
            && job.specs.iter().any(|spec| spec.main.plan.all_tasks != 0),
    );
    print_usage(verbose, finished.attached_after);
    Ok(())
}

/// The `-o` format, refusing what `command` cannot write.
pub fn check_output(
    output_args: &OutputArgs,
    command: &str,
    stacks: bool,
) -> Result<Option<Format>> {
    let format = output_args
        .output
        .as_deref()
        .map(Format::from_path)
        .transpose()?;
    if !stacks && let Some(format @ (Format::Folded | Format::Svg)) = format {
        return Err(Error::usage(format!(
            "-o {}: {command} writes .txt or .json, not {}",
            output_args.output.as_ref().unwrap().display(),
            if format == Format::Svg {
                ".svg"
            } else {
                ".folded"
            }
        )));
    }
    Ok(format)
}

/// With `-v`: time to attach, own CPU time and peak memory.
pub fn print_usage(verbose: u8, attached_after: Duration) {
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

/// `all_tasks`: the main stage sees every task (offcpu), so ends without a start are the
/// norm, not worth a line.
pub fn print_summary(
    stats: &EngineStats,
    elapsed: Duration,
    stop: Stop,
    scope: &Scope,
    workload_exit: Option<Exit>,
    all_tasks: bool,
) {
    let why = stop.reason(scope);
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
    if stats.no_start > 0 && !all_tasks {
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
