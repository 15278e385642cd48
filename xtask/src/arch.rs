//! The architectures a release ships static binaries for, and how each is built from this
//! x86_64 machine: the musl target, the C compilers (ring under rustls compiles C for the
//! target; the VM tier's fixtures are C and C++), the linker, the Debian architecture and
//! the qemu that runs it.

use std::path::PathBuf;

use anyhow::{Context as _, Result};

use crate::util::{Cmd, cargo, workspace_root};

/// One architecture of the release.
#[derive(Debug)]
pub struct Arch {
    /// Its name on the command line (`--arch`) and in messages: `x86_64`, `arm64`.
    pub name: &'static str,
    /// The Rust target of its static binary.
    pub musl: &'static str,
    /// The C compiler for the target (cc-rs's; the fixtures' with `-static`).
    pub cc: &'static str,
    /// The compilers of the VM tier's static C and C++ fixtures.
    pub fixture_cc: &'static str,
    pub fixture_cxx: &'static str,
    /// The archiver cc-rs makes static libraries with (`None`: cc-rs finds one).
    pub ar: Option<&'static str>,
    /// The linker cargo is told to use (`None`: rustc's default for the target).
    pub linker: Option<&'static str>,
    /// The Debian packages that provide the compilers and the archiver.
    pub packages: &'static [&'static str],
    /// Debian's name of the architecture (`.deb`s, kernel packages).
    pub deb: &'static str,
    /// The ELF header's `e_machine` of its executables.
    pub elf_machine: u16,
    /// The qemu system emulator, the Debian package with it, its machine arguments, and the
    /// kernel's console device.
    pub qemu: &'static str,
    pub qemu_package: &'static str,
    pub machine: &'static [&'static str],
    pub console: &'static str,
}

pub const X86_64: Arch = Arch {
    name: "x86_64",
    musl: "x86_64-unknown-linux-musl",
    cc: "musl-gcc",
    fixture_cc: "gcc",
    fixture_cxx: "g++",
    ar: None,
    linker: None,
    packages: &["musl-tools", "g++"],
    deb: "amd64",
    elf_machine: 62, // EM_X86_64
    qemu: "qemu-system-x86_64",
    qemu_package: "qemu-system-x86",
    machine: &[],
    console: "ttyS0",
};

/// arm64 (Graviton, Ampere): Debian's cross compilers (their glibc headers serve ring's
/// few C files, which use no libc), linked by rust-lld against Rust's own musl.
pub const AARCH64: Arch = Arch {
    name: "arm64",
    musl: "aarch64-unknown-linux-musl",
    cc: "aarch64-linux-gnu-gcc",
    fixture_cc: "aarch64-linux-gnu-gcc",
    fixture_cxx: "aarch64-linux-gnu-g++",
    ar: Some("aarch64-linux-gnu-ar"),
    linker: Some("rust-lld"),
    packages: &["gcc-aarch64-linux-gnu", "g++-aarch64-linux-gnu"],
    deb: "arm64",
    elf_machine: 183, // EM_AARCH64
    qemu: "qemu-system-aarch64",
    qemu_package: "qemu-system-arm",
    machine: &["-M", "virt"],
    console: "ttyAMA0",
};

/// Every architecture, the host's first.
pub const ARCHES: [&Arch; 2] = [&X86_64, &AARCH64];

/// The architectures `only` names (`x86_64`, `arm64`; `amd64` and `aarch64` too); all of
/// them when it is empty.
pub fn selected(only: &[String]) -> Result<Vec<&'static Arch>> {
    let named = |arch: &Arch, name: &str| {
        name == arch.name || name == arch.deb || arch.musl.starts_with(&format!("{name}-"))
    };
    if let Some(unknown) = only
        .iter()
        .find(|name| !ARCHES.iter().any(|arch| named(arch, name)))
    {
        let names: Vec<&str> = ARCHES.iter().map(|a| a.name).collect();
        anyhow::bail!("--arch {unknown}: expected one of {}", names.join(", "));
    }
    Ok(ARCHES
        .into_iter()
        .filter(|arch| only.is_empty() || only.iter().any(|name| named(arch, name)))
        .collect())
}

/// Architectures are told apart by name (a `const`'s address is not unique).
impl PartialEq for Arch {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Arch {
    /// The environment cargo needs to build for [`Arch::musl`] (cc-rs's compiler and
    /// archiver, the linker).
    pub fn cargo_env(&self) -> Vec<(String, &'static str)> {
        let triple = self.musl.replace('-', "_");
        let mut env = vec![(format!("CC_{triple}"), self.cc)];
        if let Some(ar) = self.ar {
            env.push((format!("AR_{triple}"), ar));
        }
        if let Some(linker) = self.linker {
            env.push((
                format!("CARGO_TARGET_{}_LINKER", triple.to_uppercase()),
                linker,
            ));
        }
        env
    }

    /// `cargo` in the workspace with [`Arch::cargo_env`] and the kernel programs required.
    pub fn cargo(&self) -> Cmd {
        let mut cmd = cargo();
        cmd.env("TRACEKIT_EBPF", "require");
        for (key, value) in self.cargo_env() {
            cmd.env(key, value);
        }
        cmd
    }

    /// Builds the static release binary (`target/MUSL/release/tracekit`), kernel programs
    /// (built for this architecture) included; `setup::cross_toolchain` first.
    pub fn build_static_tracekit(&self) -> Result<PathBuf> {
        self.cargo()
            .args(["build", "--release", "--package", "tracekit", "--target"])
            .arg(self.musl)
            .run()
            .with_context(|| format!("building the static binary for {}", self.name))?;
        Ok(workspace_root().join(format!("target/{}/release/tracekit", self.musl)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selects_by_any_name_and_sets_the_cross_build_environment() {
        let names = |only: &[&str]| -> Vec<&str> {
            let only: Vec<String> = only.iter().map(|s| s.to_string()).collect();
            selected(&only).unwrap().iter().map(|a| a.name).collect()
        };
        assert_eq!(names(&[]), ["x86_64", "arm64"]);
        assert_eq!(names(&["aarch64"]), ["arm64"]);
        assert_eq!(names(&["arm64", "amd64"]), ["x86_64", "arm64"]);
        assert!(selected(&["riscv64".to_string()]).is_err());
        let env = AARCH64.cargo_env();
        assert!(env.contains(&(
            "CC_aarch64_unknown_linux_musl".to_string(),
            "aarch64-linux-gnu-gcc"
        )));
        assert!(env.contains(&(
            "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER".to_string(),
            "rust-lld"
        )));
        assert_eq!(
            X86_64.cargo_env(),
            [("CC_x86_64_unknown_linux_musl".to_string(), "musl-gcc")]
        );
    }
}
