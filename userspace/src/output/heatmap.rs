//! Latency (or size) heat maps as SVG, as in Brendan Gregg's "Visualizing System Latency"
//! (ACM Queue, 2010): x is time, one column per `-i` interval; y is the histogram's buckets,
//! low values at the bottom; a cell's colour is how many events fell in that bucket in
//! that interval (white: none). Every cell has hover text (time, range, count, share of the
//! column) and carries its count in `data-count`, so the cells of a map add up to the events
//! counted.
//!
//! The columns are the kernel histograms read at each interval, summed over groups
//! ([`Column`]); nothing here reads a map.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// One interval's histogram.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Column {
    /// Wall-clock time at the interval's end (`HH:MM:SS`).
    pub clock: String,
    /// Milliseconds from the start of tracing to the interval's start.
    pub start_ms: u64,
    /// The interval's length, in milliseconds.
    pub length_ms: u64,
    /// Events per bucket (row), the same buckets in every column.
    pub counts: Vec<u64>,
}

/// What a heat map shows.
#[derive(Clone, Debug)]
pub struct HeatMap<'a> {
    /// The title: what was traced (`biolatency: block I/O latency (issue to completion)`).
    pub title: &'a str,
    /// Where: host and scope (`host web1, all processes`).
    pub place: &'a str,
    /// The buckets' unit (`usecs`, `bytes`), the y axis's name.
    pub unit: &'a str,
    /// Each row's label (`1024 -> 2047`), bottom row first; as many as a column's counts.
    pub rows: Vec<String>,
    /// The columns, in time order.
    pub columns: &'a [Column],
}

/// One row of a heat map: a histogram bucket, inclusive bounds in the histogram's unit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Row {
    /// The lowest value the bucket holds (`i64::MIN` for a linear histogram's underflow).
    pub low: i128,
    /// The highest value it holds (`i64::MAX` for a linear histogram's overflow).
    pub high: i128,
    /// The label the y axis shows (`1024 -> 2047`, `< 10`, `>= 100`).
    pub label: String,
}

/// A run's heat map as the histogram JSON saves it (`intervals`, with `-i` and
/// `-o FILE.json`): everything [`svg`] draws besides the title and unit, which the JSON
/// has already, so that `tracekit report` draws the same bytes from the file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Intervals {
    /// Where: host and scope, as the heat map's second line shows it.
    pub place: String,
    /// The rows, bottom (lowest bucket) first: from the lowest to the highest bucket any
    /// column has events in.
    pub rows: Vec<Row>,
    /// One per interval, in time order; each column's `counts` has one count per row.
    pub columns: Vec<Column>,
}

impl Intervals {
    /// The heat map of these intervals, titled `title`, in `unit`.
    pub fn map<'a>(&'a self, title: &'a str, unit: &'a str) -> HeatMap<'a> {
        HeatMap {
            title,
            place: &self.place,
            unit,
            rows: self.rows.iter().map(|row| row.label.clone()).collect(),
            columns: &self.columns,
        }
    }
}

const LEFT: usize = 190;
const TOP: usize = 84;
const BOTTOM: usize = 50;
const RIGHT: usize = 30;

/// Escapes text for SVG content and attributes.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// The fill of a cell with `count` events when the fullest cell has `max`: white for none,
/// then from pale yellow to dark red, by the square root of the share of the maximum (so a
/// few events stay visible beside a mode of thousands).
fn fill(count: u64, max: u64) -> String {
    if count == 0 || max == 0 {
        return "#ffffff".into();
    }
    let t = (count as f64 / max as f64).sqrt();
    let lerp = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        lerp(255.0, 150.0),
        lerp(237.0, 0.0),
        lerp(160.0, 0.0)
    )
}

/// `start_ms` as seconds from the start, as axis labels show it.
/// Rounded to 0.1 s, whole seconds without a decimal (intervals last a few ms longer than
/// asked).
fn seconds(ms: u64) -> String {
    let tenths = (ms + 50) / 100;
    if tenths.is_multiple_of(10) {
        format!("{}s", tenths / 10)
    } else {
        format!("{}.{}s", tenths / 10, tenths % 10)
    }
}

/// Renders `map` as an SVG document.
///
/// ```
/// use tracekit::output::heatmap::{Column, HeatMap, svg};
/// let columns = [
///     Column { clock: "10:00:01".into(), start_ms: 0, length_ms: 1000, counts: vec![3, 1] },
///     Column { clock: "10:00:02".into(), start_ms: 1000, length_ms: 1000, counts: vec![0, 4] },
/// ];
/// let map = HeatMap {
///     title: "biolatency: block I/O latency",
///     place: "host h, all processes",
///     unit: "usecs",
///     rows: vec!["0 -> 1".into(), "2 -> 3".into()],
///     columns: &columns,
/// };
/// let text = svg(&map);
/// assert_eq!(text.matches("class=\"cell\"").count(), 4);
/// assert!(text.contains("data-count=\"4\""));
/// assert!(text.contains(
///     "<title>10:00:01 to 10:00:02 (1s to 2s): 2 -&gt; 3 usecs: 4 events, 100.0% of 4</title>"
/// ));
/// ```
pub fn svg(map: &HeatMap<'_>) -> String {
    let n_cols = map.columns.len().max(1);
    let n_rows = map.rows.len().max(1);
    let cell_w = (900 / n_cols).clamp(6, 60);
    let cell_h = (480 / n_rows).clamp(8, 24);
    // Wide enough for the titles.
    let width = (LEFT + cell_w * n_cols + RIGHT).max(760);
    let height = TOP + cell_h * n_rows + BOTTOM;
    let max = map
        .columns
        .iter()
        .flat_map(|c| c.counts.iter().copied())
        .max()
        .unwrap_or(0);
    let total: u64 = map.columns.iter().flat_map(|c| c.counts.iter()).sum();
    // Columns are placed by time: an interval read late (a starved reader) is wider, and
    // the one after it starts where it ended.
    let span_ms = map
        .columns
        .last()
        .map_or(1, |c| (c.start_ms + c.length_ms).max(1));
    let plot_w = cell_w * n_cols;
    let x_of = |ms: u64| LEFT + (ms as u128 * plot_w as u128 / span_ms as u128) as usize;
    let interval = map.columns.first().map_or(0, |c| c.length_ms);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" font-family=\"Verdana, sans-serif\" font-size=\"11\">"
    );
    let _ = writeln!(
        out,
        "<rect x=\"0\" y=\"0\" width=\"{width}\" height=\"{height}\" fill=\"#f8f8f8\"/>"
    );
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{}</text>",
        width / 2,
        escape(map.title)
    );
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"42\" text-anchor=\"middle\" fill=\"#444\">{}</text>\n\
         <text x=\"{}\" y=\"60\" text-anchor=\"middle\" fill=\"#444\">{} events in {} \
         columns of {}; colour: events per bucket and column (darkest: {max})</text>",
        width / 2,
        escape(map.place),
        width / 2,
        total,
        map.columns.len(),
        seconds(interval),
    );
    // The y axis: the unit, and the rows' labels (every row when they fit).
    let label_every = (14 / cell_h).max(1);
    let _ = writeln!(
        out,
        "<text x=\"14\" y=\"{}\" transform=\"rotate(-90 14 {})\" text-anchor=\"middle\">{}</text>",
        TOP + cell_h * n_rows / 2,
        TOP + cell_h * n_rows / 2,
        escape(map.unit)
    );
    for (row, label) in map.rows.iter().enumerate() {
        if row % label_every != 0 {
            continue;
        }
        let y = TOP + cell_h * (n_rows - row) - cell_h / 2 + 4;
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{y}\" text-anchor=\"end\">{}</text>",
            LEFT - 6,
            escape(label)
        );
    }
    // The x axis: seconds from the start, under the columns (about every 60 px).
    let x_every = (60 / cell_w).max(1);
    for (index, column) in map.columns.iter().enumerate() {
        if index % x_every != 0 {
            continue;
        }
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            (x_of(column.start_ms) + x_of(column.start_ms + column.length_ms)) / 2,
            TOP + cell_h * n_rows + 16,
            seconds(column.start_ms)
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">time (one column per interval)</text>",
        LEFT + cell_w * n_cols / 2,
        TOP + cell_h * n_rows + 36
    );
    for (index, column) in map.columns.iter().enumerate() {
        let column_total: u64 = column.counts.iter().sum();
        let started = if index == 0 {
            "start".to_string()
        } else {
            map.columns[index - 1].clock.clone()
        };
        for (row, &count) in column.counts.iter().enumerate() {
            let x = x_of(column.start_ms);
            let w = (x_of(column.start_ms + column.length_ms) - x).max(1);
            let y = TOP + cell_h * (n_rows - 1 - row);
            let share = if column_total > 0 {
                100.0 * count as f64 / column_total as f64
            } else {
                0.0
            };
            let label = map.rows.get(row).map_or("", String::as_str);
            let _ = writeln!(
                out,
                "<rect class=\"cell\" x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{cell_h}\" \
                 fill=\"{}\" data-column=\"{index}\" data-row=\"{row}\" data-count=\"{count}\">\
                 <title>{} to {} ({} to {}): {} {}: {count} events, {share:.1}% of {column_total}</title></rect>",
                fill(count, max),
                escape(&started),
                escape(&column.clock),
                seconds(column.start_ms),
                seconds(column.start_ms + column.length_ms),
                escape(label),
                escape(map.unit),
            );
        }
    }
    let _ = writeln!(
        out,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888\"/>",
        cell_w * n_cols,
        cell_h * n_rows
    );
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_is_white_for_none_and_darkest_at_the_maximum() {
        assert_eq!(fill(0, 10), "#ffffff");
        assert_eq!(fill(10, 10), "#960000");
        assert_eq!(fill(1, 1_000_000), "#ffeda0");
    }

    #[test]
    fn titles_are_escaped() {
        let columns = [Column {
            clock: "00:00:01".into(),
            start_ms: 0,
            length_ms: 500,
            counts: vec![1],
        }];
        let map = HeatMap {
            title: "hist: a<b & \"c\"",
            place: "host x",
            unit: "bytes",
            rows: vec!["0 -> 1".into()],
            columns: &columns,
        };
        let text = svg(&map);
        assert!(text.contains("hist: a&lt;b &amp; &quot;c&quot;"), "{text}");
        assert!(text.contains("1 events in 1 columns of 0.5s"), "{text}");
        assert!(text.contains("(0s to 0.5s)"), "{text}");
    }

    /// An interval read late is drawn as wide as it lasted; the next starts where it ended.
    #[test]
    fn columns_are_as_wide_as_their_intervals() {
        let column = |start_ms, length_ms| Column {
            clock: "00:00:01".into(),
            start_ms,
            length_ms,
            counts: vec![1],
        };
        let columns = [column(0, 1000), column(1000, 3000), column(4000, 1000)];
        let map = HeatMap {
            title: "t",
            place: "p",
            unit: "usecs",
            rows: vec!["0 -> 1".into()],
            columns: &columns,
        };
        let text = svg(&map);
        // 3 columns of 60 px: 180 px for 5 s.
        assert!(text.contains("x=\"190\" y=\"84\" width=\"36\""), "{text}");
        assert!(text.contains("x=\"226\" y=\"84\" width=\"108\""), "{text}");
        assert!(text.contains("x=\"334\" y=\"84\" width=\"36\""), "{text}");
    }
}
