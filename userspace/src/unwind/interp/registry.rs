//! The code objects of every process, read from its memory when first seen and kept until
//! it exits: each runtime's names for the frames the kernel records ([`super::frames`]).
//! Shared by the unwind thread, which reads announced code ahead ([`remember_code`],
//! [`remember_replaced`]), and the symbolizer.

use std::{
    collections::HashMap,
    sync::{Arc, LazyLock, Mutex},
};

use super::{CodeInfo, hotspot, php, python, ruby, v8};

/// A process's runtime, for naming.
#[derive(Clone, Debug)]
pub(super) enum Runtime {
    Python(python::Version),
    Ruby(&'static ruby::Version),
    Php(&'static php::Version),
    V8(v8::Version),
    HotSpot(Arc<hotspot::Layout>),
    /// Tests' code objects: what the function reads at (code, generation).
    #[cfg(test)]
    Fake(fn(u64, Option<u16>) -> Option<CodeInfo>),
}

impl Runtime {
    /// Reads code object `code` of `pid` (of `generation`, where the kernel announced one).
    fn read_code(&self, pid: u32, code: u64, generation: Option<u16>) -> Option<CodeInfo> {
        match self {
            Runtime::Python(version) => python::read_code(pid, version, code),
            Runtime::Ruby(version) => ruby::read_code(pid, version, code),
            Runtime::Php(version) => php::read_code(pid, version, code),
            Runtime::V8(version) => v8::read_code(pid, version, code, generation),
            Runtime::HotSpot(layout) => hotspot::read_code(pid, layout, code, generation),
            #[cfg(test)]
            Runtime::Fake(read) => read(code, generation),
        }
    }
}

/// Code objects of one process.
pub(super) struct ProcessCodes {
    pub(super) runtime: Runtime,
    /// Code pointer to what was read (`None`: the read failed).
    pub(super) codes: HashMap<u64, Option<Arc<CodeInfo>>>,
    /// The generation each code pointer was announced with (HotSpot blobs).
    pub(super) generations: HashMap<u64, u16>,
    /// V8 code found around announced pcs of replaced frames ([`v8::replaced`]), oldest
    /// first.
    replaced: Vec<ReplacedCode>,
}

/// V8 code found around a replaced frame's pc.
struct ReplacedCode {
    /// The function it was made for (its `SharedFunctionInfo`, untagged).
    shared: u64,
    /// The `Code` (untagged).
    code: u64,
    /// Its first instruction, and the instructions' size in bytes.
    start: u64,
    size: u32,
    info: Arc<CodeInfo>,
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
    /// Pcs of replaced V8 frames in no optimized code found ([`remember_replaced`]):
    /// their frames are named as their function.
    pub(super) replaced_unfound: u64,
}

static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(Mutex::default);

pub(super) fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Records that `pid` runs `runtime` (its code objects are named by it).
pub(super) fn register(pid: u32, runtime: Runtime) {
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
    let same = match (&entry.runtime, &runtime) {
        (Runtime::Python(a), Runtime::Python(b)) => a.minor == b.minor,
        (Runtime::Ruby(a), Runtime::Ruby(b)) => a.minor == b.minor,
        (Runtime::Php(a), Runtime::Php(b)) => a.minor == b.minor,
        (Runtime::V8(a), Runtime::V8(b)) => a == b,
        (Runtime::HotSpot(a), Runtime::HotSpot(b)) => a == b,
        _ => false,
    };
    if !same {
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

/// Replaced V8 code kept per process, at most (the newest is dropped past it, counted as
/// [`Registry::over_limit`]).
const MAX_REPLACED_PER_PROCESS: usize = 4096;

/// Finds the V8 code around `pc`, a replaced frame's pc the kernel announced for `pid`
/// ([`v8::replaced`]), unless code found before holds it; kept under its function.
pub(super) fn remember_replaced(pid: u32, pc: u64) {
    let mut registry = registry();
    let Registry {
        processes,
        replaced_unfound,
        over_limit,
        ..
    } = &mut *registry;
    let Some(process) = processes.get_mut(&pid) else {
        return;
    };
    let Runtime::V8(version) = &process.runtime else {
        return;
    };
    if let Some(at) = process
        .replaced
        .iter()
        .position(|code| code.start <= pc && pc - code.start < u64::from(code.size))
    {
        let known = &process.replaced[at];
        if v8::replaced::still_there(pid, version, known.code, known.start) {
            return;
        }
        // V8 moved or freed that code since: what holds the pc now is read afresh.
        process.replaced.remove(at);
    }
    if process.replaced.len() >= MAX_REPLACED_PER_PROCESS {
        *over_limit += 1;
        return;
    }
    match v8::replaced::read(pid, version, pc) {
        Some((shared, found, info)) => process.replaced.push(ReplacedCode {
            shared,
            code: found.code,
            start: found.start,
            size: found.size,
            info: Arc::new(info),
        }),
        None => *replaced_unfound += 1,
    }
}

/// The frames of replaced V8 frame `shared` recorded with pc bits `low_bits`, from the
/// newest code found for `shared` that holds such a pc; `None`: no such code.
pub(super) fn replaced_frames(pid: u32, shared: u64, low_bits: u32) -> Option<Vec<(String, bool)>> {
    let registry = registry();
    let process = registry.processes.get(&pid)?;
    process.replaced.iter().rev().find_map(|code| {
        let offset = v8::replaced::offset_in(code.start, code.size, low_bits);
        (code.shared == shared)
            .then_some(offset)
            .flatten()
            .map(|offset| v8::compiled::frames(&code.info, offset))
    })
}

/// Reads, now, the code objects of `leaf_first` (a recorded user stack of `pid`) not read
/// yet, so they are named even if the process exits before the stacks are printed.
pub fn remember_codes(pid: u32, leaf_first: &[u64]) {
    for (index, &word) in leaf_first.iter().enumerate() {
        // One interpreter per process: its runtime names every frame of the stack.
        if let Some(code) = hotspot::frame_code(word, leaf_first.get(index + 1).copied()) {
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
            "interpreters: {} code addresses (JVM code cache, V8 optimized code) held two \
             compiled methods whose frames cannot be told apart; their frames are [unknown] \
             in [java] or [js]",
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
