//! `tracekit stat`: count events with perf counters for a command, processes, or the whole
//! machine, in the layout of `perf stat`: value, event, and the derived figure. Hardware
//! counters the machine lacks print `<not supported>`, as perf prints them.

use std::{
    io::Write as _,
    time::{Duration, Instant},
};

use serde::Serialize;
use tracekit::{
    Error, Result, caps,
    counters::{self, Counter, Event, Kind, OpenError, Reading, Scope as CounterScope},
    probe, tracefs,
    workload::{Exit, Workload},
};

use crate::{
    cli::{Scope, StatArgs},
    cmd::session::{self, Stopper, Wake},
};

/// perf stat's default events.
const DEFAULT_EVENTS: &[&str] = &[
    "task-clock",
    "context-switches",
    "cpu-migrations",
    "page-faults",
    "cycles",
    "instructions",
    "branches",
    "branch-misses",
];

/// One event as asked, and its counter when the machine has it.
struct Row {
    event: Event,
    counter: Option<Counter>,
    /// Came from a tracepoint wildcard: hidden when zero (unless --all).
    from_wildcard: bool,
}

/// Resolves `-e` names (perf names and tracepoints) into events.
fn resolve_events(names: &[String], all_cpus: bool) -> Result<Vec<(Event, bool)>> {
    let defaults: Vec<String> = DEFAULT_EVENTS.iter().map(|s| s.to_string()).collect();
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
            let spec = probe::ProbeSpec::parse(name)?;
            if spec.kind != probe::ProbeKind::Tracepoint {
                return Err(Error::usage(format!(
                    "-e {name}: stat counts perf events and tracepoints; use funccount for functions"
                )));
            }
            let root = tracefs::root()?;
            if tracepoints.is_none() {
                tracepoints = Some(probe::all_tracepoints(&root)?);
            }
            let matched = probe::expand_tracepoints(&spec.target, tracepoints.as_ref().unwrap())?;
            let wildcard = spec.target.contains(['*', '?']);
            for tp in matched {
                let format = tracefs::EventFormat::read(&root, &tp.system, &tp.event)?;
                events.push((
                    Event {
                        name: tp.to_string(),
                        kind: Kind::Tracepoint,
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

/// Runs `tracekit stat`.
pub fn run(args: StatArgs, _verbose: u8) -> Result<()> {
    let interval = args
        .interval_ms
        .map(|ms| ms as f64 / 1000.0)
        .or(args.timing.interval);
    if interval.is_some_and(|i| i < 0.01) {
        return Err(Error::usage("-I: the interval must be at least 10 ms"));
    }
    let scope = args.scope.scope()?;
    let events = resolve_events(&args.events, scope == Scope::All)?;
    let mut exit_fds = match &scope {
        Scope::Pids(pids) => session::watch_pids(pids)?,
        _ => Vec::new(),
    };
    if scope == Scope::All {
        caps::require_tracing("stat -a")?;
    }
    counters::raise_fd_limit();
    let scope_text = session::describe_scope(&scope);
    let mut workload = match &scope {
        Scope::Command(argv) => Some(Workload::spawn(argv)?),
        _ => None,
    };
    let counter_scope = match &scope {
        Scope::All => CounterScope::AllCpus(aya::util::online_cpus().map_err(|(path, err)| {
            Error::runtime(format!("reading the online CPUs from {path}: {err}"))
        })?),
        Scope::Pids(pids) => {
            CounterScope::Threads(pids.iter().flat_map(|&p| counters::threads_of(p)).collect())
        }
        Scope::Command(_) => CounterScope::Command(workload.as_ref().unwrap().pid()),
    };
    let mut rows = Vec::with_capacity(events.len());
    for (event, from_wildcard) in events {
        let counter = match Counter::open(&event, &counter_scope) {
            Ok(counter) => Some(counter),
            Err(OpenError::NotSupported) => None,
            Err(OpenError::Other(err)) => {
                return Err(match err.raw_os_error() {
                    Some(libc::EACCES | libc::EPERM) => Error::Privilege(format!(
                        "tracekit stat: counting {} for {scope_text} needs CAP_PERFMON \
                         (or a lower kernel.perf_event_paranoid): {err}",
                        event.name
                    )),
                    _ => Error::runtime(format!("opening the {} counter: {err}", event.name)),
                });
            }
        };
        rows.push(Row {
            event,
            counter,
            from_wildcard,
        });
    }
    if let Some(workload) = workload.as_ref() {
        exit_fds.push(workload.pidfd()?);
    }
    let runtime = session::runtime()?;
    let json = args.output.json;
    let mut previous: Vec<Reading> = vec![Reading::default(); rows.len()];
    let mut started = Instant::now();
    runtime.block_on(async {
        let mut stopper = Stopper::new(args.timing.duration, interval, exit_fds)?;
        if interval.is_some() && !json {
            println!("#           time             counts unit events");
        }
        // Everything is ready: count from here (a command's counters start at its exec).
        started = Instant::now();
        counters::enable_all(true);
        if let Some(workload) = workload.as_mut() {
            workload.start()?;
        }
        loop {
            match stopper.next().await {
                Wake::Stop(_) => return Ok::<_, Error>(()),
                Wake::Tick => {
                    let now = read_all(&rows)?;
                    print_interval(
                        &rows,
                        &now,
                        &previous,
                        started.elapsed(),
                        json,
                        args.show_zero,
                    )?;
                    previous = now;
                }
            }
        }
    })?;
    counters::enable_all(false);
    let elapsed = started.elapsed();
    let readings = read_all(&rows)?;
    session::restore_default_signals();
    let exit = match workload.as_mut() {
        Some(workload) => Some(session::finish_workload(workload)?),
        None => None,
    };
    let report = if json {
        json_report(&rows, &readings, elapsed, &scope_text)
    } else {
        text_report(&rows, &readings, elapsed, &scope, args.show_zero)
    };
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(report.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|err| Error::Runtime {
            what: "writing to stdout".into(),
            source: Some(Box::new(err)),
        })?;
    match exit {
        Some(Exit::Code(0)) | None => {}
        Some(Exit::Code(code)) => eprintln!("The command exited with status {code}."),
        Some(Exit::Signal(signal)) => eprintln!("The command was killed by signal {signal}."),
    }
    Ok(())
}

fn read_all(rows: &[Row]) -> Result<Vec<Reading>> {
    rows.iter()
        .map(|row| match &row.counter {
            Some(counter) => counter.read(),
            None => Ok(Reading::default()),
        })
        .collect()
}

/// `1234567` as `1,234,567`.
pub fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// perf's rate: `2.439 K/sec`.
fn rate(count: u64, seconds: f64) -> String {
    let per_sec = if seconds > 0.0 {
        count as f64 / seconds
    } else {
        0.0
    };
    let (value, prefix) = if per_sec >= 1e9 {
        (per_sec / 1e9, "G")
    } else if per_sec >= 1e6 {
        (per_sec / 1e6, "M")
    } else if per_sec >= 1e3 {
        (per_sec / 1e3, "K")
    } else {
        (per_sec, "")
    };
    format!("{value:.3} {prefix}/sec")
}

fn is_clock(event: &Event) -> bool {
    event.kind == Kind::Software && matches!(event.name.as_str(), "task-clock" | "cpu-clock")
}

/// The derived figure perf prints after `#`.
fn derived(rows: &[Row], readings: &[Reading], index: usize, elapsed: Duration) -> String {
    let find = |name: &str| {
        rows.iter()
            .position(|r| r.event.name == name && r.counter.is_some())
            .map(|i| readings[i].value)
    };
    let event = &rows[index].event;
    let value = readings[index].value;
    let clock_ns = find("task-clock").or_else(|| find("cpu-clock"));
    let seconds = clock_ns.map_or(elapsed.as_secs_f64(), |ns| ns as f64 / 1e9);
    match event.name.as_str() {
        "task-clock" | "cpu-clock" => format!(
            "{:.3} CPUs utilized",
            value as f64 / elapsed.as_nanos().max(1) as f64
        ),
        "instructions" => match find("cycles") {
            Some(cycles) if cycles > 0 => {
                format!("{:.2}  insn per cycle", value as f64 / cycles as f64)
            }
            _ => String::new(),
        },
        "branch-misses" => match find("branches") {
            Some(branches) if branches > 0 => {
                format!(
                    "{:.2}% of all branches",
                    100.0 * value as f64 / branches as f64
                )
            }
            _ => String::new(),
        },
        "cache-misses" => match find("cache-references") {
            Some(refs) if refs > 0 => {
                format!(
                    "{:.3} % of all cache refs",
                    100.0 * value as f64 / refs as f64
                )
            }
            _ => String::new(),
        },
        "cycles" => format!("{:.3} GHz", value as f64 / (seconds * 1e9)),
        _ => rate(value, seconds),
    }
}

fn text_report(
    rows: &[Row],
    readings: &[Reading],
    elapsed: Duration,
    scope: &Scope,
    show_zero: bool,
) -> String {
    let target = match scope {
        Scope::All => "system wide".to_string(),
        Scope::Pids(pids) => format!(
            "process id '{}'",
            pids.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        ),
        Scope::Command(argv) => format!(
            "'{}'",
            argv.iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        ),
    };
    let mut order: Vec<usize> = (0..rows.len()).collect();
    // Wildcard tracepoints sorted by count, like the rest in the order asked.
    order.sort_by(|&a, &b| {
        let key = |i: usize| {
            if rows[i].from_wildcard {
                (1, u64::MAX - readings[i].value)
            } else {
                (0, i as u64)
            }
        };
        key(a).cmp(&key(b))
    });
    let mut out = format!("\n Performance counter stats for {target}:\n\n");
    for index in order {
        let row = &rows[index];
        let reading = readings[index];
        if row.from_wildcard && reading.value == 0 && !show_zero {
            continue;
        }
        if row.counter.is_none() {
            out.push_str(&format!(
                "{:>18}      {}\n",
                "<not supported>", row.event.name
            ));
            continue;
        }
        let (value, unit) = if is_clock(&row.event) {
            (format!("{:.2}", reading.value as f64 / 1e6), "msec")
        } else {
            (thousands(reading.value), "")
        };
        let derived = derived(rows, readings, index, elapsed);
        let multiplexed = if reading.running_ns > 0 && reading.running_ns < reading.enabled_ns {
            format!(
                "  ({:.2}%)",
                100.0 * reading.running_ns as f64 / reading.enabled_ns as f64
            )
        } else {
            String::new()
        };
        let line = format!(
            "{value:>18} {unit:<4} {:<30}{}{multiplexed}",
            row.event.name,
            if derived.is_empty() {
                String::new()
            } else {
                format!(" #  {derived}")
            }
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(&format!(
        "\n{:>18.9} seconds time elapsed\n\n",
        elapsed.as_secs_f64()
    ));
    out
}

#[derive(Serialize)]
struct JsonEvent<'a> {
    event: &'a str,
    supported: bool,
    value: Option<u64>,
    unit: Option<&'a str>,
    derived: Option<String>,
    enabled_ns: u64,
    running_ns: u64,
}

fn json_report(rows: &[Row], readings: &[Reading], elapsed: Duration, scope: &str) -> String {
    let events: Vec<JsonEvent<'_>> = rows
        .iter()
        .enumerate()
        .map(|(i, row)| JsonEvent {
            event: &row.event.name,
            supported: row.counter.is_some(),
            value: row.counter.as_ref().map(|_| readings[i].value),
            unit: is_clock(&row.event).then_some("ns"),
            derived: row
                .counter
                .as_ref()
                .map(|_| derived(rows, readings, i, elapsed))
                .filter(|d| !d.is_empty()),
            enabled_ns: readings[i].enabled_ns,
            running_ns: readings[i].running_ns,
        })
        .collect();
    let json = serde_json::json!({
        "scope": scope,
        "elapsed_s": elapsed.as_secs_f64(),
        "events": events,
    });
    format!("{json}\n")
}

fn print_interval(
    rows: &[Row],
    now: &[Reading],
    previous: &[Reading],
    since_start: Duration,
    json: bool,
    show_zero: bool,
) -> Result<()> {
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let delta = now[i].value.saturating_sub(previous[i].value);
        if row.from_wildcard && delta == 0 && !show_zero {
            continue;
        }
        if json {
            out.push_str(&format!(
                "{}\n",
                serde_json::json!({
                    "time_s": since_start.as_secs_f64(),
                    "event": row.event.name,
                    "supported": row.counter.is_some(),
                    "value": row.counter.as_ref().map(|_| delta),
                })
            ));
        } else if row.counter.is_none() {
            out.push_str(&format!(
                "{:>15.9} {:>18}      {}\n",
                since_start.as_secs_f64(),
                "<not supported>",
                row.event.name
            ));
        } else {
            let (value, unit) = if is_clock(&row.event) {
                (format!("{:.2}", delta as f64 / 1e6), "msec")
            } else {
                (thousands(delta), "")
            };
            out.push_str(&format!(
                "{:>15.9} {value:>18} {unit:<4} {}\n",
                since_start.as_secs_f64(),
                row.event.name
            ));
        }
    }
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|err| Error::Runtime {
            what: "writing to stdout".into(),
            source: Some(Box::new(err)),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_and_rates() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1061), "1,061");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(rate(3, 0.00123), "2.439 K/sec");
        assert_eq!(rate(0, 1.0), "0.000 /sec");
        assert_eq!(rate(26_000_000, 1.0), "26.000 M/sec");
    }

    #[test]
    fn perf_layout_with_unsupported_and_derived() {
        let event = |name: &str| counters::named_event(name).unwrap();
        let rows = vec![
            Row {
                event: event("task-clock"),
                counter: None,
                from_wildcard: false,
            },
            Row {
                event: event("page-faults"),
                counter: None,
                from_wildcard: false,
            },
            Row {
                event: event("cycles"),
                counter: None,
                from_wildcard: false,
            },
        ];
        let readings = vec![
            Reading {
                value: 2_530_000,
                enabled_ns: 1,
                running_ns: 1,
            },
            Reading {
                value: 1061,
                enabled_ns: 1,
                running_ns: 1,
            },
            Reading::default(),
        ];
        // Without counters every row is unsupported: the layout perf uses for them.
        let text = text_report(
            &rows,
            &readings,
            Duration::from_millis(3),
            &Scope::All,
            false,
        );
        assert_eq!(
            text,
            "\n Performance counter stats for system wide:\n\n   <not supported>      task-clock\n   <not supported>      page-faults\n   <not supported>      cycles\n\n       0.003000000 seconds time elapsed\n\n"
        );
        assert_eq!(
            derived(&rows, &readings, 1, Duration::from_millis(3)),
            "353.667 K/sec"
        );
    }
}
