//! `tracekit top`: a live view of the hottest functions on the machine (`perf top`), or of any
//! probe's counts grouped by process (`-e`). On a terminal the view is redrawn in place;
//! piped, one snapshot per interval is printed and flushed, so it can be followed or logged.

use std::{
    collections::HashMap,
    io::{IsTerminal as _, Write as _},
    time::{Duration, Instant},
};

use tracekit::{
    Error, Result, bpf, caps,
    engine::{Aggregates, groups},
    profile::{self, ProfileOptions, Profiler, RawProfile},
    stacks::{FrameKind, UNKNOWN_SYMBOL},
    symbolize::Symbolizer,
    workload::Workload,
};
use tracekit_common::profile::{DEFAULT_COUNT_MAP_ENTRIES, DEFAULT_STACK_MAP_ENTRIES};

use crate::{
    cli::{Scope, TimingArgs, TopArgs},
    cmd::{
        agg::{self, RingHandler, Setup},
        compile::{self, Request},
        session::{self, Stopper, Wake},
    },
};

/// What rows are grouped by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SortKey {
    Sym,
    Dso,
    Comm,
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

fn parse_sort(keys: &[String], event: bool) -> Result<Vec<SortKey>> {
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

/// One refresh of the view.
struct Screen<'a> {
    title: String,
    keys: &'a [SortKey],
    /// (count, key values) hottest first.
    rows: Vec<(u64, Vec<String>)>,
    total: u64,
    limit: usize,
}

impl<'a> Screen<'a> {
    fn new(
        title: String,
        keys: &'a [SortKey],
        rows: Vec<(u64, Vec<String>)>,
        total: u64,
        limit: usize,
    ) -> Self {
        Self {
            title,
            keys,
            rows,
            total,
            limit,
        }
    }
}

/// `tracekit top HH:MM:SS: N WHAT in the last S s, SCOPE; by KEYS`.
fn title(total: u64, what: &str, elapsed: Duration, scope: &str, sort: &[&str]) -> String {
    format!(
        "tracekit top {}: {total} {what} in the last {:.1} s, {scope}; by {}",
        session::clock_time(),
        elapsed.as_secs_f64(),
        sort.join(",")
    )
}

impl Screen<'_> {
    fn render(&self) -> String {
        let mut widths: Vec<usize> = self.keys.iter().map(|k| k.header().len()).collect();
        let shown = &self.rows[..self.rows.len().min(self.limit)];
        for (_, values) in shown {
            for (w, v) in widths.iter_mut().zip(values) {
                *w = (*w).max(v.len());
            }
        }
        let mut out = format!("{}\n\n", self.title);
        let mut header = format!("{:>9}  {:>8}", "Overhead", "Count");
        for (key, w) in self.keys.iter().zip(&widths) {
            header.push_str(&format!("  {:<w$}", key.header()));
        }
        out.push_str(header.trim_end());
        out.push('\n');
        for (count, values) in shown {
            let share = 100.0 * *count as f64 / self.total.max(1) as f64;
            let mut line = format!("{:>8.2}%  {count:>8}", share);
            for (value, w) in values.iter().zip(&widths) {
                line.push_str(&format!("  {value:<w$}"));
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// A stop this soon after the last snapshot shows nothing new worth a screen.
const FINAL_SNAPSHOT_MIN: Duration = Duration::from_millis(100);

fn show(screen: &Screen<'_>, tty: bool) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    let text = screen.render();
    let written = if tty {
        // Home and clear, then the view: redrawn in place like top(1).
        write!(stdout, "\x1b[H\x1b[2J{text}")
    } else {
        writeln!(stdout, "{text}")
    };
    written
        .and_then(|()| stdout.flush())
        .map_err(|err| Error::Runtime {
            what: "writing to stdout".into(),
            source: Some(Box::new(err)),
        })
}

/// Runs `tracekit top`.
pub fn run(args: TopArgs, verbose: u8) -> Result<()> {
    let keys = parse_sort(&args.sort, args.event.is_some())?;
    match args.event.clone() {
        Some(probe) => run_event(&args, &probe, &keys, verbose),
        None => run_samples(&args, &keys),
    }
}

fn rank_samples(
    raw: &RawProfile,
    symbolizer: &Symbolizer,
    keys: &[SortKey],
) -> (Vec<(u64, Vec<String>)>, u64) {
    let profile = profile::symbolize(raw, symbolizer);
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

fn run_samples(args: &TopArgs, keys: &[SortKey]) -> Result<()> {
    let hz = bpf::check_frequency(args.frequency)?;
    let scope = args.scope.scope()?;
    let mut exit_fds = match &scope {
        Scope::Pids(pids) => session::watch_pids(pids)?,
        _ => Vec::new(),
    };
    caps::require_tracing("top")?;
    let scope_text = session::describe_scope(&scope);
    let mut workload = match &scope {
        Scope::Command(argv) => Some(Workload::spawn(argv)?),
        _ => None,
    };
    let options = ProfileOptions {
        frequency_hz: hz,
        pids: match &scope {
            Scope::All => None,
            Scope::Pids(pids) => Some(pids.clone()),
            Scope::Command(_) => workload.as_ref().map(|w| vec![w.pid()]),
        },
        follow_children: workload.is_some(),
        include_idle: false,
        kernel_stacks: true,
        user_stacks: true,
        stack_map_entries: DEFAULT_STACK_MAP_ENTRIES,
        count_map_entries: DEFAULT_COUNT_MAP_ENTRIES,
    };
    let mut profiler = Profiler::load(&options)?;
    profiler.attach(&options)?;
    let mut events = profiler.take_events()?;
    if let Some(workload) = workload.as_mut() {
        exit_fds.push(workload.pidfd()?);
        workload.start()?;
    }
    let mut symbolizer = Symbolizer::new(false);
    let tty = std::io::stdout().is_terminal();
    let runtime = session::runtime()?;
    let sort: Vec<&str> = args.sort.iter().map(String::as_str).collect();
    runtime.block_on(async {
        let mut stopper = Stopper::new(args.duration, Some(args.interval), exit_fds)?;
        let mut previous = RawProfile::default();
        let mut last_shown = Instant::now();
        loop {
            let wake = stopper.next().await;
            let since = last_shown.elapsed();
            // What came after the last full interval is shown too when tracing stops.
            if matches!(wake, Wake::Tick) || since >= FINAL_SNAPSHOT_MIN {
                crate::cmd::profile::remember_announced(&mut events, &mut symbolizer);
                let now = profiler.read()?;
                let (rows, total) = rank_samples(&now.since(&previous), &symbolizer, keys);
                previous = now;
                last_shown = Instant::now();
                let what = format!("samples of cpu-clock at {hz} Hz");
                let title = title(total, &what, since, &scope_text, &sort);
                show(&Screen::new(title, keys, rows, total, args.top), tty)?;
            }
            if let Wake::Stop(_) = wake {
                return Ok::<_, Error>(());
            }
        }
    })?;
    profiler.detach()?;
    session::restore_default_signals();
    if let Some(workload) = workload.as_mut() {
        session::finish_workload(workload)?;
    }
    Ok(())
}

fn run_event(args: &TopArgs, probe: &str, keys: &[SortKey], verbose: u8) -> Result<()> {
    let by: Vec<String> = keys
        .iter()
        .map(|k| match k {
            SortKey::Pid => "pid".to_string(),
            _ => "comm".to_string(),
        })
        .collect();
    let request = Request::count(&by, None);
    let maps = &args.maps;
    let compiled = compile::compile(
        &[probe.to_string()],
        &request,
        false,
        maps,
        args.target.target(&args.scope)?,
    )?;
    let tty = std::io::stdout().is_terminal();
    let timing = TimingArgs {
        duration: args.duration,
        interval: Some(args.interval),
    };
    let columns = compiled.columns.clone();
    let scope_text = session::describe_scope(&args.scope.scope()?);
    let sort: Vec<&str> = args.sort.iter().map(String::as_str).collect();
    let mut previous = Aggregates::default();
    let last_shown = std::cell::Cell::new(Instant::now());
    let mut snapshot = |now: Aggregates, elapsed: Duration| {
        let delta = now.since(&previous);
        previous = now;
        last_shown.set(Instant::now());
        let mut rows: Vec<(u64, Vec<String>)> = groups(&delta, &columns, 1)
            .into_iter()
            .map(|g| (g.count, g.key.iter().map(ToString::to_string).collect()))
            .collect();
        rows.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let total = rows.iter().map(|(c, _)| c).sum();
        let what = format!("{} events", compiled.what);
        let title = title(total, &what, elapsed, &scope_text, &sort);
        show(&Screen::new(title, keys, rows, total, args.top), tty)
    };
    let finished = agg::run_engines(
        Setup {
            command: "top",
            what: &compiled.what,
            specs: &compiled.specs,
            scope: &args.scope,
            timing: &timing,
            exclude_self: true,
            verbose,
        },
        |_| Ok(Vec::<RingHandler<'_>>::new()),
        |engines, elapsed: Duration| snapshot(agg::read_all(engines)?, elapsed),
    )?;
    // What came after the last full interval is shown too when tracing stops.
    let since = last_shown.get().elapsed();
    if since >= FINAL_SNAPSHOT_MIN {
        snapshot(agg::read_all(&finished.engines)?, since)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_keys() {
        assert_eq!(
            parse_sort(&["comm".into(), "dso".into()], false).unwrap(),
            [SortKey::Comm, SortKey::Dso]
        );
        assert_eq!(
            parse_sort(&["cpu".into()], false).unwrap_err().to_string(),
            "--sort cpu: unknown key; valid: sym, dso, comm, pid"
        );
        assert!(parse_sort(&["sym".into()], true).is_err());
    }

    #[test]
    fn renders_perf_top_columns() {
        let keys = [SortKey::Dso, SortKey::Sym];
        let screen = Screen {
            title: "t".into(),
            keys: &keys,
            rows: vec![
                (75, vec!["tk_burner".into(), "[.] leaf".into()]),
                (
                    25,
                    vec!["[kernel.kallsyms]".into(), "[k] do_syscall_64".into()],
                ),
            ],
            total: 100,
            limit: 20,
        };
        assert_eq!(
            screen.render(),
            "t\n\n Overhead     Count  Shared Object      Symbol\n   75.00%        75  tk_burner          [.] leaf\n   25.00%        25  [kernel.kallsyms]  [k] do_syscall_64\n"
        );
    }
}
