//! Where jobs read what the kernel gathered: a trait over the sources of aggregates, which
//! the loaded engines implement (`aggregate::Engines`) and, in tests, a replay of recorded
//! map contents (`Replay`), so a job's whole output is checked without root.

use crate::{Result, engine::Aggregates, session::Tracees};

/// The maps of one command's engines, read as aggregates.
pub trait AggregateSource {
    /// Loads and attaches the probes for `tracees`.
    ///
    /// # Errors
    /// What loading or attaching reports (a missing probe, no privileges).
    fn attach(&mut self, tracees: &Tracees) -> Result<()>;

    /// Everything aggregated since attaching, merged over the engines: counts and sums per
    /// key and histogram slot, and the counters of what was not counted (filtered, lost,
    /// missed, a full map). Cumulative: each read holds the previous one's cells.
    ///
    /// # Errors
    /// A map that cannot be read.
    fn read(&self) -> Result<Aggregates>;

    /// Detaches every probe; the maps stay readable.
    fn detach(&mut self);
}

/// Recorded map contents, read back in order: each [`AggregateSource::read`] returns the
/// next recording, and the last one again once they run out (the maps after detaching).
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct Replay {
    reads: std::cell::RefCell<std::collections::VecDeque<Aggregates>>,
    last: std::cell::RefCell<Aggregates>,
    /// Whether the job attached, and detached.
    pub(crate) attached: bool,
    pub(crate) detached: bool,
}

#[cfg(test)]
impl Replay {
    /// A source whose reads return `reads` in order.
    pub(crate) fn new(reads: Vec<Aggregates>) -> Self {
        Self {
            reads: std::cell::RefCell::new(reads.into()),
            ..Self::default()
        }
    }
}

#[cfg(test)]
impl AggregateSource for Replay {
    fn attach(&mut self, _tracees: &Tracees) -> Result<()> {
        self.attached = true;
        Ok(())
    }

    fn read(&self) -> Result<Aggregates> {
        if let Some(next) = self.reads.borrow_mut().pop_front() {
            *self.last.borrow_mut() = next;
        }
        Ok(self.last.borrow().clone())
    }

    fn detach(&mut self) {
        self.detached = true;
    }
}

/// A string key's words (`comm`), as the kernel writes them: NUL-padded to
/// [`tracekit_common::engine::STR_BYTES`].
#[cfg(test)]
pub(crate) fn str_key(text: &str) -> Vec<u64> {
    let mut bytes = [0u8; tracekit_common::engine::STR_BYTES];
    bytes[..text.len()].copy_from_slice(text.as_bytes());
    bytes
        .chunks(8)
        .map(|word| u64::from_ne_bytes(word.try_into().expect("8-byte chunks")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineStats;

    fn counted(counted: u64) -> Aggregates {
        Aggregates {
            stats: EngineStats {
                counted,
                ..EngineStats::default()
            },
            ..Aggregates::default()
        }
    }

    /// Reads come back in order, then the last again (the maps after detaching), and the
    /// job's attach and detach are seen.
    #[test]
    fn replay_reads_in_order_then_holds_the_last() {
        let mut replay = Replay::new(vec![counted(1), counted(5)]);
        replay.attach(&Tracees::default()).unwrap();
        let reads: Vec<u64> = (0..4)
            .map(|_| replay.read().unwrap().stats.counted)
            .collect();
        assert_eq!(reads, [1, 5, 5, 5]);
        replay.detach();
        assert!(replay.attached && replay.detached);
        assert_eq!(Replay::new(Vec::new()).read().unwrap().stats.counted, 0);
    }
}
