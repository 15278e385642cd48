//! What one engine object runs: a main [`Stage`] (a plan and where it attaches), optionally a
//! start stage, the kernel map sizes, and which processes it traces ([`Targets`]).

use tracekit_common::engine::{DEFAULT_HASH_ENTRIES, DEFAULT_START_ENTRIES, Plan};

pub use super::{
    attach::{Attach, AttachPoint, Role},
    kinds::function::kernel_function::KernelAttach,
};

/// A plan and where it runs.
#[derive(Clone, Debug)]
pub struct Stage {
    /// The plan.
    pub plan: Plan,
    /// Where it attaches.
    pub attach: Attach,
}

/// Everything one engine object runs.
#[derive(Clone, Debug)]
pub struct EngineSpec {
    /// The stage that aggregates.
    pub main: Stage,
    /// The stage that starts latencies, if any.
    pub start: Option<Stage>,
    /// Entries of the group hash map (hash layout).
    pub hash_entries: u32,
    /// Entries of the start map (with a start stage).
    pub start_entries: u32,
    /// Added to the event index key (`EVENT_INDEX`) when reading, so that events of
    /// several engines behind one command have distinct indices.
    pub event_base: u32,
    /// User stack operands are walked by the kernel's DWARF unwinder from tables the caller
    /// loads ([`crate::engine::Engine::take_unwind_tables`]), not by frame pointers.
    pub user_unwind: bool,
    /// A comm that is only a group-key part is keyed by thread in the kernel and named
    /// when read ([`super::names`]); false keeps the string (the exporter).
    pub names_by_task: bool,
    /// The simplest plans count each group in a per-CPU cell it keeps for the whole load
    /// before the hash (`Plan::group_cache`); false where groups must be deletable (the
    /// exporter deletes idle ones).
    pub group_cache: bool,
}

impl EngineSpec {
    /// A spec with the default map sizes.
    pub fn new(main: Stage, start: Option<Stage>) -> Self {
        Self {
            main,
            start,
            hash_entries: DEFAULT_HASH_ENTRIES,
            start_entries: DEFAULT_START_ENTRIES,
            event_base: 0,
            user_unwind: false,
            names_by_task: true,
            group_cache: true,
        }
    }

    /// The stages, start first (the order they attach in).
    pub fn stages(&self) -> impl Iterator<Item = (&Stage, Role)> {
        self.start
            .iter()
            .map(|stage| (stage, Role::Start))
            .chain(std::iter::once((&self.main, Role::Main)))
    }
}

/// Which processes an engine traces.
#[derive(Clone, Debug, Default)]
pub struct Targets {
    /// `None`: every process.
    pub pids: Option<Vec<u32>>,
    /// Also trace children they fork (for `-- CMD`).
    pub follow_children: bool,
    /// `--cgroup PATH`: only tasks in this cgroup v2 subtree (`ENGINE_CGROUP_ID` and
    /// `ENGINE_CGROUP_LEVEL`).
    pub cgroup: Option<crate::cgroups::CgroupFilter>,
    /// Leave tracekit's own events out. Costs a helper call per event when tracing every
    /// process; unneeded when the maps are only read after the engine is detached.
    pub exclude_self: bool,
}
