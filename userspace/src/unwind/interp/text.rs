//! Text read from a traced process's memory (names, file names), checked before it names a
//! frame: freed or reused memory, or a pointer to something else, is no text of a plausible
//! length, and names nothing.

/// The longest function name taken as one, in characters (longer: not a name).
pub const MAX_NAME: usize = 1024;
/// The longest file name, in characters.
pub const MAX_FILE: usize = 4096;

/// `bytes` as text: valid UTF-8 of 1 to `max` characters, none a control character; `None`
/// for anything else.
pub fn plausible_text(bytes: &[u8], max: usize) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut count = 0;
    for c in text.chars() {
        count += 1;
        if c.is_control() || count > max {
            return None;
        }
    }
    (count > 0).then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_printable_utf8_of_plausible_length_is_text() {
        assert_eq!(
            plausible_text(b"Ledger#post", MAX_NAME).as_deref(),
            Some("Ledger#post")
        );
        assert_eq!(
            plausible_text("block (2 levels) in λ".as_bytes(), MAX_NAME).as_deref(),
            Some("block (2 levels) in λ")
        );
        assert_eq!(plausible_text(b"", MAX_NAME), None);
        // Raw bytes: invalid UTF-8, a lone continuation byte, control characters.
        assert_eq!(plausible_text(&[0xe0, 0x80, 0x9f, 0x41], MAX_NAME), None);
        assert_eq!(plausible_text(&[0x80], MAX_NAME), None);
        assert_eq!(plausible_text(&[b'a', 0, 0, 0], MAX_NAME), None);
        assert_eq!(plausible_text(b"a\nb", MAX_NAME), None);
        // Length in characters, not bytes.
        assert!(plausible_text("λ".repeat(MAX_NAME).as_bytes(), MAX_NAME).is_some());
        assert_eq!(plausible_text(&[b'a'; MAX_NAME + 1], MAX_NAME), None);
    }
}
