//! PHP 8.2 and 8.4 (Zend, non-ZTS: the CLI): detection by `execute_ex`, `executor_globals`
//! and the version in the binary's `X-Powered-By: PHP/8.x.y` literal, the structure
//! offsets the kernel walk needs (a table per minor version, each entry with its source),
//! and naming of functions (`Class::method`, file, and the line the kernel read from
//! `opline`).
//!
//! Debian's `php8.x` binaries are stripped and no debug information is reachable here, so
//! the offsets come from php-src's headers at the release, checked against the binary's
//! own code: `zend_get_executed_lineno` reads `executor_globals+0x1e8`
//! (`current_execute_data`), `func` at 0x18, `prev_execute_data` at 0x30,
//! `opline->lineno` at 0x18, and `zend_get_executed_filename_ex` reads
//! `op_array.filename` (0x98 in 8.2, 0xa8 in 8.4). How the executor globals are found did
//! not change in 8.4: a non-ZTS build still exports `executor_globals`, and
//! `current_execute_data` is still at 0x1e8 in it.

use tracekit_common::interp::{
    InterpProcess, NO_OFFSET, OFFSET_SLOTS,
    php::{EX_CALL_INFO, EX_FUNC, EX_OPLINE, EX_PREVIOUS, FUNC_TYPE, OP_LINENO},
    runtime,
};

use super::{
    CodeInfo, Interpreters, bias_at, read_memory,
    registry::CodeReader,
    runtime::{Detected, Runtime, at_line, same_reader},
    text::{MAX_FILE, MAX_NAME, plausible_text},
};
use crate::unwind::process::ExecMapping;

/// One minor version's layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Version {
    /// `8.minor`.
    pub minor: u8,
    /// The release the offsets were read at (`php-8.4.27`).
    pub tag: &'static str,
    /// `executor_globals.current_execute_data` (`Zend/zend_globals.h`).
    pub current_execute_data: u64,
    /// `zend_function.common.function_name` (`Zend/zend_compile.h`).
    pub function_name: u64,
    /// `zend_function.common.scope`.
    pub scope: u64,
    /// `zend_op_array.filename`.
    pub filename: u64,
    /// `zend_op_array.line_start`.
    pub line_start: u64,
}

/// The versions known. `zend_execute_data` (opline 0, func 24, This 32, prev 48),
/// `zend_op.lineno` (24), `zend_string` (len 16, val 24) and the call info's
/// `ZEND_CALL_TOP` are the same in both.
pub const VERSIONS: [Version; 2] = [
    // php-8.2 (`Zend/zend_compile.h`): the common part of `zend_op_array` is type,
    // arg_flags, fn_flags, function_name 8, scope 16, prototype, num_args,
    // required_num_args, arg_info, attributes, T, run_time_cache (72 bytes); then
    // cache_size, last_var, last, opcodes, static_variables_ptr, static_variables, vars,
    // refcount, last_live_range, last_try_catch, live_range, try_catch_array, filename 152,
    // line_start 160. Debian's 8.2 reads filename at 0x98.
    Version {
        minor: 2,
        tag: "php-8.2.36",
        current_execute_data: 0x1e8,
        function_name: 8,
        scope: 16,
        filename: 152,
        line_start: 160,
    },
    // php-8.4 (`Zend/zend_compile.h`): the common part of `zend_op_array` grew by 16
    // bytes (8.4 adds `doc_comment` and, for property hooks, `prop_info` to it), so
    // filename is at 168 and line_start, which follows it, at 176. Debian 13's 8.4.27
    // reads filename at 0xa8 (`zend_get_executed_filename_ex`) and
    // `current_execute_data` at 0x1e8 (`zend_get_executed_lineno`). Only names come from
    // here: lines are the kernel's `opline->lineno`.
    Version {
        minor: 4,
        tag: "php-8.4.27",
        current_execute_data: 0x1e8,
        function_name: 8,
        scope: 16,
        filename: 168,
        line_start: 176,
    },
];

/// The versions known, as messages list them (`8.2, 8.4`).
pub fn known() -> String {
    let known: Vec<String> = VERSIONS.iter().map(|v| format!("8.{}", v.minor)).collect();
    known.join(", ")
}

/// The layout of `8.minor`, if known.
pub fn version(major: u8, minor: u8) -> Option<&'static Version> {
    if major != 8 {
        return None;
    }
    VERSIONS.iter().find(|v| v.minor == minor)
}

/// `(major, minor)` from Zend's version banner's PHP version or a file name (`php8.2`).
pub fn version_of_name(path: &str) -> Option<(u8, u8)> {
    let name = path.rsplit('/').next()?;
    let rest = name.strip_prefix("php")?;
    let (major, rest) = rest.split_once('.')?;
    let minor: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// `(major, minor)` and the whole version from the `PHP_VERSION` string in the binary
/// (`X-Powered-By: PHP/8.2.36` is how the SAPI announces it; the same literal is in every
/// build).
fn version_in_binary(data: &[u8]) -> Option<((u8, u8), String)> {
    let needle = b"X-Powered-By: PHP/";
    let at = data.windows(needle.len()).position(|w| w == needle)? + needle.len();
    let text: String = data[at..]
        .iter()
        .take(16)
        .take_while(|&&b| b != 0)
        .map(|&b| b as char)
        .collect();
    let mut parts = text.split('.');
    let version = (parts.next()?.parse().ok()?, parts.next()?.parse().ok()?);
    Some((version, text))
}

/// A detected PHP binary, in its own ELF addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binary {
    pub version: &'static Version,
    /// `execute_ex`: start and size.
    pub eval: (u64, u64),
    pub eval_file_offset: u64,
    /// `executor_globals`.
    pub globals: u64,
}

impl Binary {
    /// The kernel's view of a process mapping this binary with load bias `bias`.
    pub fn process(&self, bias: u64) -> InterpProcess {
        let mut offsets = [NO_OFFSET; OFFSET_SLOTS];
        offsets[EX_OPLINE] = 0;
        offsets[EX_FUNC] = 24;
        // `This` (a zval) at 32: its `u1.type_info`.
        offsets[EX_CALL_INFO] = 40;
        offsets[EX_PREVIOUS] = 48;
        offsets[OP_LINENO] = 24;
        offsets[FUNC_TYPE] = 0;
        InterpProcess {
            eval_begin: self.eval.0.wrapping_add(bias),
            eval_end: (self.eval.0 + self.eval.1).wrapping_add(bias),
            state_address: (self.globals + self.version.current_execute_data).wrapping_add(bias),
            runtime: runtime::PHP,
            layout: 0,
            version_minor: self.version.minor,
            padding: [0; 5],
            offsets,
            cold_begin: 0,
            cold_end: 0,
        }
    }
}

/// PHP in the runtime table.
pub struct Php;

/// PHP's entry in `RUNTIMES`, the table of runtimes.
pub static PHP: Php = Php;

/// The module column of PHP frames.
pub const MODULE: &str = "[php]";

impl Runtime for Php {
    fn tags(&self) -> &'static [u8] {
        &[runtime::PHP]
    }

    fn module(&self) -> &'static str {
        MODULE
    }

    fn name(&self) -> &'static str {
        "php"
    }

    fn language(&self) -> &'static str {
        "PHP"
    }

    fn claims(&self, name: &str) -> bool {
        name.starts_with("php") || name.starts_with("libphp")
    }

    fn detect(&self, path: &str, file: &std::path::Path) -> Detected {
        detect(path, file)
    }

    fn symbols(&self, info: &CodeInfo, units: u32, _leaf: bool) -> Vec<(String, bool)> {
        // The kernel recorded `opline->lineno` itself.
        at_line(info, units as i32)
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
        let Some(bias) = bias_at(self.eval.0, self.eval_file_offset, mapping) else {
            return false;
        };
        let name = format!("PHP 8.{}", self.version.minor);
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

/// Checks `file` (a mapping of `path`) for a Zend VM.
fn detect(path: &str, file: &std::path::Path) -> Detected {
    use blazesym::inspect::{Inspector, source::Elf, source::Source};
    let mut elf = Elf::new(file);
    elf.debug_syms = false;
    let names = ["execute_ex", "executor_globals", "tsrm_get_ls_cache"];
    let inspector = Inspector::new();
    let Ok(found) = inspector.lookup(&Source::Elf(elf), &names) else {
        return Detected::None;
    };
    let first = |i: usize| found.get(i).and_then(|syms| syms.first());
    let Some(eval) = first(0) else {
        return Detected::None;
    };
    let Some(globals) = first(1) else {
        return Detected::unsupported(if first(2).is_some() {
            "PHP built thread-safe (ZTS): executor globals are per thread, not read"
        } else {
            "PHP without executor_globals"
        });
    };
    let found_version = std::fs::read(file)
        .ok()
        .and_then(|data| version_in_binary(&data))
        .or_else(|| {
            let (major, minor) = version_of_name(path)?;
            Some(((major, minor), format!("{major}.{minor}")))
        });
    let Some(((major, minor), shown)) = found_version else {
        return Detected::unsupported("PHP of an unknown version");
    };
    let Some(version) = version(major, minor) else {
        return Detected::unsupported_version(
            shown,
            format!("no layout for PHP {major}.{minor} (known: {})", known()),
        );
    };
    let (Some(eval_size), Some(eval_file_offset)) =
        (eval.size.filter(|&size| size > 0), eval.file_offset)
    else {
        return Detected::unsupported_version(shown, "execute_ex has no size or file offset");
    };
    Detected::found(Binary {
        version,
        eval: (eval.addr, eval_size as u64),
        eval_file_offset,
        globals: globals.addr,
    })
}

/// Most bytes of a string read from a process.
const MAX_READ: u64 = 64 * 1024;

/// A `zend_string`'s text (`len` at 16, `val` at 24) of 1 to `max` characters
/// ([`plausible_text`]); `Some(None)` for a null pointer, `None` when it is unreadable or
/// no such text (the frame is named by none of it).
fn read_string(pid: u32, object: u64, max: usize) -> Option<Option<String>> {
    if object == 0 {
        return Some(None);
    }
    let header = read_memory(pid, object + 16, 8)?;
    let length = u64::from_le_bytes(header[..8].try_into().ok()?);
    if length > MAX_READ {
        return None;
    }
    let bytes = read_memory(pid, object + 24, length as usize)?;
    plausible_text(&bytes, max).map(Some)
}

/// Reads the `zend_function` at `function` of process `pid`: `Class::name` (`<main>` for a
/// file's top level) and its file. Lines come with each frame ([`CodeInfo::line`] is not
/// used: the kernel records `opline->lineno`).
pub fn read_code(pid: u32, v: &Version, function: u64) -> Option<CodeInfo> {
    let header = read_memory(pid, function, (v.filename.max(v.line_start) + 8) as usize)?;
    let word = |at: u64| -> Option<u64> {
        let at = at as usize;
        Some(u64::from_le_bytes(header.get(at..at + 8)?.try_into().ok()?))
    };
    let name =
        read_string(pid, word(v.function_name)?, MAX_NAME)?.unwrap_or_else(|| "<main>".into());
    let scope = word(v.scope)?;
    let class = match scope {
        0 => None,
        _ => {
            let class = read_memory(pid, scope + 8, 8)?;
            read_string(
                pid,
                u64::from_le_bytes(class[..8].try_into().ok()?),
                MAX_NAME,
            )?
        }
    };
    let name = match class {
        Some(class) => format!("{class}::{name}"),
        None => name,
    };
    let file = read_string(pid, word(v.filename)?, MAX_FILE)?.unwrap_or_default();
    let at = v.line_start as usize;
    let first_line = i32::from_le_bytes(header.get(at..at + 4)?.try_into().ok()?);
    Some(CodeInfo {
        name,
        file,
        first_line,
        linetable: Vec::new(),
        minor: v.minor,
        compiled: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Debian's php8.2: 8.2, `execute_ex` and `executor_globals` found.
    #[test]
    fn detects_debian_php() {
        let path = "/usr/bin/php8.2";
        if !std::path::Path::new(path).exists() {
            eprintln!("skipped: no {path} (apt-get install php8.2-cli)");
            return;
        }
        let Some(binary) = detect(path, std::path::Path::new(path)).binary::<Binary>() else {
            panic!("{path} not detected as PHP");
        };
        eprintln!("{binary:x?}");
        assert_eq!(binary.version.minor, 2);
        assert!(binary.eval.1 > 0 && binary.globals != 0);
    }

    /// Debian 13's php8.4 (8.4.27), in the Debian trixie root of the runtime tests:
    /// `execute_ex` (0x3cf110, 0xa5d6 bytes) and `executor_globals` (0x5f3c40) exported,
    /// its version read from the binary.
    #[test]
    fn detects_debian_trixie_php_8_4() {
        let Some(path) = crate::unwind::interp::trixie_file("usr/bin/php8.4") else {
            return;
        };
        let detected = detect(path.to_str().unwrap(), &path);
        let Some(binary) = detected.binary::<Binary>() else {
            panic!("{} not detected as PHP: {detected:?}", path.display());
        };
        assert_eq!(binary.version.minor, 4);
        assert_eq!(binary.eval, (0x3cf110, 0xa5d6));
        assert_eq!(binary.globals, 0x5f3c40);
        assert_eq!(
            binary.process(0).state_address,
            0x5f3c40 + 0x1e8,
            "&executor_globals.current_execute_data"
        );
    }

    #[test]
    fn versions_from_names_and_banner() {
        assert_eq!(version_of_name("/usr/bin/php8.2"), Some((8, 2)));
        assert_eq!(version_of_name("/usr/sbin/php-fpm8.2"), None);
        assert_eq!(version_of_name("/usr/bin/php"), None);
        assert_eq!(
            version_in_binary(b"\0X-Powered-By: PHP/8.2.36\0more"),
            Some(((8, 2), "8.2.36".to_string()))
        );
        assert_eq!(
            version_in_binary(b"X-Powered-By: PHP/8.4.27\0"),
            Some(((8, 4), "8.4.27".to_string()))
        );
        assert_eq!(known(), "8.2, 8.4");
        assert!(version(8, 3).is_none());
        assert!(version(8, 5).is_none());
        let v82 = version(8, 2).unwrap();
        assert_eq!(
            (v82.current_execute_data, v82.filename, v82.line_start),
            (0x1e8, 152, 160)
        );
        let v84 = version(8, 4).unwrap();
        assert_eq!(
            (
                v84.current_execute_data,
                v84.function_name,
                v84.scope,
                v84.filename,
                v84.line_start
            ),
            (0x1e8, 8, 16, 168, 176)
        );
    }
}
