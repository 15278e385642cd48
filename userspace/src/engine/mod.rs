//! The aggregation engine's userspace half: requests compile to plans, plans load into the
//! `engine` object (`ebpf/src/bin/engine.rs`), and what it aggregated is read back.
//!
//! - [`request`]: what a command asks for (probes, value, group key, filter, aggregation, an
//!   optional start stage that pairs begin and end events), as data;
//! - [`kinds`]: one module per probe kind (its spec names, fields, compile step and attach
//!   point) and [`kinds::KINDS`], the table of them; probe specs ([`kinds::ProbeSpec`]);
//! - [`compile`]: a request to [`EngineSpec`]s, through its probes' kinds;
//! - [`plan`]: [`PlanBuilder`], which enforces the kernel engine's limits;
//! - [`filter`]: the filter language compiled to the engine's instructions;
//! - [`spec`]: stages, targets; [`attach`]: what the kinds' attach points share;
//! - [`maps`]: aggregates and counters as read; [`keys`]: group keys decoded for display;
//!   [`names`]: `--by comm` keyed by thread in the kernel, named when read;
//! - [`syscalls`]: the syscall constants of this architecture.
//!
//! [`Engine`] is one loaded object: [`Engine::load`], [`Engine::attach`], [`Engine::read`],
//! [`Engine::detach`].

pub mod addr;
pub mod attach;
pub mod compile;
pub mod filter;
pub mod keys;
pub mod kinds;
pub mod maps;
pub mod names;
pub mod outstanding;
pub mod plan;
mod read;
pub mod request;
pub mod spec;
pub mod strings;
pub mod syscalls;

use std::os::fd::{AsFd as _, OwnedFd};

use aya::{
    Ebpf,
    maps::{HashMap as BpfHashMap, Map, MapData, RingBuf},
};
use tracekit_common::{
    cpu_sampler::{EVENTS_RING_BYTES, StackFrames},
    engine::{DEFAULT_STACK_ENTRIES, Outstanding, Plan, TRACE_RING_BYTES, agg, layout, operand},
};

pub use self::{
    attach::Role,
    keys::{Group, KeyColumn, KeyKind, KeyValue, groups},
    maps::{Aggregates, EngineStats, StackReader},
    plan::PlanBuilder,
    spec::{Attach, EngineSpec, KernelAttach, Stage, Targets},
};
use crate::{
    Error, Result,
    bpf::{
        Object, load_without_kernel_btf,
        names::{engine, unwind},
        object, raise_memlock_limit,
    },
    error::Context as _,
    probe::{
        Tracepoint,
        tracefs::{self, EventFormat},
    },
};

/// A loaded engine object.
pub struct Engine {
    /// The programs and the maps not read back, until [`Engine::attach`] has attached the
    /// stages: then only the links and the programs' fds are kept ([`Engine::release`]).
    ebpf: Option<Ebpf>,
    /// The links of every attached program but the kprobes, taken from their programs (see
    /// [`Engine::keep_link`]); dropping one detaches it.
    links: Vec<(Role, Box<dyn Send + Sync>)>,
    /// The fds of the stages' loaded programs once the object is released, for
    /// [`Engine::misses`].
    program_fds: Vec<(Role, aya::programs::ProgramFd)>,
    array: Map,
    hash: Map,
    /// `ENGINE_CACHE`, the group cells in front of `hash` ([`Plan::group_cache`]).
    cache: Map,
    stats: Map,
    stacks: Map,
    /// `ENGINE_OUTSTANDING` ([`agg::OUTSTANDING`] plans).
    outstanding: Map,
    trace: Option<Map>,
    announce: Option<Map>,
    plan: Plan,
    event_base: u32,
    notes: Vec<String>,
    /// Kprobe links, owned here so that detaching can close them in parallel.
    kprobe_links: Vec<(Role, aya::programs::kprobe::KProbeLink)>,
    /// Kretprobes made through tracefs (the main stage's; a start stage is at entry).
    kretprobe_events: Vec<kinds::function::kretprobe_event::KretprobeEvent>,
    /// The object's maps by name, kept when a stage probes several kernel functions: the
    /// kprobe.multi program shares them (see [`kinds::function::kprobe_multi`]).
    map_fds: Vec<(String, OwnedFd)>,
    /// kprobe.multi links and their programs; closing them detaches.
    multi_links: Vec<(Role, OwnedFd, OwnedFd)>,
    /// USDT links ([`kinds::usdt::attach`]); closing them detaches (and clears semaphores).
    usdt_links: Vec<(Role, kinds::usdt::attach::UsdtLink)>,
    /// The DWARF unwinder's maps, with [`EngineSpec::user_unwind`], until taken.
    unwind: Option<crate::unwind::KernelTables>,
    /// The stages' [`Misses`], read as the programs were unloaded.
    misses_at_detach: Option<Misses>,
    /// The name maps when the plan keys by [`operand::TASK`] ([`names`]).
    names: Option<names::TaskNames>,
    /// A stage records kernel stacks: [`Engine::read`] reads those its keys hold.
    kernel_stacks: bool,
}

/// Events the kernel did not run a stage's program for, summed over its programs: their
/// `recursion_misses` (`/proc/PID/fdinfo/FD`, Linux 5.12). A kprobe, uprobe, classic
/// tracepoint or perf_event program is skipped when another such program is running on the
/// same CPU (the kernel's `bpf_prog_active`): the disk interrupt that completes a request
/// while a scheduler tracepoint's program runs is never seen by `block:block_rq_complete`'s.
/// The main stage's also hold the returns its tracefs kretprobes lost (`kprobe_profile`'s
/// nmissed, see [`kinds::function::kretprobe_event`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Misses {
    /// Of the main stage's programs.
    pub main: u64,
    /// Of the start stage's programs.
    pub start: u64,
}

/// The engine object's programs that serve neither stage (announcements, `-- CMD`'s
/// children, start-map hygiene, benchmarks).
const HELPER_PROGRAMS: &[&str] = engine::HELPERS;

/// The role of the engine object's program `name`, None for a helper.
fn program_role(name: &str) -> Option<Role> {
    if HELPER_PROGRAMS.contains(&name) {
        None
    } else if name.contains("_start") {
        Some(Role::Start)
    } else {
        Some(Role::Main)
    }
}

/// `recursion_misses` of the BPF program behind `fd`, from `/proc/self/fdinfo`; 0 where the
/// kernel does not say (before 5.12).
fn recursion_misses(fd: std::os::fd::BorrowedFd<'_>) -> u64 {
    use std::os::fd::AsRawFd as _;
    std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd()))
        .ok()
        .and_then(|text| parse_recursion_misses(&text))
        .unwrap_or(0)
}

/// The `recursion_misses:` line of a BPF program's fdinfo.
fn parse_recursion_misses(fdinfo: &str) -> Option<u64> {
    fdinfo
        .lines()
        .find_map(|line| line.strip_prefix("recursion_misses:"))
        .and_then(|value| value.trim().parse().ok())
}

/// Detaches and unloads `program` (its tracked links included).
fn unload(program: &mut aya::programs::Program) {
    use aya::programs::Program;
    let result = match program {
        Program::TracePoint(p) => p.unload(),
        Program::RawTracePoint(p) => p.unload(),
        Program::KProbe(p) => p.unload(),
        Program::UProbe(p) => p.unload(),
        Program::PerfEvent(p) => p.unload(),
        Program::FEntry(p) => p.unload(),
        Program::FExit(p) => p.unload(),
        _ => Ok(()),
    };
    // Programs never loaded say so; nothing to do for them.
    let _ = result;
}

fn tracepoint(system: &str, event: &str) -> Tracepoint {
    Tracepoint {
        system: system.into(),
        event: event.into(),
    }
}

/// The engine object for `spec`: when every stage names its programs
/// ([`attach::AttachPoint::programs`]), a copy where only those and [`HELPER_PROGRAMS`] are
/// programs (aya parses and links no other: 90 programs cost 40-60 ms and 30 MiB at each
/// load), else the object as built.
fn engine_object(spec: &EngineSpec, simple: bool) -> Result<std::borrow::Cow<'static, [u8]>> {
    let object = object(Object::Engine)?;
    let mut kept: Vec<String> = HELPER_PROGRAMS
        .iter()
        .map(|name| name.to_string())
        .collect();
    for (stage, role) in spec.stages() {
        match stage.attach.programs(role, simple) {
            Some(names) => kept.extend(names),
            None => return Ok(std::borrow::Cow::Borrowed(object)),
        }
    }
    match crate::bpf::keep_programs(object, &|name| kept.iter().any(|k| k == name)) {
        Ok((copy, hidden)) => {
            log::debug!("engine: {hidden} programs not needed by this plan left out of the load");
            Ok(std::borrow::Cow::Owned(copy))
        }
        Err(err) => {
            log::debug!("engine: every program loaded: {err}");
            Ok(std::borrow::Cow::Borrowed(object))
        }
    }
}

impl Engine {
    /// Loads the engine object with `spec`'s plans and map sizes, tracing `targets`.
    pub fn load(spec: &EngineSpec, targets: &Targets) -> Result<Self> {
        raise_memlock_limit();
        let mut main = spec.main.plan;
        // Only a plan grouping by comm reads task:task_rename's format; without it (no
        // tracefs to read, as with CAP_BPF and CAP_PERFMON alone) the comm stays the key.
        let mut by_task = main;
        let renames =
            if spec.names_by_task && spec.start.is_none() && names::key_by_task(&mut by_task) {
                tracefs::root()
                    .inspect_err(|err| log::debug!("--by comm keeps its string key: {err}"))
                    .ok()
                    .and_then(|root| names::rename_offsets(&root))
            } else {
                None
            };
        if renames.is_some() {
            main = by_task;
        }
        plan::check_key_words(&main)?;
        // The simplest plans are computed without the interpreter (`engine::simple`).
        main.simple = u32::from(
            main.agg != agg::OUTSTANDING && plan::fast_simple(&main) && !plan::interpreter_only(),
        );
        // Groups of such plans count in per-CPU cells before the hash (see
        // `engine::cache_cell` in ebpf/src/engine/mod.rs); not where userspace deletes idle
        // groups (the exporter): a cell is never given back; nor with a group map asked
        // smaller than the cells (`--max-groups`), which is then the bound.
        main.group_cache = u32::from(
            main.simple != 0
                && main.layout == layout::HASH
                && spec.group_cache
                && spec.hash_entries >= tracekit_common::engine::CACHE_CELLS
                && std::env::var_os("TRACEKIT_GROUP_CACHE").is_none_or(|v| v != "0"),
        );
        let cache_entries = if main.group_cache != 0 {
            tracekit_common::engine::CACHE_CELLS
        } else {
            1
        };
        let start = spec.start.as_ref().map_or(Plan::EMPTY, |s| s.plan);
        let self_pid = if targets.exclude_self {
            std::process::id()
        } else {
            0
        };
        let filter = u8::from(targets.pids.is_some());
        // Id 0 is no cgroup: the kernel side then skips the check.
        let (cgroup_id, cgroup_level) = targets.cgroup.map_or((0u64, 0u32), |c| (c.id, c.level));
        // offcpu announces from its start stage (the task leaving the CPU).
        let announces = main.announce != 0 || start.announce != 0;
        let by_thread = start.by_thread != 0;
        let fork_offset = if targets.follow_children || by_thread {
            let tracefs = tracefs::root()?;
            EventFormat::read(&tracefs, "sched", "sched_process_fork")?
                .field("child_pid")
                .ok_or_else(|| Error::runtime("sched:sched_process_fork has no child_pid field"))?
                .offset
        } else {
            0
        };
        let mmap_prot_offset = if announces { mmap_prot_offset() } else { None };
        let array_entries = if main.layout == layout::ARRAY {
            (main.array_key_bound + 1) * main.slots
        } else {
            1
        };
        let hash_entries = if main.layout == layout::HASH {
            spec.hash_entries
        } else {
            1
        };
        // memleak's allocations outstanding at once: the hash map's size, which it leaves
        // unused.
        let outstanding_entries = if main.agg == agg::OUTSTANDING {
            spec.hash_entries
        } else {
            1
        };
        let start_entries = if spec.start.is_some() {
            spec.start_entries
        } else {
            1
        };
        let uses = |kind: u32| {
            [&main, &start].iter().any(|plan| {
                plan.operands[..plan.n_operands as usize]
                    .iter()
                    .any(|o| o.kind == kind)
            })
        };
        let user_unwind = spec.user_unwind && uses(operand::USER_STACK);
        let unwind_flag = u8::from(user_unwind);
        // Unused, the unwinder's tables shrink to one entry each.
        let (unwind_mappings, unwind_processes) = if user_unwind {
            (
                tracekit_common::unwind::MAX_MAPPINGS,
                tracekit_common::unwind::MAX_PROCESSES,
            )
        } else {
            (1, 1)
        };
        let stack_entries = if uses(operand::KERNEL_STACK) || uses(operand::USER_STACK) {
            DEFAULT_STACK_ENTRIES
        } else {
            1
        };
        let follows = [1, tracekit_common::engine::FOLLOWS_ENTRIES];
        let follows_entries = follows[usize::from(uses(operand::FOLLOWS))];
        let page = 4096;
        let trace_bytes = if main.agg == agg::TRACE {
            TRACE_RING_BYTES
        } else {
            page
        };
        let announce_bytes = if announces { EVENTS_RING_BYTES } else { page };
        // Tracepoint and raw tracepoint programs need no kernel BTF.
        let prot_offset = mmap_prot_offset.unwrap_or(0);
        let rename_pid = renames.map_or(0, |r| r.pid);
        let name_entries = if renames.is_some() {
            tracekit_common::engine::TASK_NAMES_ENTRIES
        } else {
            1
        };
        // Directories by their dentries: the kernel's offsets, from its BTF.
        let dentry_walk = if uses(operand::DIR_PATH) {
            let btf = crate::probe::btf_path::kernel_btf()
                .ok_or_else(|| Error::runtime(crate::probe::fields::NO_BTF))?;
            crate::probe::btf_path::dentry_walk(btf)
                .map_err(|e| Error::runtime(format!("directories by their dentries: {e}")))?
        } else {
            tracekit_common::engine::DentryWalk::EMPTY
        };
        let object = engine_object(spec, main.simple != 0)?;
        let mut ebpf = load_without_kernel_btf(&object, |loader| {
            loader
                .override_global(engine::PLAN, &main, true)
                .override_global(engine::START_PLAN, &start, true)
                .override_global(engine::SELF_PID, &self_pid, true)
                .override_global(engine::FILTER_PIDS, &filter, true)
                .override_global(engine::CGROUP_ID, &cgroup_id, true)
                .override_global(engine::CGROUP_LEVEL, &cgroup_level, true)
                .override_global(engine::FORK_CHILD_PID_OFFSET, &fork_offset, true)
                .override_global(engine::MMAP_PROT_OFFSET, &prot_offset, true)
                .override_global(engine::USER_UNWIND, &unwind_flag, true)
                .override_global(engine::DENTRY_WALK, &dentry_walk, true)
                .override_global(engine::RENAME_PID_OFFSET, &rename_pid, true)
                .map_max_entries(engine::TASK_GENS, name_entries)
                .map_max_entries(engine::TASK_NAMES, name_entries)
                .map_max_entries(unwind::MAPPINGS, unwind_mappings)
                .map_max_entries(unwind::PROCESSES, unwind_processes)
                .map_max_entries(engine::ARRAY, array_entries)
                .map_max_entries(engine::HASH, hash_entries)
                .map_max_entries(engine::CACHE, cache_entries)
                .map_max_entries(engine::STARTS, start_entries)
                .map_max_entries(engine::OUTSTANDING, outstanding_entries)
                .map_max_entries(engine::FOLLOWS, follows_entries)
                .map_max_entries(engine::STACKS, stack_entries)
                .map_max_entries(engine::TRACE, trace_bytes)
                .map_max_entries(engine::ANNOUNCE, announce_bytes);
        })
        .context("loading the engine BPF programs")?;
        if let Some(pids) = &targets.pids {
            let mut map: BpfHashMap<_, u32, u8> =
                BpfHashMap::try_from(ebpf.map_mut(engine::TARGETS).expect("map in object"))
                    .context("opening ENGINE_TARGETS")?;
            for &pid in pids {
                map.insert(pid, 1, 0)
                    .with_context(|| format!("selecting pid {pid}"))?;
            }
        }
        let map_fds = if spec.stages().any(|(stage, _)| stage.attach.shares_maps()) {
            ebpf.maps()
                .filter_map(|(name, map)| {
                    let fd = maps::map_data(map)?
                        .fd()
                        .as_fd()
                        .try_clone_to_owned()
                        .ok()?;
                    Some((name.to_string(), fd))
                })
                .collect()
        } else {
            Vec::new()
        };
        let unwind = if user_unwind {
            Some(crate::unwind::KernelTables::take(&mut ebpf)?)
        } else {
            None
        };
        let mut take = |name: &str| {
            ebpf.take_map(name)
                .ok_or_else(|| Error::runtime(format!("{name} is not in the engine object")))
        };
        let (array, hash, cache, stats) = (
            take(engine::ARRAY)?,
            take(engine::HASH)?,
            take(engine::CACHE)?,
            take(engine::STATS)?,
        );
        let outstanding = take(engine::OUTSTANDING)?;
        let (stacks, trace, announce) = (
            take(engine::STACKS)?,
            take(engine::TRACE)?,
            take(engine::ANNOUNCE)?,
        );
        let names = match renames {
            Some(_) => Some(names::TaskNames::new(
                take(engine::TASK_GENS)?,
                take(engine::TASK_NAMES)?,
                &hash,
            )?),
            None => None,
        };
        let mut engine = Self {
            ebpf: Some(ebpf),
            array,
            hash,
            cache,
            stats,
            stacks,
            outstanding,
            trace: Some(trace),
            announce: Some(announce),
            plan: main,
            event_base: spec.event_base,
            notes: [
                (main.simple != 0).then_some(
                    "its plan without the interpreter (integers at hand: the event, fields, \
                     arguments, pid, tid, cpu; at most one comparison)",
                ),
                (main.group_cache != 0).then_some(
                    "its groups in per-CPU cells before the group hash (each group keeps its \
                     cell; no key hashed for them)",
                ),
                renames.is_some().then_some(
                    "comm keyed by thread id in the kernel, named from /proc and from the \
                     renames and exits it records",
                ),
            ]
            .into_iter()
            .flatten()
            .map(str::to_string)
            .collect(),
            links: Vec::new(),
            program_fds: Vec::new(),
            kprobe_links: Vec::new(),
            kretprobe_events: Vec::new(),
            map_fds,
            multi_links: Vec::new(),
            usdt_links: Vec::new(),
            unwind,
            misses_at_detach: None,
            names,
            kernel_stacks: uses(operand::KERNEL_STACK),
        };
        if renames.is_some() {
            // Before the main stage attaches: no event of a thread precedes its records.
            let rename = tracepoint("task", "task_rename");
            kinds::tracepoint::attach::attach(&mut engine, engine::TASK_RENAME, &rename)?;
            let exit = tracepoint("sched", "sched_process_exit");
            kinds::tracepoint::attach::attach(&mut engine, engine::TASK_EXIT, &exit)?;
        }
        if announces {
            let exec = tracepoint("sched", "sched_process_exec");
            kinds::tracepoint::attach::attach(&mut engine, engine::SCHED_EXEC, &exec)?;
            if mmap_prot_offset.is_some() {
                let mmap = tracepoint("syscalls", "sys_enter_mmap");
                kinds::tracepoint::attach::attach(&mut engine, engine::MMAP_EXEC, &mmap)?;
            }
        }
        if targets.follow_children {
            let fork = tracepoint("sched", "sched_process_fork");
            kinds::tracepoint::attach::attach(&mut engine, engine::SCHED_FORK, &fork)?;
        }
        if by_thread {
            let exit = tracepoint("sched", "sched_process_exit");
            kinds::tracepoint::attach::attach(&mut engine, engine::START_EXIT, &exit)?;
            let fork = tracepoint("sched", "sched_process_fork");
            kinds::tracepoint::attach::attach(&mut engine, engine::START_FORK, &fork)?;
        }
        Ok(engine)
    }

    /// Attaches the start stage first (so no end is seen before its start could be), then
    /// the main stage. Every stage's programs are loaded before any attaches, so the stages
    /// start within a short window (a wait that begins between the start's attach and the
    /// main's has no start).
    pub fn attach(&mut self, spec: &EngineSpec) -> Result<()> {
        for (stage, role) in spec.stages() {
            stage.attach.prepare(self, role)?;
        }
        for (stage, role) in spec.stages() {
            stage.attach.attach(self, role)?;
        }
        self.release();
        Ok(())
    }

    /// Keeps `link`, taken from its program, until [`Engine::detach`] (or the drop): once the
    /// object is released, its programs stay in the kernel through their links alone.
    fn keep_link(&mut self, role: Role, link: impl Send + Sync + 'static) {
        self.links.push((role, Box::new(link)));
    }

    /// Drops the loaded object, keeping the maps read back, the links and the stages'
    /// program fds: aya keeps each program's instructions (the engine object has about 90,
    /// a few hundred KiB each with the interpreter inlined), so an exporter of N metrics
    /// kept N copies of them all (12 MiB per metric) while it needs only what is attached.
    fn release(&mut self) {
        let Some(ebpf) = self.ebpf.take() else {
            return;
        };
        for (name, program) in ebpf.programs() {
            if let (Some(role), Ok(fd)) = (program_role(name), program.fd())
                && let Ok(fd) = fd.try_clone()
            {
                self.program_fds.push((role, fd));
            }
        }
    }

    /// How each stage attached (`fentry vfs_read`, `kprobe on 12 functions`), for `-v`.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Detaches and unloads every program; the aggregates stay readable.
    ///
    /// Each kprobe waits for an RCU grace period when it is released; closing the links from
    /// many threads at once lets those waits share grace periods, so detaching hundreds of
    /// kprobes takes a few grace periods instead of hundreds.
    ///
    /// The main stage goes first: while it runs, every start it looks up is still being
    /// recorded. The other order leaves the tasks woken meanwhile (detaching itself wakes the
    /// RCU kthreads) without a start, counted as ends whose start was not seen.
    pub fn detach(&mut self) {
        if self.ebpf.is_some() || !self.program_fds.is_empty() {
            self.misses_at_detach = Some(self.live_misses());
        }
        self.map_fds.clear();
        let (start_multi, main_multi): (Vec<_>, Vec<_>) = std::mem::take(&mut self.multi_links)
            .into_iter()
            .partition(|(role, ..)| role.is_start());
        drop(main_multi);
        let (start_usdt, main_usdt): (Vec<_>, Vec<_>) = std::mem::take(&mut self.usdt_links)
            .into_iter()
            .partition(|(role, _)| role.is_start());
        drop(main_usdt);
        let (start_links, main_links): (Vec<_>, Vec<_>) = std::mem::take(&mut self.kprobe_links)
            .into_iter()
            .partition(|(role, _)| role.is_start());
        let links = |links: Vec<(Role, _)>| links.into_iter().map(|(_, link)| link).collect();
        kinds::function::kprobe::close_in_parallel(links(main_links));
        kinds::function::kprobe::close_in_parallel(std::mem::take(&mut self.kretprobe_events));
        let (start_other, main_other): (Vec<_>, Vec<_>) = std::mem::take(&mut self.links)
            .into_iter()
            .partition(|(role, _)| role.is_start());
        drop(main_other);
        if let Some(ebpf) = self.ebpf.as_mut() {
            let main: Vec<String> = ebpf
                .programs()
                .map(|(name, _)| name.to_string())
                .filter(|name| !name.contains("_start"))
                .collect();
            for name in main {
                if let Some(program) = ebpf.program_mut(&name) {
                    unload(program);
                }
            }
        }
        drop(start_multi);
        drop(start_usdt);
        drop(start_other);
        self.program_fds.clear();
        kinds::function::kprobe::close_in_parallel(links(start_links));
        self.ebpf = None;
    }

    /// Events each stage's programs were not run for (see [`Misses`]); after
    /// [`Engine::detach`], as they were when it unloaded them.
    pub fn misses(&self) -> Misses {
        self.misses_at_detach.unwrap_or_else(|| self.live_misses())
    }

    fn live_misses(&self) -> Misses {
        let mut misses = Misses::default();
        let mut add = |role: Role, fd: std::os::fd::BorrowedFd<'_>| {
            let n = recursion_misses(fd);
            match role {
                Role::Main => misses.main += n,
                Role::Start => misses.start += n,
            }
        };
        if let Some(ebpf) = self.ebpf.as_ref() {
            for (name, program) in ebpf.programs() {
                if let (Some(role), Ok(fd)) = (program_role(name), program.fd()) {
                    add(role, fd.as_fd());
                }
            }
        }
        for (role, program) in &self.program_fds {
            add(*role, program.as_fd());
        }
        for (role, _, program) in &self.multi_links {
            add(*role, program.as_fd());
        }
        misses.main += kinds::function::kretprobe_event::missed(&self.kretprobe_events);
        misses
    }

    /// The loaded object, for the attach kinds.
    fn ebpf(&mut self) -> Result<&mut Ebpf> {
        self.ebpf
            .as_mut()
            .ok_or_else(|| Error::runtime("the engine was detached"))
    }

    /// The ring buffer of trace records (once).
    pub fn take_trace(&mut self) -> Result<RingBuf<MapData>> {
        let map = self
            .trace
            .take()
            .ok_or_else(|| Error::runtime("ENGINE_TRACE already taken"))?;
        RingBuf::try_from(map).context("opening ENGINE_TRACE")
    }

    /// The DWARF unwinder's maps, to build the tables of the processes announced on
    /// [`Engine::take_announce`]'s ring; `None` without [`EngineSpec::user_unwind`] (or
    /// when taken already).
    pub fn take_unwind_tables(&mut self) -> Option<crate::unwind::KernelTables> {
        self.unwind.take()
    }

    /// The ring buffer announcing processes (once).
    pub fn take_announce(&mut self) -> Result<RingBuf<MapData>> {
        let map = self
            .announce
            .take()
            .ok_or_else(|| Error::runtime("ENGINE_ANNOUNCE already taken"))?;
        RingBuf::try_from(map).context("opening ENGINE_ANNOUNCE")
    }

    /// The frames (leaf first) of each stack hash in `hashes` that the stack map holds.
    pub fn stacks(
        &self,
        hashes: impl IntoIterator<Item = u64>,
    ) -> Result<std::collections::BTreeMap<u64, Vec<u64>>> {
        let map: BpfHashMap<_, u64, StackFrames> =
            BpfHashMap::try_from(&self.stacks).context("opening ENGINE_STACKS")?;
        Ok(maps::read_stacks(&map, hashes))
    }

    /// An independent handle on the stack map, for looking stacks up while events stream.
    pub fn stack_reader(&self) -> Result<StackReader> {
        let Map::HashMap(data) = &self.stacks else {
            return Err(Error::runtime("ENGINE_STACKS is not a hash map"));
        };
        let id = data.info().context("ENGINE_STACKS info")?.id();
        let map = MapData::from_id(id).context("reopening ENGINE_STACKS")?;
        Ok(StackReader {
            map: BpfHashMap::try_from(Map::HashMap(map)).context("opening ENGINE_STACKS")?,
        })
    }

    /// The allocations an [`agg::OUTSTANDING`] plan holds now (address, allocation), as
    /// `memleak` reports them.
    ///
    /// # Errors
    /// A runtime error when the map cannot be read.
    pub fn outstanding(&self) -> Result<Vec<(u64, Outstanding)>> {
        let map: BpfHashMap<_, u64, Outstanding> =
            BpfHashMap::try_from(&self.outstanding).context("opening ENGINE_OUTSTANDING")?;
        let mut all = Vec::new();
        for entry in map.iter() {
            // An entry deleted while the map is walked ends the walk early; what was read
            // stands.
            let Ok(entry) = entry else { break };
            all.push(entry);
        }
        Ok(all)
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.detach();
    }
}

/// Offset of `prot` in `syscalls:sys_enter_mmap` (include/trace/events/syscalls.h), or None
/// when the kernel has no syscall tracepoints: then processes are announced at their first
/// event and after exec only, and libraries loaded later may not symbolize once they exit.
pub(crate) fn mmap_prot_offset() -> Option<u32> {
    let tracefs = tracefs::root().ok()?;
    let format = EventFormat::read(&tracefs, "syscalls", "sys_enter_mmap")
        .inspect_err(|err| log::debug!("no mmap tracepoint for re-reading memory maps: {err}"))
        .ok()?;
    format.field("prot").map(|field| field.offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recursion_misses_read_from_fdinfo() {
        let fdinfo = "pos:\t0\nflags:\t02000002\nmnt_id:\t16\nino:\t2075\n\
                      prog_type:\t5\nprog_jited:\t1\nprog_tag:\t2c1f0bd7ae6b5a91\n\
                      memlock:\t4096\nprog_id:\t179\nrun_time_ns:\t0\nrun_cnt:\t0\n\
                      recursion_misses:\t4\nverified_insns:\t1791\n";
        assert_eq!(parse_recursion_misses(fdinfo), Some(4));
        assert_eq!(parse_recursion_misses("prog_id:\t1\n"), None);
    }

    #[test]
    fn programs_sorted_by_stage() {
        assert_eq!(program_role("engine_tp_2"), Some(Role::Main));
        assert_eq!(program_role("engine_tp_start_1"), Some(Role::Start));
        assert_eq!(program_role("engine_kprobe_start"), Some(Role::Start));
        assert_eq!(program_role("engine_kretprobe"), Some(Role::Main));
        assert_eq!(program_role("engine_start_exit"), None);
        assert_eq!(program_role("engine_sched_exec"), None);
    }
}
