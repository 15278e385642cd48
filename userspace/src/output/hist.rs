//! Histogram and count text output, one renderer for every command.
//!
//! Log2 histograms follow bcc's `print_log2_hist` (`bcc/table.py`) line for line:
//! `low -> high : count |****|`, 40 stars for the largest bucket (20 when values pass
//! 2^32), the unit in the header, and only the non-empty range printed.

use std::fmt::Write as _;

const STARS_MAX: u64 = 40;

/// bcc's `_stars`: `width * count / max` stars, `+` in the last place if the count exceeds max.
fn stars(count: u64, max: u64, width: u64) -> String {
    if max == 0 {
        return String::new();
    }
    let n = ((width as u128 * count as u128) / max as u128).min(width as u128) as usize;
    "*".repeat(n)
}

/// Renders a log2 histogram: `slots[i]` counts values in `[2^i, 2^(i+1))`, slot 0 also 0.
/// `unit` heads the value column (`bytes`, `usecs`). Empty histograms render as nothing.
///
/// ```
/// let text = tracekit::output::hist::log2(&[0, 0, 3, 1], "usecs");
/// assert_eq!(text, "\
/// \x20    usecs               : count     distribution
/// \x20        4 -> 7          : 3        |****************************************|
/// \x20        8 -> 15         : 1        |*************                           |
/// ");
/// ```
pub fn log2(slots: &[u64], unit: &str) -> String {
    let Some(last) = slots.iter().rposition(|&c| c > 0) else {
        return String::new();
    };
    let first = slots.iter().position(|&c| c > 0).unwrap_or(0);
    let max = slots.iter().copied().max().unwrap_or(0);
    // bcc's index is ours + 1; it widens the columns when index 32 is passed.
    let wide = last + 1 > 32;
    let (width, stars_width) = if wide {
        (20, STARS_MAX / 2)
    } else {
        (10, STARS_MAX)
    };
    let mut out = String::new();
    if wide {
        let _ = writeln!(out, "               {unit:<29} : count     distribution");
    } else {
        let _ = writeln!(out, "     {unit:<19} : count     distribution");
    }
    for (slot, &count) in slots.iter().enumerate().take(last + 1).skip(first) {
        let (low, high) = tracekit_common::engine::log2_slot_bounds(slot as u32);
        let _ = writeln!(
            out,
            "{low:>width$} -> {high:<width$} : {count:<8} |{:<sw$}|",
            stars(count, max, stars_width),
            sw = stars_width as usize
        );
    }
    out
}

/// Renders a linear histogram of `slots` as the engine keeps them: slot 0 counts values
/// below `min`, the last slot values at or above the range's end, the others buckets of
/// `step` from `min` (bcc's `print_linear_hist`, with bucket low ends as labels).
///
/// ```
/// let text = tracekit::output::hist::linear(&[0, 2, 0, 1, 0], 0, 10, "ms");
/// assert_eq!(text, "\
/// \x20    ms            : count     distribution
/// \x20       0          : 2        |****************************************|
/// \x20       10         : 0        |                                        |
/// \x20       20         : 1        |********************                    |
/// ");
/// ```
pub fn linear(slots: &[u64], min: i64, step: u64, unit: &str) -> String {
    let Some(last) = slots.iter().rposition(|&c| c > 0) else {
        return String::new();
    };
    let first = slots.iter().position(|&c| c > 0).unwrap_or(0);
    let max = slots.iter().copied().max().unwrap_or(0);
    let mut out = String::new();
    let _ = writeln!(out, "     {unit:<13} : count     distribution");
    let buckets = slots.len().saturating_sub(2);
    for (slot, &count) in slots.iter().enumerate().take(last + 1).skip(first) {
        let label = if slot == 0 {
            format!("< {min}")
        } else if slot == slots.len() - 1 {
            format!(
                ">= {}",
                i128::from(min) + i128::from(step) * buckets as i128
            )
        } else {
            (i128::from(min) + i128::from(step) * (slot as i128 - 1)).to_string()
        };
        let _ = writeln!(
            out,
            "        {label:<10} : {count:<8} |{:<40}|",
            stars(count, max, STARS_MAX)
        );
    }
    out
}

/// Renders buckets given by their labels (`< 10`, `10 -> 19`), in order, as [`linear`]
/// lays them out; for histograms read back from JSON whose buckets are not log2 slots.
///
/// ```
/// let text = tracekit::output::hist::labelled(&[("< 10".into(), 2), ("10 -> 19".into(), 1)], "ms");
/// assert_eq!(text, "\
/// \x20    ms                  : count     distribution
/// \x20       < 10             : 2        |****************************************|
/// \x20       10 -> 19         : 1        |********************                    |
/// ");
/// ```
pub fn labelled(buckets: &[(String, u64)], unit: &str) -> String {
    if buckets.is_empty() {
        return String::new();
    }
    let max = buckets.iter().map(|(_, n)| *n).max().unwrap_or(0);
    let mut out = String::new();
    let _ = writeln!(out, "     {unit:<19} : count     distribution");
    for (label, count) in buckets {
        let _ = writeln!(
            out,
            "        {label:<16} : {count:<8} |{:<40}|",
            stars(*count, max, STARS_MAX)
        );
    }
    out
}

/// Renders rows as aligned columns: a header line, then each row; numeric-looking columns
/// are right-aligned (the last `numeric` columns).
///
/// ```
/// let text = tracekit::output::hist::table(
///     &["SYSCALL", "COUNT"],
///     &[vec!["getppid".into(), "1000".into()], vec!["read".into(), "7".into()]],
///     1,
/// );
/// assert_eq!(text, "SYSCALL  COUNT\ngetppid   1000\nread         7\n");
/// ```
pub fn table(header: &[&str], rows: &[Vec<String>], numeric: usize) -> String {
    let columns = header.len();
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .map(|row| row.get(c).map_or(0, String::len))
                .chain([header[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let line = |out: &mut String, cells: &mut dyn Iterator<Item = &str>| {
        let mut parts = Vec::new();
        for (c, cell) in cells.enumerate() {
            let w = widths[c];
            parts.push(if c + numeric >= columns {
                format!("{cell:>w$}")
            } else if c + 1 == columns {
                cell.to_string()
            } else {
                format!("{cell:<w$}")
            });
        }
        let _ = writeln!(out, "{}", parts.join("  ").trim_end());
    };
    line(&mut out, &mut header.iter().copied());
    for row in rows {
        line(&mut out, &mut row.iter().map(String::as_str));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bitesize shape from bcc's `tools/bitesize_example.txt`: kbytes buckets, only the
    /// non-empty range.
    #[test]
    fn log2_matches_bcc_shape() {
        let mut slots = vec![0u64; 64];
        slots[12] = 3; // 4096..8191
        slots[16] = 95; // 65536..131071
        slots[17] = 2;
        assert_eq!(
            log2(&slots, "bytes"),
            "     bytes               : count     distribution\n\
             \x20     4096 -> 8191       : 3        |*                                       |\n\
             \x20     8192 -> 16383      : 0        |                                        |\n\
             \x20    16384 -> 32767      : 0        |                                        |\n\
             \x20    32768 -> 65535      : 0        |                                        |\n\
             \x20    65536 -> 131071     : 95       |****************************************|\n\
             \x20   131072 -> 262143     : 2        |                                        |\n"
        );
    }

    #[test]
    fn log2_first_slot_holds_zero_and_one() {
        assert_eq!(
            log2(&[5, 5], "nsecs"),
            "     nsecs               : count     distribution\n\
             \x20        0 -> 1          : 5        |****************************************|\n\
             \x20        2 -> 3          : 5        |****************************************|\n"
        );
    }

    #[test]
    fn log2_widens_past_two_to_the_32() {
        let mut slots = vec![0u64; 64];
        slots[33] = 1;
        assert_eq!(
            log2(&slots, "nsecs"),
            "               nsecs                         : count     distribution\n\
             \x20         8589934592 -> 17179869183          : 1        |********************|\n"
        );
    }

    #[test]
    fn empty_histogram_prints_nothing() {
        assert_eq!(log2(&[0; 64], "usecs"), "");
        assert_eq!(linear(&[0; 5], 0, 1, "ms"), "");
    }

    #[test]
    fn linear_labels_under_and_overflow() {
        assert_eq!(
            linear(&[1, 0, 0, 2], 100, 50, "bytes"),
            "     bytes         : count     distribution\n\
             \x20       < 100      : 1        |********************                    |\n\
             \x20       100        : 0        |                                        |\n\
             \x20       150        : 0        |                                        |\n\
             \x20       >= 200     : 2        |****************************************|\n"
        );
    }
}
