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
mod demangle;
pub mod jit;
pub mod lines;
mod process;
mod resolvers;
#[cfg(test)]
mod tests;
mod trim;

use std::{
    cell::RefCell,
    collections::{HashMap, HashSet},
    path::PathBuf,
    rc::Rc,
    sync::Arc,
    time::{Duration, Instant},
};

use blazesym::{
    Pid,
    symbolize::{
        CodeInfo, Input, ProcessMemberInfo, Reason, Sym, Symbolized, Symbolizer as Blazesym,
        cache::{Cache, Process as CacheProcess},
        evict::{Elf as EvictElf, Evict, Process as EvictProcess},
        source::{Elf, Kernel, Process, Source},
    },
};

use self::{
    debuginfo::{DebugInfo, DebugInfoOptions},
    process::{State, drop_idle_resolvers, is_alive},
    resolvers::dispatch,
};
pub use self::{demangle::demangle, trim::release_freed_memory};
use crate::{
    mappings::ProcessMappings,
    procmaps::{KeptFiles, pidfd_exited},
    stacks::{FileLine, Frame, FrameKind, KERNEL_MODULE, UNKNOWN_SYMBOL, set_addresses},
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
            function_bounds: process::BoundsCache::default(),
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
        crate::unwind::interp::forget_exited();
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
        if leaf_first
            .iter()
            .any(|&word| crate::unwind::interp::is_frame(word))
        {
            return crate::unwind::interp::splice(pid, leaf_first, |native| {
                self.user_stack(pid, native)
            });
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
        // Addresses in no mapping of the map blazesym cached (a library unloaded before
        // it was read, as PHP unloads its extensions at exit): through the mapping our
        // reads remember.
        let symbolized: Vec<Symbolized<'_>> = symbolized
            .into_iter()
            .zip(&lookup)
            .map(|(symbolized, &addr)| match symbolized {
                Symbolized::Unknown(Reason::Unmapped) => self
                    .symbolize_in_file(pid, addr, alive)
                    .filter(|symbolized| matches!(symbolized, Symbolized::Sym(_)))
                    .unwrap_or(symbolized),
                symbolized => symbolized,
            })
            .collect();
        let mut state = self.state.borrow_mut();
        let mut frames = frames_outermost_first(&symbolized, &lookup, FrameKind::User, |addr| {
            state.unnamed_frame(pid, addr, alive)
        });
        set_addresses(&mut frames, &lookup, |addr| self.mappings.lookup(pid, addr));
        set_lines(&mut frames, &symbolized);
        frames
    }
}

/// Gives each address of `frames` (set by [`set_addresses`], one per entry of
/// `symbolized`, leaf first) the source lines blazesym found for its frames, where it looked
/// any up (DWARF with inlined frames or lines): the function's own line (the call site of
/// its first inlined callee, if any), then each inlined function's.
fn set_lines(frames: &mut [Frame], symbolized: &[Symbolized<'_>]) {
    let file_line = |info: Option<&CodeInfo<'_>>| {
        let info = info?;
        let path = info.to_path();
        Some(FileLine {
            file: path.to_string_lossy().into(),
            line: info.line?,
        })
    };
    let mut groups = Vec::new();
    for (i, frame) in frames.iter().enumerate() {
        if i == 0 || !frame.inlined {
            groups.push(i);
        }
    }
    if groups.len() != symbolized.len() {
        return;
    }
    for (g, &start) in groups.iter().enumerate() {
        let Symbolized::Sym(sym) = &symbolized[symbolized.len() - 1 - g] else {
            continue;
        };
        let end = groups.get(g + 1).copied().unwrap_or(frames.len());
        if end - start != 1 + sym.inlined.len() {
            continue;
        }
        let lines: Vec<Option<FileLine>> = std::iter::once(file_line(sym.code_info.as_deref()))
            .chain(sym.inlined.iter().map(|f| file_line(f.code_info.as_ref())))
            .collect();
        if lines.iter().all(Option::is_none) {
            continue;
        }
        let lines: Arc<[Option<FileLine>]> = lines.into();
        for frame in &mut frames[start..end] {
            if let Some(address) = &mut frame.address {
                address.lines = Some(Arc::clone(&lines));
            }
        }
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

pub(super) fn unknown(kind: FrameKind) -> Frame {
    Frame {
        address: None,
        symbol: UNKNOWN_SYMBOL.to_string(),
        module: (kind == FrameKind::Kernel).then(|| KERNEL_MODULE.to_string()),
        kind,
        inlined: false,
        jit: false,
    }
}
