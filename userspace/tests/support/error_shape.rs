//! What every error of a hand-fed parser must look like: a usage error (exit 2), one line,
//! short, quoting no long run of the input. Shared by the property tests
//! (`userspace/tests/hostile_input.rs`) and the libFuzzer targets (`fuzz/`).

use tracekit::{Error, error::QUOTE_CHARS};

/// The longest error any of these inputs may produce: a quoted input or two, the message,
/// and the event's field list.
pub const MAX_ERROR_CHARS: usize = 700;

/// Fails unless `err` is a usage error of one short line.
pub fn assert_short_usage(input: &str, err: &Error) {
    let message = err.to_string();
    assert!(
        matches!(err, Error::Usage(_)),
        "not a usage error for {input:?}: {message}"
    );
    assert!(
        !message.contains(['\n', '\r']),
        "more than one line for {input:?}: {message:?}"
    );
    let chars = message.chars().count();
    assert!(
        chars <= MAX_ERROR_CHARS,
        "{chars} characters for an input of {}: {message:?}",
        input.len()
    );
    // No run of the input much longer than a quote shows up whole.
    let input_chars: Vec<char> = input.chars().collect();
    if input_chars.len() > 2 * QUOTE_CHARS {
        for window in input_chars
            .windows(QUOTE_CHARS + 20)
            .step_by(QUOTE_CHARS / 2)
        {
            let run: String = window.iter().collect();
            assert!(
                !message.contains(&run),
                "{message:?} quotes more than {QUOTE_CHARS} characters of the input"
            );
        }
    }
}
