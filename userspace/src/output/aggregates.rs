//! Aggregates as text and JSON: a table of counts per group (bcc `syscount`, `funccount`),
//! or a histogram per group (bcc `print_log2_hist`, [`super::hist`]); and the end-of-run
//! account of what was counted and what was lost.
//!
//! The input is neutral: groups with decoded keys ([`Group`], from
//! [`crate::engine::groups`]) and the engine's counters; nothing here reads a map.

use std::{io, time::Duration};

use serde::Serialize;

use super::{Format, hist, percentiles};
use crate::engine::{EngineStats, Group, KeyColumn};

/// How aggregates are shown.
#[derive(Clone, Debug, PartialEq)]
pub enum Report {
    /// A table of counts per group, sorted by count.
    Counts {
        /// Also show the value's total and average, under this header (e.g. `TIME(us)`),
        /// dividing the sums by the second element.
        sum: Option<(String, f64)>,
        /// Show only the first N rows.
        top: Option<usize>,
    },
    /// A log2 histogram per group; `unit` heads the value column.
    Log2 { unit: String },
    /// A linear histogram per group.
    Linear { min: i64, step: u64, unit: String },
    /// A log-linear histogram per group (`--percentiles`): shown folded into log2 slots,
    /// with p50, p90, p99, p99.9, max, count and mean under it.
    LogLinear {
        /// Heads the value column (`usecs`, `bytes`).
        unit: String,
        /// Sub-bucket bits.
        precision: u32,
        /// Raw units per `unit` (sums are raw: the mean divides by it).
        div: u64,
        /// Show only the N groups with the most events, most first (`syscount`).
        top: Option<usize>,
    },
}

impl Report {
    /// The unit the values are shown in, for histograms.
    pub fn unit(&self) -> Option<&str> {
        match self {
            Report::Log2 { unit }
            | Report::Linear { unit, .. }
            | Report::LogLinear { unit, .. } => Some(unit),
            Report::Counts { .. } => None,
        }
    }
}

/// What a table of aggregates shows, and about what.
#[derive(Clone, Copy, Debug)]
pub struct Table<'a> {
    /// The subcommand (`hist`, `syscount`), for JSON.
    pub command: &'a str,
    /// What is traced, for JSON.
    pub traced: &'a str,
    /// The group key's columns.
    pub columns: &'a [KeyColumn],
    /// How to show it.
    pub report: &'a Report,
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
    /// `--percentiles`: p50..p99.9 and max as bucket bounds, count and mean.
    #[serde(skip_serializing_if = "Option::is_none")]
    percentiles: Option<percentiles::Summary>,
}

#[derive(Serialize)]
struct JsonResult<'a> {
    /// Marks the file as tracekit's, as [`super::saved`] reads it.
    format: &'static str,
    format_version: u32,
    kind: super::saved::Kind,
    command: &'a str,
    traced: &'a str,
    duration_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    unit: Option<&'a str>,
    groups: Vec<JsonGroup>,
    /// The groups `--top` left out, so that `groups` and `not_shown` add up to
    /// `stats.counted`.
    #[serde(skip_serializing_if = "Option::is_none")]
    not_shown: Option<NotShown>,
    stats: &'a EngineStats,
    /// With `-i`: each interval's histogram, summed over groups, as the heat map draws it.
    #[serde(skip_serializing_if = "Option::is_none")]
    intervals: Option<&'a super::heatmap::Intervals>,
}

/// Groups past `--top`: how many, and the events they hold.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
struct NotShown {
    groups: usize,
    count: u64,
}

/// What `rows` (the groups shown) leave out of `groups`; None when nothing.
fn not_shown(groups: &[Group], rows: &[&Group]) -> Option<NotShown> {
    (rows.len() < groups.len()).then(|| NotShown {
        groups: groups.len() - rows.len(),
        count: groups.iter().map(|g| g.count).sum::<u64>()
            - rows.iter().map(|g| g.count).sum::<u64>(),
    })
}

/// The bounds of histogram slot `slot` of `slots` slots, as `report` buckets values.
pub fn slot_bounds(report: &Report, slot: usize, slots: usize) -> (i128, i128) {
    match report {
        Report::Log2 { .. } => {
            let (low, high) = tracekit_common::engine::log2_slot_bounds(slot as u32);
            (i128::from(low), i128::from(high))
        }
        Report::Linear { min, step, .. } => {
            let last = slots - 1;
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
        Report::LogLinear { precision, .. } => {
            let (low, high) =
                tracekit_common::engine::log_linear_slot_bounds(slot as u32, *precision);
            (i128::from(low), i128::from(high))
        }
        Report::Counts { .. } => (0, 0),
    }
}

/// The percentiles of a group, for log-linear reports.
pub fn group_percentiles(report: &Report, group: &Group) -> Option<percentiles::Summary> {
    let Report::LogLinear { precision, div, .. } = report else {
        return None;
    };
    percentiles::summarize(&group.slots, *precision, group.sum, *div)
}

fn buckets(report: &Report, slots: &[u64]) -> Vec<JsonBucket> {
    slots
        .iter()
        .enumerate()
        .filter(|(_, count)| **count > 0)
        .map(|(slot, &count)| {
            let (low, high) = slot_bounds(report, slot, slots.len());
            JsonBucket { low, high, count }
        })
        .collect()
}

/// Sorts groups as shown: counts by count (largest first), histograms by key.
fn ordered<'a>(report: &Report, groups: &'a [Group]) -> Vec<&'a Group> {
    let mut rows: Vec<&Group> = groups.iter().collect();
    if let Report::Counts { top, .. } | Report::LogLinear { top, .. } = report
        && (matches!(report, Report::Counts { .. }) || top.is_some())
    {
        rows.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
        if let Some(top) = top {
            rows.truncate(*top);
        }
    }
    rows
}

/// Writes `groups` in `format` (text or JSON; stacks formats are not for aggregates).
pub fn write(
    out: &mut dyn io::Write,
    format: Format,
    table: &Table<'_>,
    groups: &[Group],
    stats: &EngineStats,
    elapsed: Duration,
) -> io::Result<()> {
    write_with_intervals(out, format, table, groups, stats, elapsed, None)
}

/// [`write`], and in JSON also the run's `intervals` (what its heat map draws), so that
/// `tracekit report` draws the heat map from the file. Text leaves them out.
pub fn write_with_intervals(
    out: &mut dyn io::Write,
    format: Format,
    table: &Table<'_>,
    groups: &[Group],
    stats: &EngineStats,
    elapsed: Duration,
    intervals: Option<&super::heatmap::Intervals>,
) -> io::Result<()> {
    let rows = ordered(table.report, groups);
    if format == Format::Json {
        let unit = table.report.unit();
        let json = JsonResult {
            format: super::saved::FORMAT_NAME,
            format_version: super::saved::FORMAT_VERSION,
            kind: if unit.is_some() {
                super::saved::Kind::Histogram
            } else {
                super::saved::Kind::Counts
            },
            command: table.command,
            traced: table.traced,
            duration_s: elapsed.as_secs_f64(),
            unit,
            not_shown: not_shown(groups, &rows),
            groups: rows
                .iter()
                .map(|group| JsonGroup {
                    key: table
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
                    hist: buckets(table.report, &group.slots),
                    percentiles: group_percentiles(table.report, group),
                })
                .collect(),
            stats,
            intervals,
        };
        serde_json::to_writer(&mut *out, &json)?;
        return writeln!(out);
    }
    match table.report {
        Report::Counts { sum, .. } => {
            let mut header: Vec<String> = table
                .columns
                .iter()
                .map(|c| c.name.to_uppercase())
                .collect();
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
            out.write_all(hist::table(&header_refs, &table_rows, numeric).as_bytes())?;
            if let Some(rest) = not_shown(groups, &rows) {
                writeln!(
                    out,
                    "(--top {}: {} the other {})",
                    rows.len(),
                    super::plural(rest.groups, "more group holds", "more groups hold"),
                    super::plural(rest.count, "event", "events"),
                )?;
            }
            Ok(())
        }
        // syscount --latency --percentiles: a table, one row per group.
        Report::LogLinear {
            unit, top: Some(_), ..
        } => {
            let short = match unit.as_str() {
                "usecs" => "us",
                "nsecs" => "ns",
                "msecs" => "ms",
                other => other,
            };
            let mut header: Vec<String> = table
                .columns
                .iter()
                .map(|c| c.name.to_uppercase())
                .collect();
            let first_number = header.len();
            header.push("COUNT".into());
            header.push(format!("MEAN({short})"));
            for name in ["P50", "P90", "P99", "P99.9", "MAX"] {
                header.push(format!("{name}({short})"));
            }
            let range = |b: percentiles::Bounds| {
                if b.low == b.high {
                    b.low.to_string()
                } else {
                    format!("{}-{}", b.low, b.high)
                }
            };
            let table_rows: Vec<Vec<String>> = rows
                .iter()
                .map(|group| {
                    let mut row: Vec<String> = group.key.iter().map(ToString::to_string).collect();
                    row.push(group.count.to_string());
                    match group_percentiles(table.report, group) {
                        Some(summary) => {
                            row.push(format!("{:.3}", summary.mean));
                            row.extend(summary.percentiles.iter().map(|p| range(p.bounds)));
                            row.push(range(summary.max));
                        }
                        None => row.extend(std::iter::repeat_n("-".to_string(), 6)),
                    }
                    row
                })
                .collect();
            let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
            out.write_all(
                hist::table(&header_refs, &table_rows, header.len() - first_number).as_bytes(),
            )
        }
        Report::Log2 { unit } | Report::Linear { unit, .. } | Report::LogLinear { unit, .. } => {
            for (index, group) in rows.iter().enumerate() {
                if !table.columns.is_empty() {
                    if index > 0 {
                        writeln!(out)?;
                    }
                    let key: Vec<String> = table
                        .columns
                        .iter()
                        .zip(&group.key)
                        .map(|(column, value)| format!("{} = {value}", column.name))
                        .collect();
                    writeln!(out, "{}", key.join(", "))?;
                }
                let text = match table.report {
                    Report::Linear { min, step, .. } => {
                        hist::linear(&group.slots, *min, *step, unit)
                    }
                    Report::LogLinear { precision, .. } => {
                        let mut text =
                            hist::log2(&percentiles::fold_to_log2(&group.slots, *precision), unit);
                        if let Some(summary) = group_percentiles(table.report, group) {
                            text.push_str(&percentiles::text(&summary, unit));
                        }
                        text
                    }
                    _ => hist::log2(&group.slots, unit),
                };
                out.write_all(text.as_bytes())?;
            }
            Ok(())
        }
    }
}

/// The header line of an interval's report: `HH:MM:SS (1.0 s)`.
pub fn interval_header(clock: &str, elapsed: Duration) -> String {
    format!("{clock} ({:.1} s)", elapsed.as_secs_f64())
}

/// The end-of-run account: what was counted, in how long and why it stopped (`reason`),
/// and everything lost. `all_tasks`: the main stage sees every task (offcpu), so ends
/// without a start are the norm, not worth a line.
pub fn summary(stats: &EngineStats, elapsed: Duration, reason: &str, all_tasks: bool) -> String {
    let filtered = if stats.filtered > 0 {
        format!(" ({} more did not pass the filter)", stats.filtered)
    } else {
        String::new()
    };
    let mut out = format!(
        "Counted {}{filtered} in {:.2} s ({reason}).\n",
        super::plural(stats.counted, "event", "events"),
        elapsed.as_secs_f64()
    );
    let mut lost = Vec::new();
    if stats.map_full > 0 {
        lost.push(format!(
            "{} to a full map (raise --max-groups)",
            super::plural(stats.map_full, "event", "events")
        ));
    }
    if stats.start_map_full > 0 {
        lost.push(format!(
            "{} to a full start map (raise --max-in-flight)",
            super::plural(stats.start_map_full, "start", "starts")
        ));
    }
    if stats.read_errors > 0 {
        lost.push(format!(
            "{} whose fields could not be read",
            super::plural(stats.read_errors, "event", "events")
        ));
    }
    lost.extend(missed_text(stats));
    out.push_str(&lost_line(&lost));
    if stats.no_start > 0 && !all_tasks {
        out.push_str(&format!(
            "Not counted: {} whose start was not seen (in flight when tracing began).\n",
            super::plural(stats.no_start, "end", "ends")
        ));
    }
    out
}

/// For starts keyed by what they start (a block request, not a thread, whose in-flight
/// starts are the norm at any moment): `Not ended: N starts whose end was not seen ...`,
/// or nothing when every start ended.
pub fn unended(stats: &EngineStats) -> String {
    let unended = stats
        .starts
        .saturating_sub(stats.starts_ended + stats.starts_exited);
    if unended == 0 {
        return String::new();
    }
    format!(
        "Not ended: {unended} starts whose end was not seen (in flight when tracing stopped, \
         or ended unseen: see Lost).\n"
    )
}

/// What the kernel did not run the engine's programs for, as parts of the `Lost:` line:
/// events (and starts) that came while another BPF program ran on their CPU.
pub fn missed_text(stats: &EngineStats) -> Vec<String> {
    let mut lost = Vec::new();
    let busy = "(the kernel skips a program while another BPF program runs on the CPU)";
    match (stats.missed, stats.starts_missed) {
        (0, 0) => {}
        (events, 0) => lost.push(format!("{events} events not seen {busy}")),
        (0, starts) => lost.push(format!("{starts} starts not seen {busy}")),
        (events, starts) => lost.push(format!(
            "{events} events and {starts} starts not seen {busy}"
        )),
    }
    lost
}

/// `Lost: nothing.` or `Lost: A; B.`, with a newline.
pub fn lost_line(lost: &[String]) -> String {
    if lost.is_empty() {
        "Lost: nothing.\n".to_string()
    } else {
        format!("Lost: {}.\n", lost.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::engine::{KeyKind, KeyValue};

    fn group(key: &str, count: u64, sum: u64, slots: Vec<u64>) -> Group {
        Group {
            key: vec![KeyValue::Text(key.into())],
            count,
            sum,
            slots,
        }
    }

    fn render(format: Format, table: &Table<'_>, groups: &[Group]) -> String {
        let mut out = Vec::new();
        let stats = EngineStats {
            counted: groups.iter().map(|g| g.count).sum(),
            ..EngineStats::default()
        };
        write(
            &mut out,
            format,
            table,
            groups,
            &stats,
            Duration::from_millis(1500),
        )
        .unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn counts_table_with_sums_sorted_and_cut() {
        let columns = [KeyColumn {
            name: "syscall".into(),
            kind: KeyKind::Syscall,
        }];
        let report = Report::Counts {
            sum: Some(("TIME(us)".into(), 1000.0)),
            top: Some(2),
        };
        let table = Table {
            command: "syscount",
            traced: "syscalls",
            columns: &columns,
            report: &report,
        };
        let groups = [
            group("read", 10, 5_000, vec![]),
            group("nanosleep", 20, 102_146_077, vec![]),
            group("close", 2, 1_879, vec![]),
        ];
        assert_eq!(
            render(Format::Text, &table, &groups),
            "SYSCALL    COUNT    TIME(us)  AVG TIME(us)\n\
             nanosleep     20  102146.077      5107.304\n\
             read          10       5.000         0.500\n\
             (--top 2: 1 more group holds the other 2 events)\n"
        );
        // JSON names them too: its groups and not_shown add up to stats.counted.
        let json: serde_json::Value =
            serde_json::from_str(&render(Format::Json, &table, &groups)).unwrap();
        assert_eq!(
            json["not_shown"],
            serde_json::json!({"groups": 1, "count": 2})
        );
        assert_eq!(json["stats"]["counted"], 32);
        assert_eq!(json["groups"].as_array().unwrap().len(), 2);
    }

    /// A histogram with intervals, written as JSON and read back by
    /// [`super::super::saved::parse_histogram`]: the intervals come back whole (the same
    /// heat map), and the text is the run's log2 histogram.
    #[test]
    fn histogram_json_with_intervals_reads_back() {
        use super::super::{heatmap, saved};
        let columns = [KeyColumn {
            name: "comm".into(),
            kind: KeyKind::Str,
        }];
        let report = Report::Log2 {
            unit: "usecs".into(),
        };
        let table = Table {
            command: "runqlat",
            traced: "run queue latency",
            columns: &columns,
            report: &report,
        };
        let groups = [
            group("a", 5, 40, vec![0, 0, 4, 1]),
            group("b", 2, 20, vec![0, 0, 0, 2]),
        ];
        let intervals = heatmap::Intervals {
            place: "host h, all processes; every comm summed".into(),
            rows: vec![
                heatmap::Row {
                    low: 4,
                    high: 7,
                    label: "4 -> 7".into(),
                },
                heatmap::Row {
                    low: 8,
                    high: 15,
                    label: "8 -> 15".into(),
                },
            ],
            columns: vec![
                heatmap::Column {
                    clock: "10:00:01".into(),
                    start_ms: 0,
                    length_ms: 1001,
                    counts: vec![4, 0],
                },
                heatmap::Column {
                    clock: "10:00:02".into(),
                    start_ms: 1001,
                    length_ms: 999,
                    counts: vec![0, 3],
                },
            ],
        };
        let mut out = Vec::new();
        let stats = EngineStats {
            counted: 7,
            ..EngineStats::default()
        };
        write_with_intervals(
            &mut out,
            Format::Json,
            &table,
            &groups,
            &stats,
            Duration::from_secs(2),
            Some(&intervals),
        )
        .unwrap();
        let json = String::from_utf8(out).unwrap();
        assert!(
            json.ends_with(
                ",\"intervals\":{\"place\":\"host h, all processes; every comm summed\",\
                 \"rows\":[{\"low\":4,\"high\":7,\"label\":\"4 -> 7\"},\
                 {\"low\":8,\"high\":15,\"label\":\"8 -> 15\"}],\
                 \"columns\":[{\"clock\":\"10:00:01\",\"start_ms\":0,\"length_ms\":1001,\
                 \"counts\":[4,0]},{\"clock\":\"10:00:02\",\"start_ms\":1001,\
                 \"length_ms\":999,\"counts\":[0,3]}]}}\n"
            ),
            "{json}"
        );
        let back = saved::parse_histogram(json.as_bytes(), std::path::Path::new("r.json")).unwrap();
        assert_eq!(back.command, "runqlat");
        assert_eq!(back.unit, "usecs");
        assert_eq!(back.duration_s, 2.0);
        assert_eq!(back.intervals.as_ref(), Some(&intervals));
        assert_eq!(back.title(), "runqlat: run queue latency");
        assert_eq!(
            back.groups[1].hist,
            [saved::SavedBucket {
                low: 8,
                high: 15,
                count: 2
            }]
        );
        // The same text as the run's, group by group.
        assert_eq!(back.text(), render(Format::Text, &table, &groups));
        // The same heat map as the run drew from the same intervals.
        let title = back.title();
        let saved_intervals = back.intervals.as_ref().unwrap();
        assert_eq!(
            heatmap::svg(&saved_intervals.map(&title, &back.unit)),
            heatmap::svg(&intervals.map("runqlat: run queue latency", "usecs"))
        );
        // Columns that do not have one count per row are refused, naming the column.
        let bad = json.replace("\"counts\":[0,3]", "\"counts\":[3]");
        assert_eq!(
            saved::parse_histogram(bad.as_bytes(), std::path::Path::new("r.json"))
                .unwrap_err()
                .to_string(),
            "r.json: intervals.columns[1] has 1 counts for 2 rows; each column needs one \
             count per row"
        );
    }

    /// A linear histogram read back is shown one line per saved bucket.
    #[test]
    fn saved_linear_histogram_text() {
        let json = "{\"format\":\"tracekit\",\"format_version\":1,\"kind\":\"histogram\",\
                    \"command\":\"hist\",\"traced\":\"x\",\"duration_s\":1.0,\"unit\":\"ms\",\
                    \"groups\":[{\"key\":{},\"count\":3,\"sum\":0,\"hist\":[\
                    {\"low\":-9223372036854775808,\"high\":-1,\"count\":1},\
                    {\"low\":0,\"high\":9,\"count\":2}]}]}";
        let back =
            super::super::saved::parse_histogram(json.as_bytes(), std::path::Path::new("h.json"))
                .unwrap();
        assert_eq!(back.intervals, None);
        assert_eq!(
            back.text(),
            "     ms                  : count     distribution\n\
             \x20       < 0              : 1        |********************                    |\n\
             \x20       0 -> 9           : 2        |****************************************|\n"
        );
    }

    #[test]
    fn log2_histograms_per_group() {
        let columns = [KeyColumn {
            name: "comm".into(),
            kind: KeyKind::Str,
        }];
        let report = Report::Log2 {
            unit: "bytes".into(),
        };
        let table = Table {
            command: "bitesize",
            traced: "block I/O sizes",
            columns: &columns,
            report: &report,
        };
        let mut slots = vec![0; 18];
        slots[12] = 4;
        slots[16] = 512;
        let mut other = vec![0; 18];
        other[14] = 1;
        let groups = [group("dd", 516, 0, slots), group("tracekit", 1, 0, other)];
        assert_eq!(
            render(Format::Text, &table, &groups),
            "comm = dd\n\
             \x20    bytes               : count     distribution\n\
             \x20     4096 -> 8191       : 4        |                                        |\n\
             \x20     8192 -> 16383      : 0        |                                        |\n\
             \x20    16384 -> 32767      : 0        |                                        |\n\
             \x20    32768 -> 65535      : 0        |                                        |\n\
             \x20    65536 -> 131071     : 512      |****************************************|\n\
             \n\
             comm = tracekit\n\
             \x20    bytes               : count     distribution\n\
             \x20    16384 -> 32767      : 1        |****************************************|\n"
        );
        assert_eq!(
            render(Format::Json, &table, &groups[1..]),
            "{\"format\":\"tracekit\",\"format_version\":1,\"kind\":\"histogram\",\
             \"command\":\"bitesize\",\"traced\":\"block I/O sizes\",\"duration_s\":1.5,\
             \"unit\":\"bytes\",\"groups\":[{\"key\":{\"comm\":\"tracekit\"},\"count\":1,\
             \"sum\":0,\"hist\":[{\"low\":16384,\"high\":32767,\"count\":1}]}],\
             \"stats\":{\"counted\":1,\"filtered\":0,\"map_full\":0,\"no_start\":0,\
             \"start_map_full\":0,\"read_errors\":0,\"starts\":0,\"trace_lost\":0,\
             \"stack_map_full\":0,\"stack_errors\":0,\"announce_lost\":0,\"starts_ended\":0,\
             \"starts_exited\":0,\"missed\":0,\"starts_missed\":0}}\n"
        );
    }

    /// `--percentiles`: the folded log2 histogram, then the percentiles as the buckets
    /// they fall in; JSON carries the fine buckets and the same percentiles.
    #[test]
    fn log_linear_histogram_with_percentiles() {
        use tracekit_common::engine::log_linear_slot;
        let report = Report::LogLinear {
            unit: "usecs".into(),
            precision: 4,
            div: 1000,
            top: None,
        };
        let table = Table {
            command: "funclatency",
            traced: "latency of wait",
            columns: &[],
            report: &report,
        };
        let mut slots = vec![0u64; 976];
        slots[log_linear_slot(1000, 4) as usize] = 900;
        slots[log_linear_slot(10_000, 4) as usize] = 90;
        slots[log_linear_slot(100_000, 4) as usize] = 10;
        let groups = [Group {
            key: vec![],
            count: 1000,
            sum: 2_800_000_000,
            slots,
        }];
        assert_eq!(
            render(Format::Text, &table, &groups),
            "     usecs               : count     distribution\n\
             \x20      512 -> 1023       : 900      |****************************************|\n\
             \x20     1024 -> 2047       : 0        |                                        |\n\
             \x20     2048 -> 4095       : 0        |                                        |\n\
             \x20     4096 -> 8191       : 0        |                                        |\n\
             \x20     8192 -> 16383      : 90       |****                                    |\n\
             \x20    16384 -> 32767      : 0        |                                        |\n\
             \x20    32768 -> 65535      : 0        |                                        |\n\
             \x20    65536 -> 131071     : 10       |                                        |\n\
             \x20    percentile (usecs)  : bucket\n\
             \x20    p50                 : 992 -> 1023\n\
             \x20    p90                 : 992 -> 1023\n\
             \x20    p99                 : 9728 -> 10239\n\
             \x20    p99.9               : 98304 -> 102399\n\
             \x20    max                 : 98304 -> 102399\n\
             \x20    count 1000, mean 2800.000 usecs\n"
        );
        let json = render(Format::Json, &table, &groups);
        assert!(
            json.contains(
                "\"hist\":[{\"low\":992,\"high\":1023,\"count\":900},\
                 {\"low\":9728,\"high\":10239,\"count\":90},\
                 {\"low\":98304,\"high\":102399,\"count\":10}],\
                 \"percentiles\":{\"count\":1000,\"mean\":2800.0,\"percentiles\":[\
                 {\"name\":\"p50\",\"quantile\":0.5,\"low\":992,\"high\":1023},\
                 {\"name\":\"p90\",\"quantile\":0.9,\"low\":992,\"high\":1023},\
                 {\"name\":\"p99\",\"quantile\":0.99,\"low\":9728,\"high\":10239},\
                 {\"name\":\"p99.9\",\"quantile\":0.999,\"low\":98304,\"high\":102399}],\
                 \"max\":{\"low\":98304,\"high\":102399}}"
            ),
            "{json}"
        );
    }

    /// `syscount --latency --percentiles`: one row per syscall, each percentile the
    /// bucket it falls in, most calls first.
    #[test]
    fn log_linear_table_with_top() {
        use tracekit_common::engine::log_linear_slot;
        let columns = [KeyColumn {
            name: "syscall".into(),
            kind: KeyKind::Syscall,
        }];
        let report = Report::LogLinear {
            unit: "usecs".into(),
            precision: 4,
            div: 1000,
            top: Some(10),
        };
        let table = Table {
            command: "syscount",
            traced: "syscalls",
            columns: &columns,
            report: &report,
        };
        let mut sleeps = vec![0u64; 976];
        sleeps[log_linear_slot(1000, 4) as usize] = 99;
        sleeps[log_linear_slot(100_000, 4) as usize] = 1;
        let mut reads = vec![0u64; 976];
        reads[log_linear_slot(3, 4) as usize] = 5;
        let groups = [
            group("read", 5, 15_500, reads),
            group("nanosleep", 100, 199_000_000, sleeps),
        ];
        assert_eq!(
            render(Format::Text, &table, &groups),
            "SYSCALL    COUNT  MEAN(us)   P50(us)   P90(us)   P99(us)     P99.9(us)       MAX(us)\n\
             nanosleep    100  1990.000  992-1023  992-1023  992-1023  98304-102399  98304-102399\n\
             read           5     3.100         3         3         3             3             3\n"
        );
    }

    #[test]
    fn linear_buckets_in_json() {
        let report = Report::Linear {
            min: 0,
            step: 100,
            unit: "len".into(),
        };
        let table = Table {
            command: "hist",
            traced: "net:net_dev_xmit",
            columns: &[],
            report: &report,
        };
        let groups = [Group {
            key: vec![],
            count: 3,
            sum: 0,
            slots: vec![1, 0, 1, 1],
        }];
        let json = render(Format::Json, &table, &groups);
        assert!(
            json.contains(
                "\"hist\":[{\"low\":-9223372036854775808,\"high\":-1,\"count\":1},\
                 {\"low\":100,\"high\":199,\"count\":1},\
                 {\"low\":200,\"high\":9223372036854775807,\"count\":1}]"
            ),
            "{json}"
        );
        let _ = BTreeMap::<u8, u8>::new();
    }

    #[test]
    fn unended_starts_counted() {
        let stats = EngineStats {
            starts: 300,
            starts_ended: 287,
            ..EngineStats::default()
        };
        assert_eq!(
            unended(&stats),
            "Not ended: 13 starts whose end was not seen (in flight when tracing stopped, or \
             ended unseen: see Lost).\n"
        );
        let all_ended = EngineStats {
            starts: 300,
            starts_ended: 300,
            ..EngineStats::default()
        };
        assert_eq!(unended(&all_ended), "");
    }

    #[test]
    fn summary_accounts_for_every_loss() {
        let stats = EngineStats {
            counted: 632,
            filtered: 7,
            map_full: 3,
            start_map_full: 2,
            no_start: 4,
            missed: 2,
            starts_missed: 1,
            ..EngineStats::default()
        };
        assert_eq!(
            summary(&stats, Duration::from_secs(2), "duration reached", false),
            "Counted 632 events (7 more did not pass the filter) in 2.00 s (duration reached).\n\
             Lost: 3 events to a full map (raise --max-groups); 2 starts to a full start map \
             (raise --max-in-flight); 2 events and 1 starts not seen (the kernel skips a \
             program while another BPF program runs on the CPU).\n\
             Not counted: 4 ends whose start was not seen (in flight when tracing began).\n"
        );
        assert_eq!(
            summary(
                &EngineStats::default(),
                Duration::ZERO,
                "command exited",
                true
            ),
            "Counted 0 events in 0.00 s (command exited).\nLost: nothing.\n"
        );
        // One of each: every noun agrees with its number (issue 25).
        let one = EngineStats {
            counted: 1,
            filtered: 1,
            map_full: 1,
            start_map_full: 1,
            read_errors: 1,
            no_start: 1,
            ..EngineStats::default()
        };
        assert_eq!(
            summary(&one, Duration::from_secs(1), "duration reached", false),
            "Counted 1 event (1 more did not pass the filter) in 1.00 s (duration reached).\n\
             Lost: 1 event to a full map (raise --max-groups); 1 start to a full start map \
             (raise --max-in-flight); 1 event whose fields could not be read.\n\
             Not counted: 1 end whose start was not seen (in flight when tracing began).\n"
        );
    }
}
