//! Real PHP programs with no flags, against Excimer (Wikimedia's sampling profiler, a PHP
//! extension) on the same workload, in the Debian trixie root (PHP 8.4, its packages as
//! xtask/src/roots.rs installs them): PHP-Parser's `php-parse` resolving the names of every
//! PHP file of the root's `/usr/share/php` (about 1,500), league/commonmark converting the
//! root's Markdown documents (`/usr/share/doc/**/*.md`, about 90) to HTML 40 times, and Twig
//! rendering a 300-row page 600 times (its templates compiled into classes of eval'd code).
//! Each runs once under Excimer (`php -d auto_prepend_file=php_excimer.php`: CPU time,
//! every 1 ms, each sample's stack written at shutdown as a folded line whose frames are
//! named as tracekit names them) and once under `profile -F 499 -- chroot ROOT php ...`.
//!
//! Compared: the innermost PHP function of each sample (`Class::function` and its file), as
//! distributions over the samples that hold a PHP frame, by 1 - TVD over the union of both
//! profiles' top 30 functions ([`tracekit_tests::agreement`]). Excimer does not sample
//! where the CPU is: its timer only raises the VM's interrupt flag, and the stack is taken
//! where the VM next checks it, on entering a user function or at a loop's back edge (and
//! after a call of a C function). Work a function does in its own opcodes (`clone`, `new`,
//! `echo`, freeing the array a variable held) is credited to the next function it calls or
//! the loop it runs next: a function concatenating large strings with no loop, called
//! before one that loops, got 0% of Excimer's samples and 98.6% of tracekit's, the looping
//! one 100% of Excimer's. So constructors and small callees weigh more in Excimer's profile
//! (`AbstractStringContainer::__construct` 2.2% against 0.5%), and the callers that do the
//! work before calling them less (`MarkdownParser::findBlockStart`, which clones a cursor
//! for each parser it tries: 0.3% against 3.8%; Twig's row template's `doDisplay`, which
//! builds each row's strings, 11-13% against 22-27%). Measured here, eleven runs on a
//! loaded 2-core machine: php-parse 0.807-0.869 but twice 0.622 and 0.702 (once beside a
//! VM, once at load 1.5), commonmark 0.805-0.850, Twig 0.778-0.813; the test asks for
//! [`AGREEMENT`], below those two. About 30 s.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use tracekit_tests::{
    agreement, chroot_command, distro_root, parse_folded, require_root, run, scratch, tracekit_bin,
};

use super::super::trixie::fixture_in_root;

const TIMEOUT: Duration = Duration::from_secs(120);

/// The least 1 - TVD asked of the innermost functions' shares: below the goal of 0.9, for
/// Excimer's samples are taken where the VM checks for interrupts, not where the time is
/// spent (the module's docs); the margin (php-parse's lowest, 0.622, less 0.07) is for
/// runs where the two profiles part further, not yet understood. It still fails a
/// profile that names the programs' frames wrongly or not at all.
const AGREEMENT: f64 = 0.55;

/// Debian 13's PHP.
const PHP: &str = "/usr/bin/php8.4";

/// A function as both profiles name it: (`Class::function`, file).
type Function = (String, String);

/// The function of folded frame `frame` when it is a PHP frame: `Class::name (/path/file.php:LINE)`,
/// `<main> (/usr/bin/php-parse:68)`, `X::doDisplay (/usr/share/php/Twig/Environment.php(420) :
/// eval()'d code:49)` (a class of eval'd code).
fn php_function(frame: &str) -> Option<Function> {
    let (name, rest) = frame.strip_suffix(')')?.rsplit_once(" (")?;
    let (file, line) = rest.rsplit_once(':')?;
    if line.is_empty() || !line.bytes().all(|b| b.is_ascii_digit()) || !file.starts_with('/') {
        return None;
    }
    Some((name.to_string(), file.to_string()))
}

/// The files under `dir` of `root` whose names end with `suffix`, sorted, as paths in the
/// root.
fn files_in_root(root: &Path, dir: &str, suffix: &str) -> Vec<String> {
    fn walk(dir: &Path, suffix: &str, found: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                walk(&path, suffix, found);
            } else if kind.is_file() && path.to_string_lossy().ends_with(suffix) {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(&root.join(dir.trim_start_matches('/')), suffix, &mut found);
    found.sort();
    found
        .iter()
        .map(|path| format!("/{}", path.strip_prefix(root).unwrap().display()))
        .collect()
}

/// A workload: its name, and the arguments to `php` in the root.
struct Workload {
    name: &'static str,
    args: Vec<String>,
}

/// The three workloads, their drivers copied into the root; `None`, the skip's reason
/// printed, when the root lacks a program or Excimer (a root made before they were added).
fn workloads(test: &str, root: &Path) -> Option<Vec<Workload>> {
    for (path, package) in [
        ("usr/bin/php-parse", "php-parser"),
        (
            "usr/share/php/League/CommonMark/autoload.php",
            "php-league-commonmark",
        ),
        ("usr/share/php/Twig/autoload.php", "php-twig"),
        ("etc/php/8.4/mods-available/excimer.ini", "php8.4-excimer"),
    ] {
        if !root.join(path).exists() {
            println!(
                "{test}: skipped: no /{path} in {} (package {package}: remove the root for \
                 cargo xtask test to make it again)",
                root.display()
            );
            return None;
        }
    }
    let markdown = files_in_root(root, "/usr/share/doc", ".md");
    Some(vec![
        Workload {
            name: "php-parse",
            args: ["/usr/bin/php-parse".to_string(), "-N".to_string()]
                .into_iter()
                .chain(files_in_root(root, "/usr/share/php", ".php"))
                .collect(),
        },
        Workload {
            name: "commonmark",
            args: [
                fixture_in_root(root, "php_commonmark.php"),
                "40".to_string(),
            ]
            .into_iter()
            .chain(markdown)
            .collect(),
        },
        Workload {
            name: "twig",
            args: vec![fixture_in_root(root, "php_twig.php"), "600".to_string()],
        },
    ])
}

/// Runs `workload` under Excimer in `root` (`prepend`: the profiler's script there): its
/// folded stacks. Excimer's process aborted once at exit in about 20 runs, before writing
/// them: `None` only when it did twice.
fn excimer_log(test: &str, root: &Path, prepend: &str, workload: &Workload) -> Option<String> {
    let name = workload.name;
    // Written by the program's shutdown, in the root's /tmp.
    let log = format!("/tmp/tracekit-fixtures/{name}.excimer.folded");
    let prepend = format!("auto_prepend_file={prepend}");
    let mut args = vec!["-d", &prepend];
    args.extend(workload.args.iter().map(String::as_str));
    for _ in 0..2 {
        let _ = std::fs::remove_file(root.join(&log[1..]));
        let (mut command, _proc) = chroot_command(root, PHP, &args);
        command.env("EXCIMER_FOLDED", &log);
        let done = run(command, TIMEOUT);
        match std::fs::read_to_string(root.join(&log[1..])) {
            Ok(text) => return Some(text),
            Err(err) => eprintln!(
                "{test}: {name}: no {log} ({err}), {}: {}",
                done.status, done.stderr
            ),
        }
    }
    None
}

/// php-parse, league/commonmark and Twig: tracekit's innermost PHP functions agree with
/// Excimer's (1 - TVD over the top 30 functions at least [`AGREEMENT`]), fewer than 1% of
/// the samples with a PHP frame have an `[unknown]` frame inside it, and code objects that
/// could not be read are fewer than 1% of the PHP frames recorded.
#[test]
fn php_programs_functions_agree_with_excimer() {
    let test = "php_programs_functions_agree_with_excimer";
    require_root();
    let Some(root) = distro_root(test, "trixie") else {
        return;
    };
    let Some(workloads) = workloads(test, &root) else {
        return;
    };
    let excimer = fixture_in_root(&root, "php_excimer.php");
    let dir = scratch(test);
    let mut failed = Vec::new();
    for workload in workloads {
        let name = workload.name;
        let Some(text) = excimer_log(test, &root, &excimer, &workload) else {
            panic!("{test}: {name}: Excimer wrote no log twice");
        };
        let theirs = agreement::innermost(&parse_folded(&text), php_function);

        let out = dir.join(format!("{name}.folded"));
        let mut ours = Command::new(tracekit_bin());
        ours.args(["profile", "-v", "-F", "499", "-o"])
            .arg(&out)
            .args(["--", "chroot"])
            .arg(&root)
            .arg(PHP)
            .args(&workload.args);
        let profile = run(ours, TIMEOUT);
        profile.assert_code(0);
        let ours = agreement::innermost(
            &parse_folded(&std::fs::read_to_string(&out).unwrap()),
            php_function,
        );

        let score = agreement::Program {
            test,
            name,
            profiler: "Excimer",
            runtime: "PHP",
            ours: &ours,
            theirs: &theirs,
            stderr: &profile.stderr,
            at_least: (500, 500),
        }
        .check(String::new);
        if score < AGREEMENT {
            failed.push(format!("{name}: 1 - TVD {score:.3}"));
        }
    }
    assert!(failed.is_empty(), "{test}: {failed:?}");
}

#[test]
fn php_frames_are_named_by_function_and_file() {
    assert_eq!(
        php_function(
            "PhpParser\\ParserAbstract::doParse (/usr/share/php/PhpParser/ParserAbstract.php:326)"
        ),
        Some((
            "PhpParser\\ParserAbstract::doParse".to_string(),
            "/usr/share/php/PhpParser/ParserAbstract.php".to_string()
        ))
    );
    assert_eq!(
        php_function("<main> (/usr/bin/php-parse:68)"),
        Some(("<main>".to_string(), "/usr/bin/php-parse".to_string()))
    );
    assert_eq!(
        php_function(
            "__TwigTemplate_71c1::{closure:__TwigTemplate_71c1::doDisplay():49} \
             (/usr/share/php/Twig/Environment.php(420) : eval()'d code:49)"
        ),
        Some((
            "__TwigTemplate_71c1::{closure:__TwigTemplate_71c1::doDisplay():49}".to_string(),
            "/usr/share/php/Twig/Environment.php(420) : eval()'d code".to_string()
        ))
    );
    // Native frames.
    assert_eq!(php_function("php8.4+0x3aa210"), None);
    assert_eq!(php_function("zend_execute"), None);
    assert_eq!(php_function("[unknown]"), None);
    assert_eq!(php_function("f (x.c:)"), None);
}
