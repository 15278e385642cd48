//! Interpreted code in user stacks: Python functions where the native walk shows
//! `_PyEval_EvalFrameDefault`, Ruby methods where it shows `vm_exec_core` ([`ruby`]), PHP
//! functions where it shows `execute_ex` ([`php`]), JavaScript functions where it shows V8's
//! builtins or JIT code ([`v8`]), found with no flags in the target.
//!
//! The kernel side (`ebpf/src/unwind/interp/`, layouts and the frame encoding in
//! [`tracekit_common::interp`]) records interpreter frames in the eval loop's place during
//! the DWARF walk. This module feeds it and names what it records:
//! - [`Interpreters`] owns the `INTERP_*` maps of one BPF object. When a process is loaded
//!   for unwinding ([`crate::unwind::UnwindTables::load_process`]) its executable mappings
//!   are checked for an interpreter (by file name, then symbols through blazesym, then
//!   version), and the process's [`InterpProcess`] is published: the eval loop's address
//!   range, where its thread state is found, the version's offsets. A binary whose version
//!   has no offsets keeps its native frames, and the run's summary says why
//!   ([`Interpreters::not_named`]; `-v` names the binary).
//! - [`frames`] names an encoded frame for the symbolizer: the code object is read from the
//!   process's memory (`process_vm_readv`) the first time it is seen and cached per
//!   (pid, code pointer); [`remember_codes`] reads a stack's code objects ahead, while the
//!   process lives. Frames print as `function (file.py:LINE)` in module `[python]`.
//!
//! Each runtime is a folder here ([`python`], [`ruby`], [`php`], [`v8`], [`hotspot`]) with a
//! type implementing the `Runtime` trait, listed in `RUNTIMES` (both in `runtime.rs`); the
//! code here (publishing, the registry of code objects, splicing, the report) goes through
//! that table.

mod branches;
mod code_info;
pub mod hotspot;
mod layout;
mod memory;
pub mod php;
pub mod python;
mod registry;
pub mod ruby;
mod runtime;
mod splice;
mod text;
mod unpublish;
mod unwalked;
pub mod v8;

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::atomic::{AtomicBool, Ordering},
};

use aya::{
    Ebpf,
    maps::{Array, HashMap as BpfHashMap, MapData, PerCpuArray, RingBuf},
};
use tracekit_common::interp::{
    CodeKey, INTERP_STAT_COUNT, InterpConfig, InterpProcess, InterpStat, decode_frame,
    hotspot::CodeCache, runtime as tags,
};

use crate::{
    bpf::names::unwind as names,
    runtimes::RuntimeNotNamed,
    stacks::{Frame, FrameKind},
    unwind::process::{Backing, ExecMapping},
};
pub use code_info::CodeInfo;
use layout::layouts;
pub use memory::{read_memory, read_memory_prefix};
use registry::{CodeReader, names_report, register};
pub use registry::{MAX_CODES_PER_PROCESS, cached, forget_exited, remember_codes};
use runtime::{Detected, RUNTIMES, Unsupported, file_name, runtime_of};
pub use splice::splice;

/// The module column of Python frames.
pub const PYTHON_MODULE: &str = python::MODULE;
/// The module column of Ruby frames.
pub const RUBY_MODULE: &str = ruby::MODULE;
/// The module column of PHP frames.
pub const PHP_MODULE: &str = php::MODULE;
/// The module column of JavaScript (V8) frames.
pub const JS_MODULE: &str = v8::MODULE;
/// The module column of Java (HotSpot) frames.
pub const JAVA_MODULE: &str = hotspot::MODULE;

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

/// Whether the binary at `path` may be an interpreter that the runtime table knows, by its
/// file name alone (no file is read): a process that maps one has its tables built first
/// ([`crate::unwind::worker`]), as its stacks cannot be named before. Runtimes published
/// before their tables (V8, HotSpot: [`Interpreters::load_jit_process`]) are not waited for.
pub fn may_hold_interpreter(path: &str) -> bool {
    let name = file_name(path);
    RUNTIMES
        .iter()
        .any(|runtime| !runtime.before_tables() && runtime.claims(name))
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
    /// (runtime, version, reason) to the processes that kept native frames for it, for the
    /// run's summary ([`Self::not_named`]).
    not_named: BTreeMap<(&'static str, Option<String>, String), BTreeSet<u32>>,
    errors: BTreeMap<String, u64>,
    /// JVMs not readable yet, probed again ([`hotspot::pending`]).
    hotspot_pending: hotspot::pending::PendingJvms,
    /// Runtimes by version: what their frames lack (for `-v`).
    limits: BTreeMap<String, String>,
}

impl Interpreters {
    /// Takes the `INTERP_*` maps out of `ebpf`; `None` when the object has none.
    pub fn take(ebpf: &mut Ebpf) -> Option<Self> {
        let processes = BpfHashMap::try_from(ebpf.take_map(names::INTERP_PROCESSES)?).ok()?;
        let config = Array::try_from(ebpf.take_map(names::INTERP_CONFIG)?).ok()?;
        let stats = PerCpuArray::try_from(ebpf.take_map(names::INTERP_STATS)?).ok()?;
        let codes = RingBuf::try_from(ebpf.take_map(names::INTERP_CODES)?).ok()?;
        let hotspot_code = ebpf
            .take_map(names::HOTSPOT_CODE)
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
            not_named: BTreeMap::new(),
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
                    let detected = runtime::detect(path, std::path::Path::new(&link));
                    if !matches!(detected, Detected::None) {
                        log::debug!("interpreters: {path}: {detected:?}");
                    }
                    self.binaries.insert(key, detected.clone());
                    detected
                }
            };
            match detected {
                Detected::None => {}
                Detected::Unsupported(unsupported) => self.keep_native(path, unsupported, pid),
                Detected::Found(binary) => {
                    if binary.load(self, pid, path, mapping, mappings) {
                        return;
                    }
                }
            }
        }
    }

    /// Publishes the runtimes walked by frame pointer (V8, HotSpot: `before_tables` in the
    /// runtime table) in live process `pid` before its native unwind tables are built (which
    /// takes seconds for a binary the size of node's or `libjvm.so`): the kernel walks their
    /// frames with no tables, so a process profiled from its start (`-- CMD`, a process
    /// started during `-a`) is named from its first samples. [`Self::load_process`]
    /// publishes V8 again after the tables (harmless); a JVM published already is not
    /// probed again.
    pub fn load_jit_process(&mut self, pid: u32, mappings: &[ExecMapping]) {
        if !enabled() {
            return;
        }
        for mapping in mappings {
            let Backing::File { path, .. } = &mapping.backing else {
                continue;
            };
            let name = file_name(path);
            if !RUNTIMES
                .iter()
                .any(|runtime| runtime.before_tables() && runtime.claims(name))
            {
                continue;
            }
            let key = (mapping.device.clone(), mapping.inode);
            let detected = self.binaries.entry(key).or_insert_with(|| {
                let link = format!(
                    "/proc/{pid}/map_files/{:x}-{:x}",
                    mapping.begin, mapping.end
                );
                let detected = runtime::detect(path, std::path::Path::new(&link));
                log::debug!("interpreters: {path}: {detected:?}");
                detected
            });
            let published = match detected.clone() {
                Detected::Found(binary) => binary.load(self, pid, path, mapping, mappings),
                _ => false,
            };
            if published {
                return;
            }
        }
    }

    /// Counts process `pid` as keeping native frames in `path` for the reason `unsupported`
    /// gives (once per pid).
    fn keep_native(&mut self, path: &str, unsupported: Unsupported, pid: u32) {
        let (count, last) = self
            .unsupported
            .entry((path.to_string(), unsupported.reason.clone()))
            .or_default();
        if *last != pid {
            *count += 1;
            *last = pid;
        }
        self.not_named
            .entry((unsupported.runtime, unsupported.version, unsupported.reason))
            .or_default()
            .insert(pid);
    }

    /// The runtimes found whose frames stayed native, and why, with their processes (a
    /// process published since is not one): what the run's summary says without `-v`.
    pub fn not_named(&self) -> Vec<RuntimeNotNamed> {
        self.not_named
            .iter()
            .filter(|(_, pids)| !pids.is_empty())
            .map(|((runtime, version, reason), pids)| RuntimeNotNamed {
                runtime: runtime.to_string(),
                version: version.clone(),
                language: runtime::language(runtime).to_string(),
                reason: reason.clone(),
                pids: pids.iter().copied().collect(),
            })
            .collect()
    }

    /// Publishes `process` as `pid`'s runtime, `name` its version for the report; the
    /// process's code objects are read by `reader` from now on.
    fn publish(&mut self, pid: u32, process: InterpProcess, name: String, reader: impl CodeReader) {
        match self.processes.insert(pid, process, 0) {
            Ok(()) => {
                for pids in self.not_named.values_mut() {
                    pids.remove(&pid);
                }
                if self.published.get(&pid) != Some(&name) {
                    *self.by_version.entry(name.clone()).or_default() += 1;
                }
                self.published.insert(pid, name);
                register(pid, std::sync::Arc::new(reader));
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
        for runtime in RUNTIMES {
            runtime.poll(self);
        }
        let mut read = 0;
        while let Some(item) = self.codes.next() {
            if item.len() < size_of::<CodeKey>() {
                continue;
            }
            // SAFETY: the kernel writes whole CodeKeys; read_unaligned takes any alignment.
            let key = unsafe { std::ptr::read_unaligned(item.as_ptr().cast::<CodeKey>()) };
            drop(item);
            runtime_of(u8::try_from(key.runtime).unwrap_or(tags::NONE)).announced(&key);
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
            tracekit_common::cpu_sampler::MAX_STACK_DEPTH,
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
        for runtime in RUNTIMES {
            out.push_str(&runtime.report(self));
        }
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

/// Whether `word` of a user stack is an interpreter frame.
pub fn is_frame(word: u64) -> bool {
    decode_frame(word).is_some()
}

/// The frames of encoded interpreter frame `word` of process `pid`: one,
/// `function (file:LINE)` in its runtime's module ([`PYTHON_MODULE`]...), `[unknown]` in
/// it when the code object could not be read; a compiled frame (V8, HotSpot) is its
/// function and the functions inlined there, outermost first (`leaf`: the word is the
/// sampled pc; `next`: the word after it, maybe a HotSpot method's fingerprint). Named by
/// the runtime whose tag the word carries (its `Runtime::frames`).
pub fn frames(pid: u32, word: u64, next: Option<u64>, leaf: bool) -> Vec<Frame> {
    let runtime = runtime_of(decode_frame(word).map_or(tags::PYTHON, |(tag, _, _)| tag));
    runtime
        .frames(pid, word, next, leaf)
        .into_iter()
        .map(|(symbol, inlined)| Frame {
            address: None,
            symbol,
            module: Some(runtime.module().to_string()),
            kind: FrameKind::User,
            inlined,
            jit: false,
        })
        .collect()
}

/// Whether `frame` is of interpreted code (its module is a runtime's, `[python]`).
pub fn is_interpreted(frame: &Frame) -> bool {
    frame
        .module
        .as_deref()
        .is_some_and(|module| RUNTIMES.iter().any(|runtime| runtime.module() == module))
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

/// `path` inside the Debian trixie root of the runtime tests (`$TRACEKIT_ROOTS/trixie`, else
/// `target/roots/trixie`), or `None`, printed as the test's skip, when the root was not made
/// (`cargo xtask test` makes it).
#[cfg(test)]
pub(crate) fn trixie_file(path: &str) -> Option<std::path::PathBuf> {
    let roots = std::env::var_os("TRACEKIT_ROOTS").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/roots"),
        std::path::PathBuf::from,
    );
    let file = roots.join("trixie").join(path);
    if file.exists() {
        Some(file)
    } else {
        eprintln!(
            "skipped: no {} (cargo xtask test makes the root)",
            file.display()
        );
        None
    }
}
