//! One binary's unwind table: the compact rows the kernel unwinder reads, built from the
//! binary's `.eh_frame` and `.debug_frame` with gimli (object reads the sections).
//!
//! Each FDE's rows become [`UnwindRow`]s (the CFA as the stack or frame pointer plus an
//! offset, where the frame pointer was saved, where the return address is, PLT entries, the
//! outermost frame); a row is kept only where the rule changes, and a [`cfa::NONE`] row marks
//! where an FDE ends and no other begins, so an address between functions is never unwound
//! with the rule of the function before it. x86_64 and arm64 binaries have tables (arm64's
//! return address is in x30 until a function saves it: [`ra`]).

use std::{borrow::Cow, fmt};

use gimli::{
    AArch64, BaseAddresses, CfaRule, CieOrFde, DebugFrame, EhFrame, EndianSlice, LittleEndian,
    Register, RegisterRule, UnwindContext, UnwindSection, Vendor, X86_64,
};
use object::{Object as _, ObjectSection as _, ObjectSegment as _};
use tracekit_common::unwind::{MAX_TABLE_ROWS, UnwindRow, cfa, ra};

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
    /// An ELF file for another architecture than x86_64 and arm64.
    OtherArchitecture,
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
            TableError::OtherArchitecture => f.write_str("not an x86_64 or arm64 binary"),
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

/// The machines with tables, and the DWARF numbers of their stack pointer, frame pointer and
/// return address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Machine {
    X86_64,
    /// The AAPCS64's: sp 31, x29, x30 (the link register holds the return address).
    Aarch64,
}

impl Machine {
    fn registers(self) -> (Register, Register, Register) {
        match self {
            Machine::X86_64 => (RSP, RBP, RA),
            Machine::Aarch64 => (AArch64::SP, AArch64::X29, AArch64::X30),
        }
    }
}

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
    let machine = match file.architecture() {
        object::Architecture::X86_64 => Machine::X86_64,
        object::Architecture::Aarch64 => Machine::Aarch64,
        _ => return Err(TableError::OtherArchitecture),
    };
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
    // arm64's DW_CFA_AARCH64_negate_ra_state (pointer authentication) shares its opcode
    // with another vendor's instruction.
    let vendor = match machine {
        Machine::X86_64 => Vendor::Default,
        Machine::Aarch64 => Vendor::AArch64,
    };
    if let Some((mut data, bases)) = sections.eh_frame() {
        data.set_vendor(vendor);
        collect(&data, &bases, 0, machine, &mut functions, &mut table)?;
    }
    if let Some((mut data, bases)) = sections.debug_frame() {
        data.set_vendor(vendor);
        collect(&data, &bases, 1, machine, &mut functions, &mut table)?;
    }
    if machine == Machine::Aarch64
        && let Some(plt) = file.section_by_name(".plt")
        && plt.size() > ARM64_PLT0_BYTES
    {
        functions.push(arm64_plt(plt.address(), plt.address() + plt.size()));
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
    machine: Machine,
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
            let rule = compact_rule(section, row, machine, table);
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
    machine: Machine,
    table: &mut BinaryTable,
) -> Rule {
    let (sp, fp, return_address) = machine.registers();
    if let Some(RegisterRule::Undefined) = row.register(return_address) {
        return Rule {
            cfa_rule: cfa::END,
            ..Rule::NONE
        };
    }
    let (cfa_rule, cfa_offset) = match row.cfa() {
        CfaRule::RegisterAndOffset { register, offset } => match u16::try_from(*offset) {
            Ok(offset) if *register == sp => (cfa::RSP, offset),
            Ok(offset) if *register == fp => (cfa::RBP, offset),
            _ => (cfa::UNSUPPORTED, 0),
        },
        CfaRule::Expression(expression) => {
            let threshold = expression
                .get(section)
                .ok()
                .and_then(|expression| plt_threshold(expression.0.slice()));
            match (machine, threshold) {
                (Machine::X86_64, Some(threshold)) => (cfa::PLT, threshold),
                _ => (cfa::UNSUPPORTED, 0),
            }
        }
    };
    // Where the frame pointer was saved; `None`: in a way the compact form cannot express.
    let saved_fp = match row.register(fp) {
        None | Some(RegisterRule::SameValue | RegisterRule::Undefined) => Some(0),
        Some(RegisterRule::Offset(offset)) if offset != 0 && offset % 8 == 0 => {
            i8::try_from(offset / 8).ok()
        }
        Some(_) => None,
    };
    // Where the return address is: x86_64's at CFA - 8 always; arm64's where x30 is.
    let ra_at = match (machine, row.register(return_address)) {
        (_, Some(RegisterRule::Offset(-8))) => Some(ra::CFA_MINUS_8),
        (Machine::Aarch64, None | Some(RegisterRule::SameValue)) => Some(ra::LINK_REGISTER),
        (Machine::Aarch64, Some(RegisterRule::Offset(offset))) => match saved_fp {
            Some(words) if words != 0 && offset == i64::from(words) * 8 + 8 => {
                Some(ra::FRAME_RECORD)
            }
            _ if offset % 8 == 0
                && (-(i64::from(ra::MAX_WORDS_BELOW) * 8)..-8).contains(&offset) =>
            {
                Some((-offset / 8 - 1) as u8)
            }
            _ => None,
        },
        _ => None,
    };
    let Some(ra_at) = ra_at.filter(|_| cfa_rule != cfa::UNSUPPORTED) else {
        table.unsupported_rows += 1;
        return Rule::UNSUPPORTED;
    };
    let rbp_offset_words = saved_fp.unwrap_or_else(|| {
        table.unsupported_rbp_rows += 1;
        0
    });
    Rule {
        cfa_rule: cfa_rule | ra_at << ra::SHIFT,
        cfa_offset,
        rbp_offset_words,
    }
}

/// arm64's first PLT entry (PLT0, the lazy binder's: `stp x16, x30, [sp, #-16]!` and 28
/// more bytes, `bti c` first where the binary has branch protection).
const ARM64_PLT0_BYTES: u64 = 32;

/// arm64's `.plt` from `start` to `end`, which no FDE describes: past PLT0 (stepped by frame
/// pointer, its stack changes), each entry loads the target from the GOT and branches with
/// `x16`/`x17` only (`adrp; ldr; add; br`, maybe after `bti c`), so a pc there is in its
/// caller's call with the caller's stack pointer and the return address still in x30.
/// Before, a sample in a stub (libjvm's `clock_gettime@plt`) was stepped by frame pointer,
/// which skips the caller (`os::javaTimeNanos()`).
fn arm64_plt(start: u64, end: u64) -> Function {
    Function {
        start,
        end,
        source: 0,
        rows: vec![
            (start, Rule::UNSUPPORTED),
            (
                start + ARM64_PLT0_BYTES,
                Rule {
                    cfa_rule: cfa::RSP | ra::LINK_REGISTER << ra::SHIFT,
                    cfa_offset: 0,
                    rbp_offset_words: 0,
                },
            ),
        ],
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
mod tests;
