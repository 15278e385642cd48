//! Source lines of V8 (Node.js) frames: `leaf (/path/app.js:12)`.
//!
//! What the line means: the line V8 itself reports for the frame (`new Error().stack`) when
//! the process holds what it takes, else the line of the function's definition (what
//! `--perf-basic-prof`'s map, `JS:*leaf /path/app.js:11:14`, and `node --cpu-prof`'s call
//! frames give). Every frame of a function whose script has a name has a line.
//! - **Interpreted frames** (Ignition): the kernel records the frame's bytecode offset (the
//!   Smi beside its `BytecodeArray`, counted from the array's tagged pointer: the first
//!   bytecode is at `BytecodeArray::data - 1`). The function's `BytecodeArray` (its
//!   `SharedFunctionInfo::function_data`) holds a source position table mapping bytecode
//!   offsets to script offsets; the offset's line is the current line. The interpreter
//!   saves the offset in the frame at calls and stack checks only, so a leaf frame's line
//!   can be an earlier line of the same function; callers' lines are their calls, exact.
//!   V8 collects the table lazily (`--enable-lazy-source-positions`, on by default): until
//!   something needs it (an exception's stack, a debugger, a profiler) it is `undefined`,
//!   and such frames get the definition line.
//! - **Optimized frames** (Maglev, TurboFan): the kernel records the function's `Code` and
//!   the pc's offset in it; the `Code`'s own source position table gives the current line,
//!   and the functions inlined there ([`super::compiled`]; V8 11.3 and 13.6). Code the
//!   function does not point to (on-stack replacement) is found from the pc on V8 13.6;
//!   elsewhere such frames are recorded as interpreted.
//! - **Baseline frames** (Sparkplug): the definition line (the pc would need the code's
//!   bytecode offset table, not read).
//!
//! The definition is `SharedFunctionInfo::StartPosition()`: the start of the function's
//! `ScopeInfo` position info (the script offset of the parameter list's `(`, or of an arrow
//! function's first parameter). `ScopeInfo`'s layout has no postmortem symbols: V8 12.8+
//! keeps the position at fixed slots 3 and 4 (start, end); before it follows the function
//! variable (name, slot index) and an optional inferred name: the first two Smis `start <
//! end` there. Both were checked on Debian's node 20 (V8 11.3) against the source.
//!
//! A script offset is a UTF-16 index into the script's source. Its line (1-based) is one
//! plus the line terminators before it (`\n`, a `\r` not before `\n`, U+2028, U+2029): from
//! `Script::line_ends` (the terminators' offsets, a `FixedArray` of Smis) when V8 computed
//! it, else counted in the source (`Script::source`) up to the offset. Sources held outside
//! V8's heap (external strings: node's own modules) are not read: such frames keep `name
//! (file)`.
//!
//! The source position table (`source-position-table.cc`): a byte stream of entries, each
//! two signed numbers, both as deltas from the previous entry, starting from code offset
//! -1 (the function's entry) and source position 0:
//! - the code offset delta, `delta` for a statement position and `-delta - 1` for an
//!   expression position;
//! - the source position delta, a 64-bit `SourcePosition`: bit 0 "external", bits 1..=30
//!   the script offset plus one (0: none), bits 31..=46 the inlining id.
//!
//! Each number is zigzag-encoded (`n << 1 ^ n >> 63`), then written 7 bits a byte, lowest
//! first, bit 7 set on every byte but the last. The position of code offset `o` is that of
//! the last entry whose code offset is `<= o` (`AbstractCode::SourcePosition`).

use super::{line_ends, read_memory};

/// The largest source position table read (bytes).
const MAX_TABLE: u64 = 65_536;
/// The longest source prefix read to count lines when V8 has no `line_ends` (UTF-16 units).
pub const MAX_SOURCE: u64 = 16 << 20;
/// The most `line_ends` entries read.
pub const MAX_LINES: u64 = 1 << 24;

/// Where a function's lines are (offsets in bytes from the `v8dbg_*` symbols).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineLayout {
    /// `SharedFunctionInfo::function_data`; `None` (V8 13, which states no symbol for its
    /// `trusted_function_data`): frames get their definition line only.
    pub function_data: Option<u16>,
    /// `FixedArrayBase::length` (a Smi): elements of a `FixedArray`, bytes of a `ByteArray`.
    pub array_length: u16,
    /// `FixedArray::data`: the first element (`ByteArray`s have the same header).
    pub array_data: u16,
    /// `BytecodeArray::source_position_table`; not stated since V8 9.4, where it is the
    /// third word after `length` (checked on V8 11.3).
    pub bytecode_positions: u16,
    /// `BytecodeArray::data`: the first bytecode.
    pub bytecode_data: u16,
    /// `Script::source`.
    pub script_source: u16,
    /// `Script::line_ends`.
    pub script_line_ends: u16,
    pub type_byte_array: u16,
    pub type_fixed_array: u16,
    /// V8 12.8+: `ScopeInfo`'s position info at fixed slots (3, 4).
    pub fixed_positions: bool,
}

/// Where lines are read in a V8 `version` (major, minor) whose `v8dbg_*` symbols give
/// `value(NAME)` and `member(CLASS, [FIELD...])` (the first field found, whatever its type
/// suffix); the error names the symbol missing.
pub fn layout(
    value: &impl Fn(&str) -> Result<u16, String>,
    member: &impl Fn(&str, &[&str]) -> Result<u16, String>,
    version: (u16, u16),
) -> Result<LineLayout, String> {
    let array_length = member("FixedArrayBase", &["length"])?;
    let bytecode_positions =
        member("BytecodeArray", &["source_position_table"]).unwrap_or(array_length + 3 * 8);
    Ok(LineLayout {
        // V8 13 states no field for the function's data: definition lines only.
        function_data: member("SharedFunctionInfo", &["function_data"]).ok(),
        array_length,
        array_data: member("FixedArray", &["data"])?,
        bytecode_positions,
        bytecode_data: member("BytecodeArray", &["data"])?,
        script_source: member("Script", &["source"])?,
        script_line_ends: member("Script", &["line_ends"])?,
        type_byte_array: value("v8dbg_type_ByteArray__BYTE_ARRAY_TYPE")?,
        type_fixed_array: value("v8dbg_type_FixedArray__FIXED_ARRAY_TYPE")?,
        fixed_positions: version >= (12, 8),
    })
}

/// One decoded entry of a source position table: code offset (-1: the function's entry)
/// and `SourcePosition` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub code_offset: i64,
    pub position: i64,
}

/// Reads one zigzag VLQ number at `*at` of `bytes`, advancing `*at`; `None` at the end or
/// on a number that does not end (or has more than 64 bits).
pub fn read_number(bytes: &[u8], at: &mut usize) -> Option<i64> {
    let mut raw: u64 = 0;
    let mut shift = 0;
    loop {
        let byte = *bytes.get(*at)?;
        *at += 1;
        if shift >= 64 {
            return None;
        }
        raw |= u64::from(byte & 0x7f) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            break;
        }
    }
    Some(((raw >> 1) as i64) ^ -((raw & 1) as i64))
}

/// The entries of source position table `table`, in order; a table cut short ends at its
/// last whole entry.
pub fn decode_table(table: &[u8]) -> Vec<Entry> {
    let mut entries = Vec::new();
    let (mut code_offset, mut position) = (-1i64, 0i64);
    let mut at = 0;
    while at < table.len() {
        let Some(code) = read_number(table, &mut at) else {
            break;
        };
        let Some(delta) = read_number(table, &mut at) else {
            break;
        };
        code_offset += if code >= 0 { code } else { -(code + 1) };
        position = position.wrapping_add(delta);
        entries.push(Entry {
            code_offset,
            position,
        });
    }
    entries
}

/// The script offset of `SourcePosition` value `position`: `None` for an external position
/// (a line of another file) or no position.
pub fn script_offset(position: i64) -> Option<u32> {
    if position & 1 != 0 {
        return None;
    }
    let field = (position >> 1) & ((1 << 30) - 1);
    u32::try_from(field - 1).ok()
}

/// The 1-based lines of script offsets `offsets` in `source`: one plus the line terminators
/// before each, counting UTF-16 units as V8 does.
#[cfg(test)]
pub fn lines_in_source(source: &str, offsets: &[u32]) -> Vec<i32> {
    let ends = source_ends(source);
    offsets
        .iter()
        .map(|&offset| line_of_ends(&ends, offset))
        .collect()
}

/// The UTF-16 offsets of `source`'s line terminators (`\n`, a `\r` not before `\n`,
/// U+2028, U+2029), ascending.
pub fn source_ends(source: &str) -> Vec<u32> {
    let mut ends = Vec::new();
    let mut units = 0u32;
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        let end = match c {
            '\n' | '\u{2028}' | '\u{2029}' => true,
            '\r' => chars.peek() != Some(&'\n'),
            _ => false,
        };
        if end {
            ends.push(units);
        }
        units += c.len_utf16() as u32;
    }
    ends
}

/// The 1-based line of script offset `offset` given the line terminators' offsets `ends`
/// (sorted): the first line whose end is at or after it (`Script::GetPositionInfo`).
pub fn line_of_ends(ends: &[u32], offset: u32) -> i32 {
    ends.partition_point(|&end| end < offset) as i32 + 1
}

/// Context locals whose names a `ScopeInfo` keeps inline, at most, plus one: from this many
/// on one slot holds a hash table of their names (`kScopeInfoMaxInlinedLocalNamesSize`,
/// `common/globals.h`, V8 10.0+).
pub const MAX_INLINED_LOCAL_NAMES: u64 = 75;

/// The index (among the slots after its map) of a `ScopeInfo`'s first slot after its
/// context locals, whose count is `locals` and which start at slot `first_vars`: a name
/// and an info per local, or, from [`MAX_INLINED_LOCAL_NAMES`] on, the names' hash table
/// and an info per local (`scope-info.tq`).
pub fn after_context_locals(first_vars: u64, locals: u64) -> u64 {
    if locals < MAX_INLINED_LOCAL_NAMES {
        first_vars + 2 * locals
    } else {
        first_vars + 1 + locals
    }
}

/// [`after_context_locals`] of a `ScopeInfo` from its slots after the map (`slots`, raw
/// words), the context locals' count (a Smi) at slot `context_locals`.
pub fn slots_after_context_locals(
    slots: &[u64],
    first_vars: u64,
    context_locals: u64,
) -> Option<u64> {
    let locals = *slots.get(usize::try_from(context_locals).ok()?)?;
    (locals & 1 == 0).then_some(())?;
    Some(after_context_locals(first_vars, locals >> 32))
}

/// The function's definition offset from the slots after a `ScopeInfo`'s map
/// (`slots`, raw words) with `first_vars` and the context locals' count at slot
/// `context_locals` ([`LineLayout::fixed_positions`]: V8 12.8+).
pub fn definition_offset(
    slots: &[u64],
    first_vars: u64,
    context_locals: u64,
    fixed_positions: bool,
) -> Option<u32> {
    let smi = |i: u64| -> Option<i64> {
        let word = *slots.get(usize::try_from(i).ok()?)?;
        (word & 1 == 0).then_some((word as i64) >> 32)
    };
    let pair = |i: u64| -> Option<u32> {
        let (start, end) = (smi(i)?, smi(i + 1)?);
        (0 <= start && start < end).then(|| u32::try_from(start).ok())?
    };
    if fixed_positions {
        return pair(3);
    }
    // The function variable (name, then its slot index as a Smi), an optional inferred
    // name (a heap object), then (start, end).
    let name = slots_after_context_locals(slots, first_vars, context_locals)?;
    smi(name + 1)?;
    match smi(name + 2) {
        Some(_) => pair(name + 2),
        None => pair(name + 3),
    }
}

/// A function's lines as [`super::CodeInfo::linetable`] holds them for V8: (offset, line)
/// pairs, 4 + 4 bytes little-endian each, in the table's order. The offset is the one the
/// kernel records for an interpreted frame: the bytecode offset plus `BytecodeArray::data
/// - 1` (V8 11.3: 53), so a compiled frame's 0 has no line.
pub fn encode_lines(lines: &[(i32, i32)]) -> Vec<u8> {
    lines
        .iter()
        .flat_map(|&(offset, line)| {
            let mut bytes = offset.to_le_bytes().to_vec();
            bytes.extend_from_slice(&line.to_le_bytes());
            bytes
        })
        .collect()
}

/// The line of recorded offset `offset` in `linetable` ([`encode_lines`]): the last pair's
/// whose offset is `<= offset`; `None` when there is none.
pub fn line_at(linetable: &[u8], offset: i32) -> Option<i32> {
    let mut line = None;
    for pair in linetable.chunks_exact(8) {
        let at = i32::from_le_bytes(pair[..4].try_into().ok()?);
        if at > offset {
            break;
        }
        line = Some(i32::from_le_bytes(pair[4..].try_into().ok()?));
    }
    line
}

/// Reads a process's objects for lines.
pub(super) trait Objects {
    /// The word at `address`.
    fn word(&self, address: u64) -> Option<u64>;
    /// The untagged object of tagged `tagged` and its instance type.
    fn object(&self, tagged: u64) -> Option<(u64, u16)>;
    /// The first `limit` units of the string at tagged `tagged`.
    fn string_prefix(&self, tagged: u64, limit: u64) -> Option<String>;
    fn pid(&self) -> u32;
}

/// A Smi's value.
pub(super) fn smi(word: u64) -> Option<i64> {
    (word & 1 == 0).then_some((word as i64) >> 32)
}

/// The source position table of the `SharedFunctionInfo` at untagged `shared`, when V8
/// has collected it; `type_bytecode_array`: the `BytecodeArray`'s instance type.
pub(super) fn position_table(
    objects: &impl Objects,
    layout: &LineLayout,
    shared: u64,
    type_bytecode_array: u16,
) -> Option<Vec<u8>> {
    let data = objects.word(shared + u64::from(layout.function_data?))?;
    let (bytecode, kind) = objects.object(data)?;
    if kind != type_bytecode_array {
        return None;
    }
    let table = objects.word(bytecode + u64::from(layout.bytecode_positions))?;
    let (table, kind) = objects.object(table)?;
    if kind != layout.type_byte_array {
        return None;
    }
    let length = smi(objects.word(table + u64::from(layout.array_length))?)?;
    let length = u64::try_from(length).ok()?.min(MAX_TABLE);
    read_memory(
        objects.pid(),
        table + u64::from(layout.array_data),
        length as usize,
    )
}

/// The 1-based lines of script offsets `offsets` in the `Script` at untagged `script`:
/// from its line terminators ([`line_ends`]: V8's `line_ends` when it computed them, else
/// counted in its source, once per script); `None` when neither can be read.
pub(super) fn script_lines(
    objects: &impl Objects,
    layout: &LineLayout,
    script: u64,
    offsets: &[u32],
) -> Option<Vec<i32>> {
    let longest = offsets.iter().copied().max()?;
    let ends = line_ends::of_script(objects, layout, script)?;
    if !ends.covers(longest) {
        return None;
    }
    Some(
        offsets
            .iter()
            .map(|&offset| line_of_ends(&ends.ends, offset))
            .collect(),
    )
}

/// The definition line (0: unknown) and the (recorded offset, line) pairs
/// ([`encode_lines`], the offset as the kernel records it) of the `SharedFunctionInfo` at untagged `shared`, with `ScopeInfo`
/// slots `scope_slots` ([`definition_offset`]; indices `first_vars`, `context_locals`) and
/// its script at untagged `script`.
pub(super) fn function_lines(
    reader: &impl Objects,
    layout: &LineLayout,
    shared: u64,
    scope_slots: Option<&[u64]>,
    (first_vars, context_locals): (u16, u16),
    type_bytecode_array: u16,
    script: u64,
) -> (i32, Vec<u8>) {
    let start = scope_slots.and_then(|slots| {
        definition_offset(
            slots,
            u64::from(first_vars),
            u64::from(context_locals),
            layout.fixed_positions,
        )
    });
    let entries: Vec<(i64, u32)> = position_table(reader, layout, shared, type_bytecode_array)
        .map(|table| {
            decode_table(&table)
                .into_iter()
                .filter_map(|e| Some((e.code_offset, script_offset(e.position)?)))
                .collect()
        })
        .unwrap_or_default();
    let mut offsets: Vec<u32> = entries.iter().map(|&(_, offset)| offset).collect();
    offsets.extend(start);
    let Some(lines) = script_lines(reader, layout, script, &offsets) else {
        return (0, Vec::new());
    };
    let first_line = if start.is_some() {
        *lines.last().unwrap_or(&0)
    } else {
        0
    };
    // Keyed by the offset the kernel records: counted from the array's tagged pointer.
    let first = i64::from(layout.bytecode_data) - 1;
    let pairs: Vec<(i32, i32)> = entries
        .iter()
        .zip(&lines)
        .filter_map(|(&(code_offset, _), &line)| {
            Some((i32::try_from(code_offset + first).ok()?, line))
        })
        .collect();
    (first_line, encode_lines(&pairs))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table of Debian node 20's `leaf` in `function leaf(n) { let total = 0; return
    /// total + n; }` (read from a live process): entry at offset 27 (the `(`), then four
    /// positions.
    const LEAF_TABLE: [u8; 10] = [0x01, 0x70, 0x02, 0x50, 0x04, 0x14, 0x05, 0x34, 0x06, 0x10];

    #[test]
    fn numbers_are_zigzag_vlq() {
        let mut at = 0;
        let bytes = [0x00, 0x01, 0x02, 0x03, 0x80, 0x01, 0xff, 0x01, 0x81, 0x01];
        let read: Vec<i64> = std::iter::from_fn(|| read_number(&bytes, &mut at)).collect();
        assert_eq!(read, vec![0, -1, 1, -2, 64, -128, -65]);
        // A number whose last byte is missing is not read.
        assert_eq!(read_number(&[0x80], &mut 0), None);
    }

    #[test]
    fn decodes_node_20s_table() {
        let pairs: Vec<(i64, Option<u32>)> = decode_table(&LEAF_TABLE)
            .iter()
            .map(|e| (e.code_offset, script_offset(e.position)))
            .collect();
        assert_eq!(
            pairs,
            vec![
                (-1, Some(27)),
                (0, Some(47)),
                (2, Some(52)),
                (4, Some(65)),
                (7, Some(69)),
            ]
        );
        // Cut in the middle of an entry: the whole entries before it.
        assert_eq!(decode_table(&LEAF_TABLE[..5]).len(), 2);
        // External and missing positions have no script offset.
        assert_eq!(script_offset(1 | 56), None);
        assert_eq!(script_offset(0), None);
        // The inlining id (bits 31+) is not part of the offset.
        assert_eq!(script_offset(56 | 3 << 31), Some(27));
    }

    /// The script of [`LEAF_TABLE`].
    const SOURCE: &str =
        "'use strict';\nfunction leaf(n) {\n  let total = 0;\n  return total + n;\n}\n";

    #[test]
    fn lines_of_script_offsets() {
        assert_eq!(
            lines_in_source(SOURCE, &[0, 13, 14, 27, 47, 52, 65, 69, 70]),
            vec![1, 1, 2, 2, 3, 4, 4, 4, 5]
        );
        // `\r\n` is one terminator, a lone `\r` one, U+2028 one; a character outside the
        // BMP is two units.
        assert_eq!(
            lines_in_source("a\r\nb\rc\u{2028}\u{1F600}d\n", &[3, 5, 7, 9, 10]),
            vec![2, 3, 4, 4, 4]
        );
        assert_eq!(line_of_ends(&[13, 32, 49, 69], 33), 3);
    }

    /// `ScopeInfo` slots after the map, read from node 20 (V8 11.3): `leaf` (no inferred
    /// name: `undefined`) and `const arrow = (x) => x + 1` (inferred name `arrow`).
    #[test]
    fn definition_offsets_of_node_20() {
        let undefined = 0x303f_ae44_04e9;
        let name = 0x2923_b8d2_2949;
        let leaf = [
            0x0001_71e2_0000_0000,
            1 << 32,
            0,
            name,
            0xffff_ffff_0000_0000,
            undefined,
            27 << 32,
            71 << 32,
            0x303f_ae44_0fd1,
        ];
        assert_eq!(definition_offset(&leaf, 3, 2, false), Some(27));
        let arrow = [
            0x0017_7062_0000_0000,
            1 << 32,
            0,
            name,
            0xffff_ffff_0000_0000,
            name,
            86 << 32,
            98 << 32,
        ];
        assert_eq!(definition_offset(&arrow, 3, 2, false), Some(86));
        // No inferred-name slot: the pair right after the slot index.
        let bare = [0, 1 << 32, 0, name, 2 << 32, 27 << 32, 71 << 32];
        assert_eq!(definition_offset(&bare, 3, 2, false), Some(27));
        // Two context locals (name, info each) before the function variable.
        let locals = [
            0,
            0,
            2 << 32,
            name,
            0,
            name,
            0,
            name,
            5 << 32,
            10 << 32,
            20 << 32,
        ];
        assert_eq!(definition_offset(&locals, 3, 2, false), Some(10));
        // V8 12.8+: slots 3 and 4.
        let fixed = [0, 1 << 32, 0, 27 << 32, 71 << 32, name];
        assert_eq!(definition_offset(&fixed, 3, 2, true), Some(27));
        // Not a position pair (start after end, not Smis): none.
        let wrong = [0, 1 << 32, 0, name, 0, 71 << 32, 27 << 32];
        assert_eq!(definition_offset(&wrong, 3, 2, false), None);
        assert_eq!(
            definition_offset(&[0, 0, 0, name, name, name], 3, 2, true),
            None
        );
    }

    /// Past 74 context locals their names are one hash table slot, not a slot each.
    #[test]
    fn slots_after_context_locals() {
        assert_eq!(after_context_locals(3, 0), 3);
        assert_eq!(after_context_locals(3, 10), 23);
        assert_eq!(after_context_locals(3, 74), 151);
        assert_eq!(after_context_locals(3, 75), 79);
        assert_eq!(after_context_locals(5, 100), 106);
        // The definition of a function with 80 context locals (V8 11.3's layout): the
        // hash table, 80 infos, the function variable (name, slot), no inferred name.
        let name = 0x2923_b8d2_2949;
        let mut slots = vec![0, 0, 80 << 32, name];
        slots.extend(std::iter::repeat_n(0x10 << 32, 80));
        slots.extend([name, 2 << 32, 40 << 32, 900 << 32]);
        assert_eq!(definition_offset(&slots, 3, 2, false), Some(40));
        // With 10, each name inline.
        let mut slots = vec![0, 0, 10 << 32];
        slots.extend(std::iter::repeat_n(name, 10));
        slots.extend(std::iter::repeat_n(0x10 << 32, 10));
        slots.extend([name, 2 << 32, 40 << 32, 900 << 32]);
        assert_eq!(definition_offset(&slots, 3, 2, false), Some(40));
    }

    #[test]
    fn bytecode_offsets_to_lines() {
        let lines = encode_lines(&[(-1, 2), (0, 3), (2, 4), (4, 4), (7, 4)]);
        assert_eq!(lines.len(), 40);
        assert_eq!(line_at(&lines, 0), Some(3));
        assert_eq!(line_at(&lines, 1), Some(3));
        assert_eq!(line_at(&lines, 3), Some(4));
        assert_eq!(line_at(&lines, 100), Some(4));
        assert_eq!(line_at(&lines, -1), Some(2));
        assert_eq!(line_at(&[], 3), None);
    }
}
