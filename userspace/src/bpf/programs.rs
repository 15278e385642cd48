//! Keeping only some programs of a BPF object, before aya sees it.
//!
//! aya 0.14's `EbpfLoader::load` parses every program of an object and links each one's
//! calls (`relocate_calls`: a copy of every function it reaches, with its line info), loaded
//! or not. The engine object has about 90 programs (64 tracepoint entry points alone), each
//! reaching the interpreter: linking them all cost 40-60 ms of CPU and 30 MiB of peak memory
//! in every run of a tool that attaches one (`cargo xtask bench startup`). aya has no option to
//! parse some programs only, so [`keep_programs`] hides the others in a copy of the object:
//! their function symbols become untyped (`STT_NOTYPE`, as the labels aya skips), so aya
//! makes no program of them. Their code stays where it is, unreferenced.

/// `SHF_EXECINSTR`: a section of code (programs and `.text`).
const SHF_EXECINSTR: u64 = 0x4;
/// `SHT_SYMTAB`.
const SHT_SYMTAB: u32 = 2;
/// `STT_FUNC`, the low 4 bits of `st_info`.
const STT_FUNC: u8 = 2;

fn u16_at(data: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(data.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(data: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(data.get(at..at + 8)?.try_into().ok()?))
}

fn cstr(data: &[u8], at: usize) -> Option<&str> {
    let rest = data.get(at..)?;
    std::str::from_utf8(&rest[..rest.iter().position(|&b| b == 0)?]).ok()
}

/// A copy of the little-endian ELF64 BPF `object` in which only the programs that `keep`
/// accepts by name are programs; the other function symbols of program sections (code
/// sections other than `.text`) are made untyped. Functions in `.text` (the subprograms
/// the programs call) are untouched.
///
/// Returns the copy and how many programs were hidden.
///
/// # Errors
/// `object` is not a little-endian ELF64 file, or a header or table runs past its end.
pub fn keep_programs(
    object: &[u8],
    keep: &dyn Fn(&str) -> bool,
) -> Result<(Vec<u8>, usize), String> {
    let bad = || "the BPF object is not a whole little-endian ELF64 file".to_string();
    if object.get(0..6) != Some(b"\x7fELF\x02\x01") {
        return Err(bad());
    }
    let shoff = u64_at(object, 0x28).ok_or_else(bad)? as usize;
    let shentsize = u16_at(object, 0x3a).ok_or_else(bad)? as usize;
    let shnum = u16_at(object, 0x3c).ok_or_else(bad)? as usize;
    let shstrndx = u16_at(object, 0x3e).ok_or_else(bad)? as usize;
    let header = |index: usize| shoff + index * shentsize;
    let name_of = |index: usize| -> Option<&str> {
        let names = u64_at(object, header(shstrndx) + 0x18)? as usize;
        cstr(object, names + u32_at(object, header(index))? as usize)
    };
    // Program sections: code, not `.text`.
    let mut programs = vec![false; shnum];
    let mut symtab = None;
    for (index, program) in programs.iter_mut().enumerate() {
        let at = header(index);
        let kind = u32_at(object, at + 4).ok_or_else(bad)?;
        let flags = u64_at(object, at + 8).ok_or_else(bad)?;
        if kind == SHT_SYMTAB {
            symtab = Some(at);
        }
        *program =
            flags & SHF_EXECINSTR != 0 && !name_of(index).ok_or_else(bad)?.starts_with(".text");
    }
    let mut copy = object.to_vec();
    let Some(symtab) = symtab else {
        return Ok((copy, 0));
    };
    let offset = u64_at(object, symtab + 0x18).ok_or_else(bad)? as usize;
    let size = u64_at(object, symtab + 0x20).ok_or_else(bad)? as usize;
    let entsize = u64_at(object, symtab + 0x38).ok_or_else(bad)? as usize;
    let link = u32_at(object, symtab + 0x28).ok_or_else(bad)? as usize;
    let strings = u64_at(object, header(link) + 0x18).ok_or_else(bad)? as usize;
    if entsize < 24 || offset + size > object.len() {
        return Err(bad());
    }
    let mut hidden = 0;
    for sym in (offset..offset + size).step_by(entsize) {
        let info = object[sym + 4];
        let section = u16_at(object, sym + 6).ok_or_else(bad)? as usize;
        if info & 0xf != STT_FUNC || !programs.get(section).copied().unwrap_or(false) {
            continue;
        }
        let name = cstr(
            object,
            strings + u32_at(object, sym).ok_or_else(bad)? as usize,
        );
        if !name.is_some_and(keep) {
            copy[sym + 4] = info & 0xf0;
            hidden += 1;
        }
    }
    Ok((copy, hidden))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On the engine object this build embeds: aya parses exactly the programs kept, and
    /// the kept ones load-ready as before (same instructions).
    #[test]
    fn aya_sees_only_the_programs_kept() {
        let Ok(object) = crate::bpf::object(crate::bpf::Object::Engine) else {
            eprintln!("skipped: this build has no kernel programs");
            return;
        };
        let all = aya_obj::Object::parse(object).unwrap();
        assert!(all.programs.len() > 80, "{}", all.programs.len());
        let kept = [
            "engine_tp_0",
            "engine_tp_simple_1",
            "engine_sched_exec",
            "engine_kprobe",
        ];
        let (copy, hidden) = keep_programs(object, &|name| kept.contains(&name)).unwrap();
        assert_eq!(copy.len(), object.len());
        assert_eq!(hidden, all.programs.len() - kept.len());
        let some = aya_obj::Object::parse(&copy).unwrap();
        let mut names: Vec<&str> = some.programs.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "engine_kprobe",
                "engine_sched_exec",
                "engine_tp_0",
                "engine_tp_simple_1"
            ]
        );
        for name in kept {
            let key = |o: &aya_obj::Object| o.programs[name].function_key();
            let before = &all.functions[&key(&all)];
            let after = &some.functions[&key(&some)];
            assert_eq!(
                before.instructions.len(),
                after.instructions.len(),
                "{name}"
            );
        }
        // Subprograms in .text stay.
        assert_eq!(
            all.functions.len() - all.programs.len(),
            some.functions.len() - some.programs.len()
        );
        assert_eq!(
            keep_programs(b"\x7fELF\x01\x01", &|_| true).err(),
            Some("the BPF object is not a whole little-endian ELF64 file".to_string())
        );
    }
}
