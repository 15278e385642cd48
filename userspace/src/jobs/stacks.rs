//! Stack profiles: `profile` samples on-CPU stacks with the CPU sampler
//! ([`crate::cpu_sampler::Profiler`]); `stackcount` and `offcpu` count or time stacks with
//! engine requests keyed by `pid, comm, kstack, ustack`. Both end the same way: the stacks
//! are symbolized and written as a report, folded stacks, a flame graph or JSON, per
//! interval (`-i`) and for the whole run.

use std::time::Duration;

use aya::maps::{MapData, RingBuf};

use self::engines::{EngineStacks, StackLayout};
use super::{
    RunOptions,
    aggregate::Engines,
    is_broken_pipe, online_cpus,
    source::{CpuSampler, SampleSource},
    to_stdout, to_writer,
};
use crate::{
    Result, bpf, caps,
    cpu_sampler::{self, ProfileOptions, SymbolizedProfile},
    engine::{
        compile::{Compiled, compile},
        request::Request,
    },
    output::{self, Format, profile::Header},
    session::{self, Collector, Flow, Interval, Tracees},
    stacks::{NamedStackSum, StackSum},
    symbolize::{Symbolizer, SymbolizerOptions, lines::LineProfile},
    unwind::CallGraph,
};

/// What a stack's count is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weight {
    /// Events.
    Count,
    /// The summed value, in microseconds (the value being nanoseconds).
    SumMicros,
}

/// How a stack profile is labelled. In `event` and `banner`, `{probes}` stands for the
/// compiled probes' description (`uprobe:/lib/x86_64-linux-gnu/libc.so.6:malloc (1
/// function)`).
#[derive(Clone, Debug)]
pub struct Labels {
    /// The subcommand (`profile`, `stackcount`, `offcpu`).
    pub tool: &'static str,
    /// The event counted, for headers (`cpu-clock`, `{probes}`).
    pub event: String,
    /// What a count is (`samples`, `events`, `us`).
    pub unit: &'static str,
    /// What "Tracing ..." names (`stacks of {probes}`, `off-CPU time`).
    pub banner: String,
}

/// What the report shows.
#[derive(Clone, Copy, Debug)]
pub struct ReportOptions {
    /// Rows of the text report.
    pub top: usize,
    /// Show inlined functions as frames (reads DWARF line tables).
    pub inlined: bool,
    /// Also report the hottest source lines of the hottest functions (`profile --by
    /// line`; reads DWARF line tables), after the text report.
    pub lines: bool,
    /// Draw flame graphs as icicle graphs (`--inverted`).
    pub inverted: bool,
    /// Write folded stacks on stdout instead of the text report (`offwaketime -f`).
    pub folded: bool,
}

/// `profile`'s CPU sampler options (scope excluded: the session supplies it).
#[derive(Clone, Debug)]
pub struct Sampling {
    /// Samples per second per CPU (`-F`), checked against the kernel's limit.
    pub frequency_hz: u64,
    /// Count samples of the idle task.
    pub include_idle: bool,
    /// Record kernel stacks.
    pub kernel_stacks: bool,
    /// Record user stacks.
    pub user_stacks: bool,
    /// `--call-graph`: how user stacks are walked; `None`: from unwind tables where the
    /// kernel can run the DWARF unwinder, else by frame pointers.
    pub call_graph: Option<CallGraph>,
    /// Kernel memory the unwind tables may use, in bytes.
    pub unwind_budget_bytes: u64,
    /// `--stack-storage-size`.
    pub stack_map_entries: u32,
    /// `--count-map-size`.
    pub count_map_entries: u32,
    /// `--by cgroup`: count samples by the thread's cgroup too.
    pub by_cgroup: bool,
    /// Count samples per time slice (`--heatmap`, or a `.heatmap.svg` output).
    pub time_slices: bool,
}

struct StackCollector<'a> {
    /// The CPU sampler, the stack engines, or recorded samples in tests.
    source: Box<dyn SampleSource + 'a>,
    /// The time slice length, when samples are counted per slice.
    time_slice_ns: Option<u64>,
    labels: &'a Labels,
    report: ReportOptions,
    symbolizer: Symbolizer,
    json: bool,
    hz: Option<u64>,
    cpus: usize,
    /// With `-i`: the whole run so far, symbolized interval by interval.
    whole: Whole,
    /// With `-i`: what of the whole run's stacks to keep (`-o FILE`, `--json` write it
    /// at the end).
    keep: Keep,
}

/// What an interval profile keeps of the whole run's stacks, for the files written at its
/// end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keep {
    /// Nothing is written at the end: the counters only.
    Counters,
    /// Stacks by command name and frames' names (`.txt`, `.folded`, `.svg`,
    /// `.heatmap.svg`): their size follows the distinct stacks, not the processes that ran
    /// them, so a run under process churn stays flat.
    Symbols,
    /// Stacks by process with their addresses (JSON, pprof, speedscope, Chrome traces:
    /// formats with a pid or an address per stack).
    Everything,
}

impl Keep {
    /// What `outputs` (and `--json` on stdout) need.
    fn for_outputs(outputs: &[(std::path::PathBuf, Format)], json: bool) -> Self {
        let per_process = |format: &Format| {
            !matches!(
                format,
                Format::Text | Format::Folded | Format::Svg | Format::Heatmap
            )
        };
        if json || outputs.iter().any(|(_, format)| per_process(format)) {
            Keep::Everything
        } else if outputs.is_empty() {
            Keep::Counters
        } else {
            Keep::Symbols
        }
    }
}

/// The whole run of an interval profile, added up from each interval's symbolized profile:
/// the stacks only when the whole run is written (they grow with the processes sampled),
/// the counters and the processes always (for the summary).
#[derive(Default)]
struct Whole {
    profile: SymbolizedProfile,
    /// The whole run's stacks by process ([`Keep::Everything`]).
    stacks: StackSum,
    /// The whole run's stacks by name ([`Keep::Symbols`]).
    named: NamedStackSum,
    pids: PidSet,
    /// With `--by line`: the intervals' lines added up.
    lines: LineProfile,
}

/// Distinct pids, one bit each: at most 512 KiB at Linux's largest `pid_max` (2^22), however
/// many processes an hours-long run under churn samples (a set of them grew with each).
#[derive(Default)]
struct PidSet {
    bits: Vec<u64>,
    len: usize,
}

impl PidSet {
    fn insert(&mut self, pid: u32) {
        let (word, bit) = ((pid / 64) as usize, pid % 64);
        if word >= self.bits.len() {
            self.bits.resize(word + 1, 0);
        }
        if self.bits[word] & (1 << bit) == 0 {
            self.bits[word] |= 1 << bit;
            self.len += 1;
        }
    }

    fn len(&self) -> usize {
        self.len
    }
}

impl Whole {
    fn add(&mut self, delta: &SymbolizedProfile, keep: Keep) {
        let whole = &mut self.profile;
        let stats = &mut whole.stats;
        stats.samples += delta.stats.samples;
        stats.count_map_full += delta.stats.count_map_full;
        stats.stack_map_full += delta.stats.stack_map_full;
        stats.kernel_stack_errors += delta.stats.kernel_stack_errors;
        stats.user_stack_errors += delta.stats.user_stack_errors;
        stats.events_lost += delta.stats.events_lost;
        whole.unwalked += delta.unwalked;
        for broken in &delta.broken {
            match whole.broken.iter_mut().find(|b| b.pid == broken.pid) {
                Some(known) => {
                    known.samples += broken.samples;
                    known.short += broken.short;
                }
                None => whole.broken.push(broken.clone()),
            }
        }
        for stack in &delta.stacks {
            self.pids.insert(stack.pid);
            match keep {
                Keep::Counters => {}
                Keep::Symbols => self.named.add(stack),
                Keep::Everything => self.stacks.add(stack),
            }
        }
    }
}

impl StackCollector<'_> {
    fn header<'h>(&'h self, scope: &'h str, elapsed: Duration) -> Header<'h> {
        Header {
            hz: self.hz,
            elapsed,
            cpus: self.cpus,
            start: std::time::SystemTime::now() - elapsed,
            time_slice_ns: self.time_slice_ns,
            inverted: self.report.inverted,
            ..Header::new(
                self.labels.tool,
                &self.labels.event,
                self.labels.unit,
                scope,
            )
        }
    }
}

impl Collector for StackCollector<'_> {
    fn attach(&mut self, tracees: &Tracees) -> Result<()> {
        if let (Some(pids), false) = (&tracees.pids, tracees.follow_children) {
            for &pid in pids {
                self.symbolizer.remember_process(pid);
            }
        }
        self.source.attach(tracees)?;
        if let Some(cpus) = self.source.cpus() {
            self.cpus = cpus;
        }
        Ok(())
    }

    fn honours_cgroup(&self) -> bool {
        self.source.honours_cgroup()
    }

    fn rings(&mut self) -> Result<Vec<RingBuf<MapData>>> {
        self.source.rings()
    }

    fn record(&mut self, _ring: usize, data: &[u8]) -> Flow {
        if let Some(pid) = cpu_sampler::announced_pid(data) {
            // Its maps first, while it lives; its tables are built on their own thread.
            self.symbolizer.remember_process(pid);
            self.source.announced(pid);
        }
        Flow::Continue
    }

    fn names_user_frames(&self) -> bool {
        self.source.names_user_frames()
    }

    fn exiting(&mut self, pid: u32) {
        self.symbolizer.remember_process(pid);
    }

    fn exec_stopped(&mut self, pid: u32) {
        let limit = crate::session::workload::EXEC_HOLD_LIMIT;
        self.source.exec_stopped(pid, limit);
    }

    fn interval(&mut self, interval: Interval) -> Result<Flow> {
        let delta = self.source.take_interval()?.unwrap_or_default();
        let profile = self
            .source
            .join(cpu_sampler::symbolize(&delta, &self.symbolizer));
        // Lines before forgetting: an exited process's resolvers go with it.
        let lines = self
            .report
            .lines
            .then(|| cpu_sampler::leaf_lines(&delta, &self.symbolizer));
        // Exited processes are symbolized for the last time now: forgotten at the next
        // interval, so memory stays flat under churn.
        self.symbolizer.forget_exited();
        self.whole.add(&profile, self.keep);
        if let Some(lines) = &lines {
            self.whole.lines.add(lines);
        }
        let scope = format!("interval ending {}", session::clock_time());
        let header = self.header(&scope, interval.elapsed);
        let format = if self.json {
            Format::Json
        } else if self.report.folded {
            Format::Folded
        } else {
            Format::Text
        };
        let written = to_stdout(|out| {
            write_profile(
                out,
                format,
                &profile,
                lines.as_ref(),
                &header,
                self.report.top,
            )?;
            writeln!(out)
        });
        // The interval's symbolized stacks are the run's biggest allocations (tens of MB
        // when an interval under churn is late): hand them back now, or RSS stays at the
        // highest any interval needed.
        drop((profile, lines, delta));
        crate::symbolize::release_freed_memory();
        match written {
            Err(err) if is_broken_pipe(&err) => Ok(Flow::OutputClosed),
            other => other.map(|()| Flow::Continue),
        }
    }

    fn detach(&mut self) -> Result<()> {
        self.source.detach()
    }
}

/// Samples on-CPU stacks (`profile`).
pub fn profile(
    sampling: &Sampling,
    labels: &Labels,
    report: ReportOptions,
    options: &RunOptions,
) -> Result<()> {
    let hz = bpf::check_frequency(sampling.frequency_hz)?;
    let time_slice_ns = sampling.time_slices.then_some(output::flamescope::SLICE_NS);
    let mut sampler = CpuSampler::new(ProfileOptions {
        frequency_hz: hz,
        pids: None,
        follow_children: false,
        cgroup: None,
        include_idle: sampling.include_idle,
        kernel_stacks: sampling.kernel_stacks,
        user_stacks: sampling.user_stacks,
        call_graph: sampling.call_graph,
        unwind_budget_bytes: sampling.unwind_budget_bytes,
        stack_map_entries: sampling.stack_map_entries,
        count_map_entries: sampling.count_map_entries,
        by_cgroup: sampling.by_cgroup,
        time_slice_ns,
    });
    sampler.program = options.command_program();
    let source = Box::new(sampler);
    let banner = move |scope: &str| format!("Sampling on-CPU stacks of {scope} at {hz} Hz");
    run(
        source,
        (Some(hz), time_slice_ns),
        labels,
        report,
        options,
        Box::new(banner),
    )
}

/// Counts (or, with [`Weight::SumMicros`], times) the stacks of a request whose group key
/// is `[leading columns] pid comm kstack? ustack?` (`stackcount`, `offcpu`).
///
/// User stacks are walked as `call_graph` says (`None`: by the DWARF unwinder), with at most
/// `unwind_budget_bytes` of kernel memory for the tables of each engine.
pub fn engine(
    request: &Request,
    weight: Weight,
    call_graph: Option<CallGraph>,
    unwind_budget_bytes: u64,
    labels: &Labels,
    report: ReportOptions,
    options: &RunOptions,
) -> Result<()> {
    caps::require_tracing(labels.tool)?;
    let mut compiled: Compiled = compile(request)?;
    for spec in &mut compiled.specs {
        spec.user_unwind = call_graph != Some(CallGraph::Fp);
    }
    let labels = &Labels {
        event: labels.event.replace("{probes}", &compiled.what),
        banner: labels.banner.replace("{probes}", &compiled.what),
        ..labels.clone()
    };
    let uses = |name: &str| request.by.iter().any(|k| k.field.ends_with(name));
    let layout = StackLayout::of(&compiled.columns, (uses("kstack"), uses("ustack")), weight);
    let engines = Engines {
        specs: &compiled.specs,
        engines: Vec::new(),
        exclude_self: options.interval.is_some(),
        verbose: options.verbose,
    };
    let source = Box::new(EngineStacks::new(
        engines,
        layout,
        unwind_budget_bytes,
        options.command_program(),
    ));
    let what = labels.banner.clone();
    let banner = move |scope: &str| format!("Tracing {what} for {scope}");
    run(
        source,
        (None, None),
        labels,
        report,
        options,
        Box::new(banner),
    )
}

/// Runs the session over `source`, sampled at `hz` (the CPU sampler) and counted per
/// `time_slice_ns` (`--heatmap`), then writes the run's profile.
fn run<'a>(
    source: Box<dyn SampleSource + 'a>,
    (hz, time_slice_ns): (Option<u64>, Option<u64>),
    labels: &Labels,
    report: ReportOptions,
    options: &RunOptions,
    banner: session::Banner,
) -> Result<()> {
    let outputs = outputs(options)?;
    if time_slice_ns.is_none()
        && let Some((path, _)) = outputs.iter().find(|(_, f)| *f == Format::Heatmap)
    {
        return Err(crate::Error::usage(format!(
            "-o {}: subsecond heat maps are drawn from CPU profiles (tracekit profile); \
             {} keeps no sample times",
            crate::error::quote(&path.to_string_lossy()),
            labels.tool
        )));
    }
    let mut collector = StackCollector {
        source,
        time_slice_ns,
        labels,
        report,
        symbolizer: Symbolizer::with_options(SymbolizerOptions {
            inlined: report.inlined,
            debug_info: options.debug_info.clone(),
            lines: report.lines,
            dwarf: true,
        }),
        json: options.json,
        hz,
        cpus: online_cpus(),
        whole: Whole::default(),
        keep: Keep::for_outputs(&outputs, options.json),
    };
    let mut session = options.session(labels.tool, true);
    session.banner = Some(banner);
    let finished = session::run(session, &mut collector)?;
    let ending = finish(
        &mut collector,
        &finished,
        &outputs,
        options,
        &mut std::io::stdout(),
    )?;
    eprint!("{}", ending.summary);
    finished.print_workload_exit();
    eprint!("{}", ending.after);
    session::print_usage(options.verbose, finished.attached_after);
    Ok(())
}

/// What a run prints on stderr after its profile: the summary, then (after how `-- CMD`
/// ended) the files written and `-v`'s unwind report.
struct Ending {
    summary: String,
    after: String,
}

/// The end of a run, once its session has detached: reads and symbolizes the whole run (or
/// takes the intervals' sum), writes each `-o FILE` and the report to `stdout`, and returns
/// what goes to stderr.
fn finish(
    collector: &mut StackCollector<'_>,
    finished: &session::Finished,
    outputs: &[(std::path::PathBuf, Format)],
    options: &RunOptions,
    stdout: &mut dyn std::io::Write,
) -> Result<Ending> {
    let (labels, report) = (collector.labels, collector.report);
    let processes = if options.interval.is_some() {
        collector.whole.pids.len()
    } else {
        0
    };
    let profile = if options.interval.is_some() {
        // Every interval was symbolized as it ended (the last one after detaching).
        SymbolizedProfile {
            stacks: match collector.keep {
                Keep::Symbols => std::mem::take(&mut collector.whole.named).into_stacks(),
                _ => std::mem::take(&mut collector.whole.stacks).into_stacks(),
            },
            ..std::mem::take(&mut collector.whole.profile)
        }
    } else {
        let raw = collector.source.read()?.unwrap_or_default();
        let started = std::time::Instant::now();
        let profile = collector
            .source
            .join(cpu_sampler::symbolize(&raw, &collector.symbolizer));
        if report.lines {
            collector.whole.lines = cpu_sampler::leaf_lines(&raw, &collector.symbolizer);
        }
        log::debug!("symbolized in {:?}", started.elapsed());
        profile
    };
    let lines = report
        .lines
        .then(|| std::mem::take(&mut collector.whole.lines));
    let processes = if options.interval.is_some() {
        processes
    } else {
        output::profile::processes(&profile)
    };
    // In DWARF mode, broken-looking stacks are explained by the mappings that had no table;
    // -v reports the tables and the kernel walk's counters.
    let unwind = collector.source.unwind_report();
    let mut header = collector.header(&finished.scope_text, finished.elapsed);
    header.runtimes_not_named = &unwind.not_named;
    header.saved_as = outputs
        .iter()
        .find(|(_, f)| *f == Format::Json)
        .map(|(path, _)| path.as_path());
    // Every file from the same profile and header: one run's outputs agree.
    let mut heatmap_cells = None;
    for (path, format) in outputs {
        if *format == Format::Heatmap {
            // With the flame graphs its cells link to.
            heatmap_cells = Some(output::flamescope::write_file(path, &profile, &header)?);
            continue;
        }
        output::write_file(path, |out| {
            write_profile(out, *format, &profile, lines.as_ref(), &header, report.top)
        })?;
    }
    let stdout_format = if options.json {
        Some(Format::Json)
    } else if report.folded {
        Some(Format::Folded)
    } else if options.output.is_none() && options.interval.is_none() {
        Some(Format::Text)
    } else {
        None
    };
    if let Some(format) = stdout_format {
        to_writer(stdout, |out| {
            write_profile(out, format, &profile, lines.as_ref(), &header, report.top)
        })?;
    }
    // A process with no tables by the end was walked by frame pointers only, for that
    // reason, not (necessarily) for want of them.
    let mut hints = unwind.hints.clone();
    if unwind.before_tables.is_some() {
        for broken in &profile.broken {
            hints
                .entry(broken.pid)
                .or_insert_with(|| output::profile::NO_TABLES_YET.to_string());
        }
    }
    let summary = match collector.source.engine_stats()? {
        None => output::profile::summary(&profile, &header, &finished.reason(), processes, &hints),
        Some(stats) => {
            let mut summary = String::new();
            if matches!(labels.tool, "offcpu" | "offwaketime") {
                let total_us: u64 = profile.stacks.iter().map(|s| s.count).sum();
                summary = format!(
                    "{}: {:.3} s over {}.\n",
                    if labels.tool == "offcpu" {
                        "Off CPU"
                    } else {
                        "Blocked until woken"
                    },
                    total_us as f64 / 1e6,
                    output::plural(stats.counted, "block", "blocks")
                );
            }
            summary
                + &output::aggregates::summary(
                    &stats,
                    finished.elapsed,
                    &finished.reason(),
                    matches!(labels.tool, "offcpu" | "offwaketime"),
                )
        }
    };
    // Said without -v: a runtime found but not unwound reads as native frames otherwise.
    let summary = summary
        + &unwind
            .before_tables
            .map(|before| output::profile::before_tables_line(&before))
            .unwrap_or_default()
        + &unwind
            .not_named
            .iter()
            .map(|not_named| format!("tracekit: {}\n", not_named.line()))
            .collect::<String>();
    let mut after = String::new();
    for (path, format) in outputs {
        let written = match format {
            Format::Heatmap if let Some(cells) = heatmap_cells => {
                output::flamescope::written(path, cells)
            }
            _ => output::profile::written(path, *format),
        };
        after += &format!("{written}\n");
    }
    if options.verbose > 0
        && let Some(summary) = &unwind.summary
    {
        after += &format!("tracekit: {}\n", summary.replace('\n', "\ntracekit: "));
    }
    Ok(Ending { summary, after })
}

/// Every `-o FILE` with its format.
fn outputs(options: &RunOptions) -> Result<Vec<(std::path::PathBuf, Format)>> {
    options
        .output
        .iter()
        .chain(&options.more_outputs)
        .map(|path| Ok((path.clone(), Format::from_path(path)?)))
        .collect()
}

/// Writes `profile` in `format`; the text report is followed by the hottest lines of the
/// hottest functions when `lines` were computed.
fn write_profile(
    out: &mut dyn std::io::Write,
    format: Format,
    profile: &cpu_sampler::SymbolizedProfile,
    lines: Option<&LineProfile>,
    header: &Header<'_>,
    top: usize,
) -> std::io::Result<()> {
    output::profile::write(out, format, profile, header, top)?;
    if let (Format::Text, Some(lines)) = (format, lines) {
        let total = profile.stacks.iter().map(|s| s.count).sum();
        writeln!(out)?;
        output::lines::write(out, lines, total, top)?;
    }
    Ok(())
}

mod engines;

#[cfg(test)]
mod tests;
