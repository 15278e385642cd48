//! The panic messages of failed tests, gathered from libtest's output as it streams past,
//! so that the end of a long run says why each test failed (a CI log that keeps only its
//! tail otherwise shows the last failure's message alone).

/// At most this many lines of a message are kept, and this many characters of each.
const LINES: usize = 3;
const CHARS: usize = 300;

/// Test name and the first lines of its panic message, in the order they panicked.
#[derive(Debug, Default)]
pub struct Panics {
    open: Option<(String, Vec<String>)>,
    done: Vec<(String, Vec<String>)>,
}

impl Panics {
    /// Takes one line of libtest's output (`thread 'NAME' (TID) panicked at FILE:LINE:COL:`
    /// then the message, up to `stack backtrace:`, a `note:` or a blank line).
    pub fn line(&mut self, line: &str) {
        if let Some(name) = panicking_thread(line) {
            self.close();
            self.open = Some((name.to_string(), Vec::new()));
            return;
        }
        let Some((_, message)) = &mut self.open else {
            return;
        };
        let trimmed = line.trim_end();
        if trimmed.is_empty()
            || trimmed.starts_with("stack backtrace:")
            || trimmed.starts_with("note: ")
            || message.len() == LINES
        {
            self.close();
        } else {
            message.push(trimmed.chars().take(CHARS).collect());
        }
    }

    fn close(&mut self) {
        self.done.extend(self.open.take());
    }

    /// Each test that panicked and its message's first lines.
    pub fn finish(mut self) -> Vec<(String, Vec<String>)> {
        self.close();
        self.done
    }
}

/// The thread (libtest names it after the test) of a `thread '...' panicked at` line.
fn panicking_thread(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("thread '")?;
    let (name, rest) = rest.split_once('\'')?;
    rest.contains(" panicked at ").then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_of_two_failures_in_order() {
        let mut panics = Panics::default();
        for line in [
            "---- exporter::otlp::a stdout ----",
            "10 OTLP requests, 11 pprof pushes",
            "thread 'exporter::otlp::a' (31171) panicked at tests/tests/exporter/otlp.rs:561:13:",
            "assertion `left == right` failed",
            "  left: 3",
            " right: 2",
            "  extra",
            "---- runtimes::b stdout ----",
            "thread 'runtimes::b' (12258) panicked at tests/tests/b.rs:219:5:",
            "b: 1 - TVD 0.776",
            "stack backtrace:",
            "   0: __rustc::rust_begin_unwind",
        ] {
            panics.line(line);
        }
        assert_eq!(
            panics.finish(),
            vec![
                (
                    "exporter::otlp::a".to_string(),
                    vec![
                        "assertion `left == right` failed".to_string(),
                        "  left: 3".to_string(),
                        " right: 2".to_string()
                    ]
                ),
                (
                    "runtimes::b".to_string(),
                    vec!["b: 1 - TVD 0.776".to_string()]
                ),
            ]
        );
    }

    #[test]
    fn other_lines_are_not_panics() {
        let mut panics = Panics::default();
        panics.line("test a ... FAILED");
        panics.line("thread 'main' spawned");
        assert!(panics.finish().is_empty());
    }
}
