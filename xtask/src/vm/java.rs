//! Debian 12's arm64 OpenJDK 17 in the arm64 image, trimmed to what a JVM running the Java
//! fixtures loads: the `java` launcher, `libjvm.so`, the JDK libraries the JVM and the
//! launcher load, and of the module image (`lib/modules`, 129 MB) the classes of the
//! packages `java.base` loads them from, unpacked as an exploded module (HotSpot reads
//! `JAVA_HOME/modules/java.base/` when there is no `lib/modules`; 19 MB). The class data
//! sharing archives are left out: they belong to the module image, and the JVM runs without
//! them.

use std::path::Path;

use anyhow::{Context as _, Result};

use super::image::{copy_debian, copy_into, unpacked_once};
use crate::util::{Cmd, find_program};

/// The JVM's home in Debian's arm64 package.
const JAVA_HOME: &str = "/usr/lib/jvm/java-17-openjdk-arm64";

/// Of [`JAVA_HOME`], the launcher, the JVM and the libraries they load (`readelf -d`; the
/// JVM loads `libjava`, `libjimage`, `libverify`, `libzip`, `libnio` and `libnet` itself).
const JAVA_FILES: [&str; 9] = [
    "bin/java",
    "lib/libjli.so",
    "lib/server/libjvm.so",
    "lib/libjava.so",
    "lib/libjimage.so",
    "lib/libverify.so",
    "lib/libzip.so",
    "lib/libnio.so",
    "lib/libnet.so",
];

/// The packages of `java.base` whose classes a JVM running `Ledger` (the Java chain
/// fixture) loads, `-Xint`, C1 or C2, in the C locale (the guest's: `sun.util` for the
/// platform encoding's charset) or not (`-Xlog:class+load` of JDK 17 on x86_64: 431
/// classes from these 41 packages). Whole packages, so that a class loaded in another order in the
/// emulated guest is there too.
const JAVA_BASE_PACKAGES: [&str; 41] = [
    "java/io",
    "java/lang",
    "java/lang/annotation",
    "java/lang/constant",
    "java/lang/invoke",
    "java/lang/module",
    "java/lang/ref",
    "java/lang/reflect",
    "java/net",
    "java/nio",
    "java/nio/charset",
    "java/nio/charset/spi",
    "java/security",
    "java/security/cert",
    "java/util",
    "java/util/concurrent",
    "java/util/concurrent/atomic",
    "java/util/concurrent/locks",
    "java/util/function",
    "java/util/jar",
    "jdk/internal/access",
    "jdk/internal/invoke",
    "jdk/internal/loader",
    "jdk/internal/misc",
    "jdk/internal/module",
    "jdk/internal/ref",
    "jdk/internal/reflect",
    "jdk/internal/util",
    "jdk/internal/vm/vector",
    "sun/invoke/util",
    "sun/launcher",
    "sun/net/util",
    "sun/net/www",
    "sun/net/www/protocol/file",
    "sun/net/www/protocol/jar",
    "sun/nio",
    "sun/nio/cs",
    "sun/security/action",
    "sun/security/util",
    "sun/util",
    "sun/util/locale",
];

/// The Java fixtures the arm64 image runs, compiled by the host's `javac` into the image's
/// `/fixtures/classes` (where `tracekit_tests::java_classes` finds them in the VM).
const JAVA_FIXTURES: [&str; 1] = ["Ledger.java"];

/// Debian 12's arm64 `openjdk-17-jre-headless` in the arm64 image at its Debian path, as
/// the module docstring says, with `/bin/java` linking to its launcher, and
/// [`JAVA_FIXTURES`] compiled. Without the host's `jimage` and `javac` (Debian's
/// `openjdk-17-jdk-headless`) the Java tests say that `java` is not installed, and skip.
pub fn add_java(dir: &Path, image: &Path, root: &Path) -> Result<()> {
    let (Some(jimage), Some(javac)) = (find_program("jimage"), find_program("javac")) else {
        eprintln!(
            "xtask: vm: no jimage or javac (openjdk-17-jdk-headless): the Java tests will skip"
        );
        return Ok(());
    };
    let cache = unpacked_once(dir, "debian-arm64-java", &["openjdk-17-jre-headless"])?;
    let home = Path::new(JAVA_HOME);
    let files: Vec<String> = JAVA_FILES
        .iter()
        .map(|file| home.join(file).display().to_string())
        .collect();
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    copy_debian(&cache, image, &files)?;
    Cmd::new("chmod")
        .arg("+x")
        .arg(image.join(&JAVA_HOME[1..]).join("bin/java"))
        .run()?;
    // The package's is a link into /etc.
    std::fs::write(
        image.join(&JAVA_HOME[1..]).join("lib/jvm.cfg"),
        "-server KNOWN\n-client IGNORE\n",
    )?;
    let exploded = dir.join("java-base-arm64");
    if !exploded.join("java.base/module-info.class").is_file() {
        let _ = std::fs::remove_dir_all(&exploded);
        Cmd::new(jimage)
            .args(["extract", "--include", "regex:/java.base/.*", "--dir"])
            .arg(&exploded)
            .arg(cache.join(&JAVA_HOME[1..]).join("lib/modules"))
            .run()?;
    }
    let modules = image.join(&JAVA_HOME[1..]).join("modules/java.base");
    let base = exploded.join("java.base");
    copy_into(
        image,
        &base.join("module-info.class"),
        &home.join("modules/java.base/module-info.class"),
    )?;
    for package in JAVA_BASE_PACKAGES {
        std::fs::create_dir_all(modules.join(package))?;
        for entry in std::fs::read_dir(base.join(package))
            .with_context(|| format!("java.base has no {package}"))?
        {
            let path = entry?.path();
            if path.extension().is_some_and(|ext| ext == "class") {
                std::fs::copy(&path, modules.join(package).join(path.file_name().unwrap()))?;
            }
        }
    }
    std::os::unix::fs::symlink(home.join("bin/java"), image.join("bin/java"))?;
    let classes = image.join("fixtures/classes");
    std::fs::create_dir_all(&classes)?;
    for fixture in JAVA_FIXTURES {
        Cmd::new(&javac)
            .args(["--release", "17", "-d"])
            .arg(&classes)
            .arg(root.join("tests/fixtures").join(fixture))
            .run()?;
    }
    Ok(())
}
