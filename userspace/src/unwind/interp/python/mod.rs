//! CPython 3.8-3.14: detection by symbols and version, the structure offsets the kernel
//! walk needs, and naming of code objects (name, file, line from the instruction offset).
//!
//! Offsets per minor version come from the DWARF of pyenv's builds (`gdb -batch -ex 'print
//! &((PyCodeObject*)0)->co_name'` on `libpython3.X.so`) and match CPython's headers of each
//! version (`Include/cpython/code.h`, `Include/internal/pycore_frame.h`, `pycore_runtime.h`,
//! `cpython/pystate.h`); Debian's stripped `python3.11` has the same layout (its
//! `PyGILState_GetThisThreadState` reads `_PyRuntime+596`, the key of `autoTSSkey` at 592).

mod checks;
mod lines;

pub use lines::line_of;

use tracekit_common::interp::{
    InterpProcess, NO_OFFSET, OFFSET_SLOTS,
    python::{
        CFRAME_CURRENT_FRAME, CODE_BYTECODE, CODE_FILENAME, CODE_FIRSTLINENO, CODE_NAME,
        FRAME_CODE, FRAME_ENTRY, FRAME_INSTRUCTION, FRAME_PREVIOUS, TSTATE_FRAME, code_key,
        decode_generation, layout, split_code_key,
    },
    runtime,
};

use super::{
    CodeInfo, Interpreters, bias_at, read_memory, read_memory_prefix,
    registry::CodeReader,
    runtime::{Detected, Runtime, at_line, same_reader},
};
use crate::unwind::process::ExecMapping;
use checks::{MAX_FILE, MAX_NAME, Rejected};

/// One minor version's layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Version {
    /// `3.minor`.
    pub minor: u8,
    /// [`layout`] family.
    layout: u8,
    /// `_PyRuntime` to `autoTSSkey` (a `Py_tss_t`: `int _is_initialized; pthread_key_t
    /// _key;`) on x86_64.
    auto_tss_key: u64,
    /// The same on arm64, where glibc's `pthread_mutex_t` is 48 bytes, not 40, and moves it
    /// in 3.8-3.12 (from `PyGILState_GetThisThreadState` in Debian's arm64 builds: 3.9's
    /// reads the key at 620, 3.11's at 612, 3.13's at 2164); `None`: not measured.
    auto_tss_key_arm64: Option<u64>,
    tstate_frame: u16,
    cframe_current_frame: u16,
    frame_previous: u16,
    frame_code: u16,
    frame_instruction: u16,
    frame_entry: u16,
    code_bytecode: u16,
    code_filename: u64,
    code_name: u64,
    /// `co_qualname` (3.11+).
    code_qualname: Option<u64>,
    code_firstlineno: u64,
    /// `co_lnotab` (3.8-3.9) or `co_linetable` (3.10+).
    code_linetable: u64,
    /// `sizeof(PyASCIIObject)`: where a compact ASCII string's characters start.
    ascii_header: u64,
    /// `sizeof(PyCompactUnicodeObject)`.
    compact_header: u64,
}

const N: u16 = NO_OFFSET;

/// The versions known, 3.8 to 3.13.
pub const VERSIONS: [Version; 7] = [
    Version {
        minor: 8,
        layout: layout::FRAME_OBJECT_BYTES,
        auto_tss_key: 1392,
        auto_tss_key_arm64: None,
        tstate_frame: 24,
        cframe_current_frame: N,
        frame_previous: 24,
        frame_code: 32,
        frame_instruction: 104,
        frame_entry: N,
        code_bytecode: N,
        code_filename: 104,
        code_name: 112,
        code_qualname: None,
        code_firstlineno: 40,
        code_linetable: 120,
        ascii_header: 48,
        compact_header: 72,
    },
    Version {
        minor: 9,
        layout: layout::FRAME_OBJECT_BYTES,
        auto_tss_key: 584,
        auto_tss_key_arm64: Some(616),
        tstate_frame: 24,
        cframe_current_frame: N,
        frame_previous: 24,
        frame_code: 32,
        frame_instruction: 104,
        frame_entry: N,
        code_bytecode: N,
        code_filename: 104,
        code_name: 112,
        code_qualname: None,
        code_firstlineno: 40,
        code_linetable: 120,
        ascii_header: 48,
        compact_header: 72,
    },
    Version {
        minor: 10,
        layout: layout::FRAME_OBJECT_UNITS,
        auto_tss_key: 584,
        auto_tss_key_arm64: None,
        tstate_frame: 24,
        cframe_current_frame: N,
        frame_previous: 24,
        frame_code: 32,
        frame_instruction: 96,
        frame_entry: N,
        code_bytecode: N,
        code_filename: 104,
        code_name: 112,
        code_qualname: None,
        code_firstlineno: 40,
        code_linetable: 120,
        ascii_header: 48,
        compact_header: 72,
    },
    Version {
        minor: 11,
        layout: layout::INTERPRETER_FRAME_ENTRY,
        auto_tss_key: 592,
        auto_tss_key_arm64: Some(608),
        tstate_frame: 56,
        cframe_current_frame: 8,
        frame_previous: 48,
        frame_code: 32,
        frame_instruction: 56,
        frame_entry: 68,
        code_bytecode: 184,
        code_filename: 112,
        code_name: 120,
        code_qualname: Some(128),
        code_firstlineno: 72,
        code_linetable: 136,
        ascii_header: 48,
        compact_header: 72,
    },
    Version {
        minor: 12,
        layout: layout::INTERPRETER_FRAME_OWNER,
        auto_tss_key: 1544,
        auto_tss_key_arm64: None,
        tstate_frame: 56,
        cframe_current_frame: 0,
        frame_previous: 8,
        frame_code: 0,
        frame_instruction: 56,
        frame_entry: 70,
        code_bytecode: 192,
        code_filename: 112,
        code_name: 120,
        code_qualname: Some(128),
        code_firstlineno: 68,
        code_linetable: 136,
        ascii_header: 40,
        compact_header: 56,
    },
    Version {
        minor: 13,
        layout: layout::INTERPRETER_FRAME_INSTR,
        auto_tss_key: 2160,
        auto_tss_key_arm64: Some(2160),
        tstate_frame: 72,
        cframe_current_frame: N,
        frame_previous: 8,
        frame_code: 0,
        frame_instruction: 56,
        frame_entry: 70,
        code_bytecode: 200,
        code_filename: 112,
        code_name: 120,
        code_qualname: Some(128),
        code_firstlineno: 68,
        code_linetable: 136,
        ascii_header: 40,
        compact_header: 56,
    }, // Debian's 3.14.10 (sid) and 3.14.8 (forky): its `_Py_DebugOffsets`, and its
    // `PyGILState_GetThisThreadState`, which reads the key's `_is_initialized` at
    // `_PyRuntime+0x920`. Its `f_executable` is a tagged `_PyStackRef`.
    Version {
        minor: 14,
        layout: layout::INTERPRETER_FRAME_INSTR,
        auto_tss_key: 2336,
        auto_tss_key_arm64: None,
        tstate_frame: 72,
        cframe_current_frame: N,
        frame_previous: 8,
        frame_code: 0,
        frame_instruction: 56,
        frame_entry: 74,
        code_bytecode: 208,
        code_filename: 112,
        code_name: 120,
        code_qualname: Some(128),
        code_firstlineno: 68,
        code_linetable: 136,
        ascii_header: 40,
        compact_header: 56,
    },
];

/// The layout of `3.minor`, if known.
pub fn version(minor: u8) -> Option<&'static Version> {
    VERSIONS.iter().find(|v| v.minor == minor)
}

/// The minor version a file name says (`python3.11`, `libpython3.8.so.1.0`,
/// `libpython3.7m.so`), if it names CPython 3.
pub fn minor_from_name(path: &str) -> Option<u8> {
    let name = path.rsplit('/').next()?;
    let rest = name
        .strip_prefix("libpython3.")
        .or_else(|| name.strip_prefix("python3."))?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The minor version of a `Py_Version` word (`PY_VERSION_HEX`, 3.11+).
pub fn minor_from_hex(hex: u64) -> Option<u8> {
    ((hex >> 24) & 0xff == 3).then_some(((hex >> 16) & 0xff) as u8)
}

/// A detected CPython binary, in its own ELF addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binary {
    pub version: Version,
    /// `_PyEval_EvalFrameDefault`: start and size.
    pub eval: (u64, u64),
    /// `_PyEval_EvalFrameDefault`'s file offset (to find the load bias of a mapping).
    pub eval_file_offset: u64,
    /// `_PyRuntime`.
    pub runtime_state: u64,
    /// `PyCode_Type` and `PyUnicode_Type` (0: not found; their checks are skipped).
    pub types: (u64, u64),
    /// `_PyRuntime` to `autoTSSkey` on this architecture.
    pub auto_tss_key: u64,
    /// The eval loop's part placed apart by the compiler (`super::branches::cold_part`): start and size.
    pub cold: Option<(u64, u64)>,
}

impl Binary {
    /// The kernel's view of a process mapping this binary with load bias `bias`.
    pub fn process(&self, bias: u64) -> InterpProcess {
        let v = &self.version;
        let mut offsets = [NO_OFFSET; OFFSET_SLOTS];
        offsets[TSTATE_FRAME] = v.tstate_frame;
        offsets[CFRAME_CURRENT_FRAME] = v.cframe_current_frame;
        offsets[FRAME_PREVIOUS] = v.frame_previous;
        offsets[FRAME_CODE] = v.frame_code;
        offsets[FRAME_INSTRUCTION] = v.frame_instruction;
        offsets[FRAME_ENTRY] = v.frame_entry;
        offsets[CODE_BYTECODE] = v.code_bytecode;
        offsets[CODE_FIRSTLINENO] = v.code_firstlineno as u16;
        offsets[CODE_NAME] = v.code_name as u16;
        offsets[CODE_FILENAME] = v.code_filename as u16;
        InterpProcess {
            eval_begin: self.eval.0.wrapping_add(bias),
            eval_end: (self.eval.0 + self.eval.1).wrapping_add(bias),
            // The key is the second int of the Py_tss_t.
            state_address: (self.runtime_state + self.auto_tss_key + 4).wrapping_add(bias),
            runtime: runtime::PYTHON,
            layout: v.layout,
            version_minor: v.minor,
            padding: [0; 5],
            offsets,
            cold_begin: self.cold.map_or(0, |(start, _)| start.wrapping_add(bias)),
            cold_end: self
                .cold
                .map_or(0, |(start, size)| (start + size).wrapping_add(bias)),
        }
    }
}

/// CPython in the runtime table.
pub struct Python;

/// CPython's entry in `RUNTIMES`, the table of runtimes.
pub static PYTHON: Python = Python;

/// The module column of Python frames.
pub const MODULE: &str = "[python]";

impl Runtime for Python {
    fn tags(&self) -> &'static [u8] {
        &[runtime::PYTHON]
    }

    fn module(&self) -> &'static str {
        MODULE
    }

    fn name(&self) -> &'static str {
        "python"
    }

    fn language(&self) -> &'static str {
        "Python"
    }

    fn claims(&self, name: &str) -> bool {
        name.contains("python")
    }

    fn detect(&self, path: &str, file: &std::path::Path) -> Detected {
        detect(path, file)
    }

    fn code(&self, word: u64, code: u64, next: Option<u64>) -> Option<u64> {
        frame_code(word, code, next)
    }

    fn symbols(&self, info: &CodeInfo, units: u32, _leaf: bool) -> Vec<(String, bool)> {
        let line = info.line(units);
        if line <= 0 {
            checks::count(Rejected::BadLine);
            return vec![(crate::stacks::UNKNOWN_SYMBOL.to_string(), false)];
        }
        at_line(info, line)
    }

    fn report(&self, _interpreters: &Interpreters) -> String {
        checks::report()
    }
}

impl super::runtime::Binary for Binary {
    fn load(
        &self,
        interpreters: &mut Interpreters,
        pid: u32,
        _path: &str,
        mapping: &ExecMapping,
        _mappings: &[ExecMapping],
    ) -> bool {
        if !interpreters.configure() {
            return true;
        }
        // The exec mapping holds the eval loop: its file offset gives the bias.
        let Some(bias) = bias_at(self.eval.0, self.eval_file_offset, mapping) else {
            return false;
        };
        let name = format!("CPython 3.{}", self.version.minor);
        let biased = |address: u64| {
            if address == 0 {
                0
            } else {
                address.wrapping_add(bias)
            }
        };
        let reader = Reader {
            version: self.version,
            code_type: biased(self.types.0),
            unicode_type: biased(self.types.1),
        };
        interpreters.publish(pid, self.process(bias), name, reader);
        true
    }
}

/// How a published process's code objects are read: its version's layout, and the
/// addresses of its `PyCode_Type` and `PyUnicode_Type` in it (0: unchecked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reader {
    pub version: Version,
    pub code_type: u64,
    pub unicode_type: u64,
}

impl CodeReader for Reader {
    fn read_code(&self, pid: u32, code: u64, generation: Option<u16>) -> Option<CodeInfo> {
        read_code(pid, self, code, generation)
            .map_err(checks::count)
            .ok()
    }

    fn same(&self, other: &dyn CodeReader) -> bool {
        same_reader(self, other, |a, b| a == b)
    }
}

impl CodeReader for Version {
    fn read_code(&self, pid: u32, code: u64, generation: Option<u16>) -> Option<CodeInfo> {
        let reader = Reader {
            version: *self,
            code_type: 0,
            unicode_type: 0,
        };
        reader.read_code(pid, code, generation)
    }

    fn same(&self, other: &dyn CodeReader) -> bool {
        same_reader(self, other, |a, b| a.minor == b.minor)
    }
}

/// Checks `file` (the binary at `path`, whose name holds `python`) for CPython: its eval
/// loop and `_PyRuntime` by symbol, its version from `Py_Version` (3.11+) or its file
/// name, and the version's offsets (3.13+: as `_PyRuntime` states them).
fn detect(path: &str, file: &std::path::Path) -> Detected {
    use blazesym::inspect::{Inspector, source::Elf, source::Source};
    let mut elf = Elf::new(file);
    elf.debug_syms = false;
    let names = [
        "_PyEval_EvalFrameDefault",
        "_PyRuntime",
        "Py_Version",
        "PyCode_Type",
        "PyUnicode_Type",
    ];
    let inspector = Inspector::new();
    let Ok(found) = inspector.lookup(&Source::Elf(elf), &names) else {
        return Detected::None;
    };
    let first = |i: usize| found.get(i).and_then(|syms| syms.first());
    let (Some(eval), Some(runtime_state)) = (first(0), first(1)) else {
        return Detected::None;
    };
    let Some(eval_size) = eval.size.filter(|&size| size > 0) else {
        return Detected::unsupported("_PyEval_EvalFrameDefault has no size");
    };
    // Py_Version (3.11+) is the authority; older versions are known by their file name.
    let from_symbol = first(2).and_then(|sym| {
        use std::os::unix::fs::FileExt as _;
        let mut word = [0u8; 4];
        std::fs::File::open(file)
            .ok()?
            .read_exact_at(&mut word, sym.file_offset?)
            .ok()?;
        minor_from_hex(u64::from(u32::from_le_bytes(word)))
    });
    let Some(minor) = from_symbol.or_else(|| minor_from_name(path)) else {
        return Detected::unsupported("CPython of an unknown version");
    };
    let Some(version) = version(minor) else {
        return Detected::unsupported_version(
            format!("3.{minor}"),
            format!("no layout for CPython 3.{minor} (known: 3.8-3.14)"),
        );
    };
    let Some(eval_file_offset) = eval.file_offset else {
        return Detected::unsupported_version(
            format!("3.{minor}"),
            "_PyEval_EvalFrameDefault has no file offset",
        );
    };
    let mut version = *version;
    // 3.13+ state their offsets at the start of _PyRuntime: they win over the table.
    if minor >= 13 {
        let stated = runtime_state.file_offset.and_then(|offset| {
            use std::os::unix::fs::FileExt as _;
            let mut bytes = vec![0u8; DEBUG_OFFSETS_BYTES];
            std::fs::File::open(file)
                .ok()?
                .read_exact_at(&mut bytes, offset)
                .ok()?;
            Some(bytes)
        });
        match stated.map(|bytes| apply_debug_offsets(version, &bytes)) {
            Some(Ok(stated)) => {
                if stated != version {
                    log::debug!(
                        "{path}: _Py_DebugOffsets differ from 3.{minor}'s table; using them"
                    );
                }
                version = stated;
            }
            Some(Err(reason)) => {
                return Detected::unsupported_version(format!("3.{minor}"), reason);
            }
            None => {
                return Detected::unsupported_version(
                    format!("3.{minor}"),
                    "_Py_DebugOffsets could not be read",
                );
            }
        }
    }
    // The profiled process runs on this machine's architecture, as tracekit does.
    let auto_tss_key = if cfg!(target_arch = "aarch64") {
        version.auto_tss_key_arm64
    } else {
        Some(version.auto_tss_key)
    };
    let Some(auto_tss_key) = auto_tss_key else {
        return Detected::unsupported_version(
            format!("3.{minor}"),
            format!("no layout for CPython 3.{minor} on arm64 (known there: 3.9, 3.11, 3.13)"),
        );
    };
    let cold = std::fs::read(file).ok().and_then(|data| {
        let elf = object::File::parse(&*data).ok()?;
        let bounds = crate::unwind::table::function_bounds(&elf);
        super::branches::cold_part(
            &data,
            &bounds,
            (eval.addr, eval_size as u64),
            eval_file_offset,
        )
    });
    if let Some((start, size)) = cold {
        log::debug!("{path}: _PyEval_EvalFrameDefault goes on at {start:#x} ({size} bytes)");
    }
    Detected::found(Binary {
        version,
        auto_tss_key,
        cold,
        eval: (eval.addr, eval_size as u64),
        eval_file_offset,
        runtime_state: runtime_state.addr,
        types: (
            first(3).map_or(0, |sym| sym.addr),
            first(4).map_or(0, |sym| sym.addr),
        ),
    })
}

/// Bytes of `_PyRuntime` read for its `_Py_DebugOffsets` (the last field used: 3.14's
/// `PyASCIIObject` size at 640).
const DEBUG_OFFSETS_BYTES: usize = 656;

/// Where, in `_Py_DebugOffsets`, each version states the offsets tracekit uses: `[tstate
/// current_frame, frame previous, frame executable, frame instr_ptr, frame owner, code
/// co_code_adaptive, co_filename, co_name, co_qualname, co_linetable, co_firstlineno,
/// PyASCIIObject size]`. 3.14 added fields to the interpreter state (`threads_main`, two
/// generations), the frame (`stackpointer`, `tlbc_index`) and the code object (`co_tlbc`),
/// and a set object before the unicode one.
fn debug_offset_fields(minor: u8) -> Option<[usize; 12]> {
    match minor {
        13 => Some([184, 232, 240, 248, 264, 344, 280, 288, 296, 304, 312, 560]),
        14 => Some([208, 256, 264, 272, 288, 384, 320, 328, 336, 344, 352, 640]),
        _ => None,
    }
}

/// `_Py_DebugOffsets`, at the start of `_PyRuntime` in 3.13+ (`Include/internal/
/// pycore_debug_offsets.h`): CPython's own statement of its structure offsets, in the
/// binary's initialized data: cookie `xdebugpy`, version, `free_threaded`, then per
/// structure a size and its fields' offsets (3.13's checked against the DWARF of pyenv's
/// 3.13.0, 3.14's against Debian's 3.14 headers). Returns `version` with the offsets the
/// kernel walk and the naming use taken from it, or why the binary cannot be unwound.
pub fn apply_debug_offsets(version: Version, bytes: &[u8]) -> Result<Version, String> {
    let word = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
    };
    if bytes.get(..8) != Some(b"xdebugpy".as_slice()) {
        return Err("_PyRuntime does not start with _Py_DebugOffsets".into());
    }
    let Some(fields) = debug_offset_fields(version.minor) else {
        return Err(format!(
            "_Py_DebugOffsets of CPython 3.{} have no known layout",
            version.minor
        ));
    };
    if word(16) != Some(0) {
        return Err("free-threaded CPython (its frames are reached otherwise)".into());
    }
    let small = |at: usize| -> Result<u16, String> {
        word(at)
            .and_then(|v| u16::try_from(v).ok())
            .ok_or_else(|| format!("_Py_DebugOffsets field at {at} is unreadable"))
    };
    let [
        tstate_frame,
        previous,
        executable,
        instruction,
        owner,
        bytecode,
        filename,
        name,
        qualname,
        linetable,
        firstlineno,
        ascii,
    ] = fields;
    Ok(Version {
        tstate_frame: small(tstate_frame)?,
        frame_previous: small(previous)?,
        frame_code: small(executable)?,
        frame_instruction: small(instruction)?,
        frame_entry: small(owner)?,
        code_bytecode: small(bytecode)?,
        code_filename: u64::from(small(filename)?),
        code_name: u64::from(small(name)?),
        code_qualname: Some(u64::from(small(qualname)?)),
        code_linetable: u64::from(small(linetable)?),
        code_firstlineno: u64::from(small(firstlineno)?),
        ascii_header: u64::from(small(ascii)?),
        ..version
    })
}

/// Most bytes of a string or line table read from a process.
const MAX_READ: usize = 64 * 1024;

/// The code object that names frame `word` (of code pointer `code`), given the word after
/// it, toward the root (`next`): the [`code_key`] of the generation `next` holds
/// ([`decode_generation`]), else the address (its first generation). `None` for a
/// generation word, which is no frame.
pub fn frame_code(word: u64, code: u64, next: Option<u64>) -> Option<u64> {
    if decode_generation(word).is_some() {
        return None;
    }
    Some(match next.and_then(decode_generation) {
        Some(generation) => code_key(code, generation),
        None => code,
    })
}

/// Reads the code object at `code` (an address, or a [`code_key`], which holds the
/// generation to check) of process `pid`, announced by the kernel with `generation` (if
/// any), and checks it ([`checks`]) before it names anything.
pub fn read_code(
    pid: u32,
    reader: &Reader,
    code: u64,
    generation: Option<u16>,
) -> Result<CodeInfo, Rejected> {
    let (code, generation) = match split_code_key(code) {
        Some((address, keyed)) => (address, Some(keyed)),
        None => (code, generation),
    };
    let v = &reader.version;
    // Its fields are within the first 256 bytes; a small code object can end its mapping
    // before them.
    let header = read_memory_prefix(pid, code, 256).ok_or(Rejected::Unreadable)?;
    if !checks::check_type(&header, reader.code_type) {
        return Err(Rejected::NotCode);
    }
    let word = |at: u64| -> Result<u64, Rejected> {
        let at = at as usize;
        header
            .get(at..at + 8)
            .and_then(|bytes| bytes.try_into().ok())
            .map(u64::from_le_bytes)
            .ok_or(Rejected::Unreadable)
    };
    let at = v.code_firstlineno as usize;
    let first_line = header
        .get(at..at + 4)
        .and_then(|bytes| bytes.try_into().ok())
        .map(i32::from_le_bytes)
        .ok_or(Rejected::Unreadable)?;
    let (name_at, file_at) = (word(v.code_name)?, word(v.code_filename)?);
    checks::check_generation(first_line, name_at, file_at, generation)?;
    checks::check_first_line(first_line)?;
    let name = read_string(pid, reader, name_at, MAX_NAME).ok_or(Rejected::BadName)?;
    let qualname = match v.code_qualname {
        Some(at) => Some(read_string(pid, reader, word(at)?, MAX_NAME).ok_or(Rejected::BadName)?),
        None => None,
    };
    let filename = read_string(pid, reader, file_at, MAX_FILE).ok_or(Rejected::BadFile)?;
    let linetable = read_bytes(pid, word(v.code_linetable)?).unwrap_or_default();
    Ok(CodeInfo {
        name: qualname.unwrap_or(name),
        file: filename,
        first_line,
        linetable,
        minor: v.minor,
        compiled: Vec::new(),
    })
}

/// A compact `str` object's text (every string a code object holds), checked: its type
/// `PyUnicode_Type`, valid text of 1 to `max` characters.
fn read_string(pid: u32, reader: &Reader, object: u64, max: usize) -> Option<String> {
    let v = &reader.version;
    let header = read_memory(pid, object, 40)?;
    if !checks::check_type(&header, reader.unicode_type) {
        return None;
    }
    let length = u64::from_le_bytes(header[16..24].try_into().ok()?) as usize;
    let state = u32::from_le_bytes(header[32..36].try_into().ok()?);
    let kind = (state >> 2) & 7;
    let compact = state & (1 << 5) != 0;
    let ascii = state & (1 << 6) != 0;
    if !compact || length == 0 || length > max {
        return None;
    }
    if ascii {
        let bytes = read_memory(pid, object + v.ascii_header, length)?;
        return checks::ascii_text(&bytes, max);
    }
    let width = kind as usize;
    if !matches!(width, 1 | 2 | 4) {
        return None;
    }
    let bytes = read_memory(pid, object + v.compact_header, length * width)?;
    checks::wide_text(&bytes, width, max)
}

/// A `bytes` object's contents.
fn read_bytes(pid: u32, object: u64) -> Option<Vec<u8>> {
    let header = read_memory(pid, object, 24)?;
    let size = u64::from_le_bytes(header[16..24].try_into().ok()?) as usize;
    if size > MAX_READ {
        return None;
    }
    read_memory(pid, object + 32, size)
}

#[cfg(test)]
mod tests;
