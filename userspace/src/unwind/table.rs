//! One binary's unwind table: the compact rows the kernel unwinder reads, built from the
//! binary's `.eh_frame` and `.debug_frame` with gimli (object reads the sections).
//!
//! Each FDE's rows become [`UnwindRow`]s (the CFA as RSP or RBP plus an offset, where RBP
//! was saved, PLT entries, the outermost frame); a row is kept only where the rule changes,
//! and a [`cfa::NONE`] row marks where an FDE ends and no other begins, so an address between
//! functions is never unwound with the rule of the function before it.

use std::{borrow::Cow, fmt};

use gimli::{
    BaseAddresses, CfaRule, CieOrFde, DebugFrame, EhFrame, EndianSlice, LittleEndian, Register,
    RegisterRule, UnwindContext, UnwindSection, X86_64,
};
use object::{Object as _, ObjectSection as _, ObjectSegment as _};
use tracekit_common::unwind::{MAX_TABLE_ROWS, UnwindRow, cfa};

/// A `PT_LOAD` segment: where file offsets land in the binary's virtual addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// `p_offset`.
    pub file_offset: u64,
    /// `p_vaddr`.
    pub vaddr: u64,
    /// `p_filesz`.
    pub file_size: u64,
}

/// The unwind table of one binary, and what building it found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BinaryTable {
    /// Sorted by `pc`, one row per change of rule.
    pub rows: Vec<UnwindRow>,
    /// The binary's loadable segments (to turn a mapping's file offset into a load bias).
    pub segments: Vec<Segment>,
    /// Functions (FDEs) described.
    pub functions: usize,
    /// Rows the compact form cannot express (the kernel steps them by frame pointer).
    pub unsupported_rows: usize,
    /// Rows where RBP was saved in a way the compact form cannot express (treated as kept).
    pub unsupported_rbp_rows: usize,
    /// Whether `.debug_frame` contributed functions `.eh_frame` does not describe.
    pub used_debug_frame: bool,
}

/// Why a binary has no table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TableError {
    /// Not an ELF file object can read.
    NotElf(String),
    /// An ELF file for another architecture than x86_64.
    NotX86_64,
    /// Neither `.eh_frame` nor `.debug_frame`.
    NoUnwindInfo,
    /// Code above 4 GiB of virtual address: rows hold 32-bit addresses.
    AddressesTooHigh,
    /// More rows than the kernel searches ([`MAX_TABLE_ROWS`]).
    TooManyRows(usize),
    /// The unwind information did not parse.
    Dwarf(String),
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableError::NotElf(err) => write!(f, "not a readable ELF file ({err})"),
            TableError::NotX86_64 => f.write_str("not an x86_64 binary"),
            TableError::NoUnwindInfo => f.write_str("no .eh_frame or .debug_frame"),
            TableError::AddressesTooHigh => f.write_str("code above 4 GiB of virtual address"),
            TableError::TooManyRows(rows) => {
                write!(f, "{rows} unwind rows, more than {MAX_TABLE_ROWS}")
            }
            TableError::Dwarf(err) => write!(f, "unwind information does not parse ({err})"),
        }
    }
}

/// Register numbers of the x86_64 psABI's DWARF mapping.
const RSP: Register = X86_64::RSP;
const RBP: Register = X86_64::RBP;
const RA: Register = X86_64::RA;

/// GCC's CFA expression for `.plt` entries: `rsp + 8 + ((rip & 15) >= N) << 3`, where N is 11
/// for the classic 16-byte entries and 10 for those with an `endbr64` (IBT).
const PLT_EXPRESSION: [u8; 11] = [
    0x77, 0x08, // DW_OP_breg7 (rsp) 8
    0x80, 0x00, // DW_OP_breg16 (rip) 0
    0x3f, // DW_OP_lit15
    0x1a, // DW_OP_and
    0x00, // DW_OP_lit11 or DW_OP_lit10 (checked apart)
    0x2a, // DW_OP_ge
    0x33, // DW_OP_lit3
    0x24, // DW_OP_shl
    0x22, // DW_OP_plus
];

/// The threshold of a PLT CFA expression, if `expression` is one.
fn plt_threshold(expression: &[u8]) -> Option<u16> {
    if expression.len() != PLT_EXPRESSION.len() {
        return None;
    }
    let same = expression
        .iter()
        .zip(PLT_EXPRESSION)
        .enumerate()
        .all(|(i, (&byte, expected))| i == 6 || byte == expected);
    // DW_OP_lit0 is 0x30.
    match expression[6] {
        literal @ 0x30..=0x3f if same => Some(u16::from(literal - 0x30)),
        _ => None,
    }
}

/// An FDE's address range and rows, before merging.
struct Function {
    start: u64,
    end: u64,
    /// 0 for `.eh_frame`, 1 for `.debug_frame`: `.eh_frame` wins where both describe code.
    source: u8,
    rows: Vec<(u64, Rule)>,
}

/// A row's rule, without its address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rule {
    cfa_rule: u8,
    cfa_offset: u16,
    rbp_offset_words: i8,
}

impl Rule {
    const NONE: Rule = Rule {
        cfa_rule: cfa::NONE,
        cfa_offset: 0,
        rbp_offset_words: 0,
    };
    const UNSUPPORTED: Rule = Rule {
        cfa_rule: cfa::UNSUPPORTED,
        cfa_offset: 0,
        rbp_offset_words: 0,
    };
}

/// Builds the table of the ELF file `data`.
pub fn build(data: &[u8]) -> Result<BinaryTable, TableError> {
    build_from(&parse(data)?)
}

/// Parses `data` as an ELF file.
pub fn parse(data: &[u8]) -> Result<object::File<'_>, TableError> {
    object::File::parse(data).map_err(|err| TableError::NotElf(err.to_string()))
}

/// Builds the table of a parsed ELF file.
pub fn build_from(file: &object::File<'_>) -> Result<BinaryTable, TableError> {
    if file.format() != object::BinaryFormat::Elf {
        return Err(TableError::NotElf("not ELF".into()));
    }
    if file.architecture() != object::Architecture::X86_64 {
        return Err(TableError::NotX86_64);
    }
    let segments = file
        .segments()
        .map(|segment| {
            let (file_offset, file_size) = segment.file_range();
            Segment {
                file_offset,
                vaddr: segment.address(),
                file_size,
            }
        })
        .collect();

    let mut table = BinaryTable {
        segments,
        ..BinaryTable::default()
    };
    let sections = UnwindSections::of(file);
    if sections.eh_frame.is_none() && sections.debug_frame.is_none() {
        return Err(TableError::NoUnwindInfo);
    }
    let mut functions = Vec::new();
    if let Some((data, bases)) = sections.eh_frame() {
        collect(&data, &bases, 0, &mut functions, &mut table)?;
    }
    if let Some((data, bases)) = sections.debug_frame() {
        collect(&data, &bases, 1, &mut functions, &mut table)?;
    }
    table.rows = merge(functions, &mut table)?;
    if table.rows.len() > MAX_TABLE_ROWS as usize {
        return Err(TableError::TooManyRows(table.rows.len()));
    }
    Ok(table)
}

/// The functions the `.eh_frame` and `.debug_frame` of ELF file `file` describe, as sorted
/// `[start, end)` ranges of ELF virtual addresses (one per FDE; where FDEs overlap, the later
/// start wins). For naming the frames of a stripped binary by the function they fall in,
/// so that the samples of one function aggregate. Empty without unwind information.
pub fn function_bounds(file: &object::File<'_>) -> Vec<(u64, u64)> {
    let mut bounds = Vec::new();
    let sections = UnwindSections::of(file);
    if let Some((data, bases)) = sections.eh_frame() {
        fde_bounds(&data, &bases, &mut bounds);
    }
    if let Some((data, bases)) = sections.debug_frame() {
        fde_bounds(&data, &bases, &mut bounds);
    }
    bounds.sort_unstable();
    bounds.dedup_by_key(|(start, _)| *start);
    bounds
}

/// A file's unwind sections (non-empty, decompressed) with their addresses, and the base
/// addresses their pointer encodings are relative to.
struct UnwindSections<'a> {
    eh_frame: Option<(Cow<'a, [u8]>, u64)>,
    debug_frame: Option<(Cow<'a, [u8]>, u64)>,
    bases: BaseAddresses,
}

impl<'a> UnwindSections<'a> {
    fn of(file: &'a object::File<'a>) -> Self {
        let data = |name: &str| {
            let section = file.section_by_name(name)?;
            let data = section.uncompressed_data().ok()?;
            (!data.is_empty()).then(|| (data, section.address()))
        };
        let mut bases = BaseAddresses::default();
        if let Some(text) = file.section_by_name(".text") {
            bases = bases.set_text(text.address());
        }
        if let Some(got) = file.section_by_name(".got") {
            bases = bases.set_got(got.address());
        }
        Self {
            eh_frame: data(".eh_frame"),
            debug_frame: data(".debug_frame"),
            bases,
        }
    }

    /// `.eh_frame`, to parse, with its bases.
    fn eh_frame(&self) -> Option<(EhFrame<EndianSlice<'_, LittleEndian>>, BaseAddresses)> {
        let (data, address) = self.eh_frame.as_ref()?;
        let bases = self.bases.clone().set_eh_frame(*address);
        Some((EhFrame::new(data, LittleEndian), bases))
    }

    /// `.debug_frame`, to parse, with its bases.
    fn debug_frame(&self) -> Option<(DebugFrame<EndianSlice<'_, LittleEndian>>, BaseAddresses)> {
        let (data, _) = self.debug_frame.as_ref()?;
        let mut section = DebugFrame::new(data, LittleEndian);
        section.set_address_size(8);
        Some((section, self.bases.clone()))
    }
}

/// Appends the `[start, end)` of every FDE of `section` that parses to `bounds`.
fn fde_bounds<'a, S: UnwindSection<EndianSlice<'a, LittleEndian>>>(
    section: &S,
    bases: &BaseAddresses,
    bounds: &mut Vec<(u64, u64)>,
) {
    let mut entries = section.entries(bases);
    while let Ok(Some(entry)) = entries.next() {
        if let CieOrFde::Fde(partial) = entry
            && let Ok(fde) = partial.parse(S::cie_from_offset)
            && fde.len() > 0
        {
            bounds.push((fde.initial_address(), fde.end_address()));
        }
    }
}

/// The start of the function of `bounds` (from [`function_bounds`]) holding `address`.
pub fn function_start(bounds: &[(u64, u64)], address: u64) -> Option<u64> {
    let index = bounds.partition_point(|&(start, _)| start <= address);
    let (start, end) = *bounds.get(index.checked_sub(1)?)?;
    (address < end).then_some(start)
}

/// Reads every FDE of `section` into `functions`.
fn collect<'a, S: UnwindSection<EndianSlice<'a, LittleEndian>>>(
    section: &S,
    bases: &BaseAddresses,
    source: u8,
    functions: &mut Vec<Function>,
    table: &mut BinaryTable,
) -> Result<(), TableError> {
    let dwarf = |err: gimli::Error| TableError::Dwarf(err.to_string());
    let mut context = Box::new(UnwindContext::new());
    let mut entries = section.entries(bases);
    while let Some(entry) = entries.next().map_err(dwarf)? {
        let CieOrFde::Fde(partial) = entry else {
            continue;
        };
        // A broken FDE costs its function, not the binary.
        let Ok(fde) = partial.parse(S::cie_from_offset) else {
            continue;
        };
        if fde.len() == 0 {
            continue;
        }
        let mut function = Function {
            start: fde.initial_address(),
            end: fde.end_address(),
            source,
            rows: Vec::new(),
        };
        let Ok(mut rows) = fde.rows(section, bases, &mut context) else {
            continue;
        };
        while let Ok(Some(row)) = rows.next_row() {
            let rule = compact_rule(section, row, table);
            function.rows.push((row.start_address(), rule));
        }
        functions.push(function);
    }
    Ok(())
}

/// The compact form of one row of an FDE's table.
fn compact_rule<'a, S: UnwindSection<EndianSlice<'a, LittleEndian>>>(
    section: &S,
    row: &gimli::UnwindTableRow<usize>,
    table: &mut BinaryTable,
) -> Rule {
    match row.register(RA) {
        Some(RegisterRule::Undefined) => {
            return Rule {
                cfa_rule: cfa::END,
                ..Rule::NONE
            };
        }
        Some(RegisterRule::Offset(-8)) => {}
        _ => {
            table.unsupported_rows += 1;
            return Rule::UNSUPPORTED;
        }
    }
    let (cfa_rule, cfa_offset) = match row.cfa() {
        CfaRule::RegisterAndOffset { register, offset } => {
            match (*register, u16::try_from(*offset)) {
                (RSP, Ok(offset)) => (cfa::RSP, offset),
                (RBP, Ok(offset)) => (cfa::RBP, offset),
                _ => (cfa::UNSUPPORTED, 0),
            }
        }
        CfaRule::Expression(expression) => {
            let threshold = expression
                .get(section)
                .ok()
                .and_then(|expression| plt_threshold(expression.0.slice()));
            match threshold {
                Some(threshold) => (cfa::PLT, threshold),
                None => (cfa::UNSUPPORTED, 0),
            }
        }
    };
    if cfa_rule == cfa::UNSUPPORTED {
        table.unsupported_rows += 1;
        return Rule::UNSUPPORTED;
    }
    let rbp_offset_words = match row.register(RBP) {
        None | Some(RegisterRule::SameValue | RegisterRule::Undefined) => 0,
        Some(RegisterRule::Offset(offset))
            if offset != 0 && offset % 8 == 0 && i8::try_from(offset / 8).is_ok() =>
        {
            (offset / 8) as i8
        }
        Some(_) => {
            table.unsupported_rbp_rows += 1;
            0
        }
    };
    Rule {
        cfa_rule,
        cfa_offset,
        rbp_offset_words,
    }
}

/// Gaps between functions shorter than this are alignment padding.
const PADDING_BYTES: u64 = 16;

/// Sorts the functions, drops `.debug_frame` ones that overlap `.eh_frame` ones, and lays
/// their rows end to end with [`cfa::NONE`] rows in the gaps, one row per change of rule.
fn merge(
    mut functions: Vec<Function>,
    table: &mut BinaryTable,
) -> Result<Vec<UnwindRow>, TableError> {
    functions.sort_by_key(|f| (f.start, f.source));
    let mut rows: Vec<(u64, Rule)> = Vec::new();
    let mut covered_until = 0u64;
    let push = |rows: &mut Vec<(u64, Rule)>, pc: u64, rule: Rule| {
        // A later row at the same address replaces the earlier one (an FDE starting where
        // the previous one ended replaces its end marker).
        if rows.last().is_some_and(|&(last, _)| last == pc) {
            rows.pop();
        }
        if rows.last().is_some_and(|&(_, last)| last == rule) {
            return;
        }
        rows.push((pc, rule));
    };
    for function in &functions {
        if function.start < covered_until {
            // Overlaps a function already laid out (the same code in both sections, or a
            // broken FDE): the first one stands.
            continue;
        }
        // Alignment padding between functions is never executed: no end marker for it.
        if function.start > covered_until
            && function.start - covered_until < PADDING_BYTES
            && rows
                .last()
                .is_some_and(|&(pc, rule)| pc == covered_until && rule == Rule::NONE)
        {
            rows.pop();
        }
        if function.source == 1 {
            table.used_debug_frame = true;
        }
        table.functions += 1;
        for &(pc, rule) in &function.rows {
            if pc >= function.start && pc < function.end {
                push(&mut rows, pc, rule);
            }
        }
        push(&mut rows, function.end, Rule::NONE);
        covered_until = function.end;
    }
    rows.into_iter()
        .map(|(pc, rule)| {
            Ok(UnwindRow {
                pc: u32::try_from(pc).map_err(|_| TableError::AddressesTooHigh)?,
                cfa_offset: rule.cfa_offset,
                cfa_rule: rule.cfa_rule,
                rbp_offset_words: rule.rbp_offset_words,
            })
        })
        .collect()
}

/// The load bias of a mapping at `begin` from file offset `offset` of a binary with these
/// segments: runtime address minus ELF virtual address. `None` if no segment holds the
/// offset. Where two segments share the mapping's first page (lld packs them: a read-only
/// segment ending at file offset 0x180b8, the text starting at 0x180c0 but at a virtual
/// address 0x1000 further), the mapping is the later one's: the earlier one is mapped from
/// its own, lower, offset.
pub fn load_bias(segments: &[Segment], begin: u64, offset: u64) -> Option<u64> {
    const PAGE: u64 = 4096;
    segments
        .iter()
        .filter(|s| s.file_offset & !(PAGE - 1) <= offset && offset < s.file_offset + s.file_size)
        .max_by_key(|s| s.file_offset)
        .map(|s| {
            begin
                .wrapping_sub(offset)
                .wrapping_add(s.file_offset)
                .wrapping_sub(s.vaddr)
        })
}

impl BinaryTable {
    /// The load bias of a mapping of this binary at `begin` from file offset `offset` (see
    /// [`load_bias`]).
    pub fn bias(&self, begin: u64, offset: u64) -> Option<u64> {
        load_bias(&self.segments, begin, offset)
    }

    /// The row covering ELF virtual address `pc` (what the kernel's search finds).
    pub fn row_for(&self, pc: u64) -> Option<&UnwindRow> {
        let index = self.rows.partition_point(|row| u64::from(row.pc) <= pc);
        index.checked_sub(1).map(|i| &self.rows[i])
    }
}

#[cfg(test)]
mod tests {
    use gimli::write::{
        Address, CallFrameInstruction as I, CommonInformationEntry, EndianVec, Expression,
        FrameDescriptionEntry, FrameTable,
    };

    use super::*;

    fn row(pc: u32, cfa_rule: u8, cfa_offset: u16, rbp_offset_words: i8) -> UnwindRow {
        UnwindRow {
            pc,
            cfa_offset,
            cfa_rule,
            rbp_offset_words,
        }
    }

    /// FDEs like a compiler's: a function with a frame pointer, a leaf without a frame, a
    /// gap, a PLT, an outermost function, one with an unsupported CFA register.
    fn eh_frame_fdes() -> Vec<FrameDescriptionEntry> {
        let mut with_frame = FrameDescriptionEntry::new(Address::Constant(0x1000), 0x20);
        with_frame.add_instruction(1, I::CfaOffset(16));
        with_frame.add_instruction(1, I::Offset(RBP, -16));
        with_frame.add_instruction(4, I::CfaRegister(RBP));
        with_frame.add_instruction(0x1e, I::Cfa(RSP, 8));
        with_frame.add_instruction(0x1e, I::SameValue(RBP));
        let leaf = FrameDescriptionEntry::new(Address::Constant(0x1020), 0x10);
        let mut plt = FrameDescriptionEntry::new(Address::Constant(0x1040), 0x30);
        let mut expression = PLT_EXPRESSION.to_vec();
        expression[6] = 0x3b; // DW_OP_lit11
        plt.add_instruction(0, I::CfaExpression(Expression::raw(expression)));
        let mut outermost = FrameDescriptionEntry::new(Address::Constant(0x1070), 0x10);
        outermost.add_instruction(0, I::Undefined(RA));
        let mut other_register = FrameDescriptionEntry::new(Address::Constant(0x1080), 0x10);
        other_register.add_instruction(0, I::CfaRegister(Register(10)));
        vec![with_frame, leaf, plt, outermost, other_register]
    }

    fn frame_table(fdes: Vec<FrameDescriptionEntry>) -> FrameTable {
        let encoding = gimli::Encoding {
            format: gimli::Format::Dwarf32,
            version: 1,
            address_size: 8,
        };
        let mut cie = CommonInformationEntry::new(encoding, 1, -8, RA);
        cie.add_instruction(I::Cfa(RSP, 8));
        cie.add_instruction(I::Offset(RA, -8));
        let mut table = FrameTable::default();
        let cie = table.add_cie(cie);
        for fde in fdes {
            table.add_fde(cie, fde);
        }
        table
    }

    /// An x86_64 ELF object with these unwind sections.
    fn elf(eh_frame: Option<FrameTable>, debug_frame: Option<FrameTable>) -> Vec<u8> {
        use object::{
            Architecture, BinaryFormat, Endianness,
            write::{Object, SectionKind},
        };
        let mut object = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
        let text = object.add_section(Vec::new(), b".text".to_vec(), SectionKind::Text);
        object.append_section_data(text, &[0xcc; 0x100], 16);
        if let Some(table) = eh_frame {
            let mut section = gimli::write::EhFrame(EndianVec::new(LittleEndian));
            table.write_eh_frame(&mut section).unwrap();
            let id =
                object.add_section(Vec::new(), b".eh_frame".to_vec(), SectionKind::ReadOnlyData);
            object.append_section_data(id, section.0.slice(), 8);
        }
        if let Some(table) = debug_frame {
            let mut section = gimli::write::DebugFrame(EndianVec::new(LittleEndian));
            table.write_debug_frame(&mut section).unwrap();
            let id = object.add_section(Vec::new(), b".debug_frame".to_vec(), SectionKind::Debug);
            object.append_section_data(id, section.0.slice(), 8);
        }
        object.write().unwrap()
    }

    /// Function bounds come from the FDEs of both sections, sorted; an address names the
    /// start of the function holding it, and nothing in a gap or past the last one.
    #[test]
    fn function_bounds_and_starts() {
        let mut debug_only = FrameDescriptionEntry::new(Address::Constant(0x1090), 0x8);
        debug_only.add_instruction(0, I::Cfa(RSP, 8));
        let data = elf(
            Some(frame_table(eh_frame_fdes())),
            Some(frame_table(vec![debug_only])),
        );
        let bounds = function_bounds(&parse(&data).unwrap());
        assert_eq!(
            bounds,
            [
                (0x1000, 0x1020),
                (0x1020, 0x1030),
                (0x1040, 0x1070),
                (0x1070, 0x1080),
                (0x1080, 0x1090),
                (0x1090, 0x1098),
            ]
        );
        let start = |address| function_start(&bounds, address);
        assert_eq!(start(0xfff), None);
        assert_eq!(start(0x1000), Some(0x1000));
        assert_eq!(start(0x101f), Some(0x1000));
        assert_eq!(start(0x1020), Some(0x1020));
        assert_eq!(start(0x1035), None);
        assert_eq!(start(0x106f), Some(0x1040));
        assert_eq!(start(0x1097), Some(0x1090));
        assert_eq!(start(0x1098), None);
    }

    #[test]
    fn rows_of_eh_frame_exactly() {
        let table = build(&elf(Some(frame_table(eh_frame_fdes())), None)).unwrap();
        assert_eq!(
            table.rows,
            [
                row(0x1000, cfa::RSP, 8, 0),
                row(0x1001, cfa::RSP, 16, -2),
                row(0x1004, cfa::RBP, 16, -2),
                // The epilogue's rule goes on through the frameless leaf that follows.
                row(0x101e, cfa::RSP, 8, 0),
                // Nothing describes 0x1030..0x1040.
                row(0x1030, cfa::NONE, 0, 0),
                row(0x1040, cfa::PLT, 11, 0),
                row(0x1070, cfa::END, 0, 0),
                row(0x1080, cfa::UNSUPPORTED, 0, 0),
                row(0x1090, cfa::NONE, 0, 0),
            ]
        );
        assert_eq!(table.functions, 5);
        assert_eq!(table.unsupported_rows, 1);
        assert!(!table.used_debug_frame);
        assert_eq!(table.row_for(0x1010), Some(&row(0x1004, cfa::RBP, 16, -2)));
        assert_eq!(table.row_for(0x1035).unwrap().cfa_rule, cfa::NONE);
        assert_eq!(table.row_for(0xfff), None);
    }

    #[test]
    fn debug_frame_fills_gaps_but_never_overrides_eh_frame() {
        let mut gap = FrameDescriptionEntry::new(Address::Constant(0x1030), 0x10);
        gap.add_instruction(2, I::CfaOffset(24));
        let mut overlapping = FrameDescriptionEntry::new(Address::Constant(0x1000), 0x20);
        overlapping.add_instruction(0, I::CfaOffset(64));
        let table = build(&elf(
            Some(frame_table(eh_frame_fdes())),
            Some(frame_table(vec![overlapping, gap])),
        ))
        .unwrap();
        assert_eq!(
            table.rows,
            [
                row(0x1000, cfa::RSP, 8, 0),
                row(0x1001, cfa::RSP, 16, -2),
                row(0x1004, cfa::RBP, 16, -2),
                row(0x101e, cfa::RSP, 8, 0),
                row(0x1032, cfa::RSP, 24, 0),
                row(0x1040, cfa::PLT, 11, 0),
                row(0x1070, cfa::END, 0, 0),
                row(0x1080, cfa::UNSUPPORTED, 0, 0),
                row(0x1090, cfa::NONE, 0, 0),
            ]
        );
        assert_eq!(table.functions, 6);
        assert!(table.used_debug_frame);
    }

    #[test]
    fn binaries_without_unwind_information_say_why() {
        assert_eq!(build(&elf(None, None)), Err(TableError::NoUnwindInfo));
        assert!(matches!(
            build(b"not an ELF file"),
            Err(TableError::NotElf(_))
        ));
    }

    #[test]
    fn plt_expressions_with_and_without_ibt() {
        let mut classic = PLT_EXPRESSION.to_vec();
        classic[6] = 0x3b;
        assert_eq!(plt_threshold(&classic), Some(11));
        classic[6] = 0x3a;
        assert_eq!(plt_threshold(&classic), Some(10));
        classic[1] = 0x10;
        assert_eq!(plt_threshold(&classic), None);
    }

    #[test]
    fn load_bias_from_the_segment_holding_the_offset() {
        let table = BinaryTable {
            segments: vec![
                Segment {
                    file_offset: 0,
                    vaddr: 0,
                    file_size: 0x2000,
                },
                Segment {
                    file_offset: 0x2000,
                    vaddr: 0x3000,
                    file_size: 0x5000,
                },
            ],
            ..BinaryTable::default()
        };
        // A PIE's text mapped at 0x5555_5555_6000 from file offset 0x2000.
        assert_eq!(table.bias(0x5555_5555_6000, 0x2000), Some(0x5555_5555_3000));
        assert_eq!(table.bias(0x7f00_0000_0000, 0), Some(0x7f00_0000_0000));
        assert_eq!(table.bias(0x1000, 0x9000), None);

        // rustc's lld: the text starts in the last page of the read-only segment, 0x1000
        // further in memory than in the file (the mappings of tk_rust_nofp: r-- from 0,
        // r-x at base + 0x19000 from 0x18000).
        let lld = BinaryTable {
            segments: vec![
                Segment {
                    file_offset: 0,
                    vaddr: 0,
                    file_size: 0x180b8,
                },
                Segment {
                    file_offset: 0x180c0,
                    vaddr: 0x190c0,
                    file_size: 0x441a0,
                },
            ],
            ..BinaryTable::default()
        };
        let base = 0x561b_9414_0000;
        assert_eq!(lld.bias(base + 0x19000, 0x18000), Some(base));
        assert_eq!(lld.bias(base, 0), Some(base));
    }

    /// The expected rule of a `readelf --debug-dump=frames-interp` row: (CFA rule, CFA
    /// offset or None when either PLT or unsupported will do, RBP words or None).
    fn readelf_rule(columns: &[&str], row: &[&str]) -> (u8, Option<u16>, Option<i8>) {
        let column = |name: &str| {
            columns
                .iter()
                .position(|c| *c == name)
                .and_then(|i| row.get(i).copied())
        };
        if column("ra") != Some("c-8") {
            let rule = if column("ra") == Some("u") {
                cfa::END
            } else {
                cfa::UNSUPPORTED
            };
            return (rule, Some(0), Some(0));
        }
        let rbp = match column("rbp") {
            None | Some("u") => Some(0),
            Some(saved) => saved
                .strip_prefix("c-")
                .and_then(|n| n.parse::<i8>().ok())
                .map(|n| -n / 8),
        };
        let cfa_text = column("CFA").unwrap();
        let (rule, offset) = if let Some(n) = cfa_text.strip_prefix("rsp+") {
            (cfa::RSP, n.parse().ok())
        } else if let Some(n) = cfa_text.strip_prefix("rbp+") {
            (cfa::RBP, n.parse().ok())
        } else if cfa_text == "exp" {
            (cfa::PLT, None)
        } else {
            return (cfa::UNSUPPORTED, Some(0), Some(0));
        };
        (rule, offset, rbp)
    }

    /// Every row readelf prints for a real Debian binary is the row the kernel would find.
    #[test]
    fn matches_readelf_on_debian_binaries() {
        let readelf = std::process::Command::new("readelf")
            .arg("--version")
            .output();
        if readelf.is_err() {
            eprintln!("skipped: no readelf (binutils)");
            return;
        }
        for path in [
            "/lib/x86_64-linux-gnu/liblzma.so.5",
            "/lib/x86_64-linux-gnu/libc.so.6",
            "/usr/bin/gzip",
            "/usr/bin/xz",
        ] {
            let Ok(data) = std::fs::read(path) else {
                eprintln!("skipped {path}: not installed");
                continue;
            };
            let table = build(&data).unwrap_or_else(|err| panic!("{path}: {err}"));
            let output = std::process::Command::new("readelf")
                .args(["--debug-dump=frames-interp", path])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&output.stdout);
            let (mut fdes, mut checked) = (0, 0);
            let mut columns: Vec<&str> = Vec::new();
            let mut in_fde = false;
            // An FDE whose table readelf leaves out keeps its CIE's rule.
            let mut cie_rules = std::collections::HashMap::new();
            let mut current_cie: Option<String> = None;
            let mut without_rows: Option<(u64, String)> = None;
            let check_without_rows = |pending: Option<(u64, String)>,
                                      cie_rules: &std::collections::HashMap<
                String,
                (u8, Option<u16>, Option<i8>),
            >| {
                if let Some((start, cie)) = pending {
                    let row = table.row_for(start).unwrap();
                    let (rule, offset, _) = cie_rules[&cie];
                    assert_eq!(row.cfa_rule, rule, "{path} {start:#x}");
                    assert_eq!(Some(row.cfa_offset), offset, "{path} {start:#x}");
                }
            };
            for line in text.lines() {
                // "r10 (r10)": a register saved in another one is one column.
                let words: Vec<&str> = line
                    .split_whitespace()
                    .filter(|w| !w.starts_with('('))
                    .collect();
                if words.get(3) == Some(&"FDE") {
                    check_without_rows(without_rows.take(), &cie_rules);
                    current_cie = None;
                    let cie = words[4].strip_prefix("cie=").unwrap().to_string();
                    let range = words[5].strip_prefix("pc=").unwrap();
                    let (start, end) = range.split_once("..").unwrap();
                    let start = u64::from_str_radix(start, 16).unwrap();
                    let end = u64::from_str_radix(end, 16).unwrap();
                    in_fde = start < end;
                    if in_fde {
                        fdes += 1;
                        without_rows = Some((start, cie));
                    }
                    columns.clear();
                } else if words.get(3) == Some(&"CIE") {
                    check_without_rows(without_rows.take(), &cie_rules);
                    current_cie = Some(words[0].to_string());
                    in_fde = false;
                } else if let Some(cie) = current_cie.as_ref()
                    && words.first() != Some(&"LOC")
                    && words.len() >= 2
                    && words[0].len() == 16
                {
                    cie_rules.insert(cie.clone(), readelf_rule(&columns, &words));
                } else if words.first() == Some(&"LOC") {
                    columns = words.clone();
                    without_rows = None;
                } else if in_fde && words.len() >= 2 && words[0].len() == 16 && !columns.is_empty()
                {
                    let pc = u64::from_str_radix(words[0], 16).unwrap();
                    let (rule, offset, rbp) = readelf_rule(&columns, &words);
                    let row = table
                        .row_for(pc)
                        .unwrap_or_else(|| panic!("{path}: no row at {pc:#x}: {line}"));
                    let context = format!("{path} at {pc:#x}: {line} vs {row:?}");
                    if rule == cfa::PLT {
                        assert!(
                            matches!(row.cfa_rule, cfa::PLT | cfa::UNSUPPORTED),
                            "{context}"
                        );
                    } else {
                        assert_eq!(row.cfa_rule, rule, "{context}");
                    }
                    if let Some(offset) = offset
                        && rule != cfa::UNSUPPORTED
                    {
                        assert_eq!(row.cfa_offset, offset, "{context}");
                    }
                    if let Some(rbp) = rbp
                        && matches!(rule, cfa::RSP | cfa::RBP)
                    {
                        assert_eq!(row.rbp_offset_words, rbp, "{context}");
                    }
                    checked += 1;
                }
            }
            check_without_rows(without_rows, &cie_rules);
            assert_eq!(table.functions, fdes, "{path}: FDEs");
            assert!(checked > 100, "{path}: only {checked} rows checked");
            eprintln!(
                "{path}: {fdes} FDEs, {checked} readelf rows match; {} compact rows",
                table.rows.len()
            );
        }
    }
}
