//! The code objects of every process, read from its memory when first seen and kept until
//! it exits: each runtime's names for the frames the kernel records ([`super::frames`]).
//! Shared by the unwind thread, which reads announced code ahead ([`remember_code`], V8's
//! [`super::v8::replaced::remember_replaced`]), and the symbolizer.

use std::{
    any::Any,
    collections::HashMap,
    fmt,
    sync::{Arc, LazyLock, Mutex},
};

use super::{CodeInfo, v8::replaced::ReplacedCode};

/// A published process's runtime as detected (its version, or its layout), which reads the
/// process's code objects; each runtime's folder implements it for its own.
pub(crate) trait CodeReader: fmt::Debug + Send + Sync + Any {
    /// Reads code object `code` of `pid` (of `generation`, where the kernel announced one).
    fn read_code(&self, pid: u32, code: u64, generation: Option<u16>) -> Option<CodeInfo>;

    /// Whether `other` reads code objects as `self` does: a process that execs into the same
    /// version keeps what was read ([`super::runtime::same_reader`]).
    fn same(&self, other: &dyn CodeReader) -> bool;
}

/// Code objects of one process.
pub(super) struct ProcessCodes {
    pub(super) runtime: Arc<dyn CodeReader>,
    /// Code pointer to what was read (`None`: the read failed).
    pub(super) codes: HashMap<u64, Option<Arc<CodeInfo>>>,
    /// The generation each code pointer was announced with (HotSpot blobs).
    pub(super) generations: HashMap<u64, u16>,
    /// V8 code found around announced pcs of replaced frames ([`super::v8::replaced`]),
    /// oldest first.
    pub(super) replaced: Vec<ReplacedCode>,
}

/// Every process's code objects, shared by the unwind thread (which reads them ahead) and
/// the symbolizer.
#[derive(Default)]
pub(super) struct Registry {
    pub(super) processes: HashMap<u32, ProcessCodes>,
    /// Processes seen exited at the last [`forget_exited`], freed at the next.
    pub(super) dying: Vec<u32>,
    pub(super) read_failures: u64,
    /// Code objects not cached because their process had [`MAX_CODES_PER_PROCESS`].
    pub(super) over_limit: u64,
    /// Code pointers announced with two generations ([`remember_code`]).
    pub(super) ambiguous: u64,
    /// Pcs of replaced V8 frames in no optimized code found
    /// ([`super::v8::replaced::remember_replaced`]): their frames are named as their
    /// function.
    pub(super) replaced_unfound: u64,
}

static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(Mutex::default);

pub(super) fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Records that `pid` runs `runtime` (its code objects are named by it).
pub(super) fn register(pid: u32, runtime: Arc<dyn CodeReader>) {
    let mut registry = registry();
    let entry = registry
        .processes
        .entry(pid)
        .or_insert_with(|| ProcessCodes {
            runtime: runtime.clone(),
            codes: HashMap::new(),
            generations: HashMap::new(),
            replaced: Vec::new(),
        });
    // An exec into another version: what was read is of the old image.
    if !entry.runtime.same(&*runtime) {
        entry.runtime = runtime;
        entry.codes.clear();
        entry.generations.clear();
        entry.replaced.clear();
    }
}

/// Code objects cached per process, at most: a process that creates code without end
/// (`exec`, `eval` in a loop) has the rest of its frames named `[unknown]`, counted in `-v`.
pub const MAX_CODES_PER_PROCESS: usize = 65536;

/// Reads code object `code` of `pid` if it was not read yet. `generation`: the one the
/// kernel announced it with (HotSpot blobs, V8 optimized `Code`s); a code pointer announced
/// again with another is read again: the same names (V8 code moved, or made again the
/// same) keep them; else it held two code objects whose frames (which carry no generation,
/// or only its low bits) cannot be told apart, and is named by neither
/// ([`Registry::ambiguous`]).
pub(super) fn remember_code(pid: u32, code: u64, generation: Option<u16>) {
    let mut registry = registry();
    let Registry {
        processes,
        read_failures,
        over_limit,
        ambiguous,
        ..
    } = &mut *registry;
    let Some(process) = processes.get_mut(&pid) else {
        return;
    };
    if process.codes.contains_key(&code) {
        if let Some(generation) = generation
            && let Some(old) = process.generations.insert(code, generation)
            && old != generation
            && let Some(Some(named)) = process.codes.get(&code)
            && process
                .runtime
                .read_code(pid, code, Some(generation))
                .as_ref()
                != Some(named)
        {
            *ambiguous += 1;
            process.codes.insert(code, None);
        }
        return;
    }
    if process.codes.len() >= MAX_CODES_PER_PROCESS {
        *over_limit += 1;
        return;
    }
    let read = process
        .runtime
        .read_code(pid, code, generation)
        .map(Arc::new);
    if read.is_none() {
        *read_failures += 1;
    }
    process.codes.insert(code, read);
    if let Some(generation) = generation {
        process.generations.insert(code, generation);
    }
}

/// Reads, now, the code objects of `leaf_first` (a recorded user stack of `pid`) not read
/// yet, so they are named even if the process exits before the stacks are printed.
pub fn remember_codes(pid: u32, leaf_first: &[u64]) {
    for (index, &word) in leaf_first.iter().enumerate() {
        // One interpreter per process: its runtime names every frame of the stack.
        if let Some(code) = super::runtime::frame_code(word, leaf_first.get(index + 1).copied()) {
            remember_code(pid, code, None);
        }
    }
}

/// Frees the code objects of processes seen exited at the previous call (their stacks
/// have been named since), and notes those exited now. Called with the symbolizer's own
/// [`crate::symbolize::Symbolizer::forget_exited`], at each interval: the cache follows the
/// processes alive, not every process a run under churn saw. Returns how many were freed.
pub fn forget_exited() -> usize {
    let mut registry = registry();
    let dying = std::mem::take(&mut registry.dying);
    for pid in &dying {
        registry.processes.remove(pid);
        super::v8::line_ends::forget(*pid);
    }
    registry.dying = registry
        .processes
        .keys()
        .copied()
        .filter(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
        .collect();
    dying.len()
}

/// Processes whose code objects are cached now, and code objects cached (for tests and
/// `-v`).
pub fn cached() -> (usize, usize) {
    let registry = registry();
    let codes = registry.processes.values().map(|p| p.codes.len()).sum();
    (registry.processes.len(), codes)
}

pub(super) fn names_report() -> String {
    let registry = registry();
    let mut lines = Vec::new();
    if registry.read_failures > 0 {
        lines.push(format!(
            "interpreters: {} code objects could not be read (the process exited before it \
             was named, its memory is unreadable, or a JVM's Method* now holds another method); their frames are [unknown] in [python], [ruby], [php], [js] or [java]",
            registry.read_failures
        ));
    }
    if registry.ambiguous > 0 {
        lines.push(format!(
            "interpreters: {} code addresses (JVM code cache, V8 optimized code, a CPython \
             code object freed and its address taken by another) held two code objects \
             whose frames cannot be told apart; their frames are [unknown] in [java], [js] \
             or [python]",
            registry.ambiguous
        ));
    }
    if registry.replaced_unfound > 0 {
        lines.push(format!(
            "interpreters: {} pcs of V8 frames outside their function's code were in no \
             optimized code found around them (baseline code, a callee's code before its \
             frame, or the process exited); those frames are named as their function",
            registry.replaced_unfound
        ));
    }
    if registry.over_limit > 0 {
        lines.push(format!(
            "interpreters: {} code objects not named: their process had {MAX_CODES_PER_PROCESS} \
             cached already; their frames are [unknown] in [python], [ruby], [php] or [js]",
            registry.over_limit
        ));
    }
    lines.join("\n")
}
