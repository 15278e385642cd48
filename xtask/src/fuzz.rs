//! `cargo xtask fuzz`: the libFuzzer targets in `fuzz/` (the filter language, probe specs),
//! each for a bounded time. cargo-fuzz is installed if missing; the targets build with the
//! nightly toolchain that `setup` provides, without the kernel programs
//! (`TRACEKIT_EBPF=skip`: the parsers need none).

use std::{path::Path, time::Instant};

use anyhow::{Context as _, Result, bail};

use crate::util::{Cmd, find_program, workspace_root};

/// The cargo-fuzz release xtask installs.
const CARGO_FUZZ_VERSION: &str = "0.13.2";

/// Every target in `fuzz/fuzz_targets/`.
pub const TARGETS: &[&str] = &["filter", "probe_spec"];

/// The longest input libFuzzer makes: past the filter (4096) and probe (8192) limits, so
/// the length checks are fuzzed too.
const MAX_LEN: u32 = 20_000;

/// Runs `targets` (all when empty) for `seconds` each; fails on the first finding, which
/// libFuzzer leaves in `fuzz/artifacts/TARGET/`.
pub fn run(targets: &[String], seconds: u32) -> Result<()> {
    for target in targets {
        if !TARGETS.contains(&target.as_str()) {
            bail!("no fuzz target `{target}`; targets: {}", TARGETS.join(", "));
        }
    }
    let chosen: Vec<&str> = if targets.is_empty() {
        TARGETS.to_vec()
    } else {
        targets.iter().map(String::as_str).collect()
    };
    ensure_cargo_fuzz()?;
    let fuzz_dir = workspace_root().join("fuzz");
    for target in chosen {
        let corpus = fuzz_dir.join("corpus").join(target);
        std::fs::create_dir_all(&corpus)
            .with_context(|| format!("creating {}", corpus.display()))?;
        let seeds = fuzz_dir.join("seeds").join(target);
        eprintln!("xtask: fuzz: {target} for {seconds} s");
        let started = Instant::now();
        Cmd::new("rustup")
            .args(["run", "nightly", "cargo", "fuzz", "run", target])
            .arg(&corpus)
            .arg(&seeds)
            .args([
                "--".to_string(),
                format!("-max_total_time={seconds}"),
                format!("-max_len={MAX_LEN}"),
                "-timeout=10".to_string(),
                "-print_final_stats=1".to_string(),
            ])
            .env("TRACEKIT_EBPF", "skip")
            .current_dir(&fuzz_dir)
            .run()
            .with_context(|| {
                format!(
                    "fuzz target {target} found a failing input (see {})",
                    Path::new("fuzz/artifacts").join(target).display()
                )
            })?;
        eprintln!(
            "xtask: fuzz: {target} clean after {:.0} s (build included)",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Installs cargo-fuzz unless it is on PATH.
fn ensure_cargo_fuzz() -> Result<()> {
    if find_program("cargo-fuzz").is_some() {
        return Ok(());
    }
    eprintln!("xtask: fuzz: installing cargo-fuzz {CARGO_FUZZ_VERSION} (a few minutes)");
    Cmd::new("cargo")
        .args([
            "install",
            "cargo-fuzz",
            "--version",
            CARGO_FUZZ_VERSION,
            "--locked",
        ])
        .run()
        .context("installing cargo-fuzz")
}
