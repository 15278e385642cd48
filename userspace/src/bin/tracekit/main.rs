//! `tracekit`: the command-line front end. Glue only: parsing, exit codes, error lines. The
//! commands are in `commands/`, one file each; the flags they share in `cli/`.
//!
//! Exit status: 0 on success (and on a closed stdout pipe), 2 for bad input, 1 for failures
//! at run time. Every error is one line on stderr, `tracekit: ...`.

mod cli;
mod commands;
#[cfg(test)]
mod generated;
mod logger;

use std::process::ExitCode;

use clap::{ArgAction, Parser, error::ErrorKind};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit profile -a -d 10 -o profile.svg   # flame graph of the whole machine, 10 s at 99 Hz
  tracekit profile -p 1234 -d 5              # hottest functions of pid 1234 for 5 s
  tracekit profile -o out.folded -- ./app    # run ./app, fold its stacks until it exits
  tracekit hist block:block_rq_issue --value bytes --by comm   # I/O sizes per process
  tracekit count 'syscalls:sys_enter_*' -d 5 # which syscalls, how often
  tracekit syscount -p 1234 --latency        # syscalls of pid 1234 with time spent
  tracekit biolatency -d 10                  # block I/O latency histogram
  tracekit runqlat -d 10                     # how long runnable tasks wait for a CPU
  tracekit hist uprobe:libc:malloc --value arg0 -p 1234     # malloc sizes of pid 1234
  tracekit funclatency vfs_read --unit us    # kernel function latency histogram
  tracekit trace 'k:tcp_sendmsg' --filter 'size > 100' --print size
  tracekit stat -e 'syscalls:sys_enter_*' -- ./app  # perf stat, tracepoints included
  tracekit top -e raw_syscalls:sys_enter --sort comm   # syscalls per process, live
  tracekit offcpu -p 1234 -d 10 -o offcpu.svg          # where pid 1234 waits";

/// eBPF tracing toolkit: profiles, counts and histograms of any event, aggregated in the kernel.
#[derive(Debug, Parser)]
#[command(name = "tracekit", version, after_help = EXAMPLES, propagate_version = true)]
pub struct Cli {
    /// Say more: -v prints timings and own CPU time, -vv debug logs
    #[arg(short, long, global = true, action = ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: commands::Command,
}

/// The static build's allocator. musl's malloc returns large freed blocks to the kernel
/// at once: `profile -a` at 999 Hz made ~20k mmap/munmap calls per 3 s and cost 1.7x the
/// glibc build's CPU (`cargo xtask bench profile`). mimalloc keeps freed pages for reuse
/// and purges them after a short delay. The glibc build keeps glibc's malloc.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use clap::CommandFactory as _;

    use super::*;

    /// Each short flag means one thing (has one long name) in every command, and the
    /// flags perf and bcc users know mean what they mean there.
    #[test]
    fn short_flags_mean_one_thing() {
        fn walk(cmd: &clap::Command, path: &str, seen: &mut Shorts) {
            for arg in cmd.get_arguments() {
                if let Some(short) = arg.get_short() {
                    let long = arg
                        .get_long()
                        .map(|long| format!("--{long}"))
                        .unwrap_or_else(|| format!("<{}>", arg.get_id()));
                    let users = seen.entry(short).or_default().entry(long).or_default();
                    users.push(path.to_string());
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), seen);
            }
        }
        type Shorts = BTreeMap<char, BTreeMap<String, Vec<String>>>;
        let mut cli = Cli::command();
        cli.build();
        let mut seen = Shorts::new();
        walk(&cli, "tracekit", &mut seen);
        let conflicts: Vec<String> = seen
            .iter()
            .filter(|(_, longs)| longs.len() > 1)
            .map(|(short, longs)| format!("-{short}: {longs:?}"))
            .collect();
        assert!(conflicts.is_empty(), "{}", conflicts.join("\n"));
        for (short, long) in [
            ('F', "--frequency"),
            ('p', "--pid"),
            ('a', "--all-cpus"),
            ('d', "--duration"),
            ('e', "--event"),
            ('i', "--interval"),
            ('o', "--output"),
            ('K', "--kernel-stack"),
            ('U', "--user-stack"),
            ('L', "--latency"),
            ('v', "--verbose"),
        ] {
            let longs: Vec<&String> = seen[&short].keys().collect();
            assert_eq!(longs, [long], "-{short}");
        }
    }

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_command_has_a_summary_and_examples() {
        for command in Cli::command().get_subcommands_mut() {
            let name = command.get_name().to_string();
            let summary = command
                .get_about()
                .map(ToString::to_string)
                .unwrap_or_default();
            assert!(!summary.is_empty(), "{name} has no one-line summary");
            let help = command.render_long_help().to_string();
            assert!(
                help.contains("EXAMPLES:\n  tracekit"),
                "{name}: no examples\n{help}"
            );
        }
    }

    /// `--last` and `--last-key` parse on each command that takes them.
    #[test]
    fn last_value_flags_parse() {
        for command in ["hist", "count", "trace"] {
            let cli = Cli::try_parse_from([
                "tracekit",
                command,
                "software:cpu-clock:99hz",
                "--last",
                "power:cpu_frequency",
                "--last-key",
                "cpu_id=cpu",
            ])
            .unwrap_or_else(|err| panic!("{command}: {err}"));
            let last = match cli.command {
                commands::Command::Builtin(commands::Builtin::Hist(args)) => args.last,
                commands::Command::Builtin(commands::Builtin::Count(args)) => args.last,
                commands::Command::Builtin(commands::Builtin::Trace(args)) => args.last,
                _ => unreachable!(),
            };
            assert_eq!(
                last.last_key.map(|key| key.0),
                Some(vec![("cpu_id".to_string(), "cpu".to_string())]),
                "{command}"
            );
        }
    }

    #[test]
    fn map_sizes_are_checked_by_clap() {
        let err = Cli::try_parse_from([
            "tracekit",
            "count",
            "sched:sched_switch",
            "--max-groups",
            "0",
        ])
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with(
                "error: invalid value '0' for '--max-groups <N>': expected 1 to 134217728 entries"
            ),
            "{err}"
        );
    }

    /// `--call-graph` and `--unwind-table-budget` mean the same on every command that walks
    /// user stacks; the budget is MiB of kernel memory, 1 to the shards' 512 MiB ceiling.
    #[test]
    fn unwind_flags_on_every_stack_command() {
        let parsed = |args: &[&str]| {
            let mut all = vec!["tracekit"];
            all.extend_from_slice(args);
            Cli::try_parse_from(all).map_err(|err| err.to_string())
        };
        for command in [
            &["profile"][..],
            &["stackcount", "sched:sched_switch"],
            &["offcpu"],
            &["trace", "sched:sched_switch", "--user-stack"],
        ] {
            let mut args = command.to_vec();
            args.extend(["--call-graph", "fp", "--unwind-table-budget", "16"]);
            assert!(parsed(&args).is_ok(), "{args:?}: {:?}", parsed(&args).err());
            for bad in ["0", "513"] {
                let mut args = command.to_vec();
                args.extend(["--unwind-table-budget", bad]);
                let err = parsed(&args).unwrap_err();
                assert!(
                    err.starts_with(&format!(
                        "error: invalid value '{bad}' for '--unwind-table-budget <MIB>': {bad} is \
                         not in 1..=512"
                    )),
                    "{err}"
                );
            }
        }
    }
}
