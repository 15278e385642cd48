//! CRuby (MRI) 3.1 and 3.3: detection of `libruby` by its symbols and `ruby_version`, the
//! structure offsets the kernel walk needs ([`versions`]: one table entry per minor
//! version, each with its source), and naming of iseqs (label, path, line from the `pc`).
//!
//! The eval loop is `vm_exec_core`, which has no dynamic symbol: it is the large function
//! `rb_vm_exec` calls. 3.1 exports `rb_vm_exec`; 3.3 does not, and its `rb_iseq_eval_main`
//! ends in a jump to it, so there it is the callee of `rb_iseq_eval_main` that calls a
//! large function. `ruby_current_ec` (the thread's execution context) is a TLS variable
//! reached through its `R_X86_64_DTPMOD64` GOT slot (libruby is built with the
//! general-dynamic TLS model): named by its relocation in 3.1; in 3.3 it is hidden, so the
//! slot is the one exported `rb_thread_current` passes to `__tls_get_addr`. A library whose
//! version has no table entry keeps its native frames, and the run's summary says so.

use tracekit_common::interp::{
    InterpProcess, NO_OFFSET, OFFSET_SLOTS,
    python::{code_generation, split_code_key},
    ruby::{
        BODY_ENCODED, BODY_FIRST_LINENO, BODY_LABEL, BODY_PATHOBJ, CFP_EP, CFP_ISEQ, CFP_PC,
        CFP_SIZE, EC_CFP, EC_VM_STACK, EC_VM_STACK_SIZE, ISEQ_BODY,
    },
    runtime,
};

use super::{
    CodeInfo, Interpreters, bias_at,
    branches::{Branch, branch_targets},
    read_memory,
    registry::CodeReader,
    runtime::{Detected, Runtime, at_line, same_reader},
    text::{MAX_FILE, MAX_NAME, plausible_text},
};
use crate::unwind::process::ExecMapping;
pub use versions::{StringLayout, VERSIONS, Version, version, version_of};

mod versions;

/// A detected `libruby` (or a static `ruby`), in its own ELF addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binary {
    pub version: &'static Version,
    /// `vm_exec_core` (found as the large function `rb_vm_exec` calls: it has no dynamic
    /// symbol), else `rb_vm_exec`: start and size.
    pub eval: (u64, u64),
    pub eval_file_offset: u64,
    /// The GOT slot of `ruby_current_ec`'s TLS module id.
    pub tls_module_slot: u64,
}

impl Binary {
    /// The kernel's view of a process mapping this binary with load bias `bias`.
    pub fn process(&self, bias: u64) -> InterpProcess {
        let mut offsets = [NO_OFFSET; OFFSET_SLOTS];
        offsets[EC_VM_STACK] = 0;
        offsets[EC_VM_STACK_SIZE] = 8;
        offsets[EC_CFP] = 16;
        offsets[CFP_PC] = 0;
        offsets[CFP_ISEQ] = 16;
        offsets[CFP_EP] = 32;
        offsets[CFP_SIZE] = self.version.cfp_size;
        offsets[ISEQ_BODY] = 16;
        offsets[BODY_ENCODED] = 8;
        offsets[BODY_PATHOBJ] = self.version.body_pathobj as u16;
        offsets[BODY_LABEL] = self.version.body_label as u16;
        offsets[BODY_FIRST_LINENO] = self.version.body_first_lineno as u16;
        InterpProcess {
            eval_begin: self.eval.0.wrapping_add(bias),
            eval_end: (self.eval.0 + self.eval.1).wrapping_add(bias),
            state_address: self.tls_module_slot.wrapping_add(bias),
            runtime: runtime::RUBY,
            layout: 0,
            version_minor: self.version.minor,
            padding: [0; 5],
            offsets,
            cold_begin: 0,
            cold_end: 0,
        }
    }
}

/// Ruby in the runtime table.
pub struct Ruby;

/// Ruby's entry in `RUNTIMES`, the table of runtimes.
pub static RUBY: Ruby = Ruby;

/// The module column of Ruby frames.
pub const MODULE: &str = "[ruby]";

impl Runtime for Ruby {
    fn tags(&self) -> &'static [u8] {
        &[runtime::RUBY]
    }

    fn module(&self) -> &'static str {
        MODULE
    }

    fn claims(&self, name: &str) -> bool {
        name.contains("ruby")
    }

    fn name(&self) -> &'static str {
        "ruby"
    }

    fn language(&self) -> &'static str {
        "Ruby"
    }

    fn detect(&self, path: &str, file: &std::path::Path) -> Detected {
        detect(path, file)
    }

    /// A frame followed by a generation word is of an iseq that took the slot of one
    /// recorded before it: named by its [`code_key`](tracekit_common::interp::python::code_key).
    fn code(&self, word: u64, code: u64, next: Option<u64>) -> Option<u64> {
        super::python::frame_code(word, code, next)
    }

    fn symbols(&self, info: &CodeInfo, units: u32, _leaf: bool) -> Vec<(String, bool)> {
        at_line(info, line_of(info, units))
    }
}

impl super::runtime::Binary for Binary {
    fn load(
        &self,
        interpreters: &mut Interpreters,
        pid: u32,
        _path: &str,
        mapping: &ExecMapping,
        _mappings: &[ExecMapping],
    ) -> bool {
        if !interpreters.configure() {
            return true;
        }
        let Some(bias) = bias_at(self.eval.0, self.eval_file_offset, mapping) else {
            return false;
        };
        let name = format!("Ruby 3.{}", self.version.minor);
        interpreters.publish(pid, self.process(bias), name, *self.version);
        true
    }
}

impl CodeReader for Version {
    fn read_code(&self, pid: u32, code: u64, generation: Option<u16>) -> Option<CodeInfo> {
        match split_code_key(code) {
            Some((iseq, keyed)) => read_code(pid, self, iseq, Some(keyed)),
            None => read_code(pid, self, code, generation),
        }
    }

    fn same(&self, other: &dyn CodeReader) -> bool {
        same_reader(self, other, |a, b| a.minor == b.minor)
    }
}

/// Checks `file` (a mapped `libruby` or `ruby`, named `path`) for a Ruby VM: one that
/// exports `ruby_version`.
fn detect(path: &str, file: &std::path::Path) -> Detected {
    use blazesym::inspect::{Inspector, source::Elf, source::Source};
    let mut elf = Elf::new(file);
    elf.debug_syms = false;
    let names = [
        "ruby_version",
        "rb_vm_exec",
        "rb_iseq_eval_main",
        "rb_thread_current",
    ];
    let inspector = Inspector::new();
    let Ok(found) = inspector.lookup(&Source::Elf(elf), &names) else {
        return Detected::None;
    };
    let first = |i: usize| found.get(i).and_then(|syms| syms.first());
    let Some(version_sym) = first(0) else {
        return Detected::None;
    };
    let Ok(data) = std::fs::read(file) else {
        return Detected::None;
    };
    let text = version_sym
        .file_offset
        .and_then(|at| data.get(at as usize..at as usize + 16))
        .map(|bytes| {
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            String::from_utf8_lossy(&bytes[..end]).into_owned()
        })
        .unwrap_or_default();
    let Some((major, minor)) =
        version_of(&text).or_else(|| versions::version_of_name(super::runtime::file_name(path)))
    else {
        return Detected::unsupported(format!("a Ruby of an unknown version ({text:?})"));
    };
    let shown = if text.is_empty() {
        format!("{major}.{minor}")
    } else {
        text
    };
    let Some(version) = version(major, minor) else {
        return Detected::unsupported_version(
            shown,
            format!(
                "no layout for Ruby {major}.{minor} (known: {})",
                versions::known()
            ),
        );
    };
    let unsupported = |reason: &str| Detected::unsupported_version(shown.clone(), reason);
    let function = |sym: &blazesym::inspect::SymInfo<'_>| {
        Some((
            (sym.addr, sym.size.filter(|&s| s > 0)? as u64),
            sym.file_offset?,
        ))
    };
    let file = match object::File::parse(&*data) {
        Ok(file) => file,
        Err(err) => return unsupported(&format!("libruby is not ELF: {err}")),
    };
    let bounds = crate::unwind::table::function_bounds(&file);
    // 3.1: `rb_vm_exec` is exported; else it is the callee of `rb_iseq_eval_main` that
    // calls `vm_exec_core`.
    let core = match (first(1).and_then(function), first(2).and_then(function)) {
        (Some((exec, at)), _) => Some(
            vm_exec_core(&data, &bounds, exec, at)
                .map(|core| (core, at.wrapping_add(core.0.wrapping_sub(exec.0))))
                .unwrap_or((exec, at)),
        ),
        (None, Some((main, at))) => branch_targets(&data, &bounds, main, at, Branch::CallOrJump)
            .into_iter()
            .filter_map(|callee| {
                let callee_at = at.wrapping_add(callee.0.wrapping_sub(main.0));
                let core = vm_exec_core(&data, &bounds, callee, callee_at)?;
                Some((core, at.wrapping_add(core.0.wrapping_sub(main.0))))
            })
            .max_by_key(|((_, size), _)| *size),
        (None, None) => None,
    };
    let Some((eval, eval_file_offset)) = core else {
        return unsupported("vm_exec_core not found (no rb_vm_exec, nor a call to it)");
    };
    let slot = tls_module_slot(&file, "ruby_current_ec").or_else(|| {
        let (thread_current, at) = first(3).and_then(function)?;
        let code = data.get(at as usize..(at + thread_current.1) as usize)?;
        let slot = general_dynamic_slot(code, thread_current.0)?;
        is_tls_module_slot(&file, slot).then_some(slot)
    });
    let Some(tls_module_slot) = slot else {
        return unsupported("the TLS slot of ruby_current_ec not found");
    };
    Detected::found(Binary {
        version,
        eval,
        eval_file_offset,
        tls_module_slot,
    })
}

/// Smallest size taken for `vm_exec_core` (every instruction's handler: 60 KiB in 3.1.2,
/// 20 KiB of hot handlers in Debian's 3.3.8, its cold ones split off).
const MIN_EXEC_CORE: u64 = 16 * 1024;

/// `vm_exec_core`'s `[start, size)`: the largest function that `rb_vm_exec` (`exec`: start
/// and size, at `exec_file_offset`) calls directly, if at least [`MIN_EXEC_CORE`]. Its
/// samples then read as Ruby frames, where `rb_vm_exec` alone would leave its unnamed
/// frame above them.
fn vm_exec_core(
    data: &[u8],
    bounds: &[(u64, u64)],
    exec: (u64, u64),
    exec_file_offset: u64,
) -> Option<(u64, u64)> {
    branch_targets(data, bounds, exec, exec_file_offset, Branch::CallOrJump)
        .into_iter()
        .filter(|&(_, size)| size >= MIN_EXEC_CORE)
        .max_by_key(|&(_, size)| size)
}

/// The GOT slot of the first general-dynamic TLS access in `code` (at ELF address
/// `address`): the x86-64 ABI's fixed sequence `66 48 8d 3d rel32` (`data16 lea
/// rel32(%rip),%rdi`, the slot) then `66 66 48 e8` (the call to `__tls_get_addr`).
fn general_dynamic_slot(code: &[u8], address: u64) -> Option<u64> {
    const LEA: [u8; 4] = [0x66, 0x48, 0x8d, 0x3d];
    const CALL: [u8; 4] = [0x66, 0x66, 0x48, 0xe8];
    let at = code
        .windows(12)
        .position(|w| w[..4] == LEA && w[8..] == CALL)?;
    let rel = i32::from_le_bytes(code[at + 4..at + 8].try_into().ok()?);
    Some((address + at as u64 + 8).wrapping_add_signed(i64::from(rel)))
}

/// The address of the GOT slot the dynamic linker fills with `symbol`'s TLS module id
/// (`R_X86_64_DTPMOD64`), whose next word is its offset in the module's block.
fn tls_module_slot(file: &object::File<'_>, symbol: &str) -> Option<u64> {
    use object::{Object as _, ObjectSymbol as _, ObjectSymbolTable as _};
    let symbols = file.dynamic_symbol_table()?;
    tls_module_relocations(file).find_map(|(at, index)| {
        (symbols.symbol_by_index(index?).ok()?.name().ok()? == symbol).then_some(at)
    })
}

/// Whether `slot` is a GOT slot the dynamic linker fills with a TLS module id (of a hidden
/// variable, whose relocation names no symbol, or of any other).
fn is_tls_module_slot(file: &object::File<'_>, slot: u64) -> bool {
    tls_module_relocations(file).any(|(at, _)| at == slot)
}

/// The `R_X86_64_DTPMOD64` relocations of `file`: the slot, and the symbol it names if any.
fn tls_module_relocations<'a>(
    file: &'a object::File<'_>,
) -> impl Iterator<Item = (u64, Option<object::SymbolIndex>)> + 'a {
    use object::{Object as _, RelocationFlags};
    const R_X86_64_DTPMOD64: u32 = 16;
    file.dynamic_relocations()
        .into_iter()
        .flatten()
        .filter_map(|(at, reloc)| {
            let RelocationFlags::Elf { r_type } = reloc.flags() else {
                return None;
            };
            let symbol = match reloc.target() {
                object::RelocationTarget::Symbol(index) => Some(index),
                _ => None,
            };
            (r_type == R_X86_64_DTPMOD64).then_some((at, symbol))
        })
}

const MAX_READ: usize = 64 * 1024;
/// `RUBY_T_MASK`, `RUBY_T_STRING`, `RUBY_T_ARRAY`.
const T_MASK: u64 = 0x1f;
const T_STRING: u64 = 0x05;
const T_ARRAY: u64 = 0x07;
/// `FL_USER1`: `RSTRING_NOEMBED` and `RARRAY_EMBED_FLAG`.
const FL_USER1: u64 = 1 << 13;

fn word(bytes: &[u8], at: u64) -> Option<u64> {
    let at = at as usize;
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

fn word32(bytes: &[u8], at: u64) -> Option<u32> {
    let at = at as usize;
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

/// A `String`'s bytes, laid out as `layout` says, as text of 1 to `max` characters
/// ([`plausible_text`]).
fn read_rstring(pid: u32, object: u64, layout: StringLayout, max: usize) -> Option<String> {
    let header = read_memory(pid, object, 40)?;
    let flags = word(&header, 0)?;
    if flags & T_MASK != T_STRING {
        return None;
    }
    let heap = flags & FL_USER1 != 0;
    let bytes = match layout {
        StringLayout::LengthInFlags if !heap => {
            let length = ((flags >> 14) & 0x1f) as usize;
            header.get(16..16 + length)?.to_vec()
        }
        _ => {
            let length = word(&header, 16)? as usize;
            if length > MAX_READ {
                return None;
            }
            if heap {
                read_memory(pid, word(&header, 24)?, length)?
            } else {
                read_memory(pid, object + 24, length)?
            }
        }
    };
    plausible_text(&bytes, max)
}

/// An iseq's path: `pathobj` is a `String` or an `Array` `[path, realpath]` (an embedded
/// array's elements at 16, a heap one's `as.heap.ptr` at 32, in 3.1 and 3.3 alike).
fn read_path(pid: u32, object: u64, layout: StringLayout) -> Option<String> {
    let header = read_memory(pid, object, 40)?;
    let flags = word(&header, 0)?;
    match flags & T_MASK {
        T_STRING => read_rstring(pid, object, layout, MAX_FILE),
        T_ARRAY => {
            let first = if flags & FL_USER1 != 0 {
                word(&header, 16)?
            } else {
                read_memory(pid, word(&header, 32)?, 8).and_then(|b| word(&b, 0))?
            };
            read_rstring(pid, first, layout, MAX_FILE)
        }
        _ => None,
    }
}

/// Reads the iseq at `iseq` of process `pid`: its label, path, and its line table decoded
/// into `(position, line)` changes (8 bytes each, in [`CodeInfo::linetable`]). `None` also
/// when the kernel recorded it with `generation` and the iseq there now has another (it
/// was freed and its slot taken).
pub fn read_code(pid: u32, v: &Version, iseq: u64, generation: Option<u16>) -> Option<CodeInfo> {
    let body = read_memory(pid, iseq + 16, 8).and_then(|b| word(&b, 0))?;
    let header = read_memory(pid, body, 160)?;
    if let Some(generation) = generation {
        let now = code_generation(
            word32(&header, v.body_first_lineno)? as i32,
            word(&header, v.body_label)?,
            word(&header, v.body_pathobj)?,
        );
        if now != generation {
            return None;
        }
    }
    let name = read_rstring(pid, word(&header, v.body_label)?, v.string, MAX_NAME)?;
    let file = read_path(pid, word(&header, v.body_pathobj)?, v.string).unwrap_or_default();
    let first_line = if v.first_lineno_fixnum {
        // (n << 1) | 1.
        (word(&header, v.body_first_lineno)? as i64 >> 1) as i32
    } else {
        word32(&header, v.body_first_lineno)? as i32
    };
    let iseq_size = word32(&header, v.body_size)?.min(MAX_READ as u32);
    let entries = word32(&header, v.body_insns_info_size)?;
    let lines = if entries == 0 || u64::from(entries) * v.insn_info_entry > MAX_READ as u64 {
        Vec::new()
    } else {
        let table = read_memory(
            pid,
            word(&header, v.body_insns_info)?,
            (u64::from(entries) * v.insn_info_entry) as usize,
        )?;
        let line_of_entry = |index: u32| -> Option<i32> {
            Some(word32(&table, u64::from(index) * v.insn_info_entry)? as i32)
        };
        if entries == 1 {
            vec![(0, line_of_entry(0)?)]
        } else {
            let blocks = (iseq_size as usize).saturating_sub(IMMEDIATE) / BLOCK_BITS + 1;
            let succ = read_memory(
                pid,
                word(&header, v.body_succ_index_table)?,
                SUCC_PART + blocks * SUCC_BLOCK,
            )?;
            let mut changes = Vec::new();
            let mut last = None;
            for pos in 0..iseq_size {
                let rank = succ_rank(&succ, pos)?;
                let line = line_of_entry(rank.saturating_sub(1).min(entries - 1))?;
                if last != Some(line) {
                    changes.push((pos, line));
                    last = Some(line);
                }
            }
            changes
        }
    };
    let linetable = lines
        .iter()
        .flat_map(|&(pos, line)| {
            let mut pair = [0u8; 8];
            pair[..4].copy_from_slice(&pos.to_le_bytes());
            pair[4..].copy_from_slice(&line.to_le_bytes());
            pair
        })
        .collect();
    Some(CodeInfo {
        name,
        file,
        first_line,
        linetable,
        minor: v.minor,
        compiled: Vec::new(),
    })
}

/// `IMMEDIATE_TABLE_SIZE` of `iseq.c`'s succinct index table: positions below it are
/// ranked by 7-bit fields, 9 to a word.
const IMMEDIATE: usize = 54;
/// Positions per `succ_dict_block`.
const BLOCK_BITS: usize = 512;
/// Offset of `succ_part` (after `imm_part[6]`).
const SUCC_PART: usize = 48;
/// `sizeof(struct succ_dict_block)`: `rank` (padded to 8), `small_block_ranks`, 8 words of
/// bits.
const SUCC_BLOCK: usize = 80;

/// How many instruction-info entries start at or before position `pos` (`iseq.c`'s
/// `succ_index_lookup`); the entry of `pos` is one less.
fn succ_rank(table: &[u8], pos: u32) -> Option<u32> {
    let pos = pos as usize;
    if pos < IMMEDIATE {
        let part = word(table, (pos / 9 * 8) as u64)?;
        return Some(((part >> ((pos % 9) * 7)) & 0x7f) as u32);
    }
    let block = SUCC_PART + (pos - IMMEDIATE) / BLOCK_BITS * SUCC_BLOCK;
    let bit = (pos - IMMEDIATE) % BLOCK_BITS;
    let small = bit / 64;
    let rank = word32(table, block as u64)?;
    let ranks = word(table, block as u64 + 8)?;
    let small_rank = if small == 0 {
        0
    } else {
        ((ranks >> ((small - 1) * 9)) & 0x1ff) as u32
    };
    let bits = word(table, (block + 16 + small * 8) as u64)?;
    let below = (bits << (63 - bit % 64)).count_ones();
    Some(rank + small_rank + below)
}

/// The line of `units` (the frame's `pc` in `VALUE`s from the iseq's start) in `info`'s
/// decoded table; the `pc` is past the instruction running, so the one before it is looked
/// up, as `rb_vm_get_sourceline` does.
pub fn line_of(info: &CodeInfo, units: u32) -> i32 {
    let pos = units.saturating_sub(1);
    let mut line = info.first_line;
    for pair in info.linetable.chunks_exact(8) {
        let at = u32::from_le_bytes(pair[..4].try_into().unwrap_or_default());
        if at > pos {
            break;
        }
        line = i32::from_le_bytes(pair[4..].try_into().unwrap_or_default());
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table with entries starting at positions 0, 3, 7 (immediate part) and 60, 600
    /// (succinct blocks): ranks count the starts at or before each position.
    #[test]
    fn succinct_ranks() {
        let starts = [0usize, 3, 7, 60, 600];
        let size = 700;
        let blocks = (size - IMMEDIATE) / BLOCK_BITS + 1;
        let mut table = vec![0u8; SUCC_PART + blocks * SUCC_BLOCK];
        let rank_at = |pos: usize| starts.iter().filter(|&&s| s <= pos).count() as u64;
        for pos in 0..IMMEDIATE {
            let at = pos / 9 * 8;
            let mut part = u64::from_le_bytes(table[at..at + 8].try_into().unwrap());
            part |= rank_at(pos) << ((pos % 9) * 7);
            table[at..at + 8].copy_from_slice(&part.to_le_bytes());
        }
        for block in 0..blocks {
            let base = SUCC_PART + block * SUCC_BLOCK;
            let first = IMMEDIATE + block * BLOCK_BITS;
            let rank = rank_at(first - 1) as u32;
            table[base..base + 4].copy_from_slice(&rank.to_le_bytes());
            let mut ranks = 0u64;
            for small in 1..8 {
                let below = rank_at(first + small * 64 - 1) as u32 - rank;
                ranks |= u64::from(below) << ((small - 1) * 9);
            }
            table[base + 8..base + 16].copy_from_slice(&ranks.to_le_bytes());
            for &s in &starts {
                if s >= first && s < first + BLOCK_BITS {
                    let bit = s - first;
                    let at = base + 16 + bit / 64 * 8;
                    let mut bits = u64::from_le_bytes(table[at..at + 8].try_into().unwrap());
                    bits |= 1 << (bit % 64);
                    table[at..at + 8].copy_from_slice(&bits.to_le_bytes());
                }
            }
        }
        for pos in 0..size {
            assert_eq!(
                succ_rank(&table, pos as u32),
                Some(rank_at(pos) as u32),
                "{pos}"
            );
        }
    }

    /// Debian's libruby: 3.1, `vm_exec_core` found (larger than `rb_vm_exec`, elsewhere), the
    /// GOT slot of `ruby_current_ec`'s module id found.
    #[test]
    fn detects_debian_libruby() {
        let path = "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1";
        if !std::path::Path::new(path).exists() {
            eprintln!("skipped: no {path} (apt-get install ruby)");
            return;
        }
        let Some(binary) = detect(path, std::path::Path::new(path)).binary::<Binary>() else {
            panic!("{path} not detected as Ruby");
        };
        eprintln!("{binary:x?}");
        assert_eq!(binary.version.minor, 1);
        assert!(binary.eval.1 >= MIN_EXEC_CORE, "{binary:x?}");
        assert_ne!(binary.tls_module_slot, 0);
    }

    /// Debian 13's libruby 3.3.8 (build id f15efb61...), in the Debian trixie root of the
    /// runtime tests: neither `rb_vm_exec` nor `ruby_current_ec` is exported. `vm_exec_core`
    /// is the 20415-byte function at 0x278fd0 (it tests `ec`, loads `ec->cfp->pc` and jumps
    /// through it), `ruby_current_ec`'s slot is 0x45aad0 (`rb_thread_current` and
    /// `rb_profile_frames` pass it to `__tls_get_addr`; its DTPOFF word holds 16).
    #[test]
    fn detects_debian_trixie_libruby_3_3() {
        let Some(path) =
            crate::unwind::interp::trixie_file("usr/lib/x86_64-linux-gnu/libruby-3.3.so.3.3.8")
        else {
            return;
        };
        let detected = detect(path.to_str().unwrap(), &path);
        let Some(binary) = detected.binary::<Binary>() else {
            panic!("{} not detected as Ruby: {detected:?}", path.display());
        };
        assert_eq!(binary.version.minor, 3);
        assert_eq!(binary.eval, (0x278fd0, 20415));
        assert_eq!(binary.eval_file_offset, 0x278fd0);
        assert_eq!(binary.tls_module_slot, 0x45aad0);
    }

    /// The slot of the ABI's general-dynamic sequence, as `rb_thread_current` of 3.3.8 has it
    /// at 0x235ab0: `data16 lea 0x225010(%rip),%rdi` at 0x235ab8 is slot 0x45aad0.
    #[test]
    fn general_dynamic_slot_from_code() {
        let code = [
            0xf3, 0x0f, 0x1e, 0xfa, // endbr64
            0x48, 0x83, 0xec, 0x08, // sub $8, %rsp
            0x66, 0x48, 0x8d, 0x3d, 0x10, 0x50, 0x22, 0x00, // data16 lea 0x225010(%rip)
            0x66, 0x66, 0x48, 0xe8, 0x33, 0x9c, 0xe0, 0xff, // call __tls_get_addr
        ];
        assert_eq!(general_dynamic_slot(&code, 0x235ab0), Some(0x45aad0));
        assert_eq!(general_dynamic_slot(&code[..16], 0x235ab0), None);
    }

    #[test]
    fn lines_from_decoded_changes() {
        let mut linetable = Vec::new();
        for (pos, line) in [(0u32, 10i32), (4, 11), (9, 13)] {
            linetable.extend_from_slice(&pos.to_le_bytes());
            linetable.extend_from_slice(&line.to_le_bytes());
        }
        let info = CodeInfo {
            name: "leaf".into(),
            file: "x.rb".into(),
            first_line: 9,
            linetable,
            minor: 1,
            compiled: Vec::new(),
        };
        // pc 5 runs the instruction at 4.
        assert_eq!(line_of(&info, 0), 10);
        assert_eq!(line_of(&info, 4), 10);
        assert_eq!(line_of(&info, 5), 11);
        assert_eq!(line_of(&info, 10), 13);
    }
}
