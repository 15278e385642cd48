//! Interpreted code in user stacks: Python functions where the native walk shows
//! `_PyEval_EvalFrameDefault`, Ruby methods where it shows `vm_exec_core` ([`ruby`]), PHP
//! functions where it shows `execute_ex` ([`php`]), JavaScript functions where it shows V8's
//! builtins or JIT code ([`v8`]), found with no flags in the target.
//!
//! The kernel side (`ebpf/src/interp/`, layouts and the frame encoding in
//! [`tracekit_common::interp`]) records interpreter frames in the eval loop's place during
//! the DWARF walk. This module feeds it and names what it records:
//! - [`Interpreters`] owns the `INTERP_*` maps of one BPF object. When a process is loaded
//!   for unwinding ([`crate::unwind::UnwindTables::load_process`]) its executable mappings
//!   are checked for an interpreter (by file name, then symbols through blazesym, then
//!   version), and the process's [`InterpProcess`] is published: the eval loop's address
//!   range, where its thread state is found, the version's offsets. A binary whose version
//!   has no offsets keeps its native frames, and the report (`-v`) says why.
//! - [`frames`] names an encoded frame for the symbolizer: the code object is read from the
//!   process's memory (`process_vm_readv`) the first time it is seen and cached per
//!   (pid, code pointer); [`remember_codes`] reads a stack's code objects ahead, while the
//!   process lives. Frames print as `function (file.py:LINE)` in module `[python]`.
//!
//! Adding a runtime: a module beside [`python`] with its detection and naming, a branch in
//! [`detect`] and in [`frames`].

mod code_info;
pub mod hotspot;
mod layout;
mod memory;
pub mod php;
pub mod python;
mod registry;
pub mod ruby;
mod splice;
mod unpublish;
pub mod v8;

use std::{
    collections::{BTreeMap, HashMap},
    sync::atomic::{AtomicBool, Ordering},
};

use aya::{
    Ebpf,
    maps::{Array, HashMap as BpfHashMap, MapData, PerCpuArray, RingBuf},
};
use tracekit_common::interp::{
    CodeKey, INTERP_STAT_COUNT, InterpConfig, InterpProcess, InterpStat, decode_frame,
    hotspot::CodeCache, runtime,
};

use crate::{
    stacks::{Frame, FrameKind},
    unwind::process::{Backing, ExecMapping},
};
pub use code_info::CodeInfo;
use layout::layouts;
pub use memory::{read_memory, read_memory_prefix};
pub use registry::{MAX_CODES_PER_PROCESS, cached, forget_exited, remember_codes};
use registry::{
    Runtime, names_report, register, registry, remember_code, remember_replaced, replaced_frames,
};
pub use splice::splice;

/// The module column of Python frames.
pub const PYTHON_MODULE: &str = "[python]";
/// The module column of Ruby frames.
pub const RUBY_MODULE: &str = "[ruby]";
/// The module column of PHP frames.
pub const PHP_MODULE: &str = "[php]";
/// The module column of JavaScript (V8) frames.
pub const JS_MODULE: &str = "[js]";
/// The module column of Java (HotSpot) frames.
pub const JAVA_MODULE: &str = "[java]";

static DISABLED: AtomicBool = AtomicBool::new(false);

/// Turns the interpreter unwinders off for this process's runs (`--no-interpreters`):
/// eval loops keep their native frames.
pub fn disable() {
    DISABLED.store(true, Ordering::Relaxed);
}

/// Whether interpreter frames are collected.
pub fn enabled() -> bool {
    !DISABLED.load(Ordering::Relaxed)
}

/// What a binary is, as far as interpreters go.
#[derive(Clone, Debug)]
pub(crate) enum Detected {
    Python(python::Binary),
    Ruby(ruby::Binary),
    Php(php::Binary),
    V8(v8::Binary),
    /// HotSpot's `libjvm.so`: its layout is read per process.
    HotSpot(hotspot::Binary),
    /// An interpreter we cannot unwind, and why (for the report).
    Unsupported(String),
    /// Not an interpreter.
    None,
}

/// Whether the binary at `path` may be an interpreter that [`detect`] knows, by its file
/// name alone (no file is read): a process that maps one has its tables built first
/// ([`crate::unwind::worker`]), as its stacks cannot be named before. Keep it in step with
/// the names [`detect`] looks at.
pub fn may_hold_interpreter(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.contains("python")
        || name.contains("ruby")
        || name.starts_with("php")
        || name.starts_with("libphp")
}

/// Checks the binary of `mapping` (opened as `file`) for an interpreter.
fn detect(path: &str, file: &std::path::Path) -> Detected {
    let name = path.rsplit('/').next().unwrap_or(path);
    if name.contains("ruby") {
        return ruby::detect(file);
    }
    if name.starts_with("php") || name.starts_with("libphp") {
        return php::detect(path, file);
    }
    if v8::is_node(name) {
        return v8::detect(file);
    }
    if hotspot::is_libjvm(name) {
        return hotspot::detect(file);
    }
    if !name.contains("python") {
        return Detected::None;
    }
    use blazesym::inspect::{Inspector, source::Elf, source::Source};
    let mut elf = Elf::new(file);
    elf.debug_syms = false;
    let names = ["_PyEval_EvalFrameDefault", "_PyRuntime", "Py_Version"];
    let inspector = Inspector::new();
    let Ok(found) = inspector.lookup(&Source::Elf(elf), &names) else {
        return Detected::None;
    };
    let first = |i: usize| found.get(i).and_then(|syms| syms.first());
    let (Some(eval), Some(runtime_state)) = (first(0), first(1)) else {
        return Detected::None;
    };
    let Some(eval_size) = eval.size.filter(|&size| size > 0) else {
        return Detected::Unsupported("_PyEval_EvalFrameDefault has no size".into());
    };
    // Py_Version (3.11+) is the authority; older versions are known by their file name.
    let from_symbol = first(2).and_then(|sym| {
        use std::os::unix::fs::FileExt as _;
        let mut word = [0u8; 4];
        std::fs::File::open(file)
            .ok()?
            .read_exact_at(&mut word, sym.file_offset?)
            .ok()?;
        python::minor_from_hex(u64::from(u32::from_le_bytes(word)))
    });
    let Some(minor) = from_symbol.or_else(|| python::minor_from_name(path)) else {
        return Detected::Unsupported("CPython of an unknown version".into());
    };
    let Some(version) = python::version(minor) else {
        return Detected::Unsupported(format!(
            "CPython 3.{minor}: no structure offsets for this version (3.8-3.13 are known)"
        ));
    };
    let Some(eval_file_offset) = eval.file_offset else {
        return Detected::Unsupported("_PyEval_EvalFrameDefault has no file offset".into());
    };
    let mut version = *version;
    // 3.13+ state their offsets at the start of _PyRuntime: they win over the table.
    if minor >= 13 {
        let stated = runtime_state.file_offset.and_then(|offset| {
            use std::os::unix::fs::FileExt as _;
            let mut bytes = vec![0u8; 400];
            std::fs::File::open(file)
                .ok()?
                .read_exact_at(&mut bytes, offset)
                .ok()?;
            Some(bytes)
        });
        match stated.map(|bytes| python::apply_debug_offsets(version, &bytes)) {
            Some(Ok(stated)) => {
                if stated != version {
                    log::debug!(
                        "{path}: _Py_DebugOffsets differ from 3.{minor}'s table; using them"
                    );
                }
                version = stated;
            }
            Some(Err(reason)) => return Detected::Unsupported(reason),
            None => {
                return Detected::Unsupported("_Py_DebugOffsets could not be read".into());
            }
        }
    }
    Detected::Python(python::Binary {
        version,
        eval: (eval.addr, eval_size as u64),
        eval_file_offset,
        runtime_state: runtime_state.addr,
    })
}

/// The interpreter unwinders' maps of one loaded BPF object, and what was detected.
pub struct Interpreters {
    processes: BpfHashMap<MapData, u32, InterpProcess>,
    config: Array<MapData, InterpConfig>,
    stats: PerCpuArray<MapData, u64>,
    /// New code objects, announced by the kernel.
    codes: RingBuf<MapData>,
    /// JVMs' code caches (`HOTSPOT_CODE`; `None` in an object without it).
    hotspot_code: Option<BpfHashMap<MapData, u32, CodeCache>>,
    /// Whether `INTERP_CONFIG` was written (once, at the first interpreter), or why not.
    configured: Option<Result<(), String>>,
    binaries: HashMap<(String, u64), Detected>,
    /// Processes published, with their runtime's name and version.
    published: HashMap<u32, String>,
    /// Interpreters by version: processes published.
    by_version: BTreeMap<String, u64>,
    /// (binary, reason) to (processes that kept native frames, the last of them): a
    /// process loaded again (after an `exec`, a `dlopen`) counts once.
    unsupported: BTreeMap<(String, String), (u64, u32)>,
    errors: BTreeMap<String, u64>,
    /// JVMs not readable yet, probed again ([`hotspot::pending`]).
    hotspot_pending: hotspot::pending::PendingJvms,
    /// Runtimes by version: what their frames lack (for `-v`).
    limits: BTreeMap<String, String>,
}

impl Interpreters {
    /// Takes the `INTERP_*` maps out of `ebpf`; `None` when the object has none.
    pub fn take(ebpf: &mut Ebpf) -> Option<Self> {
        let processes = BpfHashMap::try_from(ebpf.take_map("INTERP_PROCESSES")?).ok()?;
        let config = Array::try_from(ebpf.take_map("INTERP_CONFIG")?).ok()?;
        let stats = PerCpuArray::try_from(ebpf.take_map("INTERP_STATS")?).ok()?;
        let codes = RingBuf::try_from(ebpf.take_map("INTERP_CODES")?).ok()?;
        let hotspot_code = ebpf
            .take_map("HOTSPOT_CODE")
            .and_then(|map| BpfHashMap::try_from(map).ok());
        Some(Self {
            hotspot_code,
            processes,
            config,
            stats,
            codes,
            configured: None,
            binaries: HashMap::new(),
            published: HashMap::new(),
            by_version: BTreeMap::new(),
            unsupported: BTreeMap::new(),
            errors: BTreeMap::new(),
            hotspot_pending: Default::default(),
            limits: BTreeMap::new(),
        })
    }

    /// Looks for an interpreter in live process `pid`'s executable `mappings` and publishes
    /// it to the kernel.
    pub fn load_process(&mut self, pid: u32, mappings: &[ExecMapping]) {
        if !enabled() {
            return;
        }
        for mapping in mappings {
            let Backing::File { path, .. } = &mapping.backing else {
                continue;
            };
            let key = (mapping.device.clone(), mapping.inode);
            let detected = match self.binaries.get(&key) {
                Some(detected) => detected.clone(),
                None => {
                    let link = format!(
                        "/proc/{pid}/map_files/{:x}-{:x}",
                        mapping.begin, mapping.end
                    );
                    let detected = detect(path, std::path::Path::new(&link));
                    if !matches!(detected, Detected::None) {
                        log::debug!("interpreters: {path}: {detected:?}");
                    }
                    self.binaries.insert(key, detected.clone());
                    detected
                }
            };
            match detected {
                Detected::None => {}
                Detected::HotSpot(binary) => {
                    // Interpreted Java frames, where the layout was read; else -v says why.
                    if self.load_hotspot(pid, path, &binary, mapping) {
                        return;
                    }
                }
                Detected::Unsupported(reason) => self.keep_native(path, reason, pid),
                Detected::Python(binary) => {
                    if !self.configure() {
                        return;
                    }
                    // The exec mapping holds the eval loop: its file offset gives the bias.
                    let Some(bias) = bias_at(binary.eval.0, binary.eval_file_offset, mapping)
                    else {
                        continue;
                    };
                    let process = binary.process(bias);
                    match self.processes.insert(pid, process, 0) {
                        Ok(()) => {
                            let name = format!("CPython 3.{}", binary.version.minor);
                            if self.published.get(&pid) != Some(&name) {
                                *self.by_version.entry(name.clone()).or_default() += 1;
                            }
                            self.published.insert(pid, name);
                            register(pid, Runtime::Python(binary.version));
                        }
                        Err(err) => {
                            *self
                                .errors
                                .entry(format!("publishing an interpreter: {err}"))
                                .or_default() += 1;
                        }
                    }
                    return;
                }
                Detected::Ruby(binary) => {
                    if !self.configure() {
                        return;
                    }
                    let Some(bias) = bias_at(binary.eval.0, binary.eval_file_offset, mapping)
                    else {
                        continue;
                    };
                    let name = format!("Ruby 3.{}", binary.version.minor);
                    self.publish(
                        pid,
                        binary.process(bias),
                        name,
                        Runtime::Ruby(binary.version),
                    );
                    return;
                }
                Detected::Php(binary) => {
                    let Some(bias) = bias_at(binary.eval.0, binary.eval_file_offset, mapping)
                    else {
                        continue;
                    };
                    let name = format!("PHP 8.{}", binary.version.minor);
                    self.publish(
                        pid,
                        binary.process(bias),
                        name,
                        Runtime::Php(binary.version),
                    );
                    return;
                }
                Detected::V8(binary) => {
                    if self.publish_v8(pid, &binary, mapping, mappings) {
                        return;
                    }
                }
            }
        }
    }

    /// Counts process `pid` as keeping native frames in `path` for `reason` (once per pid).
    fn keep_native(&mut self, path: &str, reason: String, pid: u32) {
        let (count, last) = self
            .unsupported
            .entry((path.to_string(), reason))
            .or_default();
        if *last != pid {
            *count += 1;
            *last = pid;
        }
    }

    /// Publishes `process` as `pid`'s interpreter (Ruby, PHP; CPython's arm predates this).
    fn publish(&mut self, pid: u32, process: InterpProcess, name: String, runtime: Runtime) {
        match self.processes.insert(pid, process, 0) {
            Ok(()) => {
                if self.published.get(&pid) != Some(&name) {
                    *self.by_version.entry(name.clone()).or_default() += 1;
                }
                self.published.insert(pid, name);
                register(pid, runtime);
            }
            Err(err) => {
                *self
                    .errors
                    .entry(format!("publishing an interpreter: {err}"))
                    .or_default() += 1;
            }
        }
    }

    /// Reads the code objects the kernel announced since the last call (call it often: a
    /// process that exits first keeps frames named `[unknown]`). Returns how many.
    pub fn read_announced(&mut self) -> usize {
        self.retry_hotspot();
        let mut read = 0;
        while let Some(item) = self.codes.next() {
            if item.len() < size_of::<CodeKey>() {
                continue;
            }
            // SAFETY: the kernel writes whole CodeKeys; read_unaligned takes any alignment.
            let key = unsafe { std::ptr::read_unaligned(item.as_ptr().cast::<CodeKey>()) };
            drop(item);
            if key.runtime == u16::from(runtime::V8_REPLACED) {
                remember_replaced(key.pid, key.code);
                read += 1;
                continue;
            }
            // V8: an optimized `Code`'s (never 0), none for a `SharedFunctionInfo`.
            let generation = (key.runtime == u16::from(runtime::HOTSPOT) || key.generation != 0)
                .then_some(key.generation);
            remember_code(key.pid, key.code, generation);
            read += 1;
        }
        read
    }

    /// Writes `INTERP_CONFIG` the first time an interpreter is found; false if it cannot be.
    fn configure(&mut self) -> bool {
        let configured = self.configured.get_or_insert_with(|| {
            let config = layouts().clone()?;
            log::debug!("interpreters: {config:?}");
            self.config
                .set(0, config, 0)
                .map_err(|err| format!("writing INTERP_CONFIG: {err}"))
        });
        match configured {
            Ok(()) => true,
            Err(err) => {
                let err = err.clone();
                *self.errors.entry(err).or_default() += 1;
                false
            }
        }
    }

    /// The kernel walks' counters, summed over CPUs, indexed by [`InterpStat`].
    fn counters(&self) -> [u64; INTERP_STAT_COUNT as usize] {
        let mut counters = [0u64; INTERP_STAT_COUNT as usize];
        for (index, counter) in counters.iter_mut().enumerate() {
            if let Ok(values) = self.stats.get(&(index as u32), 0) {
                *counter = values.iter().sum();
            }
        }
        counters
    }

    /// For `-v`: what was found and unwound, what kept native frames and why.
    pub fn report(&self) -> String {
        let counters = self.counters();
        let found: Vec<String> = self
            .by_version
            .iter()
            .map(|(name, n)| format!("{name} in {n} process{}", if *n == 1 { "" } else { "es" }))
            .collect();
        let mut out = format!(
            "interpreters: {}; {} eval-loop frames met, {} interpreter frames recorded, {} kept \
             native (no interpreter state for the thread), {} kept native (unreadable \
             interpreter memory), {} stacks cut at {} frames inside interpreter frames, {} new \
             code objects not announced (ring buffer full)",
            if !enabled() {
                "off (--no-interpreters)".to_string()
            } else if found.is_empty() {
                "none unwound".to_string()
            } else {
                found.join(", ")
            },
            counters[InterpStat::EvalFrames as usize],
            counters[InterpStat::Frames as usize],
            counters[InterpStat::NoThreadState as usize],
            counters[InterpStat::ReadErrors as usize],
            counters[InterpStat::Truncated as usize],
            tracekit_common::profile::MAX_STACK_DEPTH,
            counters[InterpStat::CodesLost as usize],
        );
        for ((path, reason), (n, _)) in &self.unsupported {
            out.push_str(&format!(
                "\nnative frames for {path} ({reason}) in {n} process{}",
                if *n == 1 { "" } else { "es" }
            ));
        }
        for (name, limit) in &self.limits {
            out.push_str(&format!("\n{name}: {limit}"));
        }
        out.push_str(&self.pending_report());
        out.push_str(&self.v8_report());
        for (error, n) in &self.errors {
            out.push_str(&format!("\ninterpreters off ({n}x): {error}"));
        }
        let names = names_report();
        if !names.is_empty() {
            out.push('\n');
            out.push_str(&names);
        }
        out
    }
}

/// The load bias of `mapping` holding the eval loop at ELF address `eval` and file offset
/// `at` (ld.so maps every segment of a binary with one bias).
fn bias_at(eval: u64, at: u64, mapping: &ExecMapping) -> Option<u64> {
    if at < mapping.offset || at - mapping.offset >= mapping.end - mapping.begin {
        return None;
    }
    Some((mapping.begin + (at - mapping.offset)).wrapping_sub(eval))
}

/// The module column of `runtime`'s frames.
fn module_of(runtime: u8) -> &'static str {
    match runtime {
        runtime::RUBY => RUBY_MODULE,
        runtime::PHP => PHP_MODULE,
        runtime::V8 | runtime::V8_REPLACED => JS_MODULE,
        runtime::HOTSPOT => JAVA_MODULE,
        _ => PYTHON_MODULE,
    }
}

/// Whether `word` of a user stack is an interpreter frame.
pub fn is_frame(word: u64) -> bool {
    decode_frame(word).is_some()
}

/// The frames of encoded interpreter frame `word` of process `pid`: one,
/// `function (file:LINE)` in its runtime's module ([`PYTHON_MODULE`]...), `[unknown]` in
/// it when the code object could not be read; a HotSpot compiled frame is its method and the
/// methods inlined there, outermost first ([`hotspot::compiled::frames`]; `leaf`: the word is
/// the sampled pc; `next`: the word after it, maybe its fingerprint, [`hotspot::frame_code`]).
pub fn frames(pid: u32, word: u64, next: Option<u64>, leaf: bool) -> Vec<Frame> {
    let id = decode_frame(word).map_or(runtime::PYTHON, |(id, _, _)| id);
    let symbols = match decode_frame(word) {
        // A replaced V8 frame whose code was not found is named as its function.
        Some((runtime::V8_REPLACED, shared, low_bits)) => replaced_frames(pid, shared, low_bits)
            .unwrap_or_else(|| {
                let function = tracekit_common::interp::encode_frame(runtime::V8, shared, 0);
                code_symbols(pid, function, None, leaf)
            }),
        _ => code_symbols(pid, word, next, leaf),
    };
    symbols
        .into_iter()
        .map(|(symbol, inlined)| Frame {
            address: None,
            symbol,
            module: Some(module_of(id).to_string()),
            kind: FrameKind::User,
            inlined,
            jit: false,
        })
        .collect()
}

/// The symbols of encoded frame `word` (not a replaced V8 frame) of `pid`, each with whether
/// it is inlined into the one before (see [`frames`]).
fn code_symbols(pid: u32, word: u64, next: Option<u64>, leaf: bool) -> Vec<(String, bool)> {
    let id = decode_frame(word).map_or(runtime::PYTHON, |(id, _, _)| id);
    let info = decode_frame(word).zip(hotspot::frame_code(word, next));
    let info = info.and_then(|((_, _, units), code)| {
        remember_code(pid, code, None);
        let registry = registry();
        let info = registry.processes.get(&pid)?.codes.get(&code)?.clone()?;
        Some((info, units))
    });
    match info {
        Some((info, offset)) if id == runtime::V8 && !info.compiled.is_empty() => {
            v8::compiled::frames(&info, offset)
        }
        Some((info, units)) if id == runtime::V8 => vec![(v8::symbol(&info, units), false)],
        Some((info, offset)) if id == runtime::HOTSPOT && !info.compiled.is_empty() => {
            hotspot::compiled::frames(&info, offset, leaf)
        }
        Some((info, bci)) if id == runtime::HOTSPOT => {
            vec![(hotspot::lines::symbol(&info, bci), false)]
        }
        Some((info, units)) => {
            let line = match id {
                runtime::RUBY => ruby::line_of(&info, units),
                // The kernel recorded `opline->lineno` itself.
                runtime::PHP => units as i32,
                _ => info.line(units),
            };
            vec![(format!("{} ({}:{})", info.name, info.file, line), false)]
        }
        None => vec![(crate::stacks::UNKNOWN_SYMBOL.to_string(), false)],
    }
}

/// Whether `frame` is of interpreted code (its module is a runtime's, `[python]`).
pub fn is_interpreted(frame: &Frame) -> bool {
    matches!(
        frame.module.as_deref(),
        Some(PYTHON_MODULE | RUBY_MODULE | PHP_MODULE | JS_MODULE | JAVA_MODULE)
    )
}

/// An interpreter frame's symbol (`function (file:LINE)`, as [`frame`] writes it) split into
/// function, file and line; `None` for any other symbol.
pub fn source_of_symbol(symbol: &str) -> Option<(&str, &str, i64)> {
    let inner = symbol.strip_suffix(')')?;
    // The last " (": Ruby's labels hold one (`block (2 levels) in run`).
    let (function, rest) = inner.rsplit_once(" (")?;
    let (file, line) = rest.rsplit_once(':')?;
    Some((function, file, line.parse().ok()?))
}

#[cfg(test)]
mod tests;
