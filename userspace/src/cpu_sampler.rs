//! The CPU sampler, the kernel side of `tracekit profile`, `top` and the exporter's
//! profiles: load, attach, read and detach the `cpu_sampler` programs
//! (`ebpf/src/bin/cpu_sampler.rs`, layouts in `tracekit_common::cpu_sampler`).
//!
//! Samples come from the software `cpu-clock` perf event, one per online CPU, with a fixed
//! period of `1e9 / HZ` ns (exact rate, unlike frequency mode's feedback loop). Counting
//! happens in the kernel; [`Profiler::read`] copies the counts and the stacks they refer to.

use std::collections::HashMap;

use aya::{
    Ebpf,
    maps::{Array, HashMap as BpfHashMap, MapData, PerCpuArray, RingBuf},
    programs::{
        PerfEvent, TracePoint,
        perf_event::{PerfEventConfig, PerfEventScope, SamplePolicy, SoftwareEvent},
    },
    util::online_cpus,
};
use tracekit_common::cpu_sampler::{
    STACK_ERROR, STACK_NONE, STAT_COUNT, SampleKey, StackFrames, Stat, stack_of_generation,
};

use crate::{
    Error, Result,
    bpf::names::cpu_sampler,
    error::Context as _,
    probe::tracefs,
    stacks::{Frame, Stack, UNKNOWN_SYMBOL},
    symbolize::{
        Symbolizer,
        lines::{LineProfile, SourceLine},
    },
    unwind::{CallGraph, KernelTables, UnwindTables, Unwinder},
};

/// The pid (tgid) a process announcement names: the kernel writes a
/// [`tracekit_common::cpu_sampler::ProcessEvent`] to an announce ring buffer when it first
/// samples or stacks a process, and again after `exec`. `None` for a short record.
pub fn announced_pid(record: &[u8]) -> Option<u32> {
    if record.len() < size_of::<tracekit_common::cpu_sampler::ProcessEvent>() {
        return None;
    }
    // SAFETY: the kernel wrote a ProcessEvent; read_unaligned copes with any alignment.
    let event: tracekit_common::cpu_sampler::ProcessEvent =
        unsafe { std::ptr::read_unaligned(record.as_ptr().cast()) };
    Some(event.pid)
}

/// What to sample and how big the kernel maps are.
#[derive(Clone, Debug)]
pub struct ProfileOptions {
    /// Samples per second per CPU (`-F`).
    pub frequency_hz: u64,
    /// The processes to sample; `None` samples all of them (`-a`).
    pub pids: Option<Vec<u32>>,
    /// Also sample the children a selected process forks (for `-- CMD`).
    pub follow_children: bool,
    /// `--cgroup PATH`: only tasks in this cgroup v2 subtree (with `pids`: both hold).
    pub cgroup: Option<crate::cgroups::CgroupFilter>,
    /// Count samples of the idle task (pid 0).
    pub include_idle: bool,
    /// Record kernel stacks.
    pub kernel_stacks: bool,
    /// Record user stacks.
    pub user_stacks: bool,
    /// How user stacks are walked: `None` unwinds from `.eh_frame` tables where the kernel
    /// can (5.17+: `bpf_loop`), else by frame pointers.
    pub call_graph: Option<CallGraph>,
    /// Kernel memory the unwind tables may use, in bytes.
    pub unwind_budget_bytes: u64,
    /// Distinct stacks the stack trace map holds (`--stack-storage-size`).
    pub stack_map_entries: u32,
    /// Distinct (pid, comm, stacks) keys counted (`--count-map-size`).
    pub count_map_entries: u32,
    /// Count samples by the thread's cgroup too (`profile --by cgroup`): each stack then
    /// carries its cgroup's path ([`Stack::cgroup`](crate::stacks::Stack::cgroup)).
    pub by_cgroup: bool,
    /// Count samples per time slice of this many ns of `CLOCK_MONOTONIC` (`--heatmap`:
    /// [`crate::output::flamescope::SLICE_NS`]); `None`: one count per stack for the whole run.
    pub time_slice_ns: Option<u64>,
}

/// Counters the kernel program kept, summed over CPUs. See [`Stat`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stats {
    /// Samples counted.
    pub samples: u64,
    /// Samples dropped because the count map was full.
    pub count_map_full: u64,
    /// Stacks dropped because the stack map was full.
    pub stack_map_full: u64,
    /// Kernel stacks the kernel failed to walk.
    pub kernel_stack_errors: u64,
    /// User stacks the kernel failed to walk.
    pub user_stack_errors: u64,
    /// New-process announcements lost to a full ring buffer.
    pub events_lost: u64,
}

impl Stats {
    fn from_counters(c: &[u64; STAT_COUNT as usize]) -> Self {
        Self {
            samples: c[Stat::Samples as usize],
            count_map_full: c[Stat::CountMapFull as usize],
            stack_map_full: c[Stat::StackMapFull as usize],
            kernel_stack_errors: c[Stat::KernelStackError as usize],
            user_stack_errors: c[Stat::UserStackError as usize],
            events_lost: c[Stat::EventsLost as usize],
        }
    }

    /// Counter-wise `self - earlier` (for interval output).
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            samples: self.samples.saturating_sub(earlier.samples),
            count_map_full: self.count_map_full.saturating_sub(earlier.count_map_full),
            stack_map_full: self.stack_map_full.saturating_sub(earlier.stack_map_full),
            kernel_stack_errors: self
                .kernel_stack_errors
                .saturating_sub(earlier.kernel_stack_errors),
            user_stack_errors: self
                .user_stack_errors
                .saturating_sub(earlier.user_stack_errors),
            events_lost: self.events_lost.saturating_sub(earlier.events_lost),
        }
    }
}

/// A copy of the kernel maps: counts per key, and the stacks the keys refer to.
#[derive(Clone, Debug, Default)]
pub struct RawProfile {
    /// Samples per key.
    pub counts: HashMap<SampleKey, u64>,
    /// Stack hash to instruction pointers, leaf first.
    pub stacks: HashMap<u64, Vec<u64>>,
    /// The kernel program's counters.
    pub stats: Stats,
    /// Whether keys carry time slices ([`SampleKey::time_slice`]).
    pub sliced: bool,
}

impl RawProfile {
    /// What was counted after `earlier` was read: counts minus earlier counts (for `-i`).
    pub fn since(&self, earlier: &RawProfile) -> RawProfile {
        let counts = self
            .counts
            .iter()
            .filter_map(|(key, &count)| {
                let before = earlier.counts.get(key).copied().unwrap_or(0);
                (count > before).then_some((*key, count - before))
            })
            .collect();
        RawProfile {
            counts,
            stacks: self.stacks.clone(),
            stats: self.stats.since(&earlier.stats),
            sliced: self.sliced,
        }
    }
}

/// Loaded (and, after [`Profiler::attach`], attached) profile programs.
pub struct Profiler {
    ebpf: Ebpf,
    attached_cpus: usize,
    mmap_prot_offset: Option<u32>,
    /// The generation the kernel counts under now.
    generation: u32,
    /// The counters at the end of the last interval taken.
    taken_stats: Stats,
    /// The DWARF unwinder's tables, when user stacks are unwound from them.
    unwind: Option<Unwinder>,
    /// Why `--call-graph` fell back to frame pointers, when it did without being asked.
    unwind_unavailable: Option<String>,
    /// [`ProfileOptions::time_slice_ns`].
    time_slice_ns: Option<u64>,
}

const PERF_PROGRAM: &str = cpu_sampler::CPU_CLOCK;
const EXEC_PROGRAM: &str = cpu_sampler::SCHED_EXEC;
const MMAP_PROGRAM: &str = cpu_sampler::MMAP_EXEC;
const FORK_PROGRAM: &str = cpu_sampler::SCHED_FORK;

impl Profiler {
    /// Loads the programs with `options` baked in as globals and map sizes, and verifies the
    /// sampler. With `call_graph: None`, a kernel that cannot run the DWARF unwinder (before
    /// 5.17: no `bpf_loop`) gets the frame-pointer walk instead
    /// ([`Profiler::unwind_unavailable`] says why).
    pub fn load(options: &ProfileOptions) -> Result<Self> {
        let dwarf = options.user_stacks && options.call_graph != Some(CallGraph::Fp);
        if !dwarf {
            return Self::load_with(options, false);
        }
        match Self::load_with(options, true) {
            Ok(profiler) => Ok(profiler),
            Err(err) if options.call_graph.is_none() => {
                let reason = format!("{err:#}");
                log::debug!("the DWARF unwinder does not load here: {reason}");
                let mut profiler = Self::load_with(options, false)?;
                profiler.unwind_unavailable = Some(reason);
                Ok(profiler)
            }
            Err(err) => Err(err),
        }
    }

    fn load_with(options: &ProfileOptions, dwarf: bool) -> Result<Self> {
        crate::bpf::raise_memlock_limit();
        let self_pid = std::process::id();
        let filter = u8::from(options.pids.is_some());
        // Id 0 is no cgroup: the kernel side then skips the check.
        let (cgroup_id, cgroup_level) = options.cgroup.map_or((0u64, 0u32), |c| (c.id, c.level));
        let include_idle = u8::from(options.include_idle);
        let kernel_stacks = u8::from(options.kernel_stacks);
        let user_stacks = u8::from(options.user_stacks);
        let user_unwind = u8::from(dwarf);
        let by_cgroup = u8::from(options.by_cgroup);
        let fork_offset = if options.follow_children {
            let tracefs = tracefs::root()?;
            let format = tracefs::EventFormat::read(&tracefs, "sched", "sched_process_fork")?;
            format
                .field("child_pid")
                .ok_or_else(|| Error::runtime("sched:sched_process_fork has no child_pid field"))?
                .offset
        } else {
            0
        };
        let mmap_prot_offset = if options.user_stacks {
            crate::engine::mmap_prot_offset()
        } else {
            None
        };
        let prot_offset = mmap_prot_offset.unwrap_or(0);
        let time_slice_ns = options.time_slice_ns.unwrap_or(0);
        crate::bpf::hash_entries("--stack-storage-size", options.stack_map_entries)?;
        crate::bpf::hash_entries("--count-map-size", options.count_map_entries)?;
        // perf_event and tracepoint programs need no kernel BTF.
        let mut ebpf = crate::bpf::load_without_kernel_btf(
            crate::bpf::object(crate::bpf::Object::CpuSampler)?,
            |loader| {
                loader
                    .override_global(cpu_sampler::SELF_PID, &self_pid, true)
                    .override_global(cpu_sampler::FILTER_PIDS, &filter, true)
                    .override_global(cpu_sampler::CGROUP_ID, &cgroup_id, true)
                    .override_global(cpu_sampler::CGROUP_LEVEL, &cgroup_level, true)
                    .override_global(cpu_sampler::INCLUDE_IDLE, &include_idle, true)
                    .override_global(cpu_sampler::KERNEL_STACKS, &kernel_stacks, true)
                    .override_global(cpu_sampler::USER_STACKS, &user_stacks, true)
                    .override_global(cpu_sampler::USER_UNWIND, &user_unwind, true)
                    .override_global(cpu_sampler::BY_CGROUP, &by_cgroup, true)
                    .override_global(cpu_sampler::FORK_CHILD_PID_OFFSET, &fork_offset, true)
                    .override_global(cpu_sampler::MMAP_PROT_OFFSET, &prot_offset, true)
                    .override_global(cpu_sampler::TIME_SLICE_NS, &time_slice_ns, true)
                    .map_max_entries(cpu_sampler::STACKS, options.stack_map_entries)
                    .map_max_entries(cpu_sampler::COUNTS, options.count_map_entries);
            },
        )
        .context("loading the profile BPF programs")?;

        if let Some(pids) = &options.pids {
            let mut targets: BpfHashMap<_, u32, u8> =
                BpfHashMap::try_from(ebpf.map_mut(cpu_sampler::TARGETS).expect("map in object"))
                    .context("opening PROFILE_TARGETS")?;
            for &pid in pids {
                targets
                    .insert(pid, 1, 0)
                    .with_context(|| format!("selecting pid {pid}"))?;
            }
        }
        // Verified now, so that a kernel without what the unwinder needs is known here.
        let program: &mut PerfEvent = ebpf
            .program_mut(PERF_PROGRAM)
            .expect("program in object")
            .try_into()
            .context("profile program type")?;
        program.load().context("loading the cpu-clock sampler")?;
        let unwind = if dwarf {
            Some(Unwinder::new(UnwindTables::new(
                KernelTables::take(&mut ebpf)?,
                options.unwind_budget_bytes,
            )))
        } else {
            None
        };
        Ok(Self {
            ebpf,
            attached_cpus: 0,
            mmap_prot_offset,
            generation: 0,
            taken_stats: Stats::default(),
            unwind,
            unwind_unavailable: None,
            time_slice_ns: options.time_slice_ns,
        })
    }

    /// The unwind tables, when user stacks are unwound from them (`--call-graph dwarf`),
    /// back from their thread if [`Unwinder::start`] sent them there (it stops building:
    /// call this for the final report).
    pub fn unwind_tables(&mut self) -> Option<&mut UnwindTables> {
        self.unwind.as_mut().map(Unwinder::tables)
    }

    /// How user stacks are walked.
    pub fn call_graph(&self) -> CallGraph {
        if self.unwind.is_some() {
            CallGraph::Dwarf
        } else {
            CallGraph::Fp
        }
    }

    /// Why the DWARF unwinder could not load, when it was the default and fell back.
    pub fn unwind_unavailable(&self) -> Option<&str> {
        self.unwind_unavailable.as_deref()
    }

    /// The unwind tables over the run (`--call-graph dwarf`): built in line before sampling
    /// ([`Unwinder::prepare`]), then on their own thread ([`Unwinder::start`]), for each
    /// process announced ([`Unwinder::load_process`]). `None` in frame-pointer mode.
    pub fn unwinder(&mut self) -> Option<&mut Unwinder> {
        self.unwind.as_mut()
    }

    /// For `-v`: the unwind tables' report and the kernel walk's counters (stops the
    /// tables' thread, as [`Profiler::unwind_tables`] does).
    pub fn unwind_summary(&mut self) -> Option<String> {
        self.unwind_tables().map(|tables| tables.summary())
    }

    /// Attaches the sampler to every online CPU and the process-tracking tracepoints.
    pub fn attach(&mut self, options: &ProfileOptions) -> Result<()> {
        let period_ns = 1_000_000_000 / options.frequency_hz;
        let cpus = online_cpus().map_err(|(path, err)| {
            Error::runtime(format!("reading the online CPUs from {path}: {err}"))
        })?;
        let program: &mut PerfEvent = self
            .ebpf
            .program_mut(PERF_PROGRAM)
            .expect("program in object")
            .try_into()
            .context("profile program type")?;
        for &cpu in &cpus {
            program
                .attach(
                    PerfEventConfig::Software(SoftwareEvent::CpuClock),
                    PerfEventScope::AllProcessesOneCpu { cpu },
                    SamplePolicy::Period(period_ns),
                    false,
                )
                .with_context(|| format!("attaching to cpu-clock on cpu {cpu}"))?;
        }
        self.attached_cpus = cpus.len();

        let mut tracepoints = vec![(EXEC_PROGRAM, "sched", "sched_process_exec")];
        if options.follow_children {
            tracepoints.push((FORK_PROGRAM, "sched", "sched_process_fork"));
        }
        if self.mmap_prot_offset.is_some() {
            tracepoints.push((MMAP_PROGRAM, "syscalls", "sys_enter_mmap"));
        }
        tracefs::root()?;
        for (name, system, event) in tracepoints {
            let program: &mut TracePoint = self
                .ebpf
                .program_mut(name)
                .expect("program in object")
                .try_into()
                .context("tracepoint program type")?;
            program
                .load()
                .with_context(|| format!("loading the {system}:{event} program"))?;
            program
                .attach(system, event)
                .with_context(|| format!("attaching to tracepoint {system}:{event}"))?;
        }
        Ok(())
    }

    /// The number of CPUs sampled.
    pub fn cpus(&self) -> usize {
        self.attached_cpus
    }

    /// The ring buffer announcing new processes (to be polled by the caller).
    pub fn take_events(&mut self) -> Result<RingBuf<MapData>> {
        let map = self
            .ebpf
            .take_map(cpu_sampler::EVENTS)
            .ok_or_else(|| Error::runtime("PROFILE_EVENTS already taken"))?;
        RingBuf::try_from(map).context("opening the PROFILE_EVENTS ring buffer")
    }

    /// Detaches and unloads every program; the maps stay readable.
    pub fn detach(&mut self) -> Result<()> {
        let program: &mut PerfEvent = self
            .ebpf
            .program_mut(PERF_PROGRAM)
            .expect("program in object")
            .try_into()
            .context("profile program type")?;
        let _ = program.unload();
        for name in [EXEC_PROGRAM, FORK_PROGRAM] {
            let program: &mut TracePoint = self
                .ebpf
                .program_mut(name)
                .expect("program in object")
                .try_into()
                .context("tracepoint program type")?;
            let _ = program.unload();
        }
        Ok(())
    }

    /// Ends the current interval: the kernel counts under the next generation from now on,
    /// and what the ended one counted is copied out of the kernel maps and deleted from them,
    /// so that the maps hold one interval's keys and stacks however long the run (a run of
    /// hours under process churn would otherwise fill them and drop samples). Returns the
    /// interval's counts, the stacks they use, and the counters' increase since the last
    /// call. A sample that read the old generation as it changed lands in a later interval.
    pub fn take_interval(&mut self) -> Result<RawProfile> {
        let ended = self.generation;
        self.generation = ended.wrapping_add(1);
        let mut generation: Array<_, u32> = Array::try_from(
            self.ebpf
                .map_mut(cpu_sampler::GENERATION)
                .expect("map in object"),
        )
        .context("opening PROFILE_GENERATION")?;
        generation
            .set(0, self.generation, 0)
            .context("writing PROFILE_GENERATION")?;
        // Samples already running read the old generation: let them finish (microseconds).
        std::thread::sleep(std::time::Duration::from_millis(2));

        let mut raw = self.read_where(|key| key.generation & 1 == ended & 1)?;
        let mut counts_map: BpfHashMap<_, SampleKey, u64> = BpfHashMap::try_from(
            self.ebpf
                .map_mut(cpu_sampler::COUNTS)
                .expect("map in object"),
        )
        .context("opening PROFILE_COUNTS")?;
        for key in raw.counts.keys() {
            // Gone already only if deleted twice; nothing else deletes.
            let _ = counts_map.remove(key);
        }
        let mut stack_map: BpfHashMap<_, u64, StackFrames> = BpfHashMap::try_from(
            self.ebpf
                .map_mut(cpu_sampler::STACKS)
                .expect("map in object"),
        )
        .context("opening PROFILE_STACKS")?;
        let ended_stacks: Vec<u64> = stack_map
            .keys()
            .filter_map(|hash| hash.ok())
            .filter(|&hash| stack_of_generation(hash, ended))
            .collect();
        for hash in ended_stacks {
            let _ = stack_map.remove(&hash);
        }
        let stats = raw.stats;
        raw.stats = stats.since(&self.taken_stats);
        self.taken_stats = stats;
        Ok(raw)
    }

    /// Copies the counts, the stacks they use, and the counters out of the kernel.
    pub fn read(&self) -> Result<RawProfile> {
        self.read_where(|_| true)
    }

    /// [`Profiler::read`] of the keys `keep` selects.
    fn read_where(&self, keep: impl Fn(&SampleKey) -> bool) -> Result<RawProfile> {
        let counts_map: BpfHashMap<_, SampleKey, u64> =
            BpfHashMap::try_from(self.ebpf.map(cpu_sampler::COUNTS).expect("map in object"))
                .context("opening PROFILE_COUNTS")?;
        let mut counts = HashMap::new();
        for entry in counts_map.iter() {
            let (key, count) = entry.context("reading PROFILE_COUNTS")?;
            if keep(&key) {
                counts.insert(key, count);
            }
        }

        let stack_map: BpfHashMap<_, u64, StackFrames> =
            BpfHashMap::try_from(self.ebpf.map(cpu_sampler::STACKS).expect("map in object"))
                .context("opening PROFILE_STACKS")?;
        let mut stacks = HashMap::new();
        for key in counts.keys() {
            for hash in [key.kernel_stack, key.user_stack] {
                if hash == STACK_NONE || hash == STACK_ERROR || stacks.contains_key(&hash) {
                    continue;
                }
                if let Ok(frames) = stack_map.get(&hash, 0) {
                    let len = frames
                        .iter()
                        .position(|&ip| ip == 0)
                        .unwrap_or(frames.len());
                    stacks.insert(hash, frames[..len].to_vec());
                }
            }
        }

        let stats_map: PerCpuArray<_, u64> =
            PerCpuArray::try_from(self.ebpf.map(cpu_sampler::STATS).expect("map in object"))
                .context("opening PROFILE_STATS")?;
        let mut counters = [0u64; STAT_COUNT as usize];
        for (index, counter) in counters.iter_mut().enumerate() {
            let per_cpu = stats_map
                .get(&(index as u32), 0)
                .context("reading PROFILE_STATS")?;
            *counter = per_cpu.iter().sum();
        }
        Ok(RawProfile {
            counts,
            stacks,
            stats: Stats::from_counters(&counters),
            sliced: self.time_slice_ns.is_some(),
        })
    }
}

/// A profile with every address resolved, and what the stacks say about their own quality.
#[derive(Clone, Debug, Default)]
pub struct SymbolizedProfile {
    /// Distinct stacks with their sample counts.
    pub stacks: Vec<Stack>,
    /// The kernel program's counters.
    pub stats: Stats,
    /// Samples with neither a kernel nor a user stack.
    pub unwalked: u64,
    /// Processes whose user stacks are mostly too short to be real (see [`BrokenStacks`]).
    pub broken: Vec<BrokenStacks>,
}

/// A process whose user stacks look broken: most have fewer than [`SHORT_STACK_FRAMES`]
/// frames, which on x86_64 almost always means code built without frame pointers (the
/// first thing the Netflix profiling checklist asks to fix).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokenStacks {
    /// Process id.
    pub pid: u32,
    /// Its command name.
    pub comm: String,
    /// Samples with a user stack.
    pub samples: u64,
    /// Of those, samples whose user stack is shorter than [`SHORT_STACK_FRAMES`].
    pub short: u64,
}

/// User stacks with fewer frames than this count as short.
pub const SHORT_STACK_FRAMES: usize = 3;
/// A process is only judged on at least this many samples.
const MIN_SAMPLES_TO_JUDGE: u64 = 20;

/// Frame shown where a stack was lost (collision or error), as bcc's `[Missed User Stack]`.
const MISSING_USER: &str = "[missing user stack]";
const MISSING_KERNEL: &str = "[missing kernel stack]";

/// The samples of `raw` by the source line of their user leaf (see
/// [`crate::symbolize::lines`]): samples whose leaf ran in the kernel, or that have no user
/// stack, are counted apart.
pub fn leaf_lines(raw: &RawProfile, symbolizer: &Symbolizer) -> LineProfile {
    let mut cache: HashMap<(u32, u64), SourceLine> = HashMap::new();
    let mut counts: HashMap<SourceLine, u64> = HashMap::new();
    let mut profile = LineProfile::default();
    let mut keys: Vec<_> = raw.counts.iter().collect();
    keys.sort_unstable_by_key(|(key, _)| **key);
    for (key, &count) in keys {
        let in_kernel = key.kernel_stack != STACK_NONE
            && raw
                .stacks
                .get(&key.kernel_stack)
                .is_some_and(|ips| !ips.is_empty());
        if in_kernel {
            profile.in_kernel += count;
            continue;
        }
        let Some(&leaf) = raw.stacks.get(&key.user_stack).and_then(|ips| ips.first()) else {
            profile.no_user_stack += count;
            continue;
        };
        let line = cache
            .entry((key.pid, leaf))
            .or_insert_with(|| {
                symbolizer.user_line(key.pid, leaf).unwrap_or(SourceLine {
                    function: UNKNOWN_SYMBOL.to_string(),
                    module: None,
                    file: None,
                    line: None,
                })
            })
            .clone();
        *counts.entry(line).or_default() += count;
    }
    profile.lines = counts.into_iter().collect();
    profile
}

/// Resolves every stack of `raw` with `symbolizer`, each distinct stack once.
pub fn symbolize(raw: &RawProfile, symbolizer: &Symbolizer) -> SymbolizedProfile {
    let mut kernel_cache: HashMap<u64, Vec<Frame>> = HashMap::new();
    let mut user_cache: HashMap<(u32, u64), Vec<Frame>> = HashMap::new();
    let mut judged: HashMap<u32, (String, u64, u64)> = HashMap::new();
    let mut unwalked = 0;
    let mut stacks = Vec::with_capacity(raw.counts.len());

    let started = std::time::Instant::now();
    let kernel_addresses: usize = raw
        .counts
        .keys()
        .filter_map(|key| raw.stacks.get(&key.kernel_stack))
        .map(Vec::len)
        .sum();
    log::debug!(
        "symbolizing {} stacks ({kernel_addresses} kernel frames)",
        raw.stacks.len()
    );
    let mut keys: Vec<_> = raw.counts.iter().collect();
    keys.sort_unstable_by_key(|(key, _)| **key);
    for (key, &count) in keys {
        let comm = comm_string(&key.comm);
        let mut frames = Vec::new();
        match stack_frames(raw, key.user_stack) {
            StackLookup::Frames(ips) => {
                let resolved = user_cache
                    .entry((key.pid, key.user_stack))
                    .or_insert_with(|| symbolizer.user_stack(key.pid, ips));
                let entry = judged
                    .entry(key.pid)
                    .or_insert_with(|| (comm.clone(), 0, 0));
                entry.1 += count;
                if ips.len() < SHORT_STACK_FRAMES {
                    entry.2 += count;
                }
                frames.extend(resolved.iter().cloned());
            }
            StackLookup::Missing => frames.push(Frame::user(MISSING_USER, None)),
            StackLookup::None => {}
        }
        match stack_frames(raw, key.kernel_stack) {
            StackLookup::Frames(ips) => {
                let resolved = kernel_cache
                    .entry(key.kernel_stack)
                    .or_insert_with(|| symbolizer.kernel_stack(ips));
                frames.extend(resolved.iter().cloned());
            }
            StackLookup::Missing => frames.push(Frame::kernel(MISSING_KERNEL)),
            StackLookup::None => {}
        }
        if frames.is_empty() {
            unwalked += count;
        }
        stacks.push(Stack {
            pid: key.pid,
            comm,
            // Ids are cgroup2 inode numbers, never 0: 0 is "not asked for".
            cgroup: (key.cgroup != 0).then(|| crate::cgroups::path(key.cgroup)),
            frames,
            count,
            time_slice: raw.sliced.then_some(key.time_slice),
        });
    }

    log::debug!(
        "symbolized {} keys in {:?}",
        raw.counts.len(),
        started.elapsed()
    );
    let mut broken: Vec<BrokenStacks> = judged
        .into_iter()
        .filter(|(_, (_, samples, short))| *samples >= MIN_SAMPLES_TO_JUDGE && short * 2 > *samples)
        .map(|(pid, (comm, samples, short))| BrokenStacks {
            pid,
            comm,
            samples,
            short,
        })
        .collect();
    broken.sort_by_key(|b| std::cmp::Reverse(b.samples));
    SymbolizedProfile {
        stacks,
        stats: raw.stats,
        unwalked,
        broken,
    }
}

enum StackLookup<'a> {
    Frames(&'a [u64]),
    /// The stack existed but was lost (walk error, full stack map).
    Missing,
    /// There was no stack of this kind (kernel stack of a user-mode sample, user stack of a
    /// kernel thread) or it was not asked for.
    None,
}

fn stack_frames(raw: &RawProfile, hash: u64) -> StackLookup<'_> {
    if hash == STACK_NONE {
        return StackLookup::None;
    }
    match raw.stacks.get(&hash) {
        Some(ips) if !ips.is_empty() => StackLookup::Frames(ips),
        _ => StackLookup::Missing,
    }
}

/// A NUL-padded `comm` as text.
pub fn comm_string(comm: &[u8]) -> String {
    let end = comm.iter().position(|&b| b == 0).unwrap_or(comm.len());
    String::from_utf8_lossy(&comm[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    fn key(pid: u32, kernel: u64, user: u64, comm: &str) -> SampleKey {
        let mut c = [0u8; 16];
        c[..comm.len()].copy_from_slice(comm.as_bytes());
        SampleKey {
            pid,
            generation: 0,
            kernel_stack: kernel,
            user_stack: user,
            cgroup: 0,
            comm: c,
            time_slice: 0,
            padding: 0,
        }
    }

    #[test]
    fn since_subtracts_earlier_counts() {
        let mut earlier = RawProfile::default();
        earlier.counts.insert(key(1, STACK_NONE, 3, "a"), 5);
        earlier.stats.samples = 5;
        let mut now = earlier.clone();
        now.counts.insert(key(1, STACK_NONE, 3, "a"), 8);
        now.counts.insert(key(2, STACK_NONE, 4, "b"), 2);
        now.stats.samples = 10;
        let delta = now.since(&earlier);
        assert_eq!(delta.counts.len(), 2);
        assert_eq!(delta.counts[&key(1, STACK_NONE, 3, "a")], 3);
        assert_eq!(delta.counts[&key(2, STACK_NONE, 4, "b")], 2);
        assert_eq!(delta.stats.samples, 5);
    }

    #[test]
    fn lost_and_absent_stacks() {
        let mut raw = RawProfile::default();
        raw.counts.insert(key(9, STACK_ERROR, STACK_NONE, "x"), 4);
        raw.counts.insert(key(8, STACK_NONE, STACK_NONE, "y"), 2);
        raw.counts.insert(key(7, STACK_NONE, 77, "z"), 1);
        let profile = symbolize(&raw, &Symbolizer::default());
        assert_eq!(profile.unwalked, 2);
        let lost = profile.stacks.iter().find(|s| s.pid == 9).unwrap();
        assert_eq!(lost.frames, [Frame::kernel(MISSING_KERNEL)]);
        let evicted = profile.stacks.iter().find(|s| s.pid == 7).unwrap();
        assert_eq!(evicted.frames, [Frame::user(MISSING_USER, None)]);
    }

    #[test]
    fn flags_processes_with_short_user_stacks() {
        let mut raw = RawProfile::default();
        raw.stacks.insert(11, vec![0x10]);
        raw.stacks.insert(12, vec![0x10, 0x20, 0x30, 0x40]);
        raw.counts.insert(key(100, STACK_NONE, 11, "nofp"), 30);
        raw.counts.insert(key(100, STACK_NONE, 12, "nofp"), 10);
        raw.counts.insert(key(200, STACK_NONE, 12, "fp"), 40);
        raw.counts.insert(key(300, STACK_NONE, 11, "few"), 5);
        let profile = symbolize(&raw, &Symbolizer::default());
        assert_eq!(
            profile.broken,
            [BrokenStacks {
                pid: 100,
                comm: "nofp".into(),
                samples: 40,
                short: 30
            }]
        );
    }

    #[test]
    fn comm_stops_at_nul() {
        assert_eq!(comm_string(b"burner\0\0\0garbage"), "burner");
        assert_eq!(comm_string(b"0123456789abcdef"), "0123456789abcdef");
    }
}
