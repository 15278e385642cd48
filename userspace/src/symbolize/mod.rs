//! Addresses to function names, through blazesym.
//!
//! Kernel addresses are named by the kernel itself ([`crate::ksyms`]), or where that cannot
//! run, against `/proc/kallsyms` (or a `vmlinux` when one is installed).
//! User addresses resolve against the ELF symbols and DWARF of the binaries a process had
//! mapped, with inlined functions as frames of their own when DWARF says so (or, with
//! [`SymbolizerOptions::dwarf`] false, as the exporter runs, their symbol tables alone,
//! through `SymbolsOnly`). Stripped
//! binaries with a separate debug file resolve through that file's symbol table, not its
//! DWARF (see `SplitDebug`); the debug file is found by build ID in
//! `/usr/lib/debug/.build-id` (libc6-dbg and other `-dbg`/`-dbgsym` packages) or from the
//! debuginfod servers of `$DEBUGINFOD_URLS` ([`crate::symbolize::debuginfo`]).
//!
//! Names are demangled here, not by blazesym: blazesym 0.2.7 runs the C++ demangler on names
//! of unknown language even without a `_Z` prefix, so C functions named `a` or `b` come out
//! as `signed char` and `bool` (the same bug as uftrace#1780). [`demangle`] only touches
//! names that carry a mangling prefix.
//!
//! Processes may exit before a profile ends (bpftrace#246 is the classic failure): call
//! [`Symbolizer::remember_process`] while the process lives. It caches the process's memory
//! map (blazesym's VMA cache, and [`ProcessFiles`]), so its addresses still resolve
//! afterwards: through the paths of the files it had mapped, or, for files that no path from
//! here reaches (another mount namespace, as in a container; deleted files), through
//! descriptors opened while it lived.
//!
//! JIT-compiled code (node, Java, Python `-X perf`, .NET) is named from the process's
//! `/tmp/perf-PID.map` and `jit-PID.dump` ([`crate::symbolize::jit`]): read when the process is
//! announced, again whenever they grew, and a last time once it has exited (the JVM writes
//! its map at exit); the last copy stays in memory. JIT frames are marked [`Frame::jit`] and
//! have the map or dump as their module (`perf-PID.map` in the report, as perf shows them).
//!
//! A user frame that still has no name is named by its module and the ELF address in it,
//! `liblzma.so.5+0x2a3f0` (the address `addr2line -e MODULE` and `nm` take), rather than
//! `[unknown]`; only addresses outside any mapped file stay [`UNKNOWN_SYMBOL`].

pub mod debuginfo;
pub mod jit;
pub mod lines;

use std::{
    borrow::Cow,
    cell::RefCell,
    collections::{HashMap, HashSet},
    ffi::OsString,
    fmt,
    path::{Path, PathBuf},
    rc::Rc,
    sync::Arc,
    time::{Duration, Instant},
};

use blazesym::{
    Addr, Pid,
    helper::ElfResolver,
    symbolize::{
        FindSymOpts, Input, ProcessMemberInfo, ProcessMemberType, Reason, Resolve, ResolvedSym,
        SrcLang, Sym, Symbolize, Symbolized, Symbolizer as Blazesym, TranslateFileOffset,
        cache::{Cache, Elf as CacheElf, Process as CacheProcess},
        evict::{Elf as EvictElf, Evict, Process as EvictProcess},
        source::{Elf, Kernel, Process, Source},
    },
};

use self::{
    debuginfo::{DebugInfo, DebugInfoOptions},
    jit::{JitFile, JitSource, JitTable, jitdump_name},
};
use crate::{
    mappings::ProcessMappings,
    procmaps::{
        KeptFiles, LoadSegment, ProcessFiles, elf_address, load_segments, pidfd_exited, pidfd_open,
        segment_address,
    },
    stacks::{Frame, FrameKind, KERNEL_MODULE, UNKNOWN_SYMBOL, set_addresses},
};

/// How a [`Symbolizer`] names frames.
#[derive(Clone, Debug)]
pub struct SymbolizerOptions {
    /// Functions the compiler inlined become frames of their own where DWARF describes them
    /// (perf's `--inline`), at the cost of reading DWARF line information. Default: true.
    pub inlined: bool,
    /// Where separate debug files are looked for (local build-ID directories, debuginfod).
    pub debug_info: DebugInfoOptions,
    /// Read DWARF line tables for [`Symbolizer::user_line`] (`profile --by line`), also
    /// without inlined frames. Default: false.
    pub lines: bool,
    /// Read the DWARF of binaries that carry it (function names, and what `inlined` and
    /// `lines` need). false: user frames are named from ELF symbol tables alone (`.symtab`,
    /// `.dynsym`, a separate debug file's `.symtab`), as bcc and bpftrace name them; no
    /// inlined frames or lines then. A debug build's DWARF, parsed, and the pages of it read
    /// cost tens of MiB while its process is sampled (a 20 MiB Rust debug binary: ~20 MiB of
    /// RSS against ~2 MiB for its symbol table), which a daemon cannot let a workload decide.
    /// Default: true.
    pub dwarf: bool,
}

impl Default for SymbolizerOptions {
    fn default() -> Self {
        Self {
            inlined: true,
            debug_info: DebugInfoOptions::default(),
            lines: false,
            dwarf: true,
        }
    }
}

/// Resolves kernel and user addresses to [`Frame`]s.
pub struct Symbolizer {
    inner: Blazesym,
    remembered: HashSet<u32>,
    state: Rc<RefCell<State>>,
    /// Processes seen dead at the last [`Symbolizer::forget_exited`], forgotten at the next.
    dying: HashSet<u32>,
    /// Where user frames' code is mapped (for pprof), read where the memory map is cached.
    mappings: ProcessMappings,
    /// When [`Symbolizer::forget_exited`] was last called (the start of this interval).
    last_forget: Instant,
    /// [`IDLE_RESOLVERS`] (shorter in tests).
    idle_resolvers: Duration,
}

/// What the symbolizer knows of processes, shared with blazesym's process dispatcher.
struct State {
    processes: HashMap<u32, Known>,
    /// Every (map_files path, path) blazesym asked the dispatcher about, by pid: the keys of
    /// its resolver caches, whatever memory map (cached or read then) the entry came from.
    cache_keys: HashMap<u32, Vec<(PathBuf, PathBuf)>>,
    files: KeptFiles,
    debug_info: DebugInfo,
    /// The function bounds (`.eh_frame`) of stripped files, by path: frames without a symbol
    /// are named by the start of their function.
    function_bounds: HashMap<PathBuf, Rc<[(u64, u64)]>>,
    /// Binaries opened for the dispatcher's resolvers, by device and inode (and whether
    /// their debug links are followed): one mapping of libc however many processes map it.
    /// Kept while a resolver blazesym caches holds one.
    elf_files: HashMap<(u64, u64, bool), Rc<ElfResolver>>,
    /// [`SymbolizerOptions::dwarf`].
    dwarf: bool,
    /// Without DWARF, the binaries' symbol tables, shared and kept as `elf_files` are.
    symbol_tables: HashMap<(u64, u64), Rc<SymbolTable>>,
}

/// Files whose function bounds are kept (a long `-a` run meets many; rebuilt when needed).
const MAX_FUNCTION_BOUNDS_FILES: usize = 256;

/// One process: its files, and its JIT symbols.
struct Known {
    files: ProcessFiles,
    jit: JitTable,
    /// Followed JIT files with the module name their frames get.
    jit_files: Vec<(JitFile, String)>,
    /// When the perf map was last looked for (it may appear late: the JVM writes it at exit).
    perf_map_tried: Option<Instant>,
    /// When the memory map was last re-read for an address it did not hold.
    maps_read: Instant,
    /// The last read after exit was done; nothing is opened for it any more.
    finished: bool,
    /// When a stack of it was last symbolized (see [`IDLE_RESOLVERS`]).
    symbolized: Instant,
    /// Every `/proc/PID/map_files/...` path of a file mapping it had (also mappings since
    /// replaced, after an `exec`): the keys blazesym cached its files under while it lived.
    map_files: HashSet<PathBuf>,
    /// Every path of a file it mapped: the keys its files are cached under after its exit.
    paths: HashSet<PathBuf>,
}

/// How often a missing perf map is looked for again while a process lives.
const PERF_MAP_RETRY: Duration = Duration::from_millis(50);
/// How often a live process's memory map is re-read for addresses it does not hold.
const MAPS_RETRY: Duration = Duration::from_millis(200);
/// A live process none of whose stacks was symbolized for this long, and in no whole
/// interval, has its files' resolvers dropped (parsed again if it is sampled again): a
/// long-lived process sampled once (a debug binary of 18 MiB) held its parsed symbols and
/// its mapped binary for the rest of a run of hours.
pub const IDLE_RESOLVERS: Duration = Duration::from_secs(10);

impl Default for Symbolizer {
    fn default() -> Self {
        Self::new(true)
    }
}

impl Symbolizer {
    /// A symbolizer with default options, inlined frames as `inlined` says
    /// (see [`SymbolizerOptions::inlined`]).
    pub fn new(inlined: bool) -> Self {
        Self::with_options(SymbolizerOptions {
            inlined,
            ..SymbolizerOptions::default()
        })
    }

    /// A symbolizer with `options`.
    pub fn with_options(options: SymbolizerOptions) -> Self {
        let inlined = options.inlined && options.dwarf;
        let lines = options.lines && options.dwarf;
        let debug_files = Rc::new(
            Blazesym::builder()
                .enable_code_info(false)
                .enable_inlined_fns(false)
                .enable_demangling(false)
                .build(),
        );
        let state = Rc::new(RefCell::new(State {
            processes: HashMap::new(),
            cache_keys: HashMap::new(),
            function_bounds: HashMap::new(),
            elf_files: HashMap::new(),
            dwarf: options.dwarf,
            symbol_tables: HashMap::new(),
            files: KeptFiles::new(),
            debug_info: DebugInfo::new(options.debug_info.clone()),
        }));
        let dispatch_state = Rc::clone(&state);
        Self {
            inner: Blazesym::builder()
                .enable_code_info(inlined || lines)
                .enable_inlined_fns(inlined)
                .enable_demangling(false)
                .set_process_dispatcher(move |member: ProcessMemberInfo<'_>| {
                    Ok(dispatch(&member, &debug_files, &dispatch_state))
                })
                .build(),
            remembered: HashSet::new(),
            state,
            dying: HashSet::new(),
            mappings: ProcessMappings::default(),
            last_forget: Instant::now(),
            idle_resolvers: IDLE_RESOLVERS,
        }
    }

    /// Forgets the processes that were already dead at the previous call: their cached
    /// memory maps (blazesym's and ours), their files and JIT symbols, and gives what they
    /// held back to the kernel ([`release_freed_memory`]). Interval reports call
    /// it after symbolizing each interval, so memory stays flat however many processes come
    /// and go; a process is forgotten a whole interval after it was seen dead, when every
    /// sample it left has been symbolized. Returns how many were forgotten.
    ///
    /// blazesym keeps a resolver (the file mapped, its symbols and DWARF parsed) per path it
    /// opened a file by: `/proc/PID/map_files/...` while the process lived, the path from its
    /// memory map once it had exited. Both are evicted here; a path stays cached while a
    /// process still known maps it (a shared libc). A live process not symbolized in this
    /// interval nor for [`IDLE_RESOLVERS`] has its resolvers evicted too (its binary
    /// unmapped, its symbols freed; parsed again if it is sampled again).
    pub fn forget_exited(&mut self) -> usize {
        crate::interp::forget_exited();
        let dying = std::mem::take(&mut self.dying);
        let mut state = self.state.borrow_mut();
        let mut paths: HashSet<PathBuf> = HashSet::new();
        for &pid in &dying {
            let _ = self
                .inner
                .evict(&Evict::from(EvictProcess::new(Pid::from(pid))));
            if let Some(known) = state.processes.remove(&pid) {
                for path in known.map_files {
                    let _ = self.inner.evict(&Evict::from(EvictElf::new(path)));
                }
                paths.extend(known.paths);
            }
            for (map_file, path) in state.cache_keys.remove(&pid).unwrap_or_default() {
                let _ = self.inner.evict(&Evict::from(EvictElf::new(map_file)));
                paths.insert(path);
            }
            self.remembered.remove(&pid);
            self.mappings.forget(pid);
        }
        let now = Instant::now();
        let since = self
            .last_forget
            .min(now.checked_sub(self.idle_resolvers).unwrap_or(now));
        let idle = drop_idle_resolvers(&mut self.inner, &mut state, since);
        if !paths.is_empty() || idle > 0 {
            // What the processes still known map executable now (not every file they ever
            // mapped: another profiler maps whole binaries it symbolizes, read-only).
            for known in state.processes.values() {
                for vma in known.files.vmas.iter().filter(|vma| vma.executable) {
                    if let Some(path) = &vma.path {
                        paths.remove(path);
                    }
                }
            }
            for (_, path) in state.cache_keys.values().flatten() {
                paths.remove(path);
            }
            for path in paths {
                let _ = self.inner.evict(&Evict::from(EvictElf::new(path)));
            }
            // Descriptors kept only for the forgotten processes.
            state.files.retain(|_, file| Arc::strong_count(file) > 1);
            state.elf_files.retain(|_, elf| Rc::strong_count(elf) > 1);
            state
                .symbol_tables
                .retain(|_, table| Rc::strong_count(table) > 1);
            self.mappings.prune();
        }
        self.dying = self
            .remembered
            .iter()
            .chain(state.processes.keys())
            .chain(state.cache_keys.keys())
            .copied()
            .filter(|&pid| !is_alive(pid))
            .collect();
        if !dying.is_empty() || idle > 0 {
            log::debug!(
                "forgot {} exited processes, dropped the resolvers of {idle} idle ones; \
                 {} remembered, {} followed, {} with resolvers, {} files kept, {} binaries \
                 open, {} with function bounds",
                dying.len(),
                self.remembered.len(),
                state.processes.len(),
                state.cache_keys.len(),
                state.files.len(),
                state.elf_files.len(),
                state.function_bounds.len(),
            );
            drop(state);
            release_freed_memory();
        }
        self.last_forget = Instant::now();
        dying.len()
    }

    /// The executable mappings and cgroups of the processes symbolized.
    pub fn mappings(&self) -> &ProcessMappings {
        &self.mappings
    }

    /// Caches the memory map of live process `pid`, so that its addresses resolve even if it
    /// exits before [`Symbolizer::user_stack`] is called, and reads its JIT symbols. Calling
    /// it again (after an `exec`, a new executable mapping) replaces the cached map. Returns
    /// false when the process is already gone.
    pub fn remember_process(&mut self, pid: u32) -> bool {
        self.reap_exited();
        // An exiting process (or a zombie) shows an empty map; caching it would replace a
        // good map from an earlier announcement with nothing.
        if !is_alive(pid) {
            log::debug!("pid {pid} has no memory map left to remember");
            return false;
        }
        // Our read first: a map read empty means the exit is tearing it down (is_alive read
        // it a moment ago), and blazesym's read would replace a good cached map with it.
        if !self.state.borrow_mut().capture(pid) {
            log::debug!("pid {pid} is exiting: its memory map stays as last remembered");
            return false;
        }
        self.mappings.remember(pid);
        let mut cache = CacheProcess::new(Pid::from(pid));
        // JIT perf maps are read by `Known`, not by blazesym.
        cache.cache_perf_map = false;
        match self.inner.cache(&Cache::Process(cache)) {
            Ok(()) => {
                log::debug!("remembered the memory map of pid {pid}");
                self.remembered.insert(pid);
                true
            }
            Err(err) => {
                log::debug!("caching the memory map of pid {pid}: {err}");
                false
            }
        }
    }

    /// Does the last JIT read of every remembered process that has exited, and closes what
    /// was kept open only to follow it.
    fn reap_exited(&self) {
        let mut state = self.state.borrow_mut();
        for known in state.processes.values_mut() {
            if !known.finished && known.files.pidfd.as_ref().is_some_and(pidfd_exited) {
                known.finish();
            }
        }
    }

    /// Resolves kernel addresses. `leaf_first` addresses are a stack as the kernel records
    /// it: the sampled instruction first, then return addresses. Returns the frames
    /// outermost first (inlined functions expanded).
    pub fn kernel_stack(&self, leaf_first: &[u64]) -> Vec<Frame> {
        let lookup = lookup_addresses(leaf_first);
        if let Some(names) = crate::ksyms::names(&lookup) {
            let mut frames: Vec<Frame> = names
                .into_iter()
                .rev()
                .map(|name| match name {
                    Some(symbol) => Frame {
                        address: None,
                        symbol,
                        module: Some(KERNEL_MODULE.to_string()),
                        kind: FrameKind::Kernel,
                        inlined: false,
                        jit: false,
                    },
                    None => unknown(FrameKind::Kernel),
                })
                .collect();
            set_addresses(&mut frames, &lookup, |_| None);
            return frames;
        }
        let source = Source::Kernel(Kernel::default());
        let symbolized = self.inner.symbolize(&source, Input::AbsAddr(&lookup));
        let symbolized = symbolized.unwrap_or_else(|err| {
            log::debug!("symbolizing kernel addresses: {err}");
            Vec::new()
        });
        let mut frames = frames_outermost_first(&symbolized, &lookup, FrameKind::Kernel, |_| {
            unknown(FrameKind::Kernel)
        });
        set_addresses(&mut frames, &lookup, |_| None);
        frames
    }

    /// Symbolizes `addr` of process `pid` in the file our last read of its map places it
    /// in, by its ELF address, through the file's symbol table only: DWARF (and the debug
    /// link to libc's debug file) would keep tens of MiB parsed for the run, for processes
    /// that mostly churned.
    fn symbolize_in_file(&self, pid: u32, addr: u64, alive: bool) -> Option<Symbolized<'_>> {
        let location = self.state.borrow_mut().file_location(pid, addr, alive)?;
        let mut elf = Elf::new(location.readable?);
        elf.debug_syms = false;
        let source = Source::Elf(elf);
        self.inner
            .symbolize_single(&source, Input::VirtOffset(location.elf_address?))
            .ok()
    }

    /// Resolves a user stack of process `pid`, like [`Symbolizer::kernel_stack`]: through
    /// its files, then its JIT symbols, then as `module+0xADDR`.
    pub fn user_stack(&self, pid: u32, leaf_first: &[u64]) -> Vec<Frame> {
        if leaf_first.iter().any(|&word| crate::interp::is_frame(word)) {
            return crate::interp::splice(pid, leaf_first, |native| self.user_stack(pid, native));
        }
        let lookup = lookup_addresses(leaf_first);
        self.reap_exited();
        self.state.borrow_mut().prepare(pid);
        let mut source = Process::new(Pid::from(pid));
        source.perf_map = false;
        // A live process's files are best reached through /proc/PID/map_files (right in
        // other mount namespaces, and for deleted files); an exited one's only through the
        // paths remembered from its memory map (or descriptors kept, see `dispatch`).
        let alive = is_alive(pid);
        source.map_files = !self.remembered.contains(&pid) || alive;
        let source = Source::Process(source);
        let symbolized = match self.inner.symbolize(&source, Input::AbsAddr(&lookup)) {
            Ok(symbolized) => symbolized,
            Err(err) => {
                // One unreadable file fails the whole batch: go address by address.
                log::debug!("symbolizing pid {pid}: {err}");
                // Then through the map we read last: blazesym's cached map of an exited
                // process can be one read as its exit tore it down (empty).
                lookup
                    .iter()
                    .map(|&addr| {
                        self.inner
                            .symbolize_single(&source, Input::AbsAddr(addr))
                            .ok()
                            .filter(|symbolized| matches!(symbolized, Symbolized::Sym(_)))
                            .or_else(|| self.symbolize_in_file(pid, addr, alive))
                            .unwrap_or(Symbolized::Unknown(Reason::Unsupported))
                    })
                    .collect()
            }
        };
        let mut state = self.state.borrow_mut();
        let mut frames = frames_outermost_first(&symbolized, &lookup, FrameKind::User, |addr| {
            state.unnamed_frame(pid, addr, alive)
        });
        set_addresses(&mut frames, &lookup, |addr| self.mappings.lookup(pid, addr));
        frames
    }
}

/// An address's place in a mapped file ([`State::file_location`]).
struct FileLocation {
    /// The file's path in the process.
    path: PathBuf,
    /// A path that opens it from here (a descriptor kept, the path, a `map_files` link).
    readable: Option<PathBuf>,
    /// The offset in the file.
    file_offset: u64,
    /// The ELF virtual address (None without program headers).
    elf_address: Option<u64>,
}

impl State {
    /// The resolver of the binary at `path` (a `/proc/PID/map_files` link is followed), shared
    /// by every process mapping the same file; `debug_links`: whether blazesym follows its
    /// debug link for DWARF. None if it does not open as ELF.
    fn shared_elf(&mut self, path: &Path, debug_links: bool) -> Option<Rc<ElfResolver>> {
        use std::os::unix::fs::MetadataExt as _;
        let file = std::fs::metadata(path).ok()?;
        let key = (file.dev(), file.ino(), debug_links);
        if let Some(elf) = self.elf_files.get(&key) {
            return Some(Rc::clone(elf));
        }
        let elf = if debug_links {
            ElfResolver::open(path)
        } else {
            ElfResolver::open_with_debug_dirs(path, Vec::<PathBuf>::new())
        };
        let elf = Rc::new(elf.ok()?);
        self.elf_files.insert(key, Rc::clone(&elf));
        Some(elf)
    }

    /// The symbol table of the binary at `path`, shared like [`State::shared_elf`]'s
    /// resolvers. `None` when it does not open or is not 64-bit ELF.
    fn symbol_table(&mut self, path: &Path) -> Option<Rc<SymbolTable>> {
        use std::os::unix::fs::MetadataExt as _;
        let file = std::fs::metadata(path).ok()?;
        let key = (file.dev(), file.ino());
        if let Some(table) = self.symbol_tables.get(&key) {
            return Some(Rc::clone(table));
        }
        let table = Rc::new(SymbolTable::open(path)?);
        self.symbol_tables.insert(key, Rc::clone(&table));
        Some(table)
    }

    /// Starts (or updates) following live process `pid`. Returns false when its memory map
    /// could not be read or was empty (it is exiting); what was known of it stays.
    fn capture(&mut self, pid: u32) -> bool {
        match self.processes.get_mut(&pid) {
            Some(known) if !known.finished => {
                let read = known.update_files(&mut self.files);
                known.follow_jit_files();
                read
            }
            _ => {
                let Some(files) = ProcessFiles::capture(pid, &mut self.files) else {
                    return false;
                };
                let mut known = Known::new(files);
                known.follow_jit_files();
                // A reused pid: what the old process cached is forgotten with this one.
                if let Some(old) = self.processes.insert(pid, known) {
                    let known = self.processes.get_mut(&pid).expect("inserted above");
                    known.map_files.extend(old.map_files);
                    known.paths.extend(old.paths);
                }
                true
            }
        }
    }

    /// Before symbolizing `pid`: follow it if it was never announced, and read what its JIT
    /// files gained.
    fn prepare(&mut self, pid: u32) {
        if !self.processes.contains_key(&pid) {
            let known = match ProcessFiles::capture(pid, &mut self.files) {
                Some(files) => Known::new(files),
                // Gone before it was announced: its perf map may still be in our /tmp.
                None => {
                    let mut known = Known::new(ProcessFiles {
                        pid,
                        ns_pid: pid,
                        ..ProcessFiles::default()
                    });
                    known.finish();
                    known
                }
            };
            self.processes.insert(pid, known);
        }
        let known = self.processes.get_mut(&pid).expect("inserted above");
        known.symbolized = Instant::now();
        known.follow_jit_files();
        known.refresh_jit();
    }

    /// The frame for an address the binaries did not name: a JIT function, else the module
    /// and ELF address, else [`UNKNOWN_SYMBOL`].
    fn unnamed_frame(&mut self, pid: u32, addr: u64, alive: bool) -> Frame {
        let Some(known) = self.processes.get_mut(&pid) else {
            return unknown(FrameKind::User);
        };
        if let Some((name, module)) = known.jit_lookup(addr) {
            return Frame {
                address: None,
                symbol: name.to_string(),
                module: Some(module),
                kind: FrameKind::User,
                inlined: false,
                jit: true,
            };
        }
        let Some(location) = self.file_location(pid, addr, alive) else {
            return unknown(FrameKind::User);
        };
        // Samples of one function share a name: the start of the function the unwind
        // information bounds it with (as `nm` and `addr2line -e` take it).
        let function = location
            .elf_address
            .zip(location.readable.as_ref())
            .and_then(|(address, readable)| {
                let bounds = self.bounds_of(&location.path, readable);
                crate::unwind::table::function_start(&bounds, address)
            });
        let module = location.path.to_string_lossy().into_owned();
        let name = module.rsplit('/').next().unwrap_or(&module);
        // Without program headers, the file offset is the best address there is.
        let address = function
            .or(location.elf_address)
            .unwrap_or(location.file_offset);
        Frame {
            address: None,
            symbol: format!("{name}+{address:#x}"),
            module: Some(module),
            kind: FrameKind::User,
            inlined: false,
            jit: false,
        }
    }

    /// Where `addr` of process `pid` is in a file, from the memory map last read (read again
    /// if the address is in none and the process lives). None outside any file mapping.
    fn file_location(&mut self, pid: u32, addr: u64, alive: bool) -> Option<FileLocation> {
        let known = self.processes.get_mut(&pid)?;
        if known.files.vma(addr).is_none()
            && alive
            && !known.finished
            && known.maps_read.elapsed() >= MAPS_RETRY
        {
            known.maps_read = Instant::now();
            known.update_files(&mut self.files);
        }
        let vma = known.files.vma(addr)?;
        let path = vma.path.clone()?;
        let file_offset = addr - vma.start + vma.offset;
        let readable = known.files.readable_path(&path).or_else(|| {
            alive.then(|| {
                PathBuf::from(format!(
                    "/proc/{pid}/map_files/{:x}-{:x}",
                    vma.start, vma.end
                ))
            })
        });
        let elf_address = readable
            .as_ref()
            .and_then(|readable| elf_address(readable, file_offset));
        Some(FileLocation {
            path,
            readable,
            file_offset,
            elf_address,
        })
    }

    /// The function bounds of the file at `path` (read through `readable`), cached.
    fn bounds_of(&mut self, path: &Path, readable: &Path) -> Rc<[(u64, u64)]> {
        if let Some(bounds) = self.function_bounds.get(path) {
            return bounds.clone();
        }
        if self.function_bounds.len() >= MAX_FUNCTION_BOUNDS_FILES {
            self.function_bounds.clear();
        }
        let bounds: Rc<[(u64, u64)]> = std::fs::File::open(readable)
            .ok()
            // SAFETY: a read-only private mapping, dropped before returning; a file
            // truncated under us could fault, as with every profiler reading binaries.
            .and_then(|file| unsafe { memmap2::Mmap::map(&file) }.ok())
            .and_then(|data| {
                let file = crate::unwind::table::parse(&data).ok()?;
                Some(crate::unwind::table::function_bounds(&file))
            })
            .unwrap_or_default()
            .into();
        self.function_bounds
            .insert(path.to_path_buf(), bounds.clone());
        bounds
    }
}

impl Known {
    fn new(files: ProcessFiles) -> Self {
        let mut known = Self {
            files,
            jit: JitTable::default(),
            jit_files: Vec::new(),
            perf_map_tried: None,
            maps_read: Instant::now(),
            finished: false,
            symbolized: Instant::now(),
            map_files: HashSet::new(),
            paths: HashSet::new(),
        };
        known.note_paths();
        known
    }

    /// Re-reads the memory map, keeping the cache keys of mappings it no longer has; false
    /// (and the last map kept) when it is gone or empty.
    fn update_files(&mut self, files: &mut KeptFiles) -> bool {
        let read = self.files.update(files);
        self.note_paths();
        read
    }

    /// Adds the current mappings' cache keys (see [`Known::map_files`], [`Known::paths`]).
    fn note_paths(&mut self) {
        let pid = self.files.pid;
        // Every file mapping, not only executable ones: a frame-pointer walk through code
        // without frame pointers yields addresses in data segments too, and blazesym builds
        // a resolver for whichever mapping an address falls in.
        for vma in &self.files.vmas {
            if let Some(path) = &vma.path {
                self.map_files.insert(PathBuf::from(format!(
                    "/proc/{pid}/map_files/{:x}-{:x}",
                    vma.start, vma.end
                )));
                if !self.paths.contains(path) {
                    self.paths.insert(path.clone());
                }
            }
        }
    }

    /// Opens the perf map and jitdumps not followed yet.
    fn follow_jit_files(&mut self) {
        if self.finished {
            return;
        }
        let ns_pid = self.files.ns_pid;
        let has_perf_map = self
            .jit_files
            .iter()
            .any(|(file, _)| file.source() == JitSource::PerfMap);
        if !has_perf_map
            && self
                .perf_map_tried
                .is_none_or(|tried| tried.elapsed() >= PERF_MAP_RETRY)
        {
            self.perf_map_tried = Some(Instant::now());
            let path = format!("/tmp/perf-{ns_pid}.map");
            if let Some(file) = self.files.open_in_root(&path) {
                log::debug!("pid {}: following {path}", self.files.pid);
                self.jit_files
                    .push((JitFile::new(file, JitSource::PerfMap), path));
                self.watch_exit();
            }
        }
        // A jitdump is found by its executable mapping, as perf finds it.
        let dump_name = jitdump_name(ns_pid);
        let dumps: Vec<PathBuf> = self
            .files
            .vmas
            .iter()
            .filter(|vma| vma.executable)
            .filter_map(|vma| vma.path.as_ref())
            .filter(|path| path.file_name().is_some_and(|name| *name == *dump_name))
            .cloned()
            .collect();
        for path in dumps {
            let module = path.to_string_lossy().into_owned();
            if self
                .jit_files
                .iter()
                .any(|(_, followed)| *followed == module)
            {
                continue;
            }
            let file = self
                .files
                .readable_path(&path)
                .and_then(|readable| std::fs::File::open(readable).ok());
            if let Some(file) = file {
                log::debug!("pid {}: following {module}", self.files.pid);
                self.jit_files
                    .push((JitFile::new(file, JitSource::JitDump), module));
                self.watch_exit();
            }
        }
    }

    /// Watches for the exit of a process with JIT files, for the last read.
    fn watch_exit(&mut self) {
        if self.files.pidfd.is_none() && !self.finished && !self.jit_files.is_empty() {
            self.files.pidfd = pidfd_open(self.files.pid);
        }
    }

    /// Reads what the followed JIT files gained.
    fn refresh_jit(&mut self) {
        for (file, _) in &mut self.jit_files {
            file.refresh(&mut self.jit);
        }
    }

    /// The last read after exit: a perf map written at exit is found now; then every
    /// descriptor kept only to follow the process is closed (mapped files stay open, the
    /// frames still need them).
    fn finish(&mut self) {
        self.perf_map_tried = None;
        self.follow_jit_files();
        self.refresh_jit();
        self.finished = true;
        self.files.root = None;
        self.files.pidfd = None;
        log::debug!(
            "pid {} exited: {} JIT functions kept",
            self.files.pid,
            self.jit.len()
        );
    }

    /// The JIT function at `addr` and the module its frame gets.
    fn jit_lookup(&self, addr: u64) -> Option<(&str, String)> {
        let (name, source) = self.jit.lookup(addr)?;
        let module = self
            .jit_files
            .iter()
            .find(|(file, _)| file.source() == source)
            .map_or_else(
                || format!("/tmp/perf-{}.map", self.files.ns_pid),
                |(_, m)| m.clone(),
            );
        Some((name, module))
    }
}

/// A binary mapped by a process, opened once for every process that maps the same file
/// ([`State::shared_elf`]): through a descriptor kept while the process lived (its path leads
/// nowhere, or to another file, from tracekit's mount namespace), its `map_files` link, or its
/// path. blazesym on its own opens (and maps) a file per process: libc 24 times over in a
/// `profile -a -i 1` under churn.
struct SharedBinary {
    binary: Rc<ElfResolver>,
    /// The path as the process mapped it, for frames' module.
    module: OsString,
}

impl fmt::Debug for SharedBinary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SharedBinary({:?})", self.module)
    }
}

impl Symbolize for SharedBinary {
    fn find_sym(
        &self,
        addr: Addr,
        opts: &FindSymOpts,
    ) -> blazesym::Result<Result<ResolvedSym<'_>, Reason>> {
        Ok(self.binary.find_sym(addr, opts)?.map(|mut sym| {
            sym.module = Some(&self.module);
            sym
        }))
    }
}

impl TranslateFileOffset for SharedBinary {
    fn file_offset_to_virt_offset(&self, file_offset: u64) -> blazesym::Result<Option<Addr>> {
        self.binary.file_offset_to_virt_offset(file_offset)
    }
}

/// Evicts the resolvers blazesym built for processes not symbolized `since` (the start of
/// the interval, or [`IDLE_RESOLVERS`] ago if earlier); what else is known of them (their
/// memory map, JIT symbols) stays. Returns how many processes had theirs dropped.
fn drop_idle_resolvers(inner: &mut Blazesym, state: &mut State, since: Instant) -> usize {
    let idle: Vec<u32> = state
        .cache_keys
        .keys()
        .copied()
        .filter(|pid| {
            state
                .processes
                .get(pid)
                .is_none_or(|known| known.symbolized < since)
        })
        .collect();
    for pid in &idle {
        // A live process's resolvers are cached by its map_files paths alone; its own.
        for (map_file, _) in state.cache_keys.remove(pid).unwrap_or_default() {
            let _ = inner.evict(&Evict::from(EvictElf::new(map_file)));
        }
    }
    idle.len()
}

/// The pid in a `/proc/PID/map_files/...` path.
fn pid_of_map_file(path: &Path) -> Option<u32> {
    let mut parts = path.components().skip(2);
    parts.next()?.as_os_str().to_str()?.parse().ok()
}

/// The resolver for a process's mapping: through a separate debug file where one exists,
/// else the binary itself, shared with every process mapping it. `None` (the file does not
/// open) leaves the mapping to blazesym.
fn dispatch(
    member: &ProcessMemberInfo<'_>,
    debug_files: &Rc<Blazesym>,
    state: &Rc<RefCell<State>>,
) -> Option<Box<dyn Resolve>> {
    let ProcessMemberType::Path(entry) = member.member_entry else {
        return None;
    };
    let mut state = state.borrow_mut();
    // Asked once per entry and process: what `Symbolizer::forget_exited` evicts.
    if let Some(pid) = pid_of_map_file(&entry.maps_file) {
        state
            .cache_keys
            .entry(pid)
            .or_default()
            .push((entry.maps_file.clone(), entry.symbolic_path.clone()));
    }
    // A descriptor kept while the process lived first; else the map_files link, which
    // reaches the file in other mount namespaces and after deletion; an exited process's
    // remembered map has only the path.
    let binary = pid_of_map_file(&entry.maps_file)
        .and_then(|pid| state.processes.get(&pid))
        .filter(|known| known.files.kept.contains_key(&entry.symbolic_path))
        .and_then(|known| known.files.readable_path(&entry.symbolic_path))
        .or_else(|| {
            [&entry.maps_file, &entry.symbolic_path]
                .into_iter()
                .find(|path| path.exists())
                .cloned()
        })?;
    let module = entry.symbolic_path.clone().into_os_string();
    if let Some(debug_file) = state.debug_info.find(&binary) {
        let debug_file = DebugSymbols {
            debug_file,
            debug_files: Rc::clone(debug_files),
        };
        if !state.dwarf {
            let binary = state.symbol_table(&binary)?;
            return Some(Box::new(SymbolsOnly {
                binary,
                debug_file: Some(debug_file),
                module,
            }));
        }
        // No debug directories: blazesym reads the binary alone, which has no DWARF.
        let resolver = state.shared_elf(&binary, false)?;
        return Some(Box::new(SplitDebug {
            binary: resolver,
            debug_file,
            module,
        }));
    }
    if !state.dwarf {
        let binary = state.symbol_table(&binary)?;
        return Some(Box::new(SymbolsOnly {
            binary,
            debug_file: None,
            module,
        }));
    }
    let binary = state.shared_elf(&binary, true)?;
    Some(Box::new(SharedBinary { binary, module }))
}

/// A stripped binary resolved through the symbol table of its separate debug file, without
/// the DWARF in that file, as bcc and bpftrace do. blazesym on its own follows the debug link
/// and decompresses every DWARF section of the debug file before the first lookup: for
/// libc6-dbg, ~70 ms and ~15 MiB per run, for names the symbol table has too. DWARF inside a
/// binary itself (inlined frames of the program being profiled) is still read, by blazesym's
/// default resolver.
struct SplitDebug {
    /// The binary: file offsets to addresses, and its dynamic symbols, tried first.
    binary: Rc<ElfResolver>,
    /// The separate debug file's symbols.
    debug_file: DebugSymbols,
    /// The binary's path as the process mapped it, for frames' module.
    module: OsString,
}

impl fmt::Debug for SplitDebug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SplitDebug({})", self.debug_file.debug_file.display())
    }
}

impl Symbolize for SplitDebug {
    fn find_sym(
        &self,
        addr: Addr,
        opts: &FindSymOpts,
    ) -> blazesym::Result<Result<ResolvedSym<'_>, Reason>> {
        // Exported names first (`malloc`, not its internal alias `__GI___libc_malloc`).
        let exported = self.binary.find_sym(addr, opts);
        if let Ok(Ok(_)) = exported {
            return exported.map(|found| {
                found.map(|mut sym| {
                    sym.module = Some(&self.module);
                    sym
                })
            });
        }
        match self.debug_file.find_sym(addr, &self.module) {
            Some(sym) => Ok(Ok(sym)),
            None => exported,
        }
    }
}

impl TranslateFileOffset for SplitDebug {
    fn file_offset_to_virt_offset(&self, file_offset: u64) -> blazesym::Result<Option<Addr>> {
        self.binary.file_offset_to_virt_offset(file_offset)
    }
}

/// The symbol table of a separate debug file (by build ID, local or downloaded).
struct DebugSymbols {
    debug_file: PathBuf,
    /// ELF-only lookups in debug files, shared so each file is parsed once.
    debug_files: Rc<Blazesym>,
}

impl DebugSymbols {
    /// The symbol at `addr` (an ELF virtual address: the debug file has its binary's
    /// section addresses, so an address in one is the same in the other).
    fn find_sym<'a>(&'a self, addr: Addr, module: &'a OsString) -> Option<ResolvedSym<'a>> {
        elf_symbol(&self.debug_files, &self.debug_file, addr, module)
    }
}

/// The symbol at ELF address `addr` in the symbol tables (no DWARF) of the file at `path`,
/// looked up through `symbolizer` (which caches the parsed file), as a resolver returns it:
/// the name borrowed from that cache, `module` as its module.
fn elf_symbol<'a>(
    symbolizer: &'a Blazesym,
    path: &Path,
    addr: Addr,
    module: &'a OsString,
) -> Option<ResolvedSym<'a>> {
    let mut source = Elf::new(path);
    source.debug_syms = false;
    let Ok(Symbolized::Sym(Sym {
        name: Cow::Borrowed(name),
        addr,
        size,
        ..
    })) = symbolizer.symbolize_single(&Source::Elf(source), Input::VirtOffset(addr))
    else {
        return None;
    };
    Some(ResolvedSym {
        name,
        module: Some(module),
        addr,
        size,
        lang: SrcLang::Unknown,
        code_info: None,
        inlined: Box::new([]),
        _non_exhaustive: (),
    })
}

/// A binary's ELF symbols (`.symtab`, `.dynsym`), without its DWARF
/// ([`SymbolizerOptions::dwarf`] false): parsed when opened, freed when the last resolver
/// holding it is evicted.
struct SymbolTable {
    /// The path it was opened by (a descriptor kept, a `map_files` link, the path).
    path: PathBuf,
    /// File offsets to ELF addresses.
    segments: Vec<LoadSegment>,
    /// Lookups in this one file: blazesym's ELF parser, without DWARF.
    elf: Blazesym,
}

impl SymbolTable {
    /// Parses the symbols of the ELF file at `path`; `None` when it is not 64-bit ELF or
    /// does not open.
    fn open(path: &Path) -> Option<Self> {
        let segments = load_segments(path)?;
        let elf = Blazesym::builder()
            .enable_code_info(false)
            .enable_inlined_fns(false)
            .enable_demangling(false)
            .build();
        // Cached now (and pinned: never re-read), while `path` opens: a process's
        // `map_files` link goes with it.
        elf.cache(&Cache::from(CacheElf::new(path))).ok()?;
        Some(Self {
            path: path.to_path_buf(),
            segments,
            elf,
        })
    }
}

/// A binary named through its symbol table ([`SymbolizerOptions::dwarf`] false), then
/// through its separate debug file's, if it has one.
struct SymbolsOnly {
    binary: Rc<SymbolTable>,
    debug_file: Option<DebugSymbols>,
    /// The binary's path as the process mapped it, for frames' module.
    module: OsString,
}

impl fmt::Debug for SymbolsOnly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SymbolsOnly({})", self.binary.path.display())
    }
}

impl Symbolize for SymbolsOnly {
    fn find_sym(
        &self,
        addr: Addr,
        _opts: &FindSymOpts,
    ) -> blazesym::Result<Result<ResolvedSym<'_>, Reason>> {
        let found =
            elf_symbol(&self.binary.elf, &self.binary.path, addr, &self.module).or_else(|| {
                self.debug_file
                    .as_ref()
                    .and_then(|debug_file| debug_file.find_sym(addr, &self.module))
            });
        Ok(found.ok_or(Reason::UnknownAddr))
    }
}

impl TranslateFileOffset for SymbolsOnly {
    fn file_offset_to_virt_offset(&self, file_offset: u64) -> blazesym::Result<Option<Addr>> {
        Ok(segment_address(&self.binary.segments, file_offset))
    }
}

/// Whether `pid` still has its memory (and `/proc/PID/map_files`): `/proc/PID/maps` has at
/// least one entry. An exited process that is not yet reaped (a zombie) keeps the file, but
/// empty: it is not alive here.
fn is_alive(pid: u32) -> bool {
    use std::io::Read as _;
    let mut byte = [0u8; 1];
    std::fs::File::open(format!("/proc/{pid}/maps"))
        .and_then(|mut maps| maps.read(&mut byte))
        .is_ok_and(|n| n == 1)
}

/// Hands memory the allocator holds free back to the kernel. Symbolizing a big process
/// (rustc and its 150 MiB `librustc_driver`) allocates tens of MiB that forgetting it frees;
/// glibc keeps freed memory in its arenas, so without this an interval run's RSS stays at
/// the highest it ever needed (`profile -a -i 1`: 6 MiB of heap, 46 MiB after one build ran
/// beside it, for the rest of the run).
pub fn release_freed_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim(3) only returns free heap pages to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Return addresses point after the call; looking up `addr - 1` lands inside the call
/// instruction, in the calling function (a `noreturn` call may be the function's last
/// instruction). The first address is the sampled instruction itself.
fn lookup_addresses(leaf_first: &[u64]) -> Vec<u64> {
    leaf_first
        .iter()
        .enumerate()
        .map(|(i, &addr)| if i == 0 { addr } else { addr.saturating_sub(1) })
        .collect()
}

/// Frames for `symbolized` (one entry per address of `addrs`), outermost first; addresses
/// without a symbol become `unnamed(addr)`.
fn frames_outermost_first(
    symbolized: &[Symbolized<'_>],
    addrs: &[u64],
    kind: FrameKind,
    mut unnamed: impl FnMut(u64) -> Frame,
) -> Vec<Frame> {
    let mut frames = Vec::with_capacity(addrs.len());
    for (i, &addr) in addrs.iter().enumerate().rev() {
        match symbolized.get(i) {
            Some(Symbolized::Sym(sym)) => push_symbol(&mut frames, sym, kind),
            Some(Symbolized::Unknown(_)) | None => frames.push(unnamed(addr)),
        }
    }
    frames
}

/// Pushes a symbol's frames outermost first: the function, then the functions inlined into
/// it at this address, in nesting order.
fn push_symbol(frames: &mut Vec<Frame>, sym: &Sym<'_>, kind: FrameKind) {
    let module = match kind {
        FrameKind::Kernel => Some(KERNEL_MODULE.to_string()),
        FrameKind::User => sym
            .module
            .as_ref()
            .map(|module| module.to_string_lossy().into_owned()),
    };
    frames.push(Frame {
        address: None,
        symbol: demangle(&sym.name).into_owned(),
        module: module.clone(),
        kind,
        inlined: false,
        jit: false,
    });
    for inlined in sym.inlined.iter() {
        frames.push(Frame {
            address: None,
            symbol: demangle(&inlined.name).into_owned(),
            module: module.clone(),
            kind,
            inlined: true,
            jit: false,
        });
    }
}

/// The name of the kernel function at `addr` (a function's entry, as `bpf_get_func_ip`
/// reports it), or the address in hex.
pub fn kernel_function(addr: u64) -> String {
    thread_local! {
        static SYMBOLIZER: Symbolizer = Symbolizer::new(false);
    }
    SYMBOLIZER.with(|symbolizer| {
        symbolizer
            .kernel_stack(&[addr])
            .first()
            .filter(|frame| frame.symbol != UNKNOWN_SYMBOL)
            .map(|frame| frame.symbol.clone())
            .unwrap_or_else(|| format!("{addr:#x}"))
    })
}

/// Demangles Rust (legacy `_ZN...E` and v0 `_R...`, without the hash) and C++ (`_Z...`)
/// symbol names; any other name is returned as it is.
///
/// ```
/// use tracekit::symbolize::demangle;
/// assert_eq!(demangle("b"), "b");
/// assert_eq!(demangle("_ZN3foo3bar17h0123456789abcdefE"), "foo::bar");
/// assert_eq!(demangle("_Z3fooi"), "foo(int)");
/// ```
pub fn demangle(name: &str) -> Cow<'_, str> {
    if (name.starts_with("_R") || name.starts_with("_ZN"))
        && let Ok(demangled) = rustc_demangle::try_demangle(name)
    {
        return Cow::Owned(format!("{demangled:#}"));
    }
    if name.starts_with("_Z")
        && let Some(demangled) = cpp_demangle::Symbol::new(name)
            .ok()
            .and_then(|symbol| symbol.demangle().ok())
    {
        return Cow::Owned(demangled);
    }
    Cow::Borrowed(name)
}

fn unknown(kind: FrameKind) -> Frame {
    Frame {
        address: None,
        symbol: UNKNOWN_SYMBOL.to_string(),
        module: (kind == FrameKind::Kernel).then(|| KERNEL_MODULE.to_string()),
        kind,
        inlined: false,
        jit: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demangles_only_mangled_names() {
        for plain in [
            "a",
            "b",
            "i",
            "v",
            "main",
            "leaf",
            "__libc_start_main",
            "_start",
        ] {
            assert_eq!(demangle(plain), plain);
        }
        assert_eq!(
            demangle("_ZN4core3ptr13drop_in_place17h6b3e1c5f9a1b2c3dE"),
            "core::ptr::drop_in_place"
        );
        assert_eq!(demangle("_RNvCs1234_7mycrate4main"), "mycrate::main");
        assert_eq!(
            demangle("_ZNSt6vectorIiSaIiEE9push_backERKi"),
            "std::vector<int, std::allocator<int> >::push_back(int const&)"
        );
        assert_eq!(demangle("_Znotvalid"), "_Znotvalid");
    }

    #[test]
    fn return_addresses_step_back_into_the_call() {
        assert_eq!(
            lookup_addresses(&[0x1000, 0x2005, 0x3000]),
            [0x1000, 0x2004, 0x2fff]
        );
    }

    #[inline(never)]
    fn marker_function_for_symbolization() -> u64 {
        std::hint::black_box(7)
    }

    #[test]
    fn resolves_own_function_by_address() {
        let addr = marker_function_for_symbolization as *const () as u64;
        let frames = Symbolizer::default().user_stack(std::process::id(), &[addr]);
        assert_eq!(frames.len(), 1, "{frames:?}");
        assert!(
            frames[0]
                .symbol
                .ends_with("marker_function_for_symbolization"),
            "{frames:?}"
        );
        assert_eq!(frames[0].kind, FrameKind::User);
    }

    /// Four processes mapping libc are symbolized through one opening of it: tracekit maps
    /// the file once more, not once per process. Counted in /proc/self/maps, which every
    /// test of this process that symbolizes libc changes too (it failed 1 of 20 runs of
    /// the unit tier: "libc is mapped 2 more times"), so it runs alone, in a process of
    /// its own: this test binary, exec'd.
    #[test]
    fn processes_share_one_opening_of_a_binary() {
        run_alone("symbolize::tests::processes_share_one_opening_of_a_binary_alone");
    }

    /// Runs the ignored test `name` of this test binary alone in a new process; fails with
    /// its output unless it passed.
    fn run_alone(name: &str) {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--ignored", "--test-threads=1"])
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{name}, run alone:\n{text}");
        assert!(text.contains("1 passed"), "{name} did not run:\n{text}");
    }

    #[test]
    #[ignore = "counts this process's mappings: run alone by processes_share_one_opening_of_a_binary"]
    fn processes_share_one_opening_of_a_binary_alone() {
        let mut children: Vec<_> = (0..4)
            .map(|_| {
                std::process::Command::new("sleep")
                    .arg("30")
                    .spawn()
                    .expect("sleep runs")
            })
            .collect();
        // libc's executable mapping in `pid`, once its loader has mapped it.
        let libc_text = |pid: u32| -> Option<(u64, String)> {
            let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
            maps.lines().find_map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let path = fields.get(5)?;
                (fields[1].contains('x') && path.contains("/libc.so")).then(|| {
                    let start = fields[0].split('-').next().unwrap();
                    (u64::from_str_radix(start, 16).unwrap(), path.to_string())
                })
            })
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        let texts: Vec<(u32, u64, String)> = children
            .iter()
            .map(|child| {
                loop {
                    if let Some((start, path)) = libc_text(child.id()) {
                        break (child.id(), start, path);
                    }
                    assert!(Instant::now() < deadline, "sleep never mapped libc");
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
            .collect();
        let path = texts[0].2.clone();
        let openings = || {
            std::fs::read_to_string("/proc/self/maps")
                .unwrap()
                .lines()
                .filter(|line| line.ends_with(&path))
                .count()
        };
        let before = openings();
        let symbolizer = Symbolizer::default();
        for (pid, start, _) in &texts {
            let frames = symbolizer.user_stack(*pid, &[start + 0x2000]);
            assert_eq!(
                frames[0].module.as_deref(),
                Some(path.as_str()),
                "{frames:?}"
            );
        }
        let after = openings();
        for child in &mut children {
            let _ = child.kill();
            let _ = child.wait();
        }
        assert!(
            after <= before + 1,
            "libc is mapped {} more times after symbolizing 4 processes",
            after - before
        );
    }

    /// A live process whose stacks no interval needed for [`IDLE_RESOLVERS`] gives its
    /// files' resolvers back (the binary unmapped, its symbols freed), and is named again
    /// when it is sampled again; one symbolized in the interval keeps them.
    #[test]
    fn idle_process_resolvers_dropped_and_named_again() {
        use std::os::unix::fs::MetadataExt as _;
        let child = Child::fork();
        // The test binary, as the resolver that holds it open is keyed (other tests map
        // and unmap it meanwhile: /proc/self/maps would not tell).
        let exe = std::fs::metadata("/proc/self/exe").unwrap();
        let held = |symbolizer: &Symbolizer| {
            let state = symbolizer.state.borrow();
            state
                .elf_files
                .keys()
                .any(|&(dev, ino, _)| (dev, ino) == (exe.dev(), exe.ino()))
                && state.cache_keys.contains_key(&child.pid)
        };
        let addr = marker_function_for_symbolization as *const () as u64;
        let named = |symbolizer: &Symbolizer| {
            let frames = symbolizer.user_stack(child.pid, &[addr]);
            assert_eq!(
                frames[0].symbol, "tracekit::symbolize::tests::marker_function_for_symbolization",
                "{frames:?}"
            );
        };
        let mut symbolizer = Symbolizer {
            idle_resolvers: Duration::from_millis(200),
            ..Symbolizer::default()
        };
        named(&symbolizer);
        assert!(held(&symbolizer), "no resolver holds the test binary");
        // Symbolized in this interval: kept, however long ago.
        std::thread::sleep(Duration::from_millis(300));
        symbolizer.forget_exited();
        assert!(
            held(&symbolizer),
            "dropped in the interval it was symbolized in"
        );
        // No stack of it in the next interval, and 200 ms idle: dropped.
        std::thread::sleep(Duration::from_millis(300));
        symbolizer.forget_exited();
        assert!(
            !held(&symbolizer),
            "the idle process's binary is still held"
        );
        named(&symbolizer);
        assert!(held(&symbolizer));
    }

    /// Without DWARF ([`SymbolizerOptions::dwarf`] false), a function of this debug binary is
    /// named from its symbol table (its file offset translated by the program headers),
    /// through no resolver that parses DWARF.
    #[test]
    fn symbol_tables_alone_name_a_debug_binary() {
        use std::os::unix::fs::MetadataExt as _;
        let child = Child::fork();
        let symbolizer = Symbolizer::with_options(SymbolizerOptions {
            inlined: false,
            dwarf: false,
            ..SymbolizerOptions::default()
        });
        let addr = marker_function_for_symbolization as *const () as u64;
        let frames = symbolizer.user_stack(child.pid, &[addr]);
        assert_eq!(
            frames[0].symbol, "tracekit::symbolize::tests::marker_function_for_symbolization",
            "{frames:?}"
        );
        let exe = std::fs::metadata("/proc/self/exe").unwrap();
        let state = symbolizer.state.borrow();
        assert!(
            state.elf_files.is_empty(),
            "a DWARF resolver was opened: {:?}",
            state.elf_files.keys()
        );
        assert!(
            state.symbol_tables.contains_key(&(exe.dev(), exe.ino())),
            "no symbol table of the test binary"
        );
    }

    /// Processes announced, symbolized and exited leave nothing behind two intervals after
    /// their exit: not in the symbolizer's state, blazesym's cached maps (a live process
    /// named after them fails when a pid is reused), nor the pprof mappings.
    #[test]
    fn exited_processes_forgotten_entirely() {
        let mut symbolizer = Symbolizer::default();
        let addr = marker_function_for_symbolization as *const () as u64;
        let heap = || {
            // SAFETY: mallinfo2 has no preconditions.
            unsafe { libc::mallinfo2() }.uordblks as i64
        };
        let mut before = 0;
        let mut pids = Vec::new();
        for round in 0..600 {
            if round == 100 {
                symbolizer.forget_exited();
                symbolizer.forget_exited();
                before = heap();
            }
            let child = Child::fork();
            assert!(symbolizer.remember_process(child.pid));
            let frames = symbolizer.user_stack(child.pid, &[addr]);
            assert_eq!(
                frames[0].symbol,
                "tracekit::symbolize::tests::marker_function_for_symbolization"
            );
            pids.push(child.pid);
            drop(child);
            symbolizer.forget_exited();
        }
        symbolizer.forget_exited();
        symbolizer.forget_exited();
        let after = heap();
        eprintln!(
            "heap {} KiB -> {} KiB over 500 exited processes",
            before / 1024,
            after / 1024
        );
        let state = symbolizer.state.borrow();
        assert!(state.processes.is_empty(), "{:?}", state.processes.keys());
        assert!(state.cache_keys.is_empty(), "{:?}", state.cache_keys.keys());
        assert!(symbolizer.remembered.is_empty() && symbolizer.dying.is_empty());
        assert!(state.elf_files.is_empty() && state.files.is_empty());
    }

    /// A forked child of this test process (so this process's addresses are its own),
    /// waiting to be told to exit. It holds nothing of the tests beside it: it closes every
    /// fd it inherited but its two pipe ends (a listener another test's thread had open
    /// stayed bound for as long as the child lived: the exporter server test's "still
    /// listening").
    struct Child {
        pid: u32,
        ready: [i32; 2],
        go: [i32; 2],
    }

    impl Child {
        fn fork() -> Self {
            let mut ready = [0; 2];
            let mut go = [0; 2];
            // SAFETY: plain pipes (close-on-exec, so no other test's exec'd command keeps
            // them); the child only closes, reads, writes and `_exit`s (async-signal-safe).
            let pid = unsafe {
                assert_eq!(libc::pipe2(ready.as_mut_ptr(), libc::O_CLOEXEC), 0);
                assert_eq!(libc::pipe2(go.as_mut_ptr(), libc::O_CLOEXEC), 0);
                let child = libc::fork();
                if child == 0 {
                    close_all_but([ready[1], go[0]]);
                    let byte = [1u8];
                    libc::write(ready[1], byte.as_ptr().cast(), 1);
                    let mut got = [0u8];
                    libc::read(go[0], got.as_mut_ptr().cast(), 1);
                    libc::_exit(0);
                }
                assert!(child > 0);
                let mut got = [0u8];
                assert_eq!(libc::read(ready[0], got.as_mut_ptr().cast(), 1), 1);
                child as u32
            };
            Self { pid, ready, go }
        }

        /// Lets the child exit and waits until it is a zombie (`/proc/PID/maps` exists
        /// and is empty, as while an exit tears the map down).
        fn exit_to_zombie(&self) {
            // SAFETY: wakes the child, which exits; it stays a zombie until dropped.
            unsafe { libc::write(self.go[1], [1u8].as_ptr().cast(), 1) };
            let stat = format!("/proc/{}/stat", self.pid);
            let deadline = Instant::now() + Duration::from_secs(10);
            while !std::fs::read_to_string(&stat).is_ok_and(|s| s.contains(") Z ")) {
                assert!(
                    Instant::now() < deadline,
                    "child {} never became a zombie",
                    self.pid
                );
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }

    /// In a forked child: closes every file descriptor but the two in `keep`, with
    /// close_range(2) (Linux 5.9), else close(2) up to RLIMIT_NOFILE. Allocates nothing
    /// and calls only async-signal-safe functions (no /proc/self/fd listing).
    ///
    /// # Safety
    /// Only in a child between fork and `_exit`: every other fd is gone after it.
    unsafe fn close_all_but(keep: [i32; 2]) {
        let close_range = |first: u32, last: u32| {
            // SAFETY: closes fds this process owns; none is used again (see above).
            unsafe {
                if libc::syscall(libc::SYS_close_range, first, last, 0) != 0 {
                    let mut limit = libc::rlimit {
                        rlim_cur: 0,
                        rlim_max: 0,
                    };
                    let bound = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
                        limit.rlim_cur.min(1 << 20) as u32
                    } else {
                        1 << 16
                    };
                    for fd in first..=last.min(bound) {
                        libc::close(fd as i32);
                    }
                }
            }
        };
        let (low, high) = (keep[0].min(keep[1]) as u32, keep[0].max(keep[1]) as u32);
        let mut next = 0;
        for fd in [low, high] {
            if fd > next {
                close_range(next, fd - 1);
            }
            next = fd + 1;
        }
        close_range(next, u32::MAX);
    }

    /// The fds of a forked [`Child`] are its two pipe ends and nothing else: not the
    /// listener this test holds open, nor the harness's stdout and stderr.
    #[test]
    fn forked_child_holds_only_its_pipe_ends() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let child = Child::fork();
        // An fd another test's thread closes between the listing and the read is skipped.
        let fds = |pid: u32| -> Vec<String> {
            let mut links: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
                .unwrap()
                .flatten()
                .filter_map(|entry| std::fs::read_link(entry.path()).ok())
                .map(|link| link.to_string_lossy().into_owned())
                .collect();
            links.sort();
            links
        };
        let ours = fds(std::process::id());
        let pipe_of = |fd: i32| {
            std::fs::read_link(format!("/proc/self/fd/{fd}"))
                .unwrap()
                .to_string_lossy()
                .into_owned()
        };
        let mut want = vec![pipe_of(child.ready[1]), pipe_of(child.go[0])];
        want.sort();
        assert_eq!(fds(child.pid), want, "this process holds {ours:?}");
        drop(listener);
    }

    impl Drop for Child {
        fn drop(&mut self) {
            // SAFETY: reaps the child forked above; closes the pipes.
            unsafe {
                libc::kill(self.pid as i32, libc::SIGKILL);
                libc::waitpid(self.pid as i32, std::ptr::null_mut(), 0);
                for fd in self.ready.into_iter().chain(self.go) {
                    libc::close(fd);
                }
            }
        }
    }

    /// A traced command that has exited but is not yet reaped (a zombie: `/proc/PID/maps`
    /// exists and is empty) is symbolized from the map remembered at its announcement, as
    /// after it is reaped (trace prints its last events while it is a zombie).
    #[test]
    fn zombie_process_keeps_names() {
        assert_marker_named_in_zombie(|symbolizer, pid| {
            // An announcement read as it exited does not replace the map remembered.
            assert!(!symbolizer.remember_process(pid));
        });
    }

    /// blazesym's cached map of a process can be one read while its exit tore it down
    /// (empty: `is_alive` saw the map, blazesym's read a moment later did not; CI's
    /// `unwind_leaf_caller_kept_in_both_modes` named none of a command's frames once in
    /// ~30 runs). Its addresses still resolve, through the map tracekit read last.
    #[test]
    fn exited_process_named_through_its_last_map_when_blazesyms_is_empty() {
        assert_marker_named_in_zombie(|symbolizer, pid| {
            // What blazesym caches when it reads the map of an exiting process.
            symbolizer
                .inner
                .cache(&Cache::Process(CacheProcess::new(Pid::from(pid))))
                .unwrap();
        });
    }

    /// Remembers a forked child, lets it exit to a zombie, calls `then`, and asserts that
    /// the marker function's address in the child is named.
    fn assert_marker_named_in_zombie(then: impl FnOnce(&mut Symbolizer, u32)) {
        let child = Child::fork();
        let mut symbolizer = Symbolizer::default();
        assert!(symbolizer.remember_process(child.pid));
        child.exit_to_zombie();
        then(&mut symbolizer, child.pid);
        let addr = marker_function_for_symbolization as *const () as u64;
        let frames = symbolizer.user_stack(child.pid, &[addr]);
        assert!(
            frames[0]
                .symbol
                .ends_with("marker_function_for_symbolization"),
            "{frames:?}"
        );
    }

    /// A thread's outermost frames are libc's `start_thread`, a static function only the
    /// separate debug file names (libc6-dbg): it resolves through that file's symbol table,
    /// with libc itself as the module.
    #[test]
    fn libc_internals_resolve_through_the_debug_file() {
        for dwarf in [true, false] {
            libc_internals_resolve_through_the_debug_file_with(dwarf);
        }
    }

    fn libc_internals_resolve_through_the_debug_file_with(dwarf: bool) {
        let frames = std::thread::spawn(move || {
            let mut addrs = [std::ptr::null_mut(); 64];
            // SAFETY: backtrace(3) fills at most `addrs.len()` entries.
            let n = unsafe { libc::backtrace(addrs.as_mut_ptr(), addrs.len() as libc::c_int) };
            let leaf_first: Vec<u64> = addrs[..n as usize].iter().map(|&a| a as u64).collect();
            Symbolizer::with_options(SymbolizerOptions {
                inlined: false,
                dwarf,
                ..SymbolizerOptions::default()
            })
            .user_stack(std::process::id(), &leaf_first)
        })
        .join()
        .unwrap();
        let libc_frames: Vec<&Frame> = frames
            .iter()
            .filter(|f| f.module.as_deref().is_some_and(|m| m.contains("libc.so")))
            .collect();
        assert!(!libc_frames.is_empty(), "{frames:?}");
        let libc = libc_frames[0].module.clone().unwrap();
        let mut lookup = DebugInfo::new(DebugInfoOptions {
            offline: true,
            ..DebugInfoOptions::default()
        });
        if lookup.find(Path::new(&libc)).is_none() {
            eprintln!(
                "skipped: no separate debug file for {libc} in {} (libc6-dbg)",
                crate::symbolize::debuginfo::BUILD_ID_DIR
            );
            return;
        }
        assert!(
            libc_frames.iter().any(|f| f.symbol == "start_thread"),
            "dwarf {dwarf}: {frames:?}"
        );
        assert!(
            frames
                .iter()
                .all(|f| !f.module.as_deref().unwrap_or("").ends_with(".debug")),
            "frames name the debug file as their module: {frames:?}"
        );
    }

    /// Python 3.12+ `-X perf` writes a trampoline per Python function into
    /// `/tmp/perf-PID.map`: their addresses are named `py::FUNCTION:FILE`, as JIT frames,
    /// also after the process exited. (Whole Python stacks need frame pointers in the
    /// interpreter, which pyenv's builds lack.)
    #[test]
    fn python_perf_trampolines_are_named_after_exit() {
        let Some(python) = std::env::var_os("HOME")
            .map(|home| Path::new(&home).join(".pyenv/versions"))
            .and_then(|dir| {
                ["3.13.0", "3.12.1"]
                    .iter()
                    .map(|v| dir.join(v).join("bin/python3"))
                    .find(|p| p.exists())
            })
        else {
            eprintln!("skipped: no Python 3.12+ under ~/.pyenv/versions");
            return;
        };
        let script = "import sys, time\n\
                      def tk_trampoline_target():\n    return sum(range(1000))\n\
                      tk_trampoline_target()\n\
                      print('ready', flush=True)\n\
                      sys.stdin.readline()\n";
        let mut child = std::process::Command::new(&python)
            .args(["-X", "perf", "-c", script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
            &mut line,
        )
        .unwrap();
        assert_eq!(line.trim(), "ready");
        let mut symbolizer = Symbolizer::new(false);
        assert!(symbolizer.remember_process(pid));
        let map = std::fs::read_to_string(format!("/tmp/perf-{pid}.map")).unwrap();
        let (start, size, name) = map
            .lines()
            .filter_map(crate::symbolize::jit::parse_perf_map_line)
            .find(|(_, _, name)| name.contains("tk_trampoline_target"))
            .map(|(start, size, name)| (start, size, name.to_string()))
            .expect("the trampoline is in the perf map");
        assert!(name.starts_with("py::tk_trampoline_target:"), "{name}");
        // Let it exit: the map stays known.
        drop(child.stdin.take());
        child.wait().unwrap();
        let frames = symbolizer.user_stack(pid, &[start + size / 2]);
        assert_eq!(
            frames,
            [Frame {
                // JIT code is anonymous memory: an address, no file mapping.
                address: Some(crate::stacks::CodeAddress {
                    address: start + size / 2,
                    mapping: None
                }),
                symbol: name,
                module: Some(format!("/tmp/perf-{pid}.map")),
                kind: FrameKind::User,
                inlined: false,
                jit: true,
            }]
        );
        let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
    }

    /// An address in a mapped file with no symbol there is `module+0xOFFSET` (the ELF
    /// address for ELF files, see `procmaps::elf_address`; a file offset for anything
    /// else, as here); an address outside every mapping stays unknown.
    #[test]
    fn unnamed_frames_have_module_and_offset() {
        use std::os::fd::AsRawFd as _;
        let path = std::env::temp_dir().join(format!("tk-unnamed-{}", std::process::id()));
        std::fs::write(&path, vec![0x90u8; 3 * 4096]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: a fresh private read-only mapping of a file we own, unmapped below.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                2 * 4096,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                4096,
            )
        };
        assert_ne!(addr, libc::MAP_FAILED);
        let pid = std::process::id();
        let mut symbolizer = Symbolizer::new(false);
        assert!(symbolizer.remember_process(pid));
        let frames = symbolizer.user_stack(pid, &[addr as u64 + 0x10]);
        let name = path.file_name().unwrap().to_string_lossy();
        assert_eq!(frames[0].symbol, format!("{name}+0x1010"), "{frames:?}");
        assert_eq!(frames[0].module.as_deref(), path.to_str());
        assert!(!frames[0].jit);
        let frames = symbolizer.user_stack(pid, &[0x10]);
        assert_eq!(frames[0].symbol, UNKNOWN_SYMBOL);
        // SAFETY: the mapping made above.
        unsafe { libc::munmap(addr, 2 * 4096) };
        std::fs::remove_file(&path).unwrap();
    }
}
