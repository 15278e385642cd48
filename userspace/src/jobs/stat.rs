//! `perf stat`: counts of perf events (software, hardware, tracepoints) for a command,
//! processes, or the whole machine, per interval (`-i`) and for the whole run, on stdout or
//! in `-o FILE`. Sets of syscall tracepoints are counted by one BPF program each
//! ([`syscalls`]), every other event by perf counters.

use std::{io::Write as _, time::Duration};

use super::{RunOptions, is_broken_pipe, to_stdout};
use crate::{
    Error, Result,
    counters::{self, Counter, CounterKind, Event, OpenError, Reading, Scope as CounterScope},
    jobs::stat::syscalls::SyscallSets,
    output::{
        self, Format,
        stat::{StatRow, interval_report, json_report, text_report},
    },
    probe::{self, tracefs},
    session::{self, Collector, Flow, Interval, Scope, Tracees},
};

/// What `stat` counts and shows.
#[derive(Clone, Debug, Default)]
pub struct StatOptions {
    /// `-e` names: perf names and tracepoints (wildcards allowed); empty: the defaults.
    pub events: Vec<String>,
    /// Show tracepoints from wildcards that counted zero (`--all`).
    pub show_zero: bool,
}

/// Resolves `-e` names (perf names and tracepoints) into events, each with whether it came
/// from a wildcard.
///
/// # Errors
/// A usage error naming an unknown event (with the nearest names) or a function probe.
pub fn resolve_events(names: &[String], all_cpus: bool) -> Result<Vec<(Event, bool)>> {
    let defaults: Vec<String> = counters::stat_defaults()
        .into_iter()
        .map(str::to_string)
        .collect();
    let names = if names.is_empty() { &defaults } else { names };
    let mut events = Vec::new();
    let mut tracepoints = None;
    for name in names {
        // perf stat -a counts cpu-clock where a command's stat counts task-clock.
        let name = if all_cpus && name == "task-clock" {
            "cpu-clock"
        } else {
            name.as_str()
        };
        if let Some(event) = counters::named_event(name) {
            events.push((event, false));
            continue;
        }
        if name.contains(':') {
            let spec = crate::engine::kinds::ProbeSpec::parse(name)?;
            if !spec.kind.is(&crate::engine::kinds::tracepoint::TRACEPOINT) {
                return Err(Error::usage(format!(
                    "-e {name}: stat counts perf events and tracepoints; use funccount for functions"
                )));
            }
            let root = tracefs::root()?;
            let matched = probe::find_tracepoints(&root, &spec.target, &mut tracepoints)?;
            let wildcard = spec.target.contains(['*', '?']);
            for tp in matched {
                let format = tracefs::EventFormat::read(&root, &tp.system, &tp.event)?;
                events.push((
                    Event {
                        name: tp.to_string(),
                        kind: CounterKind::Tracepoint,
                        config: u64::from(format.id),
                    },
                    wildcard,
                ));
            }
            continue;
        }
        let near = probe::nearest(name, &counters::event_names(), 3);
        return Err(Error::usage(format!(
            "-e {name}: unknown event{}; `tracekit list` shows them",
            if near.is_empty() {
                String::new()
            } else {
                format!(" (did you mean {}?)", near.join(", "))
            }
        )));
    }
    Ok(events)
}

struct StatCollector {
    events: Vec<(Event, bool)>,
    rows: Vec<StatRow>,
    /// Per row: its perf counter (None: not supported, or counted by `syscalls`).
    counters: Vec<Option<Counter>>,
    /// The syscall tracepoints counted in BPF.
    syscalls: SyscallSets,
    verbose: u8,
    scope_text: String,
    json: bool,
    show_zero: bool,
    previous: Vec<Reading>,
    since_start: Duration,
    /// Counting a `-- CMD`: its counters start at its exec, not when tracekit is ready.
    command: bool,
}

impl StatCollector {
    fn read(&self) -> Result<Vec<Reading>> {
        let sets = self.syscalls.read()?;
        self.counters
            .iter()
            .zip(&self.rows)
            .map(|(counter, row)| match counter {
                Some(counter) => counter.read(),
                None if self.syscalls.counts(&row.event.name) => {
                    Ok(self.syscalls.reading(&sets, &row.event.name))
                }
                None => Ok(Reading::default()),
            })
            .collect()
    }

    /// Events the syscall sets' programs missed (the kernel skipped them), said on stderr.
    fn report_missed(&self) -> Result<()> {
        let missed = SyscallSets::missed(&self.syscalls.read()?);
        if missed > 0 {
            eprintln!(
                "Lost: {missed} syscall events the kernel did not run the counting program for \
                 (recursion); the syscalls: counts miss them."
            );
        }
        Ok(())
    }
}

impl Collector for StatCollector {
    fn attach(&mut self, tracees: &Tracees) -> Result<()> {
        counters::raise_fd_limit();
        let scope = match (&tracees.pids, tracees.follow_children) {
            (None, _) => {
                CounterScope::AllCpus(aya::util::online_cpus().map_err(|(path, err)| {
                    Error::runtime(format!("reading the online CPUs from {path}: {err}"))
                })?)
            }
            (Some(pids), false) => {
                CounterScope::Threads(pids.iter().flat_map(|&p| counters::threads_of(p)).collect())
            }
            (Some(pids), true) => CounterScope::Command(pids[0]),
        };
        self.command = matches!(scope, CounterScope::Command(_));
        self.syscalls.attach(tracees, self.verbose)?;
        for (event, from_wildcard) in std::mem::take(&mut self.events) {
            if self.syscalls.counts(&event.name) {
                self.rows.push(StatRow {
                    event,
                    supported: true,
                    from_wildcard,
                });
                self.counters.push(None);
                continue;
            }
            let counter = match Counter::open(&event, &scope) {
                Ok(counter) => Some(counter),
                Err(OpenError::NotSupported) => None,
                Err(OpenError::Other(err)) => {
                    return Err(match err.raw_os_error() {
                        Some(libc::EACCES | libc::EPERM) => Error::Privilege(format!(
                            "tracekit stat: counting {} for {} needs CAP_PERFMON \
                             (or a lower kernel.perf_event_paranoid): {err}",
                            event.name, self.scope_text
                        )),
                        _ => Error::runtime(format!("opening the {} counter: {err}", event.name)),
                    });
                }
            };
            self.rows.push(StatRow {
                event,
                supported: counter.is_some(),
                from_wildcard,
            });
            self.counters.push(counter);
        }
        self.previous = vec![Reading::default(); self.rows.len()];
        Ok(())
    }

    fn started(&mut self) -> Result<()> {
        // Count from here: everything is ready. A command's counters start at its exec
        // (enable_on_exec), as perf stat's do: enabling them here too would count what the
        // forked child does before it (its execve, the pre-exec checks), since
        // PR_TASK_PERF_EVENTS_ENABLE enables every counter tracekit opened, whatever its task.
        if !self.command {
            counters::enable_all(true);
        }
        self.syscalls.started()
    }

    fn interval(&mut self, interval: Interval) -> Result<Flow> {
        self.since_start += interval.elapsed;
        if interval.last {
            return Ok(Flow::Continue);
        }
        let now = self.read()?;
        let text = interval_report(
            &self.rows,
            &now,
            &self.previous,
            self.since_start,
            self.json,
            self.show_zero,
        );
        self.previous = now;
        match to_stdout(|out| out.write_all(text.as_bytes())) {
            Err(err) if is_broken_pipe(&err) => Ok(Flow::OutputClosed),
            other => other.map(|()| Flow::Continue),
        }
    }

    fn detach(&mut self) -> Result<()> {
        counters::enable_all(false);
        self.syscalls.detach();
        Ok(())
    }
}

/// The header of `-I` lines, as perf stat prints it.
const INTERVAL_HEADER: &str = "#           time             counts unit events\n";

/// perf's name for what was counted: `system wide`, `process id '12,13'`, `'ls -l'`.
fn target(scope: &Scope) -> String {
    match scope {
        Scope::All => "system wide".to_string(),
        Scope::Pids(pids) => format!(
            "process id '{}'",
            pids.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        ),
        Scope::Command(argv) => format!("'{}'", crate::session::command_line(argv)),
    }
}

/// Counts `stat`'s events over `options`' scope and prints perf stat's report (to `-o
/// FILE` too, in the format its extension names).
pub fn run(stat: &StatOptions, options: &RunOptions) -> Result<()> {
    let file_format = options.file_format("stat", false)?;
    if options
        .interval
        .is_some_and(|i| i < Duration::from_millis(10))
    {
        return Err(Error::usage("-I: the interval must be at least 10 ms"));
    }
    let all_cpus = options.scope == Scope::All;
    let events = resolve_events(&stat.events, all_cpus)?;
    let syscalls = {
        let in_sets: Vec<&Event> = events
            .iter()
            .map(|(event, _)| event)
            .filter(|event| syscalls::set_of(event).is_some())
            .collect();
        let set = |enter| {
            in_sets
                .iter()
                .filter(|e| syscalls::set_of(e) == Some(enter))
                .count()
        };
        let large: Vec<&Event> = in_sets
            .iter()
            .copied()
            .filter(|e| syscalls::set_of(e).is_some_and(|enter| set(enter) >= syscalls::MIN_SET))
            .collect();
        SyscallSets::new(&large)?
    };
    let needs_bpf = all_cpus || !syscalls.is_empty();
    let mut collector = StatCollector {
        events,
        rows: Vec::new(),
        counters: Vec::new(),
        syscalls,
        verbose: options.verbose,
        scope_text: options.scope.describe(),
        json: options.json,
        show_zero: stat.show_zero,
        previous: Vec::new(),
        since_start: Duration::ZERO,
        command: false,
    };
    if options.interval.is_some() && !options.json {
        to_stdout(|out| out.write_all(INTERVAL_HEADER.as_bytes()))?;
    }
    let session = options.session(if all_cpus { "stat -a" } else { "stat" }, needs_bpf);
    let finished = session::run(session, &mut collector)?;
    let readings = collector.read()?;
    collector.report_missed()?;
    let elapsed = finished.elapsed;
    let report = |format: Format| match format {
        Format::Json => json_report(&collector.rows, &readings, elapsed, &finished.scope_text),
        _ => text_report(
            &collector.rows,
            &readings,
            elapsed,
            &target(&finished.scope),
            stat.show_zero,
        ),
    };
    if let (Some(path), Some(format)) = (options.output.as_deref(), file_format) {
        let text = report(format);
        output::write_file(path, |out| out.write_all(text.as_bytes()))?;
    }
    if options.json || options.output.is_none() {
        let text = report(if options.json {
            Format::Json
        } else {
            Format::Text
        });
        to_stdout(|out| out.write_all(text.as_bytes()))?;
    }
    if let (Some(path), Some(format)) = (options.output.as_deref(), file_format) {
        eprintln!("{}", output::profile::written(path, format));
    }
    finished.print_workload_exit();
    session::print_usage(options.verbose, finished.attached_after);
    Ok(())
}

mod syscalls;
#[cfg(test)]
mod tests;
