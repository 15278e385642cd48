//! Builds the kernel programs (`ebpf/`) with aya-build and embeds the object in the binary.
//!
//! The kernel side needs the nightly toolchain with `rust-src` and bpf-linker
//! (`cargo xtask setup` installs them). `TRACEKIT_EBPF` picks what happens without them:
//! `require` (what xtask sets) fails the build, `skip` never builds them, and unset builds
//! them when the toolchain is there and otherwise embeds an empty object, so that plain
//! `cargo test` runs the unit tests on any machine. Such a binary says so when run.

use std::{
    env, fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, bail};

fn main() -> anyhow::Result<()> {
    println!("cargo:rerun-if-env-changed=TRACEKIT_EBPF");
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?);
    let ebpf_dir = manifest_dir.join("../ebpf");
    let out_dir = PathBuf::from(env::var("OUT_DIR")?);
    let objects = ["cpu_sampler", "engine", "ksyms"].map(|name| out_dir.join(name));

    let mode = env::var("TRACEKIT_EBPF").unwrap_or_default();
    let missing = match mode.as_str() {
        "skip" => Some("TRACEKIT_EBPF=skip".to_string()),
        "require" => None,
        "" => toolchain_missing(),
        other => bail!("TRACEKIT_EBPF={other}: expected `require`, `skip` or unset"),
    };
    if let Some(why) = missing {
        println!(
            "cargo:warning=building tracekit without its kernel programs ({why}); \
             run `cargo xtask build` for a working binary"
        );
        println!("cargo:rerun-if-changed={}", ebpf_dir.display());
        for object in &objects {
            fs::write(object, []).with_context(|| format!("writing {}", object.display()))?;
        }
        return Ok(());
    }

    let root_dir = ebpf_dir
        .canonicalize()
        .with_context(|| format!("finding {}", ebpf_dir.display()))?;
    let root_dir = root_dir.to_str().context("ebpf/ path is not UTF-8")?;
    // The kernel programs include common/'s types (the plan's layout): a change there must
    // rebuild them too, or the loader and the object disagree on a map's value size.
    println!(
        "cargo:rerun-if-changed={}",
        ebpf_dir
            .parent()
            .context("ebpf/ has no parent")?
            .join("common")
            .display()
    );
    aya_build::build_ebpf(
        [aya_build::Package {
            name: "tracekit-ebpf",
            root_dir,
            ..Default::default()
        }],
        aya_build::Toolchain::default(),
    )
}

/// Why the kernel programs cannot be built here, if they cannot.
fn toolchain_missing() -> Option<String> {
    let on_path = |name: &str| {
        env::var_os("PATH")
            .is_some_and(|paths| env::split_paths(&paths).any(|dir| dir.join(name).is_file()))
    };
    if !on_path("bpf-linker") {
        return Some("bpf-linker is not on PATH".into());
    }
    let sysroot = Command::new("rustup")
        .args(["run", "nightly", "rustc", "--print", "sysroot"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string());
    match sysroot {
        None => Some("no nightly toolchain".into()),
        Some(sysroot)
            if !Path::new(&sysroot)
                .join("lib/rustlib/src/rust/library/core")
                .is_dir() =>
        {
            Some("nightly has no rust-src".into())
        }
        Some(_) => None,
    }
}
