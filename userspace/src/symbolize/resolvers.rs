//! The resolvers blazesym's process dispatcher gets for a process's mappings: a binary
//! shared by every process mapping it, a stripped binary named through its separate debug
//! file's symbol table, and symbol tables without DWARF.

use std::{
    borrow::Cow,
    cell::RefCell,
    ffi::OsString,
    fmt,
    path::{Path, PathBuf},
    rc::Rc,
};

use blazesym::{
    Addr,
    helper::ElfResolver,
    symbolize::{
        FindSymOpts, Input, ProcessMemberInfo, ProcessMemberType, Reason, Resolve, ResolvedSym,
        SrcLang, Sym, Symbolize, Symbolized, Symbolizer as Blazesym, TranslateFileOffset,
        cache::{Cache, Elf as CacheElf},
        source::{Elf, Source},
    },
};

use super::process::{State, pid_of_map_file};
use crate::procmaps::{LoadSegment, load_segments, segment_address};

/// A binary mapped by a process, opened once for every process that maps the same file
/// ([`State::shared_elf`]): through a descriptor kept while the process lived (its path leads
/// nowhere, or to another file, from tracekit's mount namespace), its `map_files` link, or its
/// path. blazesym on its own opens (and maps) a file per process: libc 24 times over in a
/// `profile -a -i 1` under churn.
pub(super) struct SharedBinary {
    pub(super) binary: Rc<ElfResolver>,
    /// The path as the process mapped it, for frames' module.
    pub(super) module: OsString,
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

/// The resolver for a process's mapping: through a separate debug file where one exists,
/// else the binary itself, shared with every process mapping it. `None` (the file does not
/// open) leaves the mapping to blazesym.
pub(super) fn dispatch(
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
pub(super) struct SplitDebug {
    /// The binary: file offsets to addresses, and its dynamic symbols, tried first.
    pub(super) binary: Rc<ElfResolver>,
    /// The separate debug file's symbols.
    pub(super) debug_file: DebugSymbols,
    /// The binary's path as the process mapped it, for frames' module.
    pub(super) module: OsString,
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
pub(super) struct DebugSymbols {
    pub(super) debug_file: PathBuf,
    /// ELF-only lookups in debug files, shared so each file is parsed once.
    pub(super) debug_files: Rc<Blazesym>,
}

impl DebugSymbols {
    /// The symbol at `addr` (an ELF virtual address: the debug file has its binary's
    /// section addresses, so an address in one is the same in the other).
    pub(super) fn find_sym<'a>(
        &'a self,
        addr: Addr,
        module: &'a OsString,
    ) -> Option<ResolvedSym<'a>> {
        elf_symbol(&self.debug_files, &self.debug_file, addr, module)
    }
}

/// The symbol at ELF address `addr` in the symbol tables (no DWARF) of the file at `path`,
/// looked up through `symbolizer` (which caches the parsed file), as a resolver returns it:
/// the name borrowed from that cache, `module` as its module.
pub(super) fn elf_symbol<'a>(
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
pub(super) struct SymbolTable {
    /// The path it was opened by (a descriptor kept, a `map_files` link, the path).
    pub(super) path: PathBuf,
    /// File offsets to ELF addresses.
    pub(super) segments: Vec<LoadSegment>,
    /// Lookups in this one file: blazesym's ELF parser, without DWARF.
    pub(super) elf: Blazesym,
}

impl SymbolTable {
    /// Parses the symbols of the ELF file at `path`; `None` when it is not 64-bit ELF or
    /// does not open.
    pub(super) fn open(path: &Path) -> Option<Self> {
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
pub(super) struct SymbolsOnly {
    pub(super) binary: Rc<SymbolTable>,
    pub(super) debug_file: Option<DebugSymbols>,
    /// The binary's path as the process mapped it, for frames' module.
    pub(super) module: OsString,
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
