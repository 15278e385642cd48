//! CRuby (MRI) 3.1: detection of `libruby` by its symbols and `ruby_version`, the structure
//! offsets the kernel walk needs, and naming of iseqs (label, path, line from the `pc`).
//!
//! Debian ships no debug information for `libruby3.1` reachable here, so the offsets are a
//! table for 3.1, from Ruby 3.1's headers (`vm_core.h`: `rb_execution_context_t`,
//! `rb_control_frame_t` with `__bp__` and `jit_return`, 64 bytes; `rb_iseq_constant_body`
//! with `location` at 64 and `insns_info` at 120; `iseq.h`: `iseq_insn_info_entry` of 12
//! bytes with `node_id`; `include/ruby/internal/core/rstring.h`, `rarray.h`), and agree with
//! the OpenTelemetry profiler's table for 3.1 and with what a 3.1.2 process holds (the
//! integration test names a known chain and its lines from them). `ruby_current_ec` is
//! found through the `R_X86_64_DTPMOD64` relocation of its GOT slot (libruby is built with
//! the general-dynamic TLS model).

use tracekit_common::interp::{
    InterpProcess, NO_OFFSET, OFFSET_SLOTS,
    ruby::{
        BODY_ENCODED, CFP_EP, CFP_ISEQ, CFP_PC, CFP_SIZE, EC_CFP, EC_VM_STACK, EC_VM_STACK_SIZE,
        ISEQ_BODY,
    },
    runtime,
};

use super::{
    CodeInfo, Interpreters, bias_at, read_memory,
    registry::CodeReader,
    runtime::{Detected, Runtime, at_line, same_reader},
};
use crate::unwind::process::ExecMapping;

/// One minor version's layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Version {
    /// `3.minor`.
    pub minor: u8,
    cfp_size: u16,
    /// `rb_iseq_constant_body.iseq_size` (an `unsigned int`, in `VALUE`s).
    body_size: u64,
    body_pathobj: u64,
    body_label: u64,
    body_first_lineno: u64,
    body_insns_info: u64,
    body_insns_info_size: u64,
    body_succ_index_table: u64,
    /// `sizeof(struct iseq_insn_info_entry)` (`line_no` first).
    insn_info_entry: u64,
}

/// The versions known.
pub const VERSIONS: [Version; 1] = [Version {
    minor: 1,
    cfp_size: 64,
    body_size: 4,
    body_pathobj: 64,
    body_label: 80,
    body_first_lineno: 88,
    body_insns_info: 120,
    body_insns_info_size: 136,
    body_succ_index_table: 144,
    insn_info_entry: 12,
}];

/// The layout of `3.minor`, if known.
pub fn version(major: u8, minor: u8) -> Option<&'static Version> {
    if major != 3 {
        return None;
    }
    VERSIONS.iter().find(|v| v.minor == minor)
}

/// `(major, minor)` of a `ruby_version` string (`3.1.2`).
pub fn version_of(text: &str) -> Option<(u8, u8)> {
    let mut parts = text.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    parts.next()?;
    Some((major, minor))
}

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
        InterpProcess {
            eval_begin: self.eval.0.wrapping_add(bias),
            eval_end: (self.eval.0 + self.eval.1).wrapping_add(bias),
            state_address: self.tls_module_slot.wrapping_add(bias),
            runtime: runtime::RUBY,
            layout: 0,
            version_minor: self.version.minor,
            padding: [0; 5],
            offsets,
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

    fn detect(&self, _path: &str, file: &std::path::Path) -> Detected {
        detect(file)
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
    fn read_code(&self, pid: u32, code: u64, _generation: Option<u16>) -> Option<CodeInfo> {
        read_code(pid, self, code)
    }

    fn same(&self, other: &dyn CodeReader) -> bool {
        same_reader(self, other, |a, b| a.minor == b.minor)
    }
}

/// Checks `file` (a mapped `libruby` or `ruby`) for a Ruby VM.
fn detect(file: &std::path::Path) -> Detected {
    use blazesym::inspect::{Inspector, source::Elf, source::Source};
    let mut elf = Elf::new(file);
    elf.debug_syms = false;
    let names = ["rb_vm_exec", "ruby_version"];
    let inspector = Inspector::new();
    let Ok(found) = inspector.lookup(&Source::Elf(elf), &names) else {
        return Detected::None;
    };
    let first = |i: usize| found.get(i).and_then(|syms| syms.first());
    let (Some(eval), Some(version_sym)) = (first(0), first(1)) else {
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
    let Some((major, minor)) = version_of(&text) else {
        return Detected::unsupported(format!("a Ruby of an unknown version ({text:?})"));
    };
    let Some(version) = version(major, minor) else {
        return Detected::unsupported_version(
            text,
            format!("no layout for Ruby {major}.{minor} (known: 3.1)"),
        );
    };
    let (Some(eval_size), Some(eval_file_offset)) =
        (eval.size.filter(|&size| size > 0), eval.file_offset)
    else {
        return Detected::unsupported_version(text, "rb_vm_exec has no size or file offset");
    };
    let Some(tls_module_slot) = tls_module_slot(&data, "ruby_current_ec") else {
        return Detected::unsupported_version(
            text,
            "no general-dynamic TLS relocation of ruby_current_ec",
        );
    };
    let exec = (eval.addr, eval_size as u64);
    let (eval, eval_file_offset) = match vm_exec_core(&data, exec, eval_file_offset) {
        Some(core) => (
            core,
            eval_file_offset.wrapping_add(core.0.wrapping_sub(exec.0)),
        ),
        None => (exec, eval_file_offset),
    };
    Detected::found(Binary {
        version,
        eval,
        eval_file_offset,
        tls_module_slot,
    })
}

/// Smallest size taken for `vm_exec_core` (every instruction's handler: 60 KiB in 3.1.2).
const MIN_EXEC_CORE: u64 = 16 * 1024;

/// `vm_exec_core`'s `[start, size)`: the largest function (by its unwind information) that
/// `rb_vm_exec` (`exec`: start and size, at `exec_file_offset`) calls directly (`e8 rel32`
/// whose target starts a function), if at least [`MIN_EXEC_CORE`]. Its samples then read
/// as Ruby frames, where `rb_vm_exec` alone would leave its unnamed frame above them.
fn vm_exec_core(data: &[u8], exec: (u64, u64), exec_file_offset: u64) -> Option<(u64, u64)> {
    let file = object::File::parse(data).ok()?;
    let bounds = crate::unwind::table::function_bounds(&file);
    let start = exec_file_offset as usize;
    let code = data.get(start..start + exec.1 as usize)?;
    let mut best: Option<(u64, u64)> = None;
    for at in 0..code.len().saturating_sub(4) {
        if code[at] != 0xe8 {
            continue;
        }
        let rel = i32::from_le_bytes(code[at + 1..at + 5].try_into().ok()?);
        let target = (exec.0 + at as u64 + 5).wrapping_add_signed(i64::from(rel));
        let Ok(index) = bounds.binary_search_by_key(&target, |&(begin, _)| begin) else {
            continue;
        };
        let (begin, end) = bounds[index];
        let size = end - begin;
        if size >= MIN_EXEC_CORE && best.is_none_or(|(_, best)| size > best) {
            best = Some((begin, size));
        }
    }
    best
}

/// The address of the GOT slot the dynamic linker fills with `symbol`'s TLS module id
/// (`R_X86_64_DTPMOD64`), whose next word is its offset in the module's block.
fn tls_module_slot(data: &[u8], symbol: &str) -> Option<u64> {
    use object::{Object as _, ObjectSymbol as _, ObjectSymbolTable as _, RelocationFlags};
    const R_X86_64_DTPMOD64: u32 = 16;
    let file = object::File::parse(data).ok()?;
    let symbols = file.dynamic_symbol_table()?;
    file.dynamic_relocations()?.find_map(|(at, reloc)| {
        let RelocationFlags::Elf { r_type } = reloc.flags() else {
            return None;
        };
        let object::RelocationTarget::Symbol(index) = reloc.target() else {
            return None;
        };
        (r_type == R_X86_64_DTPMOD64 && symbols.symbol_by_index(index).ok()?.name().ok()? == symbol)
            .then_some(at)
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

/// A `String`'s bytes (3.1: embedded length in flags bits 14-18, no variable-width slots).
fn read_rstring(pid: u32, object: u64) -> Option<String> {
    let header = read_memory(pid, object, 40)?;
    let flags = word(&header, 0)?;
    if flags & T_MASK != T_STRING {
        return None;
    }
    let bytes = if flags & FL_USER1 != 0 {
        let length = word(&header, 16)? as usize;
        if length > MAX_READ {
            return None;
        }
        read_memory(pid, word(&header, 24)?, length)?
    } else {
        let length = ((flags >> 14) & 0x1f) as usize;
        header.get(16..16 + length)?.to_vec()
    };
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// An iseq's path: `pathobj` is a `String` or an `Array` `[path, realpath]`.
fn read_path(pid: u32, object: u64) -> Option<String> {
    let header = read_memory(pid, object, 40)?;
    let flags = word(&header, 0)?;
    match flags & T_MASK {
        T_STRING => read_rstring(pid, object),
        T_ARRAY => {
            let first = if flags & FL_USER1 != 0 {
                word(&header, 16)?
            } else {
                read_memory(pid, word(&header, 32)?, 8).and_then(|b| word(&b, 0))?
            };
            read_rstring(pid, first)
        }
        _ => None,
    }
}

/// Reads the iseq at `iseq` of process `pid`: its label, path, and its line table decoded
/// into `(position, line)` changes (8 bytes each, in [`CodeInfo::linetable`]).
pub fn read_code(pid: u32, v: &Version, iseq: u64) -> Option<CodeInfo> {
    let body = read_memory(pid, iseq + 16, 8).and_then(|b| word(&b, 0))?;
    let header = read_memory(pid, body, 160)?;
    let name = read_rstring(pid, word(&header, v.body_label)?)?;
    let file = read_path(pid, word(&header, v.body_pathobj)?).unwrap_or_default();
    // A Fixnum: (n << 1) | 1.
    let first_line = (word(&header, v.body_first_lineno)? as i64 >> 1) as i32;
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

    #[test]
    fn versions_from_strings() {
        assert_eq!(version_of("3.1.2"), Some((3, 1)));
        assert_eq!(version_of("2.7.8"), Some((2, 7)));
        assert_eq!(version_of("3.1"), None);
        assert!(version(3, 1).is_some());
        assert!(version(3, 3).is_none());
    }

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
        let Some(binary) = detect(std::path::Path::new(path)).binary::<Binary>() else {
            panic!("{path} not detected as Ruby");
        };
        eprintln!("{binary:x?}");
        assert_eq!(binary.version.minor, 1);
        assert!(binary.eval.1 >= MIN_EXEC_CORE, "{binary:x?}");
        assert_ne!(binary.tls_module_slot, 0);
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
