//! `tracekit profile`: sample on-CPU stacks, count them in the kernel, and report the
//! hottest functions, folded stacks, a flame graph, or JSON.

use std::{
    io::Write as _,
    time::{Duration, Instant},
};

use aya::maps::{MapData, RingBuf};
use serde::Serialize;
use tokio::io::{Interest, unix::AsyncFd};
use tracekit::{
    Error, Result, bpf, caps,
    output::{self, Format, flamegraph, report},
    profile::{self, Profile, Profiler, Stats},
    stacks::{self, Stack},
    symbolize::Symbolizer,
    workload::{Exit, Workload},
};

use crate::{
    cli::{OutputArgs, ProfileArgs, Scope},
    cmd::session::{self, Stop, Stopper, Wake},
};

/// Runs `tracekit profile`.
pub fn run(args: ProfileArgs, verbose: u8) -> Result<()> {
    let started = Instant::now();
    let hz = bpf::check_frequency(args.frequency)?;
    let file_format = args
        .output
        .output
        .as_deref()
        .map(Format::from_path)
        .transpose()?;
    let scope = args.scope.scope()?;
    let mut exit_fds = match &scope {
        Scope::Pids(pids) => session::watch_pids(pids)?,
        _ => Vec::new(),
    };
    caps::require_tracing("profile")?;
    let scope_text = session::describe_scope(&scope);

    let mut workload = match &scope {
        Scope::Command(argv) => Some(Workload::spawn(argv)?),
        _ => None,
    };
    let pids = match &scope {
        Scope::All => None,
        Scope::Pids(pids) => Some(pids.clone()),
        Scope::Command(_) => workload.as_ref().map(|w| vec![w.pid()]),
    };
    let options = args.options(hz, pids.clone());
    let mut profiler = Profiler::load(&options)?;
    log::debug!("loaded after {:?}", started.elapsed());
    profiler.attach(&options)?;
    let attached_after = started.elapsed();
    log::debug!("attached after {attached_after:?}");
    let events = profiler.take_events()?;

    let mut symbolizer = Symbolizer::new(!args.no_inline);
    if let Scope::Pids(pids) = &scope {
        for &pid in pids {
            symbolizer.remember_process(pid);
        }
    }
    if let Some(workload) = workload.as_ref() {
        exit_fds.push(workload.pidfd()?);
    }

    let runtime = session::runtime()?;
    let collect_started = Instant::now();
    let mut run = Run {
        args: &args,
        profiler: &mut profiler,
        symbolizer: &mut symbolizer,
        scope_text: &scope_text,
        hz,
        interval_base: profile::RawProfile::default(),
    };
    let (stop, mut events) = runtime.block_on(run.collect(events, exit_fds, workload.as_mut()))?;
    let elapsed = collect_started.elapsed();
    profiler.detach()?;
    session::restore_default_signals();
    remember_announced(&mut events, &mut symbolizer);
    let read_started = Instant::now();
    let raw = profiler.read()?;
    drop(profiler);
    log::debug!(
        "read {} keys and {} stacks in {:?}",
        raw.counts.len(),
        raw.stacks.len(),
        read_started.elapsed()
    );

    let workload_exit = match workload.as_mut() {
        Some(workload) => Some(session::finish_workload(workload)?),
        None => None,
    };
    let symbolize_started = Instant::now();
    let profile = profile::symbolize(&raw, &symbolizer);
    log::debug!("symbolized in {:?}", symbolize_started.elapsed());
    let header = Header {
        tool: "profile",
        event: "cpu-clock",
        unit: "samples",
        scope: &scope_text,
        hz: Some(hz),
        elapsed,
        cpus: options_cpus(),
    };

    emit_profile(
        &args.output,
        file_format,
        &profile,
        &header,
        args.top,
        args.timing.interval.is_none(),
    )?;
    print_summary(&profile, &header, stop, &scope, workload_exit);
    print_written(&args.output, file_format);
    crate::cmd::agg::print_usage(verbose, attached_after);
    Ok(())
}

/// Writes a stack profile where the flags ask: to `-o FILE` in `file_format`, and to stdout
/// as JSON with `--json`, or as the text report when there is no `-o` and `text_on_stdout`.
pub fn emit_profile(
    output: &OutputArgs,
    file_format: Option<Format>,
    profile: &Profile,
    header: &Header<'_>,
    top: usize,
    text_on_stdout: bool,
) -> Result<()> {
    if let (Some(path), Some(format)) = (output.output.as_deref(), file_format) {
        output::write_file(path, |out| write_profile(out, format, profile, header, top))?;
    }
    let stdout_format = if output.json {
        Some(Format::Json)
    } else if output.output.is_none() && text_on_stdout {
        Some(Format::Text)
    } else {
        None
    };
    if let Some(format) = stdout_format {
        let mut stdout = std::io::stdout().lock();
        write_profile(&mut stdout, format, profile, header, top)
            .and_then(|()| stdout.flush())
            .map_err(|err| Error::Runtime {
                what: "writing to stdout".into(),
                source: Some(Box::new(err)),
            })?;
    }
    Ok(())
}

/// Says on stderr what `-o FILE` received, after the summary.
pub fn print_written(output: &OutputArgs, file_format: Option<Format>) {
    if let (Some(path), Some(format)) = (output.output.as_deref(), file_format) {
        eprintln!(
            "Wrote {} ({}).",
            path.display(),
            match format {
                Format::Text => "report",
                Format::Folded => "folded stacks",
                Format::Svg => "flame graph",
                Format::Json => "JSON",
            }
        );
    }
}

/// The number of online CPUs.
pub fn options_cpus() -> usize {
    aya::util::online_cpus().map(|cpus| cpus.len()).unwrap_or(0)
}

/// The state of one profiling run while it collects.
struct Run<'a> {
    args: &'a ProfileArgs,
    profiler: &'a mut Profiler,
    symbolizer: &'a mut Symbolizer,
    scope_text: &'a str,
    hz: u64,
    interval_base: profile::RawProfile,
}

impl Run<'_> {
    /// Collects until a stop condition, caching each newly sampled process's memory map as
    /// it is announced, and printing interval reports. Returns why it stopped.
    async fn collect(
        &mut self,
        events: RingBuf<MapData>,
        exit_fds: Vec<std::os::fd::OwnedFd>,
        workload: Option<&mut Workload>,
    ) -> Result<(Stop, RingBuf<MapData>)> {
        let io =
            |err: std::io::Error| Error::runtime(format!("polling the event ring buffer: {err}"));
        // SAFETY: the ring buffer owns its map fd, which stays open and unchanged until
        // into_inner() hands it back.
        let mut events = unsafe { AsyncFd::register_with_interest(events, Interest::READABLE) }
            .map_err(|err| io(err.into()))?;
        let mut stopper = Stopper::new(
            self.args.timing.duration,
            self.args.timing.interval,
            exit_fds,
        )?;
        // Only now, with Ctrl-C handled, invite it.
        eprintln!(
            "Sampling on-CPU stacks of {} at {} Hz{}... Hit Ctrl-C to end.",
            self.scope_text,
            self.hz,
            self.args
                .timing
                .duration
                .map(|d| format!(" for {d} s"))
                .unwrap_or_default()
        );
        // Released only now, with the event loop ready: a command that runs for a
        // millisecond must still have its memory map read before it exits.
        if let Some(workload) = workload {
            workload.start()?;
        }
        let mut last_tick = Instant::now();
        let stop = loop {
            tokio::select! {
                guard = events.readable_mut() => {
                    let mut guard = guard.map_err(io)?;
                    remember_announced(guard.get_inner_mut(), self.symbolizer);
                    guard.clear_ready();
                }
                wake = stopper.next() => match wake {
                    Wake::Stop(stop) => break stop,
                    Wake::Tick => {
                        let now = Instant::now();
                        self.print_interval(now - last_tick)?;
                        last_tick = now;
                    }
                },
            }
        };
        if self.args.timing.interval.is_some() {
            remember_announced(events.get_mut(), self.symbolizer);
            self.print_interval(last_tick.elapsed())?;
        }
        Ok((stop, events.into_inner()))
    }

    /// Prints what was sampled since the last interval.
    fn print_interval(&mut self, elapsed: Duration) -> Result<()> {
        let now = self.profiler.read()?;
        let delta = now.since(&self.interval_base);
        self.interval_base = now;
        let profile = profile::symbolize(&delta, self.symbolizer);
        let scope = format!("interval ending {}", session::clock_time());
        let header = Header {
            tool: "profile",
            event: "cpu-clock",
            unit: "samples",
            scope: &scope,
            hz: Some(self.hz),
            elapsed,
            cpus: self.profiler.cpus(),
        };
        let format = if self.args.output.json {
            Format::Json
        } else {
            Format::Text
        };
        let mut stdout = std::io::stdout().lock();
        write_profile(&mut stdout, format, &profile, &header, self.args.top)
            .and_then(|()| writeln!(stdout))
            .and_then(|()| stdout.flush())
            .map_err(|err| Error::Runtime {
                what: "writing to stdout".into(),
                source: Some(Box::new(err)),
            })
    }
}

/// Caches the memory map of every process the kernel announced as newly sampled.
pub fn remember_announced(events: &mut RingBuf<MapData>, symbolizer: &mut Symbolizer) {
    while let Some(item) = events.next() {
        let pid = profile::announced_pid(&item);
        drop(item);
        if let Some(pid) = pid {
            symbolizer.remember_process(pid);
        }
    }
}

/// What a stack profile covered, for titles and headers.
pub struct Header<'a> {
    /// The subcommand (`profile`, `stackcount`).
    pub tool: &'a str,
    /// The event counted (`cpu-clock`, `software:page-faults`).
    pub event: &'a str,
    /// What a count is (`samples`, `events`).
    pub unit: &'a str,
    pub scope: &'a str,
    /// Sampling rate, when sampling.
    pub hz: Option<u64>,
    pub elapsed: Duration,
    pub cpus: usize,
}

impl Header<'_> {
    fn rate(&self) -> String {
        self.hz.map(|hz| format!(" at {hz} Hz")).unwrap_or_default()
    }

    fn title(&self) -> String {
        if self.tool == "profile" {
            return format!(
                "tracekit profile: {}, {:.1} s{}",
                self.scope,
                self.elapsed.as_secs_f64(),
                self.rate()
            );
        }
        format!(
            "tracekit {}: {}, {}, {:.1} s",
            self.tool,
            self.event,
            self.scope,
            self.elapsed.as_secs_f64()
        )
    }
}

/// The JSON form of a profile.
#[derive(Serialize)]
struct JsonProfile<'a> {
    event: &'a str,
    scope: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    frequency_hz: Option<u64>,
    duration_s: f64,
    cpus: usize,
    samples: u64,
    lost: JsonLost,
    stacks: &'a [Stack],
}

#[derive(Serialize)]
struct JsonLost {
    #[serde(flatten)]
    kernel: Stats,
    unwalked_stacks: u64,
}

/// Writes a stack profile in `format`: the report of hottest functions, folded stacks, a
/// flame graph, or JSON.
pub fn write_profile(
    out: &mut impl std::io::Write,
    format: Format,
    profile: &Profile,
    header: &Header<'_>,
    top: usize,
) -> std::io::Result<()> {
    match format {
        Format::Text if header.tool == "offcpu" => {
            let folded = stacks::fold(&profile.stacks);
            let total: u64 = folded.iter().map(|(_, c)| c).sum();
            let line = format!(
                "{:.3} s off CPU over {:.1} s, {}",
                total as f64 / 1e6,
                header.elapsed.as_secs_f64(),
                header.scope
            );
            out.write_all(report::render_stacks(&line, &folded, header.unit, top).as_bytes())
        }
        Format::Text => {
            let (ranked, total) = stacks::hottest(&profile.stacks);
            let line = format!(
                "{} {} of {}{} over {:.1} s, {}, {} CPUs",
                total,
                header.unit,
                header.event,
                header.rate(),
                header.elapsed.as_secs_f64(),
                header.scope,
                header.cpus
            );
            out.write_all(report::render(&line, &ranked, total, top).as_bytes())
        }
        Format::Folded => output::write_folded(out, &stacks::fold(&profile.stacks)),
        Format::Svg => {
            let folded = stacks::fold(&profile.stacks);
            let total: u64 = folded.iter().map(|(_, count)| count).sum();
            let subtitle = format!(
                "{total} {} on {} CPUs; kernel frames end in _[k]",
                header.unit, header.cpus
            );
            flamegraph::write_svg(out, &folded, &header.title(), Some(&subtitle), header.unit)
        }
        Format::Json => {
            let json = JsonProfile {
                event: header.event,
                scope: header.scope,
                frequency_hz: header.hz,
                duration_s: header.elapsed.as_secs_f64(),
                cpus: header.cpus,
                samples: profile.stacks.iter().map(|s| s.count).sum(),
                lost: JsonLost {
                    kernel: profile.stats,
                    unwalked_stacks: profile.unwalked,
                },
                stacks: &profile.stacks,
            };
            serde_json::to_writer(&mut *out, &json)?;
            writeln!(out)
        }
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The end-of-run account on stderr: what was sampled, why it stopped, and everything lost.
fn print_summary(
    profile: &Profile,
    header: &Header<'_>,
    stop: Stop,
    scope: &Scope,
    workload_exit: Option<Exit>,
) {
    let stats = &profile.stats;
    let processes: std::collections::HashSet<u32> = profile.stacks.iter().map(|s| s.pid).collect();
    let why = stop.reason(scope);
    eprintln!(
        "Collected {} samples from {} in {:.2} s at {} Hz on {} CPUs ({why}).",
        stats.samples,
        plural(processes.len(), "process", "processes"),
        header.elapsed.as_secs_f64(),
        header.hz.unwrap_or(0),
        header.cpus
    );
    let mut lost = Vec::new();
    if stats.count_map_full > 0 {
        lost.push(format!(
            "{} samples to a full count map (raise --count-map-size)",
            stats.count_map_full
        ));
    }
    if stats.stack_map_full > 0 {
        lost.push(format!(
            "{} stacks to a full stack map (raise --stack-storage-size)",
            stats.stack_map_full
        ));
    }
    let errors = stats.kernel_stack_errors + stats.user_stack_errors;
    if errors > 0 {
        lost.push(format!(
            "{errors} stacks the kernel could not walk ({} kernel, {} user)",
            stats.kernel_stack_errors, stats.user_stack_errors
        ));
    }
    if profile.unwalked > 0 {
        lost.push(format!("{} samples with no stack at all", profile.unwalked));
    }
    if stats.events_lost > 0 {
        lost.push(format!(
            "{} new-process notices to a full ring buffer (their symbols may not resolve if they exited)",
            stats.events_lost
        ));
    }
    if lost.is_empty() {
        eprintln!("Lost: nothing.");
    } else {
        eprintln!("Lost: {}.", lost.join("; "));
    }
    for broken in &profile.broken {
        eprintln!(
            "tracekit: warning: pid {} ({}): {} of its {} user stacks have fewer than {} frames; \
             its stacks look broken, likely built without frame pointers \
             (C/C++: -fno-omit-frame-pointer; Rust: -C force-frame-pointers=yes)",
            broken.pid,
            broken.comm,
            broken.short,
            broken.samples,
            profile::SHORT_STACK_FRAMES
        );
    }
    match workload_exit {
        Some(Exit::Code(0)) | None => {}
        Some(Exit::Code(code)) => eprintln!("The command exited with status {code}."),
        Some(Exit::Signal(signal)) => eprintln!("The command was killed by signal {signal}."),
    }
}
