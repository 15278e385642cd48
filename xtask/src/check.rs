//! `cargo xtask check`: the two house rules the compiler does not keep.
//!
//! - **Layering.** In each crate, the top-level modules (the files and folders beside its
//!   root) do not import each other in a cycle, read from the `crate::x` paths of every file
//!   (grouped imports too: `use crate::{a::B, c}`, and `$crate::x` in macros). The library
//!   (`userspace/src` but `bin/`) and the binary (`userspace/src/bin/tracekit`, whose
//!   `tracekit::` paths name the library) are checked apart, as are the kernel programs'
//!   library (`ebpf/src` but `bin/`) and `common/src`. The library names no `clap`: the
//!   command line is the binary's.
//! - **Size.** Every product file (`*.rs` under the four `src/` trees, their test modules
//!   included; not the integration tests, fixtures or generated files) has at most
//!   [`MAX_LINES`] lines.
//!
//! A small reader of the text, not a Rust parser: comments and string literals are blanked
//! first, so a path in a doc comment or a message is no import.

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::{Path, PathBuf},
};

use anyhow::{Context as _, Result, bail};

/// The most lines a product file has.
pub const MAX_LINES: usize = 800;

/// A crate whose top-level modules must not import each other in a cycle.
struct Layer {
    /// What the report calls it.
    name: &'static str,
    /// Its source root, relative to the workspace.
    root: &'static str,
    /// Folders under the root that are other crates (binaries), left out.
    others: &'static [&'static str],
    /// It must not name `clap`.
    no_clap: bool,
}

const LAYERS: &[Layer] = &[
    Layer {
        name: "library",
        root: "userspace/src",
        others: &["bin"],
        no_clap: true,
    },
    Layer {
        name: "binary",
        root: "userspace/src/bin/tracekit",
        others: &[],
        no_clap: false,
    },
    Layer {
        name: "kernel library",
        root: "ebpf/src",
        others: &["bin"],
        no_clap: false,
    },
    Layer {
        name: "common",
        root: "common/src",
        others: &[],
        no_clap: false,
    },
];

/// The trees whose files the size cap holds.
const CAPPED: &[&str] = &["common/src", "ebpf/src", "userspace/src", "xtask/src"];

/// Folders of no product files.
const NOT_PRODUCT: &[&str] = &["tests", "fixtures", "testdata"];

/// Runs both checks on the workspace at `root`, printing each problem; fails if any.
pub fn run(root: &Path) -> Result<()> {
    let report = check(root)?;
    for problem in &report.problems {
        println!("{problem}");
    }
    eprintln!(
        "xtask: check: {} files in {} crates for import cycles, {} files for the \
         {MAX_LINES}-line cap: {} problems",
        report.layered,
        LAYERS.len(),
        report.capped,
        report.problems.len()
    );
    if !report.problems.is_empty() {
        bail!(
            "{} problems (the rules: CONTRIBUTING.md)",
            report.problems.len()
        );
    }
    Ok(())
}

/// What [`check`] found.
#[derive(Debug, Default)]
pub struct Report {
    /// One line per problem.
    pub problems: Vec<String>,
    /// Files read for imports.
    pub layered: usize,
    /// Files measured.
    pub capped: usize,
}

/// Both checks on the workspace at `root`.
pub fn check(root: &Path) -> Result<Report> {
    let mut report = Report::default();
    for layer in LAYERS {
        let src = root.join(layer.root);
        let files = rust_files(&src, layer.others)?;
        report.layered += files.len();
        let mut texts = Vec::new();
        for file in files {
            let text = fs::read_to_string(&file).with_context(|| file.display().to_string())?;
            let code = code_only(&text);
            let relative = relative(&file, &src);
            if layer.no_clap && names_word(&code, "clap") {
                report
                    .problems
                    .push(format!("{} module uses clap: {relative}", layer.name));
            }
            texts.push((relative, code));
        }
        for cycle in cycles(&src, &texts) {
            report
                .problems
                .push(format!("{} import cycle: {cycle}", layer.name));
        }
    }
    for tree in CAPPED {
        for file in rust_files(&root.join(tree), &[])? {
            let text = fs::read_to_string(&file).with_context(|| file.display().to_string())?;
            if is_generated(&text) {
                continue;
            }
            report.capped += 1;
            let lines = text.lines().count();
            if lines > MAX_LINES {
                report.problems.push(format!(
                    "{}: {lines} lines, over the cap of {MAX_LINES}",
                    relative(&file, root)
                ));
            }
        }
    }
    Ok(report)
}

/// Every `.rs` file under `dir` (none if it does not exist), sorted, but those under its
/// subfolders `others` and under test or fixture folders.
fn rust_files(dir: &Path, others: &[&str]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    if !dir.is_dir() {
        return Ok(files);
    }
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .with_context(|| dir.display().to_string())?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if path.is_dir() {
            if !others.contains(&name.as_ref()) && !NOT_PRODUCT.contains(&name.as_ref()) {
                files.extend(rust_files(&path, &[])?);
            }
        } else if name.ends_with(".rs") {
            files.push(path);
        }
    }
    Ok(files)
}

fn relative(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// A generated file says so in its first lines (`@generated`, as rustfmt and cargo read it).
fn is_generated(text: &str) -> bool {
    text.lines().take(5).any(|line| line.contains("@generated"))
}

/// The top-level module a file (relative to its crate's root) belongs to: `jobs` for
/// `jobs/tools/mod.rs`, `bpf` for `bpf.rs`, `lib` for `lib.rs`.
fn top(relative: &str) -> &str {
    let first = relative.split('/').next().unwrap_or(relative);
    first.strip_suffix(".rs").unwrap_or(first)
}

/// `text` with its comments and the contents of its string and char literals blanked,
/// lines kept.
pub fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        if ch == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            // Block comments nest in Rust.
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
            out.push(' ');
        } else if ch == 'r'
            && matches!(next, Some('"' | '#'))
            && (i == 0 || !ident(c[i - 1]) || (c[i - 1] == 'b' && (i < 2 || !ident(c[i - 2]))))
        {
            // A raw string, r"..." or r#"..."#, or a raw identifier (r#type).
            let mut j = i + 1;
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) == Some(&'"') {
                j += 1;
                while j < c.len() {
                    if c[j] == '"' && (1..=hashes).all(|k| c.get(j + k) == Some(&'#')) {
                        j += 1 + hashes;
                        break;
                    }
                    if c[j] == '\n' {
                        out.push('\n');
                    }
                    j += 1;
                }
                out.push_str("\"\"");
                i = j;
            } else {
                out.push(ch);
                i += 1;
            }
        } else if ch == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\n' {
                    out.push('\n');
                }
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if ch == '\'' && next == Some('\\') {
            // An escaped char literal ('\'', '\n', '\u{..}').
            let mut j = i + 3;
            while j < c.len() && c[j] != '\'' {
                j += 1;
            }
            i = j + 1;
            out.push_str("' '");
        } else if ch == '\'' && c.get(i + 2) == Some(&'\'') {
            i += 3;
            out.push_str("' '");
        } else {
            // Code, and lifetimes ('a).
            out.push(ch);
            i += 1;
        }
    }
    out
}

/// Whether `code` holds `word` as a whole word.
fn names_word(code: &str, word: &str) -> bool {
    let ident = |ch: Option<char>| ch.is_some_and(|ch| ch.is_alphanumeric() || ch == '_');
    code.match_indices(word).any(|(at, _)| {
        !ident(code[..at].chars().next_back()) && !ident(code[at + word.len()..].chars().next())
    })
}

/// The top-level modules `code` names by `crate::x` and `crate::{x, y::z}` paths.
pub fn crate_tops(code: &str) -> BTreeSet<String> {
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let leading = |s: &str| -> Option<String> {
        let word: String = s.trim_start().chars().take_while(|&ch| ident(ch)).collect();
        (!word.is_empty()).then_some(word)
    };
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        if code[..at].chars().next_back().is_some_and(ident) {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        let Some(group) = rest.strip_prefix('{') else {
            out.extend(leading(rest));
            continue;
        };
        // The group's parts, split at its own commas: `a::{B, C}, d` is `a` and `d`.
        let mut depth = 1;
        let mut part = String::new();
        for ch in group.chars() {
            match ch {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                break;
            }
            if depth == 1 && ch == ',' {
                out.extend(leading(&part));
                part.clear();
            } else {
                part.push(ch);
            }
        }
        out.extend(leading(&part));
    }
    out.remove("self");
    out
}

/// The import cycles among the top-level modules of the crate at `src`, from its files'
/// code (`(path relative to src, code)`), each as `a -> b -> a  (a->b in FILES; b->a in
/// FILES)`.
fn cycles(src: &Path, files: &[(String, String)]) -> Vec<String> {
    let is_module =
        |name: &str| src.join(format!("{name}.rs")).is_file() || src.join(name).is_dir();
    let mut graph: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut why: BTreeMap<(String, String), BTreeSet<&str>> = BTreeMap::new();
    for (file, code) in files {
        let from = top(file);
        for to in crate_tops(code) {
            if to != from && is_module(&to) {
                graph.entry(from).or_default().insert(to.clone());
                why.entry((from.to_string(), to))
                    .or_default()
                    .insert(file.as_str());
            }
        }
    }
    let mut found: Vec<Vec<String>> = Vec::new();
    let mut seen: BTreeSet<BTreeSet<String>> = BTreeSet::new();
    for &start in graph.keys() {
        let mut stack = vec![start.to_string()];
        walk(&graph, &mut stack, &mut found, &mut seen);
    }
    found
        .into_iter()
        .map(|cycle| {
            let arrows: Vec<String> = cycle
                .windows(2)
                .map(|pair| {
                    let files: Vec<&str> = why[&(pair[0].clone(), pair[1].clone())]
                        .iter()
                        .copied()
                        .collect();
                    format!("{}->{} in {}", pair[0], pair[1], files.join(", "))
                })
                .collect();
            format!("{}  ({})", cycle.join(" -> "), arrows.join("; "))
        })
        .collect()
}

/// Depth-first from the last module of `stack`: each arrow back into the stack closes a
/// cycle, kept once per set of modules.
fn walk(
    graph: &BTreeMap<&str, BTreeSet<String>>,
    stack: &mut Vec<String>,
    found: &mut Vec<Vec<String>>,
    seen: &mut BTreeSet<BTreeSet<String>>,
) {
    let Some(next) = graph.get(stack.last().unwrap().as_str()) else {
        return;
    };
    for to in next {
        if let Some(at) = stack.iter().position(|m| m == to) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(to.clone());
            if seen.insert(cycle.iter().cloned().collect()) {
                found.push(cycle);
            }
        } else if stack.len() < 12 {
            stack.push(to.clone());
            walk(graph, stack, found, seen);
            stack.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch workspace under the system's temporary directory, removed when dropped.
    struct Tree(PathBuf);

    impl Tree {
        fn new(name: &str) -> Self {
            let dir =
                std::env::temp_dir().join(format!("xtask-check-{}-{name}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }

        fn write(&self, path: &str, text: &str) -> &Self {
            let path = self.0.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
            self
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    /// A small workspace that keeps both rules: the library's modules in layers, the binary
    /// using the library and its own modules, the kernel and common crates acyclic.
    fn clean(name: &str) -> Tree {
        let tree = Tree::new(name);
        tree.write("userspace/src/lib.rs", "pub mod engine;\npub mod jobs;\n")
            .write("userspace/src/engine/mod.rs", "pub mod plan;\n")
            .write("userspace/src/engine/plan.rs", "pub struct Plan;\n")
            .write(
                "userspace/src/jobs.rs",
                "// crate::jobs is used by crate::engine? No: comments are no imports.\n\
                 use crate::{engine::plan::Plan, self as me};\n\
                 const S: &str = \"crate::jobs in a string\";\n",
            )
            .write(
                "userspace/src/bin/tracekit/main.rs",
                "mod cli;\nmod commands;\n",
            )
            .write(
                "userspace/src/bin/tracekit/cli/mod.rs",
                "use clap::Parser;\nuse tracekit::jobs;\n",
            )
            .write(
                "userspace/src/bin/tracekit/commands/mod.rs",
                "use crate::cli::Args;\n",
            )
            .write("ebpf/src/lib.rs", "pub mod engine;\npub mod maps;\n")
            .write("ebpf/src/engine.rs", "use crate::maps::M;\n")
            .write("ebpf/src/maps.rs", "pub struct M;\n")
            .write("ebpf/src/bin/engine.rs", "use tracekit_ebpf::engine;\n")
            .write("common/src/lib.rs", "pub mod engine;\n")
            .write("common/src/engine.rs", "")
            .write("xtask/src/main.rs", &"//\n".repeat(MAX_LINES));
        tree
    }

    #[test]
    fn a_clean_tree_passes() {
        let tree = clean("clean");
        let report = check(&tree.0).unwrap();
        assert_eq!(report.problems, Vec::<String>::new());
        assert_eq!(report.layered, 12);
        assert_eq!(report.capped, 14);
        assert!(run(&tree.0).is_ok());
    }

    /// A cycle through a grouped import fails, naming the files of its arrows; a cycle in
    /// the binary or the kernel library is found as well.
    #[test]
    fn a_planted_cycle_fails() {
        let tree = clean("cycle");
        tree.write(
            "userspace/src/engine/plan.rs",
            "use crate::{\n    error::Context as _,\n    jobs::{aggregate, events},\n};\n",
        )
        .write("userspace/src/error.rs", "");
        let report = check(&tree.0).unwrap();
        assert_eq!(
            report.problems,
            ["library import cycle: engine -> jobs -> engine  \
                 (engine->jobs in engine/plan.rs; jobs->engine in jobs.rs)"]
        );
        assert!(run(&tree.0).is_err());

        tree.write(
            "userspace/src/bin/tracekit/cli/mod.rs",
            "use crate::commands::Command;\n",
        )
        .write("ebpf/src/maps.rs", "pub struct M(crate::engine::E);\n");
        let problems = check(&tree.0).unwrap().problems;
        assert!(
            problems.contains(
                &"binary import cycle: cli -> commands -> cli  \
                  (cli->commands in cli/mod.rs; commands->cli in commands/mod.rs)"
                    .to_string()
            ),
            "{problems:#?}"
        );
        assert!(
            problems.iter().any(|p| p.starts_with(
                "kernel library import cycle: engine -> maps -> engine  (engine->maps in engine.rs"
            )),
            "{problems:#?}"
        );
    }

    #[test]
    fn a_planted_file_over_the_cap_fails() {
        let tree = clean("cap");
        tree.write("ebpf/src/engine.rs", &"//\n".repeat(MAX_LINES + 1));
        let report = check(&tree.0).unwrap();
        assert_eq!(
            report.problems,
            ["ebpf/src/engine.rs: 801 lines, over the cap of 800"]
        );
        assert!(run(&tree.0).is_err());
        // Generated files and fixtures are not held to it.
        tree.write("ebpf/src/engine.rs", "")
            .write(
                "userspace/src/generated.rs",
                &format!("// @generated\n{}", "//\n".repeat(MAX_LINES)),
            )
            .write("xtask/src/fixtures/big.rs", &"//\n".repeat(MAX_LINES + 1));
        assert_eq!(check(&tree.0).unwrap().problems, Vec::<String>::new());
    }

    #[test]
    fn the_library_names_no_clap() {
        let tree = clean("clap");
        tree.write(
            "userspace/src/engine/plan.rs",
            "#[derive(clap::Args)]\nstruct A;\n",
        );
        assert_eq!(
            check(&tree.0).unwrap().problems,
            ["library module uses clap: engine/plan.rs"]
        );
    }

    #[test]
    fn paths_are_read_from_code_only() {
        let code = code_only(
            "use crate::a; // crate::b\n/* crate::c /* nested */ crate::d */\n\
             let s = \"crate::e \\\" crate::f\"; let r = r#\"crate::g \"# ;\n\
             let q = '\"'; let e = '\\''; fn f<'a>(x: &'a crate::h::H) {}\n\
             $crate::i::X; mycrate::j; use crate::{k::{L, M}, n,\n o};",
        );
        let tops: Vec<String> = crate_tops(&code).into_iter().collect();
        assert_eq!(tops, ["a", "h", "i", "k", "n", "o"]);
        assert_eq!(code.lines().count(), 6);
        assert!(names_word("use clap::Parser;", "clap"));
        assert!(!names_word("fn clapped() {}", "clap"));
    }

    /// The workspace itself, as `cargo xtask check` reads it (its verdict is the command's:
    /// this only checks that every crate is found and read).
    #[test]
    fn the_workspace_is_read() {
        let report = check(&crate::util::workspace_root()).unwrap();
        assert!(report.layered > 250, "{}", report.layered);
        assert!(report.capped > report.layered, "{report:?}");
    }
}
