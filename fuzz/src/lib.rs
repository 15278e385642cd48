//! What every fuzz target asserts of an error: a usage error (exit 2), one line, short.

use tracekit::Error;

/// The tracefs tree of kernel 6.18 that the unit tests compile against.
pub const TRACEFS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../userspace/tests/data/tracefs-6.18"
);

/// The longest error an input may produce: a quoted input or two (80 characters each),
/// the message, and the event's field list.
pub const MAX_ERROR_CHARS: usize = 700;

/// Panics (a finding) unless `err` is a usage error of one line of at most
/// [`MAX_ERROR_CHARS`] characters.
pub fn check_error(input: &str, err: &Error) {
    let message = err.to_string();
    assert!(
        matches!(err, Error::Usage(_)),
        "not a usage error for {input:?}: {message}"
    );
    assert!(
        !message.contains(['\n', '\r']),
        "more than one line for {input:?}: {message:?}"
    );
    assert!(
        message.chars().count() <= MAX_ERROR_CHARS,
        "{} characters for {input:?}: {message:?}",
        message.chars().count()
    );
}
