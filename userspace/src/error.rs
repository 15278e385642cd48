//! The error type shared by tracekit's library modules.
//!
//! Every error renders as one line. [`Error::Usage`] is bad input (the binary exits 2);
//! everything else is a failure at run time (exit 1).

use std::fmt::Display;

/// A tracekit error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input: the message names the bad part and what would be valid. Exit status 2.
    #[error("{0}")]
    Usage(String),
    /// The process lacks a privilege it needs; the message names it. Exit status 1.
    #[error("{0}")]
    Privilege(String),
    /// A failure at run time. Exit status 1.
    #[error("{what}")]
    Runtime {
        /// What failed, e.g. "attaching to cpu-clock on cpu 3".
        what: String,
        /// Why, when there is an underlying error.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    },
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A usage error with the given one-line message.
    pub fn usage(message: impl Display) -> Self {
        Self::Usage(message.to_string())
    }

    /// A run-time error without an underlying cause.
    pub fn runtime(what: impl Display) -> Self {
        Self::Runtime {
            what: what.to_string(),
            source: None,
        }
    }

    /// The process exit status this error maps to (2 for usage errors, else 1).
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Usage(_) => 2,
            Self::Privilege(_) | Self::Runtime { .. } => 1,
        }
    }
}

/// Adds "what failed" context to foreign errors, turning them into [`Error::Runtime`].
pub trait Context<T> {
    /// Wraps the error with a description of what was being done.
    fn context(self, what: impl Display) -> Result<T>;
    /// Like [`Context::context`], with a lazily built description.
    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T>;
}

impl<T, E> Context<T> for std::result::Result<T, E>
where
    E: std::error::Error + Send + Sync + 'static,
{
    fn context(self, what: impl Display) -> Result<T> {
        self.map_err(|err| Error::Runtime {
            what: what.to_string(),
            source: Some(Box::new(err)),
        })
    }

    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T> {
        self.map_err(|err| Error::Runtime {
            what: what().to_string(),
            source: Some(Box::new(err)),
        })
    }
}

/// The most characters of one input that an error message quotes (see [`quote`]).
pub const QUOTE_CHARS: usize = 80;

/// How many characters `c` takes in a message: control characters are escaped (`\n`,
/// `\u{1b}`), so that the message stays one line and the terminal untouched.
fn width(c: char) -> usize {
    if c.is_control() {
        c.escape_default().count()
    } else {
        1
    }
}

/// `chars` as a message shows them.
fn shown(chars: &[char]) -> String {
    let mut out = String::with_capacity(chars.len());
    for &c in chars {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// How many of `chars` fit in `budget` characters as shown, in order.
fn take_width<'a>(chars: impl Iterator<Item = &'a char>, budget: usize) -> usize {
    let mut used = 0;
    chars
        .take_while(|&&c| {
            used += width(c);
            used <= budget
        })
        .count()
}

/// An input (a filter, probe, path, name, argument) as error messages quote it: control
/// characters escaped, and past [`QUOTE_CHARS`] characters its start and its end joined by
/// `…`, so that a 100 KiB input yields an 80-character quote, not 100 KiB of stderr.
///
/// ```
/// use tracekit::error::quote;
/// assert_eq!(quote("vfs_read"), "vfs_read");
/// assert_eq!(quote("a\nb"), "a\\nb");
/// let long = format!("{}{}", "a".repeat(60_000), "b".repeat(40_000));
/// assert_eq!(quote(&long), format!("{}…{}", "a".repeat(53), "b".repeat(26)));
/// ```
pub fn quote(input: &str) -> String {
    quote_within(input, QUOTE_CHARS)
}

/// An error and its causes on one line, `what: why: why`, leaving out a cause its parent
/// already says (libraries often repeat their source's message in their own).
pub fn chain(err: &dyn std::error::Error) -> String {
    let mut line = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    line
}

/// The most characters of one error line; [`clip_line`] keeps lines within it.
pub const LINE_CHARS: usize = 2000;

/// A whole message line within [`LINE_CHARS`] characters, as [`quote`] shortens inputs:
/// the last guard against a message that quotes an input without [`quote`].
pub fn clip_line(line: &str) -> String {
    quote_within(line, LINE_CHARS)
}

/// Whether `input` shows whole within `max_chars` characters.
fn fits(input: &str, max_chars: usize) -> bool {
    let mut used = 0;
    input.chars().all(|c| {
        used += width(c);
        used <= max_chars
    })
}

fn quote_within(input: &str, max_chars: usize) -> String {
    if fits(input, max_chars) {
        return shown(&input.chars().collect::<Vec<_>>());
    }
    let chars: Vec<char> = input.chars().collect();
    // Two thirds for the start, the rest (less the ellipsis) for the end.
    let head = take_width(chars.iter(), max_chars * 2 / 3);
    let tail = take_width(
        chars[head..].iter().rev(),
        max_chars - max_chars * 2 / 3 - 1,
    );
    format!(
        "{}…{}",
        shown(&chars[..head]),
        shown(&chars[chars.len() - tail..])
    )
}

/// Like [`quote`], for messages that point at a column: a long input shows the
/// [`QUOTE_CHARS`] characters around character `column` (1-based; past the end means the
/// end), with `…` where it was cut.
///
/// ```
/// use tracekit::error::quote_at;
/// assert_eq!(quote_at("pid == 1", 5), "pid == 1");
/// let long = format!("{}x{}", "a".repeat(1000), "b".repeat(1000));
/// assert_eq!(quote_at(&long, 1001), format!("…{}x{}…", "a".repeat(19), "b".repeat(58)));
/// assert_eq!(quote_at(&long, 1), format!("{}…", "a".repeat(79)));
/// assert_eq!(quote_at(&long, 5000), format!("…{}", "b".repeat(79)));
/// ```
pub fn quote_at(input: &str, column: usize) -> String {
    if fits(input, QUOTE_CHARS) {
        return quote(input);
    }
    let chars: Vec<char> = input.chars().collect();
    let at = column.saturating_sub(1).min(chars.len());
    // A quarter of the window before the column (none if the column is near the start),
    // the rest after; a window that reaches the end takes more before instead. Each cut
    // costs one character (`…`).
    let before = chars[..at].iter().map(|&c| width(c)).sum::<usize>();
    let mut start = if before < QUOTE_CHARS * 3 / 4 {
        0
    } else {
        at - take_width(chars[..at].iter().rev(), QUOTE_CHARS / 4 - 1)
    };
    let budget = |start: usize, end: usize| {
        QUOTE_CHARS - usize::from(start > 0) - usize::from(end < chars.len())
    };
    let end = start + take_width(chars[start..].iter(), budget(start, 0));
    if end == chars.len() {
        start = end - take_width(chars[..end].iter().rev(), budget(1, end));
    }
    format!(
        "{}{}{}",
        if start > 0 { "…" } else { "" },
        shown(&chars[start..end]),
        if end < chars.len() { "…" } else { "" }
    )
}

/// `n` with the noun that agrees with it: `1 sample`, `0 samples`, `2 processes`. Every
/// count a summary, header or message builds takes its noun from here.
///
/// ```
/// use tracekit::error::plural;
/// assert_eq!(plural(1u64, "sample", "samples"), "1 sample");
/// assert_eq!(plural(0u64, "sample", "samples"), "0 samples");
/// assert_eq!(plural(2usize, "process", "processes"), "2 processes");
/// ```
pub fn plural<N>(n: N, one: &str, many: &str) -> String
where
    N: Copy + std::fmt::Display + PartialEq + From<u8>,
{
    format!("{n} {}", if n == N::from(1) { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_causes_once() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let outer = Error::Runtime {
            what: "connecting".into(),
            source: Some(Box::new(io)),
        };
        assert_eq!(chain(&outer), "connecting: refused");
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let repeating = Error::Runtime {
            what: "connecting: refused".into(),
            source: Some(Box::new(io)),
        };
        assert_eq!(chain(&repeating), "connecting: refused");
    }

    #[test]
    fn short_inputs_are_quoted_whole() {
        assert_eq!(quote(""), "");
        let eighty = "x".repeat(80);
        assert_eq!(quote(&eighty), eighty);
        assert_eq!(quote_at(&eighty, 40), eighty);
        assert_eq!(quote("tab\there"), "tab\\there");
    }

    #[test]
    fn long_inputs_keep_both_ends() {
        let input = format!("uprobe:/{}:malloc", "d/".repeat(5000));
        assert_eq!(
            quote(&input),
            format!("uprobe:/{}d…{}/:malloc", "d/".repeat(22), "/d".repeat(9))
        );
        assert_eq!(quote(&"é".repeat(81)).chars().count(), 80);
    }

    #[test]
    fn control_characters_count_as_shown() {
        // Each escape is 6 characters: the quote is at most 80 of them, and one line.
        let input = "\u{1b}".repeat(1000);
        for quoted in [quote(&input), quote_at(&input, 500)] {
            assert!(quoted.chars().count() <= QUOTE_CHARS, "{quoted}");
            assert!(!quoted.contains('\u{1b}'), "{quoted}");
            assert!(quoted.starts_with("…\\u{1b}") || quoted.starts_with("\\u{1b}"));
        }
        assert_eq!(quote("a\nb\r"), "a\\nb\\r");
    }

    #[test]
    fn windows_around_a_column() {
        let input: String = (0..200)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        // Column 101 is the 101st character, `w`; 19 characters before it.
        let quoted = quote_at(&input, 101);
        assert_eq!(quoted.chars().count(), 80);
        assert!(quoted.starts_with('…'));
        assert_eq!(quoted.chars().nth(20), Some('w'));
        assert!(quoted.ends_with('…'));
        assert_eq!(quote_at(&input, 0), quote_at(&input, 1));
    }

    #[test]
    fn lines_are_clipped_far_later() {
        let line = format!("-- {}: no such file", "x".repeat(100_000));
        let clipped = clip_line(&line);
        assert_eq!(clipped.chars().count(), LINE_CHARS);
        assert!(clipped.starts_with("-- xxx"));
        assert!(clipped.ends_with("xxx: no such file"));
        assert_eq!(clip_line("short"), "short");
    }
}
