//! [`Runtime`], what each runtime's folder provides, and [`RUNTIMES`], the one table of them
//! that detection ([`super::Interpreters::load_process`]), publishing and naming
//! ([`super::frames`]) go through.
//!
//! A runtime's folder (`python/`, `ruby/`, `php/`, `v8/`, `hotspot/`) holds its detection (is
//! this mapped file the runtime, which version, the layout to publish to the kernel), the
//! [`Binary`] it detects, which publishes a process, the [`CodeReader`] a published process
//! names its code objects with, and the naming of its frames. Adding a runtime is a folder
//! with a type implementing [`Runtime`] and its line in [`RUNTIMES`] (and its kernel walker,
//! `ebpf/src/unwind/interp/`, and shared layout, `common/src/interp/`).

use std::{any::Any, fmt, path::Path, sync::Arc};

use tracekit_common::interp::{CodeKey, decode_frame};

use super::{
    CodeInfo, Interpreters, hotspot, php, python,
    registry::{self, CodeReader},
    ruby, v8,
};
use crate::unwind::process::ExecMapping;

/// Every runtime, in the order a mapped file's name is checked against them ([`detect`]),
/// and their `-v` report lines are written.
pub(crate) static RUNTIMES: &[&dyn Runtime] = &[
    &ruby::RUBY,
    &php::PHP,
    &hotspot::HOTSPOT,
    &v8::V8,
    &python::PYTHON,
];

/// An interpreter or JIT runtime whose frames the kernel records in the place of its native
/// frames: how it is found in a process, and how its frames are named.
pub(crate) trait Runtime: Sync {
    /// The kernel's tags of its frames ([`tracekit_common::interp::runtime`]), its own
    /// first (V8's replaced-code frames have a tag of their own).
    fn tags(&self) -> &'static [u8];

    /// The module column of its frames (`[python]`).
    fn module(&self) -> &'static str;

    /// Its name in the run's summary and JSON (`ruby`), lower case.
    fn name(&self) -> &'static str;

    /// The language its frames are of, as the summary says it (`Ruby frames not named`).
    fn language(&self) -> &'static str;

    /// Whether a mapped file named `name` (no directory) may be this runtime, by its name
    /// alone (no file is read).
    fn claims(&self, name: &str) -> bool;

    /// Whether its processes are published before their unwind tables are built
    /// ([`Interpreters::load_jit_process`]): runtimes the kernel walks by frame pointer
    /// (V8, HotSpot). The others' eval loops are found through the tables: a process that
    /// maps one has its tables built first ([`super::may_hold_interpreter`]).
    fn before_tables(&self) -> bool {
        false
    }

    /// Checks the mapped file at `path` (opened as `file`), which it [`Runtime::claims`]:
    /// the binary and its version's layout, or why its frames stay native.
    fn detect(&self, path: &str, file: &Path) -> Detected;

    /// The code object that frame `word` (holding code pointer `code`) names, `next` the
    /// word after it in the stack; `None` for a word that names none.
    fn code(&self, _word: u64, code: u64, _next: Option<u64>) -> Option<u64> {
        Some(code)
    }

    /// The symbols of a frame of code object `info` at `offset` (its runtime's unit), each
    /// with whether it is inlined into the one before; `leaf`: the frame is the stack's
    /// innermost.
    fn symbols(&self, info: &CodeInfo, offset: u32, leaf: bool) -> Vec<(String, bool)>;

    /// The symbols of encoded frame `word` of process `pid` (see [`super::frames`]): its code
    /// object's ([`code_symbols`]).
    fn frames(&self, pid: u32, word: u64, next: Option<u64>, leaf: bool) -> Vec<(String, bool)> {
        code_symbols(self, pid, word, next, leaf)
    }

    /// Reads the code object the kernel announced as `key` (see [`registry::remember_code`]):
    /// a generation of 0 is none.
    fn announced(&self, key: &CodeKey) {
        let generation = (key.generation != 0).then_some(key.generation);
        registry::remember_code(key.pid, key.code, generation);
    }

    /// Work done each time announcements are read ([`Interpreters::read_announced`]).
    fn poll(&self, _interpreters: &mut Interpreters) {}

    /// Its lines of the `-v` report, each after a newline.
    fn report(&self, _interpreters: &Interpreters) -> String {
        String::new()
    }
}

/// A binary a runtime detected, with what the kernel needs of it.
pub(crate) trait Binary: fmt::Debug + Send + Sync + Any {
    /// Publishes process `pid`, whose executable `mapping` (one of `mappings`) of `path` is
    /// this binary, to the kernel. Returns whether `pid`'s other mappings are left unchecked
    /// (it is published, or cannot be).
    fn load(
        &self,
        interpreters: &mut Interpreters,
        pid: u32,
        path: &str,
        mapping: &ExecMapping,
        mappings: &[ExecMapping],
    ) -> bool;
}

/// What a binary is, as far as runtimes go.
#[derive(Clone, Debug)]
pub(crate) enum Detected {
    /// A runtime's binary ([`Binary::load`] publishes it).
    Found(Arc<dyn Binary>),
    /// A runtime we cannot unwind, and why (for the report).
    Unsupported(Unsupported),
    /// Not a runtime.
    None,
}

/// Why a runtime's binary keeps its native frames.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unsupported {
    /// The runtime's [`Runtime::name`] (set by [`detect`]).
    pub runtime: &'static str,
    /// The runtime's version as the binary says it (`3.4.1`), when it was read.
    pub version: Option<String>,
    /// Why (`no layout for Ruby 3.4`).
    pub reason: String,
}

impl Detected {
    /// A runtime that keeps its native frames for `reason`, its version unread.
    pub(crate) fn unsupported(reason: impl Into<String>) -> Self {
        Self::Unsupported(Unsupported {
            runtime: "",
            version: None,
            reason: reason.into(),
        })
    }

    /// A runtime of `version` that keeps its native frames for `reason`.
    pub(crate) fn unsupported_version(
        version: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self::Unsupported(Unsupported {
            runtime: "",
            version: Some(version.into()),
            reason: reason.into(),
        })
    }

    /// A runtime's `binary`.
    pub(crate) fn found(binary: impl Binary) -> Self {
        Self::Found(Arc::new(binary))
    }

    /// The binary found, if it is a `T`.
    #[cfg(test)]
    pub(crate) fn binary<T: Binary + Clone>(&self) -> Option<T> {
        match self {
            Self::Found(binary) => (&**binary as &dyn Any).downcast_ref::<T>().cloned(),
            _ => None,
        }
    }
}

/// The file name of `path`.
pub(crate) fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Checks the mapped file at `path` (opened as `file`) for a runtime: the first in
/// [`RUNTIMES`] that claims its name decides (and is named in what it finds unsupported).
pub(crate) fn detect(path: &str, file: &Path) -> Detected {
    let name = file_name(path);
    match RUNTIMES.iter().find(|runtime| runtime.claims(name)) {
        Some(runtime) => match runtime.detect(path, file) {
            Detected::Unsupported(unsupported) => Detected::Unsupported(Unsupported {
                runtime: runtime.name(),
                ..unsupported
            }),
            detected => detected,
        },
        None => {
            super::unwalked::detect(name, path, file).map_or(Detected::None, Detected::Unsupported)
        }
    }
}

/// The language of runtime `name`'s frames, as the summary says it: a walked runtime's
/// ([`Runtime::language`]) or an unwalked one's.
pub(crate) fn language(name: &'static str) -> &'static str {
    runtime_named(name)
        .map(|runtime| runtime.language())
        .or_else(|| super::unwalked::language(name))
        .unwrap_or(name)
}

/// The runtime named `name` ([`Runtime::name`]).
pub(crate) fn runtime_named(name: &str) -> Option<&'static dyn Runtime> {
    RUNTIMES
        .iter()
        .copied()
        .find(|runtime| runtime.name() == name)
}

/// The runtime whose frames carry kernel tag `tag` (CPython for a tag no runtime has).
pub(crate) fn runtime_of(tag: u8) -> &'static dyn Runtime {
    RUNTIMES
        .iter()
        .copied()
        .find(|runtime| runtime.tags().contains(&tag))
        .unwrap_or(&python::PYTHON)
}

/// The code object encoded frame `word` names, `next` the word after it; `None` for a word
/// that is no frame, or names none.
pub(crate) fn frame_code(word: u64, next: Option<u64>) -> Option<u64> {
    let (tag, code, _) = decode_frame(word)?;
    runtime_of(tag).code(word, code, next)
}

/// The symbols of encoded frame `word` of `pid`, named by `runtime` from its code object,
/// read now if it was not yet; `[unknown]` when it cannot be read.
pub(crate) fn code_symbols<R: Runtime + ?Sized>(
    runtime: &R,
    pid: u32,
    word: u64,
    next: Option<u64>,
    leaf: bool,
) -> Vec<(String, bool)> {
    let info = decode_frame(word).zip(frame_code(word, next));
    let info = info.and_then(|((_, _, offset), code)| {
        registry::remember_code(pid, code, None);
        let registry = registry::registry();
        let info = registry.processes.get(&pid)?.codes.get(&code)?.clone()?;
        Some((info, offset))
    });
    match info {
        Some((info, offset)) => runtime.symbols(&info, offset, leaf),
        None => vec![(crate::stacks::UNKNOWN_SYMBOL.to_string(), false)],
    }
}

/// A frame named `function (file:LINE)`, of code object `info` at `line`.
pub(crate) fn at_line(info: &CodeInfo, line: i32) -> Vec<(String, bool)> {
    vec![(format!("{} ({}:{})", info.name, info.file, line), false)]
}

/// Whether `other` is a `T` that reads code objects as `this` does, by `same`.
pub(crate) fn same_reader<T: CodeReader>(
    this: &T,
    other: &dyn CodeReader,
    same: impl Fn(&T, &T) -> bool,
) -> bool {
    (other as &dyn Any)
        .downcast_ref::<T>()
        .is_some_and(|other| same(this, other))
}

/// The `T` a process's code reader is, if it is one.
pub(crate) fn reader_as<T: CodeReader>(reader: &dyn CodeReader) -> Option<&T> {
    (reader as &dyn Any).downcast_ref::<T>()
}
