//! Java source lines of HotSpot frames: `Ledger.sumCents (Ledger.java:6)`.
//!
//! The kernel records an interpreted frame as its `Method*` and bytecode index (bci, from
//! the frame's saved bytecode pointer). A method's line numbers are in its `ConstMethod`,
//! right after its bytecodes (`sizeof(ConstMethod) + _code_size`), when its
//! `ConstMethod::_flags` hold `_has_linenumber_table`: HotSpot's compressed line number
//! table, a stream of (bci, line) pairs as deltas from the previous pair (from (0, 0)):
//! - one byte `bci_delta << 3 | line_delta` when the bci delta is 0..=31 and the line
//!   delta 0..=7;
//! - else `0xFF`, then both deltas as signed ints of HotSpot's `CompressedWriteStream`:
//!   zigzag (`v << 1 ^ v >> 31`), then UNSIGNED5 (a byte below 192 ends the number; a byte
//!   `b >= 192` adds `b` and continues with the next byte worth 64 times more; at most 5
//!   bytes);
//! - a 0 byte ends the table.
//!
//! That is the encoding of JDK 8 to 17 (the JDK 17 here is the one tested). A line is looked
//! up as `Method::line_number_from_bci` does: the pair with the bci itself, else the one
//! with the greatest bci below it. The source file is the constant pool's symbol at
//! `ConstantPool::_source_file_name_index`.
//!
//! The bci of the frame running when sampled is the last one the interpreter saved in the
//! frame (it keeps the current one in a register, r13, and saves it at calls into the VM
//! and at method entry), so the leaf's line can be an earlier line of the same method; the
//! callers' bcis are their call instructions, exact.

use super::{Field, Layout, Memory, VmStructs, symbol_text};
use crate::unwind::interp::CodeInfo;

/// The largest line number table read (bytes).
const MAX_TABLE: u64 = 65_536;

/// Where a method's line numbers and source file are (offsets in bytes, from
/// `gHotSpotVMStructs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineLayout {
    /// `ConstMethod::_flags` (u16) and the flag `ConstMethod::_has_linenumber_table`.
    pub flags: (u64, u16),
    /// `ConstMethod::_code_size` (u16): bytes of bytecodes after the `ConstMethod`.
    pub code_size: u64,
    /// `ConstMethod::_constMethod_size` (i32, in words): the `ConstMethod` with its tables.
    pub const_method_size: u64,
    /// `sizeof(ConstMethod)`: where the bytecodes start.
    pub header: u64,
    /// `ConstantPool::_source_file_name_index` (u16): the pool slot of the source file
    /// name's symbol; `None` when not stated (no file: frames keep `Class.method`).
    pub source_file_index: Option<u64>,
}

impl LineLayout {
    /// The line layout in `tables`, or `None` when a field or constant is missing.
    pub fn of(tables: &VmStructs) -> Option<Self> {
        let offset = |name: &str| match tables.fields.get(name) {
            Some(Field::Offset(offset)) => Some(*offset),
            _ => None,
        };
        // JDK 25 keeps the flags in a `ConstMethodFlags` (its `_flags`, a u4 whose low
        // bits are read) and names the bit there.
        let flag = *tables
            .int_constants
            .get("ConstMethod::_has_linenumber_table")
            .or_else(|| {
                tables
                    .int_constants
                    .get("ConstMethodFlags::_misc_has_linenumber_table")
            })?;
        let flags = offset("ConstMethod::_flags").or_else(|| offset("ConstMethod::_flags._flags"));
        Some(Self {
            flags: (flags?, u16::try_from(flag).ok()?),
            code_size: offset("ConstMethod::_code_size")?,
            const_method_size: offset("ConstMethod::_constMethod_size")?,
            header: *tables.sizes.get("ConstMethod")?,
            source_file_index: offset("ConstantPool::_source_file_name_index"),
        })
    }

    /// The source file name (empty if unknown) and compressed line number table (empty if
    /// the method has none) of `Method*` `method`; `None` when its `ConstMethod` is
    /// unreadable.
    pub fn read(
        self,
        memory: &impl Memory,
        layout: &Layout,
        method: u64,
    ) -> Option<(String, Vec<u8>)> {
        let u16_at = |address: u64| -> Option<u16> {
            Some(u16::from_le_bytes(
                memory.read(address, 2)?.try_into().ok()?,
            ))
        };
        let const_method = memory.u64(method + layout.method_const_method)?;
        let file = self
            .source_file(memory, layout, const_method)
            .unwrap_or_default();
        if u16_at(const_method + self.flags.0)? & self.flags.1 == 0 {
            return Some((file, Vec::new()));
        }
        let code_size = u64::from(u16_at(const_method + self.code_size)?);
        let words = u64::try_from(memory.i32(const_method + self.const_method_size)?).ok()?;
        let (table, end) = (
            const_method + self.header + code_size,
            const_method + words * 8,
        );
        if table >= end || end - table > MAX_TABLE {
            return Some((file, Vec::new()));
        }
        Some((file, memory.read(table, (end - table) as usize)?))
    }

    /// The source file of the class whose constant pool `const_method` names.
    fn source_file(
        self,
        memory: &impl Memory,
        layout: &Layout,
        const_method: u64,
    ) -> Option<String> {
        let constants = memory.u64(const_method + layout.const_method.0)?;
        let bytes = memory.read(constants + self.source_file_index?, 2)?;
        let index = u16::from_le_bytes(bytes.try_into().ok()?);
        if index == 0 {
            return None;
        }
        let symbol = memory.u64(constants + layout.constant_pool.1 + 8 * u64::from(index))?;
        symbol_text(memory, layout, symbol).filter(|file| !file.is_empty())
    }
}

/// Reads a compressed line number table's (bci, line) pairs.
struct Pairs<'a> {
    bytes: &'a [u8],
    at: usize,
    /// The stream's UNSIGNED5 excess ([`unsigned5`]).
    excess: u32,
    bci: i64,
    line: i64,
}

impl Pairs<'_> {
    fn byte(&mut self) -> Option<u8> {
        let byte = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(byte)
    }

    /// An UNSIGNED5 number.
    fn unsigned(&mut self) -> Option<u32> {
        unsigned5(self.bytes, &mut self.at, self.excess)
    }

    /// A zigzag-signed number (`CompressedReadStream::read_signed_int`).
    fn signed(&mut self) -> Option<i64> {
        let value = self.unsigned()?;
        Some(i64::from(((value >> 1) as i32) ^ -((value & 1) as i32)))
    }
}

impl Iterator for Pairs<'_> {
    type Item = (i64, i64);

    fn next(&mut self) -> Option<(i64, i64)> {
        let byte = self.byte()?;
        if byte == 0 {
            return None;
        }
        if byte == 0xFF {
            self.bci += self.signed()?;
            self.line += self.signed()?;
        } else {
            self.bci += i64::from(byte >> 3);
            self.line += i64::from(byte & 7);
        }
        Some((self.bci, self.line))
    }
}

/// The UNSIGNED5 number at `*at` of `bytes` (`CompressedReadStream::read_int`: with
/// excess `x`, each byte less `x` counts; a byte below `192 - x` ends it, a byte `b` at or
/// above adds `b - x` and continues with the next byte worth 64 times more, 5 bytes at
/// most), moving `at` past it; `None` when cut. JDK 20+ writes with excess 1
/// (`utilities/unsigned5.hpp`: no zero bytes), older JDKs 0.
pub(super) fn unsigned5(bytes: &[u8], at: &mut usize, x: u32) -> Option<u32> {
    let l = 192 - x;
    let mut next = || -> Option<u32> {
        let byte = *bytes.get(*at)?;
        *at += 1;
        u32::from(byte).checked_sub(x)
    };
    let mut sum = next()?;
    if sum < l {
        return Some(sum);
    }
    for i in 1..5 {
        let byte = next()?;
        sum = sum.wrapping_add(byte << (6 * i));
        if byte < l {
            break;
        }
    }
    Some(sum)
}

/// The line of bytecode index `bci` in compressed line number table `table`: the line of
/// the pair at `bci`, else of the pair with the greatest bci below it; `None` when no pair
/// is at or below it (or the table is empty).
pub fn line_of(table: &[u8], bci: u32, excess: u32) -> Option<i32> {
    let bci = i64::from(bci);
    let pairs = Pairs {
        bytes: table,
        at: 0,
        excess,
        bci: 0,
        line: 0,
    };
    let mut best: Option<(i64, i64)> = None;
    for (at, line) in pairs {
        if at == bci {
            return i32::try_from(line).ok();
        }
        if at < bci && best.is_none_or(|(best_bci, _)| at >= best_bci) {
            best = Some((at, line));
        }
    }
    best.and_then(|(_, line)| i32::try_from(line).ok())
}

/// The symbol of a Java frame at `bci` of method `info`: `Class.method (File.java:LINE)`,
/// or `Class.method` when the file or line is unknown.
pub fn symbol(info: &CodeInfo, bci: u32) -> String {
    // HotSpot's `CodeInfo::minor` is its streams' excess (`Layout::stream_excess`).
    match line_of(&info.linetable, bci, u32::from(info.minor)) {
        Some(line) if !info.file.is_empty() => format!("{} ({}:{line})", info.name, info.file),
        _ => info.name.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// JDK 20+'s streams add 1 to every byte: `Ledger.sumCents`'s escaped pair is
    /// `0xFF 0x21 0x02` there, and the scopes' numbers read one less than their bytes.
    #[test]
    fn unsigned5_with_excess() {
        let table = [0x06, 0x11, 0x51, 0xFF, 0x21, 0x02, 0x33, 0x00];
        assert_eq!(line_of(&table, 28, 1), Some(7));
        assert_eq!(line_of(&table, 34, 1), Some(10));
        let mut at = 0;
        assert_eq!(unsigned5(&[0x01, 0x02, 217, 7], &mut at, 1), Some(0));
        assert_eq!(unsigned5(&[0x01, 0x02, 217, 7], &mut at, 1), Some(1));
        // 216 + 6 * 64 = 600 written with excess 1: 217, 7.
        assert_eq!(unsigned5(&[0x01, 0x02, 217, 7], &mut at, 1), Some(600));
        assert_eq!(unsigned5(&[0x00], &mut 0, 1), None);
    }

    /// `Ledger.sumCents`'s table as javac's `LineNumberTable` states it (`line 6: 0`,
    /// `line 7: 2`, `line 8: 12`, `line 7: 28`, `line 10: 34`), encoded by HotSpot's rules:
    /// (0,+6) `0x06`; (+2,+1) `0x11`; (+10,+1) `0x51`; (+16,-1) does not fit a byte: `0xFF`,
    /// zigzag 32 `0x20`, zigzag 1 `0x01`; (+6,+3) `0x33`; the end `0x00`.
    const SUM_CENTS: [u8; 8] = [0x06, 0x11, 0x51, 0xFF, 0x20, 0x01, 0x33, 0x00];

    #[test]
    fn a_compressed_line_table_decodes_to_javacs_lines() {
        let pairs: Vec<(i64, i64)> = Pairs {
            bytes: &SUM_CENTS,
            at: 0,
            excess: 0,
            bci: 0,
            line: 0,
        }
        .collect();
        assert_eq!(pairs, [(0, 6), (2, 7), (12, 8), (28, 7), (34, 10)]);
        // Exact bcis, then the greatest below: the loop's body (12..28) is line 8, its
        // increment and jump back (28..34) line 7 again, the return line 10.
        let lines: Vec<Option<i32>> = [0, 1, 2, 11, 12, 27, 28, 33, 34, 35]
            .iter()
            .map(|&bci| line_of(&SUM_CENTS, bci, 0))
            .collect();
        let want = [6, 6, 7, 7, 8, 8, 7, 7, 10, 10].map(Some);
        assert_eq!(lines, want);
    }

    #[test]
    fn long_deltas_take_several_bytes() {
        // (+300, +1): 0xFF, zigzag 600 as UNSIGNED5 (216 = 192 + 408 % 64, then 408 / 64 =
        // 6), zigzag 2; then (-300, -1) back: zigzag 599 (215, 6), zigzag 1.
        let table = [0x06, 0xFF, 216, 6, 0x02, 0xFF, 215, 6, 0x01, 0x00];
        assert_eq!(line_of(&table, 0, 0), Some(6));
        assert_eq!(line_of(&table, 299, 0), Some(6));
        assert_eq!(line_of(&table, 300, 0), Some(7));
        assert_eq!(line_of(&table, 5000, 0), Some(7));
    }

    #[test]
    fn an_empty_or_cut_table_has_no_line() {
        assert_eq!(line_of(&[], 3, 0), None);
        assert_eq!(line_of(&[0x00, 0x06], 3, 0), None);
        // Cut inside an escaped pair: the pairs before it still count.
        assert_eq!(line_of(&[0x06, 0xFF, 216], 400, 0), Some(6));
    }

    #[test]
    fn a_frame_is_named_with_its_file_and_line_when_both_are_known() {
        let mut info = CodeInfo {
            name: "Ledger.sumCents".into(),
            file: "Ledger.java".into(),
            first_line: 0,
            linetable: SUM_CENTS.to_vec(),
            minor: 0,
            compiled: Vec::new(),
        };
        assert_eq!(symbol(&info, 16), "Ledger.sumCents (Ledger.java:8)");
        info.file.clear();
        assert_eq!(symbol(&info, 16), "Ledger.sumCents");
        info.file = "Ledger.java".into();
        info.linetable.clear();
        assert_eq!(symbol(&info, 16), "Ledger.sumCents");
    }
}
