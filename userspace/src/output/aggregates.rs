//! Aggregates as text and JSON: a table of counts per group (bcc `syscount`, `funccount`),
//! or a histogram per group (bcc `print_log2_hist`, [`super::hist`]); and the end-of-run
//! account of what was counted and what was lost.
//!
//! The input is neutral: groups with decoded keys ([`Group`], from
//! [`crate::engine::groups`]) and the engine's counters; nothing here reads a map.

use std::{io, time::Duration};

use serde::Serialize;

use super::{Format, hist, percentiles};

pub mod split;
use crate::engine::{EngineStats, Group, KeyColumn, KeyValue};

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
        /// Clear the terminal before each interval's table, as `top` does, when standard
        /// output is one (biotop, slabratetop; `false` with bcc's `-C`/`--noclear`).
        clear: bool,
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
    /// Sums per group with one column per probe, the probe's key column folded away
    /// (tcptop's `RX_KB TX_KB`): [`split`].
    Split(split::Split),
    /// cachestat's line ([`super::pagecache`]): page cache hits, misses and dirties from
    /// the counts of four kernel functions (the first key column), in this order: page
    /// accessed, page added, page dirtied, buffer dirtied.
    PageCache { functions: [String; 4] },
    /// Access patterns per disk (`biopattern`), libbpf-tools' `DISK %RND %SEQ COUNT
    /// KBYTES`: the groups are keyed by (disk, `follows(...)`: 0 random, 1 sequential, 2 a
    /// stream's first event, which counts neither way, as in libbpf-tools) with the sum of
    /// 512-byte sectors.
    Pattern,
}

impl Report {
    /// The unit the values are shown in, for histograms.
    pub fn unit(&self) -> Option<&str> {
        match self {
            Report::Log2 { unit }
            | Report::Linear { unit, .. }
            | Report::LogLinear { unit, .. } => Some(unit),
            Report::Counts { .. }
            | Report::Split(_)
            | Report::PageCache { .. }
            | Report::Pattern => None,
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
    kind: super::saved::SavedKind,
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
        Report::Counts { .. } | Report::Split(_) | Report::PageCache { .. } | Report::Pattern => {
            (0, 0)
        }
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
                super::saved::SavedKind::Histogram
            } else {
                super::saved::SavedKind::Counts
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
        Report::PageCache { functions } => {
            let stat = super::pagecache::PageCacheCounts::of(groups, functions).stat();
            super::pagecache::write(out, &stat, super::pagecache::meminfo_mb())
        }
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
        Report::Split(split) => {
            let (header, table_rows, hidden) = split::table(split, table.columns, &rows);
            let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
            let numeric = split.probes.len() + split.counts.len();
            out.write_all(hist::table(&header_refs, &table_rows, numeric).as_bytes())?;
            if hidden > 0 {
                writeln!(
                    out,
                    "(--top {}: {} not shown)",
                    table_rows.len(),
                    super::plural(hidden as u64, "more row", "more rows"),
                )?;
            }
            Ok(())
        }
        Report::Pattern => out.write_all(pattern_table(table.columns, groups).as_bytes()),
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

/// [`Report::Pattern`]'s table: one row per disk (the first key column), in libbpf-tools'
/// layout (`%-7s %5s %5s %8s %10s`); percentages round down as its integer division does.
/// Disks whose only events were first ones are left out.
pub fn pattern_table(columns: &[KeyColumn], groups: &[Group]) -> String {
    // disk -> (random, sequential, sectors)
    let mut disks: std::collections::BTreeMap<String, (u64, u64, u64)> = Default::default();
    for group in groups {
        let (Some(disk), Some(KeyValue::Int(pattern))) = (group.key.first(), group.key.get(1))
        else {
            continue;
        };
        let entry = disks.entry(disk.to_string()).or_default();
        match pattern {
            0 => entry.0 += group.count,
            1 => entry.1 += group.count,
            _ => continue,
        }
        entry.2 += group.sum;
    }
    let name = columns.first().map_or("DISK", |c| c.name.as_str());
    let mut text = format!(
        "{:<7} {:>5} {:>5} {:>8} {:>10}\n",
        name, "%RND", "%SEQ", "COUNT", "KBYTES"
    );
    for (disk, (random, sequential, sectors)) in disks {
        let total = random + sequential;
        if total == 0 {
            continue;
        }
        text.push_str(&format!(
            "{disk:<7} {:>5} {:>5} {total:>8} {:>10}\n",
            random * 100 / total,
            sequential * 100 / total,
            sectors * 512 / 1024
        ));
    }
    text
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
    // (count, one, many, what became of them)
    let losses = [
        (
            stats.map_full,
            "event",
            "events",
            "to a full map (raise --max-groups)",
        ),
        (
            stats.start_map_full,
            "start",
            "starts",
            "to a full start map (raise --max-in-flight)",
        ),
        (
            stats.read_errors,
            "event",
            "events",
            "whose fields could not be read",
        ),
        (
            stats.stack_map_full,
            "stack",
            "stacks",
            "to a full stack map",
        ),
        (
            stats.stack_errors,
            "stack",
            "stacks",
            "the kernel could not walk",
        ),
        (
            stats.announce_lost,
            "new-process notice",
            "new-process notices",
            "to a full ring buffer (their symbols may not resolve if they exited)",
        ),
    ];
    let mut lost: Vec<String> = losses
        .iter()
        .filter(|(count, ..)| *count > 0)
        .map(|(count, one, many, what)| format!("{} {what}", super::plural(*count, one, many)))
        .collect();
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
    let busy = "(the kernel skips a program while another BPF program runs on the CPU, \
                and a kretprobe's return while more calls are in flight than its maxactive)";
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
mod tests;
