//! Reading the kernel's raw BTF (`/sys/kernel/btf/vmlinux`) for the few member offsets the
//! loader and the unwinders need, without indexing every type.

/// The byte offset of `member` in struct `name`, by one pass over raw BTF (`btf_rs` indexes
/// every type first: 1.5 s of a debug build for two offsets, which delayed the unwind
/// tables of the first Python process). `None` when `btf` is not BTF or has no such struct
/// or member.
pub fn struct_member_offset(btf: &[u8], name: &str, member: &str) -> Option<u32> {
    struct_member_path_offset(btf, name, &[member])
}

/// The byte offset of `path` in struct `name`: its first member, a member of that one's
/// struct type (anonymous or not, through typedefs and qualifiers), and so on, as
/// `thread.uw.tp_value` is reached from arm64's `task_struct` (`uw` is an anonymous
/// struct). One pass over raw BTF; `None` when a member is missing.
pub fn struct_member_path_offset(btf: &[u8], name: &str, path: &[&str]) -> Option<u32> {
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
    // Where each type starts, by id (1 is the first), up to the named struct; the rest
    // only when a path goes on past a member of it.
    let mut starts = Vec::new();
    let mut at = types;
    let mut next = || -> Option<Option<usize>> {
        if at + 12 > types + types_len {
            return Some(None);
        }
        let info = word(at + 4)?;
        let vlen = (info & 0xffff) as usize;
        let extra = match (info >> 24) & 0x1f {
            1 | 14 | 17 => 4,
            3 => 12,
            4 | 5 | 15 | 19 => vlen * 12,
            6 | 13 => vlen * 8,
            _ => 0,
        };
        let start = at;
        at += 12 + extra;
        Some(Some(start))
    };
    let mut current = loop {
        let start = next()??;
        starts.push(start);
        let info = word(start + 4)?;
        if (info >> 24) & 0x1f == 4 && info & 0xffff > 0 && string(word(start)?)? == name.as_bytes()
        {
            break start;
        }
    };
    let mut total = 0;
    for (depth, member) in path.iter().enumerate() {
        let info = word(current + 4)?;
        let found = (0..(info & 0xffff) as usize)
            .map(|i| current + 12 + i * 12)
            .find(|&m| string(word(m).unwrap_or(0)) == Some(member.as_bytes()))?;
        let offset = word(found + 8)?;
        total += (if info >> 31 != 0 {
            offset & 0xff_ffff
        } else {
            offset
        }) / 8;
        if depth + 1 == path.len() {
            break;
        }
        // The member's type, through typedefs and qualifiers, must be a struct.
        let mut id = word(found + 4)? as usize;
        current = loop {
            while starts.len() < id {
                starts.push(next()??);
            }
            let start = *starts.get(id.checked_sub(1)?)?;
            let info = word(start + 4)?;
            match (info >> 24) & 0x1f {
                4 => break start,
                8..=11 => id = word(start + 8)? as usize,
                _ => return None,
            }
        };
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path through a member's struct type adds up as the members' own offsets do (this
    /// machine's kernel; arm64's `thread.uw.tp_value`, through an anonymous struct, is read
    /// in the arm64 VM tier).
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn member_paths_add_up() {
        let Ok(data) = std::fs::read("/sys/kernel/btf/vmlinux") else {
            eprintln!("skipped: no /sys/kernel/btf/vmlinux");
            return;
        };
        let thread = struct_member_offset(&data, "task_struct", "thread").unwrap();
        let sp = struct_member_offset(&data, "thread_struct", "sp").unwrap();
        let path = |path: &[&str]| struct_member_path_offset(&data, "task_struct", path);
        assert_eq!(path(&["thread", "sp"]), Some(thread + sp));
        assert_eq!(path(&["thread", "no_such_member"]), None);
        assert_eq!(path(&["pid", "no_such_member"]), None);
        assert_eq!(
            struct_member_path_offset(b"not btf", "task_struct", &["thread"]),
            None
        );
    }
}
