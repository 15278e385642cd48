use super::*;

#[test]
fn versions_from_names_and_hex() {
    assert_eq!(minor_from_name("/usr/bin/python3.11"), Some(11));
    assert_eq!(
        minor_from_name("/root/.pyenv/versions/3.8.18/lib/libpython3.8.so.1.0"),
        Some(8)
    );
    assert_eq!(minor_from_name("/usr/lib/libpython3.7m.so.1.0"), Some(7));
    assert_eq!(minor_from_name("/usr/bin/python3"), None);
    assert_eq!(minor_from_name("/usr/bin/ruby3.1"), None);
    assert_eq!(minor_from_hex(0x030b_07f0), Some(11));
    assert_eq!(minor_from_hex(0x0201_0000), None);
}

/// pyenv's 3.13.0 states in its own `_Py_DebugOffsets` the offsets the table has.
#[test]
fn debug_offsets_of_3_13_match_the_table() {
    let path = "/root/.pyenv/versions/3.13.0/lib/libpython3.13.so.1.0";
    if !std::path::Path::new(path).exists() {
        eprintln!("skipped: no {path}");
        return;
    }
    use blazesym::inspect::{Inspector, source::Elf, source::Source};
    let inspector = Inspector::new();
    let found = inspector
        .lookup(&Source::Elf(Elf::new(path)), &["_PyRuntime"])
        .unwrap();
    let offset = found[0][0].file_offset.unwrap() as usize;
    let data = std::fs::read(path).unwrap();
    let table = *version(13).unwrap();
    let stated = apply_debug_offsets(table, &data[offset..offset + 400]).unwrap();
    assert_eq!(stated, table);
    // Another version's layout is not guessed.
    let mut other = table;
    other.minor = 14;
    assert!(apply_debug_offsets(other, &data[offset..offset + 400]).is_err());
    assert!(apply_debug_offsets(table, &[0; 400]).is_err());
}

#[test]
fn lnotab_lines() {
    // Line 10 at byte 0, +1 at byte 6, +2 at byte 10 (3.8's layout).
    let table = [6, 1, 4, 2];
    assert_eq!(line_of(8, 10, &table, 0), Some(10));
    assert_eq!(line_of(8, 10, &table, 2), Some(10));
    assert_eq!(line_of(8, 10, &table, 3), Some(11));
    assert_eq!(line_of(8, 10, &table, 5), Some(13));
}

#[test]
fn linetable_310_lines() {
    // Bytes 0-1 no line, 2-7 line 11, 8-11 line 13.
    let table = [2, 0x80, 6, 1, 4, 2];
    assert_eq!(line_of(10, 10, &table, 0), None);
    assert_eq!(line_of(10, 10, &table, 1), Some(11));
    assert_eq!(line_of(10, 10, &table, 4), Some(13));
    assert_eq!(line_of(10, 10, &table, 6), None);
}

#[test]
fn location_table_lines() {
    // One unit, no column (code 13), line +1; two units short form (code 0) on it;
    // three units one-line form (code 11) line +1; one unit of no location.
    let table = [
        0x80 | (13 << 3),
        2, // svarint +1
        0x80 | 1,
        0, // short: column byte
        0x80 | (11 << 3) | 2,
        4,
        9,
        0x80 | (15 << 3),
    ];
    assert_eq!(line_of(11, 20, &table, 0), Some(21));
    assert_eq!(line_of(11, 20, &table, 2), Some(21));
    assert_eq!(line_of(11, 20, &table, 3), Some(22));
    assert_eq!(line_of(11, 20, &table, 5), Some(22));
    assert_eq!(line_of(11, 20, &table, 6), None);
    assert_eq!(line_of(11, 20, &table, 7), None);
}
