//! Current lines of V8's optimized (Maglev, TurboFan) frames: the kernel records such a
//! frame as its function's `Code` object and the pc's offset from the code's first
//! instruction (`tracekit_common::interp::v8`); this module reads the `Code` once and maps
//! every offset to the frames V8 itself would report there, inlined functions included.
//!
//! A `Code`'s `source_position_table` is a table of the format [`lines`] decodes, keyed
//! by instruction offsets. Each entry's `SourcePosition` holds a script offset and an
//! inlining id (bits 31..=46, stored plus one: 0 is "not inlined"). The `Code`'s
//! `deoptimization_data`, a `FixedArray`, holds the function's `SharedFunctionInfo`, its
//! literal array (whose element `i` is the `SharedFunctionInfo` of inlined function `i`),
//! and its inlining positions, a `ByteArray` of 16-byte `InliningPosition`s: the position
//! of the call in its caller (a `SourcePosition`, itself maybe inlined) and the inlined
//! function's index in the literal array (an `i32`). So an entry names the innermost
//! function at its script offset, then each caller at its call, up to the `Code`'s own
//! function. The position of instruction offset `o` is the last entry's whose offset is
//! `<= o` (`Code::SourcePosition`); the kernel records a caller's return address less one,
//! so a caller's line is its call's, and a leaf's pc exactly.
//!
//! V8 11.3 (Debian's node 20) states `Code`'s table, its deoptimization data and the data's
//! indices in `v8dbg_*` symbols but not `JSFunction::code` nor `Code`'s instruction
//! start, size and flags; those follow V8 11.3's layout, as read from a live node 20:
//! `JSFunction::code` 24 bytes past `shared`, then `Code::instruction_start` (a pointer) 16
//! bytes past `source_position_table`, the flags (a `u32`, the kind in the low bits) 8
//! past it, the instruction size (a `u32`) 8 past the flags.
//!
//! V8 12.4 (Node 22, no sandbox) states `JSFunction::code` (a tagged `Code` pointer),
//! `Code`'s instruction start, size and flags and its `wrapper`, but not its tables: they
//! are the two words before `wrapper` (deoptimization data, then source positions), as
//! read from live node 22 processes: a `TrustedFixedArray` holding the
//! `SharedFunctionInfo` itself, a `TrustedByteArray` of positions; the inlining positions
//! a `ByteArray`, the literal array a `WeakFixedArray`.
//!
//! V8 13.6 (Node 24, leaptiering, no sandbox) states `Code`'s instruction start, size and
//! flags and its `wrapper`, but not its tables nor `JSFunction::code`, which it no longer
//! has: as read from live node 24 processes, the function holds a `u32` dispatch handle in
//! the word before `shared`, whose entry in the process's `JSDispatchTable` (its base at
//! byte 2400 of the `IsolateGroup` that `IsolateGroup::default_isolate_group_` points to;
//! entry `handle >> 8`, 16 bytes, the `Code`'s address shifted left 16 in its second word)
//! names the `Code` (`tracekit_common::interp::v8::DISPATCH_TABLE`); `Code`'s
//! deoptimization data and source positions are the two words before its `wrapper`. The
//! tables are trusted objects with the same header as before (`TrustedByteArray`,
//! `ProtectedFixedArray`, `TrustedWeakFixedArray`), and the deoptimization data holds a
//! `SharedFunctionInfoWrapper` (its `shared_info` stated). Each was checked on a
//! TurboFan-compiled function against `%DebugPrint` (`--allow-natives-syntax`). Frames of
//! on-stack-replaced code (a loop optimized while it runs; the function does not point to
//! that code) are found from their pc ([`super::replaced`]). Other versions need the
//! symbols themselves; `-v` says which is missing.

use std::collections::BTreeMap;

use super::{
    CodeInfo,
    lines::{self, LineLayout, Objects},
    read_memory,
};

/// Where an optimized `Code` is read (offsets in bytes; indices in elements).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompiledLayout {
    /// `JSFunction::code`; V8 13.6: `JSFunction::dispatch_handle` (a `u32`).
    pub function_code: u16,
    /// V8 13.6 (leaptiering): where the `JSDispatchTable`'s entries are in the
    /// `IsolateGroup` (`tracekit_common::interp::v8::DISPATCH_TABLE`); `None`:
    /// `function_code` holds a tagged `Code` pointer.
    pub dispatch_table: Option<u16>,
    /// `Code::instruction_start` (a pointer); with `instructions_inline`, where the
    /// instructions themselves start in the `Code`.
    pub instruction_start: u16,
    /// V8 10: the `Code` object holds its instructions (`Code::kHeaderSize` past it;
    /// `v8dbg_class_Code__instruction_start__uintptr_t` states that size, not a field).
    pub instructions_inline: bool,
    /// `Code::instruction_size` (a `u32`).
    pub instruction_size: u16,
    /// `Code::flags` (a `u32`).
    pub flags: u16,
    /// `Code::source_position_table`.
    pub source_positions: u16,
    /// `Code::deoptimization_data`.
    pub deoptimization_data: u16,
    /// `v8dbg_type_Code__CODE_TYPE`.
    pub type_code: u16,
    /// Instance types of the tables (V8 12+ keeps them in trusted space, with the same
    /// header: length, then data): the position tables' (`ByteArray`, `TrustedByteArray`),
    /// the deoptimization data's (`FixedArray`, `TrustedFixedArray`,
    /// `ProtectedFixedArray`), the literal array's (`WeakFixedArray`, `FixedArray`,
    /// `TrustedWeakFixedArray`); a type a version does not state is repeated.
    pub byte_arrays: [u16; 2],
    pub deoptimization_arrays: [u16; 3],
    pub literal_arrays: [u16; 3],
    /// `v8dbg_CodeKindFieldMask` and `v8dbg_CodeKindFieldShift` of the flags.
    pub kind_mask: u32,
    pub kind_shift: u32,
    /// `v8dbg_CodeKindBaseline`: the kinds after it are optimized (Maglev, TurboFan).
    pub kind_baseline: u32,
    /// Indices in the deoptimization data: `SharedFunctionInfo` (V8 13: its
    /// `SharedFunctionInfoWrapper`), literal array, inlining positions.
    pub deopt_shared: u16,
    pub deopt_literals: u16,
    pub deopt_inlining: u16,
    /// V8 13: the `SharedFunctionInfoWrapper`'s instance type and its `shared_info`;
    /// `None`: the deoptimization data holds the `SharedFunctionInfo` itself.
    pub shared_wrapper: Option<(u16, u16)>,
}

/// `IsolateGroup`'s `JSDispatchTable` entries (its base pointer), V8 13.6: read from live
/// node 24 processes (`IsolateGroup::default_isolate_group_` + 2400 held the address
/// whose entry `dispatch_handle >> 8` named each function's `Code`).
const V13_6_DISPATCH_TABLE: u16 = 2400;

/// Where optimized code is read in a V8 `version` (major, minor) whose symbols give
/// `value(NAME)` and `member(CLASS, [FIELD...])`; `function_shared` is
/// `JSFunction::shared`. The error says what is missing (for `-v`).
///
/// Fields V8 does not state are taken from the layouts read from live processes (see the
/// module's docs), for those versions only: V8 11.3 (Debian's node 20), V8 12.4 (Node 22)
/// and V8 13.6 (Node 24). Any other version needs the symbols themselves.
pub fn layout(
    value: &impl Fn(&str) -> Result<u16, String>,
    member: &impl Fn(&str, &[&str]) -> Result<u16, String>,
    version: (u16, u16),
    function_shared: u16,
) -> Result<CompiledLayout, String> {
    let (v10_2, v11_3, v13_6) = (version == (10, 2), version == (11, 3), version == (13, 6));
    // V8 12.4 (Node 22) and 13.6 keep the tables right before `Code::wrapper`.
    let before_wrapper = v13_6 || version == (12, 4);
    let code = |field: &str| member("Code", &[field]);
    // The stated offset, else the checked version's (`checked`), else the error.
    let or_checked = |stated: Result<u16, String>, checked: Option<u16>| {
        stated.or_else(|err| checked.ok_or(err))
    };
    // V8 12.4 and 13.6: the tables are the two words before `Code::wrapper`
    // (deoptimization data, then source positions).
    let wrapper = code("wrapper").ok().filter(|_| before_wrapper);
    // V8 10.2 (Debian 12's node 18): `Code`'s tagged fields after its map are relocation
    // info, deoptimization data, source positions, the code data container; then
    // `instruction_size` (stated: 40), as read from a live node 18.
    let v10_2_tables = code("instruction_size").ok().filter(|_| v10_2);
    let source_positions = or_checked(
        code("source_position_table"),
        wrapper
            .and_then(|w| w.checked_sub(8))
            .or(v10_2_tables.and_then(|size| size.checked_sub(16))),
    )?;
    let deoptimization_data = or_checked(
        code("deoptimization_data"),
        wrapper
            .and_then(|w| w.checked_sub(16))
            .or(v10_2_tables.and_then(|size| size.checked_sub(24))),
    )?;
    let function_code = or_checked(
        member("JSFunction", &["code"]),
        match version {
            (11, 3) => Some(function_shared + 24),
            // The dispatch handle, the word before `shared`.
            (13, 6) => function_shared.checked_sub(8),
            _ => None,
        },
    )?;
    let instruction_start = or_checked(
        code("instruction_start"),
        v11_3.then_some(source_positions + 16),
    )?;
    let flags = or_checked(code("flags"), v11_3.then_some(instruction_start + 8))?;
    let instruction_size = or_checked(code("instruction_size"), v11_3.then_some(flags + 8))?;
    if instruction_start > 255 || instruction_size > 127 {
        return Err("Code's instruction fields past 255 bytes".into());
    }
    // V8 10.2 states no index of its deoptimization data: `DeoptimizationData`'s in its
    // `code.h` (the same as V8 11.3 states).
    let index = |name: &str| {
        value(&format!("v8dbg_DeoptimizationData{name}Index")).or_else(|err| match (v10_2, name) {
            (true, "SharedFunctionInfo") => Ok(6),
            (true, "LiteralArray") => Ok(2),
            (true, "InliningPositions") => Ok(7),
            _ => Err(err),
        })
    };
    let (deopt_shared, shared_wrapper) = match index("SharedFunctionInfo") {
        Ok(index) => (index, None),
        Err(err) => {
            let wrapped = index("WrappedSharedFunctionInfo").map_err(|_| err)?;
            let kind =
                value("v8dbg_type_SharedFunctionInfoWrapper__SHARED_FUNCTION_INFO_WRAPPER_TYPE")?;
            let shared = member("SharedFunctionInfoWrapper", &["shared_info"])?;
            (wrapped, Some((kind, shared)))
        }
    };
    let byte_array = value("v8dbg_type_ByteArray__BYTE_ARRAY_TYPE")?;
    let fixed_array = value("v8dbg_type_FixedArray__FIXED_ARRAY_TYPE")?;
    let or_same = |name: &str, same: u16| value(name).unwrap_or(same);
    let (kind_mask, kind_shift) = (
        value("v8dbg_CodeKindFieldMask")?,
        value("v8dbg_CodeKindFieldShift").unwrap_or(0),
    );
    let kind_baseline = value("v8dbg_CodeKindBaseline")?;
    Ok(CompiledLayout {
        function_code,
        dispatch_table: v13_6.then_some(V13_6_DISPATCH_TABLE),
        instruction_start,
        instructions_inline: v10_2,
        instruction_size,
        flags,
        source_positions,
        deoptimization_data,
        type_code: value("v8dbg_type_Code__CODE_TYPE")?,
        byte_arrays: [
            byte_array,
            or_same(
                "v8dbg_type_TrustedByteArray__TRUSTED_BYTE_ARRAY_TYPE",
                byte_array,
            ),
        ],
        deoptimization_arrays: [
            fixed_array,
            or_same(
                "v8dbg_type_TrustedFixedArray__TRUSTED_FIXED_ARRAY_TYPE",
                fixed_array,
            ),
            or_same(
                "v8dbg_type_ProtectedFixedArray__PROTECTED_FIXED_ARRAY_TYPE",
                fixed_array,
            ),
        ],
        literal_arrays: [
            value("v8dbg_type_WeakFixedArray__WEAK_FIXED_ARRAY_TYPE")?,
            fixed_array,
            or_same(
                "v8dbg_type_TrustedWeakFixedArray__TRUSTED_WEAK_FIXED_ARRAY_TYPE",
                fixed_array,
            ),
        ],
        kind_mask: u32::from(kind_mask),
        kind_shift: u32::from(kind_shift),
        kind_baseline: u32::from(kind_baseline),
        deopt_shared,
        deopt_literals: index("LiteralArray")?,
        deopt_inlining: index("InliningPositions")?,
        shared_wrapper,
    })
}

/// Inlining ids followed from one position at most.
const MAX_INLINING_DEPTH: usize = 32;

/// The inlining id of `SourcePosition` value `position`: `None` when not inlined.
pub fn inlining_id(position: i64) -> Option<usize> {
    let stored = (position >> 31) & 0xFFFF;
    usize::try_from(stored - 1).ok()
}

/// One `InliningPosition`: the call's position in its caller, the inlined function's index
/// in the literal array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inlining {
    pub position: i64,
    pub function: u32,
}

/// The `InliningPosition`s of `bytes` (16 bytes each: an `i64`, an `i32`, padding).
pub fn decode_inlinings(bytes: &[u8]) -> Vec<Inlining> {
    bytes
        .chunks_exact(16)
        .map(|record| Inlining {
            position: i64::from_le_bytes(record[..8].try_into().unwrap()),
            function: u32::from_le_bytes(record[8..12].try_into().unwrap()),
        })
        .collect()
}

/// Who a frame of an entry is: the `Code`'s own function, or inlined function `i` (its
/// literal array's index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Function {
    Outer,
    Inlined(u32),
}

/// Frames at one position, outermost first: each function and its script offset (`None`:
/// no position).
pub type Chain = Vec<(Function, Option<u32>)>;

/// The frames at `SourcePosition` `position` ([`Chain`]). Empty when an inlining id is out
/// of range or the chain does not end.
pub fn chain(position: i64, inlinings: &[Inlining]) -> Chain {
    let mut frames = Vec::new();
    let mut position = position;
    for _ in 0..MAX_INLINING_DEPTH {
        let offset = lines::script_offset(position);
        match inlining_id(position) {
            None => {
                frames.push((Function::Outer, offset));
                frames.reverse();
                return frames;
            }
            Some(id) => {
                let Some(inlining) = inlinings.get(id) else {
                    return Vec::new();
                };
                frames.push((Function::Inlined(inlining.function), offset));
                position = inlining.position;
            }
        }
    }
    Vec::new()
}

/// A `SharedFunctionInfo` read for naming: its names and its script (untagged).
pub(super) type Shared = (CodeInfo, Option<u64>);

/// The bytes of the (trusted) `ByteArray` at tagged `tagged`.
fn byte_array(
    objects: &impl Objects,
    lines: &LineLayout,
    layout: &CompiledLayout,
    tagged: u64,
) -> Option<Vec<u8>> {
    let (array, kind) = objects.object(tagged)?;
    if !layout.byte_arrays.contains(&kind) {
        return None;
    }
    let length = objects.word(array + u64::from(lines.array_length))? as i64 >> 32;
    let length = usize::try_from(length).ok()?.min(1 << 20);
    read_memory(objects.pid(), array + u64::from(lines.array_data), length)
}

/// Element `index` of the (weak) fixed array at untagged `array`, if it has one.
fn element(objects: &impl Objects, lines: &LineLayout, array: u64, index: u64) -> Option<u64> {
    let length = objects.word(array + u64::from(lines.array_length))? as i64 >> 32;
    if index >= u64::try_from(length).ok()? {
        return None;
    }
    objects.word(array + u64::from(lines.array_data) + 8 * index)
}

/// Reads optimized `Code` object `code` (untagged): its function's names (`shared` reads a
/// `SharedFunctionInfo` at an untagged address) and [`CodeInfo::compiled`], each table
/// entry's instruction offset with its frames' symbols, outermost first. `None` when it is
/// not optimized code or its function cannot be read; an unreadable table leaves
/// `compiled` empty (the frame then gets its function's definition line).
pub(super) fn read(
    objects: &impl Objects,
    lines: &LineLayout,
    layout: &CompiledLayout,
    type_shared_function_info: u16,
    code: u64,
    shared: impl Fn(u64) -> Option<Shared>,
) -> Option<CodeInfo> {
    let (deopt, outer) = deopt_and_outer(objects, lines, layout, type_shared_function_info, code)?;
    let at = |index: u16| element(objects, lines, deopt, u64::from(index));
    let (outer_info, outer_script) = shared(outer)?;
    let table = objects
        .word(code + u64::from(layout.source_positions))
        .and_then(|table| byte_array(objects, lines, layout, table));
    let inlinings = at(layout.deopt_inlining)
        .and_then(|tagged| byte_array(objects, lines, layout, tagged))
        .map(|bytes| decode_inlinings(&bytes))
        .unwrap_or_default();
    let literals = at(layout.deopt_literals)
        .and_then(|tagged| objects.object(tagged))
        .filter(|(_, kind)| layout.literal_arrays.contains(kind))
        .map(|(array, _)| array);
    let entries: Vec<(u32, Chain)> = table
        .map(|table| lines::decode_table(&table))
        .unwrap_or_default()
        .into_iter()
        .map(|entry| {
            let offset = u32::try_from(entry.code_offset.max(0)).unwrap_or(u32::MAX);
            (offset, chain(entry.position, &inlinings))
        })
        .filter(|(_, frames)| !frames.is_empty())
        .collect();
    // Each function's names and lines, read once.
    let mut offsets: BTreeMap<Function, Vec<u32>> = BTreeMap::new();
    for (function, offset) in entries.iter().flat_map(|(_, frames)| frames) {
        offsets.entry(*function).or_default().extend(offset);
    }
    let mut named: BTreeMap<Function, (CodeInfo, BTreeMap<u32, i32>)> = BTreeMap::new();
    for (function, wanted) in offsets {
        let read = match function {
            Function::Outer => Some((outer_info.clone(), outer_script)),
            Function::Inlined(index) => literals
                .and_then(|array| element(objects, lines, array, u64::from(index)))
                .and_then(|tagged| objects.object(tagged))
                .filter(|&(_, kind)| kind == type_shared_function_info)
                .and_then(|(object, _)| shared(object)),
        };
        let Some((info, script)) = read else { continue };
        let found = script
            .and_then(|script| lines::script_lines(objects, lines, script, &wanted))
            .map(|found| wanted.iter().copied().zip(found).collect())
            .unwrap_or_default();
        named.insert(function, (info, found));
    }
    let compiled = entries
        .into_iter()
        .filter_map(|(offset, frames)| {
            let symbols = frames
                .iter()
                .map(|(function, at)| {
                    let (info, found) = named.get(function)?;
                    let line = at.and_then(|at| found.get(&at).copied());
                    Some(symbol(info, line))
                })
                .collect::<Option<Vec<String>>>()?;
            Some((offset, symbols))
        })
        .collect();
    Some(CodeInfo {
        compiled,
        ..outer_info
    })
}

/// The `SharedFunctionInfo` (untagged) of optimized `Code` object `code` (untagged): the
/// function it was made for (its inlined functions aside). `None` when it is not optimized
/// code or its deoptimization data cannot be read.
pub(super) fn outer_shared(
    objects: &impl Objects,
    lines: &LineLayout,
    layout: &CompiledLayout,
    type_shared_function_info: u16,
    code: u64,
) -> Option<u64> {
    deopt_and_outer(objects, lines, layout, type_shared_function_info, code).map(|(_, outer)| outer)
}

/// The deoptimization data (untagged) of optimized `code` and its [`outer_shared`].
fn deopt_and_outer(
    objects: &impl Objects,
    lines: &LineLayout,
    layout: &CompiledLayout,
    type_shared_function_info: u16,
    code: u64,
) -> Option<(u64, u64)> {
    let flags = objects.word(code + u64::from(layout.flags))? as u32;
    if (flags & layout.kind_mask) >> layout.kind_shift <= layout.kind_baseline {
        return None;
    }
    let (deopt, kind) =
        objects.object(objects.word(code + u64::from(layout.deoptimization_data))?)?;
    if !layout.deoptimization_arrays.contains(&kind) {
        return None;
    }
    let at = element(objects, lines, deopt, u64::from(layout.deopt_shared))?;
    let (mut outer, mut kind) = objects.object(at)?;
    if let Some((wrapper_type, wrapped)) = layout.shared_wrapper {
        if kind != wrapper_type {
            return None;
        }
        (outer, kind) = objects.object(objects.word(outer + u64::from(wrapped))?)?;
    }
    (kind == type_shared_function_info).then_some((deopt, outer))
}

/// `name (file:LINE)` with `line`, else the definition line; `name (file)` with neither;
/// `name` when the script has no name.
pub fn symbol(info: &CodeInfo, line: Option<i32>) -> String {
    if info.file.is_empty() {
        return info.name.clone();
    }
    match line.or((info.first_line > 0).then_some(info.first_line)) {
        Some(line) => format!("{} ({}:{line})", info.name, info.file),
        None => format!("{} ({})", info.name, info.file),
    }
}

/// The frames of an optimized frame recorded at instruction offset `offset`, outermost
/// first, each with whether it is inlined into the one before: the last entry of
/// [`CodeInfo::compiled`] at or before `offset`, else the function at its definition line.
pub fn frames(info: &CodeInfo, offset: u32) -> Vec<(String, bool)> {
    let at = info.compiled.partition_point(|(entry, _)| *entry <= offset);
    match at.checked_sub(1).and_then(|at| info.compiled.get(at)) {
        Some((_, symbols)) => symbols
            .iter()
            .enumerate()
            .map(|(i, symbol)| (symbol.clone(), i > 0))
            .collect(),
        None => vec![(symbol(info, None), false)],
    }
}

#[cfg(test)]
mod tests;
