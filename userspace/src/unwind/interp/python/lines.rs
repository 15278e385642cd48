//! CPython's line tables: which source line an instruction offset of a code object is on,
//! for each version's format.

/// The line of instruction `units` (2-byte code units from the start of the bytecode) of a
/// code object of `3.minor` whose first line is `first_line` and line table `table`; `None`
/// where the table gives no line.
pub fn line_of(minor: u8, first_line: i32, table: &[u8], units: u32) -> Option<i32> {
    match minor {
        0..=9 => Some(lnotab_line(first_line, table, units * 2)),
        10 => linetable_310_line(first_line, table, units * 2),
        _ => location_table_line(first_line, table, units),
    }
}

/// 3.8-3.9 `co_lnotab`: (bytecode increment, signed line increment) pairs.
fn lnotab_line(first_line: i32, table: &[u8], offset: u32) -> i32 {
    let mut line = first_line;
    let mut address = 0u32;
    for pair in table.chunks_exact(2) {
        address += u32::from(pair[0]);
        if address > offset {
            break;
        }
        line += i32::from(pair[1] as i8);
    }
    line
}

/// 3.10 `co_linetable`: (bytecode length, signed line delta, -128: no line) pairs.
fn linetable_310_line(first_line: i32, table: &[u8], offset: u32) -> Option<i32> {
    let mut line = first_line;
    let mut start = 0u32;
    for pair in table.chunks_exact(2) {
        let end = start + u32::from(pair[0]);
        let delta = pair[1] as i8;
        let here = if delta == -128 {
            None
        } else {
            line += i32::from(delta);
            Some(line)
        };
        if start <= offset && offset < end {
            return here;
        }
        start = end;
    }
    None
}

/// 3.11+ location table (`Objects/locations.md`): entries of code units, each a first byte
/// `1ccccLLL` (code, length - 1) and code-specific varints.
fn location_table_line(first_line: i32, table: &[u8], units: u32) -> Option<i32> {
    let mut at = 0;
    let mut line = first_line;
    let mut start = 0u32;
    let next = |at: &mut usize| -> Option<u8> {
        let byte = *table.get(*at)?;
        *at += 1;
        Some(byte)
    };
    let varint = |at: &mut usize| -> Option<u32> {
        let mut byte = next(at)?;
        let mut value = u32::from(byte & 63);
        let mut shift = 0;
        while byte & 64 != 0 {
            byte = next(at)?;
            shift += 6;
            if shift > 30 {
                return None;
            }
            value |= u32::from(byte & 63) << shift;
        }
        Some(value)
    };
    let svarint = |at: &mut usize| -> Option<i32> {
        let value = varint(at)?;
        Some(if value & 1 != 0 {
            -((value >> 1) as i32)
        } else {
            (value >> 1) as i32
        })
    };
    while at < table.len() {
        let first = next(&mut at)?;
        let code = (first >> 3) & 15;
        let length = u32::from(first & 7) + 1;
        let here = match code {
            15 => None,
            14 => {
                line += svarint(&mut at)?;
                varint(&mut at)?;
                varint(&mut at)?;
                varint(&mut at)?;
                Some(line)
            }
            13 => {
                line += svarint(&mut at)?;
                Some(line)
            }
            10..=12 => {
                line += i32::from(code - 10);
                next(&mut at)?;
                next(&mut at)?;
                Some(line)
            }
            _ => {
                next(&mut at)?;
                Some(line)
            }
        };
        if units < start + length {
            return here;
        }
        start += length;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
