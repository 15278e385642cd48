//! Whole strings: in trace plans, the string operands read through a pointer (syscall
//! arguments, `str()`, the path a start saved) or stored in a tracepoint's record
//! (`__data_loc`) read up to a size per kind of string, not
//! [`STR_BYTES`], into the record's tail ([`LONG_STR`]); filters compare them whole in
//! every plan; group keys keep their first [`STR_BYTES`]` - 1` bytes, marked when longer.

use tracekit_common::engine::{
    ALL_STRINGS, Insn, LONG_HEAD, LONG_STR, Operand, PTR_ARRAY, STR_BYTES, STR_MAX, op, operand,
};

/// Bytes of a command-line argument shown by default (bcc's execsnoop: 128).
pub const DEFAULT_ARG_BYTES: u32 = 128;
/// Bytes of a path or other string shown by default: a whole path (`PATH_MAX` less its NUL
/// and the byte read past the shown ones, that tells a cut string from a whole one).
pub const DEFAULT_STRING_BYTES: u32 = STR_MAX as u32 - 2;

/// Whether an operand of `kind` is what the start stage left (read once the start is found).
pub(crate) fn reads_start(kind: u32) -> bool {
    matches!(
        kind,
        operand::LATENCY | operand::SAVED | operand::SAVED_STR | operand::SAVED_USER_STR
    )
}

/// Whether `o` is a string read through a pointer or stored in the record (`__data_loc`),
/// which a trace plan reads whole.
fn through_pointer(o: &Operand) -> bool {
    matches!(
        o.kind,
        operand::USER_STR
            | operand::KERNEL_STR
            | operand::PATH_STR
            | operand::SAVED_USER_STR
            | operand::FIELD_DATA_LOC
    )
}

/// Makes the trace plan's strings read through pointers whole: at most `max_string` bytes
/// each (0: [`DEFAULT_STRING_BYTES`], arguments of a pointer array [`DEFAULT_ARG_BYTES`]),
/// `str(PATH, N)` N with its NUL; the bytes a filter (`insns`) compares are copied for it.
pub(crate) fn whole_strings(operands: &mut [Operand], insns: &[Insn], max_string: u32) {
    for (index, o) in operands.iter_mut().enumerate() {
        if !through_pointer(o) {
            continue;
        }
        let shown = match max_string {
            0 if o.flags & PTR_ARRAY != 0 => DEFAULT_ARG_BYTES,
            0 if o.kind == operand::PATH_STR && o.size != STR_BYTES as u32 => o.size - 1,
            0 => DEFAULT_STRING_BYTES,
            n => n,
        };
        // One byte more than shown, and the NUL: a string that fills it was cut.
        o.size = (shown + 2).clamp(3, STR_MAX as u32);
        o.flags |= LONG_STR;
        let filtered = insns
            .iter()
            .any(|insn| insn.op >= op::STR_EQ && insn.operand as usize == index);
        if filtered {
            o.flags |= LONG_HEAD;
        }
    }
}

/// Makes an aggregate plan's strings read through pointers exact where they are compared
/// and marked where they are cut: a string a filter (`insns`) compares is read whole (as
/// [`whole_strings`] reads a trace's), so that it equals, starts, ends with or contains a
/// constant as the whole string does; a group key (`keys`: operand indices) keeps a
/// string's first [`STR_BYTES`]` - 1` bytes and, when it is longer, a mark in its last byte
/// (shown as `...`; strings alike in those bytes share a group), unless `str(PATH, N)` asked
/// for fewer.
pub(crate) fn compared_strings(
    operands: &mut [Operand],
    insns: &[Insn],
    keys: &[u32],
    max_string: u32,
) {
    for (index, o) in operands.iter_mut().enumerate() {
        if !through_pointer(o) || o.flags & PTR_ARRAY != 0 {
            continue;
        }
        let filtered = insns
            .iter()
            .any(|insn| insn.op >= op::STR_EQ && insn.operand as usize == index);
        let shown = if filtered {
            match max_string {
                0 => DEFAULT_STRING_BYTES,
                n => n,
            }
        } else if keys.contains(&(index as u32))
            && o.size >= STR_BYTES as u32
            // The record says a `__data_loc` string's length: the kernel marks a longer
            // one's key without reading it whole.
            && o.kind != operand::FIELD_DATA_LOC
        {
            // One byte past the key's: a longer string is marked.
            STR_BYTES as u32 - 1
        } else {
            continue;
        };
        o.size = (shown + 2).clamp(3, STR_MAX as u32);
        o.flags |= LONG_STR | LONG_HEAD;
    }
}

/// The listing's mark of a whole string: ` whole:SIZE`, `..MAX` for every string of an
/// array, `+head` when a filter compares it.
pub(crate) fn listing(o: &Operand) -> String {
    if o.flags & LONG_STR == 0 {
        return String::new();
    }
    format!(
        " whole:{}{}{}",
        o.size,
        if o.flags & ALL_STRINGS != 0 {
            format!("..{}", o.aux)
        } else {
            String::new()
        },
        if o.flags & LONG_HEAD != 0 {
            "+head"
        } else {
            ""
        }
    )
}
