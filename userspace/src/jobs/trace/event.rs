//! A trace record as it came from the ring: its header ([`TraceRecord`]) and the tail of
//! whole strings after it ([`tracekit_common::engine::LONG_STR`]), and its strings as text:
//! cut ones end in [`CUT_MARK`], ones that could not be read are [`UNREADABLE`].

use std::borrow::Cow;

use tracekit_common::engine::{
    MAX_STRINGS, STR_CUT, STR_DIR, STR_IN_TAIL, STR_MORE, STR_UNREADABLE, TraceRecord,
};

/// What ends a string that was cut (at its kind's size or `--max-string`), and the list of
/// arguments that had more than `--max-args`.
pub const CUT_MARK: &str = "...";
/// A string the kernel could not read (a NULL pointer; a page not faulted in, at the
/// syscall's entry and again at its exit).
pub const UNREADABLE: &str = "<unreadable>";

/// One event: its header, and the bytes after it.
#[derive(Clone, Debug)]
pub struct TraceEvent<'a> {
    pub record: TraceRecord,
    pub tail: Cow<'a, [u8]>,
}

impl std::ops::Deref for TraceEvent<'_> {
    type Target = TraceRecord;
    fn deref(&self) -> &TraceRecord {
        &self.record
    }
}

impl std::ops::DerefMut for TraceEvent<'_> {
    fn deref_mut(&mut self) -> &mut TraceRecord {
        &mut self.record
    }
}

impl From<TraceRecord> for TraceEvent<'static> {
    fn from(record: TraceRecord) -> Self {
        Self {
            record,
            tail: Cow::Borrowed(&[]),
        }
    }
}

impl<'a> TraceEvent<'a> {
    /// A ring's record; `None` for one shorter than its header.
    pub fn decode(data: &'a [u8]) -> Option<Self> {
        let size = size_of::<TraceRecord>();
        if data.len() < size {
            return None;
        }
        // SAFETY: the kernel wrote a TraceRecord; read_unaligned copes with any alignment.
        let record = unsafe { std::ptr::read_unaligned(data.as_ptr().cast()) };
        Some(Self {
            record,
            tail: Cow::Borrowed(&data[size..]),
        })
    }

    /// String slot `slot` as text: whole from the tail, or the header's bytes; marked when
    /// cut or unreadable. The strings of an array (`argv[..N]`) are joined by spaces, each
    /// cut one marked, and the list marked when it had more.
    pub fn string(&self, slot: u32) -> Cow<'_, str> {
        let slot = slot as usize % MAX_STRINGS;
        let flags = (self.record.str_flags >> (8 * slot)) & 0xff;
        if flags & STR_UNREADABLE != 0 {
            return UNREADABLE.into();
        }
        if flags & STR_IN_TAIL == 0 {
            let bytes = &self.record.strings[slot];
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            return String::from_utf8_lossy(&bytes[..end]);
        }
        let span = self.record.str_spans[slot];
        let (off, len) = ((span & 0xffff) as usize, (span >> 16) as usize);
        let bytes = self.tail.get(off..off + len).unwrap_or_default();
        if flags & STR_DIR != 0 {
            return dir_text(bytes, flags & STR_CUT != 0).into();
        }
        // An array's strings each end with their NUL; a string alone has none.
        if bytes.last() == Some(&0) || flags & STR_MORE != 0 {
            let cap = self.record.str_cap as usize;
            let mut parts: Vec<String> = bytes
                .strip_suffix(&[0])
                .unwrap_or(bytes)
                .split(|&b| b == 0)
                .map(|arg| {
                    // A string that filled its size (one byte more than shown, and the
                    // NUL) was cut: that byte is not shown.
                    if cap > 2 && arg.len() + 1 >= cap {
                        let shown = &arg[..cap - 2];
                        return format!("{}{CUT_MARK}", String::from_utf8_lossy(shown));
                    }
                    String::from_utf8_lossy(arg).into_owned()
                })
                .collect();
            if bytes.is_empty() {
                parts.clear();
            }
            if flags & STR_MORE != 0 {
                parts.push(CUT_MARK.into());
            }
            return parts.join(" ").into();
        }
        let text = String::from_utf8_lossy(bytes);
        if flags & STR_CUT != 0 {
            return format!("{text}{CUT_MARK}").into();
        }
        text
    }
}

/// A directory from its names leaf first, each with its NUL ([`STR_DIR`]): `/a/b/c`, `/`
/// for none; `.../b/c` when `cut` (the walk stopped before the root).
fn dir_text(bytes: &[u8], cut: bool) -> String {
    let names = bytes.strip_suffix(&[0]).unwrap_or(bytes);
    let mut text = String::new();
    if !names.is_empty() {
        for name in names.split(|&b| b == 0).rev() {
            text.push('/');
            text.push_str(&String::from_utf8_lossy(name));
        }
    }
    match (cut, text.is_empty()) {
        (true, _) => format!("{CUT_MARK}{text}"),
        (false, true) => "/".into(),
        (false, false) => text,
    }
}

#[cfg(test)]
mod tests {
    use tracekit_common::engine::{MAX_OPERANDS, STR_BYTES};

    use super::*;

    fn event(flags: u32, spans: [u32; MAX_STRINGS], cap: u32, tail: &[u8]) -> TraceEvent<'_> {
        let mut record = TraceRecord {
            ts_ns: 0,
            pid: 1,
            tid: 1,
            cpu: 0,
            event: 0,
            comm: [0; 16],
            ints: [0; MAX_OPERANDS],
            strings: [[0; STR_BYTES]; MAX_STRINGS],
            str_spans: spans,
            str_flags: flags,
            str_cap: cap,
        };
        record.strings[1][..4].copy_from_slice(b"head");
        TraceEvent {
            record,
            tail: Cow::Borrowed(tail),
        }
    }

    #[test]
    fn strings_from_the_tail_are_whole_or_marked() {
        let tail = b"/etc/passwd/a/very/long/pathab\0c\0dd\0";
        // Slot 0 whole, slot 1 from the header, slot 2 cut, slot 3 unreadable.
        let e = event(
            STR_IN_TAIL | (STR_IN_TAIL | STR_CUT) << 16 | STR_UNREADABLE << 24,
            [11 << 16, 0, 11 | 17 << 16, 0],
            0,
            tail,
        );
        assert_eq!(e.string(0), "/etc/passwd");
        assert_eq!(e.string(1), "head");
        assert_eq!(e.string(2), "/a/very/long/path...");
        assert_eq!(e.string(3), "<unreadable>");
    }

    #[test]
    fn an_array_of_strings_marks_cut_ones_and_more() {
        let tail = b"ab\0c\0dd\0";
        // Size 3, 1 byte shown: `ab` and `dd` filled it (2 bytes and their NUL), cut.
        let e = event(STR_IN_TAIL | STR_MORE, [8 << 16, 0, 0, 0], 3, tail);
        assert_eq!(e.string(0), "a... c d... ...");
        let e = event(STR_IN_TAIL, [8 << 16, 0, 0, 0], 4, tail);
        assert_eq!(e.string(0), "ab c dd");
        let e = event(STR_IN_TAIL, [0, 0, 0, 0], 4, tail);
        assert_eq!(e.string(0), "");
    }

    #[test]
    fn a_directory_is_its_names_from_the_root() {
        let tail = b"c\0bb\0a\0";
        let dir = STR_IN_TAIL | STR_DIR;
        let e = event(dir, [7 << 16, 0, 0, 0], 0, tail);
        assert_eq!(e.string(0), "/a/bb/c");
        let e = event(dir | STR_CUT, [5 << 16, 0, 0, 0], 0, tail);
        assert_eq!(e.string(0), ".../bb/c");
        let e = event(dir, [0, 0, 0, 0], 0, tail);
        assert_eq!(e.string(0), "/");
    }
}
