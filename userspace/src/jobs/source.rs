//! Where jobs read what the kernel gathered: a trait over the sources of aggregates, which
//! the loaded engines implement (`aggregate::Engines`), and one over the sources of samples
//! (stacks and their counts), which the CPU sampler implements ([`CpuSampler`]); in tests,
//! replays of recorded map contents (`Replay`, `ReplaySamples`) stand in for both, so a
//! job's whole output is checked without root.

use std::{collections::HashMap, path::PathBuf};

use aya::maps::{MapData, RingBuf};

use crate::{
    Result,
    cpu_sampler::{ProfileOptions, Profiler, RawProfile, SymbolizedProfile},
    engine::Aggregates,
    session::Tracees,
};

/// The maps of one command's engines, read as aggregates.
pub trait AggregateSource {
    /// Loads and attaches the probes for `tracees`.
    ///
    /// # Errors
    /// What loading or attaching reports (a missing probe, no privileges).
    fn attach(&mut self, tracees: &Tracees) -> Result<()>;

    /// Whether [`Self::attach`] keeps only `tracees.cgroup`'s tasks in the kernel.
    fn honours_cgroup(&self) -> bool {
        false
    }

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

/// What a source's unwinder says at the end of a run ([`SampleSource::unwind_report`]).
#[derive(Debug, Default)]
pub struct UnwindReport {
    /// Why the stacks of some processes look broken, by pid.
    pub hints: HashMap<u32, String>,
    /// The unwinder's report, for `-v`.
    pub summary: Option<String>,
    /// The runtimes found whose frames were not named, and why (said without `-v`).
    pub not_named: Vec<crate::runtimes::RuntimeNotNamed>,
    /// The user stacks walked before their process's tables were in (said without `-v`
    /// when more than 1%); `None` in frame-pointer mode.
    pub before_tables: Option<crate::output::profile::BeforeTables>,
}

/// The maps of a sampler, read as raw samples: stack hashes to instruction pointers, and
/// counts per (process, stacks, comm) key, which the job symbolizes.
pub trait SampleSource {
    /// Loads and attaches the sampler for `tracees`.
    ///
    /// # Errors
    /// What loading or attaching reports (no perf events, no privileges).
    fn attach(&mut self, tracees: &Tracees) -> Result<()>;

    /// Whether [`Self::attach`] keeps only `tracees.cgroup`'s tasks in the kernel.
    fn honours_cgroup(&self) -> bool {
        false
    }

    /// The ring buffers the session drains (new processes announced), once after attaching;
    /// none by default.
    ///
    /// # Errors
    /// A map that cannot be taken.
    fn rings(&mut self) -> Result<Vec<RingBuf<MapData>>> {
        Ok(Vec::new())
    }

    /// The samples since the previous call (the maps drained), or `None` before attaching.
    ///
    /// # Errors
    /// A map that cannot be read.
    fn take_interval(&mut self) -> Result<Option<RawProfile>>;

    /// Everything sampled since attaching, the maps left as they are (a run without `-i`),
    /// or `None` before attaching.
    ///
    /// # Errors
    /// A map that cannot be read.
    fn read(&self) -> Result<Option<RawProfile>>;

    /// A process was announced: its unwind tables are built while it lives (with the DWARF
    /// unwinder); nothing by default.
    fn announced(&mut self, _pid: u32) {}

    /// `-- CMD`'s child `pid` is held at its exec: its unwind tables are published before it
    /// runs, for at most `limit` (with the DWARF unwinder); nothing by default.
    fn exec_stopped(&mut self, _pid: u32, _limit: std::time::Duration) {}

    /// The CPUs sampled, once attached; `None` by default.
    fn cpus(&self) -> Option<usize> {
        None
    }

    /// Whether user frames are sampled, so that new processes' maps are read while they
    /// live; yes by default.
    fn names_user_frames(&self) -> bool {
        true
    }

    /// For sources that count engine events rather than timer samples (`stackcount`,
    /// `offcpu`): the engines' counters (counted, filtered, lost, full maps), which the
    /// run's summary reports; `None` by default.
    ///
    /// # Errors
    /// A map that cannot be read.
    fn engine_stats(&self) -> Result<Option<crate::engine::EngineStats>> {
        Ok(None)
    }

    /// At the end of a run: why the stacks of some processes look broken, the runtimes
    /// whose frames were not named, and the unwinder's report for `-v`; nothing by default.
    /// Stops the unwind tables' thread.
    fn unwind_report(&mut self) -> UnwindReport {
        UnwindReport::default()
    }

    /// The symbolized `profile` of a read, as the report shows it: itself by default;
    /// `offwaketime` joins each blocked stack with its waker's.
    fn join(&mut self, profile: SymbolizedProfile) -> SymbolizedProfile {
        profile
    }

    /// Detaches the sampler.
    ///
    /// # Errors
    /// What detaching reports.
    fn detach(&mut self) -> Result<()>;
}

/// The CPU sampler ([`Profiler`]) as a [`SampleSource`]: loaded and attached at
/// [`SampleSource::attach`] with `options`, whose processes the tracees set.
pub struct CpuSampler {
    /// What is sampled, and how often.
    pub options: ProfileOptions,
    /// `-- CMD`'s program (`argv[0]`): its unwind tables are built before it runs.
    pub program: Option<PathBuf>,
    profiler: Option<Box<Profiler>>,
}

impl CpuSampler {
    /// A sampler with `options`, not loaded yet.
    pub fn new(options: ProfileOptions) -> Self {
        Self {
            options,
            program: None,
            profiler: None,
        }
    }
}

impl SampleSource for CpuSampler {
    fn honours_cgroup(&self) -> bool {
        true
    }

    fn attach(&mut self, tracees: &Tracees) -> Result<()> {
        self.options.pids = tracees.pids.clone();
        self.options.follow_children = tracees.follow_children;
        self.options.cgroup = tracees.cgroup;
        let mut loaded = Profiler::load(&self.options)?;
        if let Some(why) = loaded.unwind_unavailable() {
            eprintln!(
                "tracekit: note: the DWARF unwinder cannot run on this kernel ({why}); \
                 user stacks are walked by frame pointers"
            );
        }
        if let Some(unwinder) = loaded.unwinder() {
            unwinder.prepare(self.program.as_deref(), self.options.pids.as_deref());
        }
        loaded.attach(&self.options)?;
        // The whole machine's tables take seconds on a busy one, and a new binary's up to a
        // second: they are built on their own thread, so sampling starts at once and
        // announced processes have their maps read while they live. Until a process's
        // tables are in, its stacks are walked by frame pointers (-v counts those samples).
        if let Some(unwinder) = loaded.unwinder() {
            unwinder.start(self.options.pids.is_none());
        }
        self.profiler = Some(Box::new(loaded));
        Ok(())
    }

    fn rings(&mut self) -> Result<Vec<RingBuf<MapData>>> {
        Ok(self
            .profiler
            .as_mut()
            .map(|profiler| profiler.take_events())
            .transpose()?
            .into_iter()
            .collect())
    }

    fn take_interval(&mut self) -> Result<Option<RawProfile>> {
        self.profiler
            .as_mut()
            .map(|profiler| profiler.take_interval())
            .transpose()
    }

    fn read(&self) -> Result<Option<RawProfile>> {
        self.profiler
            .as_ref()
            .map(|profiler| profiler.read())
            .transpose()
    }

    fn announced(&mut self, pid: u32) {
        if let Some(unwinder) = self.profiler.as_mut().and_then(|p| p.unwinder()) {
            unwinder.load_process(pid);
        }
    }

    fn exec_stopped(&mut self, pid: u32, limit: std::time::Duration) {
        if let Some(unwinder) = self.profiler.as_mut().and_then(|p| p.unwinder()) {
            unwinder.load_process_now(pid, limit);
        }
    }

    fn cpus(&self) -> Option<usize> {
        self.profiler.as_ref().map(|profiler| profiler.cpus())
    }

    fn unwind_report(&mut self) -> UnwindReport {
        let Some(profiler) = &mut self.profiler else {
            return UnwindReport::default();
        };
        let (hints, not_named, before_tables) = profiler
            .unwind_tables()
            .map(|tables| {
                let walk = tables.walk_stats().unwrap_or_default();
                let before = crate::output::profile::BeforeTables {
                    stacks: walk.no_process,
                    of: walk.stacks,
                    build: tables.build_time(),
                };
                (
                    tables.broken_hints(),
                    tables.runtimes_not_named(),
                    Some(before),
                )
            })
            .unwrap_or_default();
        UnwindReport {
            hints,
            summary: profiler.unwind_summary(),
            not_named,
            before_tables,
        }
    }

    fn detach(&mut self) -> Result<()> {
        match &mut self.profiler {
            Some(profiler) => profiler.detach(),
            None => Ok(()),
        }
    }
}

/// Recorded samples, one [`RawProfile`] per interval, read back in order; an interval past
/// the recordings holds nothing.
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct ReplaySamples {
    intervals: std::collections::VecDeque<RawProfile>,
    /// Whether the job attached, and detached.
    pub(crate) attached: bool,
    pub(crate) detached: bool,
    /// The engines' counters, for a replay of stack engines (`stackcount`, `offcpu`).
    pub(crate) engine_stats: Option<crate::engine::EngineStats>,
}

#[cfg(test)]
impl ReplaySamples {
    /// A source whose intervals are `intervals` in order.
    pub(crate) fn new(intervals: Vec<RawProfile>) -> Self {
        Self {
            intervals: intervals.into(),
            ..Self::default()
        }
    }
}

#[cfg(test)]
impl SampleSource for ReplaySamples {
    fn attach(&mut self, _tracees: &Tracees) -> Result<()> {
        self.attached = true;
        Ok(())
    }

    fn take_interval(&mut self) -> Result<Option<RawProfile>> {
        if !self.attached {
            return Ok(None);
        }
        Ok(Some(self.intervals.pop_front().unwrap_or_default()))
    }

    /// The first recording not yet taken (a run without `-i` reads its maps once).
    fn read(&self) -> Result<Option<RawProfile>> {
        Ok(self
            .attached
            .then(|| self.intervals.front().cloned().unwrap_or_default()))
    }

    fn cpus(&self) -> Option<usize> {
        self.attached.then_some(2)
    }

    fn engine_stats(&self) -> Result<Option<crate::engine::EngineStats>> {
        Ok(self.engine_stats)
    }

    fn detach(&mut self) -> Result<()> {
        self.detached = true;
        Ok(())
    }
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

    /// Sample intervals come back in order once attached, then empty ones; before attaching
    /// there is none.
    #[test]
    fn sample_replay_drains_in_order() {
        let sampled = |samples| {
            let mut raw = RawProfile::default();
            raw.stats.samples = samples;
            raw
        };
        let mut replay = ReplaySamples::new(vec![sampled(3), sampled(7)]);
        assert!(replay.take_interval().unwrap().is_none());
        replay.attach(&Tracees::default()).unwrap();
        let taken: Vec<u64> = (0..3)
            .map(|_| replay.take_interval().unwrap().unwrap().stats.samples)
            .collect();
        assert_eq!(taken, [3, 7, 0]);
        replay.detach().unwrap();
        assert!(replay.attached && replay.detached);
    }
}
