//! The `.note.stapsdt` notes of an ELF file, read with the `object` crate.

use super::NT_STAPSDT;
/// One note, addresses adjusted, file offsets computed.
pub(super) struct Note {
    pub(super) provider: String,
    pub(super) name: String,
    pub(super) args: String,
    pub(super) pc: u64,
    pub(super) pc_file_offset: Option<u64>,
    pub(super) semaphore: Option<u64>,
    pub(super) semaphore_file_offset: Option<u64>,
}

/// The `stapsdt` notes of an ELF file (`SHT_NOTE` sections, 32- or 64-bit).
pub(super) fn read_notes(data: &[u8]) -> std::result::Result<Vec<Note>, String> {
    use object::{Object as _, ObjectSection as _, ObjectSegment as _};
    let file = object::File::parse(data).map_err(|err| format!("not an ELF file ({err})"))?;
    let (is_64, little) = (file.is_64(), file.is_little_endian());
    let base_section = file.section_by_name(".stapsdt.base").map(|s| s.address());
    let segments: Vec<(u64, u64, u64)> = file
        .segments()
        .filter_map(|s| {
            let (offset, size) = s.file_range();
            (size > 0).then_some((s.address(), offset, size))
        })
        .collect();
    let file_offset = |addr: u64| {
        segments
            .iter()
            .find(|(vaddr, _, size)| addr >= *vaddr && addr - vaddr < *size)
            .map(|(vaddr, offset, _)| addr - vaddr + offset)
    };
    let word = |bytes: &[u8], at: usize| -> Option<u64> {
        if is_64 {
            let raw: [u8; 8] = bytes.get(at..at + 8)?.try_into().ok()?;
            Some(if little {
                u64::from_le_bytes(raw)
            } else {
                u64::from_be_bytes(raw)
            })
        } else {
            let raw: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
            Some(u64::from(if little {
                u32::from_le_bytes(raw)
            } else {
                u32::from_be_bytes(raw)
            }))
        }
    };
    let word_size = if is_64 { 8 } else { 4 };
    let descs = if is_64 {
        stapsdt_descs::<object::elf::FileHeader64<object::Endianness>>(data)?
    } else {
        stapsdt_descs::<object::elf::FileHeader32<object::Endianness>>(data)?
    };
    let mut notes = Vec::new();
    for desc in descs {
        let (Some(pc), Some(base), Some(semaphore)) = (
            word(&desc, 0),
            word(&desc, word_size),
            word(&desc, 2 * word_size),
        ) else {
            continue;
        };
        let mut strings = desc[3 * word_size..].split(|&b| b == 0);
        let text = |s: Option<&[u8]>| String::from_utf8_lossy(s.unwrap_or_default()).into_owned();
        let provider = text(strings.next());
        let name = text(strings.next());
        let args = text(strings.next());
        // Prelink moved the sections: move the addresses by as much (the spec's rule).
        let bias = match base_section {
            Some(actual) if base != 0 => actual.wrapping_sub(base),
            _ => 0,
        };
        let pc = pc.wrapping_add(bias);
        let semaphore = (semaphore != 0).then(|| semaphore.wrapping_add(bias));
        notes.push(Note {
            provider,
            name,
            args,
            pc,
            pc_file_offset: file_offset(pc),
            semaphore,
            semaphore_file_offset: semaphore.and_then(file_offset),
        });
    }
    Ok(notes)
}

/// The descriptors of the `stapsdt` notes (type 3) in the `SHT_NOTE` sections.
pub(super) fn stapsdt_descs<Elf: object::read::elf::FileHeader<Endian = object::Endianness>>(
    data: &[u8],
) -> std::result::Result<Vec<Vec<u8>>, String> {
    use object::read::elf::SectionHeader as _;
    let header = Elf::parse(data).map_err(|err| err.to_string())?;
    let endian = header.endian().map_err(|err| err.to_string())?;
    let sections = header
        .sections(endian, data)
        .map_err(|err| err.to_string())?;
    let mut descs = Vec::new();
    for section in sections.iter() {
        let Ok(Some(mut notes)) = section.notes(endian, data) else {
            continue;
        };
        while let Ok(Some(note)) = notes.next() {
            if note.name() == b"stapsdt" && note.n_type(endian) == NT_STAPSDT {
                descs.push(note.desc().to_vec());
            }
        }
    }
    Ok(descs)
}
