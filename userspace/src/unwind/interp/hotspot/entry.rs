//! HotSpot's entry in the runtime table: how a JVM is found and published, and how its
//! frames are named.

use tracekit_common::interp::{CodeKey, runtime};

use super::{Binary, Layout, compiled, detect, frame_code, is_libjvm, lines, read_code};
use crate::unwind::{
    interp::{
        CodeInfo, Interpreters,
        registry::{CodeReader, remember_code},
        runtime::{Detected, Runtime, same_reader},
    },
    process::ExecMapping,
};

/// HotSpot (OpenJDK's JVM) in the runtime table.
pub struct HotSpot;

/// HotSpot's entry in `RUNTIMES`, the table of runtimes.
pub static HOTSPOT: HotSpot = HotSpot;

/// The module column of Java (HotSpot) frames.
pub const MODULE: &str = "[java]";

impl Runtime for HotSpot {
    fn tags(&self) -> &'static [u8] {
        &[runtime::HOTSPOT]
    }

    fn module(&self) -> &'static str {
        MODULE
    }

    fn name(&self) -> &'static str {
        "java"
    }

    fn language(&self) -> &'static str {
        "Java"
    }

    fn claims(&self, name: &str) -> bool {
        is_libjvm(name)
    }

    fn before_tables(&self) -> bool {
        true
    }

    fn detect(&self, _path: &str, file: &std::path::Path) -> Detected {
        detect(file)
    }

    /// An interpreted frame is named by its method and the fingerprint word after it.
    fn code(&self, word: u64, _code: u64, next: Option<u64>) -> Option<u64> {
        frame_code(word, next)
    }

    /// A compiled frame is its method and the methods inlined there; an interpreted one its
    /// method at the line of its bytecode index.
    fn symbols(&self, info: &CodeInfo, offset: u32, leaf: bool) -> Vec<(String, bool)> {
        if info.compiled.is_empty() {
            vec![(lines::symbol(info, offset), false)]
        } else {
            compiled::frames(info, offset, leaf)
        }
    }

    /// Every announced code object comes with its generation (0 included).
    fn announced(&self, key: &CodeKey) {
        remember_code(key.pid, key.code, Some(key.generation));
    }

    /// JVMs not readable yet are probed again.
    fn poll(&self, interpreters: &mut Interpreters) {
        interpreters.retry_hotspot();
    }

    fn report(&self, interpreters: &Interpreters) -> String {
        interpreters.pending_report()
    }
}

impl crate::unwind::interp::runtime::Binary for Binary {
    fn load(
        &self,
        interpreters: &mut Interpreters,
        pid: u32,
        path: &str,
        mapping: &ExecMapping,
        _mappings: &[ExecMapping],
    ) -> bool {
        // Interpreted Java frames, where the layout was read; else -v says why.
        interpreters.load_hotspot(pid, path, self, mapping)
    }
}

impl CodeReader for Layout {
    fn read_code(&self, pid: u32, code: u64, generation: Option<u16>) -> Option<CodeInfo> {
        read_code(pid, self, code, generation)
    }

    fn same(&self, other: &dyn CodeReader) -> bool {
        same_reader(self, other, |a, b| a == b)
    }
}
