//! What every fuzz target asserts of an error: a usage error (exit 2), one line, short.

/// The tracefs tree of kernel 6.18 that the unit tests compile against.
pub const TRACEFS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../userspace/tests/data/tracefs-6.18"
);

#[path = "../../userspace/tests/support/error_shape.rs"]
mod error_shape;

/// Panics (a finding) unless `err` is a usage error of one short line quoting no long run of
/// `input`: the property tests' check.
pub use error_shape::{MAX_ERROR_CHARS, assert_short_usage as check_error};
