//! `stackcount` and `offcpu` as a [`SampleSource`]: engine requests whose group key is
//! `[leading columns] pid comm kstack? ustack?`, read as raw samples (a stack pair's count,
//! or its off-CPU time), so their runs end exactly as `profile`'s do.

use std::{collections::HashMap, path::PathBuf};

use aya::maps::{MapData, RingBuf};
use tracekit_common::{
    cpu_sampler::{STACK_NONE, SampleKey},
    engine::STR_BYTES,
};

use super::Weight;
use crate::{
    Result,
    cpu_sampler::{RawProfile, SymbolizedProfile},
    engine::{Aggregates, EngineStats, KeyColumn},
    jobs::{
        aggregate::Engines,
        source::{SampleSource, UnwindReport},
    },
    session::Tracees,
    stacks::Stack,
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
    /// `offwaketime`: the key goes on after the stacks with the waker's thread id and its
    /// stacks (as many as the blocked task's); see [`join_wakers`].
    pub(crate) waker: bool,
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
            waker: columns.iter().any(|c| c.name == WAKER_COLUMN),
        }
    }

    /// Adds `aggregates`' cells to `raw` as samples of (pid, comm, stacks), with its
    /// counters; the stack ids the cells name, for their frames to be read.
    pub(crate) fn add_to(&self, raw: &mut RawProfile, aggregates: &Aggregates) -> Vec<u64> {
        let mut ids = Vec::new();
        if self.waker {
            return self.add_pairs_to(raw, aggregates);
        }
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
            let weight = match self.weight {
                Weight::Count => value.count,
                Weight::SumMicros => value.sum / 1000,
            };
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
            *raw.counts.entry(key).or_default() += weight;
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

impl StackLayout {
    /// [`Self::add_to`] for `offwaketime`, whose key is `pid kstack? ustack? waker_pid
    /// kstack? ustack? tid waker_tid` (8 words at most: no room for the two comms, named
    /// from /proc instead). Each cell becomes two samples, the blocked side and the waker's,
    /// tagged alike (an even and the next odd slice, from a hash of the whole key, the same
    /// at every read, so intervals subtract them), the thread ids (as text) in place of the comms.
    fn add_pairs_to(&self, raw: &mut RawProfile, aggregates: &Aggregates) -> Vec<u64> {
        raw.sliced = true;
        let mut ids = Vec::new();
        let stacks = usize::from(self.kernel) + usize::from(self.user);
        for ((words, _), value) in &aggregates.cells {
            let at = |i: usize| words.get(self.leading + i).copied().unwrap_or(0);
            let weight = match self.weight {
                Weight::Count => value.count,
                Weight::SumMicros => value.sum / 1000,
            };
            let tag = tag_of(words) & !1;
            let tids = 2 * (1 + stacks);
            for (side, first) in [0, 1 + stacks].into_iter().enumerate() {
                let kernel_stack = if self.kernel {
                    at(first + 1)
                } else {
                    STACK_NONE
                };
                let user_stack = if self.user {
                    at(first + 1 + usize::from(self.kernel))
                } else {
                    STACK_NONE
                };
                ids.extend([kernel_stack, user_stack]);
                // The thread id as the comm's text, named when joined.
                let mut comm = [0u8; 16];
                let tid = (at(tids + side) as u32).to_string();
                comm[..tid.len()].copy_from_slice(tid.as_bytes());
                let key = SampleKey {
                    pid: at(first) as u32,
                    generation: 0,
                    kernel_stack,
                    user_stack,
                    cgroup: 0,
                    comm,
                    time_slice: tag | side as u32,
                    padding: 0,
                };
                *raw.counts.entry(key).or_default() += weight;
            }
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

/// The column naming `offwaketime`'s waker thread, after the blocked task's stacks.
pub(crate) const WAKER_COLUMN: &str = "waker_tid";

/// A cell's tag: a hash of its key words, the same at every read.
fn tag_of(words: &[u64]) -> u32 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    words.hash(&mut hasher);
    hasher.finish() as u32
}

/// `offwaketime`'s samples, symbolized, joined back in pairs ([`StackLayout::add_pairs_to`]):
/// each blocked stack (even slice) with its waker's (the odd slice after it) into one
/// stack, bcc's folded form `comm;user;kernel;--;waker kernel;waker user;waker comm`: the
/// waker's frames leaf first, so a flame graph shows them upside down above the blocked
/// stack. Threads are named from `/proc/PID/task/TID/comm` (cached in `names` by tid, which
/// the caller keeps from read to read; `swapper` for 0; `[TID]` for a thread gone before
/// its first read).
pub(crate) fn join_wakers(
    profile: SymbolizedProfile,
    names: &mut HashMap<u32, String>,
) -> SymbolizedProfile {
    use crate::stacks::Frame;
    let (wakers, blocked): (Vec<Stack>, Vec<Stack>) = profile
        .stacks
        .into_iter()
        .partition(|s| s.time_slice.is_some_and(|t| t & 1 == 1));
    let mut by_tag: HashMap<u32, Stack> = wakers
        .into_iter()
        .map(|s| (s.time_slice.unwrap_or(0) & !1, s))
        .collect();
    let mut name = |pid: u32, tid: &str| -> String {
        let tid: u32 = tid.parse().unwrap_or(0);
        names
            .entry(tid)
            .or_insert_with(|| thread_name(pid, tid))
            .clone()
    };
    let stacks = blocked
        .into_iter()
        .map(|mut stack| {
            let tag = stack.time_slice.take().unwrap_or(0);
            stack.comm = name(stack.pid, &stack.comm);
            if let Some(waker) = by_tag.remove(&tag) {
                stack.frames.push(Frame::user("--", None));
                stack.frames.extend(waker.frames.into_iter().rev());
                stack
                    .frames
                    .push(Frame::user(name(waker.pid, &waker.comm), None));
            }
            stack
        })
        .collect();
    SymbolizedProfile { stacks, ..profile }
}

/// A thread's name from `/proc/PID/task/TID/comm`.
fn thread_name(pid: u32, tid: u32) -> String {
    if tid == 0 {
        return "swapper".into();
    }
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
        .map(|s| s.trim_end().to_string())
        .unwrap_or_else(|_| format!("[{tid}]"))
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
    /// `offwaketime`'s thread names by tid, kept from read to read ([`join_wakers`]).
    names: HashMap<u32, String>,
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
            names: HashMap::new(),
        }
    }
}

impl SampleSource for EngineStacks<'_> {
    fn honours_cgroup(&self) -> bool {
        true
    }

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

    fn unwind_report(&mut self) -> UnwindReport {
        let mut summaries = Vec::new();
        let mut not_named = Vec::new();
        let mut before: Option<crate::output::profile::BeforeTables> = None;
        for unwinder in &mut self.unwinders {
            let tables = unwinder.tables();
            summaries.push(tables.summary());
            not_named.extend(tables.runtimes_not_named());
            let walk = tables.walk_stats().unwrap_or_default();
            let sum = before.get_or_insert_default();
            sum.stacks += walk.no_process;
            sum.of += walk.stacks;
            sum.build += tables.build_time();
        }
        UnwindReport {
            hints: HashMap::new(),
            summary: (!summaries.is_empty()).then(|| summaries.join("\n")),
            not_named,
            before_tables: before,
        }
    }

    fn join(&mut self, profile: SymbolizedProfile) -> SymbolizedProfile {
        if self.layout.waker {
            join_wakers(profile, &mut self.names)
        } else {
            profile
        }
    }

    fn detach(&mut self) -> Result<()> {
        self.engines.detach();
        Ok(())
    }
}
