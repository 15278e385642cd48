//! `cargo xtask test --vm`: the kernel test matrix. Boots stock Debian kernels (Debian 11's
//! 5.10 LTS, 6.1 LTS, 6.12 LTS; `--kernel` picks some) under qemu with an initramfs holding
//! static builds of tracekit, the integration tests and their fixtures, runs the tests that
//! need what the development machine's kernel lacks (kprobes, BPF trampolines, older
//! kernels' paths), and reads a verdict line from the console. Kernel packages and the
//! initramfs are cached under `target/vm/`.
//!
//! KVM is used when `/dev/kvm` works; otherwise TCG emulation (nested KVM fails on the
//! development machines), where everything runs 2-10x slower.

use std::{
    io::{BufRead as _, BufReader},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result, bail};

use crate::{
    setup::apt_install,
    util::{Cmd, cargo, find_program, workspace_root},
};

pub const MUSL: &str = "x86_64-unknown-linux-musl";
/// The C compiler cc-rs uses for the musl target (ring's C and assembly).
pub const MUSL_CC: (&str, &str) = ("CC_x86_64_unknown_linux_musl", "musl-gcc");
const VERDICT: &str = "TRACEKIT-VM-RESULT";

/// The tests run in each kernel.
pub const VM_TESTS: &[&str] = &[
    "kfunc_",
    // The kernel-function tools' one-line refusals (tests/tests/tools/kernel_function_tools.rs).
    "kernel_function_tools_say_what_is_missing",
    "mdflush_says_what_is_missing",
    "engine_exact_syscall_counts",
    // Raw tracepoints, their fast paths and the classic fallback agree.
    "hooks_",
    "ufunc_funccount_exact",
    "unwind_nofp",
    "unwind_leaf",
    // pyenv's 3.12 is in the image (add_python); the other versions say they are not.
    "python_chain_3_",
    // tcpaccept's descriptor walk (sock(ret)) against 6.1's and 6.12's layouts,
    // and its io_uring accepts (sock(res), io_kiocb and io_accept through casts).
    "network_tcpaccept_",
    "network_count_filters_io_uring",
    // offcpu's exact attribution on every kernel of the matrix (5.10's first of all: no
    // bpf_loop, no bpf_task_pt_regs). hist's and biolatency's tests write with O_DIRECT,
    // which the initramfs refuses, and runqlat's bounds assume real CPUs: not here.
    "everyday_offcpu_sleep_attributed",
];

/// A kernel of the matrix: a Debian package name pattern.
struct Kernel {
    label: &'static str,
    /// Picks the newest `linux-image-...-amd64` matching this.
    matches: fn(&str) -> bool,
    /// A Debian suite other than the system's to find the package in, read through a private
    /// source list under the cache (the system's sources are left alone); `None`: the
    /// system's sources.
    suite: Option<&'static str>,
}

const KERNELS: [Kernel; 3] = [
    // Debian 11 (bullseye): the oldest kernel the matrix proves (BTF on, no bpf_loop).
    Kernel {
        label: "5.10",
        matches: |p| {
            p.starts_with("linux-image-5.10.0-")
                && p.ends_with("-amd64-unsigned")
                && !p.contains("cloud")
                && !p.contains("-rt-")
        },
        suite: Some("bullseye"),
    },
    Kernel {
        label: "6.1",
        matches: |p| {
            p.starts_with("linux-image-6.1.0-")
                && p.ends_with("-amd64")
                && !p.contains("cloud")
                && !p.contains("-rt-")
        },
        suite: None,
    },
    Kernel {
        label: "6.12",
        matches: |p| p.starts_with("linux-image-6.12.") && p.ends_with("+deb12-amd64"),
        suite: None,
    },
];

/// The kernels of the matrix `only` names by label (`5.10`, `6.1`, `6.12`); all of them when
/// it is empty.
fn selected_kernels(only: &[String]) -> Result<Vec<&'static Kernel>> {
    if let Some(unknown) = only
        .iter()
        .find(|label| !KERNELS.iter().any(|k| k.label == label.as_str()))
    {
        let labels: Vec<&str> = KERNELS.iter().map(|k| k.label).collect();
        bail!("--kernel {unknown}: the matrix has {}", labels.join(", "));
    }
    Ok(KERNELS
        .iter()
        .filter(|k| only.is_empty() || only.iter().any(|label| label == k.label))
        .collect())
}

/// Runs the matrix (the kernels `only` names, or all); returns whether every kernel passed.
pub fn run(extra_filter: Option<&str>, only: &[String]) -> Result<bool> {
    let root = workspace_root();
    let dir = root.join("target/vm");
    std::fs::create_dir_all(&dir)?;
    let kernels = selected_kernels(only)?;
    prerequisites()?;
    // The kernels first: the image carries each one's filesystem modules (add_ext4).
    let vmlinuzes = kernels
        .iter()
        .map(|kernel| fetch_kernel(&dir, kernel))
        .collect::<Result<Vec<_>>>()?;
    let initramfs = build_initramfs(&dir)?;
    let mut filters: Vec<String> = VM_TESTS.iter().map(|s| s.to_string()).collect();
    if let Some(filter) = extra_filter {
        filters = vec![filter.to_string()];
    }
    let mut results = Vec::new();
    let mut kvm = kvm_available();
    for (kernel, vmlinuz) in kernels.iter().zip(vmlinuzes) {
        eprintln!(
            "xtask: vm {}: booting {} ({})",
            kernel.label,
            vmlinuz.display(),
            if kvm { "KVM" } else { "TCG emulation" }
        );
        let started = Instant::now();
        let mut outcome = boot(&vmlinuz, &initramfs, &filters, kernel.label, kvm)?;
        if kvm && outcome == Boot::NoInit {
            eprintln!(
                "xtask: vm: KVM does not boot here (nested KVM?); using TCG emulation from now on"
            );
            kvm = false;
            outcome = boot(&vmlinuz, &initramfs, &filters, kernel.label, kvm)?;
        }
        if outcome == Boot::Timeout {
            // A TCG guest has hung once after an RCU stall ("rcu_preempt detected stalls")
            // in a test that passed in every run before it: one more boot tells a
            // hung emulator from a test that hangs.
            eprintln!(
                "xtask: vm {}: the guest gave no verdict; booting it once more",
                kernel.label
            );
            outcome = boot(&vmlinuz, &initramfs, &filters, kernel.label, kvm)?;
        }
        let passed = outcome == Boot::Verdict(true);
        eprintln!(
            "xtask: vm {}: {} in {:.0} s",
            kernel.label,
            if passed { "PASS" } else { "FAIL" },
            started.elapsed().as_secs_f64()
        );
        results.push((kernel.label, passed));
    }
    eprintln!("xtask: kernel matrix:");
    for (label, passed) in &results {
        eprintln!("  linux {label}: {}", if *passed { "pass" } else { "FAIL" });
    }
    Ok(results.iter().all(|(_, passed)| *passed))
}

fn prerequisites() -> Result<()> {
    let mut missing = Vec::new();
    if find_program("qemu-system-x86_64").is_none() {
        missing.push("qemu-system-x86");
    }
    if !Path::new("/bin/busybox").exists() {
        missing.push("busybox-static");
    }
    if find_program("cpio").is_none() {
        missing.push("cpio");
    }
    if !missing.is_empty() {
        apt_install(&missing)?;
    }
    ensure_musl()
}

/// Installs what building for [`MUSL`] needs when it is missing: rustup's target, and
/// musl-gcc (ring, under rustls and the debuginfod client, compiles C for the target).
pub fn ensure_musl() -> Result<()> {
    if find_program(MUSL_CC.1).is_none() {
        apt_install(&["musl-tools"])?;
    }
    let targets = Cmd::new("rustup")
        .args(["target", "list", "--installed"])
        .output_ok()
        .unwrap_or_default();
    if !targets.lines().any(|t| t.trim() == MUSL) {
        Cmd::new("rustup").args(["target", "add", MUSL]).run()?;
    }
    Ok(())
}

/// Builds the static release binary (`target/x86_64-unknown-linux-musl/release/tracekit`),
/// kernel programs required; [`ensure_musl`] first.
pub fn build_static_tracekit() -> Result<PathBuf> {
    cargo()
        .args([
            "build",
            "--release",
            "--package",
            "tracekit",
            "--target",
            MUSL,
        ])
        .env("TRACEKIT_EBPF", "require")
        .env(MUSL_CC.0, MUSL_CC.1)
        .run()
        .context("building the static binary")?;
    Ok(workspace_root().join(format!("target/{MUSL}/release/tracekit")))
}

/// Builds (or reuses) the initramfs: busybox, static tracekit, the static integration test
/// binary, static fixtures, and `/init`.
fn build_initramfs(dir: &Path) -> Result<PathBuf> {
    let root = workspace_root();
    eprintln!("xtask: vm: building static binaries ({MUSL})");
    build_static_tracekit()?;
    let output = cargo()
        .args([
            "test",
            "--release",
            "--no-run",
            "--package",
            "tracekit-tests",
            "--target",
            MUSL,
        ])
        .args(["--test", "integration", "--message-format=json"])
        .env("TRACEKIT_EBPF", "require")
        .env(MUSL_CC.0, MUSL_CC.1)
        .stdout_only()
        .context("building the integration tests for the VM")?;
    let tests = output
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["target"]["name"] == "integration")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .context("no integration test executable in cargo's output")?;

    let image = dir.join("image");
    let _ = std::fs::remove_dir_all(&image);
    for sub in ["bin", "fixtures", "proc", "sys", "dev", "tmp", "root"] {
        std::fs::create_dir_all(image.join(sub))?;
    }
    std::fs::copy("/bin/busybox", image.join("bin/busybox"))?;
    std::fs::copy(
        root.join(format!("target/{MUSL}/release/tracekit")),
        image.join("bin/tracekit"),
    )?;
    std::fs::copy(&tests, image.join("bin/integration"))?;
    // The flags of tests/src/lib.rs's fixture_flags, plus -static.
    let fixtures: [(&str, &[&str]); 11] = [
        ("tk_reads.c", &["-O0", "-g", "-fno-omit-frame-pointer"]),
        ("tk_churn.c", &["-O0", "-g", "-fno-omit-frame-pointer"]),
        ("tk_rename.c", &["-O0", "-g", "-fno-omit-frame-pointer"]),
        ("tk_tcp.c", &["-O0", "-g", "-fno-omit-frame-pointer"]),
        ("tk_syscalls.c", &["-O0", "-g", "-fno-omit-frame-pointer"]),
        ("tk_funcs.c", &["-O0", "-g", "-fno-omit-frame-pointer"]),
        ("tk_burner.c", &["-O0", "-g", "-fno-omit-frame-pointer"]),
        ("tk_files.c", &["-O0", "-g", "-fno-omit-frame-pointer"]),
        ("tk_fsync.c", &["-O0", "-g"]),
        ("tk_nofp.c", &["-O2", "-g", "-fomit-frame-pointer"]),
        (
            "tk_leaf.cpp",
            &[
                "-O2",
                "-g",
                "-fno-omit-frame-pointer",
                "-momit-leaf-frame-pointer",
            ],
        ),
    ];
    for (source, flags) in fixtures {
        let (fixture, compiler) = match source.strip_suffix(".cpp") {
            Some(fixture) => (fixture, "g++"),
            None => (source.trim_end_matches(".c"), "gcc"),
        };
        Cmd::new(compiler)
            .arg("-static")
            .args(flags)
            .arg("-o")
            .arg(image.join("fixtures").join(fixture))
            .arg(root.join("tests/fixtures").join(source))
            .run()?;
    }
    add_python(&image, &root)?;
    add_ext4(&image, dir)?;
    let init = image.join("init");
    std::fs::write(&init, INIT)?;
    Cmd::new("chmod").arg("+x").arg(&init).run()?;
    let initramfs = dir.join("initramfs.cpio");
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "cd {} && find . | cpio --quiet -o -H newc > {}",
            image.display(),
            initramfs.display()
        ))
        .status()?;
    if !status.success() {
        bail!("building the initramfs failed");
    }
    Ok(initramfs)
}

/// The CPython of the interpreter tests in the VMs: pyenv's 3.12 where it is installed
/// (else the tests print that it is not, and skip), copied to the same paths in the image
/// with what it loads: `libpython`, glibc's loader, `libc` and `libm`, and the part of the
/// standard library that is not frozen into it (`encodings`, plus `os.py`, the landmark its
/// prefix is found by), and the Python fixtures at the path the test binary names them by.
const VM_PYTHON: &str = "/root/.pyenv/versions/3.12.1";

fn add_python(image: &Path, root: &Path) -> Result<()> {
    let prefix = Path::new(VM_PYTHON);
    if !prefix.join("bin/python3.12").is_file() {
        eprintln!("xtask: vm: {VM_PYTHON} is not installed: the Python tests will skip");
        return Ok(());
    }
    let inside = |path: &Path| image.join(path.strip_prefix("/").unwrap_or(path));
    let copy = |path: &Path| -> Result<()> {
        let to = inside(path);
        std::fs::create_dir_all(to.parent().expect("a file in a directory"))?;
        // The file, not the link (the loader and pyenv's python3 are links).
        std::fs::copy(path, &to).with_context(|| format!("copying {}", path.display()))?;
        Ok(())
    };
    copy(&prefix.join("bin/python3.12"))?;
    std::fs::copy(
        prefix.join("bin/python3.12"),
        inside(&prefix.join("bin/python3")),
    )?;
    copy(&prefix.join("lib/libpython3.12.so.1.0"))?;
    for lib in [
        "/lib64/ld-linux-x86-64.so.2",
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/lib/x86_64-linux-gnu/libm.so.6",
    ] {
        copy(Path::new(lib))?;
    }
    let stdlib = prefix.join("lib/python3.12");
    copy(&stdlib.join("os.py"))?;
    std::fs::create_dir_all(inside(&stdlib.join("lib-dynload")))?;
    for entry in std::fs::read_dir(stdlib.join("encodings"))? {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "py") {
            copy(&path)?;
        }
    }
    for fixture in ["py_chain.py", "py_threads.py"] {
        copy(&root.join("tests/fixtures").join(fixture))?;
    }
    Ok(())
}

/// The modules an ext4 filesystem on a loop device needs (Debian builds them as modules), in
/// load order.
const EXT4_MODULES: [&str; 6] = [
    "lib/crc16",
    "crypto/crc32c_generic",
    "fs/mbcache",
    "fs/jbd2/jbd2",
    "fs/ext4/ext4",
    "drivers/block/loop",
];

/// The modules of an md RAID1 array (mdflush's test, tests/tests/tools/kernel_function_tools.rs), in load
/// order: `/init` builds `/dev/md0` from two loop devices through sysfs (no mdadm).
const MD_MODULES: [&str; 2] = ["drivers/md/md-mod", "drivers/md/raid1"];

/// The modules of xfs and btrfs with what they depend on, in load order (each `.ko`'s
/// `depends=`; `zstd_compress` is 6.1's alone): `fsdist`/`fsslower --fs xfs|btrfs` attach
/// to their functions in the VM (tests/tests/tools/filesystem.rs). nfs is left out: the test of a
/// filesystem whose module is not loaded needs one.
const XFS_BTRFS_MODULES: [&str; 6] = [
    "lib/libcrc32c",
    "fs/xfs/xfs",
    "crypto/xor",
    "lib/raid6/raid6_pq",
    "lib/zstd/zstd_compress",
    "fs/btrfs/btrfs",
];

/// For the filesystem tools' tests (tests/tests/tools/filesystem.rs): each kernel's
/// [`EXT4_MODULES`], uncompressed, under `/lib/modules/VERSION/` (busybox's insmod reads
/// plain `.ko` files), and `/ext4.img`, an 8 MiB ext4 filesystem made by the host's
/// `mkfs.ext4` without `metadata_csum`. `crc32c_generic` is among the modules all the same:
/// without it the mount failed with ENOENT on 6.1 and 6.12 (the crypto API's "not found").
/// `/init` loads the modules and mounts the image at `/mnt/ext4`. Without `mkfs.ext4` the
/// tests say that no ext4 filesystem is mounted, and skip.
fn add_ext4(image: &Path, dir: &Path) -> Result<()> {
    let Ok(kernels) = std::fs::read_dir(dir.join("kernels")) else {
        return Ok(());
    };
    for kernel in kernels.flatten() {
        let Ok(versions) = std::fs::read_dir(kernel.path().join("lib/modules")) else {
            continue;
        };
        for version in versions.flatten() {
            let to = image.join("lib/modules").join(version.file_name());
            std::fs::create_dir_all(&to)?;
            for module in EXT4_MODULES
                .iter()
                .chain(&MD_MODULES)
                .chain(&XFS_BTRFS_MODULES)
            {
                let from = version.path().join("kernel").join(module);
                let name = format!("{}.ko", module.rsplit('/').next().unwrap_or(module));
                let plain = from.with_extension("ko");
                let xz = from.with_extension("ko.xz");
                if plain.is_file() {
                    std::fs::copy(&plain, to.join(&name))?;
                } else if xz.is_file() {
                    let out = Command::new("xz").arg("-dc").arg(&xz).output()?;
                    if !out.status.success() {
                        bail!("xz -dc {} failed", xz.display());
                    }
                    std::fs::write(to.join(&name), out.stdout)?;
                }
            }
        }
    }
    match find_program("mkfs.ext4") {
        Some(mkfs) => Cmd::new(mkfs)
            .args(["-q", "-F", "-O", "^metadata_csum", "-b", "4096"])
            .arg(image.join("ext4.img"))
            .arg("8M")
            .run()?,
        None => eprintln!("xtask: vm: no mkfs.ext4 (e2fsprogs): the ext4 tests will skip"),
    }
    Ok(())
}

/// `/init`: mount what tracing needs, run the tests named on the kernel command line,
/// print the verdict, power off. No tmpfs on `/tmp`: the initramfs is in memory and
/// writable already, and a workspace under `/tmp` (a CI clone) has its fixtures copied there,
/// which a mount would hide.
const INIT: &str = r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tracefs nodev /sys/kernel/tracing
mount -t debugfs nodev /sys/kernel/debug
ip link set lo up
# An ext4 filesystem for the filesystem tools' tests (add_ext4).
for m in crc16 crc32c_generic mbcache jbd2 ext4 loop; do
  [ -f /lib/modules/$(uname -r)/$m.ko ] && insmod /lib/modules/$(uname -r)/$m.ko
done
if [ -f /ext4.img ]; then
  # devtmpfs makes the loop nodes a moment after the module loads.
  for i in $(seq 50); do [ -b /dev/loop0 ] && break; sleep 0.1; done
  mkdir -p /mnt/ext4
  losetup /dev/loop0 /ext4.img && mount -t ext4 /dev/loop0 /mnt/ext4 || dmesg | tail -5 | sed 's/^/dmesg: /'
fi
# xfs and btrfs (XFS_BTRFS_MODULES), for their functions: no filesystem of theirs is made.
for m in libcrc32c xfs xor raid6_pq zstd_compress btrfs; do
  [ -f /lib/modules/$(uname -r)/$m.ko ] && insmod /lib/modules/$(uname -r)/$m.ko
done
# An md RAID1 array, /dev/md0, on /dev/loop1 and /dev/loop2 (8 MiB each), built through
# sysfs without metadata (Documentation/admin-guide/md.rst) and started in sync.
if insmod /lib/modules/$(uname -r)/md-mod.ko && insmod /lib/modules/$(uname -r)/raid1.ko; then
  dd if=/dev/zero of=/md1.img bs=1M count=8 2>/dev/null
  dd if=/dev/zero of=/md2.img bs=1M count=8 2>/dev/null
  losetup /dev/loop1 /md1.img && losetup /dev/loop2 /md2.img
  echo md0 > /sys/module/md_mod/parameters/new_array
  md=/sys/block/md0/md
  echo none > $md/metadata_version
  echo raid1 > $md/level
  echo 2 > $md/raid_disks
  for n in 1 2; do
    echo 7:$n > $md/new_dev
    echo $((n - 1)) > $md/dev-loop$n/slot
    echo 8192 > $md/dev-loop$n/size
  done
  echo 8192 > $md/component_size
  echo none > $md/resync_start
  echo active > $md/array_state || dmesg | grep -E 'md|raid' | tail -5 | sed 's/^/dmesg: /'
fi
filters=$(sed -n 's/.*tracekit.tests=\([^ ]*\).*/\1/p' /proc/cmdline | tr ',' ' ')
export TRACEKIT_VM_EMULATED=$(sed -n 's/.*tracekit.emulated=\([01]\).*/\1/p' /proc/cmdline)
echo "TRACEKIT-VM-KERNEL $(uname -r)"
TRACEKIT_BIN=/bin/tracekit TRACEKIT_FIXTURES=/fixtures /bin/integration --test-threads=1 $filters
if [ $? -eq 0 ]; then echo "TRACEKIT-VM-RESULT PASS"; else echo "TRACEKIT-VM-RESULT FAIL"; fi
poweroff -f
"#;

/// `/init` of [`smoke`]: the static binary's `profile -a` and `count` on the guest's kernel.
const SMOKE_INIT: &str = r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tracefs nodev /sys/kernel/tracing
mount -t debugfs nodev /sys/kernel/debug
mount -t tmpfs tmpfs /tmp
echo "TRACEKIT-VM-KERNEL $(uname -r)"
ok=1
# Something on CPU to sample: an idle guest gives a whole-machine profile no samples at all.
(while :; do :; done) &
burner=$!
tracekit profile -a -d 2 -o /tmp/profile.folded || ok=0
kill $burner
echo "profile -a -d 2: $(wc -l < /tmp/profile.folded) stacks"
[ -s /tmp/profile.folded ] || ok=0
tracekit count raw_syscalls:sys_enter -d 1 > /tmp/count.txt || ok=0
cat /tmp/count.txt
grep -q 'raw_syscalls:sys_enter' /tmp/count.txt || ok=0
if [ $ok -eq 1 ]; then echo "TRACEKIT-VM-RESULT PASS"; else echo "TRACEKIT-VM-RESULT FAIL"; fi
poweroff -f
"#;

/// Boots the 6.1 kernel of the matrix with only busybox and `binary` (a static tracekit),
/// which runs `profile -a -d 2` and `count raw_syscalls:sys_enter -d 1`; returns whether
/// both ran and printed what they count.
pub fn smoke(binary: &Path) -> Result<bool> {
    let dir = workspace_root().join("target/vm");
    std::fs::create_dir_all(&dir)?;
    prerequisites()?;
    let image = dir.join("smoke-image");
    let _ = std::fs::remove_dir_all(&image);
    for sub in ["bin", "proc", "sys", "dev", "tmp", "root"] {
        std::fs::create_dir_all(image.join(sub))?;
    }
    std::fs::copy("/bin/busybox", image.join("bin/busybox"))?;
    std::fs::copy(binary, image.join("bin/tracekit"))?;
    let init = image.join("init");
    std::fs::write(&init, SMOKE_INIT)?;
    Cmd::new("chmod").arg("+x").arg(&init).run()?;
    let initramfs = dir.join("smoke.cpio");
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "cd {} && find . | cpio --quiet -o -H newc > {}",
            image.display(),
            initramfs.display()
        ))
        .status()?;
    if !status.success() {
        bail!("building the smoke initramfs failed");
    }
    let kernel = KERNELS
        .iter()
        .find(|k| k.label == "6.1")
        .expect("6.1 is in the matrix");
    let vmlinuz = fetch_kernel(&dir, kernel)?;
    let mut kvm = kvm_available();
    eprintln!(
        "xtask: vm {}: static binary smoke test ({})",
        kernel.label,
        if kvm { "KVM" } else { "TCG emulation" }
    );
    let mut outcome = boot(&vmlinuz, &initramfs, &[], kernel.label, kvm)?;
    if kvm && outcome == Boot::NoInit {
        kvm = false;
        outcome = boot(&vmlinuz, &initramfs, &[], kernel.label, kvm)?;
    }
    Ok(outcome == Boot::Verdict(true))
}

/// The kernel image of `kernel`, downloaded and unpacked once into the cache.
fn fetch_kernel(dir: &Path, kernel: &Kernel) -> Result<PathBuf> {
    let cache = dir.join("kernels").join(kernel.label);
    if let Some(vmlinuz) = find_vmlinuz(&cache) {
        return Ok(vmlinuz);
    }
    std::fs::create_dir_all(&cache)?;
    let apt = apt_options(dir, kernel)?;
    let package = newest_package(kernel, &apt)?;
    eprintln!("xtask: vm {}: downloading {package}", kernel.label);
    let download = || {
        Cmd::new("apt-get")
            .args(&apt)
            .args(["download", &package])
            .current_dir(&cache)
            .run()
    };
    if download().is_err() {
        Cmd::new("apt-get").args(&apt).arg("update").run()?;
        download()?;
    }
    let deb = std::fs::read_dir(&cache)?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "deb"))
        .context("apt-get download left no .deb")?;
    Cmd::new("dpkg-deb").arg("-x").arg(&deb).arg(&cache).run()?;
    let _ = std::fs::remove_file(&deb);
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

/// The options of `apt-get` and `apt-cache` that read `kernel.suite` through a private
/// source list, lists and package cache under `dir/apt-SUITE/` (none for the system's
/// sources). The system's own sources and lists are not read or touched.
fn apt_options(dir: &Path, kernel: &Kernel) -> Result<Vec<String>> {
    let Some(suite) = kernel.suite else {
        return Ok(Vec::new());
    };
    let apt = dir.join(format!("apt-{suite}"));
    let lists = apt.join("lists");
    let cache = apt.join("cache");
    std::fs::create_dir_all(lists.join("partial"))?;
    std::fs::create_dir_all(cache.join("archives/partial"))?;
    let sources = apt.join("sources.list");
    std::fs::write(
        &sources,
        format!("deb http://deb.debian.org/debian {suite} main\n"),
    )?;
    Ok(vec![
        "-o".into(),
        format!("Dir::Etc::SourceList={}", sources.display()),
        "-o".into(),
        "Dir::Etc::SourceParts=/dev/null".into(),
        "-o".into(),
        format!("Dir::State::Lists={}", lists.display()),
        "-o".into(),
        format!("Dir::Cache={}", cache.display()),
    ])
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
        .with_context(|| format!("no Debian linux-image package for {}", kernel.label))
}

/// Numeric parts of a package name, for ordering versions.
fn version_key(package: &str) -> Vec<u64> {
    package
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|part| part.parse().ok())
        .collect()
}

/// Whether `/dev/kvm` opens (`TRACEKIT_VM_NO_KVM` set: do not try).
fn kvm_available() -> bool {
    std::env::var_os("TRACEKIT_VM_NO_KVM").is_none()
        && std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/kvm")
            .is_ok()
}

/// How a boot ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Boot {
    /// The tests ran; did they pass.
    Verdict(bool),
    /// `/init` never started (KVM that does not work hangs silently).
    NoInit,
    /// `/init` started, but no verdict came in time.
    Timeout,
}

/// Boots `vmlinuz` with the initramfs, echoing test lines.
fn boot(
    vmlinuz: &Path,
    initramfs: &Path,
    filters: &[String],
    label: &str,
    kvm: bool,
) -> Result<Boot> {
    let accel = if kvm { "kvm" } else { "tcg,thread=multi" };
    let cpu = if kvm { "host" } else { "max" };
    let mut child = Command::new("qemu-system-x86_64")
        .args(["-accel", accel, "-cpu", cpu, "-m", "1024", "-smp", "2"])
        .args(["-nographic", "-no-reboot", "-kernel"])
        .arg(vmlinuz)
        .arg("-initrd")
        .arg(initramfs)
        .arg("-append")
        .arg(format!(
            "console=ttyS0 panic=-1 quiet tsc=reliable tracekit.tests={} tracekit.emulated={}",
            filters.join(","),
            u8::from(!kvm)
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("starting qemu-system-x86_64")?;
    let stdout = child.stdout.take().expect("piped");
    let (sender, receiver) = std::sync::mpsc::channel();
    let (init_sender, init_receiver) = std::sync::mpsc::channel();
    let tag = label.to_string();
    let reader = std::thread::spawn(move || {
        let mut verdict = None;
        for line in BufReader::new(stdout)
            .lines()
            .map_while(std::result::Result::ok)
        {
            let line = line.trim_end().to_string();
            // Kernel messages may share the console line: look anywhere in it.
            if line.contains("TRACEKIT-VM-KERNEL") {
                let _ = init_sender.send(());
            }
            if let Some(at) = line.find(VERDICT) {
                verdict = Some(line[at + VERDICT.len()..].trim_start().starts_with("PASS"));
            } else if !line.is_empty() && !line.starts_with('[') && !line.contains("\x1b") {
                // The tests' own output (kernel messages start with "[  time]").
                eprintln!("  [{tag}] {line}");
            }
        }
        let _ = sender.send(verdict);
    });
    let boot_limit = Duration::from_secs(if kvm { 30 } else { 300 });
    if init_receiver.recv_timeout(boot_limit).is_err() {
        let _ = child.kill();
        let _ = child.wait();
        let _ = reader.join();
        eprintln!("xtask: vm {label}: /init did not start within {boot_limit:?}");
        return Ok(Boot::NoInit);
    }
    let limit = Duration::from_secs(if kvm { 300 } else { 900 });
    let outcome = match receiver.recv_timeout(limit) {
        Ok(Some(passed)) => Boot::Verdict(passed),
        Ok(None) => Boot::Verdict(false),
        Err(_) => {
            eprintln!("xtask: vm {label}: no verdict within {limit:?}");
            Boot::Timeout
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
    Ok(outcome)
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
        let labels = |only: &[&str]| -> Vec<&str> {
            let only: Vec<String> = only.iter().map(|s| s.to_string()).collect();
            selected_kernels(&only)
                .unwrap()
                .iter()
                .map(|k| k.label)
                .collect()
        };
        assert_eq!(labels(&[]), ["5.10", "6.1", "6.12"]);
        assert_eq!(labels(&["6.12", "5.10"]), ["5.10", "6.12"]);
        assert!(selected_kernels(&["5.4".to_string()]).is_err());
        let mut packages = ["linux-image-6.1.0-9-amd64", "linux-image-6.1.0-56-amd64"];
        packages.sort_by_key(|p| version_key(p));
        assert_eq!(packages.last(), Some(&"linux-image-6.1.0-56-amd64"));
    }
}
