//! Distribution roots for the runtime tests: Debian suites made with `debootstrap`
//! (`--variant=minbase`) under `target/roots/<suite>`, holding the runtimes as those
//! suites ship them (Ruby 3.3 and PHP 8.4 with real programs and their own profilers,
//! Debian's `libnode` builds of Node 20, 18 and 24, CPython 3.14, OpenJDK 25). The tests
//! run the fixtures inside a root with `chroot` and profile them from the host; they find the
//! roots through `TRACEKIT_ROOTS` (set by `integration_tests`).
//!
//! A root is made once (~2.5 min, ~700 MB) and kept: `target/roots/<suite>/.tracekit-done`
//! marks a finished one. A failed debootstrap (no network, no mirror) is said and the tests
//! that need the root skip, naming it.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::{
    setup::apt_install,
    util::{Cmd, find_program, workspace_root},
};

/// A suite and the packages its root holds.
pub struct Suite {
    /// Debian's codename (`trixie`: Debian 13).
    pub name: &'static str,
    /// `debootstrap --include`.
    pub packages: &'static [&'static str],
    /// debootstrap's script for the suite, when it has none of the suite's own name (Debian
    /// 12's debootstrap predates forky: sid's script serves it).
    pub script: Option<&'static str>,
}

/// The roots the integration tests use.
pub const SUITES: &[Suite] = &[
    // With real programs and each runtime's own sampling profiler (stackprof, Excimer) for
    // the tests that compare with them (~3.5 min, ~650 MB).
    Suite {
        name: "trixie",
        packages: &[
            "ruby",
            "php-cli",
            "python3",
            "nodejs",
            "ruby-stackprof",
            "rubocop",
            "asciidoctor",
            "ruby-kramdown",
            "ruby-rouge",
            "php8.4-excimer",
            "php-parser",
            "php-league-commonmark",
            "php-twig",
            "composer",
        ],
        script: None,
    },
    // Debian 12 is the hosts' own distribution: only its node (18, libnode.so.108) is not
    // installed on them (~1.5 min, ~320 MB).
    Suite {
        name: "bookworm",
        packages: &["nodejs"],
        script: None,
    },
    // Debian testing: the next release's CPython 3.14, Node 24 (`libnode.so.137`) and
    // OpenJDK 25 (~1.7 min, ~720 MB; OpenJDK 25 adds ~300 MB).
    Suite {
        name: "forky",
        packages: &["python3", "nodejs", "openjdk-25-jre-headless"],
        script: Some("/usr/share/debootstrap/scripts/sid"),
    },
];

/// The Debian mirror the roots come from (the host's own).
const MIRROR: &str = "http://deb.debian.org/debian";

/// Where the roots are: `target/roots`.
pub fn dir() -> PathBuf {
    workspace_root().join("target/roots")
}

/// Makes each root of [`SUITES`] that is missing, saying what it did; a root that cannot be
/// made is reported and left out (its tests skip with the reason).
pub fn ensure() -> Result<()> {
    if find_program("debootstrap").is_none()
        && let Err(err) = apt_install(&["debootstrap"])
    {
        eprintln!("xtask: roots: {err:#} (the distribution roots' tests will be skipped)");
        return Ok(());
    }
    for suite in SUITES {
        let root = dir().join(suite.name);
        if done(&root) {
            continue;
        }
        let started = std::time::Instant::now();
        eprintln!(
            "xtask: roots: debootstrap {} into {} ({})",
            suite.name,
            root.display(),
            suite.packages.join(",")
        );
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root)?;
        let made = Cmd::new("debootstrap")
            .args([
                "--variant=minbase",
                &format!("--include={}", suite.packages.join(",")),
                suite.name,
            ])
            .arg(&root)
            .arg(MIRROR)
            .args(suite.script)
            .run();
        match made {
            Ok(()) => {
                std::fs::write(root.join(".tracekit-done"), suite.packages.join(",") + "\n")?;
                eprintln!(
                    "xtask: roots: {} made in {:.0} s",
                    suite.name,
                    started.elapsed().as_secs_f64()
                );
            }
            Err(err) => eprintln!(
                "xtask: roots: {}: {err:#} (its tests will be skipped)",
                suite.name
            ),
        }
    }
    Ok(())
}

/// A root is finished when debootstrap got to the end and it holds the packages asked now.
fn done(root: &Path) -> bool {
    let asked = SUITES
        .iter()
        .find(|suite| root.ends_with(suite.name))
        .map(|suite| suite.packages.join(","));
    std::fs::read_to_string(root.join(".tracekit-done"))
        .is_ok_and(|made| Some(made.trim().to_string()) == asked)
}
