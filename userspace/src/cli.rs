//! Command-line interface. Flags mean the same in every subcommand, as in perf and bcc:
//! `-F HZ`, `-p PID`, `-a`, `-- CMD ARGS`, `-d SECONDS`, `-i SECONDS`, `-o FILE`, `--json`.

use std::{ffi::OsString, path::PathBuf};

use clap::{ArgAction, Args, Parser, Subcommand};
use tracekit::profile::ProfileOptions;
use tracekit_common::profile::{DEFAULT_COUNT_MAP_ENTRIES, DEFAULT_STACK_MAP_ENTRIES};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit profile -a -d 10 -o profile.svg   # flame graph of the whole machine, 10 s at 99 Hz
  tracekit profile -p 1234 -d 5              # hottest functions of pid 1234 for 5 s
  tracekit profile -o out.folded -- ./app    # run ./app, fold its stacks until it exits";

const PROFILE_EXAMPLES: &str = "\
EXAMPLES:
  tracekit profile                           # all processes until Ctrl-C; top 20 functions
  tracekit profile -a -d 10 -o profile.svg   # whole machine for 10 s; flame graph
  tracekit profile -F 999 -p 1234,1235 -d 5  # two processes at 999 Hz for 5 s
  tracekit profile -o app.folded -- ./app    # run ./app; folded stacks until it exits
  tracekit profile -d 30 -i 5                # report every 5 s for 30 s
  tracekit profile --kernel-only -d 5 --json # kernel stacks only, as JSON

Output by -o FILE's extension: .txt (report), .folded (flamegraph.pl/inferno input),
.svg (flame graph), .json. Kernel frames in folded stacks end in _[k].";

/// eBPF tracing toolkit: CPU profiles and flame graphs, aggregated in the kernel.
#[derive(Debug, Parser)]
#[command(name = "tracekit", version, after_help = EXAMPLES, propagate_version = true)]
pub struct Cli {
    /// Say more: -v prints timings and own CPU time, -vv debug logs
    #[arg(short, long, global = true, action = ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Sample on-CPU stacks (perf record -g + flame graph, bcc profile)
    #[command(after_help = PROFILE_EXAMPLES)]
    Profile(ProfileArgs),
}

/// Which processes to trace: `-a` (the default), `-p PID,...`, or `-- CMD ARGS`.
#[derive(Debug, Args)]
pub struct ScopeArgs {
    /// Trace every process on every CPU (the default)
    #[arg(short = 'a', long = "all-cpus")]
    pub all: bool,
    /// Trace only these processes (comma-separated pids); ends when they have all exited
    #[arg(
        short = 'p',
        long = "pid",
        value_name = "PID[,PID...]",
        value_delimiter = ','
    )]
    pub pids: Vec<u32>,
    /// Run CMD with ARGS, trace it and its children, and end when it exits
    #[arg(last = true, value_name = "CMD [ARGS]")]
    pub command: Vec<OsString>,
}

/// The scope, checked for contradictions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every process.
    All,
    /// These running processes.
    Pids(Vec<u32>),
    /// A command to start.
    Command(Vec<OsString>),
}

impl ScopeArgs {
    /// The one scope these flags ask for; a usage error when they contradict each other.
    pub fn scope(&self) -> tracekit::Result<Scope> {
        let chosen = [self.all, !self.pids.is_empty(), !self.command.is_empty()];
        if chosen.iter().filter(|&&c| c).count() > 1 {
            return Err(tracekit::Error::usage(
                "choose one scope: -a (every process), -p PID (running processes) \
                 or -- CMD (a command to start)",
            ));
        }
        Ok(if !self.pids.is_empty() {
            Scope::Pids(self.pids.clone())
        } else if !self.command.is_empty() {
            Scope::Command(self.command.clone())
        } else {
            Scope::All
        })
    }
}

/// How long to trace and how often to print.
#[derive(Debug, Args)]
pub struct TimingArgs {
    /// Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits
    #[arg(short = 'd', long = "duration", value_name = "SECONDS", value_parser = parse_seconds)]
    pub duration: Option<f64>,
    /// Also print what was gathered in each interval of SECONDS
    #[arg(short = 'i', long = "interval", value_name = "SECONDS", value_parser = parse_seconds)]
    pub interval: Option<f64>,
}

/// Where results go.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Write the result to FILE, in the format its extension names (.txt .folded .svg .json)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Print JSON on stdout instead of text
    #[arg(long)]
    pub json: bool,
}

/// `tracekit profile`.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// Sample at HZ samples per second per CPU
    #[arg(
        short = 'F',
        long = "frequency",
        value_name = "HZ",
        default_value_t = 99
    )]
    pub frequency: u64,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub timing: TimingArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Record kernel stacks only
    #[arg(long, conflicts_with = "user_only")]
    pub kernel_only: bool,
    /// Record user stacks only
    #[arg(long)]
    pub user_only: bool,
    /// Also count samples of idle CPUs (the swapper task, pid 0)
    #[arg(long)]
    pub include_idle: bool,
    /// Do not show inlined functions as frames (skips reading DWARF line tables)
    #[arg(long)]
    pub no_inline: bool,
    /// Rows in the text report
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub top: usize,
    /// Distinct stacks the kernel keeps; each costs ~1 KiB of kernel memory, allocated up front
    #[arg(long, value_name = "N", default_value_t = DEFAULT_STACK_MAP_ENTRIES)]
    pub stack_storage_size: u32,
    /// Distinct (pid, comm, stacks) keys the kernel counts
    #[arg(long, value_name = "N", default_value_t = DEFAULT_COUNT_MAP_ENTRIES)]
    pub count_map_size: u32,
}

impl ProfileArgs {
    /// The kernel-side options for a checked frequency and the selected pids.
    pub fn options(&self, frequency_hz: u64, pids: Option<Vec<u32>>) -> ProfileOptions {
        ProfileOptions {
            frequency_hz,
            follow_children: !self.scope.command.is_empty(),
            pids,
            include_idle: self.include_idle,
            kernel_stacks: !self.user_only,
            user_stacks: !self.kernel_only,
            stack_map_entries: self.stack_storage_size,
            count_map_entries: self.count_map_size,
        }
    }
}

/// Parses a positive number of seconds, fractions allowed.
pub fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds > 0.0 && seconds < 1e9 => Ok(seconds),
        _ => Err("expected a positive number of seconds, like 10 or 0.5".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_profile_flags() {
        let cli = Cli::try_parse_from([
            "tracekit", "profile", "-F", "999", "-p", "1,2", "-d", "1.5", "-o", "x.svg",
        ])
        .unwrap();
        let Command::Profile(args) = cli.command;
        assert_eq!(args.frequency, 999);
        assert_eq!(args.scope.scope().unwrap(), Scope::Pids(vec![1, 2]));
        assert_eq!(args.timing.duration, Some(1.5));
        assert_eq!(args.output.output, Some(PathBuf::from("x.svg")));
    }

    #[test]
    fn command_after_double_dash() {
        let cli = Cli::try_parse_from(["tracekit", "profile", "--", "ls", "-l"]).unwrap();
        let Command::Profile(args) = cli.command;
        assert_eq!(
            args.scope.scope().unwrap(),
            Scope::Command(vec!["ls".into(), "-l".into()])
        );
    }

    #[test]
    fn contradicting_scopes_are_refused() {
        let cli = Cli::try_parse_from(["tracekit", "profile", "-p", "1", "--", "ls"]).unwrap();
        let Command::Profile(args) = cli.command;
        assert_eq!(
            args.scope.scope().unwrap_err().to_string(),
            "choose one scope: -a (every process), -p PID (running processes) \
             or -- CMD (a command to start)"
        );
    }

    #[test]
    fn seconds_must_be_positive() {
        assert_eq!(parse_seconds("0.5"), Ok(0.5));
        assert!(parse_seconds("0").is_err());
        assert!(parse_seconds("-3").is_err());
        assert!(parse_seconds("ten").is_err());
    }
}
