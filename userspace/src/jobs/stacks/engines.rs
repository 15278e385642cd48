//! `stackcount` and `offcpu` as a [`SampleSource`]: engine requests whose group key is
//! `[leading columns] pid comm kstack? ustack?`, read as raw samples (a stack pair's count,
//! or its off-CPU time), so their runs end exactly as `profile`'s do.

use std::{collections::HashMap, path::PathBuf};

use aya::maps::{MapData, RingBuf};
use tracekit_common::{
    engine::STR_BYTES,
    profile::{STACK_NONE, SampleKey},
};

use super::Weight;
use crate::{
    Result,
    engine::{Aggregates, EngineStats, KeyColumn},
    jobs::{aggregate::Engines, source::SampleSource},
    profile::RawProfile,
    session::Tracees,
    unwind::Unwinder,
};

/// Where a stack request's key words are, and what a cell's value means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StackLayout {
    /// Key words before `pid` (`--by` columns in front).
    pub(crate) leading: usize,
    /// Whether the key holds a kernel stack id, after `comm`.
    pub(crate) kernel: bool,
    /// Whether the key holds a user stack id, after the kernel one.
    pub(crate) user: bool,
    /// A sample's weight: its count, or its summed time.
    pub(crate) weight: Weight,
}

impl StackLayout {
    /// The layout of a request with `columns`, which end `pid comm kstack? ustack?`, and
    /// whose key holds a kernel and a user stack as `(kernel, user)` say.
    pub(crate) fn of(columns: &[KeyColumn], (kernel, user): (bool, bool), weight: Weight) -> Self {
        let leading = columns
            .iter()
            .take_while(|c| c.name != "pid")
            .map(KeyColumn::words)
            .sum();
        Self {
            leading,
            kernel,
            user,
            weight,
        }
    }

    /// Adds `aggregates`' cells to `raw` as samples of (pid, comm, stacks), with its
    /// counters; the stack ids the cells name, for their frames to be read.
    pub(crate) fn add_to(&self, raw: &mut RawProfile, aggregates: &Aggregates) -> Vec<u64> {
        let mut ids = Vec::new();
        for ((words, _), value) in &aggregates.cells {
            let at = |i: usize| words.get(self.leading + i).copied().unwrap_or(0);
            let mut comm = [0u8; 16];
            for (w, chunk) in comm.chunks_mut(8).enumerate() {
                chunk.copy_from_slice(&at(1 + w).to_ne_bytes());
            }
            let after = 1 + STR_BYTES / 8;
            let kernel_stack = if self.kernel { at(after) } else { STACK_NONE };
            let user_stack = if self.user {
                at(after + usize::from(self.kernel))
            } else {
                STACK_NONE
            };
            ids.extend([kernel_stack, user_stack]);
            let key = SampleKey {
                pid: at(0) as u32,
                generation: 0,
                kernel_stack,
                user_stack,
                cgroup: 0,
                comm,
                time_slice: 0,
                padding: 0,
            };
            *raw.counts.entry(key).or_default() += match self.weight {
                Weight::Count => value.count,
                Weight::SumMicros => value.sum / 1000,
            };
        }
        let stats = &aggregates.stats;
        raw.stats.samples += stats.counted;
        raw.stats.count_map_full += stats.map_full;
        raw.stats.stack_map_full += stats.stack_map_full;
        raw.stats.kernel_stack_errors += stats.stack_errors;
        raw.stats.events_lost += stats.announce_lost;
        ids
    }
}

/// Loaded stack engines (`stackcount`, `offcpu`), with the DWARF unwinders of those that walk
/// user stacks. Their maps are cumulative: an interval is the difference from the last read.
pub(crate) struct EngineStacks<'a> {
    engines: Engines<'a>,
    layout: StackLayout,
    /// Kernel memory the unwind tables of each engine may use, in bytes.
    unwind_budget_bytes: u64,
    /// `-- CMD`'s program (`argv[0]`): its unwind tables are built before it runs.
    program: Option<PathBuf>,
    unwinders: Vec<Unwinder>,
    previous: RawProfile,
}

impl<'a> EngineStacks<'a> {
    /// Engines not loaded yet, read with `layout`.
    pub(crate) fn new(
        engines: Engines<'a>,
        layout: StackLayout,
        unwind_budget_bytes: u64,
        program: Option<PathBuf>,
    ) -> Self {
        Self {
            engines,
            layout,
            unwind_budget_bytes,
            program,
            unwinders: Vec::new(),
            previous: RawProfile::default(),
        }
    }
}

impl SampleSource for EngineStacks<'_> {
    fn attach(&mut self, tracees: &Tracees) -> Result<()> {
        self.engines.attach(tracees)?;
        self.unwinders.extend(self.engines.start_unwinders(
            self.unwind_budget_bytes,
            self.program.as_deref(),
            tracees.pids.as_deref(),
        ));
        Ok(())
    }

    /// The engines' announcements of new processes, when user stacks are walked.
    fn rings(&mut self) -> Result<Vec<RingBuf<MapData>>> {
        if !self.layout.user {
            return Ok(Vec::new());
        }
        self.engines
            .engines
            .iter_mut()
            .map(|engine| engine.take_announce())
            .collect()
    }

    fn take_interval(&mut self) -> Result<Option<RawProfile>> {
        let Some(now) = self.read()? else {
            return Ok(None);
        };
        let delta = now.since(&self.previous);
        self.previous = now;
        Ok(Some(delta))
    }

    fn read(&self) -> Result<Option<RawProfile>> {
        if self.engines.engines.is_empty() {
            return Ok(None);
        }
        let mut raw = RawProfile::default();
        for engine in &self.engines.engines {
            let ids = self.layout.add_to(&mut raw, &engine.read()?);
            raw.stacks
                .extend(engine.stacks(ids)?.into_iter().collect::<HashMap<_, _>>());
        }
        Ok(Some(raw))
    }

    fn announced(&mut self, pid: u32) {
        for unwinder in &mut self.unwinders {
            unwinder.load_process(pid);
        }
    }

    fn exec_stopped(&mut self, pid: u32, limit: std::time::Duration) {
        for unwinder in &mut self.unwinders {
            unwinder.load_process_now(pid, limit);
        }
    }

    fn names_user_frames(&self) -> bool {
        self.layout.user
    }

    fn engine_stats(&self) -> Result<Option<EngineStats>> {
        Ok(Some(self.engines.read()?.stats))
    }

    fn unwind_report(&mut self) -> (HashMap<u32, String>, Option<String>) {
        let summaries: Vec<String> = self
            .unwinders
            .iter_mut()
            .map(|unwinder| unwinder.tables().summary())
            .collect();
        (
            HashMap::new(),
            (!summaries.is_empty()).then(|| summaries.join("\n")),
        )
    }

    fn detach(&mut self) -> Result<()> {
        self.engines.detach();
        Ok(())
    }
}
