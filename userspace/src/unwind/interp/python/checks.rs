//! What a CPython code object read from a process must be before it names a frame: a code
//! object (its `ob_type` is the process's `PyCode_Type`), the one the kernel saw (its
//! [`code_generation`]), its name and file `str` objects of valid text of plausible length,
//! its first line positive. A code object that fails is named by none of it: its frames are
//! `[unknown]` in `[python]`, the reason counted for `-v` ([`report`]).

use std::sync::Mutex;

use tracekit_common::interp::python::code_generation;

/// Why a code object names no frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejected {
    /// Its memory (or its strings') could not be read.
    Unreadable,
    /// Its `ob_type` is not `PyCode_Type`: freed, reused, or never a code object.
    NotCode,
    /// Its first line, name and file are not those the kernel saw: the address holds
    /// another object now.
    Changed,
    /// Its name is not a `str` of valid text of plausible length.
    BadName,
    /// Its file name is not a `str` of valid text of plausible length.
    BadFile,
    /// Its first line is not positive.
    BadLine,
}

const REASONS: usize = 6;

impl Rejected {
    fn index(self) -> usize {
        self as usize
    }

    /// The reason as `-v` says it.
    pub fn reason(self) -> &'static str {
        match self {
            Self::Unreadable => "unreadable",
            Self::NotCode => "not a code object (ob_type is not PyCode_Type)",
            Self::Changed => "another object at the address than the one recorded",
            Self::BadName => "a name that is no valid text of plausible length",
            Self::BadFile => "a file name that is no valid text of plausible length",
            Self::BadLine => "a first line that is not positive",
        }
    }
}

pub use super::super::text::{MAX_FILE, MAX_NAME};

static REJECTED: Mutex<[u64; REASONS]> = Mutex::new([0; REASONS]);

/// Counts a code object rejected for `why`.
pub fn count(why: Rejected) {
    let mut counts = REJECTED.lock().unwrap_or_else(|p| p.into_inner());
    counts[why.index()] += 1;
}

/// How many code objects were rejected for `why` so far (all processes, all runs).
#[cfg(test)]
pub fn counted(why: Rejected) -> u64 {
    REJECTED.lock().unwrap_or_else(|p| p.into_inner())[why.index()]
}

/// The `-v` line of the code objects rejected, after a newline; empty when none were.
pub fn report() -> String {
    let counts = *REJECTED.lock().unwrap_or_else(|p| p.into_inner());
    let all = [
        Rejected::Unreadable,
        Rejected::NotCode,
        Rejected::Changed,
        Rejected::BadName,
        Rejected::BadFile,
        Rejected::BadLine,
    ];
    let parts: Vec<String> = all
        .iter()
        .filter(|why| counts[why.index()] > 0)
        .map(|why| format!("{} {}", counts[why.index()], why.reason()))
        .collect();
    if parts.is_empty() {
        return String::new();
    }
    format!(
        "\nCPython: code objects not named (their frames are [unknown] in [python]): {}",
        parts.join(", ")
    )
}

/// Checks that an object's `ob_type` (the word at 8) is `expected`; an `expected` of 0 (the
/// binary has no such symbol) checks nothing.
pub fn check_type(header: &[u8], expected: u64) -> bool {
    if expected == 0 {
        return true;
    }
    header
        .get(8..16)
        .and_then(|word| word.try_into().ok())
        .map(u64::from_le_bytes)
        == Some(expected)
}

/// Checks a code object's first line and its name's and file's addresses against the
/// `generation` the kernel announced it with (`None`: none to check).
pub fn check_generation(
    first_line: i32,
    name: u64,
    filename: u64,
    generation: Option<u16>,
) -> Result<(), Rejected> {
    match generation {
        Some(generation) if code_generation(first_line, name, filename) != generation => {
            Err(Rejected::Changed)
        }
        _ => Ok(()),
    }
}

/// A compact ASCII string's characters as text: every byte printable ASCII, 1 to `max` of
/// them.
pub fn ascii_text(bytes: &[u8], max: usize) -> Option<String> {
    if bytes.is_empty() || bytes.len() > max || !bytes.iter().all(|b| (0x20..0x7f).contains(b)) {
        return None;
    }
    String::from_utf8(bytes.to_vec()).ok()
}

/// A compact string's code units of `width` bytes (1, 2 or 4) as text: every unit a
/// character that is no control character nor a surrogate, 1 to `max` of them.
pub fn wide_text(bytes: &[u8], width: usize, max: usize) -> Option<String> {
    if !matches!(width, 1 | 2 | 4) || !bytes.len().is_multiple_of(width) {
        return None;
    }
    let count = bytes.len() / width;
    if count == 0 || count > max {
        return None;
    }
    bytes
        .chunks_exact(width)
        .map(|unit| {
            let mut word = [0u8; 4];
            word[..width].copy_from_slice(unit);
            char::from_u32(u32::from_le_bytes(word)).filter(|c| !c.is_control())
        })
        .collect()
}

/// Checks a code object's first line.
pub fn check_first_line(first_line: i32) -> Result<(), Rejected> {
    if first_line > 0 {
        Ok(())
    } else {
        Err(Rejected::BadLine)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(ob_type: u64) -> Vec<u8> {
        let mut bytes = vec![0u8; 16];
        bytes[0..8].copy_from_slice(&1u64.to_le_bytes());
        bytes[8..16].copy_from_slice(&ob_type.to_le_bytes());
        bytes
    }

    #[test]
    fn a_code_object_has_the_code_type() {
        assert!(check_type(&header(0x7f00_1000), 0x7f00_1000));
        assert!(!check_type(&header(0x7f00_2000), 0x7f00_1000));
        // Freed memory (an allocator's free-list link where ob_type was).
        assert!(!check_type(&header(0), 0x7f00_1000));
        assert!(!check_type(&[0u8; 12], 0x7f00_1000));
        // No PyCode_Type symbol: nothing to check against.
        assert!(check_type(&header(0x1234), 0));
    }

    #[test]
    fn the_object_recorded_is_the_one_read() {
        let (line, name, file) = (17, 0x7f12_3456_7890, 0x7f12_3456_9990);
        let seen = code_generation(line, name, file);
        assert_eq!(check_generation(line, name, file, Some(seen)), Ok(()));
        assert_eq!(check_generation(line, name, file, None), Ok(()));
        // The start-up `<module>` of `<string>` that held the address before: line 1.
        assert_eq!(
            check_generation(1, name, file, Some(seen)),
            Err(Rejected::Changed)
        );
        assert_eq!(
            check_generation(line, name + 0x40, file, Some(seen)),
            Err(Rejected::Changed)
        );
        assert_eq!(
            check_generation(line, name, file + 0x40, Some(seen)),
            Err(Rejected::Changed)
        );
        assert_ne!(code_generation(0, 0, 0), 0, "0 is no generation");
    }

    #[test]
    fn names_are_text_of_plausible_length() {
        assert_eq!(ascii_text(b"middle", MAX_NAME).as_deref(), Some("middle"));
        assert_eq!(
            ascii_text(b"<module>", MAX_NAME).as_deref(),
            Some("<module>")
        );
        assert_eq!(ascii_text(b"", MAX_NAME), None);
        assert_eq!(ascii_text(&[0xef, 0xbf, 0xbd], MAX_NAME), None);
        assert_eq!(ascii_text(&[1, 0, 0, 0], MAX_NAME), None);
        assert_eq!(ascii_text(&[b'a'; 1025], MAX_NAME), None);
        assert_eq!(
            ascii_text(&[b'a'; 1024], MAX_NAME).map(|s| s.len()),
            Some(1024)
        );
        // "Ä" as one 1-byte unit, "λ" as one 2-byte unit.
        assert_eq!(wide_text(&[0xc4], 1, MAX_NAME).as_deref(), Some("Ä"));
        assert_eq!(wide_text(&[0xbb, 0x03], 2, MAX_NAME).as_deref(), Some("λ"));
        // A lone surrogate, a control character, a unit past U+10FFFF.
        assert_eq!(wide_text(&[0x00, 0xd8], 2, MAX_NAME), None);
        assert_eq!(wide_text(&[0x07, 0x00], 2, MAX_NAME), None);
        assert_eq!(wide_text(&[0, 0, 0x11, 0], 4, MAX_NAME), None);
        assert_eq!(wide_text(&[0x41, 0], 3, MAX_NAME), None);
        assert_eq!(wide_text(&[], 2, MAX_NAME), None);
    }

    #[test]
    fn first_lines_are_positive() {
        assert_eq!(check_first_line(1), Ok(()));
        assert_eq!(check_first_line(0), Err(Rejected::BadLine));
        assert_eq!(check_first_line(-499_442_624), Err(Rejected::BadLine));
    }
}
