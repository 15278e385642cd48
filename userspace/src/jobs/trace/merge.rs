//! Lines of several rings of records put back in time order. Each engine has a ring of its
//! own, read in turn: a stream of one thread's open, writes and fsync that two engines
//! record would otherwise print ring by ring. A line waits until every ring has been read
//! past its time (the collector's watermark), then lines go out oldest first.

use std::collections::BTreeMap;

use super::{COMMIT_SKEW_NS, TraceCollector};
use crate::session::Flow;

/// Rendered lines by their record's time (`bpf_ktime_get_ns`), in arrival order among
/// equal times.
#[derive(Debug, Default)]
pub(super) struct Merge {
    lines: BTreeMap<(u64, u64), String>,
    arrivals: u64,
}

impl Merge {
    /// Holds `line`, of a record stamped `ts_ns`.
    pub(super) fn push(&mut self, ts_ns: u64, line: String) {
        self.lines.insert((ts_ns, self.arrivals), line);
        self.arrivals += 1;
    }

    /// The oldest line stamped before `watermark_ns`, taken out.
    pub(super) fn pop_before(&mut self, watermark_ns: u64) -> Option<String> {
        let entry = self.lines.first_entry()?;
        if entry.key().0 >= watermark_ns {
            return None;
        }
        Some(entry.remove())
    }
}

/// The time before which every record of a ring has been read, once a record stamped `ns`
/// came from it, or once it was read empty having been entered at `ns`: records are
/// stamped before they are committed, on another CPU maybe, so only what was stamped
/// [`COMMIT_SKEW_NS`] earlier is sure to have been committed before. Taken off once: the
/// watermark lines are released below is the least of these over the rings.
pub(super) fn read_past(ns: u64) -> u64 {
    ns.saturating_sub(COMMIT_SKEW_NS)
}

impl TraceCollector<'_> {
    /// Offers the merged lines every ring of records has been read past (with `all`, every
    /// line: the run is over), in time order, until the output is full.
    pub(super) fn release(&mut self, all: bool) -> Flow {
        let watermark = if all {
            u64::MAX
        } else {
            self.read_past_every_ring().unwrap_or(0)
        };
        let Some(merge) = self.merge.as_mut() else {
            return Flow::Continue;
        };
        loop {
            if let Some(err) = &self.write_error {
                return if err.kind() == std::io::ErrorKind::BrokenPipe {
                    Flow::OutputClosed
                } else {
                    Flow::Continue
                };
            }
            match self.writer.ready(all) {
                Ok(true) => {}
                Ok(false) => return Flow::Full,
                Err(err) => {
                    self.write_error = Some(err);
                    continue;
                }
            }
            let Some(line) = merge.pop_before(watermark) else {
                return Flow::Continue;
            };
            match self.writer.offer(&line) {
                Ok(true) => self.printed += 1,
                Ok(false) => {
                    self.printed += 1;
                    if !all {
                        return Flow::Full;
                    }
                }
                Err(err) => self.write_error = Some(err),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_wait_one_commit_skew_not_two() {
        // A ring that gave a record stamped at 100 ms, another read empty at 100 ms: the
        // lines before 90 ms are sure, no earlier (20 ms behind before 2026-11-28).
        let watermark = read_past(100_000_000).min(read_past(100_000_000));
        let mut merge = Merge::default();
        merge.push(89_999_999, "O".into());
        merge.push(90_000_000, "W".into());
        assert_eq!(merge.pop_before(watermark).as_deref(), Some("O"));
        assert_eq!(merge.pop_before(watermark), None);
    }

    #[test]
    fn lines_go_out_oldest_first_once_read_past() {
        let mut merge = Merge::default();
        merge.push(30, "W 30".into());
        merge.push(10, "O 10".into());
        merge.push(30, "F 30".into());
        merge.push(20, "W 20".into());
        assert_eq!(merge.pop_before(10), None);
        assert_eq!(merge.pop_before(11).as_deref(), Some("O 10"));
        assert_eq!(merge.pop_before(11), None);
        let mut rest = Vec::new();
        while let Some(line) = merge.pop_before(u64::MAX) {
            rest.push(line);
        }
        // Equal times keep their arrival order.
        assert_eq!(rest, ["W 20", "W 30", "F 30"]);
    }
}
