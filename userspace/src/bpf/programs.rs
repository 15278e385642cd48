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

/// `SHT_REL`.
const SHT_REL: u32 = 9;
/// `R_BPF_64_64`: a 64-bit immediate (`ld_imm64`) takes a symbol's address.
const R_BPF_64_64: u64 = 1;
/// `BPF_LD | BPF_IMM | BPF_DW`, the opcode of `ld_imm64`.
const LD_IMM64: u8 = 0x18;

/// A copy of the little-endian ELF64 BPF `object` without its function references: each
/// `ld_imm64` relocated against a function (the callbacks `bpf_loop` takes) loses its
/// relocation, which moves past the end of its section, where no function is. aya then
/// neither links the function in for it nor marks the instruction `BPF_PSEUDO_FUNC`: the
/// instruction loads a plain number, and the function is not in the program unless it is
/// called.
///
/// For kernels before 5.13, which know no `BPF_PSEUDO_FUNC`: they do not count a function
/// only referenced as a subprogram, so its BTF `func_info` record is one too many ("number
/// of funcs in func_info doesn't match number of subprogs"). The code that passes such a
/// reference to a helper must be dead on those kernels (a read-only global).
///
/// Returns the copy and how many references were dropped.
///
/// # Errors
/// `object` is not a little-endian ELF64 file, or a header or table runs past its end.
pub fn drop_function_references(object: &[u8]) -> Result<(Vec<u8>, usize), String> {
    let bad = || "the BPF object is not a whole little-endian ELF64 file".to_string();
    if object.get(0..6) != Some(b"\x7fELF\x02\x01") {
        return Err(bad());
    }
    let shoff = u64_at(object, 0x28).ok_or_else(bad)? as usize;
    let shentsize = u16_at(object, 0x3a).ok_or_else(bad)? as usize;
    let shnum = u16_at(object, 0x3c).ok_or_else(bad)? as usize;
    let header = |index: usize| shoff + index * shentsize;
    let is_code = |index: usize| -> Option<bool> {
        Some(u64_at(object, header(index) + 8)? & SHF_EXECINSTR != 0)
    };
    let mut copy = object.to_vec();
    let mut dropped = 0;
    for rel in 0..shnum {
        let at = header(rel);
        if u32_at(object, at + 4).ok_or_else(bad)? != SHT_REL {
            continue;
        }
        let target = u32_at(object, at + 0x2c).ok_or_else(bad)? as usize;
        if target >= shnum || !is_code(target).ok_or_else(bad)? {
            continue;
        }
        let target_offset = u64_at(object, header(target) + 0x18).ok_or_else(bad)? as usize;
        let target_size = u64_at(object, header(target) + 0x20).ok_or_else(bad)?;
        let symtab = u32_at(object, at + 0x28).ok_or_else(bad)? as usize;
        let symbols = u64_at(object, header(symtab) + 0x18).ok_or_else(bad)? as usize;
        let offset = u64_at(object, at + 0x18).ok_or_else(bad)? as usize;
        let size = u64_at(object, at + 0x20).ok_or_else(bad)? as usize;
        if offset + size > object.len() {
            return Err(bad());
        }
        for entry in (offset..offset + size).step_by(16) {
            let r_offset = u64_at(object, entry).ok_or_else(bad)?;
            let r_info = u64_at(object, entry + 8).ok_or_else(bad)?;
            if r_info & 0xffff_ffff != R_BPF_64_64 {
                continue;
            }
            let symbol = symbols + (r_info >> 32) as usize * 24;
            let section = u16_at(object, symbol + 6).ok_or_else(bad)? as usize;
            let opcode = object.get(target_offset + r_offset as usize).copied();
            if section < shnum && is_code(section).ok_or_else(bad)? && opcode == Some(LD_IMM64) {
                copy[entry..entry + 8].copy_from_slice(&target_size.to_le_bytes());
                dropped += 1;
            }
        }
    }
    Ok((copy, dropped))
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
            drop_function_references(b"\x7fELF\x01\x01").err(),
            Some("the BPF object is not a whole little-endian ELF64 file".to_string())
        );
        assert_eq!(
            keep_programs(b"\x7fELF\x01\x01", &|_| true).err(),
            Some("the BPF object is not a whole little-endian ELF64 file".to_string())
        );
    }

    /// The unwinder's `bpf_loop` callbacks are the objects' only function references: once
    /// dropped, no program of either object links in the step it passed (only the global
    /// function that calls it, where it is called), and the instructions are as many.
    #[test]
    fn function_references_are_dropped() {
        for which in [crate::bpf::Object::CpuSampler, crate::bpf::Object::Engine] {
            let Ok(object) = crate::bpf::object(which) else {
                eprintln!("skipped: this build has no kernel programs");
                return;
            };
            let (copy, dropped) = drop_function_references(object).unwrap();
            assert!(dropped >= 1, "{which:?}: {dropped}");
            assert_eq!(drop_function_references(&copy).unwrap().1, 0);
            let text_sections = |o: &aya_obj::Object| -> std::collections::HashSet<usize> {
                o.functions.keys().map(|&(section, _)| section).collect()
            };
            let mut obj = aya_obj::Object::parse(&copy).unwrap();
            let sections = text_sections(&obj);
            obj.relocate_calls(&sections).unwrap();
            let callback = obj
                .functions
                .values()
                .find(|f| f.name.contains("step") && !f.name.contains("tracekit_unwind_step"))
                .map(|f| f.name.clone());
            for program in obj.programs.values() {
                let linked = &obj.functions[&program.function_key()];
                // What 5.10's check_subprogs counts: the program and each function called
                // (BPF_PSEUDO_CALL); one func_info record each.
                let subprogs: std::collections::HashSet<i64> = linked
                    .instructions
                    .iter()
                    .enumerate()
                    .filter(|(_, i)| i.code == 0x85 && i.src_reg() == 1)
                    .map(|(at, i)| at as i64 + i64::from(i.imm) + 1)
                    .collect();
                assert_eq!(
                    linked.func_info.func_info.len(),
                    subprogs.len() + 1,
                    "{which:?}: {}",
                    linked.name
                );
                assert!(
                    linked
                        .instructions
                        .iter()
                        .all(|i| !(i.code == LD_IMM64 && i.src_reg() == 4)),
                    "{which:?}: a BPF_PSEUDO_FUNC left"
                );
            }
            assert!(callback.is_some(), "{which:?}");
        }
    }
}
