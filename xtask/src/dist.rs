//! `cargo xtask dist`: what a release ships, under `target/dist/`.
//!
//! 1. The man pages and shell completions, generated from the clap definitions into
//!    `target/dist/man` and `target/dist/completions` (the test
//!    `generated::tests::every_dist_file_generates` of the binary, with `TRACEKIT_DIST_DIR`);
//!    they are not kept in the repository;
//! 2. per architecture (`arch.rs`: x86_64, arm64, cross-built here), a static binary for its
//!    musl target (the kernel programs built for that architecture and embedded as in any
//!    build; a C cross compiler for ring's C), checked to be an executable of that machine
//!    needing no loader or libraries: the build the VM matrix (`vm/`) runs;
//! 3. per architecture, a `.deb` built with `dpkg-deb`: the binary in `/usr/bin`, the man
//!    pages, the bash, zsh and fish completions, the exporter's systemd unit (not enabled)
//!    and its configuration as a conffile.

use std::{
    fs,
    path::{Path, PathBuf},
};

use anyhow::{Context as _, Result, bail};

use crate::{
    arch::Arch,
    setup::cross_toolchain,
    util::{Cmd, cargo, workspace_root},
    vm,
};

/// The version of the workspace, the package's and the .deb's.
const VERSION: &str = env!("CARGO_PKG_VERSION");
/// Where the systemd unit in `dist/` expects the binary, and where the .deb puts it.
const UNIT_BINARY: (&str, &str) = ("/usr/local/bin/tracekit", "/usr/bin/tracekit");

/// What a release ships for one architecture.
#[derive(Debug)]
pub struct Release {
    pub arch: &'static Arch,
    /// `target/dist/tracekit-VERSION-TARGET`.
    pub binary: PathBuf,
    /// `target/dist/tracekit_VERSION_DEBARCH.deb`.
    pub deb: PathBuf,
}

/// Runs the three steps for each of `arches`; returns what each ships.
pub fn run(arches: &[&'static Arch]) -> Result<Vec<Release>> {
    let root = workspace_root();
    let out = root.join("target/dist");
    generate_docs(&out)?;
    let mut releases = Vec::new();
    for &arch in arches {
        let binary = build_static(arch)?;
        fs::create_dir_all(&out)?;
        let shipped = out.join(format!("tracekit-{VERSION}-{}", arch.musl));
        fs::copy(&binary, &shipped)?;
        let deb = build_deb(&root, &out, &binary, arch)?;
        eprintln!(
            "xtask: dist: {} (static), {}",
            shipped.display(),
            deb.display()
        );
        releases.push(Release {
            arch,
            binary: shipped,
            deb,
        });
    }
    Ok(releases)
}

/// `cargo xtask dist --check`: what a user does with the two files of `release`. `ldd` calls
/// an x86_64 binary static (the ELF check of `build_static` already did, for any
/// architecture); it runs `profile -a` and `count` in its architecture's 6.1 VM; the .deb
/// installs with `dpkg -i` (`--force-architecture` for another architecture than the host's)
/// into a scratch root (`target/dist/check-root`, its own dpkg database), where
/// `man tracekit-profile` finds and formats its page; `dpkg -r` removes it again.
pub fn check(release: &Release) -> Result<()> {
    let Release { arch, binary, deb } = release;
    let native = arch.deb == "amd64";
    if native {
        ldd_static(binary)?;
    }
    dpkg_check(deb, native)?;
    if !vm::smoke(binary, arch)? {
        bail!(
            "the static binary failed profile -a or count in the {} 6.1 VM",
            arch.name
        );
    }
    eprintln!(
        "xtask: dist --check {}: {}dpkg -i, man, dpkg -r and the 6.1 VM: all pass",
        arch.name,
        if native { "ldd, " } else { "" }
    );
    Ok(())
}

/// `ldd` says `binary` is static.
fn ldd_static(binary: &Path) -> Result<()> {
    let ldd = std::process::Command::new("ldd").arg(binary).output()?;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&ldd.stdout),
        String::from_utf8_lossy(&ldd.stderr)
    );
    if !said.contains("statically linked") && !said.contains("not a dynamic executable") {
        bail!("ldd {}: {}", binary.display(), said.trim());
    }
    eprintln!("xtask: dist --check: ldd: {}", said.trim());
    Ok(())
}

/// `deb` installs into a scratch root, where `man tracekit-profile` shows its page, and
/// removes again.
fn dpkg_check(deb: &Path, native: bool) -> Result<()> {
    let root = workspace_root().join("target/dist/check-root");
    let _ = fs::remove_dir_all(&root);
    let admin = root.join("var/lib/dpkg");
    for sub in ["updates", "info"] {
        fs::create_dir_all(admin.join(sub))?;
    }
    fs::write(admin.join("status"), "")?;
    let dpkg = |args: &[&str]| {
        Cmd::new("dpkg")
            .arg(format!("--root={}", root.display()))
            // The package has no maintainer scripts: none to run in the scratch root.
            .arg("--force-script-chrootless")
            .args((!native).then_some("--force-architecture"))
            .args(args)
            .run()
    };
    dpkg(&["-i", &deb.display().to_string()]).context("dpkg -i")?;
    let installed = root.join("usr/bin/tracekit");
    if !installed.exists() {
        bail!("dpkg -i left no {}", installed.display());
    }
    let page = Cmd::new("man")
        .args(["-P", "cat", "tracekit-profile"])
        .env("MANPATH", root.join("usr/share/man"))
        .env("MANWIDTH", "80")
        .stdout_only()
        .context("man tracekit-profile")?;
    for needle in ["tracekit-profile", "--call-graph", "EXAMPLES"] {
        if !page.contains(needle) {
            bail!("man tracekit-profile does not show {needle:?}");
        }
    }
    eprintln!(
        "xtask: dist --check: dpkg -i installed {} files; man tracekit-profile: {} lines",
        Cmd::new("dpkg")
            .arg(format!("--root={}", root.display()))
            .args(["-L", "tracekit"])
            .stdout_only()?
            .lines()
            .filter(|l| root.join(l.trim_start_matches('/')).is_file())
            .count(),
        page.lines().count()
    );
    dpkg(&["-r", "tracekit"]).context("dpkg -r")?;
    if installed.exists() {
        bail!("dpkg -r left {}", installed.display());
    }
    Ok(())
}

/// Writes `out/man` and `out/completions` from the clap definitions (afresh: no page is
/// left from a removed command).
fn generate_docs(out: &Path) -> Result<()> {
    eprintln!(
        "xtask: dist: man pages and completions ({}/man, {}/completions)",
        out.display(),
        out.display()
    );
    for dir in ["man", "completions"] {
        let _ = fs::remove_dir_all(out.join(dir));
    }
    cargo()
        .args(["test", "--package", "tracekit", "--bin", "tracekit"])
        .args([
            "generated::tests::every_dist_file_generates",
            "--",
            "--exact",
        ])
        .env("TRACEKIT_EBPF", "require")
        .env("TRACEKIT_DIST_DIR", out)
        .run()
        .context("generating the man pages and completions")?;
    if !out.join("man/tracekit.1").is_file() {
        bail!(
            "no {} after generating it",
            out.join("man/tracekit.1").display()
        );
    }
    Ok(())
}

/// Builds the static binary of `arch` and checks that it is one, for that machine.
fn build_static(arch: &Arch) -> Result<PathBuf> {
    cross_toolchain(arch)?;
    eprintln!("xtask: dist: static binary ({})", arch.musl);
    let binary = arch.build_static_tracekit()?;
    let elf = fs::read(&binary).with_context(|| binary.display().to_string())?;
    if let Some(why) = not_static(&elf) {
        bail!("{} is not static: {why}", binary.display());
    }
    let machine = elf
        .get(0x12..0x14)
        .map(|b| u16::from_le_bytes([b[0], b[1]]));
    if machine != Some(arch.elf_machine) {
        bail!(
            "{} is not a {} executable (e_machine {machine:?})",
            binary.display(),
            arch.name
        );
    }
    Ok(binary)
}

/// Why a 64-bit little-endian ELF executable is not static (it names a loader in PT_INTERP, or has
/// dynamic sections with DT_NEEDED libraries), or `None` when it is.
pub fn not_static(elf: &[u8]) -> Option<String> {
    let u16_at = |at: usize| {
        elf.get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let u32_at = |at: usize| {
        elf.get(at..at + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
    };
    let u64_at = |at: usize| {
        elf.get(at..at + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
    };
    if elf.get(..5) != Some(b"\x7fELF\x02") || elf.get(5) != Some(&1) {
        return Some("not a little-endian 64-bit ELF file".into());
    }
    let (Some(phoff), Some(phentsize), Some(phnum)) = (u64_at(0x20), u16_at(0x36), u16_at(0x38))
    else {
        return Some("truncated ELF header".into());
    };
    for i in 0..usize::from(phnum) {
        let at = phoff as usize + i * usize::from(phentsize);
        let (Some(kind), Some(offset), Some(size)) = (u32_at(at), u64_at(at + 8), u64_at(at + 32))
        else {
            return Some("truncated program headers".into());
        };
        const PT_DYNAMIC: u32 = 2;
        const PT_INTERP: u32 = 3;
        const DT_NEEDED: u64 = 1;
        match kind {
            PT_INTERP => {
                let name = elf
                    .get(offset as usize..(offset + size) as usize)
                    .unwrap_or(&[]);
                let name = String::from_utf8_lossy(name.split(|&b| b == 0).next().unwrap_or(&[]));
                return Some(format!("its loader is {name}"));
            }
            PT_DYNAMIC => {
                let entries = (offset as usize..(offset + size) as usize).step_by(16);
                if entries.map(u64_at).any(|tag| tag == Some(DT_NEEDED)) {
                    return Some("it needs shared libraries (DT_NEEDED)".into());
                }
            }
            _ => {}
        }
    }
    None
}

/// A file of the package: where it comes from (relative to the workspace root, or the
/// binary), where it goes (relative to `/`), and its mode.
#[derive(Debug, PartialEq, Eq)]
pub struct Entry {
    pub source: PathBuf,
    pub target: String,
    pub mode: u32,
    /// Compressed with gzip on the way (man pages, as Debian installs them).
    pub gzip: bool,
}

/// Every file of the package: the man pages and completions generated in `generated`
/// (`target/dist`), the unit and configurations in the repository's `dist/` (under `root`).
pub fn layout(root: &Path, generated: &Path, binary: &Path) -> Result<Vec<Entry>> {
    let file = |source: PathBuf, target: String, gzip: bool| Entry {
        source,
        target,
        mode: 0o644,
        gzip,
    };
    let mut entries = vec![Entry {
        source: binary.to_path_buf(),
        target: "usr/bin/tracekit".into(),
        mode: 0o755,
        gzip: false,
    }];
    let man = generated.join("man");
    let mut pages: Vec<PathBuf> = fs::read_dir(&man)
        .with_context(|| format!("{} (run `cargo xtask dist`)", man.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    pages.sort();
    for page in pages {
        let name = page.file_name().unwrap().to_string_lossy().into_owned();
        entries.push(file(page, format!("usr/share/man/man1/{name}.gz"), true));
    }
    let completions = generated.join("completions");
    for (name, target) in [
        (
            "tracekit.bash",
            "usr/share/bash-completion/completions/tracekit",
        ),
        ("_tracekit", "usr/share/zsh/vendor-completions/_tracekit"),
        (
            "tracekit.fish",
            "usr/share/fish/vendor_completions.d/tracekit.fish",
        ),
    ] {
        entries.push(file(completions.join(name), target.into(), false));
    }
    let dist = root.join("dist");
    entries.push(file(
        dist.join("tracekit-exporter.service"),
        "lib/systemd/system/tracekit-exporter.service".into(),
        false,
    ));
    entries.push(file(
        dist.join("exporter.example.toml"),
        "etc/tracekit/exporter.toml".into(),
        false,
    ));
    for example in ["exporter.example.toml", "exporter.example.yaml"] {
        entries.push(file(
            dist.join(example),
            format!("usr/share/doc/tracekit/examples/{example}"),
            false,
        ));
    }
    Ok(entries)
}

/// DEBIAN/control for a package of Debian architecture `deb_arch` whose files take
/// `installed_kib`.
pub fn control(version: &str, deb_arch: &str, installed_kib: u64) -> String {
    format!(
        "Package: tracekit
Version: {version}
Architecture: {deb_arch}
Maintainer: tracekit developers <https://github.com/tracekit/tracekit/issues>
Installed-Size: {installed_kib}
Section: utils
Priority: optional
Homepage: https://github.com/tracekit/tracekit
Description: eBPF tracing toolkit: CPU profiles, flame graphs, histograms, counts
 tracekit profiles CPUs (perf record -g with flame graphs), counts and histograms any
 tracepoint, kprobe, uprobe or USDT probe (perf stat, bcc, bpftrace one-liners), and
 serves kernel aggregates to Prometheus. Everything is aggregated in the kernel.
 .
 One static binary with its BPF programs built in; needs Linux 5.8 or later with BTF,
 and root or CAP_BPF and CAP_PERFMON. The tracekit-exporter systemd unit is installed
 but not enabled.
"
    )
}

/// usr/share/doc/tracekit/copyright, machine-readable (DEP-5).
fn copyright() -> String {
    "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: tracekit
Source: https://github.com/tracekit/tracekit

Files: *
Copyright: tracekit developers
License: MIT or Apache-2.0
"
    .to_string()
}

/// Lays the package out in `out/deb-ARCH` and builds `out/tracekit_VERSION_ARCH.deb` (ARCH
/// Debian's name of `arch`; the man pages and completions generated in `out`).
fn build_deb(root: &Path, out: &Path, binary: &Path, arch: &Arch) -> Result<PathBuf> {
    eprintln!("xtask: dist: .deb ({})", arch.deb);
    let stage = out.join(format!("deb-{}", arch.deb));
    let _ = fs::remove_dir_all(&stage);
    for entry in layout(root, out, binary)? {
        let target = stage.join(&entry.target);
        fs::create_dir_all(target.parent().unwrap())?;
        let source = entry.source.display().to_string();
        let mut bytes = fs::read(&entry.source).context(source)?;
        if entry.target.ends_with(".service") {
            let unit = String::from_utf8(bytes)?;
            bytes = unit.replace(UNIT_BINARY.0, UNIT_BINARY.1).into_bytes();
        }
        if entry.gzip {
            // gzip writes NAME.gz; -n: no name or time stamp, so a page gives the same bytes.
            let plain = target.with_extension("");
            fs::write(&plain, &bytes)?;
            Cmd::new("gzip").args(["-9nf"]).arg(&plain).run()?;
        } else {
            fs::write(&target, &bytes)?;
        }
        set_mode(&target, entry.mode)?;
    }
    let doc = stage.join("usr/share/doc/tracekit/copyright");
    fs::write(&doc, copyright())?;
    set_mode(&doc, 0o644)?;

    let installed_kib = du_bytes(&stage)?.div_ceil(1024);
    let debian = stage.join("DEBIAN");
    fs::create_dir_all(&debian)?;
    fs::write(
        debian.join("control"),
        control(VERSION, arch.deb, installed_kib),
    )?;
    fs::write(debian.join("conffiles"), "/etc/tracekit/exporter.toml\n")?;
    let md5sums = Cmd::new("sh")
        .args([
            "-c",
            "find . -path ./DEBIAN -prune -o -type f -printf '%P\\0' | sort -z | xargs -0 md5sum",
        ])
        .current_dir(&stage)
        .stdout_only()?;
    fs::write(debian.join("md5sums"), md5sums)?;
    for file in ["control", "conffiles", "md5sums"] {
        set_mode(&debian.join(file), 0o644)?;
    }
    let deb = out.join(format!("tracekit_{VERSION}_{}.deb", arch.deb));
    Cmd::new("dpkg-deb")
        .args(["--root-owner-group", "--build"])
        .arg(&stage)
        .arg(&deb)
        .run()?;
    Ok(deb)
}

fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .with_context(|| path.display().to_string())
}

/// Bytes of the files under `dir`.
fn du_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() {
            du_bytes(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The package holds the binary, a page per generated man page, each shell's
    /// completions where that shell looks, the unit and the configuration.
    #[test]
    fn package_layout() {
        let root = workspace_root();
        // What `generate_docs` writes, in small.
        let generated = std::env::temp_dir().join(format!("xtask-dist-{}", std::process::id()));
        let _ = fs::remove_dir_all(&generated);
        for file in [
            "man/tracekit.1",
            "man/tracekit-profile.1",
            "man/tracekit-count.1",
            "completions/tracekit.bash",
            "completions/_tracekit",
            "completions/tracekit.fish",
        ] {
            fs::create_dir_all(generated.join(file).parent().unwrap()).unwrap();
            fs::write(generated.join(file), ".TH\n").unwrap();
        }
        let entries = layout(&root, &generated, Path::new("/b/tracekit")).unwrap();
        let targets: Vec<&str> = entries.iter().map(|e| e.target.as_str()).collect();
        assert_eq!(targets[0], "usr/bin/tracekit");
        assert_eq!(entries[0].mode, 0o755);
        let man: Vec<_> = entries.iter().filter(|e| e.gzip).collect();
        assert_eq!(man.len(), 3);
        assert!(targets.contains(&"usr/share/man/man1/tracekit-profile.1.gz"));
        assert!(targets.contains(&"usr/share/man/man1/tracekit.1.gz"));
        for target in [
            "usr/share/bash-completion/completions/tracekit",
            "usr/share/zsh/vendor-completions/_tracekit",
            "usr/share/fish/vendor_completions.d/tracekit.fish",
            "lib/systemd/system/tracekit-exporter.service",
            "etc/tracekit/exporter.toml",
        ] {
            assert!(targets.contains(&target), "{target}: {targets:?}");
        }
        for entry in &entries[1..] {
            assert_eq!(entry.mode, 0o644, "{entry:?}");
            assert!(entry.source.exists(), "{entry:?}");
        }
        fs::remove_dir_all(&generated).unwrap();
        let missing = layout(&root, &generated, Path::new("/b/tracekit")).unwrap_err();
        assert!(
            format!("{missing:#}").contains("(run `cargo xtask dist`)"),
            "{missing:#}"
        );
    }

    #[test]
    fn control_file() {
        assert!(
            control("1.2.3", "arm64", 1)
                .starts_with("Package: tracekit\nVersion: 1.2.3\nArchitecture: arm64\n")
        );
        let control = control("1.2.3", "amd64", 4321);
        assert!(control.starts_with("Package: tracekit\nVersion: 1.2.3\nArchitecture: amd64\n"));
        assert!(control.contains("\nInstalled-Size: 4321\n"));
        // Continuation lines start with a space; an empty one is " .".
        let description = control.split("\nDescription: ").nth(1).unwrap();
        for line in description.lines().skip(1) {
            assert!(line.starts_with(' ') && line.len() > 1, "{line:?}");
        }
        assert!(control.ends_with('\n'));
    }

    /// The unit in dist/ names the binary where the .deb does not put it; the .deb's copy
    /// is rewritten, so the path must stay findable.
    #[test]
    fn unit_names_the_binary() {
        let unit =
            fs::read_to_string(workspace_root().join("dist/tracekit-exporter.service")).unwrap();
        assert!(unit.contains(&format!("ExecStart={} exporter", UNIT_BINARY.0)));
    }

    /// An ELF with an interpreter or DT_NEEDED is not static; xtask itself (a glibc build)
    /// names its loader.
    #[test]
    fn static_check() {
        let me = fs::read(std::env::current_exe().unwrap()).unwrap();
        let why = not_static(&me).unwrap();
        assert!(
            why.starts_with("its loader is /lib64/ld-linux-x86-64.so.2"),
            "{why}"
        );
        assert_eq!(
            not_static(b"#!/bin/sh\n").unwrap(),
            "not a little-endian 64-bit ELF file"
        );
    }
}
