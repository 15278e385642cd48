//! `cargo xtask`: tracekit's developer tasks.
//!
//! - `setup`: install what building the kernel programs needs, and nothing else;
//! - `build`, `run -- ARGS`: set up, then build (and run) the release binary;
//! - `test`: set up, unit tests, then the root integration tests one at a time;
//! - `bench`: benchmarks against perf and bpftrace;
//! - `fuzz`: the libFuzzer targets of the parsers, for a bounded time;
//! - `dist`: man pages, completions, a static binary and a .deb, in `target/dist/`.

mod bench;
mod dist;
mod exporter_bench;
mod fuzz;
mod setup;
mod soak;
mod util;
mod vm;

use std::{ffi::OsString, process::ExitCode};

use anyhow::{Context as _, Result, bail};
use clap::{Parser, Subcommand};

use crate::util::{Cmd, workspace_root};

/// tracekit's developer tasks.
#[derive(Parser)]
#[command(
    name = "cargo xtask",
    after_help = "\
EXAMPLES:
  cargo xtask setup                                # install the BPF toolchain if missing
  cargo xtask run -- profile -a -d 10 -o out.svg   # build release, profile the machine
  cargo xtask test                                 # unit + root integration tests
  cargo xtask test --integration profile_sigint    # integration tests matching a name
  cargo xtask test --vm                            # kprobe/fentry tests in Debian kernels
  cargo xtask bench profile                        # tracekit vs perf vs bpftrace
  cargo xtask bench soak --minutes 60              # memory and CPU over an hour of churn
  cargo xtask bench exporter --minutes 60          # the exporter's memory, CPU, scrape time
  cargo xtask fuzz --seconds 60                    # fuzz the filter and probe parsers
  cargo xtask dist                                 # static binary + .deb in target/dist/"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Install the nightly rust-src, LLVM and bpf-linker the kernel programs need
    Setup,
    /// Set up, then build the release binary (target/release/tracekit)
    Build,
    /// Set up, build the release binary, and run it with ARGS
    Run {
        /// Arguments for tracekit
        #[arg(last = true)]
        args: Vec<OsString>,
    },
    /// Set up, run the unit tests, the integration tests as root one at a time, then the
    /// kernel matrix (kprobe and fentry tests in Debian 6.1 and 6.12 kernels under qemu)
    Test {
        /// Only the unit tests (no root needed)
        #[arg(long, conflicts_with_all = ["integration", "vm"])]
        unit: bool,
        /// Only the integration tests on this machine's kernel
        #[arg(long, conflicts_with = "vm")]
        integration: bool,
        /// Only the kernel matrix in VMs
        #[arg(long)]
        vm: bool,
        /// Run only integration tests whose name contains FILTER
        filter: Option<String>,
    },
    /// Benchmarks: tracekit against perf and bpftrace on the same workload
    /// (TRACEKIT_BIN=PATH measures that binary instead of target/release/tracekit)
    Bench {
        #[command(subcommand)]
        bench: bench::Bench,
    },
    /// Fuzz the filter language and probe specs with libFuzzer (nightly; installs
    /// cargo-fuzz if missing), each target for SECONDS
    Fuzz {
        /// Run time of each target, build not included
        #[arg(long, default_value_t = 60)]
        seconds: u32,
        /// Targets to run (default: all): filter, probe_spec
        targets: Vec<String>,
    },
    /// Regenerate dist/man and dist/completions, then build a static binary
    /// (x86_64-unknown-linux-musl) and a .deb into target/dist/
    Dist,
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("xtask: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Setup => {
            setup::ensure()?;
        }
        Command::Build => {
            setup::ensure()?;
            build_release()?;
        }
        Command::Run { args } => {
            setup::ensure()?;
            let binary = build_release()?;
            let status = Cmd::new(&binary).args(args).status_code()?;
            return Ok(ExitCode::from(status));
        }
        Command::Test {
            unit,
            integration,
            vm,
            filter,
        } => {
            setup::ensure()?;
            let all = !(unit || integration || vm);
            if all || unit {
                unit_tests()?;
            }
            if all || integration {
                integration_tests(filter.as_deref())?;
            }
            if (all || vm) && !vm::run(if vm { filter.as_deref() } else { None })? {
                bail!("the kernel matrix failed");
            }
        }
        Command::Bench { bench } => {
            setup::ensure()?;
            // Another build (the static one of `dist`) can be measured the same way.
            let binary = match std::env::var_os("TRACEKIT_BIN") {
                Some(binary) => binary.into(),
                None => build_release()?,
            };
            bench::run(bench, &binary)?;
        }
        Command::Fuzz { seconds, targets } => {
            setup::ensure()?;
            fuzz::run(&targets, seconds)?;
        }
        Command::Dist => {
            setup::ensure()?;
            dist::run()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Builds `target/release/tracekit` with its kernel programs (a missing toolchain fails the
/// build instead of producing a binary without them).
pub fn build_release() -> Result<std::path::PathBuf> {
    util::cargo()
        .args(["build", "--release", "--package", "tracekit"])
        .env("TRACEKIT_EBPF", "require")
        .run()
        .context("building the release binary")?;
    Ok(workspace_root().join("target/release/tracekit"))
}

fn unit_tests() -> Result<()> {
    eprintln!("xtask: unit tests (no root)");
    util::cargo()
        .args([
            "test",
            "--workspace",
            "--exclude",
            "tracekit-ebpf",
            "--exclude",
            "tracekit-tests",
        ])
        .env("TRACEKIT_EBPF", "require")
        .run()
        .context("unit tests failed")
}

fn integration_tests(filter: Option<&str>) -> Result<()> {
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!(
            "the integration tests load BPF programs and need root; \
             run `sudo -E cargo xtask test`, or `cargo xtask test --unit` for the unit tests only"
        );
    }
    let binary = build_release()?;
    eprintln!("xtask: integration tests (root, one at a time: the kernel is shared state)");
    let mut cmd = util::cargo();
    cmd.args([
        "test",
        "--package",
        "tracekit-tests",
        "--",
        "--test-threads=1",
    ])
    .env("TRACEKIT_BIN", &binary)
    .env("TRACEKIT_EBPF", "require");
    if let Some(filter) = filter {
        cmd.arg(filter);
    }
    cmd.run().context("integration tests failed")
}
