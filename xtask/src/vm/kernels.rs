//! The kernels of the matrix: Debian packages per architecture, found and unpacked once into
//! `target/vm/kernels/`, through private apt source lists where they are not the system's.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

use crate::{
    arch::{AARCH64, Arch, X86_64},
    util::Cmd,
};

/// Where a package is found: the system's sources, or Debian sources read through a private
/// source list, lists and package cache under `target/vm/apt-NAME/` (the system's sources
/// are left alone).
#[derive(Debug)]
pub struct Source {
    /// Names the cache directory.
    pub name: &'static str,
    /// The source list's lines.
    pub lines: &'static str,
    /// The architecture apt resolves packages for, when not the system's.
    pub arch: Option<&'static str>,
}

/// Debian 11's kernels.
const BULLSEYE: Source = Source {
    name: "bullseye",
    lines: "deb http://deb.debian.org/debian bullseye main\n",
    arch: None,
};

/// Debian 12's arm64 packages (kernels, busybox-static), with its updates and security fixes
/// as the system's own sources have them.
pub const BOOKWORM_ARM64: Source = Source {
    name: "bookworm-arm64",
    lines: "deb [arch=arm64] http://deb.debian.org/debian bookworm main
deb [arch=arm64] http://deb.debian.org/debian bookworm-updates main
deb [arch=arm64] http://deb.debian.org/debian-security bookworm-security main
",
    arch: Some("arm64"),
};

/// A kernel of the matrix: a Debian package name pattern.
#[derive(Debug)]
pub struct Kernel {
    /// Its version, as `--kernel` names it.
    pub label: &'static str,
    pub arch: &'static Arch,
    /// Picks the newest `linux-image-...` matching this.
    matches: fn(&str) -> bool,
    /// Where the package is; `None`: the system's sources.
    source: Option<&'static Source>,
    /// Booted when `--kernel` names no kernel.
    default: bool,
}

impl Kernel {
    /// `6.1`, or `6.1 arm64` for a kernel of another architecture than x86_64.
    pub fn name(&self) -> String {
        if self.arch == &X86_64 {
            self.label.to_string()
        } else {
            format!("{} {}", self.label, self.arch.name)
        }
    }

    /// Its directory under `target/vm/kernels/`: `6.1`, `arm64-6.1`.
    fn cache_name(&self) -> String {
        if self.arch == &X86_64 {
            self.label.to_string()
        } else {
            format!("{}-{}", self.arch.name, self.label)
        }
    }
}

pub const KERNELS: [Kernel; 5] = [
    // Debian 11 (bullseye): the oldest kernel the matrix proves (BTF on, no bpf_loop).
    Kernel {
        label: "5.10",
        arch: &X86_64,
        matches: |p| {
            p.starts_with("linux-image-5.10.0-")
                && p.ends_with("-amd64-unsigned")
                && !p.contains("cloud")
                && !p.contains("-rt-")
        },
        source: Some(&BULLSEYE),
        default: true,
    },
    Kernel {
        label: "6.1",
        arch: &X86_64,
        matches: |p| {
            p.starts_with("linux-image-6.1.0-")
                && p.ends_with("-amd64")
                && !p.contains("cloud")
                && !p.contains("-rt-")
        },
        source: None,
        default: true,
    },
    Kernel {
        label: "6.12",
        arch: &X86_64,
        matches: |p| p.starts_with("linux-image-6.12.") && p.ends_with("+deb12-amd64"),
        source: None,
        default: true,
    },
    Kernel {
        label: "6.1",
        arch: &AARCH64,
        matches: |p| {
            p.starts_with("linux-image-6.1.0-")
                && p.ends_with("-arm64")
                && !p.contains("cloud")
                && !p.contains("-rt-")
        },
        source: Some(&BOOKWORM_ARM64),
        default: true,
    },
    Kernel {
        label: "6.12",
        arch: &AARCH64,
        matches: |p| p.starts_with("linux-image-6.12.") && p.ends_with("+deb12-arm64"),
        source: Some(&BOOKWORM_ARM64),
        default: true,
    },
];

/// The kernels of the matrix `only` names by label (`5.10`, `6.1`, `6.12`; the default ones
/// when it is empty) of the architectures `arches`.
pub fn selected_kernels(only: &[String], arches: &[&Arch]) -> Result<Vec<&'static Kernel>> {
    if let Some(unknown) = only
        .iter()
        .find(|label| !KERNELS.iter().any(|k| k.label == label.as_str()))
    {
        let mut labels: Vec<&str> = KERNELS.iter().map(|k| k.label).collect();
        labels.dedup();
        bail!("--kernel {unknown}: the matrix has {}", labels.join(", "));
    }
    let kernels: Vec<&Kernel> = KERNELS
        .iter()
        .filter(|k| arches.contains(&k.arch))
        .filter(|k| {
            if only.is_empty() {
                k.default
            } else {
                only.iter().any(|label| label == k.label)
            }
        })
        .collect();
    if kernels.is_empty() {
        bail!("the matrix has no such kernel for that architecture");
    }
    Ok(kernels)
}

/// The module trees (`lib/modules/VERSION`) of the kernels of `arch` in the cache.
pub fn module_trees(dir: &Path, arch: &Arch) -> Vec<PathBuf> {
    KERNELS
        .iter()
        .filter(|k| k.arch == arch)
        .filter_map(|k| {
            std::fs::read_dir(dir.join("kernels").join(k.cache_name()).join("lib/modules")).ok()
        })
        .flat_map(|versions| versions.flatten().map(|v| v.path()))
        .collect()
}

/// The kernel image of `kernel`, downloaded and unpacked once into the cache.
pub fn fetch_kernel(dir: &Path, kernel: &Kernel) -> Result<PathBuf> {
    let cache = dir.join("kernels").join(kernel.cache_name());
    if let Some(vmlinuz) = find_vmlinuz(&cache) {
        return Ok(vmlinuz);
    }
    std::fs::create_dir_all(&cache)?;
    let apt = apt_options(dir, kernel.source)?;
    let package = newest_package(kernel, &apt)?;
    eprintln!("xtask: vm {}: downloading {package}", kernel.name());
    fetch_package(&apt, &package, &cache)?;
    find_vmlinuz(&cache).context("no boot/vmlinuz-* in the kernel package")
}

fn find_vmlinuz(cache: &Path) -> Option<PathBuf> {
    std::fs::read_dir(cache.join("boot"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("vmlinuz-"))
        })
}

/// The options of `apt-get` and `apt-cache` that read `source` through a private source
/// list, lists and package cache under `dir/apt-NAME/` (none for the system's sources). The
/// system's own sources and lists are not read or touched.
pub fn apt_options(dir: &Path, source: Option<&Source>) -> Result<Vec<String>> {
    let Some(source) = source else {
        return Ok(Vec::new());
    };
    let apt = dir.join(format!("apt-{}", source.name));
    let lists = apt.join("lists");
    let cache = apt.join("cache");
    std::fs::create_dir_all(lists.join("partial"))?;
    std::fs::create_dir_all(cache.join("archives/partial"))?;
    let sources = apt.join("sources.list");
    std::fs::write(&sources, source.lines)?;
    let mut options = vec![
        format!("Dir::Etc::SourceList={}", sources.display()),
        "Dir::Etc::SourceParts=/dev/null".into(),
        format!("Dir::State::Lists={}", lists.display()),
        format!("Dir::Cache={}", cache.display()),
    ];
    if let Some(arch) = source.arch {
        options.push(format!("APT::Architecture={arch}"));
        options.push(format!("APT::Architectures={arch}"));
    }
    Ok(options.into_iter().flat_map(|o| ["-o".into(), o]).collect())
}

/// Downloads `package` with `apt` (options from [`apt_options`]) into `into` and unpacks it
/// there; `apt-get update` first when the lists do not have it yet.
pub fn fetch_package(apt: &[String], package: &str, into: &Path) -> Result<()> {
    std::fs::create_dir_all(into)?;
    let download = || {
        Cmd::new("apt-get")
            .args(apt)
            .args(["download", package])
            .current_dir(into)
            .run()
    };
    if download().is_err() {
        Cmd::new("apt-get").args(apt).arg("update").run()?;
        download()?;
    }
    let deb = std::fs::read_dir(into)?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "deb"))
        .context("apt-get download left no .deb")?;
    Cmd::new("dpkg-deb").arg("-x").arg(&deb).arg(into).run()?;
    let _ = std::fs::remove_file(&deb);
    Ok(())
}

fn newest_package(kernel: &Kernel, apt: &[String]) -> Result<String> {
    let search = || {
        Cmd::new("apt-cache")
            .args(apt)
            .args(["search", "--names-only", "^linux-image-[56]"])
            .output_ok()
            .unwrap_or_default()
    };
    let mut text = search();
    if !text
        .lines()
        .any(|l| (kernel.matches)(l.split_whitespace().next().unwrap_or("")))
    {
        Cmd::new("apt-get").args(apt).arg("update").run()?;
        text = search();
    }
    let mut packages: Vec<String> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|p| (kernel.matches)(p))
        .map(str::to_string)
        .collect();
    packages.sort_by_key(|p| version_key(p));
    packages
        .pop()
        .with_context(|| format!("no Debian linux-image package for {}", kernel.name()))
}

/// Numeric parts of a package name, for ordering versions.
fn version_key(package: &str) -> Vec<u64> {
    package
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|part| part.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_kernel_packages_and_orders_versions() {
        assert!((KERNELS[0].matches)("linux-image-5.10.0-30-amd64-unsigned"));
        assert!(!(KERNELS[0].matches)(
            "linux-image-5.10.0-30-rt-amd64-unsigned"
        ));
        assert!(!(KERNELS[0].matches)("linux-image-5.10.0-30-amd64"));
        assert!((KERNELS[1].matches)("linux-image-6.1.0-56-amd64"));
        assert!(!(KERNELS[1].matches)("linux-image-6.1.0-56-cloud-amd64"));
        assert!((KERNELS[2].matches)("linux-image-6.12.117+deb12-amd64"));
        assert!(!(KERNELS[2].matches)("linux-image-6.12.117+deb12-rt-amd64"));
        assert!((KERNELS[3].matches)("linux-image-6.1.0-56-arm64"));
        assert!(!(KERNELS[3].matches)("linux-image-6.1.0-56-rt-arm64"));
        assert!(!(KERNELS[3].matches)("linux-image-6.1.0-56-amd64"));
        assert!((KERNELS[4].matches)("linux-image-6.12.117+deb12-arm64"));
        let names = |only: &[&str], arches: &[&Arch]| -> Vec<String> {
            let only: Vec<String> = only.iter().map(|s| s.to_string()).collect();
            selected_kernels(&only, arches)
                .unwrap()
                .iter()
                .map(|k| k.name())
                .collect()
        };
        assert_eq!(names(&[], &[&X86_64]), ["5.10", "6.1", "6.12"]);
        assert_eq!(names(&["5.10"], &[&X86_64]), ["5.10"]);
        assert_eq!(names(&["6.12", "5.10"], &[&X86_64]), ["5.10", "6.12"]);
        assert_eq!(names(&["6.1"], &[&X86_64, &AARCH64]), ["6.1", "6.1 arm64"]);
        assert_eq!(names(&[], &[&AARCH64]), ["6.1 arm64", "6.12 arm64"]);
        assert!(selected_kernels(&["5.4".to_string()], &[&X86_64]).is_err());
        assert!(selected_kernels(&["5.10".to_string()], &[&AARCH64]).is_err());
        assert_eq!(KERNELS[4].cache_name(), "arm64-6.12");
        let mut packages = ["linux-image-6.1.0-9-amd64", "linux-image-6.1.0-56-amd64"];
        packages.sort_by_key(|p| version_key(p));
        assert_eq!(packages.last(), Some(&"linux-image-6.1.0-56-amd64"));
    }
}
