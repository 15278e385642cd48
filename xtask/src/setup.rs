//! `cargo xtask setup`: install what building the kernel programs and the static binaries
//! needs, and nothing else.
//!
//! The kernel side is built by the `nightly` toolchain (with `rust-src`, for
//! `-Z build-std=core`) and linked by bpf-linker, which must be built against the same LLVM
//! major version as nightly's rustc. On Debian that LLVM comes from `llvm-N-dev`. The static
//! binaries (`dist`, the VM tier) need each architecture's musl target and a C compiler for
//! it (`arch.rs`). When all of it is there, setup is a no-op that takes well under a second.

use std::{path::Path, time::Instant};

use anyhow::{Context as _, Result, bail};

use crate::{
    arch::{ARCHES, Arch},
    util::{Cmd, find_program},
};

/// The bpf-linker release tracekit builds with.
const BPF_LINKER_VERSION: &str = "0.13.0";
/// LLVM majors bpf-linker 0.13 has a feature for.
const BPF_LINKER_LLVM: [u32; 3] = [21, 22, 23];

/// Installs what building for `arch` needs when it is missing: rustup's musl target and the
/// C compilers (ring, under rustls and the debuginfod client, compiles C for the target;
/// the VM tier's fixtures are C and C++).
pub fn cross_toolchain(arch: &Arch) -> Result<()> {
    let compilers = [arch.cc, arch.fixture_cc, arch.fixture_cxx];
    if compilers.iter().any(|cc| find_program(cc).is_none()) {
        apt_install(arch.packages)?;
    }
    let targets = Cmd::new("rustup")
        .args(["target", "list", "--installed"])
        .output_ok()
        .unwrap_or_default();
    if !targets.lines().any(|t| t.trim() == arch.musl) {
        Cmd::new("rustup")
            .args(["target", "add", arch.musl])
            .run()?;
    }
    Ok(())
}

/// Checks the toolchain and installs what is missing, saying what it did.
pub fn ensure() -> Result<()> {
    let started = Instant::now();
    let mut did = Vec::new();

    let nightly = nightly_version()?;
    let llvm = nightly.llvm_major;
    if !Path::new(&nightly.sysroot)
        .join("lib/rustlib/src/rust/library/core")
        .is_dir()
    {
        eprintln!("xtask: setup: adding rust-src to the nightly toolchain");
        Cmd::new("rustup")
            .args(["component", "add", "rust-src", "--toolchain", "nightly"])
            .run()?;
        did.push("installed nightly rust-src");
    }

    match bpf_linker_llvm() {
        Some((version, Some(linked))) if version == BPF_LINKER_VERSION && linked == llvm => {}
        found => {
            if !BPF_LINKER_LLVM.contains(&llvm) {
                bail!(
                    "nightly's rustc uses LLVM {llvm}, but bpf-linker {BPF_LINKER_VERSION} \
                     supports LLVM {BPF_LINKER_LLVM:?}; use a nightly with one of those"
                );
            }
            match found {
                None => eprintln!("xtask: setup: bpf-linker is not installed"),
                Some((version, linked)) => eprintln!(
                    "xtask: setup: bpf-linker {version} is linked against LLVM {}, \
                     nightly uses LLVM {llvm}: rebuilding",
                    linked.map_or("?".to_string(), |l| l.to_string())
                ),
            }
            install_llvm(llvm)?;
            install_bpf_linker(llvm)?;
            did.push("built bpf-linker");
        }
    }

    if find_program("gcc").is_none() || find_program("g++").is_none() {
        apt_install(&["gcc", "g++", "libc6-dev"])?;
        did.push("installed gcc and g++ (integration test fixtures)");
    }

    // The static release binaries: each architecture's musl target and C compilers
    // (`cargo xtask dist`, the VM tier). Without root apt cannot install: say so and go on.
    for arch in ARCHES {
        if let Err(err) = cross_toolchain(arch) {
            eprintln!(
                "xtask: setup: {err:#} (`dist` and the {} VMs need it)",
                arch.name
            );
        }
    }

    // bpftrace and its tools (`/usr/sbin/*.bt`): the side-by-side tests run them on the
    // same workload as tracekit's tools. They must never skip in CI, so a
    // failed install is a setup error. Without root (unit tests only) apt cannot install,
    // and nothing that runs without root needs bpftrace: say so and go on.
    if find_program("bpftrace").is_none() || !Path::new("/usr/sbin/opensnoop.bt").is_file() {
        // SAFETY: geteuid(2) has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            apt_install(&["bpftrace"]).context("bpftrace (the side-by-side tests need it)")?;
            did.push("installed bpftrace (side-by-side tests)");
        } else {
            eprintln!(
                "xtask: setup: bpftrace is not installed; the integration tests (as root) \
                 install it"
            );
        }
    }

    // Real programs the integration tests profile and trace: JIT runtimes, a
    // debuginfod server, <sys/sdt.h> for USDT fixtures. A failed install only skips those
    // tests (each says why).
    let real_programs = [
        ("node", "nodejs"),
        ("javac", "openjdk-17-jdk-headless"),
        ("debuginfod", "debuginfod"),
        ("dtrace", "systemtap-sdt-dev"),
        // The exporter's tests scrape it with Prometheus (native histograms, TLS).
        ("prometheus", "prometheus"),
    ];
    let missing: Vec<&str> = real_programs
        .iter()
        .filter(|(program, _)| find_program(program).is_none())
        .map(|(_, package)| *package)
        .collect();
    if !missing.is_empty() {
        match apt_install(&missing) {
            Ok(()) => did.push("installed the real programs the tests profile"),
            Err(err) => eprintln!("xtask: setup: {err:#} (their tests will be skipped)"),
        }
    }

    // The OTLP receiver of the exporter's tests decodes with the classes PyPI's
    // opentelemetry-proto generates from the official protos (profiles v1development,
    // protos 1.10.0), in the python3 on PATH (pyenv's), and serves their gRPC stubs with
    // grpcio. A failed install skips those tests.
    let otlp_import = "import grpc, \
         opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2_grpc";
    if find_program("python3").is_some()
        && Cmd::new("python3")
            .args(["-c", otlp_import])
            .output_ok()
            .is_none()
    {
        match Cmd::new("python3")
            .args(["-m", "pip", "install", "-q", OTLP_PROTO_PIP, GRPCIO_PIP])
            .run()
        {
            Ok(()) => did
                .push("installed opentelemetry-proto and grpcio (the OTLP receiver of the tests)"),
            Err(err) => eprintln!("xtask: setup: {err:#} (the OTLP tests will be skipped)"),
        }
    }

    // Real JavaScript and Python programs the runtime tests profile: npm and PyPI releases
    // unpacked under target/. Without npm or pip, or offline, those tests are skipped.
    match crate::real_programs::javascript() {
        Ok(true) => did.push("unpacked the JavaScript programs the Node tests profile"),
        Ok(false) => {}
        Err(err) => {
            eprintln!("xtask: setup: {err:#} (the real-program Node tests will be skipped)")
        }
    }
    match crate::real_programs::python() {
        Ok(true) => did.push("unpacked the Python programs and py-spy the Python tests run"),
        Ok(false) => {}
        Err(err) => {
            eprintln!("xtask: setup: {err:#} (the real-program Python tests will be skipped)")
        }
    }

    if did.is_empty() {
        eprintln!(
            "xtask: setup: toolchain ready (nightly LLVM {llvm}, bpf-linker {BPF_LINKER_VERSION}) \
             in {:.2} s",
            started.elapsed().as_secs_f64()
        );
    } else {
        eprintln!(
            "xtask: setup: {} in {:.0} s",
            did.join(", "),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// The PyPI release of the OTLP classes the exporter's tests decode with (the same pin as
/// tests/tests/exporter/otlp.rs).
const OTLP_PROTO_PIP: &str = "opentelemetry-proto==1.45.2";

/// The grpcio release the receiver serves OTLP/gRPC with (the same pin as the tests).
const GRPCIO_PIP: &str = "grpcio==1.85.3";

struct Nightly {
    sysroot: String,
    llvm_major: u32,
}

fn nightly_version() -> Result<Nightly> {
    let verbose = Cmd::new("rustc")
        .args(["+nightly", "-vV"])
        .output_ok()
        .context(
            "no nightly toolchain: the kernel programs need it (`rustup toolchain install nightly`)",
        )?;
    let llvm_major = verbose
        .lines()
        .find_map(|line| line.strip_prefix("LLVM version: "))
        .and_then(|version| version.split('.').next())
        .and_then(|major| major.trim().parse().ok())
        .context("cannot read nightly's LLVM version from `rustc +nightly -vV`")?;
    let sysroot = Cmd::new("rustc")
        .args(["+nightly", "--print", "sysroot"])
        .output_ok()
        .context("`rustc +nightly --print sysroot` failed")?
        .trim()
        .to_string();
    Ok(Nightly {
        sysroot,
        llvm_major,
    })
}

/// bpf-linker's version and the LLVM major its binary links (from `ldd`), if installed.
fn bpf_linker_llvm() -> Option<(String, Option<u32>)> {
    let path = find_program("bpf-linker")?;
    let version = Cmd::new(&path).arg("--version").output_ok()?;
    let version = version.split_whitespace().nth(1)?.to_string();
    let ldd = Cmd::new("ldd").arg(&path).output_ok().unwrap_or_default();
    // Debian's shared LLVM is `libLLVM.so.22.1` (or `libLLVM-22.so` on older packages).
    let linked = ldd.lines().find_map(|line| {
        let name = line.split_whitespace().next()?;
        let rest = name
            .strip_prefix("libLLVM.so.")
            .or_else(|| name.strip_prefix("libLLVM-"))?;
        rest.split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    });
    Some((version, linked))
}

fn install_llvm(llvm: u32) -> Result<()> {
    let config = format!("/usr/lib/llvm-{llvm}/bin/llvm-config");
    if Path::new(&config).exists() {
        return Ok(());
    }
    apt_install(&[
        &format!("llvm-{llvm}-dev"),
        &format!("libpolly-{llvm}-dev"),
        "libzstd-dev",
        "zlib1g-dev",
    ])
}

fn install_bpf_linker(llvm: u32) -> Result<()> {
    eprintln!(
        "xtask: setup: building bpf-linker {BPF_LINKER_VERSION} against LLVM {llvm} (about a minute)"
    );
    // Without LLVM_PREFIX, llvm-sys finds whichever llvm-config is first (Debian's LLVM 14).
    Cmd::new("cargo")
        .args([
            "install",
            "bpf-linker",
            "--version",
            BPF_LINKER_VERSION,
            "--locked",
            "--force",
        ])
        .args([
            "--no-default-features",
            "--features",
            &format!("llvm-{llvm}"),
        ])
        .env("LLVM_PREFIX", format!("/usr/lib/llvm-{llvm}"))
        .env(
            format!("LLVM_SYS_{llvm}0_PREFIX"),
            format!("/usr/lib/llvm-{llvm}"),
        )
        .run()
        .context("building bpf-linker")
}

/// `apt-get install -y PACKAGES`, refreshing the package lists first if the install fails
/// (a new machine's lists may be missing or stale).
pub fn apt_install(packages: &[&str]) -> Result<()> {
    eprintln!("xtask: setup: apt-get install {}", packages.join(" "));
    let install = || {
        Cmd::new("apt-get")
            .args(["install", "-y", "--no-install-recommends"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .run()
    };
    if install().is_ok() {
        return Ok(());
    }
    Cmd::new("apt-get")
        .args(["update"])
        .run()
        .context("apt-get update")?;
    install().with_context(|| format!("installing {}", packages.join(" ")))
}
