//! Addresses to function names, through blazesym.
//!
//! Kernel addresses are named by the kernel itself ([`crate::ksyms`]), or where that cannot
//! run, against `/proc/kallsyms` (or a `vmlinux` when one is installed).
//! User addresses resolve against the ELF symbols and DWARF of the binaries a process had
//! mapped, with inlined functions as frames of their own when DWARF says so. Stripped
//! binaries with a separate debug file (libc6-dbg and other `-dbg`/`-dbgsym` packages) resolve
//! through that file's symbol table, not its DWARF (see `SplitDebug`).
//!
//! Names are demangled here, not by blazesym: blazesym 0.2.7 runs the C++ demangler on names
//! of unknown language even without a `_Z` prefix, so C functions named `a` or `b` come out
//! as `signed char` and `bool` (the same bug as uftrace#1780). [`demangle`] only touches
//! names that carry a mangling prefix.
//!
//! Processes may exit before a profile ends (bpftrace#246 is the classic failure): call
//! [`Symbolizer::remember_process`] while the process lives. It caches the process's memory
//! map (blazesym's VMA cache), so its addresses still resolve afterwards, through the paths
//! of the files it had mapped.

use std::{
    borrow::Cow,
    collections::HashSet,
    ffi::OsString,
    fmt,
    path::{Path, PathBuf},
    rc::Rc,
};

use blazesym::{
    Addr, Pid,
    helper::{ElfResolver, read_elf_build_id},
    symbolize::{
        FindSymOpts, Input, ProcessMemberInfo, ProcessMemberType, Reason, Resolve, ResolvedSym,
        SrcLang, Sym, Symbolize, Symbolized, Symbolizer as Blazesym, TranslateFileOffset,
        cache::{Cache, Process as CacheProcess},
        source::{Elf, Kernel, Process, Source},
    },
};

use crate::stacks::{Frame, FrameKind, KERNEL_MODULE, UNKNOWN_SYMBOL};

/// Resolves kernel and user addresses to [`Frame`]s.
pub struct Symbolizer {
    inner: Blazesym,
    remembered: HashSet<u32>,
}

impl Default for Symbolizer {
    fn default() -> Self {
        Self::new(true)
    }
}

impl Symbolizer {
    /// A symbolizer. With `inlined`, functions the compiler inlined become frames of their
    /// own where DWARF describes them (perf's `--inline`), at the cost of reading DWARF line
    /// information; without it, only ELF and DWARF function symbols are used.
    pub fn new(inlined: bool) -> Self {
        let debug_files = Rc::new(
            Blazesym::builder()
                .enable_code_info(false)
                .enable_inlined_fns(false)
                .enable_demangling(false)
                .build(),
        );
        Self {
            inner: Blazesym::builder()
                .enable_code_info(inlined)
                .enable_inlined_fns(inlined)
                .enable_demangling(false)
                .set_process_dispatcher(move |member: ProcessMemberInfo<'_>| {
                    Ok(SplitDebug::for_member(&member, &debug_files))
                })
                .build(),
            remembered: HashSet::new(),
        }
    }

    /// Caches the memory map of live process `pid`, so that its addresses resolve even if it
    /// exits before [`Symbolizer::user_stack`] is called. Calling it again (after an `exec`)
    /// replaces the cached map. Returns false when the process is already gone.
    pub fn remember_process(&mut self, pid: u32) -> bool {
        // An exiting process (or a zombie) shows an empty map; caching it would replace a
        // good map from an earlier announcement with nothing.
        if !has_memory_map(pid) {
            log::debug!("pid {pid} has no memory map left to remember");
            return false;
        }
        let mut cache = CacheProcess::new(Pid::from(pid));
        // JIT perf maps (/tmp/perf-PID.map) are read at symbolization time.
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

    /// Resolves kernel addresses. `leaf_first` addresses are a stack as the kernel records
    /// it: the sampled instruction first, then return addresses. Returns the frames
    /// outermost first (inlined functions expanded).
    pub fn kernel_stack(&self, leaf_first: &[u64]) -> Vec<Frame> {
        let lookup = lookup_addresses(leaf_first);
        if let Some(names) = crate::ksyms::names(&lookup) {
            return names
                .into_iter()
                .rev()
                .map(|name| match name {
                    Some(symbol) => Frame {
                        symbol,
                        module: Some(KERNEL_MODULE.to_string()),
                        kind: FrameKind::Kernel,
                        inlined: false,
                    },
                    None => unknown(FrameKind::Kernel),
                })
                .collect();
        }
        let source = Source::Kernel(Kernel::default());
        let symbolized = self.inner.symbolize(&source, Input::AbsAddr(&lookup));
        frames_outermost_first(symbolized, lookup.len(), FrameKind::Kernel, None)
    }

    /// Resolves a user stack of process `pid`, like [`Symbolizer::kernel_stack`].
    pub fn user_stack(&self, pid: u32, leaf_first: &[u64]) -> Vec<Frame> {
        let lookup = lookup_addresses(leaf_first);
        let mut source = Process::new(Pid::from(pid));
        source.perf_map = true;
        // A live process's files are best reached through /proc/PID/map_files (right in
        // other mount namespaces, and for deleted files); an exited one's only through the
        // paths remembered from its memory map.
        source.map_files = !self.remembered.contains(&pid) || is_alive(pid);
        let source = Source::Process(source);
        let symbolized = self.inner.symbolize(&source, Input::AbsAddr(&lookup));
        frames_outermost_first(symbolized, lookup.len(), FrameKind::User, Some(pid))
    }
}

/// Where Debian's `-dbg`/`-dbgsym` packages (and most distributions) install the separate
/// debug file of a stripped binary, by its build ID.
const BUILD_ID_DIR: &str = "/usr/lib/debug/.build-id";

/// A stripped binary resolved through the symbol table of its separate debug file, without
/// the DWARF in that file, as bcc and bpftrace do. blazesym on its own follows the debug link
/// and decompresses every DWARF section of the debug file before the first lookup: for
/// libc6-dbg, ~70 ms and ~15 MiB per run, for names the symbol table has too. DWARF inside a
/// binary itself (inlined frames of the program being profiled) is still read, by blazesym's
/// default resolver.
struct SplitDebug {
    /// The binary: file offsets to addresses, and its dynamic symbols, tried first.
    binary: ElfResolver,
    /// `BUILD_ID_DIR/xx/yyyy.debug`.
    debug_file: PathBuf,
    /// The binary's path as the process mapped it, for frames' module.
    module: OsString,
    /// ELF-only lookups in debug files, shared so each file is parsed once.
    debug_files: Rc<Blazesym>,
}

impl fmt::Debug for SplitDebug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SplitDebug({})", self.debug_file.display())
    }
}

impl SplitDebug {
    /// The resolver for a process's mapping, when it is a file with a separate debug file;
    /// `None` leaves the mapping to blazesym's default handling.
    fn for_member(
        member: &ProcessMemberInfo<'_>,
        debug_files: &Rc<Blazesym>,
    ) -> Option<Box<dyn Resolve>> {
        let ProcessMemberType::Path(entry) = member.member_entry else {
            return None;
        };
        // The map_files link reaches the file in other mount namespaces and after deletion;
        // an exited process's remembered map has only the path.
        let binary = [&entry.maps_file, &entry.symbolic_path]
            .into_iter()
            .find(|path| path.exists())?;
        let debug_file = separate_debug_file(binary)?;
        // No debug directories: blazesym reads the binary alone, which has no DWARF.
        let binary = ElfResolver::open_with_debug_dirs(binary, Vec::<PathBuf>::new()).ok()?;
        Some(Box::new(Self {
            binary,
            debug_file,
            module: entry.symbolic_path.clone().into_os_string(),
            debug_files: Rc::clone(debug_files),
        }))
    }
}

/// The separate debug file of `binary` (`BUILD_ID_DIR/xx/yyyy.debug` by its build ID), if
/// one is installed.
fn separate_debug_file(binary: &Path) -> Option<PathBuf> {
    let build_id = read_elf_build_id(binary).ok()??;
    let (first, rest) = build_id.split_first()?;
    let hex: String = rest.iter().map(|byte| format!("{byte:02x}")).collect();
    let debug_file = Path::new(BUILD_ID_DIR).join(format!("{first:02x}/{hex}.debug"));
    debug_file.exists().then_some(debug_file)
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
            return exported;
        }
        let mut source = Elf::new(&self.debug_file);
        source.debug_syms = false;
        // The debug file has the binary's section addresses, so a virtual offset in one is
        // the same in the other.
        if let Ok(Symbolized::Sym(Sym {
            name: Cow::Borrowed(name),
            addr: start,
            size,
            ..
        })) = self
            .debug_files
            .symbolize_single(&Source::Elf(source), Input::VirtOffset(addr))
        {
            return Ok(Ok(ResolvedSym {
                name,
                module: Some(&self.module),
                addr: start,
                size,
                lang: SrcLang::Unknown,
                code_info: None,
                inlined: Box::new([]),
                _non_exhaustive: (),
            }));
        }
        exported
    }
}

impl TranslateFileOffset for SplitDebug {
    fn file_offset_to_virt_offset(&self, file_offset: u64) -> blazesym::Result<Option<Addr>> {
        self.binary.file_offset_to_virt_offset(file_offset)
    }
}

/// Whether `/proc/PID/maps` has at least one entry: false once the process's memory is torn
/// down at exit (the file still exists until the zombie is reaped).
fn has_memory_map(pid: u32) -> bool {
    use std::io::Read as _;
    let mut byte = [0u8; 1];
    std::fs::File::open(format!("/proc/{pid}/maps"))
        .and_then(|mut maps| maps.read(&mut byte))
        .is_ok_and(|n| n == 1)
}

fn is_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}/maps")).exists()
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

fn frames_outermost_first(
    symbolized: Result<Vec<Symbolized<'_>>, blazesym::Error>,
    len: usize,
    kind: FrameKind,
    pid: Option<u32>,
) -> Vec<Frame> {
    let symbolized = match symbolized {
        Ok(symbolized) => symbolized,
        Err(err) => {
            match pid {
                Some(pid) => log::debug!("symbolizing pid {pid}: {err}"),
                None => log::debug!("symbolizing kernel addresses: {err}"),
            }
            return vec![unknown(kind); len];
        }
    };
    let mut frames = Vec::with_capacity(len);
    for symbol in symbolized.iter().rev() {
        match symbol {
            Symbolized::Sym(sym) => push_symbol(&mut frames, sym, kind),
            Symbolized::Unknown(_) => frames.push(unknown(kind)),
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
        symbol: demangle(&sym.name).into_owned(),
        module: module.clone(),
        kind,
        inlined: false,
    });
    for inlined in sym.inlined.iter() {
        frames.push(Frame {
            symbol: demangle(&inlined.name).into_owned(),
            module: module.clone(),
            kind,
            inlined: true,
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
        symbol: UNKNOWN_SYMBOL.to_string(),
        module: (kind == FrameKind::Kernel).then(|| KERNEL_MODULE.to_string()),
        kind,
        inlined: false,
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

    /// A thread's outermost frames are libc's `start_thread`, a static function only the
    /// separate debug file names (libc6-dbg): it resolves through that file's symbol table,
    /// with libc itself as the module.
    #[test]
    fn libc_internals_resolve_through_the_debug_file() {
        let frames = std::thread::spawn(|| {
            let mut addrs = [std::ptr::null_mut(); 64];
            // SAFETY: backtrace(3) fills at most `addrs.len()` entries.
            let n = unsafe { libc::backtrace(addrs.as_mut_ptr(), addrs.len() as libc::c_int) };
            let leaf_first: Vec<u64> = addrs[..n as usize].iter().map(|&a| a as u64).collect();
            Symbolizer::new(false).user_stack(std::process::id(), &leaf_first)
        })
        .join()
        .unwrap();
        let libc_frames: Vec<&Frame> = frames
            .iter()
            .filter(|f| f.module.as_deref().is_some_and(|m| m.contains("libc.so")))
            .collect();
        assert!(!libc_frames.is_empty(), "{frames:?}");
        let libc = libc_frames[0].module.clone().unwrap();
        if separate_debug_file(Path::new(&libc)).is_none() {
            eprintln!("skipped: no separate debug file for {libc} in {BUILD_ID_DIR} (libc6-dbg)");
            return;
        }
        assert!(
            libc_frames.iter().any(|f| f.symbol == "start_thread"),
            "{frames:?}"
        );
        assert!(
            frames
                .iter()
                .all(|f| !f.module.as_deref().unwrap_or("").ends_with(".debug")),
            "frames name the debug file as their module: {frames:?}"
        );
    }
}
