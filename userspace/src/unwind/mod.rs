//! Whole user stacks without frame pointers: unwind tables built from each binary's
//! `.eh_frame` / `.debug_frame` and loaded into the kernel for its DWARF unwinder
//! (`ebpf/src/unwind/mod.rs`; map layout in [`tracekit_common::unwind`]).
//!
//! [`UnwindTables`] owns the unwinder's maps of one loaded BPF object. For each process it
//! is told about ([`UnwindTables::load_process`]: at start, then as the kernel announces
//! processes it samples, again after `exec` and `dlopen`), it reads `/proc/PID/maps`, builds
//! the table of each executable mapping's binary the first time that binary is seen (shared
//! by every process that maps it, keyed by device and inode, then by build ID), and
//! publishes the process's mapping table. Mappings without a table (JIT code, binaries
//! without unwind information, tables over the memory budget) are published too: the kernel
//! steps their frames by frame pointer, and [`UnwindTables::report`] says which and why.
//!
//! ```no_run
//! # fn demo(ebpf: &mut aya::Ebpf) -> tracekit::Result<()> {
//! use tracekit::unwind::{KernelTables, UnwindTables};
//! let mut tables = UnwindTables::new(KernelTables::take(ebpf)?, 64 << 20);
//! tables.load_process(1234);
//! for line in tables.report().lines() {
//!     eprintln!("{line}");
//! }
//! # Ok(()) }
//! ```

pub mod interp;
pub mod kernel;
pub mod needed;
pub mod process;
pub mod table;
pub mod worker;

use std::{
    collections::{BTreeMap, HashMap, VecDeque},
    time::{Duration, Instant},
};

pub use kernel::{KernelTables, WalkStats};
use process::{Backing, ExecMapping};
use table::Segment;
use tracekit_common::{
    cpu_sampler::MAX_STACK_DEPTH,
    unwind::{MAX_PROCESS_MAPPINGS, Mapping, ProcessMappings},
};
pub use worker::{UnwindWorker, Unwinder};

/// How user stacks are walked (`--call-graph`, as perf spells it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallGraph {
    /// Follow frame pointers (the kernel's own walk): cheap, but cut short in code built
    /// without them.
    Fp,
    /// Unwind in the kernel with tables built from `.eh_frame` / `.debug_frame`.
    Dwarf,
}

/// A binary's table in the kernel, or why it has none.
#[derive(Clone, Debug)]
enum Binary {
    Loaded {
        first_row: u32,
        rows: u32,
        segments: Vec<Segment>,
    },
    Missing(String),
}

/// Binaries are known by the device and inode of their file.
type BinaryKey = (String, u64);

/// The unwind tables of the processes tracekit was told about.
pub struct UnwindTables {
    kernel: KernelTables,
    budget_bytes: u64,
    binaries: HashMap<BinaryKey, Binary>,
    by_build_id: HashMap<Vec<u8>, Binary>,
    vdso: Option<Binary>,
    /// Processes published, and what fell back in each.
    published: Published,
    /// When processes that exited were last unpublished.
    pruned: Instant,
    /// Mapping ranges replaced by the previous call, freed by the next one, so a sample
    /// still walking an old range never reads a reused one.
    retired: Vec<ProcessMappings>,
    loaded_binaries: usize,
    build_time: Duration,
    /// (mapping name, reason) to the processes it fell back in.
    fallbacks: BTreeMap<(String, String), Fallback>,
    errors: BTreeMap<String, usize>,
    /// Announced processes not loaded because the tables' thread had a full queue.
    queue_dropped: u64,
}

/// What fell back to frame pointers in one process: (mapping name, reason) pairs.
type ProcessFallbacks = Vec<(String, String)>;

/// The processes whose mapping tables are published, with what fell back in each (for
/// [`UnwindTables::broken_hints`]). Processes seen exited leave it
/// ([`Published::forget_exited`]), so that what it holds, and the kernel's process and
/// mapping tables, follow the processes alive, not every process a run under churn saw; the
/// fallbacks of the last [`Published::EXITED_KEPT`] exited ones stay for the final report
/// (an exited `-- CMD`).
#[derive(Default)]
struct Published {
    live: HashMap<u32, ProcessFallbacks>,
    exited: VecDeque<(u32, ProcessFallbacks)>,
}

impl Published {
    /// Exited processes whose fallbacks are kept.
    const EXITED_KEPT: usize = 256;

    /// Records `pid` as published with `fallbacks` (replacing what an earlier load said).
    fn insert(&mut self, pid: u32, fallbacks: ProcessFallbacks) {
        self.live.insert(pid, fallbacks);
    }

    /// Moves the processes `exited` says are gone out of the live set; returns their pids
    /// (to unpublish from the kernel).
    fn forget_exited(&mut self, exited: impl Fn(u32) -> bool) -> Vec<u32> {
        let gone: Vec<u32> = self
            .live
            .keys()
            .copied()
            .filter(|&pid| exited(pid))
            .collect();
        for &pid in &gone {
            if let Some(fallbacks) = self.live.remove(&pid) {
                if self.exited.len() == Self::EXITED_KEPT {
                    self.exited.pop_front();
                }
                self.exited.push_back((pid, fallbacks));
            }
        }
        gone
    }

    /// Processes published now.
    fn len(&self) -> usize {
        self.live.len()
    }

    /// What fell back in `pid`, live or among the exited kept.
    fn fallbacks_of(&self, pid: u32) -> Option<&ProcessFallbacks> {
        self.live.get(&pid).or_else(|| {
            self.exited
                .iter()
                .rev()
                .find(|(exited, _)| *exited == pid)
                .map(|(_, fallbacks)| fallbacks)
        })
    }

    /// Every process with fallbacks known: live, then the exited kept.
    fn pids(&self) -> impl Iterator<Item = u32> + '_ {
        self.live
            .keys()
            .copied()
            .chain(self.exited.iter().map(|(pid, _)| *pid))
    }
}

/// How often, at most, processes that exited are unpublished (when a process is loaded).
const PRUNE_EVERY: Duration = Duration::from_secs(1);

/// The processes where one mapping fell back to frame pointers, for the report: a count and
/// the first few pids (a set of every pid grew without bound under process churn).
#[derive(Default)]
struct Fallback {
    /// Process loads it fell back in (a process loaded again after an `exec` counts again).
    loads: u64,
    /// The first pids, at most [`Fallback::SHOWN`].
    pids: Vec<u32>,
}

impl Fallback {
    const SHOWN: usize = 5;

    fn add(&mut self, pid: u32) {
        if self.pids.last() == Some(&pid) {
            return;
        }
        self.loads += 1;
        if self.pids.len() < Self::SHOWN {
            self.pids.push(pid);
        }
    }
}

/// The pids in `/proc` now, but `except`.
fn live_pids(except: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .filter(|&pid| pid != except)
        .collect()
}

/// Per-process reason for mappings past the kernel's search bound.
const TOO_MANY_MAPPINGS: &str = "more executable mappings than the kernel searches";

impl UnwindTables {
    /// Tables in `kernel`'s maps, the rows limited to `budget_bytes` of kernel memory.
    pub fn new(kernel: KernelTables, budget_bytes: u64) -> Self {
        Self {
            kernel,
            budget_bytes,
            binaries: HashMap::new(),
            by_build_id: HashMap::new(),
            vdso: None,
            published: Published::default(),
            pruned: Instant::now(),
            retired: Vec::new(),
            loaded_binaries: 0,
            build_time: Duration::ZERO,
            fallbacks: BTreeMap::new(),
            errors: BTreeMap::new(),
            queue_dropped: 0,
        }
    }

    /// Builds (or finds) the tables of every executable mapping of live process `pid` and
    /// publishes its mapping table. Returns false if the process is gone or has no
    /// executable mappings (kernel threads). Failures are kept for [`UnwindTables::report`].
    pub fn load_process(&mut self, pid: u32) -> bool {
        let started = Instant::now();
        for range in self.retired.drain(..) {
            self.kernel.release(range);
        }
        if self.pruned.elapsed() >= PRUNE_EVERY {
            self.forget_exited();
        }
        let Ok(exec_mappings) = process::exec_mappings(pid) else {
            return false;
        };
        if exec_mappings.is_empty() {
            return false;
        }
        // JIT runtimes' frames need no tables: named while the tables are built.
        if let Some(interp) = &mut self.kernel.interp {
            interp.load_jit_process(pid, &exec_mappings);
        }
        let mut mappings = Vec::with_capacity(exec_mappings.len());
        let mut fallbacks = ProcessFallbacks::new();
        for mapping in &exec_mappings {
            let entry = match self.binary_of(pid, mapping) {
                Binary::Loaded {
                    first_row,
                    rows,
                    segments,
                } => match table::load_bias(&segments, mapping.begin, mapping.offset) {
                    Some(bias) => Mapping {
                        begin: mapping.begin,
                        end: mapping.end,
                        bias,
                        first_row,
                        rows,
                    },
                    None => {
                        self.fall_back(
                            pid,
                            mapping,
                            "no loadable segment holds the mapping",
                            &mut fallbacks,
                        );
                        no_table(mapping)
                    }
                },
                Binary::Missing(reason) => {
                    self.fall_back(pid, mapping, &reason, &mut fallbacks);
                    no_table(mapping)
                }
            };
            mappings.push(entry);
        }
        if mappings.len() > MAX_PROCESS_MAPPINGS as usize {
            for mapping in &exec_mappings[MAX_PROCESS_MAPPINGS as usize..] {
                self.fall_back(pid, mapping, TOO_MANY_MAPPINGS, &mut fallbacks);
            }
            mappings.truncate(MAX_PROCESS_MAPPINGS as usize);
        }
        // After the tables: detection may wait for the kernel's layouts (BTF) once.
        if let Some(interp) = &mut self.kernel.interp {
            interp.load_process(pid, &exec_mappings);
        }
        let published = match self.kernel.set_process(pid, &mappings) {
            Ok(old) => Ok(old),
            Err(_) => {
                // Full: forget the processes that exited, then try once more.
                self.forget_exited();
                self.kernel.set_process(pid, &mappings)
            }
        };
        self.build_time += started.elapsed();
        log::debug!(
            "unwind: pid {pid}: {} executable mappings, {} with tables, in {:?}",
            mappings.len(),
            mappings.iter().filter(|m| m.rows > 0).count(),
            started.elapsed()
        );
        match published {
            Ok(old) => {
                self.retired.extend(old);
                self.published.insert(pid, fallbacks);
                true
            }
            Err(err) => {
                *self.errors.entry(crate::error::chain(&err)).or_default() += 1;
                false
            }
        }
    }

    /// Publishes the JIT runtimes (V8) of `pids` now, before any table is built: their
    /// frames need no tables, and a whole machine's tables take seconds.
    pub fn load_jit_runtimes(&mut self, pids: &[u32]) {
        let Some(interp) = &mut self.kernel.interp else {
            return;
        };
        for &pid in pids {
            if let Ok(exec_mappings) = process::exec_mappings(pid) {
                interp.load_jit_process(pid, &exec_mappings);
            }
        }
    }

    /// Loads every process of the machine but `except` (tracekit itself); returns how many.
    pub fn load_all_processes(&mut self, except: u32) -> usize {
        let pids = live_pids(except);
        self.load_jit_runtimes(&pids);
        pids.into_iter()
            .filter(|&pid| self.load_process(pid))
            .count()
    }

    /// Unpublishes processes that no longer exist (their kernel entries and mapping ranges
    /// freed: no sample can walk an exited process's stack). Done at most every
    /// [`PRUNE_EVERY`] as processes load, and when the kernel's tables are full.
    fn forget_exited(&mut self) {
        self.pruned = Instant::now();
        let exited = |pid: u32| !std::path::Path::new(&format!("/proc/{pid}")).exists();
        let gone = self.published.forget_exited(exited);
        for &pid in &gone {
            if let Some(range) = self.kernel.remove_process(pid) {
                self.kernel.release(range);
            }
            if let Some(interp) = &mut self.kernel.interp {
                interp.remove_process(pid);
            }
        }
        // Interpreters published without tables (a JIT runtime, a JVM retried) too.
        let interp_gone = match &mut self.kernel.interp {
            Some(interp) => interp.forget_exited(exited),
            None => 0,
        };
        log::debug!(
            "unwind: unpublished {} exited processes ({} more interpreters); {} published, {} \
             binaries known ({} by build ID), {} fallback lines",
            gone.len(),
            interp_gone,
            self.published.len(),
            self.binaries.len(),
            self.by_build_id.len(),
            self.fallbacks.len()
        );
    }

    fn fall_back(
        &mut self,
        pid: u32,
        mapping: &ExecMapping,
        reason: &str,
        process: &mut ProcessFallbacks,
    ) {
        let key = (mapping.name(), reason.to_string());
        if !process.contains(&key) {
            process.push(key.clone());
        }
        self.fallbacks.entry(key).or_default().add(pid);
    }

    /// The table of the binary behind `mapping`, built and loaded the first time.
    fn binary_of(&mut self, pid: u32, mapping: &ExecMapping) -> Binary {
        match &mapping.backing {
            Backing::Anonymous(name) if name.is_empty() => {
                Binary::Missing("anonymous executable memory (JIT code?)".into())
            }
            Backing::Anonymous(_) => Binary::Missing("not a file".into()),
            Backing::Vdso => {
                if self.vdso.is_none() {
                    let vdso = self.load_vdso();
                    self.vdso = Some(vdso);
                }
                self.vdso.clone().expect("just set")
            }
            Backing::File { .. } => {
                let key = (mapping.device.clone(), mapping.inode);
                if let Some(binary) = self.binaries.get(&key) {
                    return binary.clone();
                }
                // A file that does not open now (the process exec'd again, or exited) may
                // open for the next process: only what was read is remembered.
                match process::open_mapped_file(pid, mapping) {
                    Ok(file) => {
                        let binary = self.load_opened(&file);
                        self.binaries.insert(key, binary.clone());
                        binary
                    }
                    Err(err) => Binary::Missing(format!("cannot open it: {err}")),
                }
            }
        }
    }

    /// Whether `pid`'s mapping table is published now.
    pub(super) fn is_published(&self, pid: u32) -> bool {
        self.published.live.contains_key(&pid)
    }

    /// The mappings among `mappings` backed by a file whose table is not known yet (neither
    /// built nor refused): what loading their process would build.
    pub(super) fn unknown_binaries(&self, mappings: &[ExecMapping]) -> Vec<ExecMapping> {
        mappings
            .iter()
            .filter(|mapping| matches!(mapping.backing, Backing::File { .. }))
            .filter(|mapping| {
                !self
                    .binaries
                    .contains_key(&(mapping.device.clone(), mapping.inode))
            })
            .cloned()
            .collect()
    }

    /// Whether the binary behind `mapping` has a table (or a reason for none) already,
    /// found by its file or by `build_id` (then remembered under its file too).
    pub(super) fn knows_binary(&mut self, mapping: &ExecMapping, build_id: Option<&[u8]>) -> bool {
        let key = (mapping.device.clone(), mapping.inode);
        if self.binaries.contains_key(&key) {
            return true;
        }
        match build_id.and_then(|id| self.by_build_id.get(id)) {
            Some(binary) => {
                let binary = binary.clone();
                self.binaries.insert(key, binary);
                true
            }
            None => false,
        }
    }

    /// Loads `built`, the table of the binary behind `mapping` built without these tables
    /// at hand (see [`worker`]), unless another load got there first.
    pub(super) fn add_built(
        &mut self,
        mapping: &ExecMapping,
        build_id: Option<Vec<u8>>,
        built: Result<table::BinaryTable, table::TableError>,
        took: Duration,
    ) {
        self.build_time += took;
        if self.knows_binary(mapping, build_id.as_deref()) {
            return;
        }
        let binary = self.load_table(built);
        if let Some(id) = build_id {
            self.by_build_id.insert(id, binary.clone());
        }
        self.binaries
            .insert((mapping.device.clone(), mapping.inode), binary);
    }

    /// Builds, before a command runs, the tables it will need first: its executable's, the
    /// vDSO's, and those of tracekit's own shared libraries (a dynamically linked command
    /// most likely maps the same libc and dynamic linker). `program` is `argv[0]`, looked up
    /// in `PATH` when it has no `/`.
    pub fn prepare_command(&mut self, program: &std::path::Path) {
        use std::os::unix::fs::MetadataExt as _;
        let started = Instant::now();
        if self.vdso.is_none() {
            let vdso = self.load_vdso();
            self.vdso = Some(vdso);
        }
        let own_pid = std::process::id();
        let own_exe = std::fs::metadata("/proc/self/exe").map(|m| m.ino()).ok();
        for mapping in process::exec_mappings(own_pid).unwrap_or_default() {
            if matches!(mapping.backing, Backing::File { .. }) && Some(mapping.inode) != own_exe {
                let _ = self.binary_of(own_pid, &mapping);
            }
        }
        if let Some(path) = find_program(program)
            && let Ok(file) = std::fs::File::open(&path)
        {
            self.build_file(&file);
        }
        self.build_time += started.elapsed();
    }

    /// Builds the tables of the shared libraries live process `pid` will map (its
    /// `DT_NEEDED`: see [`needed`]), which have none yet: for a command held at its `exec`,
    /// whose libraries are not mapped yet. Returns how many were built.
    pub fn prepare_libraries(&mut self, pid: u32) -> usize {
        let started = Instant::now();
        let root = std::path::PathBuf::from(format!("/proc/{pid}/root"));
        let (Ok(exe), Ok(exe_path)) = (
            std::fs::File::open(format!("/proc/{pid}/exe")),
            std::fs::read_link(format!("/proc/{pid}/exe")),
        ) else {
            return 0;
        };
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let ld_library_path = environ
            .split(|&byte| byte == 0)
            .find_map(|entry| entry.strip_prefix(b"LD_LIBRARY_PATH="))
            .map(|value| {
                use std::os::unix::ffi::OsStrExt as _;
                std::ffi::OsStr::from_bytes(value).to_owned()
            });
        let built = needed::needed_libraries(&root, &exe, &exe_path, ld_library_path.as_deref())
            .into_iter()
            .filter_map(|path| std::fs::File::open(needed::within(&root, &path)).ok())
            .filter(|file| self.build_file(file))
            .count();
        self.build_time += started.elapsed();
        built
    }

    /// Builds the table of the binary open as `file` unless its file is known already;
    /// returns whether it was built (or refused) now.
    fn build_file(&mut self, file: &std::fs::File) -> bool {
        use std::os::unix::fs::MetadataExt as _;
        let Ok(metadata) = file.metadata() else {
            return false;
        };
        let device = metadata.dev();
        let key = (
            format!("{:02x}:{:02x}", libc::major(device), libc::minor(device)),
            metadata.ino(),
        );
        if self.binaries.contains_key(&key) {
            return false;
        }
        let binary = self.load_opened(file);
        self.binaries.insert(key, binary);
        true
    }

    /// The table of an open binary, found by build ID or built.
    fn load_opened(&mut self, file: &std::fs::File) -> Binary {
        // SAFETY: a read-only private mapping; a file truncated under us could fault, as
        // with every profiler that reads the binaries it profiles.
        let data = match unsafe { memmap2::Mmap::map(file) } {
            Ok(data) => data,
            Err(err) => return Binary::Missing(format!("cannot read it: {err}")),
        };
        let parsed = match table::parse(&data) {
            Ok(parsed) => parsed,
            Err(err) => return Binary::Missing(err.to_string()),
        };
        let build_id = {
            use object::Object as _;
            parsed.build_id().ok().flatten().map(<[u8]>::to_vec)
        };
        if let Some(binary) = build_id.as_ref().and_then(|id| self.by_build_id.get(id)) {
            return binary.clone();
        }
        let binary = self.load_table(table::build_from(&parsed));
        if let Some(id) = build_id {
            self.by_build_id.insert(id, binary.clone());
        }
        binary
    }

    /// The vDSO's table, from tracekit's own vDSO: every process of a kernel has the same.
    fn load_vdso(&mut self) -> Binary {
        let Ok(own) = process::exec_mappings(std::process::id()) else {
            return Binary::Missing("cannot read tracekit's own memory map".into());
        };
        let Some(vdso) = own.iter().find(|m| m.backing == Backing::Vdso) else {
            return Binary::Missing("tracekit has no vDSO".into());
        };
        // SAFETY: the kernel maps the vDSO image readable in every process, for its whole
        // life, at this range.
        let image = unsafe {
            std::slice::from_raw_parts(vdso.begin as *const u8, (vdso.end - vdso.begin) as usize)
        };
        self.load_table(table::build(image))
    }

    /// Loads a built table into the kernel if it fits the budget.
    fn load_table(&mut self, built: Result<table::BinaryTable, table::TableError>) -> Binary {
        let table = match built {
            Ok(table) => table,
            Err(err) => return Binary::Missing(err.to_string()),
        };
        if table.rows.is_empty() {
            return Binary::Missing("no functions in its unwind information".into());
        }
        let rows = table.rows.len() as u64;
        if self.kernel.shard_bytes_with(rows) > self.budget_bytes {
            return Binary::Missing(format!(
                "its {rows} rows do not fit the unwind table budget ({})",
                mib(self.budget_bytes)
            ));
        }
        match self.kernel.add_rows(&table.rows) {
            Ok(first_row) => {
                self.loaded_binaries += 1;
                Binary::Loaded {
                    first_row,
                    rows: rows as u32,
                    segments: table.segments,
                }
            }
            Err(err) => Binary::Missing(crate::error::chain(&err)),
        }
    }

    /// Names the code objects the kernel's interpreter unwinders announced since the last
    /// call (see [`crate::unwind::interp`]).
    pub fn read_announced_codes(&mut self) {
        if let Some(interp) = &mut self.kernel.interp {
            interp.read_announced();
        }
    }

    /// Counts `dropped` announced processes that were not loaded (a full queue).
    pub fn add_queue_dropped(&mut self, dropped: u64) {
        self.queue_dropped += dropped;
    }

    /// How long building the tables has taken over the run.
    pub fn build_time(&self) -> Duration {
        self.build_time
    }

    /// The kernel walk's counters.
    pub fn walk_stats(&self) -> crate::Result<WalkStats> {
        self.kernel.walk_stats()
    }

    /// For `-v`: [`UnwindTables::report`] and the kernel walk's counters.
    pub fn summary(&self) -> String {
        let mut text = self.report();
        if let Ok(walk) = self.walk_stats() {
            let percent = |n: u64| 100.0 * n as f64 / walk.stacks.max(1) as f64;
            text.push_str(&format!(
                "\ndwarf unwinder: {} user stacks, {:.1}% ended at the outermost frame, {} cut at \
                 {MAX_STACK_DEPTH} frames, {} stopped at unreadable stack memory, {} of processes \
                 without tables yet; frames: {} from tables, {} by frame pointer ({} in mappings \
                 without a table, {} outside known mappings, {} at rows the tables cannot express)",
                walk.stacks,
                percent(walk.complete),
                walk.truncated,
                walk.read_errors,
                walk.no_process,
                walk.dwarf_frames,
                walk.no_table_frames + walk.no_mapping_frames + walk.unsupported_frames,
                walk.no_table_frames,
                walk.no_mapping_frames,
                walk.unsupported_frames,
            ));
            if walk.in_exec > 0 {
                // Their saved registers may be the replaced image's: the kernel stack shows
                // the exec, the user stack is left out.
                text.push_str(&format!(
                    "; {} inside execve, their user stacks not walked",
                    crate::error::plural(walk.in_exec, "sample", "samples")
                ));
            }
        }
        if let Some(interp) = &self.kernel.interp {
            text.push('\n');
            text.push_str(&interp.report());
        }
        text
    }

    /// The runtimes found whose frames stayed native, and why (the run's summary).
    pub fn runtimes_not_named(&self) -> Vec<crate::runtimes::RuntimeNotNamed> {
        self.kernel
            .interp
            .as_ref()
            .map(|interp| interp.not_named())
            .unwrap_or_default()
    }

    /// What was loaded, what it costs, and what fell back to frame pointers and why, one
    /// line each (for `-v`).
    pub fn report(&self) -> String {
        let mut out = format!(
            "unwind tables: {} binaries, {} rows in {} of kernel memory (budget {}), plus {} \
             for the mapping tables of {} processes; built in {:.0} ms",
            self.loaded_binaries,
            self.kernel.rows(),
            mib(self.kernel.shard_bytes()),
            mib(self.budget_bytes),
            mib(kernel::FIXED_BYTES),
            self.published.len(),
            self.build_time.as_secs_f64() * 1e3
        );
        for ((name, reason), fallback) in &self.fallbacks {
            let shown: Vec<String> = fallback.pids.iter().map(u32::to_string).collect();
            let more = if fallback.loads > shown.len() as u64 {
                ", ..."
            } else {
                ""
            };
            out.push_str(&format!(
                "\nframe pointers for {name} ({reason}) in {} process{} (pid {}{more})",
                fallback.loads,
                if fallback.loads == 1 { "" } else { "es" },
                shown.join(", ")
            ));
        }
        for (error, count) in &self.errors {
            out.push_str(&format!(
                "\nmapping tables not published ({count}x): {error}"
            ));
        }
        if self.queue_dropped > 0 {
            out.push_str(&format!(
                "\n{} announced processes not loaded: {} were waiting for the tables' thread \
                 already (their stacks were walked by frame pointers)",
                self.queue_dropped,
                worker::QUEUE_PIDS
            ));
        }
        out
    }

    /// Mapping names that fell back to frame pointers in process `pid`, with the reason.
    pub fn fallbacks_of(&self, pid: u32) -> Vec<(&str, &str)> {
        self.published
            .fallbacks_of(pid)
            .into_iter()
            .flatten()
            .map(|(name, reason)| (name.as_str(), reason.as_str()))
            .collect()
    }

    /// For each process with tables, what to say when its stacks look broken: the mappings
    /// whose frames had no table (so only frame pointers could walk them), and why.
    pub fn broken_hints(&self) -> HashMap<u32, String> {
        self.published
            .pids()
            .map(|pid| {
                let fallbacks = self.fallbacks_of(pid);
                let hint = if fallbacks.is_empty() {
                    "every mapping had an unwind table, so the walks ended early in the kernel \
                     (tracekit profile -v counts why)"
                        .to_string()
                } else {
                    let named: Vec<String> = fallbacks
                        .iter()
                        .map(|(name, reason)| format!("{name} ({reason})"))
                        .collect();
                    format!(
                        "these mappings had no unwind table, so only frame pointers could walk \
                         them: {}",
                        named.join(", ")
                    )
                };
                (pid, hint)
            })
            .collect()
    }
}

/// `program` as `execvp(3)` finds it.
fn find_program(program: &std::path::Path) -> Option<std::path::PathBuf> {
    if program.as_os_str().as_encoded_bytes().contains(&b'/') {
        return Some(program.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

fn no_table(mapping: &ExecMapping) -> Mapping {
    Mapping {
        begin: mapping.begin,
        end: mapping.end,
        bias: 0,
        first_row: 0,
        rows: 0,
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}

#[cfg(test)]
mod tests;
