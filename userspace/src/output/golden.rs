//! Golden files: whole command outputs kept under `userspace/tests/golden/`, compared
//! exactly. `TRACEKIT_BLESS=1 cargo test -p tracekit --lib golden` writes them anew from
//! what the code prints now (review the diff before committing it).

use std::{fmt::Write as _, path::PathBuf};

/// What one run printed, in the order a reader meets it: stdout, stderr, then each file
/// the run wrote, each under a `--- NAME` line.
#[derive(Debug, Default)]
pub(crate) struct Transcript {
    parts: Vec<(String, String)>,
}

impl Transcript {
    /// A transcript whose first line says how the run was made (the command line a user
    /// would type, and what the recorded maps held).
    pub(crate) fn new(command: &str) -> Self {
        Self {
            parts: vec![("command".into(), format!("{command}\n"))],
        }
    }

    /// Adds `text` under `name` (`stdout`, `stderr`, a file name).
    pub(crate) fn part(mut self, name: &str, text: impl Into<String>) -> Self {
        self.parts.push((name.into(), text.into()));
        self
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for (name, text) in &self.parts {
            let _ = writeln!(out, "--- {name}");
            out.push_str(text);
            if !text.is_empty() && !text.ends_with('\n') {
                out.push_str("\n(no newline at the end)\n");
            }
        }
        out
    }

    /// Compares with golden file `name`, or writes it with `TRACEKIT_BLESS=1`.
    #[track_caller]
    pub(crate) fn check(&self, name: &str) {
        check(name, &self.render());
    }
}

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// Compares `actual` with golden file `name`, or writes it with `TRACEKIT_BLESS=1`.
#[track_caller]
pub(crate) fn check(name: &str, actual: &str) {
    let path = path(name);
    if std::env::var_os("TRACEKIT_BLESS").is_some_and(|v| v != "0") {
        std::fs::create_dir_all(path.parent().expect("golden files have a directory"))
            .expect("creating tests/golden");
        std::fs::write(&path, actual).expect("writing a golden file");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|err| {
        panic!(
            "{}: {err}; TRACEKIT_BLESS=1 writes it from this output:\n{actual}",
            path.display()
        )
    });
    if expected != actual {
        let mut diff = String::new();
        let (old, new): (Vec<&str>, Vec<&str>) =
            (expected.lines().collect(), actual.lines().collect());
        for i in 0..old.len().max(new.len()) {
            match (old.get(i), new.get(i)) {
                (Some(a), Some(b)) if a == b => {}
                (a, b) => {
                    let _ = writeln!(
                        diff,
                        "line {}:\n- {}\n+ {}",
                        i + 1,
                        a.unwrap_or(&"(none)"),
                        b.unwrap_or(&"(none)")
                    );
                }
            }
        }
        panic!(
            "{} differs from the output (TRACEKIT_BLESS=1 re-writes it):\n{diff}--- whole output\n{actual}",
            path.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transcript_marks_parts_and_missing_newlines() {
        let text = Transcript::new("tracekit x")
            .part("stdout", "a\n")
            .part("stderr", "")
            .part("out.txt", "b")
            .render();
        assert_eq!(
            text,
            "--- command\ntracekit x\n--- stdout\na\n--- stderr\n--- out.txt\nb\n(no newline at the end)\n"
        );
    }

    /// A golden test can fail: an output that differs from its file panics with the line.
    #[test]
    fn differing_output_fails_with_the_line() {
        if std::env::var_os("TRACEKIT_BLESS").is_some() {
            return;
        }
        let golden = std::fs::read_to_string(path("aggregate/count_by_comm.txt")).unwrap();
        let changed = golden.replacen("340", "341", 1);
        let panic = std::panic::catch_unwind(|| check("aggregate/count_by_comm.txt", &changed))
            .unwrap_err();
        let message = panic.downcast_ref::<String>().unwrap();
        assert!(
            message.contains("- sshd    340\n+ sshd    341"),
            "{message}"
        );
        check("aggregate/count_by_comm.txt", &golden);
    }
}
