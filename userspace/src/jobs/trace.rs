//! One line per event, with the fields asked for, streamed from the kernel through a ring
//! buffer (`perf trace`, bcc `trace`). Events the ring buffer could not hold are counted and
//! reported; `kstack`/`ustack` among the printed fields print each event's stacks. The run
//! ends when whoever reads the output goes away (`| head`).

use aya::maps::{MapData, RingBuf};
use tracekit_common::engine::operand;

pub(crate) use self::{
    event::{TraceEvent, UNREADABLE},
    fields::field_text,
};
use self::{
    fields::{comm_str, write_field},
    writer::Writer,
};
use super::{
    RunOptions,
    aggregate::Engines,
    events,
    tools::{Column, EventTime, EventsJob},
};
use crate::{
    Error, Result, caps,
    cpu_sampler::announced_pid,
    engine::{
        StackReader,
        compile::{Compiled, EventNames, Printed, compile_each},
        request::Request,
    },
    output::{self, Format},
    probe::fields::STACKS,
    session::{self, Collector, Flow, Tracees, monotonic_ns},
    stacks::{Frame, UNKNOWN_SYMBOL},
    symbolize::{Symbolizer, SymbolizerOptions, kernel_function},
    unwind::{CallGraph, Unwinder},
};

/// What one ring buffer carries.
enum Ring {
    /// Trace records of engine `engine`.
    Records { engine: usize },
    /// Process announcements (for user stacks).
    Announce,
}

/// How one engine's records render.
struct EngineView {
    prints: Vec<Printed>,
    events: EventNames,
    reader: Option<StackReader>,
    stacks: (Option<u32>, Option<u32>),
}

struct TraceCollector<'a> {
    engines: Engines<'a>,
    compiled: &'a Compiled,
    stacks: (bool, bool),
    json: bool,
    writer: Writer,
    views: Vec<EngineView>,
    rings: Vec<Ring>,
    symbolizer: Symbolizer,
    start_ns: u64,
    /// CLOCK_MONOTONIC and CLOCK_REALTIME read together at the start: events' wall clock.
    clocks: (u64, u64),
    printed: u64,
    write_error: Option<std::io::Error>,
    /// When exited processes were last looked for ([`monotonic_ns`]): those found then
    /// are forgotten at the next look, once no record of theirs can still be unread.
    dead_looked_ns: u64,
    /// By ring: every record stamped before this time ([`monotonic_ns`]) has been read
    /// ([`merge::read_past`]).
    read_past_ns: Vec<u64>,
    /// The engines' DWARF unwinders (user stacks without `--call-graph fp`).
    unwinders: Vec<Unwinder>,
    unwind_budget_bytes: u64,
    /// `-- CMD`'s program (`argv[0]`): its unwind tables are built before it runs.
    program: Option<std::path::PathBuf>,
    /// An event tool's columns, by engine, instead of `trace`'s layout.
    columns: Option<(Vec<Vec<Column>>, EventTime)>,
    /// With several rings of records, their lines until every ring has been read past
    /// them ([`merge`]): the engines' events print in time order.
    merge: Option<merge::Merge>,
    /// The line being made, kept for its capacity.
    line: String,
    /// The column header, until it is printed.
    header: Option<String>,
}

impl Collector for TraceCollector<'_> {
    fn honours_cgroup(&self) -> bool {
        true
    }

    fn attach(&mut self, tracees: &Tracees) -> Result<()> {
        self.engines.attach(tracees)?;
        self.unwinders = self.engines.start_unwinders(
            self.unwind_budget_bytes,
            self.program.as_deref(),
            tracees.pids.as_deref(),
        );
        Ok(())
    }

    fn rings(&mut self) -> Result<Vec<RingBuf<MapData>>> {
        self.start_ns = monotonic_ns();
        self.clocks = events::clocks_now();
        let mut rings = Vec::new();
        for (index, engine) in self.engines.engines.iter_mut().enumerate() {
            let plan = &self.compiled.specs[index].main.plan;
            self.views.push(EngineView {
                prints: self.compiled.prints[index].clone(),
                events: self.compiled.events[index].clone(),
                reader: if self.stacks.0 || self.stacks.1 {
                    Some(engine.stack_reader()?)
                } else {
                    None
                },
                stacks: stack_operand_indices(plan),
            });
            rings.push(engine.take_trace()?);
            self.rings.push(Ring::Records { engine: index });
            if self.stacks.1 {
                rings.push(engine.take_announce()?);
                self.rings.push(Ring::Announce);
            }
        }
        self.read_past_ns = vec![0; rings.len()];
        Ok(rings)
    }

    fn exec_stopped(&mut self, pid: u32) {
        for unwinder in &mut self.unwinders {
            unwinder.load_process_now(pid, crate::session::workload::EXEC_HOLD_LIMIT);
        }
    }

    fn record(&mut self, ring: usize, data: &[u8]) -> Flow {
        match self.rings[ring] {
            Ring::Announce => {
                if let Some(pid) = announced_pid(data) {
                    // Its maps first, while it lives; its tables are built on their own thread.
                    self.symbolizer.remember_process(pid);
                    for unwinder in &mut self.unwinders {
                        unwinder.load_process(pid);
                    }
                }
                self.forget_exited();
                Flow::Continue
            }
            Ring::Records { engine } => {
                if let Some(err) = &self.write_error {
                    return if err.kind() == std::io::ErrorKind::BrokenPipe {
                        Flow::OutputClosed
                    } else {
                        Flow::Continue
                    };
                }
                let Some(record) = TraceEvent::decode(data) else {
                    return Flow::Continue;
                };
                self.read_past_ns[ring] =
                    self.read_past_ns[ring].max(merge::read_past(record.ts_ns));
                let mut line = std::mem::take(&mut self.line);
                line.clear();
                match &self.columns {
                    Some((columns, time)) => {
                        let columns = &columns[engine.min(columns.len() - 1)];
                        let view = &self.views[engine];
                        let event = event_name(&record, view);
                        let since_start_s = record.ts_ns.saturating_sub(self.start_ns) as f64 / 1e9;
                        let clock = if *time == EventTime::Clock {
                            events::clock_at(events::wall_s(record.ts_ns, self.clocks))
                        } else {
                            String::new()
                        };
                        let stacks = EventStacks::of(&record, view, &self.symbolizer);
                        if self.json {
                            let mut object = events::object(
                                &record,
                                &view.prints,
                                &event,
                                columns,
                                *time,
                                since_start_s,
                                &clock,
                            );
                            stacks.insert_into(&mut object);
                            line.push_str(&serde_json::Value::Object(object).to_string());
                            line.push('\n');
                        } else {
                            let mut text = events::line(
                                &record,
                                &view.prints,
                                &event,
                                columns,
                                *time,
                                since_start_s,
                                &clock,
                                false,
                            );
                            stacks.push_text(&mut text);
                            line.push_str(&text);
                        }
                    }
                    None => render_into(
                        &mut line,
                        &record,
                        &self.views[engine],
                        self.start_ns,
                        self.json,
                        &self.symbolizer,
                    ),
                }
                if let Some(merge) = self.merge.as_mut() {
                    merge.push(record.ts_ns, line);
                    return self.release(false);
                }
                let offered = self.writer.offer(&line);
                self.line = line;
                match offered {
                    Ok(queued) => {
                        self.printed += 1;
                        if queued { Flow::Continue } else { Flow::Full }
                    }
                    Err(err) => {
                        let closed = err.kind() == std::io::ErrorKind::BrokenPipe;
                        self.write_error = Some(err);
                        if closed {
                            Flow::OutputClosed
                        } else {
                            Flow::Continue
                        }
                    }
                }
            }
        }
    }

    fn names_user_frames(&self) -> bool {
        self.stacks.1
    }

    fn exiting(&mut self, pid: u32) {
        self.symbolizer.remember_process(pid);
    }

    fn ready(&mut self, ring: usize, wait: bool) -> bool {
        if !matches!(self.rings[ring], Ring::Records { .. }) || self.write_error.is_some() {
            return true;
        }
        self.writer.ready(wait).unwrap_or_else(|err| {
            self.write_error = Some(err);
            true
        })
    }

    fn started(&mut self) -> Result<()> {
        if let Some(header) = self.header.take() {
            let printed = self
                .writer
                .offer(&header)
                .and_then(|_| self.writer.flush())
                .and_then(|_| self.writer.ready(true));
            if let Err(err) = printed {
                self.write_error = Some(err);
            }
        }
        Ok(())
    }

    fn ring_poll(&self) -> Option<std::time::Duration> {
        Some(std::time::Duration::from_millis(
            tracekit_common::engine::TRACE_POLL_MS,
        ))
    }

    fn caught_up(&mut self, ring: usize, before_ns: u64) {
        self.read_past_ns[ring] = self.read_past_ns[ring].max(merge::read_past(before_ns));
        // Lines every ring has been read past go out now; the flush below sends them.
        let _ = self.release(false);
        // Nothing more to read for now: what was gathered is printed now, not when the
        // next chunk fills.
        if matches!(self.rings[ring], Ring::Records { .. })
            && self.write_error.is_none()
            && let Err(err) = self.writer.flush()
        {
            self.write_error = Some(err);
        }
        self.forget_exited();
    }

    fn detach(&mut self) -> Result<()> {
        self.engines.detach();
        Ok(())
    }
}

/// How much earlier than a record another CPU's record may be stamped and still be
/// committed after it (a record is stamped, then reserved and written with preemption off).
const COMMIT_SKEW_NS: u64 = 10_000_000;

impl TraceCollector<'_> {
    /// The time every ring of records has been read past ([`Self::read_past_ns`]'s least);
    /// `None` without a ring of records.
    fn read_past_every_ring(&self) -> Option<u64> {
        self.rings
            .iter()
            .zip(&self.read_past_ns)
            .filter(|(ring, _)| matches!(ring, Ring::Records { .. }))
            .map(|(_, &past)| past)
            .min()
    }

    /// Forgets the processes found exited at the last look, at most once a second, once every
    /// ring has been read past that look: a trace that lags (a slow pipe, a flood) still
    /// names the stacks of processes that exited while their records waited. A long trace
    /// under churn then keeps only the processes whose records may still come.
    fn forget_exited(&mut self) {
        let read_past = self.read_past_every_ring().unwrap_or(u64::MAX);
        let now = monotonic_ns();
        if read_past > self.dead_looked_ns && now - self.dead_looked_ns >= 1_000_000_000 {
            self.symbolizer.forget_exited();
            self.dead_looked_ns = monotonic_ns();
        }
    }
}

/// Prints `request`'s events as they happen (its shape must be [`crate::engine::request::
/// Shape::Trace`]; `kstack`/`ustack` among its printed fields print stacks). User stacks are
/// walked as `call_graph` says (`None`: by the kernel's DWARF unwinder, [`crate::unwind`],
/// with at most `unwind_budget_bytes` of kernel memory for its tables).
pub fn run(
    request: &Request,
    call_graph: Option<CallGraph>,
    unwind_budget_bytes: u64,
    options: &RunOptions,
) -> Result<()> {
    run_in(&[request], call_graph, unwind_budget_bytes, options, None)
}

/// Prints the events of several requests as one stream, in time order: probe groups whose
/// fields are read differently (`trace PROBE{FIELDS}`), each a request of its own. The
/// header names each request's fields when they differ ([`header_each`]).
pub fn run_each(
    requests: &[Request],
    call_graph: Option<CallGraph>,
    unwind_budget_bytes: u64,
    options: &RunOptions,
) -> Result<()> {
    let requests: Vec<&Request> = requests.iter().collect();
    run_in(&requests, call_graph, unwind_budget_bytes, options, None)
}

/// Prints an event tool's events in its columns ([`crate::jobs::events`]).
pub fn run_events(job: &EventsJob, options: &RunOptions) -> Result<()> {
    // Groups the kernel lacks (no tracepoint, a type not in its BTF) that the tool runs
    // without are left out.
    let (groups, left_out) = events::groups(job, |request| {
        crate::engine::compile::compile(request).map(|_| ())
    });
    if options.verbose >= 1 {
        for line in left_out.iter().chain(&events::notes(&job.columns)) {
            eprintln!("{line}");
        }
    }
    let (requests, columns): (Vec<&Request>, Vec<&[Column]>) = groups.into_iter().unzip();
    run_in(
        &requests,
        None,
        // User stacks (futexctn --stacks) are walked by the DWARF unwinder, with its
        // default budget: with none, every binary fell back to frame pointers.
        tracekit_common::unwind::DEFAULT_TABLE_BUDGET_BYTES,
        options,
        // Stacks print below each line, as `trace` prints them, not as a column.
        Some((
            columns
                .iter()
                .map(|columns| {
                    columns
                        .iter()
                        .filter(|c| !STACKS.contains(&c.field))
                        .cloned()
                        .collect()
                })
                .collect(),
            job.time,
        )),
    )
}

/// Runs `requests` (at least one), their records rendered in `columns` (by request) or
/// in `trace`'s layout.
fn run_in(
    requests: &[&Request],
    call_graph: Option<CallGraph>,
    unwind_budget_bytes: u64,
    options: &RunOptions,
    columns: Option<(Vec<Vec<Column>>, EventTime)>,
) -> Result<()> {
    let file_format = options.file_format("trace", false)?;
    caps::require_tracing("trace")?;
    let (mut compiled, origin) = compile_each(requests)?;
    let prints = |stack: &str| requests.iter().any(|r| r.print.iter().any(|p| p == stack));
    let stacks = (prints(STACKS[0]), prints(STACKS[1]));
    // By engine, the columns of the request it came from.
    let columns = columns.map(|(columns, time)| {
        let by_engine: Vec<Vec<Column>> = origin.iter().map(|&i| columns[i].clone()).collect();
        (by_engine, time)
    });
    for spec in &mut compiled.specs {
        spec.user_unwind = call_graph != Some(CallGraph::Fp);
    }
    let compiled = compiled;
    let json = options.json || file_format == Some(Format::Json);
    let out: Box<dyn std::io::Write + Send> = match options.output.as_deref() {
        Some(path) => Box::new(output::create(path)?),
        None => Box::new(std::io::BufWriter::new(std::io::stdout())),
    };
    let writer = Writer::spawn(out)?;
    // Printed once attached, under the "Tracing ..." line, as bcc's tools print theirs.
    let header = (!json).then(|| match &columns {
        Some((columns, time)) => events::header(&columns[0], *time),
        None => header_each(requests),
    });
    let merge = (compiled.specs.len() > 1).then(merge::Merge::default);
    let mut collector = TraceCollector {
        engines: Engines {
            specs: &compiled.specs,
            engines: Vec::new(),
            exclude_self: true,
            verbose: options.verbose,
        },
        compiled: &compiled,
        stacks,
        json,
        writer,
        views: Vec::new(),
        rings: Vec::new(),
        symbolizer: Symbolizer::with_options(SymbolizerOptions {
            inlined: false,
            debug_info: options.debug_info.clone(),
            ..SymbolizerOptions::default()
        }),
        start_ns: 0,
        clocks: (0, 0),
        printed: 0,
        write_error: None,
        dead_looked_ns: monotonic_ns(),
        read_past_ns: Vec::new(),
        unwinders: Vec::new(),
        unwind_budget_bytes,
        program: options.command_program(),
        columns,
        merge,
        line: String::new(),
        header,
    };
    let mut session = options.session("trace", true);
    let what = compiled.what.clone();
    session.banner = Some(Box::new(move |scope| format!("Tracing {what} for {scope}")));
    let finished = session::run(session, &mut collector)?;
    // The rings are read to their end: what the merge still holds goes out.
    let _ = collector.release(true);
    let flushed = collector.writer.finish();
    if let Some(err) = collector.write_error.take().or(flushed.err())
        && err.kind() != std::io::ErrorKind::BrokenPipe
    {
        return Err(Error::Runtime {
            what: "writing the trace".into(),
            source: Some(Box::new(err)),
        });
    }
    let stats = collector.engines.read()?.stats;
    eprint!("{}", summary(collector.printed, finished.elapsed, &stats));
    if options.verbose >= 1 {
        for unwinder in &mut collector.unwinders {
            eprintln!("tracekit: {}", unwinder.tables().summary());
        }
    }
    session::print_usage(options.verbose, finished.attached_after);
    Ok(())
}

/// The header of several requests' lines: [`header`] when they print the same fields;
/// otherwise the fixed columns, `FIELDS`, and a `# PROBES: FIELDS` line per request that
/// prints any, as each line's fields are those of the probe that fired.
fn header_each(requests: &[&Request]) -> String {
    let fields = |request: &Request| -> Vec<String> {
        request
            .print
            .iter()
            .filter(|p| !STACKS.contains(&p.as_str()))
            .cloned()
            .collect()
    };
    let first = fields(requests[0]);
    if requests.iter().all(|request| fields(request) == first) {
        return header(&requests[0].print);
    }
    let mut text = header(&["FIELDS".to_string()]);
    for request in requests {
        let fields = fields(request);
        if !fields.is_empty() {
            text.push_str(&format!(
                "# {}: {}\n",
                request.probes.join(","),
                fields.join(" ")
            ));
        }
    }
    text
}

/// The text output's column header: the fixed columns, then the printed fields (stacks
/// print below each line instead).
fn header(print: &[String]) -> String {
    let mut header = format!(
        "{:<12} {:<16} {:>7} {:>7} {:<28}",
        "TIME(s)", "COMM", "PID", "TID", "EVENT"
    );
    for name in print.iter().filter(|p| !STACKS.contains(&p.as_str())) {
        header.push(' ');
        header.push_str(name);
    }
    format!("{}\n", header.trim_end())
}

/// The end-of-run account on stderr: events printed, in how long, and what was lost.
fn summary(
    printed: u64,
    elapsed: std::time::Duration,
    stats: &crate::engine::EngineStats,
) -> String {
    let mut text = format!(
        "Printed {} in {:.2} s{}.\n",
        output::plural(printed, "event", "events"),
        elapsed.as_secs_f64(),
        if stats.filtered > 0 {
            format!(" ({} more did not pass the filter)", stats.filtered)
        } else {
            String::new()
        }
    );
    let mut lost = Vec::new();
    if stats.trace_lost > 0 {
        lost.push(format!(
            "{} to a full ring buffer",
            output::plural(stats.trace_lost, "event", "events")
        ));
    }
    if stats.stack_map_full + stats.stack_errors > 0 {
        lost.push(output::plural(
            stats.stack_map_full + stats.stack_errors,
            "stack",
            "stacks",
        ));
    }
    if stats.read_errors > 0 {
        lost.push(format!(
            "{} whose fields could not be read",
            output::plural(stats.read_errors, "event", "events")
        ));
    }
    lost.extend(output::aggregates::missed_text(stats));
    text.push_str(&output::aggregates::lost_line(&lost));
    text
}

/// Operand indices of the kernel and user stacks in a plan.
fn stack_operand_indices(plan: &tracekit_common::engine::Plan) -> (Option<u32>, Option<u32>) {
    let find = |kind| {
        plan.operands[..plan.n_operands as usize]
            .iter()
            .position(|o| o.kind == kind)
            .map(|i| i as u32)
    };
    (find(operand::KERNEL_STACK), find(operand::USER_STACK))
}

/// The probe that fired, by the record's event index or function address.
fn event_name<'a>(record: &TraceEvent<'_>, view: &'a EngineView) -> std::borrow::Cow<'a, str> {
    match &view.events {
        EventNames::ByIndex(names) => match names.get(&record.event) {
            Some(name) => name.as_str().into(),
            None => format!("event {}", record.event).into(),
        },
        EventNames::ByFunctionIp(operand) => {
            kernel_function(record.ints[*operand as usize % record.ints.len()]).into()
        }
    }
}

/// An event's stacks, symbolized (leaf last); `None` for a stack its plan does not take.
struct EventStacks {
    kernel: Option<Vec<Frame>>,
    user: Option<Vec<Frame>>,
}

impl EventStacks {
    fn of(record: &TraceEvent<'_>, view: &EngineView, symbolizer: &Symbolizer) -> Self {
        let stack = |operand: Option<u32>, user: bool| -> Option<Vec<Frame>> {
            let operand = operand?;
            let Some(reader) = view.reader.as_ref() else {
                return Some(Vec::new());
            };
            let hash = record.ints[operand as usize % record.ints.len()];
            Some(match reader.frames(hash) {
                Some(ips) if user => symbolizer.user_stack(record.pid, &ips),
                Some(ips) => symbolizer.kernel_stack(&ips),
                None => Vec::new(),
            })
        };
        Self {
            kernel: stack(view.stacks.0, false),
            user: stack(view.stacks.1, true),
        }
    }

    /// `kernel_stack` and `user_stack`, outermost frame first.
    fn insert_into(&self, object: &mut serde_json::Map<String, serde_json::Value>) {
        for (name, frames) in [("kernel_stack", &self.kernel), ("user_stack", &self.user)] {
            if let Some(frames) = frames {
                let names: Vec<&str> = frames.iter().rev().map(|f| f.symbol.as_str()).collect();
                object.insert(name.into(), names.into());
            }
        }
    }

    /// A frame a line below the event's line, leaf first, as bcc's trace prints stacks.
    fn push_text(&self, text: &mut String) {
        let kernel = self.kernel.iter().flatten().rev();
        for frame in kernel.chain(self.user.iter().flatten().rev()) {
            let name = if frame.symbol == UNKNOWN_SYMBOL {
                "[unknown]"
            } else {
                frame.symbol.as_str()
            };
            text.push_str(&format!("        {name} ({})\n", frame.module_name()));
        }
    }
}

/// Appends one event's line (text, or a JSON object with `json`) to `out`, with its stacks.
fn render_into(
    out: &mut String,
    record: &TraceEvent<'_>,
    view: &EngineView,
    start_ns: u64,
    json: bool,
    symbolizer: &Symbolizer,
) {
    use std::fmt::Write as _;
    let event = event_name(record, view);
    let time = record.ts_ns.saturating_sub(start_ns) as f64 / 1e9;
    let comm = comm_str(&record.comm);
    let stacks = EventStacks::of(record, view, symbolizer);
    let fields = view
        .prints
        .iter()
        .filter(|p| !STACKS.contains(&p.name.as_str()));
    if json {
        let mut object = serde_json::Map::new();
        object.insert("time_s".into(), time.into());
        object.insert("comm".into(), comm.into());
        object.insert("pid".into(), record.pid.into());
        object.insert("tid".into(), record.tid.into());
        object.insert("cpu".into(), record.cpu.into());
        object.insert("event".into(), event.into());
        for printed in fields {
            object.insert(printed.name.clone(), field_text(record, printed).1);
        }
        stacks.insert_into(&mut object);
        let _ = writeln!(out, "{}", serde_json::Value::Object(object));
        return;
    }
    let _ = write!(
        out,
        "{time:<12.6} {comm:<16} {:>7} {:>7} {event:<28}",
        record.pid, record.tid
    );
    for printed in fields {
        out.push(' ');
        write_field(out, record, printed, false);
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    stacks.push_text(out);
}

/// One event's line: [`render_into`] a string of its own.
#[cfg(test)]
fn render(
    record: &TraceEvent<'_>,
    view: &EngineView,
    start_ns: u64,
    json: bool,
    symbolizer: &Symbolizer,
) -> String {
    let mut line = String::new();
    render_into(&mut line, record, view, start_ns, json, symbolizer);
    line
}

mod event;
mod fields;
mod merge;
mod writer;

#[cfg(test)]
mod tests;
