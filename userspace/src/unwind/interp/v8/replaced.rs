//! V8 frames in code their function no longer points to: on-stack-replaced (OSR) code,
//! which V8 enters from a hot loop of an unoptimized frame (`middle`'s loop with `leaf`
//! inlined, after a few seconds of it), or optimized code replaced while its frame ran.
//! The kernel cannot find such code from the frame's function, so it records the frame as
//! [`runtime::V8_REPLACED`]: the function's `SharedFunctionInfo` and the pc's low 16 bits,
//! and announces the pc itself. Here the pc is mapped to its code object by its
//! `InstructionStream`: V8 places every code object's instructions at a code-aligned
//! address right after a small header (the stream's map, then its `Code`), so the first
//! header below the pc whose map is the stream map is the pc's stream (checked: the `Code`
//! it points back to starts its instructions there and holds the pc). The code is read as
//! any optimized `Code` ([`compiled::read`]) and kept under its function; a frame's word
//! then picks, among its function's replaced code, the one whose instructions hold a pc
//! with those low bits.
//!
//! V8 11.3 (Debian's node 20) states the stream's instance type and where its instructions
//! start (`v8dbg_class_InstructionStream__instruction_start__uintptr_t`, 16) but not where
//! its `Code` is: 8, right after the map, as read from a live node 20 (the `Code`'s
//! `instruction_start` is the stream's address plus 16). V8 13.6 (Node 24) states 32 for
//! the instructions (the stream is a trusted object: map, `Code`, relocation info, body
//! size) and not the `Code` either: 8 again, as read with gdb from a live node 24 (a
//! TurboFan `Code` at `0x54867c82068` whose `instruction_stream` (`Code` + 32) held
//! `0x7f2d3e002d21`; that stream's second word held `0x54867c82069`, the tagged `Code`, and
//! the `Code`'s `instruction_start` `0x7f2d3e002d40`, the stream plus 32). V8 12.4 (Node
//! 22) is laid out as 13.6 (32 stated, `Code` at 8: a live node 22's stream at
//! `0x7f2fdafc47e0` held the tagged `Code` `0x32dd3c701c01` in its second word, and that
//! `Code`'s `instruction_start` was `0x7f2fdafc4800`).
//!
//! [`runtime::V8_REPLACED`]: tracekit_common::interp::runtime::V8_REPLACED

use std::{collections::HashSet, sync::Arc};

use super::{
    CodeInfo, Reader, Version,
    compiled::{self, CompiledLayout},
    lines::Objects,
    read_shared,
};
use crate::unwind::interp::{
    registry::{Registry, registry},
    runtime::reader_as,
};

/// Where an `InstructionStream` is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplacedLayout {
    /// `v8dbg_type_InstructionStream__INSTRUCTION_STREAM_TYPE`.
    pub type_instruction_stream: u16,
    /// Bytes from a stream to its first instruction
    /// (`v8dbg_class_InstructionStream__instruction_start__uintptr_t`).
    pub stream_instructions: u16,
    /// The stream's `Code` (a tagged pointer back to the code object).
    pub stream_code: u16,
}

/// Where streams are read in a V8 `version` (major, minor) whose symbols give
/// `value(NAME)` and `member(CLASS, [FIELD...])`; the error says what is missing (`-v`).
pub fn layout(
    value: &impl Fn(&str) -> Result<u16, String>,
    member: &impl Fn(&str, &[&str]) -> Result<u16, String>,
    version: (u16, u16),
) -> Result<ReplacedLayout, String> {
    let stream_code = member("InstructionStream", &["code"]).or_else(|err| {
        // Checked on V8 11.3, 12.4 and 13.6 only (see the module's docs).
        if version == (11, 3) || version == (12, 4) || version == (13, 6) {
            Ok(8)
        } else {
            Err(err)
        }
    })?;
    Ok(ReplacedLayout {
        type_instruction_stream: value("v8dbg_type_InstructionStream__INSTRUCTION_STREAM_TYPE")?,
        stream_instructions: member("InstructionStream", &["instruction_start"])?,
        stream_code,
    })
}

/// Code objects' instructions start at multiples of this (V8's `kCodeAlignment` is 32 or
/// 64 on x86-64; the stream's checks reject any other candidate).
const CODE_ALIGNMENT: u64 = 32;
/// Bytes below a pc searched for its stream: an encoded frame's offset holds 16 bits, so
/// a pc farther into its code is not named by it anyway.
const MAX_SCAN_BYTES: u64 = 1 << 16;
/// Memory is read a page at a time.
const PAGE: u64 = 4096;

/// A process's memory, as the scan reads it.
pub(super) trait Memory: Objects {
    /// `PAGE` bytes at page-aligned `page`.
    fn page(&self, page: u64) -> Option<Vec<u8>>;
}

impl Memory for Reader<'_> {
    fn page(&self, page: u64) -> Option<Vec<u8>> {
        super::read_memory(self.pid, page, PAGE as usize)
    }
}

/// The code object whose instructions hold a pc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    /// The `Code` (untagged).
    pub code: u64,
    /// Its first instruction, and the instructions' size in bytes.
    pub start: u64,
    pub size: u32,
}

/// The code object whose instructions hold `pc`: the first `InstructionStream` below it
/// (at most [`MAX_SCAN_BYTES`]), when its `Code` points back to it and covers `pc`.
pub(super) fn find_code(
    memory: &impl Memory,
    compiled: &CompiledLayout,
    layout: &ReplacedLayout,
    pc: u64,
) -> Option<Found> {
    let header = u64::from(layout.stream_instructions);
    let lowest = pc.saturating_sub(MAX_SCAN_BYTES);
    // Tagged-looking words found to be no stream map (instruction bytes, other objects).
    let mut not_maps = HashSet::new();
    let mut page: Option<(u64, Vec<u8>)> = None;
    let mut start = pc & !(CODE_ALIGNMENT - 1);
    while start >= lowest.max(header) {
        let at = start - header;
        let page_of = at & !(PAGE - 1);
        if page.as_ref().is_none_or(|(base, _)| *base != page_of) {
            page = Some((page_of, memory.page(page_of)?));
        }
        let (base, bytes) = page.as_ref()?;
        let offset = (at - base) as usize;
        let word = u64::from_le_bytes(bytes.get(offset..offset + 8)?.try_into().ok()?);
        start -= CODE_ALIGNMENT;
        if word & 3 != 1 || not_maps.contains(&word) {
            continue;
        }
        if memory
            .object(at | 1)
            .is_none_or(|(_, kind)| kind != layout.type_instruction_stream)
        {
            not_maps.insert(word);
            continue;
        }
        // The first stream below the pc is the pc's, if any: its code must say so.
        let instructions = at + header;
        let (code, kind) = memory.object(memory.word(at + u64::from(layout.stream_code))?)?;
        if kind != compiled.type_code
            || memory.word(code + u64::from(compiled.instruction_start))? != instructions
        {
            return None;
        }
        let size = memory.word(code + u64::from(compiled.instruction_size))? as u32;
        return (pc - instructions < u64::from(size)).then_some(Found {
            code,
            start: instructions,
            size,
        });
    }
    None
}

/// Replaced code found around `pc` in process `pid`: its function's `SharedFunctionInfo`
/// (untagged), where it is, and its frames by offset ([`compiled::read`]).
pub(in crate::unwind::interp) fn read(
    pid: u32,
    v: &Version,
    pc: u64,
) -> Option<(u64, Found, CodeInfo)> {
    let (compiled, lines, layout) = (v.compiled?, v.lines?, v.replaced?);
    let reader = Reader { pid, v };
    let found = find_code(&reader, &compiled, &layout, pc)?;
    let sfi = v.type_shared_function_info;
    let outer = compiled::outer_shared(&reader, &lines, &compiled, sfi, found.code)?;
    let shared = |object| read_shared(&reader, object);
    let info = compiled::read(&reader, &lines, &compiled, sfi, found.code, shared)?;
    Some((outer, found, info))
}

/// Whether the code found at `start` (its `Code` at untagged `code`) is still there in
/// process `pid`: V8 has not moved or freed it since.
pub(in crate::unwind::interp) fn still_there(pid: u32, v: &Version, code: u64, start: u64) -> bool {
    v.replaced
        .is_some_and(|layout| stream_names(&Reader { pid, v }, &layout, code, start))
}

/// Whether the `InstructionStream` whose instructions start at `start` names `code`
/// (untagged) as its `Code`.
fn stream_names(memory: &impl Objects, layout: &ReplacedLayout, code: u64, start: u64) -> bool {
    let field = start - u64::from(layout.stream_instructions) + u64::from(layout.stream_code);
    memory.word(field) == Some(code | 1)
}

/// The instruction offset of a replaced frame recorded with `low_bits` (the pc's low 16
/// bits) in code at `start` of `size` bytes, if that code holds such a pc.
pub fn offset_in(start: u64, size: u32, low_bits: u32) -> Option<u32> {
    let offset = (u64::from(low_bits).wrapping_sub(start)) & 0xFFFF;
    (offset < u64::from(size)).then_some(offset as u32)
}

/// V8 code found around a replaced frame's pc, kept in its process's registry entry.
pub(in crate::unwind::interp) struct ReplacedCode {
    /// The function it was made for (its `SharedFunctionInfo`, untagged).
    shared: u64,
    /// The `Code` (untagged).
    code: u64,
    /// Its first instruction, and the instructions' size in bytes.
    start: u64,
    size: u32,
    info: Arc<CodeInfo>,
}

/// Replaced V8 code kept per process, at most (the newest is dropped past it, counted as
/// [`Registry::over_limit`](crate::unwind::interp::registry::Registry::over_limit)).
const MAX_REPLACED_PER_PROCESS: usize = 4096;

/// Finds the V8 code around `pc`, a replaced frame's pc the kernel announced for `pid`
/// (this module's docs), unless code found before holds it; kept under its function.
pub(in crate::unwind::interp) fn remember_replaced(pid: u32, pc: u64) {
    let mut registry = registry();
    let Registry {
        processes,
        replaced_unfound,
        over_limit,
        ..
    } = &mut *registry;
    let Some(process) = processes.get_mut(&pid) else {
        return;
    };
    let Some(version) = reader_as::<Version>(&*process.runtime) else {
        return;
    };
    if let Some(at) = process
        .replaced
        .iter()
        .position(|code| code.start <= pc && pc - code.start < u64::from(code.size))
    {
        let known = &process.replaced[at];
        if still_there(pid, version, known.code, known.start) {
            return;
        }
        // V8 moved or freed that code since: what holds the pc now is read afresh.
        process.replaced.remove(at);
    }
    if process.replaced.len() >= MAX_REPLACED_PER_PROCESS {
        *over_limit += 1;
        return;
    }
    match read(pid, version, pc) {
        Some((shared, found, info)) => process.replaced.push(ReplacedCode {
            shared,
            code: found.code,
            start: found.start,
            size: found.size,
            info: Arc::new(info),
        }),
        None => *replaced_unfound += 1,
    }
}

/// The frames of replaced V8 frame `shared` recorded with pc bits `low_bits`, from the
/// newest code found for `shared` that holds such a pc; `None`: no such code.
pub(in crate::unwind::interp) fn replaced_frames(
    pid: u32,
    shared: u64,
    low_bits: u32,
) -> Option<Vec<(String, bool)>> {
    let registry = registry();
    let process = registry.processes.get(&pid)?;
    process.replaced.iter().rev().find_map(|code| {
        let offset = offset_in(code.start, code.size, low_bits);
        (code.shared == shared)
            .then_some(offset)
            .flatten()
            .map(|offset| compiled::frames(&code.info, offset))
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    const STREAM_TYPE: u16 = 252;
    const CODE_TYPE: u16 = 245;
    const MAP_TYPE_AT: u64 = 12;

    /// Words at addresses; a map is an object whose instance type is at +12.
    #[derive(Default)]
    struct Fake {
        words: HashMap<u64, u64>,
        reads: std::cell::Cell<u32>,
    }

    impl Fake {
        fn map(&mut self, map: u64, kind: u16) {
            self.words.insert(map + MAP_TYPE_AT, u64::from(kind));
        }
    }

    impl Objects for Fake {
        fn word(&self, address: u64) -> Option<u64> {
            self.words.get(&address).copied()
        }
        fn object(&self, tagged: u64) -> Option<(u64, u16)> {
            self.reads.set(self.reads.get() + 1);
            let object = tagged & !3;
            let map = self.word(object)? & !3;
            Some((object, self.word(map + MAP_TYPE_AT)? as u16))
        }
        fn string_prefix(&self, _: u64, _: u64) -> Option<String> {
            None
        }
        fn pid(&self) -> u32 {
            0
        }
    }

    impl Memory for Fake {
        fn page(&self, page: u64) -> Option<Vec<u8>> {
            let mut bytes = Vec::with_capacity(PAGE as usize);
            for at in (page..page + PAGE).step_by(8) {
                bytes.extend_from_slice(&self.words.get(&at).copied().unwrap_or(0).to_le_bytes());
            }
            Some(bytes)
        }
    }

    /// Node 20's layout (the module's docs) and `Code`'s fields as `compiled` has them.
    fn layouts() -> (CompiledLayout, ReplacedLayout) {
        let compiled = CompiledLayout {
            function_code: 48,
            dispatch_table: None,
            instruction_start: 40,
            instructions_inline: false,
            instruction_size: 56,
            flags: 48,
            source_positions: 24,
            deoptimization_data: 16,
            type_code: CODE_TYPE,
            byte_arrays: [0; 2],
            deoptimization_arrays: [0; 3],
            literal_arrays: [0; 3],
            kind_mask: 15,
            kind_shift: 0,
            kind_baseline: 0,
            deopt_shared: 0,
            deopt_literals: 0,
            deopt_inlining: 0,
            shared_wrapper: None,
        };
        let replaced = ReplacedLayout {
            type_instruction_stream: STREAM_TYPE,
            stream_instructions: 16,
            stream_code: 8,
        };
        (compiled, replaced)
    }

    const STREAM_MAP: u64 = 0x10_0000;
    const CODE_MAP: u64 = 0x10_1000;
    const OTHER_MAP: u64 = 0x10_2000;

    /// A stream at `stream` with `size` bytes of instructions, its `Code` at `code`.
    fn stream(fake: &mut Fake, stream: u64, code: u64, size: u64) {
        fake.words.insert(stream, STREAM_MAP | 1);
        fake.words.insert(stream + 8, code | 1);
        fake.words.insert(code, CODE_MAP | 1);
        fake.words.insert(code + 40, stream + 16);
        fake.words.insert(code + 56, size);
    }

    fn fake() -> Fake {
        let mut fake = Fake::default();
        fake.map(STREAM_MAP, STREAM_TYPE);
        fake.map(CODE_MAP, CODE_TYPE);
        fake.map(OTHER_MAP, 7);
        fake
    }

    /// The live node 20 case: a pc 398 bytes into code whose stream is 2 pages and more
    /// below, past tagged-looking words of other objects and other streams' code.
    #[test]
    fn finds_the_stream_below_the_pc_across_pages() {
        let mut fake = fake();
        let (compiled, replaced) = layouts();
        stream(&mut fake, 0x7f00_0000_0030, 0x5000_0000, 0x3000);
        // An older stream below it, which must not be taken.
        stream(&mut fake, 0x7eff_ffff_0030, 0x5000_1000, 0x100);
        // Instruction words that look tagged, at aligned header positions.
        fake.words.insert(0x7f00_0000_2030, OTHER_MAP | 1);
        fake.words.insert(0x7f00_0000_1010, 0xdead_beef_0001);
        let pc = 0x7f00_0000_0040 + 0x2900;
        let found = find_code(&fake, &compiled, &replaced, pc);
        assert_eq!(
            found,
            Some(Found {
                code: 0x5000_0000,
                start: 0x7f00_0000_0040,
                size: 0x3000,
            })
        );
        // Each tagged-looking word's type was read once, the stream's once, its code's once.
        assert_eq!(fake.reads.get(), 4);
    }

    /// A pc past the end of the first stream below it (in another object, or padding) is
    /// in no code; a stream whose code does not point back at it is not the pc's.
    #[test]
    fn rejects_a_pc_past_its_stream_and_a_stream_its_code_disowns() {
        let mut fake = fake();
        let (compiled, replaced) = layouts();
        stream(&mut fake, 0x7f00_0000_0030, 0x5000_0000, 0x100);
        assert_eq!(
            find_code(&fake, &compiled, &replaced, 0x7f00_0000_0040 + 0x100),
            None
        );
        assert!(find_code(&fake, &compiled, &replaced, 0x7f00_0000_0040 + 0xFF).is_some());
        fake.words.insert(0x5000_0000 + 40, 0x7f00_0000_0080);
        assert_eq!(
            find_code(&fake, &compiled, &replaced, 0x7f00_0000_0050),
            None
        );
    }

    /// Code found once is taken as still there while its stream names it; a stream that
    /// names other code (V8 freed the first and reused its memory) is not.
    #[test]
    fn code_is_there_while_its_stream_names_it() {
        let mut fake = fake();
        let (_, replaced) = layouts();
        stream(&mut fake, 0x7f00_0000_0030, 0x5000_0000, 0x100);
        assert!(stream_names(
            &fake,
            &replaced,
            0x5000_0000,
            0x7f00_0000_0040
        ));
        stream(&mut fake, 0x7f00_0000_0030, 0x5000_2000, 0x100);
        assert!(!stream_names(
            &fake,
            &replaced,
            0x5000_0000,
            0x7f00_0000_0040
        ));
    }

    /// No stream within 64 KiB below the pc: none.
    #[test]
    fn gives_up_past_the_scan_window() {
        let mut fake = fake();
        let (compiled, replaced) = layouts();
        stream(&mut fake, 0x7f00_0000_0030, 0x5000_0000, 0x20000);
        let pc = 0x7f00_0000_0040 + 0x10040;
        assert_eq!(find_code(&fake, &compiled, &replaced, pc), None);
        assert!(find_code(&fake, &compiled, &replaced, pc - 0x80).is_some());
    }

    /// Node 24's symbols state the stream's type and instructions (32) but not its `Code`:
    /// 8 on V8 13.6 (measured, see the module's docs); another 13.x says what is missing.
    #[test]
    fn node_24s_layout() {
        let value = |name: &str| match name {
            "v8dbg_type_InstructionStream__INSTRUCTION_STREAM_TYPE" => Ok(192),
            _ => Err(format!("no {name}")),
        };
        let member = |class: &str, fields: &[&str]| match (class, fields) {
            ("InstructionStream", ["instruction_start"]) => Ok(32),
            _ => Err(format!("no v8dbg_class_{class}__{}__*", fields[0])),
        };
        assert_eq!(
            layout(&value, &member, (13, 6)),
            Ok(ReplacedLayout {
                type_instruction_stream: 192,
                stream_instructions: 32,
                stream_code: 8,
            })
        );
        assert_eq!(
            layout(&value, &member, (13, 7)),
            Err("no v8dbg_class_InstructionStream__code__*".to_string())
        );
        // V8 12.4 (Node 22): the same 32-byte header, its `Code` at 8 (measured, see the
        // module's docs; stream type 210).
        let value = |name: &str| match name {
            "v8dbg_type_InstructionStream__INSTRUCTION_STREAM_TYPE" => Ok(210),
            _ => Err(format!("no {name}")),
        };
        assert_eq!(
            layout(&value, &member, (12, 4)),
            Ok(ReplacedLayout {
                type_instruction_stream: 210,
                stream_instructions: 32,
                stream_code: 8,
            })
        );
    }

    /// V8 13.6's 32-byte header, instructions at a 64-byte boundary (the live node 24's:
    /// stream at ...2d20, instructions at ...2d40): found from a pc 0x2a0 into them.
    #[test]
    fn finds_a_node_24_stream() {
        let mut fake = fake();
        let (compiled, mut replaced) = layouts();
        replaced.stream_instructions = 32;
        let stream = 0x7f2d_3e00_2d20;
        fake.words.insert(stream, STREAM_MAP | 1);
        fake.words.insert(stream + 8, 0x0548_67c8_2068 | 1);
        fake.words.insert(0x0548_67c8_2068, CODE_MAP | 1);
        fake.words.insert(0x0548_67c8_2068 + 40, stream + 32);
        fake.words.insert(0x0548_67c8_2068 + 56, 0x3c0);
        let found = find_code(&fake, &compiled, &replaced, stream + 32 + 0x2a0);
        assert_eq!(
            found,
            Some(Found {
                code: 0x0548_67c8_2068,
                start: stream + 32,
                size: 0x3c0,
            })
        );
    }

    #[test]
    fn offsets_from_low_bits() {
        // Code at ...0040 of 0x3000 bytes; a pc at ...2940 has low bits 0x2940.
        assert_eq!(offset_in(0x7f00_0000_0040, 0x3000, 0x2940), Some(0x2900));
        // Across a 64 KiB boundary: code at 0x1_FF00, pc 0x2_0010 (low bits 0x0010).
        assert_eq!(offset_in(0x1_FF00, 0x200, 0x0010), Some(0x110));
        // Low bits no pc in the code has.
        assert_eq!(offset_in(0x7f00_0000_0040, 0x100, 0x2940), None);
    }
}
