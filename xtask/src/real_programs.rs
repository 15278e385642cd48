//! Real programs from the package registries that the runtime tests run, unpacked under
//! `target/real-programs/` by `cargo xtask setup` (the same pins as the tests that use them):
//! JavaScript from npm (tests/tests/runtimes/node/real_programs.rs) and Python from PyPI
//! with py-spy, the profiler they are compared with (tests/tests/runtimes/python/real_programs.rs).

use std::path::Path;

use anyhow::{Context as _, Result, bail};

use crate::util::{Cmd, find_program};

/// The npm releases the Node tests run as real programs, each unpacked into
/// `target/real-programs/NAME-VERSION` (the same pins as
/// tests/tests/runtimes/node/real_programs.rs): TypeScript's compiler, and a project it
/// compiles (RxJS ships its TypeScript sources, 251 files). Each with its tarball's
/// `integrity` (sha512, as npm states it): another is refused.
const REAL_JS_PROGRAMS: [(&str, &str, &str); 2] = [
    (
        "typescript",
        "5.9.3",
        "sha512-jl1vZzPDinLr9eUt3J/t7V6FgNEw9QjvBPdysz9KfQDD41fQrC2Y4vKQdiaUpFT4bXlb1RHhLpp8wtm6M5TgSw==",
    ),
    (
        "rxjs",
        "7.8.1",
        "sha512-AA3TVj+0A2iuIoQkWEK/tqFjBq2j+6PO6Y0zJcvzLAFhEFIO3HL0vls9hWLncZbAAbK0mar7oZ4V079I/qPMxg==",
    ),
];

/// Unpacks [`REAL_JS_PROGRAMS`] that are not yet; true when one was.
pub fn javascript() -> Result<bool> {
    let dir = crate::util::workspace_root().join("target/real-programs");
    let mut unpacked = false;
    for (name, version, integrity) in REAL_JS_PROGRAMS {
        let into = dir.join(format!("{name}-{version}"));
        if into.join(".tracekit-done").is_file() {
            continue;
        }
        if find_program("npm").is_none() {
            bail!("no npm to fetch {name}@{version} with");
        }
        std::fs::create_dir_all(&into).with_context(|| format!("creating {}", into.display()))?;
        let packed = Cmd::new("npm")
            .args([
                "pack",
                "--silent",
                "--json",
                &format!("{name}@{version}"),
                "--pack-destination",
            ])
            .arg(&dir)
            .stdout_only()
            .with_context(|| format!("npm pack {name}@{version}"))?;
        let packed: serde_json::Value = serde_json::from_str(&packed)
            .with_context(|| format!("npm pack {name}@{version}: its --json"))?;
        let file = packed[0]["filename"].as_str().unwrap_or_default();
        let tarball = dir.join(file);
        if file.is_empty() || packed[0]["integrity"] != integrity {
            let _ = std::fs::remove_file(&tarball);
            bail!(
                "npm pack {name}@{version}: integrity {} is not the pinned {integrity}",
                packed[0]["integrity"]
            );
        }
        Cmd::new("tar")
            .arg("xzf")
            .arg(&tarball)
            .args(["--strip-components=1", "-C"])
            .arg(&into)
            .run()?;
        std::fs::remove_file(&tarball)
            .with_context(|| format!("removing {}", tarball.display()))?;
        std::fs::write(into.join(".tracekit-done"), "")?;
        unpacked = true;
    }
    Ok(unpacked)
}

/// The PyPI wheels the Python tests run, each `(name, version, sha256 of its wheel)`, pure
/// Python (`py3-none-any`) so that one download serves every CPython: pyflakes (a static
/// analyser), Pygments (a syntax highlighter) and Black (a formatter, its pure-Python wheel)
/// with Black's dependencies. pip refuses a wheel of another hash (`--require-hashes`).
const REAL_PY_PROGRAMS: [(&str, &str, &[&str]); 8] = [
    (
        "pyflakes",
        "4.1.0",
        &["b2e05e6bac8e49b67be2a6ffa63422c60f7193fc72e8180255907b41ec997dc1"],
    ),
    (
        "pygments",
        "2.19.2",
        &["86540386c03d588bb81d44bc3928634ff26449851e99741617ecb9037ee5ec0b"],
    ),
    (
        "black",
        "25.1.0",
        &["95e8176dae143ba9097f351d174fdaf0ccd29efb414b362ae3fd72bf0f710717"],
    ),
    (
        "click",
        "8.5.1",
        &["8bb5376d2006950386f8c6427613334a2acadc5f559cb80e638d00b4df957e37"],
    ),
    (
        "mypy_extensions",
        "1.2.0",
        &["993e7a20aa5671eb41a7132cf555af30062da99729601601b9a8382b11cae768"],
    ),
    (
        "packaging",
        "26.4",
        &["81383611a09c1bc0b08b76e0fd5829d7c6824c65b27a6aee339da133f4233ea2"],
    ),
    (
        "pathspec",
        "1.1.1",
        &["a00ce642f577bf7f473932318056212bc4f8bfdf53128c78bbd5af0b9b20b189"],
    ),
    (
        "platformdirs",
        "4.14.8",
        &["1e34af590de4d978631b751eb2202f2fee4497537a17c1720b12fcf57b331392"],
    ),
];

/// py-spy, CPython's sampling profiler the Python tests compare with: its manylinux
/// wheel holds the static binary (the x86_64 wheel's hash, then the aarch64 one's).
const PY_SPY: (&str, &str, &[&str]) = (
    "py-spy",
    "0.4.1",
    &[
        "6a80ec05eb8a6883863a367c6a4d4f2d57de68466f7956b6367d4edd5c61bb29",
        "ee776b9d512a011d1ad3907ed53ae32ce2f3d9ff3e1782236554e22103b5c084",
    ],
);

/// Unpacks [`REAL_PY_PROGRAMS`] into `target/real-programs/python/site` (a `PYTHONPATH`)
/// and [`PY_SPY`]'s binary to `target/real-programs/python/py-spy`, unless done; true
/// when it was done now.
pub fn python() -> Result<bool> {
    let dir = crate::util::workspace_root().join("target/real-programs/python");
    let done = dir.join(".tracekit-done");
    if done.is_file() {
        return Ok(false);
    }
    if find_program("python3").is_none() {
        bail!("no python3 to fetch the Python programs with (pip)");
    }
    let wheels = dir.join("wheels");
    std::fs::create_dir_all(&wheels).with_context(|| format!("creating {}", wheels.display()))?;
    // A requirements file: `--require-hashes` takes hashes from one only.
    let pin = |(name, version, hashes): &(&str, &str, &[&str])| {
        let hashes: Vec<String> = hashes
            .iter()
            .map(|h| format!("--hash=sha256:{h}"))
            .collect();
        format!("{name}=={version} {}\n", hashes.join(" "))
    };
    let download = |pins: Vec<String>, pure: bool| -> Result<()> {
        let requirements = wheels.join(if pure { "programs.txt" } else { "py-spy.txt" });
        std::fs::write(&requirements, pins.concat())?;
        let mut pip = Cmd::new("python3");
        pip.args([
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
        ]);
        if pure {
            // Not Black's mypyc build for the python3 that runs pip: Python code, as any
            // CPython in a distribution root would run it.
            pip.args([
                "--implementation",
                "py",
                "--abi",
                "none",
                "--platform",
                "any",
                "--python-version",
                "3.11",
            ]);
        }
        pip.arg("-d")
            .arg(&wheels)
            .arg("--require-hashes")
            .arg("-r")
            .arg(&requirements)
            .run()?;
        Ok(std::fs::remove_file(&requirements)?)
    };
    download(REAL_PY_PROGRAMS.iter().map(pin).collect(), true)
        .context("pip download of the Python programs")?;
    download(vec![pin(&PY_SPY)], false).context("pip download of py-spy")?;
    let site = dir.join("site");
    for entry in std::fs::read_dir(&wheels)? {
        let wheel = entry?.path();
        let into = if is_py_spy(&wheel) {
            dir.join("py-spy-wheel")
        } else {
            site.clone()
        };
        Cmd::new("python3")
            .args(["-m", "zipfile", "-e"])
            .arg(&wheel)
            .arg(&into)
            .run()?;
    }
    let binary = dir
        .join("py-spy-wheel")
        .join(format!("py_spy-{}.data/scripts/py-spy", PY_SPY.1));
    let py_spy = dir.join("py-spy");
    std::fs::copy(&binary, &py_spy)
        .with_context(|| format!("copying {} out of its wheel", binary.display()))?;
    std::fs::set_permissions(&py_spy, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    std::fs::remove_dir_all(dir.join("py-spy-wheel"))?;
    std::fs::remove_dir_all(&wheels)?;
    std::fs::write(done, "")?;
    Ok(true)
}

fn is_py_spy(wheel: &Path) -> bool {
    wheel
        .file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.starts_with("py_spy-"))
}
