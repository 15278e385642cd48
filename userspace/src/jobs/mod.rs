//! What the commands run, on the one session skeleton ([`crate::session`]): each job is a
//! [`crate::session::Collector`] plus its end-of-run output.
//!
//! - [`aggregate`]: engine requests read as counts or histograms (`hist`, `count`, and the
//!   [`tools`] of the table: `bitesize`, `biolatency`, `runqlat`, `syscount`, `funccount`,
//!   `funclatency`, ...);
//! - [`stacks`]: stack profiles (`profile` by CPU sampling; `stackcount`, `offcpu` through
//!   engine requests keyed by stack);
//! - [`trace`]: one line per event (`trace`);
//! - [`memleak`]: outstanding allocations by stack (`memleak`);
//! - [`stat`]: perf counters (`stat`);
//! - [`top`]: a live view (`top`);
//! - [`list`]: what can be traced (`list`).
//!
//! A command builds a request (or options) and hands it to its job with [`RunOptions`].

pub mod aggregate;
pub mod events;
pub mod list;
pub mod outstanding;
pub mod source;
pub mod stacks;
pub mod stat;
pub mod symbolic;
pub mod tools;
pub mod top;
pub mod trace;

use std::{path::PathBuf, time::Duration};

use crate::{
    Error, Result, output::Format, session::Scope, symbolize::debuginfo::DebugInfoOptions,
};

/// What every run takes from the command line: scope, timing, output, verbosity, and where
/// the jobs that name user frames find separate debug files.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// `-a`, `-p PID`, `-- CMD`.
    pub scope: Scope,
    /// `--cgroup PATH`: only tasks in that cgroup v2 subtree (with the scope: both hold).
    pub cgroup: Option<crate::cgroups::CgroupFilter>,
    /// `-d SECONDS`.
    pub duration: Option<Duration>,
    /// `-i SECONDS`.
    pub interval: Option<Duration>,
    /// `-o FILE`: the first one given.
    pub output: Option<PathBuf>,
    /// The other `-o FILE`s, in order (stack profiles write each; other commands refuse
    /// more than one).
    pub more_outputs: Vec<PathBuf>,
    /// `--json`.
    pub json: bool,
    /// `-v` count.
    pub verbose: u8,
    /// Separate debug files for user frames (`--offline`, `--debuginfod-timeout`): the jobs
    /// that symbolize user stacks (stacks, trace, top) build their symbolizer with it.
    pub debug_info: DebugInfoOptions,
}

impl RunOptions {
    /// A usage error when `-p` names only kernel threads and the run sees only user code
    /// (`consequence`: what then never shows), see [`crate::procmaps::refuse_kernel_threads`].
    ///
    /// # Errors
    /// A usage error naming the threads.
    pub fn refuse_kernel_threads(&self, consequence: &str) -> Result<()> {
        match &self.scope {
            Scope::Pids(pids) => crate::procmaps::refuse_kernel_threads(pids, consequence),
            _ => Ok(()),
        }
    }

    /// `-- CMD`'s program (`argv[0]`): the unwind tables it needs first are built before it
    /// runs. `None` for `-a` and `-p`.
    pub fn command_program(&self) -> Option<PathBuf> {
        match &self.scope {
            Scope::Command(argv) => argv.first().map(PathBuf::from),
            _ => None,
        }
    }

    /// The `-o` file's format, refusing what `command` cannot write (only stack commands
    /// write `.folded`, `.svg` and `.pb.gz`).
    pub fn file_format(&self, command: &str, stacks: bool) -> Result<Option<Format>> {
        let offered: &[Format] = if stacks {
            &Format::EXTENSIONS.map(|(_, format)| format)
        } else {
            &[Format::Text, Format::Json]
        };
        let format = self
            .output
            .as_deref()
            .map(|path| Format::from_path_among(path, offered))
            .transpose()?;
        if !stacks && let Some(format) = format.filter(|f| f.stacks_only()) {
            let ext = Format::EXTENSIONS
                .iter()
                .find(|(_, f)| *f == format)
                .map_or("", |(ext, _)| ext);
            return Err(Error::usage(format!(
                "-o {}: {command} writes .txt or .json, not .{ext}",
                crate::error::quote(
                    &self
                        .output
                        .as_ref()
                        .expect("a format has a path")
                        .to_string_lossy()
                ),
            )));
        }
        if !stacks && !self.more_outputs.is_empty() {
            return Err(Error::usage(format!(
                "-o given {} times: {command} writes one file; profiles, histograms and \
                 counts take several",
                1 + self.more_outputs.len()
            )));
        }
        Ok(format)
    }

    /// `-d` as "for N s" in start lines.
    fn session(&self, command: &str, needs_bpf: bool) -> crate::session::Options {
        crate::session::Options {
            command: command.to_string(),
            scope: self.scope.clone(),
            cgroup: self.cgroup,
            duration: self.duration,
            interval: self.interval,
            needs_bpf,
            banner: None,
        }
    }
}

/// Writes to stdout through `write`, flushing; a closed pipe is an error whose cause the
/// binary recognizes (exit 0).
pub(crate) fn to_stdout(
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<()> {
    to_writer(&mut std::io::stdout().lock(), write)
}

/// Writes to `out` (stdout, or a buffer in tests) as [`to_stdout`] does.
pub(crate) fn to_writer(
    out: &mut dyn std::io::Write,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<()> {
    write(&mut *out)
        .and_then(|()| out.flush())
        .map_err(stdout_error)
}

/// Prints `text` on stdout.
pub fn print(text: &str) -> Result<()> {
    to_stdout(|out| out.write_all(text.as_bytes()))
}

/// An error writing to stdout.
pub(crate) fn stdout_error(err: std::io::Error) -> Error {
    Error::Runtime {
        what: "writing to stdout".into(),
        source: Some(Box::new(err)),
    }
}

/// Whether `err` is a write to a closed pipe (the reader, say `head`, has gone).
pub(crate) fn is_broken_pipe(err: &Error) -> bool {
    match err {
        Error::Runtime {
            source: Some(source),
            ..
        } => source
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe),
        _ => false,
    }
}

/// The number of online CPUs.
pub fn online_cpus() -> usize {
    aya::util::online_cpus().map(|cpus| cpus.len()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::*;

    fn options(output: Option<&str>, more: &[&str]) -> RunOptions {
        RunOptions {
            scope: Scope::All,
            cgroup: None,
            duration: None,
            interval: None,
            output: output.map(PathBuf::from),
            more_outputs: more.iter().map(PathBuf::from).collect(),
            json: false,
            verbose: 0,
            debug_info: DebugInfoOptions::default(),
        }
    }

    #[test]
    fn file_format_by_extension() {
        assert_eq!(
            options(None, &[]).file_format("count", false).unwrap(),
            None
        );
        assert_eq!(
            options(Some("out.json"), &[])
                .file_format("count", false)
                .unwrap(),
            Some(Format::Json)
        );
        assert_eq!(
            options(Some("out.folded"), &[])
                .file_format("profile", true)
                .unwrap(),
            Some(Format::Folded)
        );
    }

    /// Formats only stack profiles write are refused by the others, naming the command.
    #[test]
    fn file_format_refuses_stack_formats_elsewhere() {
        let err = options(Some("out.folded"), &[])
            .file_format("count", false)
            .unwrap_err();
        assert!(matches!(err, Error::Usage(_)), "{err:?}");
        assert!(
            err.to_string().contains("count writes .txt or .json"),
            "{err}"
        );
    }

    #[test]
    fn file_format_refuses_several_files_but_for_stacks() {
        let two = options(Some("a.json"), &["b.txt"]);
        let err = two.file_format("trace", false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "-o given 2 times: trace writes one file; profiles, histograms and counts take several"
        );
        let stacks = options(Some("a.folded"), &["b.svg"]);
        assert_eq!(
            stacks.file_format("profile", true).unwrap(),
            Some(Format::Folded)
        );
    }

    #[test]
    fn command_program_is_argv0_of_a_command() {
        let mut run = options(None, &[]);
        assert_eq!(run.command_program(), None);
        run.scope = Scope::Command(vec!["/bin/sleep".into(), "1".into()]);
        assert_eq!(run.command_program(), Some(PathBuf::from("/bin/sleep")));
        run.scope = Scope::Pids(vec![1]);
        assert_eq!(run.command_program(), None);
    }

    /// A closed pipe is recognized through the error `to_writer` makes (the binary exits
    /// 0 for it); other write errors are not.
    #[test]
    fn broken_pipes_are_told_from_other_errors() {
        struct Failing(io::ErrorKind);
        impl io::Write for Failing {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(self.0.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let write = |kind| to_writer(&mut Failing(kind), |out| out.write_all(b"x")).unwrap_err();
        assert!(is_broken_pipe(&write(io::ErrorKind::BrokenPipe)));
        let other = write(io::ErrorKind::StorageFull);
        assert!(!is_broken_pipe(&other));
        assert!(other.to_string().contains("writing to stdout"), "{other}");
        assert!(!is_broken_pipe(&Error::usage("x")));
    }

    #[test]
    fn to_writer_flushes() {
        let mut out = io::BufWriter::new(Vec::new());
        to_writer(&mut out, |w| w.write_all(b"line\n")).unwrap();
        assert_eq!(out.buffer(), b"");
        assert_eq!(out.get_ref(), b"line\n");
    }
}
