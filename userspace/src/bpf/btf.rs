//! Reading the kernel's raw BTF (`/sys/kernel/btf/vmlinux`) for the few member offsets the
//! loader and the unwinders need, without indexing every type.

/// The byte offset of `member` in struct `name`, by one pass over raw BTF (`btf_rs` indexes
/// every type first: 1.5 s of a debug build for two offsets, which delayed the unwind
/// tables of the first Python process). `None` when `btf` is not BTF or has no such struct
/// or member.
pub fn struct_member_offset(btf: &[u8], name: &str, member: &str) -> Option<u32> {
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(btf.get(at..at + 4)?.try_into().ok()?))
    };
    if btf.get(0..2)? != [0x9f, 0xeb] {
        return None;
    }
    let header = word(4)? as usize;
    let (types, types_len) = (header + word(8)? as usize, word(12)? as usize);
    let strings = header + word(16)? as usize;
    let string = |offset: u32| -> Option<&[u8]> {
        let start = strings + offset as usize;
        let rest = btf.get(start..)?;
        Some(&rest[..rest.iter().position(|&b| b == 0)?])
    };
    let mut at = types;
    while at + 12 <= types + types_len {
        let info = word(at + 4)?;
        let kind = (info >> 24) & 0x1f;
        let vlen = (info & 0xffff) as usize;
        let extra = match kind {
            1 | 14 | 17 => 4,
            3 => 12,
            4 | 5 | 15 | 19 => vlen * 12,
            6 | 13 => vlen * 8,
            _ => 0,
        };
        if kind == 4 && vlen > 0 && string(word(at)?)? == name.as_bytes() {
            for i in 0..vlen {
                let m = at + 12 + i * 12;
                if string(word(m)?)? == member.as_bytes() {
                    let offset = word(m + 8)?;
                    let bits = if info >> 31 != 0 {
                        offset & 0xff_ffff
                    } else {
                        offset
                    };
                    return Some(bits / 8);
                }
            }
            return None;
        }
        at += 12 + extra;
    }
    None
}
