//! Engine requests read as counts or histograms: `hist`, `count` and the presets. Each
//! interval (`-i`) prints what was aggregated in it; the end prints the whole run (or, with
//! `-i`, the last partial interval), writes `-o FILE`, and accounts on stderr for every
//! event that was not counted.

use std::time::Duration;

use super::{RunOptions, is_broken_pipe, source::AggregateSource, to_writer};
use crate::{
    Result, caps,
    engine::{
        Aggregates, Engine, EngineSpec, Targets,
        compile::{Compiled, compile},
        groups,
        request::Request,
    },
    output::{
        self, Format,
        aggregates::{self, Report, Table},
        heatmap,
    },
    session::{self, Collector, Flow, Interval, Scope, Tracees},
    unwind::{UnwindTables, Unwinder},
};

/// One command's request and how to show what it gathered.
#[derive(Clone, Debug)]
pub struct AggregateJob {
    /// The subcommand, for messages and JSON.
    pub command: &'static str,
    /// What is traced, for "Tracing ..."; `{probes}` in it stands for the compiled probes'
    /// description, and `None` is that description alone.
    pub what: Option<String>,
    /// The request.
    pub request: Request,
    /// How to show it.
    pub report: Report,
    /// The filter is the tool's own, not the user's (`runqlat` skips switches to the idle
    /// task): the events it drops are not events of the tool, so they are not reported.
    pub tool_filter: bool,
}

impl AggregateJob {
    /// With `Some(precision)` (`--percentiles`), the job's histogram becomes a log-linear
    /// one with `precision` sub-bucket bits, reported with its percentiles; a count with a
    /// value (`syscount --latency`) becomes one histogram per group, in `count_unit`
    /// (values divided by the count's sum divisor), sorted by count. `None` leaves it as is.
    ///
    /// # Errors
    /// A usage error when the job has no value to take percentiles of, or is linear.
    pub fn percentiles(mut self, precision: Option<u32>, count_unit: &str) -> Result<Self> {
        use crate::engine::request::Shape;
        let Some(precision) = precision else {
            return Ok(self);
        };
        let command = self.command;
        let (unit, div, top) = match (&self.report, self.request.shape) {
            (Report::Log2 { unit }, Shape::Log2) => (unit.clone(), self.request.value_div, None),
            (
                Report::Counts {
                    sum: Some((_, div)),
                    top,
                    ..
                },
                Shape::Count,
            ) if self.request.value.is_some() => {
                self.request.value_div = (*div as u64).max(1);
                (count_unit.to_string(), self.request.value_div, *top)
            }
            (Report::Linear { .. }, _) => {
                return Err(crate::Error::usage(format!(
                    "{command} --percentiles: takes percentiles of its own log-linear \
                     histogram; leave out --linear"
                )));
            }
            _ => {
                return Err(crate::Error::usage(format!(
                    "{command} --percentiles: needs a value to take percentiles of (hist: \
                     --value FIELD; syscount: --latency)"
                )));
            }
        };
        self.request.shape = Shape::LogLinear { precision };
        self.report = Report::LogLinear {
            unit,
            precision,
            div,
            top,
        };
        Ok(self)
    }
}

/// Loaded engines, read at intervals and at the end.
pub(crate) struct Engines<'a> {
    pub(crate) specs: &'a [EngineSpec],
    pub(crate) engines: Vec<Engine>,
    /// Leave tracekit's own events out (needed when maps are read, or events streamed,
    /// while attached).
    pub(crate) exclude_self: bool,
    pub(crate) verbose: u8,
}

impl Engines<'_> {
    /// Loads and attaches every spec for `tracees`.
    pub(crate) fn attach(&mut self, tracees: &Tracees) -> Result<()> {
        let targets = Targets {
            pids: tracees.pids.clone(),
            follow_children: tracees.follow_children,
            exclude_self: self.exclude_self,
            cgroup: tracees.cgroup,
        };
        for spec in self.specs {
            let mut engine = Engine::load(spec, &targets)?;
            engine.attach(spec)?;
            if self.verbose >= 1 {
                for note in engine.notes() {
                    eprintln!("tracekit: attached {note}");
                }
            }
            self.engines.push(engine);
        }
        Ok(())
    }

    /// Every engine's aggregates, merged.
    pub(crate) fn read(&self) -> Result<Aggregates> {
        let mut all = Aggregates::default();
        for engine in &self.engines {
            all.merge(engine.read()?);
        }
        Ok(all)
    }

    pub(crate) fn detach(&mut self) {
        for engine in &mut self.engines {
            engine.detach();
        }
    }

    /// The DWARF unwinders of the attached engines that walk user stacks with one
    /// ([`EngineSpec::user_unwind`]), with at most `budget_bytes` of kernel memory for the
    /// tables of each: the tables of `program` (`-- CMD`'s) and `pids` are built first, the
    /// rest (the whole machine without `pids`) on their own thread, as the sampler does.
    pub(crate) fn start_unwinders(
        &mut self,
        budget_bytes: u64,
        program: Option<&std::path::Path>,
        pids: Option<&[u32]>,
    ) -> Vec<Unwinder> {
        let mut unwinders = Vec::new();
        for engine in &mut self.engines {
            let Some(kernel) = engine.take_unwind_tables() else {
                continue;
            };
            let mut unwinder = Unwinder::new(UnwindTables::new(kernel, budget_bytes));
            unwinder.prepare(program, pids);
            unwinder.start(pids.is_none());
            unwinders.push(unwinder);
        }
        unwinders
    }
}

impl AggregateSource for Engines<'_> {
    fn honours_cgroup(&self) -> bool {
        true
    }

    fn attach(&mut self, tracees: &Tracees) -> Result<()> {
        Engines::attach(self, tracees)
    }

    fn read(&self) -> Result<Aggregates> {
        Engines::read(self)
    }

    fn detach(&mut self) {
        Engines::detach(self);
    }
}

/// An aggregate job while it runs: reads `source` at each interval and prints to `out`.
struct AggregateCollector<'a, S, W> {
    source: S,
    table: Table<'a>,
    slots: u32,
    json: bool,
    previous: Aggregates,
    /// `-o FILE.svg`: each interval's histogram, summed over groups, in display rows.
    heat: Option<Vec<heatmap::Column>>,
    /// Milliseconds from the start to the current interval's start.
    heat_ms: u64,
    /// Standard output.
    out: W,
    /// The wall clock of interval headers ([`session::clock_time`]; fixed in tests).
    clock: fn() -> String,
    /// Clear the terminal before each interval, as `top` does (tcptop on a terminal).
    clear: bool,
}

/// How a run ended, for the end-of-run output.
struct Ended {
    /// From attaching to the stop.
    elapsed: Duration,
    /// Why it stopped ([`session::Finished::reason`]).
    reason: String,
    /// The scope as messages show it.
    scope_text: String,
    /// Whether the scope was `-a`.
    all: bool,
}

impl<'a, S: AggregateSource, W: std::io::Write> AggregateCollector<'a, S, W> {
    fn new(source: S, table: Table<'a>, slots: u32, json: bool, heat: bool, out: W) -> Self {
        Self {
            source,
            table,
            slots,
            json,
            previous: Aggregates::default(),
            heat: heat.then(Vec::new),
            heat_ms: 0,
            out,
            clock: session::clock_time,
            clear: false,
        }
    }

    /// Prints what was aggregated since the last interval.
    fn print_interval(&mut self, elapsed: Duration) -> Result<Flow> {
        let now = self.source.read()?;
        let delta = now.since(&self.previous);
        self.previous = now;
        let shown = groups(&delta, self.table.columns, self.slots);
        if let Some(columns) = &mut self.heat {
            let length_ms = elapsed.as_millis() as u64;
            columns.push(heatmap::Column {
                clock: (self.clock)(),
                start_ms: self.heat_ms,
                length_ms,
                counts: heat_rows(self.table.report, &shown, self.slots),
            });
            self.heat_ms += length_ms;
        }
        let format = if self.json {
            Format::Json
        } else {
            Format::Text
        };
        let (json, table, clock) = (self.json, self.table, (self.clock)());
        let clear = self.clear && !json;
        let written = to_writer(&mut self.out, |out| {
            if clear {
                // Cursor home, erase the screen.
                write!(out, "\x1b[H\x1b[2J")?;
            }
            if !json {
                writeln!(out, "{}", aggregates::interval_header(&clock, elapsed))?;
            }
            aggregates::write(out, format, &table, &shown, &delta.stats, elapsed)?;
            if !json {
                writeln!(out)?;
            }
            Ok(())
        });
        match written {
            Err(err) if is_broken_pipe(&err) => Ok(Flow::OutputClosed),
            other => other.map(|()| Flow::Continue),
        }
    }
}

impl<S: AggregateSource, W: std::io::Write> Collector for AggregateCollector<'_, S, W> {
    fn attach(&mut self, tracees: &Tracees) -> Result<()> {
        self.source.attach(tracees)
    }

    fn honours_cgroup(&self) -> bool {
        self.source.honours_cgroup()
    }

    fn interval(&mut self, interval: Interval) -> Result<Flow> {
        self.print_interval(interval.elapsed)
    }

    fn detach(&mut self) -> Result<()> {
        self.source.detach();
        Ok(())
    }
}

impl<S: AggregateSource, W: std::io::Write> AggregateCollector<'_, S, W> {
    /// The end of a run: writes the `-o` files and (without `-i`, whose last interval is
    /// printed already) the whole run to `out`; returns what goes to stderr (the summary
    /// of what was counted, dropped and missed).
    fn finish(
        &mut self,
        job: &AggregateJob,
        options: &RunOptions,
        outputs: &[(std::path::PathBuf, FileOutput)],
        ended: &Ended,
        all_tasks: bool,
    ) -> Result<String> {
        let table = self.table;
        let all = self.source.read()?;
        let elapsed = ended.elapsed;
        // Every file is drawn from the same values: the heat map and the JSON's intervals.
        let intervals = self
            .heat
            .as_deref()
            .map(|columns| heat_intervals(&table, columns, &ended.scope_text));
        for (path, output) in outputs {
            match (output, &intervals) {
                (FileOutput::HeatMap, Some(intervals)) => {
                    let title = heat_map_title(table.command, table.traced);
                    let unit = table.report.unit().unwrap_or("");
                    output::write_file(path, |out| {
                        std::io::Write::write_all(
                            out,
                            heatmap::svg(&intervals.map(&title, unit)).as_bytes(),
                        )
                    })?;
                }
                (FileOutput::HeatMap, None) => {}
                (FileOutput::Report(format), _) => {
                    let whole = groups(&all, table.columns, self.slots);
                    output::write_file(path, |out| {
                        aggregates::write_with_intervals(
                            out,
                            *format,
                            &table,
                            &whole,
                            &all.stats,
                            elapsed,
                            intervals.as_ref(),
                        )
                    })?;
                }
            }
        }
        // With -i, the session has printed the last interval already.
        if options.interval.is_none() && (options.json || outputs.is_empty()) {
            let format = if options.json {
                Format::Json
            } else {
                Format::Text
            };
            let shown = groups(&all, table.columns, self.slots);
            to_writer(&mut self.out, |out| {
                aggregates::write(out, format, &table, &shown, &all.stats, elapsed)
            })?;
        }
        let mut stats = all.stats;
        if job.tool_filter {
            stats.filtered = 0;
        }
        let mut stderr =
            aggregates::summary(&stats, elapsed, &ended.reason, all_tasks && !ended.all);
        // A start keyed by a request (biolatency's) should end; one keyed by a thread may
        // still be in flight (a blocked syscall, a sleeping task); a kept one never ends.
        if job
            .request
            .start
            .as_ref()
            .is_some_and(|start| !start.per_thread && !start.keep)
        {
            stderr.push_str(&aggregates::unended(&stats));
        }
        Ok(stderr)
    }
}

/// A heat map column's rows: every group's histogram summed, log-linear ones folded into
/// log2 slots (the rows a reader knows; percentiles keep the fine buckets).
fn heat_rows(report: &Report, groups: &[crate::engine::Group], slots: u32) -> Vec<u64> {
    let mut sum = vec![0u64; slots as usize];
    for group in groups {
        for (cell, &n) in sum.iter_mut().zip(&group.slots) {
            *cell += n;
        }
    }
    match report {
        Report::LogLinear { precision, .. } => {
            crate::output::percentiles::fold_to_log2(&sum, *precision)
        }
        _ => sum,
    }
}

/// The heat map of `columns`, as the JSON saves it: rows from the lowest to the highest
/// bucket any column has events in (the first bucket when none has).
fn heat_intervals(
    table: &Table<'_>,
    columns: &[heatmap::Column],
    scope_text: &str,
) -> heatmap::Intervals {
    let rows = columns.iter().map(|c| c.counts.len()).max().unwrap_or(0);
    let used = |row: usize| {
        columns
            .iter()
            .any(|c| c.counts.get(row).is_some_and(|&n| n > 0))
    };
    let first = (0..rows).find(|&r| used(r)).unwrap_or(0);
    let last = (0..rows).rev().find(|&r| used(r)).unwrap_or(first);
    let trimmed: Vec<heatmap::Column> = columns
        .iter()
        .map(|c| heatmap::Column {
            counts: (first..=last)
                .map(|r| c.counts.get(r).copied().unwrap_or(0))
                .collect(),
            ..c.clone()
        })
        .collect();
    let labels = (first..=last)
        .map(|row| match table.report {
            Report::Linear { .. } => {
                let (low, high) = aggregates::slot_bounds(table.report, row, rows);
                let label = if row == 0 {
                    format!("< {}", high + 1)
                } else if row + 1 == rows {
                    format!(">= {low}")
                } else {
                    format!("{low} -> {high}")
                };
                heatmap::Row { low, high, label }
            }
            _ => {
                let (low, high) = tracekit_common::engine::log2_slot_bounds(row as u32);
                heatmap::Row {
                    low: low.into(),
                    high: high.into(),
                    label: format!("{low} -> {high}"),
                }
            }
        })
        .collect();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    let mut place = format!("host {host}, {scope_text}");
    if !table.columns.is_empty() {
        let names: Vec<&str> = table.columns.iter().map(|c| c.name.as_str()).collect();
        place.push_str(&format!("; every {} summed", names.join(", ")));
    }
    heatmap::Intervals {
        place,
        rows: labels,
        columns: trimmed,
    }
}

/// The heat map's title, from fields the histogram JSON keeps too (`command`, `traced`).
pub fn heat_map_title(command: &str, traced: &str) -> String {
    format!("{command}: {traced}")
}

/// What one `-o FILE` of an aggregate command writes.
enum FileOutput {
    /// `.svg`: the heat map (histograms with `-i`).
    HeatMap,
    /// `.txt` or `.json`: the whole run (JSON with `-i`: and its intervals).
    Report(Format),
}

/// The `-o` files, in order, and what each writes; usage errors for what `job` cannot
/// write.
fn file_outputs(
    job: &AggregateJob,
    options: &RunOptions,
) -> Result<Vec<(std::path::PathBuf, FileOutput)>> {
    let command = job.command;
    let mut outputs = Vec::new();
    for path in options.output.iter().chain(&options.more_outputs) {
        let svg = path
            .extension()
            .is_some_and(|ext| ext.eq_ignore_ascii_case("svg"));
        if svg {
            if matches!(
                job.report,
                Report::Counts { .. }
                    | Report::Split(_)
                    | Report::PageCache { .. }
                    | Report::Pattern
            ) {
                return Err(crate::Error::usage(format!(
                    "-o FILE.svg: {command} draws heat maps of histograms; this one counts \
                     (give --value FIELD, or write .txt or .json)"
                )));
            }
            if options.interval.is_none() {
                return Err(crate::Error::usage(format!(
                    "-o FILE.svg: {command}'s heat map has one column per interval; add -i \
                     SECONDS"
                )));
            }
            outputs.push((path.clone(), FileOutput::HeatMap));
        } else {
            // Each file through the shared check (it refuses the formats only stacks write).
            let one = RunOptions {
                output: Some(path.clone()),
                more_outputs: Vec::new(),
                ..options.clone()
            };
            if let Some(format) = one.file_format(command, false)? {
                outputs.push((path.clone(), FileOutput::Report(format)));
            }
        }
    }
    Ok(outputs)
}

/// Histogram slots per group (1 for counts), as the plans keep them.
fn slots_of(report: &Report, compiled: &Compiled) -> u32 {
    match report {
        Report::Counts { .. } | Report::Split(_) | Report::PageCache { .. } | Report::Pattern => 1,
        _ => compiled
            .specs
            .first()
            .map_or(1, |spec| spec.main.plan.slots),
    }
}

/// Runs `job` over `options`' scope and timing, printing its aggregates.
pub fn run(job: AggregateJob, options: &RunOptions) -> Result<()> {
    let outputs = file_outputs(&job, options)?;
    // A JSON file of a histogram with -i keeps the intervals too.
    let heat = options.interval.is_some() && job.report.unit().is_some() && !outputs.is_empty();
    // Privileges first: without them, reading tracefs fails with a less useful message.
    caps::require_tracing(job.command)?;
    let compiled = compile(&job.request)?;
    let what = job.what.as_deref().map_or_else(
        || compiled.what.clone(),
        |what| what.replace("{probes}", &compiled.what),
    );
    let table = Table {
        command: job.command,
        traced: &what,
        columns: &compiled.columns,
        report: &job.report,
    };
    let mut collector = AggregateCollector::new(
        Engines {
            specs: &compiled.specs,
            engines: Vec::new(),
            // Without intervals the maps are read after detaching, so tracekit's own
            // reads are never seen; with them, its events must be filtered in the kernel.
            exclude_self: options.interval.is_some(),
            verbose: options.verbose,
        },
        table,
        slots_of(&job.report, &compiled),
        options.json,
        heat,
        std::io::stdout(),
    );
    collector.clear = (matches!(&job.report, Report::Split(split) if split.clear)
        || matches!(&job.report, Report::Counts { clear: true, .. }))
        && std::io::IsTerminal::is_terminal(&std::io::stdout());
    let mut session = options.session(job.command, true);
    let banner_what = what.clone();
    session.banner = Some(Box::new(move |scope| {
        format!("Tracing {banner_what} for {scope}")
    }));
    let finished = session::run(session, &mut collector)?;
    let ended = Ended {
        elapsed: finished.elapsed,
        reason: finished.reason(),
        scope_text: finished.scope_text.clone(),
        all: matches!(finished.scope, Scope::All),
    };
    // Other tasks' ends are expected then; with -a they are in-flight requests.
    let all_tasks = compiled
        .specs
        .iter()
        .any(|spec| spec.main.plan.all_tasks != 0);
    let stderr = collector.finish(&job, options, &outputs, &ended, all_tasks)?;
    eprint!("{stderr}");
    finished.print_workload_exit();
    session::print_usage(options.verbose, finished.attached_after);
    Ok(())
}

#[cfg(test)]
mod tests;
