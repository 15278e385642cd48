//! Source lines of sampled instructions, from DWARF line tables (through blazesym's code
//! info): what `profile --by line` reports, perf's `-g srcline` and `perf annotate`'s use
//! without the disassembly.
//!
//! Only the leaf of a sample has a line that was running; callers' lines are call sites.
//! A sample whose leaf is in the kernel (a syscall, a page fault) is not attributed to a
//! user line: [`LineProfile::in_kernel`] counts them. Where the compiler inlined a function,
//! the line is the inlined function's own, under its name (the innermost frame).
//! [`crate::cpu_sampler::leaf_lines`] sorts a profile's samples by line.

use blazesym::{
    Pid,
    symbolize::{CodeInfo, Input, Symbolized, source::Process, source::Source},
};

use super::{Symbolizer, demangle, is_alive};

/// Where a user instruction is in the source.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceLine {
    /// The innermost function at the address (an inlined function where DWARF says so).
    pub function: String,
    /// The binary or library, as the process mapped it.
    pub module: Option<String>,
    /// The source file as DWARF names it (its directory joined, when DWARF gives one);
    /// `None` when the binary has no line information there.
    pub file: Option<String>,
    /// The line, 1-based; `None` when unknown.
    pub line: Option<u32>,
}

impl SourceLine {
    /// `file:line` (`tk_lines.c:23`, the file's name only), or `??:?` as addr2line shows
    /// an address without line information.
    pub fn location(&self) -> String {
        let file = self
            .file
            .as_deref()
            .map(|f| f.rsplit('/').next().unwrap_or(f))
            .unwrap_or("??");
        match self.line {
            Some(line) => format!("{file}:{line}"),
            None => format!("{file}:?"),
        }
    }
}

/// Samples by the source line of their leaf.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineProfile {
    /// Each distinct line with its samples, in no order.
    pub lines: Vec<(SourceLine, u64)>,
    /// Samples whose leaf was in the kernel.
    pub in_kernel: u64,
    /// Samples without a user stack to take a leaf from (kernel threads, lost stacks).
    pub no_user_stack: u64,
}

impl LineProfile {
    /// Adds `other`'s samples (an interval's) to these.
    pub fn add(&mut self, other: &LineProfile) {
        for (line, count) in &other.lines {
            match self.lines.iter_mut().find(|(known, _)| known == line) {
                Some((_, known)) => *known += count,
                None => self.lines.push((line.clone(), *count)),
            }
        }
        self.in_kernel += other.in_kernel;
        self.no_user_stack += other.no_user_stack;
    }
}

impl Symbolizer {
    /// The function and source line of the instruction at `addr` in process `pid` (a
    /// sampled instruction, not a return address). Needs [`super::SymbolizerOptions::lines`]
    /// (or `inlined`) for the line; `None` when no symbol covers the address.
    pub fn user_line(&self, pid: u32, addr: u64) -> Option<SourceLine> {
        self.reap_exited();
        self.state.borrow_mut().prepare(pid);
        let mut source = Process::new(Pid::from(pid));
        source.perf_map = false;
        // As in `user_stack`: map_files while it lives, remembered paths after.
        let alive = is_alive(pid);
        source.map_files = !self.remembered.contains(&pid) || alive;
        let Ok(Symbolized::Sym(sym)) = self
            .inner
            .symbolize_single(&Source::Process(source), Input::AbsAddr(addr))
        else {
            return None;
        };
        let module = sym
            .module
            .as_ref()
            .map(|m| m.to_string_lossy().into_owned());
        // blazesym gives the outer function the call site of its first inlined callee, and
        // the innermost inlined function the line that was running.
        let (function, info): (&str, Option<&CodeInfo<'_>>) = match sym.inlined.last() {
            Some(inlined) => (&inlined.name, inlined.code_info.as_ref()),
            None => (&sym.name, sym.code_info.as_deref()),
        };
        Some(SourceLine {
            function: demangle(function).into_owned(),
            module,
            file: info.map(|info| match &info.dir {
                Some(dir) if !dir.as_os_str().is_empty() => {
                    dir.join(&info.file).to_string_lossy().into_owned()
                }
                _ => info.file.to_string_lossy().into_owned(),
            }),
            line: info.and_then(|info| info.line),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbolize::SymbolizerOptions;

    fn at(function: &str, line: u32) -> SourceLine {
        SourceLine {
            function: function.into(),
            module: Some("/bin/x".into()),
            file: Some("/src/x.c".into()),
            line: Some(line),
        }
    }

    /// Intervals add up line by line, and their unattributed samples too.
    #[test]
    fn intervals_add_up() {
        let mut whole = LineProfile::default();
        whole.add(&LineProfile {
            lines: vec![(at("hot", 20), 90), (at("hot", 19), 3)],
            in_kernel: 2,
            no_user_stack: 0,
        });
        whole.add(&LineProfile {
            lines: vec![(at("hot", 20), 80), (at("main", 30), 1)],
            in_kernel: 1,
            no_user_stack: 4,
        });
        assert_eq!(
            whole,
            LineProfile {
                lines: vec![
                    (at("hot", 20), 170),
                    (at("hot", 19), 3),
                    (at("main", 30), 1)
                ],
                in_kernel: 3,
                no_user_stack: 4,
            }
        );
    }

    #[inline(never)]
    fn line_marker() -> u64 {
        std::hint::black_box(11)
    }

    /// An address of this test binary names this file and the function's line range.
    #[test]
    fn own_function_has_a_line() {
        let symbolizer = Symbolizer::with_options(SymbolizerOptions {
            inlined: false,
            lines: true,
            ..SymbolizerOptions::default()
        });
        let addr = line_marker as *const () as u64;
        let line = symbolizer.user_line(std::process::id(), addr).unwrap();
        assert!(line.function.ends_with("line_marker"), "{line:?}");
        assert!(
            line.file
                .as_deref()
                .unwrap_or("")
                .ends_with("symbolize/lines.rs"),
            "{line:?}"
        );
        let first = include_str!("lines.rs")
            .lines()
            .position(|l| l.contains("fn line_marker() -> u64"))
            .unwrap() as u32
            + 1;
        assert!(
            line.line.is_some_and(|l| (first..first + 3).contains(&l)),
            "{line:?} (want {first}..{})",
            first + 3
        );
        assert!(line.location().starts_with("lines.rs:"), "{line:?}");
    }

    #[test]
    fn locations_as_addr2line_shows_them() {
        let mut line = SourceLine {
            function: "f".into(),
            module: None,
            file: Some("/src/app/main.c".into()),
            line: Some(23),
        };
        assert_eq!(line.location(), "main.c:23");
        line.line = None;
        assert_eq!(line.location(), "main.c:?");
        line.file = None;
        assert_eq!(line.location(), "??:?");
    }
}
