//! Unit tests of the table builder: rows from hand-written `.eh_frame`/`.debug_frame`
//! sections, and the rows of real Debian binaries against `readelf --debug-dump=frames`.

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
        let id = object.add_section(Vec::new(), b".eh_frame".to_vec(), SectionKind::ReadOnlyData);
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
            } else if in_fde && words.len() >= 2 && words[0].len() == 16 && !columns.is_empty() {
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

/// arm64 rows as GCC's prologues and epilogues make them: a leaf keeps its return address in
/// x30 (CFA = SP), `stp x29, x30, [sp, #-32]!` saves it in the frame record beside x29,
/// `str x30, [sp, #-16]!` (no frame pointer) 16 bytes below the CFA; the epilogue's
/// restores bring the leaf's rule back; an undefined x30 ends the walk, and a slot deeper
/// than the compact form reaches is stepped by frame pointer.
#[test]
fn rows_of_arm64_eh_frame() {
    use gimli::AArch64;
    use object::{
        Architecture, BinaryFormat, Endianness,
        write::{Object, SectionKind},
    };
    let (fp, lr) = (AArch64::X29, AArch64::X30);
    let leaf = FrameDescriptionEntry::new(Address::Constant(0x1000), 0x10);
    let mut framed = FrameDescriptionEntry::new(Address::Constant(0x1010), 0x20);
    framed.add_instruction(4, I::CfaOffset(32));
    framed.add_instruction(4, I::Offset(fp, -32));
    framed.add_instruction(4, I::Offset(lr, -24));
    framed.add_instruction(0x1c, I::Restore(lr));
    framed.add_instruction(0x1c, I::Restore(fp));
    framed.add_instruction(0x1c, I::CfaOffset(0));
    let mut no_fp = FrameDescriptionEntry::new(Address::Constant(0x1030), 0x10);
    no_fp.add_instruction(4, I::CfaOffset(16));
    no_fp.add_instruction(4, I::Offset(lr, -16));
    let mut outermost = FrameDescriptionEntry::new(Address::Constant(0x1040), 0x10);
    outermost.add_instruction(0, I::Undefined(lr));
    let mut deep = FrameDescriptionEntry::new(Address::Constant(0x1050), 0x10);
    deep.add_instruction(0, I::CfaOffset(256));
    deep.add_instruction(0, I::Offset(lr, -200));
    let encoding = gimli::Encoding {
        format: gimli::Format::Dwarf32,
        version: 1,
        address_size: 8,
    };
    let mut cie = CommonInformationEntry::new(encoding, 4, -8, lr);
    cie.add_instruction(I::Cfa(AArch64::SP, 0));
    let mut frames = FrameTable::default();
    let cie = frames.add_cie(cie);
    for fde in [leaf, framed, no_fp, outermost, deep] {
        frames.add_fde(cie, fde);
    }
    let mut section = gimli::write::EhFrame(EndianVec::new(LittleEndian));
    frames.write_eh_frame(&mut section).unwrap();
    let mut object = Object::new(BinaryFormat::Elf, Architecture::Aarch64, Endianness::Little);
    let text = object.add_section(Vec::new(), b".text".to_vec(), SectionKind::Text);
    object.append_section_data(text, &[0; 0x100], 16);
    let id = object.add_section(Vec::new(), b".eh_frame".to_vec(), SectionKind::ReadOnlyData);
    object.append_section_data(id, section.0.slice(), 8);
    let table = build(&object.write().unwrap()).unwrap();

    let rule = |kind: u8, at: u8| kind | at << ra::SHIFT;
    assert_eq!(
        table.rows,
        [
            row(0x1000, rule(cfa::RSP, ra::LINK_REGISTER), 0, 0),
            row(0x1014, rule(cfa::RSP, ra::FRAME_RECORD), 32, -4),
            row(0x102c, rule(cfa::RSP, ra::LINK_REGISTER), 0, 0),
            row(0x1034, rule(cfa::RSP, 1), 16, 0),
            row(0x1040, cfa::END, 0, 0),
            row(0x1050, cfa::UNSUPPORTED, 0, 0),
            row(0x1060, cfa::NONE, 0, 0),
        ]
    );
    assert_eq!(table.unsupported_rows, 1);
}

/// arm64's `.plt` has no FDE: past PLT0 its stubs keep the caller's stack pointer and the
/// return address in x30; beside a function's FDE, whose rows stand where they overlap.
#[test]
fn arm64_plt_entries_return_through_the_link_register() {
    let mut table = BinaryTable::default();
    let function = Function {
        start: 0x1100,
        end: 0x1110,
        source: 0,
        rows: vec![(0x1100, Rule::NONE)],
    };
    let rows = merge(vec![function, arm64_plt(0x1000, 0x1100)], &mut table).unwrap();
    let rule = |kind: u8, at: u8| kind | at << ra::SHIFT;
    assert_eq!(
        rows,
        [
            row(0x1000, cfa::UNSUPPORTED, 0, 0),
            row(0x1020, rule(cfa::RSP, ra::LINK_REGISTER), 0, 0),
            row(0x1100, cfa::NONE, 0, 0),
        ]
    );
    assert_eq!(table.functions, 2);
}
