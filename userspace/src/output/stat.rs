//! `perf stat`'s layout: value, unit, event and the derived figure perf prints after `#`
//! (CPUs utilized, IPC, rates); `<not supported>` for counters the machine lacks; interval
//! lines as `perf stat -I` prints them; and the same as JSON.

use std::time::Duration;

use serde::Serialize;

use crate::counters::{CounterKind, Event, Reading};

/// One event as asked.
#[derive(Clone, Debug)]
pub struct StatRow {
    /// The event.
    pub event: Event,
    /// The machine counts it (else it prints `<not supported>`).
    pub supported: bool,
    /// Came from a tracepoint wildcard: hidden when zero (unless `--all`).
    pub from_wildcard: bool,
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
pub fn rate(count: u64, seconds: f64) -> String {
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

pub fn is_clock(event: &Event) -> bool {
    event.kind == CounterKind::Software && matches!(event.name.as_str(), "task-clock" | "cpu-clock")
}

/// The derived figure perf prints after `#`.
pub fn derived(rows: &[StatRow], readings: &[Reading], index: usize, elapsed: Duration) -> String {
    let find = |name: &str| {
        rows.iter()
            .position(|r| r.event.name == name && r.supported)
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

/// perf stat's report: one line per event (value, unit, name, derived figure), events from
/// wildcards sorted by count (zero counts hidden unless `show_zero`), then the elapsed time.
/// `target` is what was counted, as perf names it (`system wide`, `'ls -l'`).
pub fn text_report(
    rows: &[StatRow],
    readings: &[Reading],
    elapsed: Duration,
    target: &str,
    show_zero: bool,
) -> String {
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
        if !row.supported {
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

/// The report as one JSON object: scope, elapsed seconds, and each event's value, unit,
/// derived figure and enabled/running times.
pub fn json_report(
    rows: &[StatRow],
    readings: &[Reading],
    elapsed: Duration,
    scope: &str,
) -> String {
    let events: Vec<JsonEvent<'_>> = rows
        .iter()
        .enumerate()
        .map(|(i, row)| JsonEvent {
            event: &row.event.name,
            supported: row.supported,
            value: row.supported.then_some(readings[i].value),
            unit: is_clock(&row.event).then_some("ns"),
            derived: row
                .supported
                .then(|| derived(rows, readings, i, elapsed))
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

/// One interval's lines (`perf stat -I`): time since the start, the count in the interval,
/// the event; or one JSON object per event.
pub fn interval_report(
    rows: &[StatRow],
    now: &[Reading],
    previous: &[Reading],
    since_start: Duration,
    json: bool,
    show_zero: bool,
) -> String {
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
                    "supported": row.supported,
                    "value": row.supported.then_some(delta),
                })
            ));
        } else if !row.supported {
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
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters;

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
            StatRow {
                event: event("task-clock"),
                supported: false,
                from_wildcard: false,
            },
            StatRow {
                event: event("page-faults"),
                supported: false,
                from_wildcard: false,
            },
            StatRow {
                event: event("cycles"),
                supported: false,
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
            "system wide",
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
