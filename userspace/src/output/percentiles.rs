//! Percentiles from a kernel log-linear histogram (`--percentiles`): p50, p90, p99, p99.9
//! and max, each as the bounds of the kernel bucket it falls in, so no digit is printed that
//! the buckets do not hold; count and mean are exact (the kernel keeps the sum).
//!
//! The kernel's buckets are replayed into an [`hdrhistogram::Histogram`] finer than them
//! (3 significant digits against at most 7 sub-bucket bits), which ranks them; the value it
//! returns is mapped back to the kernel bucket that holds it
//! ([`tracekit_common::engine::log_linear_slot`]).

use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde::Serialize;
use tracekit_common::engine::{log_linear_slot, log_linear_slot_bounds, log_linear_to_log2};

/// The quantiles reported, with their names.
pub const QUANTILES: [(&str, f64); 4] =
    [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)];

/// The values one kernel bucket holds, inclusive, in the histogram's unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Bounds {
    pub low: u64,
    pub high: u64,
}

/// One quantile: its name (`p99`), the quantile (0.99) and its bucket.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Percentile {
    pub name: &'static str,
    pub quantile: f64,
    #[serde(flatten)]
    pub bounds: Bounds,
}

/// What `--percentiles` reports for one histogram.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Events.
    pub count: u64,
    /// Mean in the histogram's unit: the kernel's exact sum of raw values over `count`,
    /// divided by the unit.
    pub mean: f64,
    /// [`QUANTILES`], in order.
    pub percentiles: Vec<Percentile>,
    /// The highest non-empty bucket.
    pub max: Bounds,
}

/// The percentiles of `slots` (a log-linear histogram with `precision` sub-bucket bits),
/// whose raw values summed to `sum` (`div` raw units per histogram unit); `None` when empty.
///
/// ```
/// use tracekit::output::percentiles::{Bounds, summarize};
/// use tracekit_common::engine::log_linear_slot;
/// let mut slots = vec![0u64; 976];
/// slots[log_linear_slot(1000, 4) as usize] = 900; // 1000 us
/// slots[log_linear_slot(10_000, 4) as usize] = 90;
/// slots[log_linear_slot(100_000, 4) as usize] = 10;
/// let summary = summarize(&slots, 4, 1_900_000_000, 1000).unwrap();
/// assert_eq!(summary.percentiles[0].bounds, Bounds { low: 992, high: 1023 });
/// assert_eq!(summary.percentiles[2].bounds, Bounds { low: 9728, high: 10239 });
/// assert_eq!(summary.percentiles[3].bounds, Bounds { low: 98304, high: 102399 });
/// assert_eq!((summary.count, summary.mean), (1000, 1900.0));
/// ```
pub fn summarize(slots: &[u64], precision: u32, sum: u64, div: u64) -> Option<Summary> {
    let last = slots.iter().rposition(|&c| c > 0)?;
    let bounds = |slot: usize| {
        let (low, high) = log_linear_slot_bounds(slot as u32, precision);
        Bounds { low, high }
    };
    let top = bounds(last).low.max(2);
    let mut hdr = Histogram::<u64>::new_with_bounds(1, top, 3).ok()?;
    let mut count = 0u64;
    for (slot, &n) in slots.iter().enumerate().filter(|(_, n)| **n > 0) {
        hdr.record_n(bounds(slot).low, n).ok()?;
        count += n;
    }
    let percentiles = QUANTILES
        .iter()
        .map(|&(name, quantile)| Percentile {
            name,
            quantile,
            bounds: bounds(log_linear_slot(hdr.value_at_quantile(quantile), precision) as usize),
        })
        .collect();
    Some(Summary {
        count,
        mean: sum as f64 / count as f64 / div.max(1) as f64,
        percentiles,
        max: bounds(last),
    })
}

/// A log-linear histogram folded into log2 slots (the buckets nest in the powers of two),
/// for the familiar rendering ([`super::hist::log2`]).
pub fn fold_to_log2(slots: &[u64], precision: u32) -> Vec<u64> {
    let mut log2 = vec![0u64; 64];
    for (slot, &n) in slots.iter().enumerate() {
        log2[log_linear_to_log2(slot as u32, precision) as usize] += n;
    }
    log2
}

/// Renders a summary under the histogram, `unit` naming the values (`usecs`, `bytes`).
///
/// ```
/// use tracekit::output::percentiles::{Bounds, Percentile, Summary, text};
/// let b = |low, high| Bounds { low, high };
/// let summary = Summary {
///     count: 1000,
///     mean: 1900.0,
///     percentiles: vec![
///         Percentile { name: "p50", quantile: 0.5, bounds: b(992, 1023) },
///         Percentile { name: "p99.9", quantile: 0.999, bounds: b(7, 7) },
///     ],
///     max: b(98304, 106495),
/// };
/// assert_eq!(text(&summary, "usecs"), "\
/// \x20    percentile (usecs)  : bucket
/// \x20    p50                 : 992 -> 1023
/// \x20    p99.9               : 7
/// \x20    max                 : 98304 -> 106495
/// \x20    count 1000, mean 1900.000 usecs
/// ");
/// ```
pub fn text(summary: &Summary, unit: &str) -> String {
    let mut out = String::new();
    let header = format!("percentile ({unit})");
    let _ = writeln!(out, "     {header:<19} : bucket");
    let line = |out: &mut String, name: &str, b: Bounds| {
        let range = if b.low == b.high {
            b.low.to_string()
        } else {
            format!("{} -> {}", b.low, b.high)
        };
        let _ = writeln!(out, "     {name:<19} : {range}");
    };
    for p in &summary.percentiles {
        line(&mut out, p.name, p.bounds);
    }
    line(&mut out, "max", summary.max);
    let _ = writeln!(
        out,
        "     count {}, mean {:.3} {unit}",
        summary.count, summary.mean
    );
    out
}

#[cfg(test)]
mod tests {
    use tracekit_common::engine::{DEFAULT_PRECISION, MAX_PRECISION, log_linear_slots};

    use super::*;

    fn histogram(values: &[(u64, u64)], precision: u32) -> Vec<u64> {
        let mut slots = vec![0u64; log_linear_slots(precision) as usize];
        for &(value, n) in values {
            slots[log_linear_slot(value, precision) as usize] += n;
        }
        slots
    }

    /// 900 waits of 1 ms, 90 of 10 ms, 10 of 100 ms, in ns: the fixture's distribution.
    #[test]
    fn percentiles_of_the_fixture_distribution_in_ns() {
        let slots = histogram(
            &[(1_000_000, 900), (10_000_000, 90), (100_000_000, 10)],
            DEFAULT_PRECISION,
        );
        let summary = summarize(&slots, DEFAULT_PRECISION, 2_800_000_000, 1).unwrap();
        let got: Vec<(&str, u64, u64)> = summary
            .percentiles
            .iter()
            .map(|p| (p.name, p.bounds.low, p.bounds.high))
            .collect();
        assert_eq!(
            got,
            [
                ("p50", 983_040, 1_015_807),
                ("p90", 983_040, 1_015_807),
                // Rank 990 of 1000 is the last 10 ms wait; rank 991 would be 100 ms.
                ("p99", 9_961_472, 10_485_759),
                ("p99.9", 96_468_992, 100_663_295),
            ]
        );
        assert_eq!(
            summary.max,
            Bounds {
                low: 96_468_992,
                high: 100_663_295
            }
        );
        assert_eq!((summary.count, summary.mean), (1000, 2_800_000.0));
    }

    /// Every value's percentile bucket holds it, at every precision, from 0 to u64::MAX.
    #[test]
    fn a_single_value_is_every_percentile_of_itself() {
        for precision in 0..=MAX_PRECISION {
            for e in 0..64 {
                for value in [0, 1, (1u64 << e) - 1, 1 << e, (1 << e) + 1, u64::MAX] {
                    let slots = histogram(&[(value, 3)], precision);
                    let summary = summarize(&slots, precision, 0, 1).unwrap();
                    for p in &summary.percentiles {
                        assert!(
                            p.bounds.low <= value && value <= p.bounds.high,
                            "p{precision} {value}: {p:?}"
                        );
                    }
                    assert_eq!(summary.max, summary.percentiles[3].bounds);
                }
            }
        }
    }

    #[test]
    fn empty_histograms_have_no_percentiles() {
        assert_eq!(summarize(&[0; 976], 4, 0, 1), None);
    }

    #[test]
    fn folding_keeps_every_count_in_its_power_of_two() {
        let slots = histogram(&[(0, 1), (1, 2), (15, 3), (16, 4), (1_000_000, 5)], 4);
        let log2 = fold_to_log2(&slots, 4);
        assert_eq!(log2[0], 3);
        assert_eq!(log2[3], 3);
        assert_eq!(log2[4], 4);
        assert_eq!(log2[19], 5);
        assert_eq!(log2.iter().sum::<u64>(), 15);
    }
}
