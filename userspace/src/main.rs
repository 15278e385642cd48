//! `tracekit`: the command-line front end. Glue only: parsing, exit codes, error lines. The
//! commands are in `tools/`, one file each; the flags they share in `cli/`.
//!
//! Exit status: 0 on success (and on a closed stdout pipe), 2 for bad input, 1 for failures
//! at run time. Every error is one line on stderr, `tracekit: ...`.

mod cli;
mod logger;
mod tools;

use std::process::ExitCode;

use clap::{Parser as _, error::ErrorKind};

use crate::cli::Cli;

fn main() -> ExitCode {
    fixed_malloc_thresholds();
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        eprintln!("tracekit: internal error{location}: {message} (please report this)");
    }));

    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return clap_error(err),
    };
    logger::init(cli.verbose);
    match cli.command.run(cli.verbose) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => report(&err),
    }
}

/// Big allocations (an unwind table being built, a large symbol table) are mapped on their
/// own and unmapped when freed. glibc's default raises its mmap and trim thresholds each time
/// a big mapped block is freed (up to 32 MiB), after which such blocks come from the arenas,
/// and a thread's arena keeps its top however often it is trimmed: `profile -a -i 1` kept 28
/// MiB of heap for the rest of its run once the unwinder had built rustc's tables; 1.7 MiB
/// with fixed thresholds. Set before any thread starts.
fn fixed_malloc_thresholds() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt(3) with documented parameters, before other threads exist.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 128 * 1024);
    }
}

/// Prints an error as one line (the error, then each distinct cause) and picks the status.
fn report(err: &tracekit::Error) -> ExitCode {
    let mut parts = vec![first_line(&err.to_string())];
    let mut source = std::error::Error::source(err);
    let mut broken_pipe = false;
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            broken_pipe |= io.kind() == std::io::ErrorKind::BrokenPipe;
        }
        let line = first_line(&cause.to_string());
        if !parts.iter().any(|part| part.contains(&line)) {
            parts.push(line);
        }
        source = cause.source();
    }
    if broken_pipe {
        return ExitCode::SUCCESS;
    }
    // Messages quote inputs through `error::quote`; this bounds any that does not.
    eprintln!(
        "tracekit: {}",
        tracekit::error::clip_line(&parts.join(": "))
    );
    ExitCode::from(err.exit_code())
}

/// The first line of a message (verifier logs run to thousands of lines; -vv logs them).
fn first_line(message: &str) -> String {
    let mut lines = message.lines();
    let first = lines.next().unwrap_or("").trim_end().to_string();
    if lines.next().is_some() {
        log::debug!("{message}");
        format!("{first} [...]")
    } else {
        first
    }
}

/// Clap's errors, reduced to one line: the error and clap's tip, if any. Exit status 2.
fn clap_error(err: clap::Error) -> ExitCode {
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = err.print();
            return ExitCode::SUCCESS;
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = err.print();
            return ExitCode::from(2);
        }
        _ => {}
    }
    let rendered = err.render().to_string();
    let mut parts = Vec::new();
    for line in rendered.lines().map(str::trim) {
        if let Some(message) = line.strip_prefix("error: ") {
            parts.push(message.to_string());
        } else if let Some(tip) = line.strip_prefix("tip: ") {
            parts.push(tip.to_string());
        } else if let Some(values) = line
            .strip_prefix("[possible values: ")
            .and_then(|rest| rest.strip_suffix(']'))
        {
            // What would be valid, for value enums (`--by line`).
            parts.push(format!("possible values: {values}"));
        }
    }
    if parts.is_empty() {
        parts.push(rendered.trim().replace('\n', " "));
    }
    let line = parts
        .iter()
        .map(|part| quote_clap_values(part))
        .collect::<Vec<_>>()
        .join("; ");
    eprintln!(
        "tracekit: {} (see --help)",
        tracekit::error::clip_line(&line)
    );
    ExitCode::from(2)
}

/// Clap quotes the argument it refuses in single quotes, whole: quote them as tracekit's
/// own messages do (at most 80 characters).
fn quote_clap_values(message: &str) -> String {
    message
        .split('\'')
        .enumerate()
        .map(|(i, piece)| {
            if i % 2 == 1 {
                tracekit::error::quote(piece)
            } else {
                piece.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("'")
}
