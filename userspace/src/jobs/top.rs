//! A live view of the hottest functions on the machine (`perf top`), or of any probe's
//! counts grouped by process (`-e`). On a terminal the view is redrawn in place; piped, one
//! snapshot per interval is printed and flushed, so it can be followed or logged.

use std::{collections::HashMap, io::IsTerminal as _, time::Duration};

use aya::maps::{MapData, RingBuf};
use tracekit_common::cpu_sampler::{DEFAULT_COUNT_MAP_ENTRIES, DEFAULT_STACK_MAP_ENTRIES};

use super::{
    RunOptions,
    aggregate::Engines,
    is_broken_pipe,
    source::{AggregateSource, CpuSampler, SampleSource},
    to_writer,
};
use crate::{
    Error, Result, bpf, caps,
    cpu_sampler::{self, ProfileOptions, RawProfile},
    engine::{
        Aggregates, KeyColumn,
        compile::{Compiled, compile},
        groups,
        request::{KeyField, Request},
    },
    output::top::{Screen, title},
    session::{self, Collector, Flow, Interval, Tracees},
    stacks::{FrameKind, UNKNOWN_SYMBOL},
    symbolize::{Symbolizer, SymbolizerOptions},
};

/// What rows are grouped by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKey {
    /// The function (the leaf frame).
    Sym,
    /// The binary or library holding it.
    Dso,
    /// The thread's command name.
    Comm,
    /// The process.
    Pid,
}

impl SortKey {
    fn header(self) -> &'static str {
        match self {
            Self::Sym => "Symbol",
            Self::Dso => "Shared Object",
            Self::Comm => "Command",
            Self::Pid => "Pid",
        }
    }
}

/// Parses `--sort` keys; with an event (`-e`), only comm and pid group events.
///
/// # Errors
/// A usage error naming the unknown key and the valid ones.
pub fn parse_sort(keys: &[String], event: bool) -> Result<Vec<SortKey>> {
    keys.iter()
        .map(|key| {
            let parsed = match key.as_str() {
                "sym" | "symbol" => SortKey::Sym,
                "dso" => SortKey::Dso,
                "comm" => SortKey::Comm,
                "pid" => SortKey::Pid,
                other => {
                    return Err(Error::usage(format!(
                        "--sort {other}: unknown key; valid: sym, dso, comm, pid"
                    )));
                }
            };
            if event && matches!(parsed, SortKey::Sym | SortKey::Dso) {
                return Err(Error::usage(format!(
                    "--sort {key}: with -e, events are grouped by comm or pid (sym and dso need CPU samples)"
                )));
            }
            Ok(parsed)
        })
        .collect()
}

/// What `top` shows.
#[derive(Clone, Debug)]
pub struct TopOptions {
    /// Samples per second per CPU (without an event).
    pub frequency_hz: u64,
    /// Count this probe instead of sampling CPUs.
    pub event: Option<String>,
    /// `--sort` as given.
    pub sort: Vec<String>,
    /// Rows shown.
    pub top: usize,
    /// The request's map sizes and attach policy (with an event).
    pub request: Request,
}

/// A stop this soon after the last snapshot shows nothing new worth a screen.
const FINAL_SNAPSHOT_MIN: Duration = Duration::from_millis(100);

enum Source<'a> {
    Samples {
        sampler: Box<dyn SampleSource + 'a>,
        /// Samples per second per CPU, for the title.
        frequency_hz: u64,
        symbolizer: Box<Symbolizer>,
    },
    Events {
        engines: Box<dyn AggregateSource + 'a>,
        columns: &'a [KeyColumn],
        what: String,
        previous: Aggregates,
    },
}

struct TopCollector<'a> {
    source: Source<'a>,
    keys: Vec<SortKey>,
    sort: &'a [String],
    limit: usize,
    scope_text: String,
    tty: bool,
    /// Standard output.
    out: Box<dyn std::io::Write + 'a>,
    /// The wall clock of titles ([`session::clock_time`]; fixed in tests).
    clock: fn() -> String,
}

impl TopCollector<'_> {
    fn snapshot(&mut self, elapsed: Duration) -> Result<Flow> {
        let (rows, total, what) = match &mut self.source {
            Source::Samples {
                sampler,
                frequency_hz,
                symbolizer,
            } => {
                let Some(interval) = sampler.take_interval()? else {
                    return Ok(Flow::Continue);
                };
                let (rows, total) = rank_samples(&interval, symbolizer, &self.keys);
                // Processes seen dead a whole interval ago have nothing left to name.
                symbolizer.forget_exited();
                let what = |noun| format!("{noun} of cpu-clock at {frequency_hz} Hz");
                (rows, total, [what("sample"), what("samples")])
            }
            Source::Events {
                engines,
                columns,
                what,
                previous,
            } => {
                let now = engines.read()?;
                let delta = now.since(previous);
                *previous = now;
                let mut rows: Vec<(u64, Vec<String>)> = groups(&delta, columns, 1)
                    .into_iter()
                    .map(|g| (g.count, g.key.iter().map(ToString::to_string).collect()))
                    .collect();
                rows.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
                let total = rows.iter().map(|(c, _)| c).sum();
                (
                    rows,
                    total,
                    [format!("{what} event"), format!("{what} events")],
                )
            }
        };
        let headers: Vec<&str> = self.keys.iter().map(|k| k.header()).collect();
        let screen = Screen {
            title: title(
                &(self.clock)(),
                total,
                [&what[0], &what[1]],
                elapsed,
                &self.scope_text,
                self.sort,
            ),
            headers: &headers,
            rows,
            total,
            limit: self.limit,
        };
        let text = screen.render();
        let tty = self.tty;
        let written = to_writer(&mut self.out, |out| {
            if tty {
                // Home and clear, then the view: redrawn in place like top(1).
                write!(out, "\x1b[H\x1b[2J{text}")
            } else {
                writeln!(out, "{text}")
            }
        });
        match written {
            Err(err) if is_broken_pipe(&err) => Ok(Flow::OutputClosed),
            other => other.map(|()| Flow::Continue),
        }
    }
}

impl Collector for TopCollector<'_> {
    fn attach(&mut self, tracees: &Tracees) -> Result<()> {
        match &mut self.source {
            Source::Samples { sampler, .. } => sampler.attach(tracees),
            Source::Events { engines, .. } => engines.attach(tracees),
        }
    }

    fn rings(&mut self) -> Result<Vec<RingBuf<MapData>>> {
        match &mut self.source {
            Source::Samples { sampler, .. } => sampler.rings(),
            Source::Events { .. } => Ok(Vec::new()),
        }
    }

    fn record(&mut self, _ring: usize, data: &[u8]) -> Flow {
        if let (Source::Samples { symbolizer, .. }, Some(pid)) =
            (&mut self.source, cpu_sampler::announced_pid(data))
        {
            symbolizer.remember_process(pid);
        }
        Flow::Continue
    }

    fn interval(&mut self, interval: Interval) -> Result<Flow> {
        // What came after the last full interval is shown too when tracing stops.
        if interval.last && interval.elapsed < FINAL_SNAPSHOT_MIN {
            return Ok(Flow::Continue);
        }
        self.snapshot(interval.elapsed)
    }

    fn detach(&mut self) -> Result<()> {
        match &mut self.source {
            Source::Samples { sampler, .. } => sampler.detach(),
            Source::Events { engines, .. } => {
                engines.detach();
                Ok(())
            }
        }
    }
}

fn rank_samples(
    raw: &RawProfile,
    symbolizer: &Symbolizer,
    keys: &[SortKey],
) -> (Vec<(u64, Vec<String>)>, u64) {
    let profile = cpu_sampler::symbolize(raw, symbolizer);
    let mut counts: HashMap<Vec<String>, u64> = HashMap::new();
    let mut total = 0;
    for stack in &profile.stacks {
        total += stack.count;
        let leaf = stack.frames.last();
        let values = keys
            .iter()
            .map(|key| match key {
                SortKey::Comm => stack.comm.clone(),
                SortKey::Pid => stack.pid.to_string(),
                SortKey::Dso => {
                    leaf.map_or(UNKNOWN_SYMBOL.to_string(), |f| f.module_name().to_string())
                }
                SortKey::Sym => match leaf {
                    Some(frame) => format!(
                        "[{}] {}",
                        if frame.kind == FrameKind::Kernel {
                            "k"
                        } else {
                            "."
                        },
                        frame.symbol
                    ),
                    None => format!("[.] {UNKNOWN_SYMBOL}"),
                },
            })
            .collect();
        *counts.entry(values).or_default() += stack.count;
    }
    let mut rows: Vec<(u64, Vec<String>)> = counts.into_iter().map(|(k, c)| (c, k)).collect();
    rows.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    (rows, total)
}

/// Runs the live view until `-d`, Ctrl-C or the traced processes' exit, one snapshot per
/// interval (`options.interval`, which the caller sets).
pub fn run(top: &TopOptions, options: &RunOptions) -> Result<()> {
    let keys = parse_sort(&top.sort, top.event.is_some())?;
    caps::require_tracing("top")?;
    let compiled: Option<Compiled> = match &top.event {
        Some(probe) => {
            let by = keys
                .iter()
                .map(|k| match k {
                    SortKey::Pid => KeyField::new("pid"),
                    _ => KeyField::new("comm"),
                })
                .collect();
            let request = Request {
                probes: vec![probe.clone()],
                by,
                ..top.request.clone()
            };
            Some(compile(&request)?)
        }
        None => None,
    };
    let source = match &compiled {
        Some(compiled) => Source::Events {
            engines: Box::new(Engines {
                specs: &compiled.specs,
                engines: Vec::new(),
                exclude_self: true,
                verbose: options.verbose,
            }),
            columns: &compiled.columns,
            what: compiled.what.clone(),
            previous: Aggregates::default(),
        },
        None => {
            let frequency_hz = bpf::check_frequency(top.frequency_hz)?;
            Source::Samples {
                sampler: Box::new(CpuSampler::new(ProfileOptions {
                    frequency_hz,
                    pids: None,
                    follow_children: false,
                    cgroup: None,
                    include_idle: false,
                    kernel_stacks: true,
                    user_stacks: true,
                    call_graph: Some(crate::unwind::CallGraph::Fp),
                    unwind_budget_bytes: 0,
                    stack_map_entries: DEFAULT_STACK_MAP_ENTRIES,
                    count_map_entries: DEFAULT_COUNT_MAP_ENTRIES,
                    by_cgroup: false,
                    time_slice_ns: None,
                })),
                frequency_hz,
                symbolizer: Box::new(Symbolizer::with_options(SymbolizerOptions {
                    inlined: false,
                    debug_info: options.debug_info.clone(),
                    ..SymbolizerOptions::default()
                })),
            }
        }
    };
    let mut collector = TopCollector {
        source,
        keys,
        sort: &top.sort,
        limit: top.top,
        scope_text: options.scope.describe(),
        tty: std::io::stdout().is_terminal(),
        out: Box::new(std::io::stdout()),
        clock: session::clock_time,
    };
    let mut session = options.session("top", true);
    if let Some(compiled) = &compiled {
        let what = compiled.what.clone();
        session.banner = Some(Box::new(move |scope| format!("Tracing {what} for {scope}")));
    }
    session::run(session, &mut collector)?;
    Ok(())
}

#[cfg(test)]
mod tests;
