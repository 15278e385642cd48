//! What the symbolizer knows of each process: its files, its JIT symbols, whether it is
//! alive, and the resolvers of exited or idle processes to evict.

use std::{
    collections::{HashMap, HashSet},
    path::{Path, PathBuf},
    rc::Rc,
    time::{Duration, Instant},
};

use blazesym::{
    helper::ElfResolver,
    symbolize::{
        Symbolizer as Blazesym,
        evict::{Elf as EvictElf, Evict},
    },
};

use super::{
    debuginfo::DebugInfo,
    jit::{JitFile, JitSource, JitTable, jitdump_name},
    resolvers::SymbolTable,
    unknown,
};
use crate::{
    procmaps::{KeptFiles, ProcessFiles, elf_address, pidfd_open},
    stacks::{Frame, FrameKind},
};

/// What the symbolizer knows of processes, shared with blazesym's process dispatcher.
pub(super) struct State {
    pub(super) processes: HashMap<u32, Known>,
    /// Every (map_files path, path) blazesym asked the dispatcher about, by pid: the keys of
    /// its resolver caches, whatever memory map (cached or read then) the entry came from.
    pub(super) cache_keys: HashMap<u32, Vec<(PathBuf, PathBuf)>>,
    pub(super) files: KeptFiles,
    pub(super) debug_info: DebugInfo,
    /// The function bounds (`.eh_frame`) of stripped files, by path: frames without a symbol
    /// are named by the start of their function.
    pub(super) function_bounds: BoundsCache,
    /// Binaries opened for the dispatcher's resolvers, by device and inode (and whether
    /// their debug links are followed): one mapping of libc however many processes map it.
    /// Kept while a resolver blazesym caches holds one.
    pub(super) elf_files: HashMap<(u64, u64, bool), Rc<ElfResolver>>,
    /// [`SymbolizerOptions::dwarf`].
    pub(super) dwarf: bool,
    /// Without DWARF, the binaries' symbol tables, shared and kept as `elf_files` are.
    pub(super) symbol_tables: HashMap<(u64, u64), Rc<SymbolTable>>,
}

/// Files whose function bounds are kept (a long `-a` run meets many; rebuilt when needed).
pub(super) const MAX_FUNCTION_BOUNDS_FILES: usize = 256;

/// One process: its files, and its JIT symbols.
pub(super) struct Known {
    pub(super) files: ProcessFiles,
    pub(super) jit: JitTable,
    /// Followed JIT files with the module name their frames get.
    pub(super) jit_files: Vec<(JitFile, String)>,
    /// When the perf map was last looked for (it may appear late: the JVM writes it at exit).
    pub(super) perf_map_tried: Option<Instant>,
    /// When the memory map was last re-read for an address it did not hold.
    pub(super) maps_read: Instant,
    /// The last read after exit was done; nothing is opened for it any more.
    pub(super) finished: bool,
    /// When a stack of it was last symbolized (see [`IDLE_RESOLVERS`]).
    pub(super) symbolized: Instant,
    /// Every `/proc/PID/map_files/...` path of a file mapping it had (also mappings since
    /// replaced, after an `exec`): the keys blazesym cached its files under while it lived.
    pub(super) map_files: HashSet<PathBuf>,
    /// Every path of a file it mapped: the keys its files are cached under after its exit.
    pub(super) paths: HashSet<PathBuf>,
}

/// How often a missing perf map is looked for again while a process lives.
pub(super) const PERF_MAP_RETRY: Duration = Duration::from_millis(50);
/// How often a live process's memory map is re-read for addresses it does not hold.
pub(super) const MAPS_RETRY: Duration = Duration::from_millis(200);

/// An address's place in a mapped file ([`State::file_location`]).
pub(super) struct FileLocation {
    /// The file's path in the process.
    pub(super) path: PathBuf,
    /// A path that opens it from here (a descriptor kept, the path, a `map_files` link).
    pub(super) readable: Option<PathBuf>,
    /// The offset in the file.
    pub(super) file_offset: u64,
    /// The ELF virtual address (None without program headers).
    pub(super) elf_address: Option<u64>,
}

impl State {
    /// The resolver of the binary at `path` (a `/proc/PID/map_files` link is followed), shared
    /// by every process mapping the same file; `debug_links`: whether blazesym follows its
    /// debug link for DWARF. None if it does not open as ELF.
    pub(super) fn shared_elf(&mut self, path: &Path, debug_links: bool) -> Option<Rc<ElfResolver>> {
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
    pub(super) fn symbol_table(&mut self, path: &Path) -> Option<Rc<SymbolTable>> {
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
    pub(super) fn capture(&mut self, pid: u32) -> bool {
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
    pub(super) fn prepare(&mut self, pid: u32) {
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
    pub(super) fn unnamed_frame(&mut self, pid: u32, addr: u64, alive: bool) -> Frame {
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
    /// if the address is in none and the process lives), or from an executable file mapping
    /// unmapped since. None outside any file mapping.
    pub(super) fn file_location(
        &mut self,
        pid: u32,
        addr: u64,
        alive: bool,
    ) -> Option<FileLocation> {
        let known = self.processes.get_mut(&pid)?;
        if known.files.vma(addr).is_none()
            && alive
            && !known.finished
            && known.maps_read.elapsed() >= MAPS_RETRY
        {
            known.maps_read = Instant::now();
            known.update_files(&mut self.files);
        }
        // A library unloaded since still names the addresses sampled in it.
        let vma = known.files.vma_or_unmapped(addr)?;
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
    pub(super) fn bounds_of(&mut self, path: &Path, readable: &Path) -> Rc<[(u64, u64)]> {
        self.function_bounds.get_or_parse(path, || {
            std::fs::File::open(readable)
                .ok()
                // SAFETY: a read-only private mapping, dropped before returning; a file
                // truncated under us could fault, as with every profiler reading binaries.
                .and_then(|file| unsafe { memmap2::Mmap::map(&file) }.ok())
                .and_then(|data| {
                    let file = crate::unwind::table::parse(&data).ok()?;
                    Some(crate::unwind::table::function_bounds(&file))
                })
                .unwrap_or_default()
                .into()
        })
    }
}

/// One file's function bounds: `(start, end)` ELF addresses, sorted.
type Bounds = Rc<[(u64, u64)]>;

/// The function bounds (`(start, end)` ELF addresses of each `.eh_frame` FDE, sorted) of
/// up to [`MAX_FUNCTION_BOUNDS_FILES`] files by path. Past that the least recently used
/// file's bounds are dropped, one at a time: a churn of short-lived processes meets new
/// files without re-parsing the `.eh_frame` of the interpreter every process maps (the
/// whole cache was emptied at the limit before).
#[derive(Default)]
pub(super) struct BoundsCache {
    /// The bounds, and the use count at their last use.
    files: HashMap<PathBuf, (Bounds, u64)>,
    /// Lookups so far (a clock for least recent use).
    uses: u64,
}

impl BoundsCache {
    /// The bounds of `path`, from the cache or from `parse` (then cached, evicting the least
    /// recently used file if [`MAX_FUNCTION_BOUNDS_FILES`] are held).
    pub(super) fn get_or_parse(
        &mut self,
        path: &Path,
        parse: impl FnOnce() -> Rc<[(u64, u64)]>,
    ) -> Rc<[(u64, u64)]> {
        self.uses += 1;
        if let Some((bounds, used)) = self.files.get_mut(path) {
            *used = self.uses;
            return bounds.clone();
        }
        if self.files.len() >= MAX_FUNCTION_BOUNDS_FILES {
            let oldest = self
                .files
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(path, _)| path.clone());
            if let Some(oldest) = oldest {
                self.files.remove(&oldest);
            }
        }
        let bounds = parse();
        self.files
            .insert(path.to_path_buf(), (bounds.clone(), self.uses));
        bounds
    }

    /// How many files' bounds are held.
    pub(super) fn len(&self) -> usize {
        self.files.len()
    }
}

impl Known {
    pub(super) fn new(files: ProcessFiles) -> Self {
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
    pub(super) fn update_files(&mut self, files: &mut KeptFiles) -> bool {
        let read = self.files.update(files);
        self.note_paths();
        read
    }

    /// Adds the current mappings' cache keys (see [`Known::map_files`], [`Known::paths`]).
    pub(super) fn note_paths(&mut self) {
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
    pub(super) fn follow_jit_files(&mut self) {
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
    pub(super) fn watch_exit(&mut self) {
        if self.files.pidfd.is_none() && !self.finished && !self.jit_files.is_empty() {
            self.files.pidfd = pidfd_open(self.files.pid);
        }
    }

    /// Reads what the followed JIT files gained.
    pub(super) fn refresh_jit(&mut self) {
        for (file, _) in &mut self.jit_files {
            file.refresh(&mut self.jit);
        }
    }

    /// The last read after exit: a perf map written at exit is found now; then every
    /// descriptor kept only to follow the process is closed (mapped files stay open, the
    /// frames still need them).
    pub(super) fn finish(&mut self) {
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
    pub(super) fn jit_lookup(&self, addr: u64) -> Option<(&str, String)> {
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

/// Evicts the resolvers blazesym built for processes not symbolized `since` (the start of
/// the interval, or [`IDLE_RESOLVERS`] ago if earlier); what else is known of them (their
/// memory map, JIT symbols) stays. Returns how many processes had theirs dropped.
pub(super) fn drop_idle_resolvers(
    inner: &mut Blazesym,
    state: &mut State,
    since: Instant,
) -> usize {
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
pub(super) fn pid_of_map_file(path: &Path) -> Option<u32> {
    let mut parts = path.components().skip(2);
    parts.next()?.as_os_str().to_str()?.parse().ok()
}

/// Whether `pid` still has its memory (and `/proc/PID/map_files`): `/proc/PID/maps` has at
/// least one entry. An exited process that is not yet reaped (a zombie) keeps the file, but
/// empty: it is not alive here.
pub(super) fn is_alive(pid: u32) -> bool {
    use std::io::Read as _;
    let mut byte = [0u8; 1];
    std::fs::File::open(format!("/proc/{pid}/maps"))
        .and_then(|mut maps| maps.read(&mut byte))
        .is_ok_and(|n| n == 1)
}
