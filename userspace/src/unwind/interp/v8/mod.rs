//! V8 (Node.js): detection by the binary's postmortem symbols (`v8dbg_*`, which V8 exports
//! for debuggers: frame offsets, instance types, class field offsets), the offsets the
//! kernel's frame-pointer walk needs (`tracekit_common::interp::v8`), and naming of the
//! recorded `SharedFunctionInfo`s: the function's name, its script's name and the line
//! ([`lines`]), read from the process's memory.
//!
//! The symbols' values are read from the binary's ELF sections with the `object` crate
//! (values in `.bss` are zero), from its static or dynamic symbol table: the binary is the
//! `node` executable or, in Debian's builds, the `libnode.so` it links (addresses are then
//! the library's). The embedded builtins are found by `v8_Default_embedded_blob_code_`, or
//! where the library hides it, through V8's accessors of it or, without those, as the code
//! V8 gives no unwind information ([`embedded`]). A binary
//! without postmortem symbols (a V8 built without postmortem support), with pointer
//! compression (4-byte tagged words), or without the builtins keeps its native frames, and
//! the report (`-v`) says why.
//!
//! A function's name is its `SharedFunctionInfo`'s `name_or_scope_info`: the name itself,
//! or a `ScopeInfo` whose first string after its context locals is the name (the layout
//! V8 documents no further; the OpenTelemetry profiler reads it the same way). Its script
//! is `script_or_debug_info` (V8 13: `script`) when that is a `Script`. Class fields are
//! found by `v8dbg_class_CLASS__FIELD__` whatever type follows (V8 13 spells tagged fields
//! `Tagged_..._`). Strings are sequential (one- or
//! two-byte), cons, thin, sliced, or external and cached (node's own sources: the data's
//! address is the word after `ExternalString::resource`); uncached external strings are
//! not read.

use std::{
    collections::HashMap,
    sync::atomic::{AtomicU64, Ordering},
};

use tracekit_common::interp::{
    CodeKey, InterpProcess, InterpStat, NO_OFFSET, OFFSET_SLOTS, decode_frame, encode_frame,
    runtime, v8 as slots,
};

use super::{
    CodeInfo, read_memory, read_memory_prefix,
    registry::{CodeReader, remember_code},
    runtime::{Detected, Runtime, code_symbols, same_reader},
};
use crate::unwind::process::ExecMapping;

/// Instance types of the `JSFunction` classes after `JS_FUNCTION_TYPE` (class
/// constructors and the like, V8 9.6+): they are not named in the `v8dbg_*` symbols.
const FUNCTION_TYPES: u16 = 15;

/// One binary's V8 layout, from its `v8dbg_*` symbols.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Version {
    /// V8's `major.minor` (`v8::internal::Version`), for reports.
    pub major: u16,
    pub minor: u16,
    fp_context: u16,
    fp_function: u16,
    fp_bytecode_offset: u16,
    fp_bytecode_array: u16,
    object_map: u16,
    map_instance_type: u16,
    function_shared: u16,
    shared_name_or_scope_info: u16,
    shared_script_or_debug_info: u16,
    script_name: u16,
    string_length: u16,
    seq_one_byte_chars: u16,
    seq_two_byte_chars: u16,
    cons_first: u16,
    cons_second: u16,
    thin_actual: u16,
    sliced_parent: u16,
    sliced_offset: u16,
    type_function: u16,
    type_shared_function_info: u16,
    type_script: u16,
    type_scope_info: u16,
    type_bytecode_array: u16,
    first_nonstring_type: u16,
    representation_mask: u16,
    encoding_mask: u16,
    one_byte_tag: u16,
    seq_tag: u16,
    cons_tag: u16,
    thin_tag: u16,
    sliced_tag: u16,
    scope_info_first_vars: u16,
    scope_info_context_locals: u16,
    /// Cached external strings (node's own sources); `None`: not read.
    external: Option<External>,
    /// Where lines are read ([`lines`]); `None`: a symbol is missing, and frames are
    /// `function (script)` with no line.
    lines: Option<LineLayout>,
    /// Where optimized code is read ([`compiled`]); `None`: optimized frames are recorded
    /// as their function, at its definition line.
    compiled: Option<CompiledLayout>,
    /// Where replaced code is found from a pc ([`replaced`]); `None`: replaced frames are
    /// named as their function.
    replaced: Option<replaced::ReplacedLayout>,
}

/// Where the characters of a cached external string are: `ExternalString::resource`, and
/// the word after it holds the data's address (V8 11.3; V8 states no symbol for it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct External {
    resource: u16,
    one_byte_type: u16,
    two_byte_type: u16,
}

/// The cached external strings' layout, `None` when a symbol is missing.
fn external_strings(
    field: &impl Fn(&str) -> Result<u16, String>,
    member: &impl Fn(&str, &[&str]) -> Result<u16, String>,
) -> Option<External> {
    Some(External {
        resource: member("ExternalString", &["resource"]).ok()?,
        one_byte_type: field("v8dbg_type_ExternalOneByteString__EXTERNAL_ONE_BYTE_STRING_TYPE")
            .ok()?,
        // V8 13 spells it `EXTERNAL_TWO_BYTE_STRING_TYPE`.
        two_byte_type: field("v8dbg_type_ExternalTwoByteString__EXTERNAL_STRING_TYPE")
            .or_else(|_| field("v8dbg_type_ExternalTwoByteString__EXTERNAL_TWO_BYTE_STRING_TYPE"))
            .ok()?,
    })
}

/// A detected V8 binary, in its own ELF addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binary {
    pub version: Version,
    /// The embedded builtins' code: start and size.
    pub builtins: (u64, u64),
    /// The builtins' file offset (for the load bias).
    pub builtins_file_offset: u64,
    /// Why optimized frames get their definition line, not their current one (for `-v`).
    pub compiled_missing: Option<String>,
    /// `IsolateGroup::default_isolate_group_` (a pointer to the process's `IsolateGroup`),
    /// where V8 13.6's functions' code is found (`CompiledLayout::dispatch_table`).
    pub isolate_group: Option<u64>,
}

impl Binary {
    /// The kernel's view of a process that runs this binary's builtins with bias `bias`
    /// (their mapping's address less their ELF address) and loaded the binary with bias
    /// `load_bias` (the same unless the builtins have a mapping of their own).
    pub fn process(&self, bias: u64, load_bias: u64) -> InterpProcess {
        let v = &self.version;
        let mut offsets = [NO_OFFSET; OFFSET_SLOTS];
        offsets[slots::FP_CONTEXT] = v.fp_context;
        offsets[slots::FP_FUNCTION] = v.fp_function;
        offsets[slots::FP_BYTECODE_OFFSET] = v.fp_bytecode_offset;
        offsets[slots::FP_BYTECODE_ARRAY] = v.fp_bytecode_array;
        offsets[slots::OBJECT_MAP] = v.object_map;
        offsets[slots::MAP_INSTANCE_TYPE] = v.map_instance_type;
        offsets[slots::FUNCTION_SHARED] = v.function_shared;
        offsets[slots::TYPE_FUNCTION_FIRST] = v.type_function;
        offsets[slots::TYPE_FUNCTION_LAST] = v.type_function + FUNCTION_TYPES - 1;
        offsets[slots::TYPE_SHARED_FUNCTION_INFO] = v.type_shared_function_info;
        offsets[slots::TYPE_BYTECODE_ARRAY] = v.type_bytecode_array;
        if let Some(compiled) = v.compiled {
            offsets[slots::FUNCTION_CODE] = compiled.function_code;
            offsets[slots::CODE_INSTRUCTIONS] = compiled.instruction_start
                | compiled.instruction_size << 8
                | if compiled.instructions_inline {
                    slots::CODE_INSTRUCTIONS_INLINE
                } else {
                    0
                };
            offsets[slots::TYPE_CODE] = compiled.type_code;
        }
        let mut state_address = 0;
        if let (Some(table), Some(group)) = (
            v.compiled.and_then(|compiled| compiled.dispatch_table),
            self.isolate_group,
        ) {
            offsets[slots::DISPATCH_TABLE] = table;
            state_address = group.wrapping_add(load_bias);
        }
        InterpProcess {
            eval_begin: self.builtins.0.wrapping_add(bias),
            eval_end: (self.builtins.0 + self.builtins.1).wrapping_add(bias),
            state_address,
            runtime: runtime::V8,
            layout: 0,
            version_minor: v.minor.min(255) as u8,
            padding: [0; 5],
            offsets,
            cold_begin: 0,
            cold_end: 0,
        }
    }
}

/// Whether a mapped file's name is a Node.js binary or library.
pub fn is_node(name: &str) -> bool {
    name == "node" || name == "nodejs" || name.starts_with("libnode.so")
}

/// The symbols a V8 binary is read by: `v8dbg_*`, the builtins and V8's version.
#[derive(Default)]
struct Symbols {
    values: HashMap<String, i64>,
    /// The builtins' ELF address and file offset.
    builtins: Option<(u64, u64)>,
    builtins_size: Option<i64>,
    /// Why the builtins were not found ([`embedded`]), when [`BUILTINS`] is not exported.
    builtins_unread: Option<String>,
    /// The ELF address of [`ISOLATE_GROUP`] (or the one `IsolateGroup::GetDefault` loads).
    isolate_group: Option<u64>,
    /// Whether the file defines any symbol of V8's (`v8::`): Debian's `node` is a small
    /// executable whose V8 is in `libnode.so`, which is checked on its own.
    defines_v8: bool,
}

const BUILTINS: &str = "v8_Default_embedded_blob_code_";
const BUILTINS_SIZE: &str = "v8_Default_embedded_blob_code_size_";
const MAJOR: &str = "_ZN2v88internal7Version6major_E";
const MINOR: &str = "_ZN2v88internal7Version6minor_E";
/// `v8::internal::IsolateGroup::default_isolate_group_` (V8 12.8+; in the static symbol
/// table, in `.bss`).
const ISOLATE_GROUP: &str = "_ZN2v88internal12IsolateGroup22default_isolate_group_E";

/// The 4-byte values of the interesting symbols of ELF `data` (0 for `.bss`), and the
/// builtins' address and file offset.
fn read_symbols(data: &[u8]) -> Result<Symbols, String> {
    use object::{Object as _, ObjectSection as _, ObjectSymbol as _, SectionKind};
    let file = object::File::parse(data).map_err(|err| format!("not an ELF file: {err}"))?;
    let mut symbols = Symbols::default();
    let (mut accessors, mut get_default) = ((None, None), None);
    for symbol in file.symbols().chain(file.dynamic_symbols()) {
        let Ok(name) = symbol.name() else { continue };
        if !symbols.defines_v8 && name.starts_with("_ZN2v8") && symbol.is_definition() {
            symbols.defines_v8 = true;
        }
        if name == embedded::CODE_ACCESSOR {
            accessors.0 = Some(symbol.address());
        } else if name == embedded::SIZE_ACCESSOR {
            accessors.1 = Some(symbol.address());
        } else if name == embedded::GET_DEFAULT {
            get_default = Some(symbol.address());
        }
        if name == ISOLATE_GROUP {
            symbols.isolate_group = Some(symbol.address());
            continue;
        }
        let wanted = name.starts_with("v8dbg_")
            || name == BUILTINS
            || name == BUILTINS_SIZE
            || name == MAJOR
            || name == MINOR;
        if !wanted {
            continue;
        }
        let Some(section) = symbol
            .section_index()
            .and_then(|index| file.section_by_index(index).ok())
        else {
            continue;
        };
        if name == BUILTINS {
            if let Some((file_offset, _)) = section.file_range() {
                let at = symbol.address() - section.address() + file_offset;
                symbols.builtins = Some((symbol.address(), at));
            }
            continue;
        }
        let value = match section.kind() {
            SectionKind::UninitializedData => 0,
            _ => match section.data_range(symbol.address(), 4) {
                Ok(Some(bytes)) => i64::from(i32::from_le_bytes(bytes.try_into().unwrap())),
                _ => continue,
            },
        };
        if name == BUILTINS_SIZE {
            symbols.builtins_size = Some(value);
        } else {
            symbols.values.insert(name.to_string(), value);
        }
    }
    if let (None, (Some(code_at), Some(size_at))) = (symbols.builtins, accessors) {
        match embedded::from_accessors(&file, code_at, size_at) {
            Ok((start, file_offset, size)) => {
                symbols.builtins = Some((start, file_offset));
                symbols.builtins_size = i64::try_from(size).ok();
            }
            Err(reason) => symbols.builtins_unread = Some(reason),
        }
    }
    if symbols.isolate_group.is_none() {
        symbols.isolate_group = get_default.and_then(|at| embedded::isolate_group_of(&file, at));
    }
    let postmortem = symbols.values.keys().any(|name| name.starts_with("v8dbg_"));
    if symbols.builtins.is_none() && postmortem {
        let bounds = crate::unwind::table::function_bounds(&file);
        match embedded::from_unwind_gap(&file, &bounds) {
            Ok((start, file_offset, size)) => {
                symbols.builtins = Some((start, file_offset));
                symbols.builtins_size = i64::try_from(size).ok();
            }
            Err(reason) => {
                let accessors = symbols.builtins_unread.take();
                let reasons = accessors.into_iter().chain([reason]);
                symbols.builtins_unread = Some(reasons.collect::<Vec<_>>().join(", and "));
            }
        }
    }
    Ok(symbols)
}

/// The value of `v8dbg_class_{class}__{field}__*` (any type suffix) and the symbol's name;
/// `Ok(None)`: none. Spellings that disagree (V8 13 states some fields twice, as `Context`
/// and `Tagged_Context_`) are an error naming both.
fn class_field(
    symbols: &Symbols,
    class: &str,
    field: &str,
) -> Result<Option<(String, i64)>, String> {
    let prefix = format!("v8dbg_class_{class}__{field}__");
    let mut found: Option<(String, i64)> = None;
    let mut names: Vec<(&String, &i64)> = symbols
        .values
        .iter()
        .filter(|(name, _)| name.starts_with(&prefix))
        .collect();
    names.sort();
    for (name, &v) in names {
        match &found {
            Some((first, was)) if *was != v => {
                return Err(format!("{first} = {was} but {name} = {v}"));
            }
            Some(_) => {}
            None => found = Some((name.clone(), v)),
        }
    }
    Ok(found)
}

/// V8, as Node.js runs it, in the runtime table.
pub struct Node;

/// V8's entry in `RUNTIMES`, the table of runtimes.
pub static V8: Node = Node;

/// The module column of JavaScript (V8) frames.
pub const MODULE: &str = "[js]";

impl Runtime for Node {
    fn tags(&self) -> &'static [u8] {
        &[runtime::V8, runtime::V8_REPLACED]
    }

    fn module(&self) -> &'static str {
        MODULE
    }

    fn name(&self) -> &'static str {
        "node"
    }

    fn language(&self) -> &'static str {
        "JavaScript"
    }

    fn claims(&self, name: &str) -> bool {
        is_node(name)
    }

    fn before_tables(&self) -> bool {
        true
    }

    fn detect(&self, _path: &str, file: &std::path::Path) -> Detected {
        detect(file)
    }

    fn symbols(&self, info: &CodeInfo, offset: u32, _leaf: bool) -> Vec<(String, bool)> {
        if info.compiled.is_empty() {
            vec![(symbol(info, offset), false)]
        } else {
            compiled::frames(info, offset)
        }
    }

    /// A replaced frame is named from the code found around its pc, else as its function.
    fn frames(&self, pid: u32, word: u64, next: Option<u64>, leaf: bool) -> Vec<(String, bool)> {
        match decode_frame(word) {
            Some((runtime::V8_REPLACED, shared, low_bits)) => {
                replaced::replaced_frames(pid, shared, low_bits).unwrap_or_else(|| {
                    let function = encode_frame(runtime::V8, shared, 0);
                    code_symbols(self, pid, function, None, leaf)
                })
            }
            _ => code_symbols(self, pid, word, next, leaf),
        }
    }

    /// A replaced frame's pc is looked up at once; an optimized `Code` comes with its
    /// generation (never 0), a `SharedFunctionInfo` with none.
    fn announced(&self, key: &CodeKey) {
        if key.runtime == u16::from(runtime::V8_REPLACED) {
            replaced::remember_replaced(key.pid, key.code);
            return;
        }
        let generation = (key.generation != 0).then_some(key.generation);
        remember_code(key.pid, key.code, generation);
    }

    fn report(&self, interpreters: &super::Interpreters) -> String {
        interpreters.v8_report()
    }
}

impl super::runtime::Binary for Binary {
    fn load(
        &self,
        interpreters: &mut super::Interpreters,
        pid: u32,
        _path: &str,
        mapping: &ExecMapping,
        mappings: &[ExecMapping],
    ) -> bool {
        interpreters.publish_v8(pid, self, mapping, mappings)
    }
}

impl CodeReader for Version {
    fn read_code(&self, pid: u32, code: u64, generation: Option<u16>) -> Option<CodeInfo> {
        read_code(pid, self, code, generation)
    }

    fn same(&self, other: &dyn CodeReader) -> bool {
        same_reader(self, other, |a, b| a == b)
    }
}

/// Checks `file` (a mapping of a Node.js binary) for V8's postmortem symbols.
fn detect(file: &std::path::Path) -> Detected {
    let data = match std::fs::File::open(file).and_then(|f| {
        // SAFETY: a read-only private mapping of an executable; it is only read.
        unsafe { memmap2::Mmap::map(&f) }
    }) {
        Ok(data) => data,
        Err(err) => return Detected::unsupported(format!("reading the binary: {err}")),
    };
    match read_symbols(&data).and_then(|symbols| binary(&symbols)) {
        Ok(Some(binary)) => Detected::found(binary),
        Ok(None) => Detected::None,
        Err(reason) => Detected::unsupported(reason),
    }
}

/// The layout stated by `symbols`; `Ok(None)`: no V8 in the binary.
fn binary(symbols: &Symbols) -> Result<Option<Binary>, String> {
    if symbols
        .values
        .keys()
        .all(|name| !name.starts_with("v8dbg_"))
    {
        if !symbols.defines_v8 {
            return Ok(None);
        }
        return Err("V8 without postmortem symbols (v8dbg_*)".into());
    }
    let value = |name: &str| -> Result<i64, String> {
        symbols
            .values
            .get(name)
            .copied()
            .ok_or_else(|| format!("no {name} symbol"))
    };
    let small = |v: i64, name: &str| -> Result<u16, String> {
        u16::try_from(v).map_err(|_| format!("{name} = {v} is out of range"))
    };
    let below_fp = |name: &str| -> Result<u16, String> {
        let v = value(name)?;
        small(-v, name)
    };
    let field = |name: &str| -> Result<u16, String> { small(value(name)?, name) };
    // A class field, `v8dbg_class_CLASS__FIELD__TYPE`, whatever its TYPE is spelled
    // (`Object` in V8 11, `Tagged_NameOrScopeInfoT_` in 13.x): the first of `names` found.
    let member = |class: &str, names: &[&str]| -> Result<u16, String> {
        for name in names {
            let found = class_field(symbols, class, name)?;
            if let Some((symbol, v)) = found {
                return small(v, &symbol);
            }
        }
        Err(format!("no v8dbg_class_{class}__{}__* symbol", names[0]))
    };
    if value("v8dbg_TaggedSize")? != 8 || value("v8dbg_SystemPointerSize")? != 8 {
        return Err("V8 with pointer compression (4-byte tagged words): not unwound".into());
    }
    if value("v8dbg_HeapObjectTag")? != 1
        || value("v8dbg_HeapObjectTagMask")? != 3
        || value("v8dbg_SmiShiftSize")? != 31
    {
        return Err("V8 with an unknown pointer tagging".into());
    }
    let (Some((builtins, builtins_file_offset)), Some(size)) =
        (symbols.builtins, symbols.builtins_size)
    else {
        return Err(match &symbols.builtins_unread {
            Some(reason) => format!("no {BUILTINS} symbol (the embedded builtins), and {reason}"),
            None => format!("no {BUILTINS} symbol (the embedded builtins)"),
        });
    };
    let version = Version {
        major: small(symbols.values.get(MAJOR).copied().unwrap_or(0), MAJOR)?,
        minor: small(symbols.values.get(MINOR).copied().unwrap_or(0), MINOR)?,
        fp_context: below_fp("v8dbg_off_fp_context_or_frame_type")
            .or_else(|_| below_fp("v8dbg_off_fp_context"))?,
        fp_function: below_fp("v8dbg_off_fp_function")?,
        fp_bytecode_offset: below_fp("v8dbg_off_fp_bytecode_offset")?,
        fp_bytecode_array: below_fp("v8dbg_off_fp_bytecode_array")?,
        object_map: member("HeapObject", &["map"])?,
        map_instance_type: member("Map", &["instance_type"])?,
        function_shared: member("JSFunction", &["shared"])?,
        shared_name_or_scope_info: member("SharedFunctionInfo", &["name_or_scope_info"])?,
        // V8 13 keeps the debug info apart: the field is `script` (`raw_script` its alias).
        shared_script_or_debug_info: member(
            "SharedFunctionInfo",
            &["script_or_debug_info", "script", "raw_script"],
        )?,
        script_name: member("Script", &["name"])?,
        string_length: member("String", &["length"])?,
        seq_one_byte_chars: member("SeqOneByteString", &["chars"])?,
        seq_two_byte_chars: member("SeqTwoByteString", &["chars"])?,
        cons_first: member("ConsString", &["first"])?,
        cons_second: member("ConsString", &["second"])?,
        thin_actual: member("ThinString", &["actual"])?,
        sliced_parent: member("SlicedString", &["parent"])?,
        sliced_offset: member("SlicedString", &["offset"])?,
        type_function: field("v8dbg_type_JSFunction__JS_FUNCTION_TYPE")?,
        type_shared_function_info: field(
            "v8dbg_type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE",
        )?,
        type_script: field("v8dbg_type_Script__SCRIPT_TYPE")?,
        type_scope_info: field("v8dbg_type_ScopeInfo__SCOPE_INFO_TYPE")?,
        type_bytecode_array: field("v8dbg_type_BytecodeArray__BYTECODE_ARRAY_TYPE")?,
        first_nonstring_type: field("v8dbg_FirstNonstringType")?,
        representation_mask: field("v8dbg_StringRepresentationMask")?,
        encoding_mask: field("v8dbg_StringEncodingMask")?,
        one_byte_tag: field("v8dbg_OneByteStringTag")?,
        seq_tag: field("v8dbg_SeqStringTag")?,
        cons_tag: field("v8dbg_ConsStringTag")?,
        thin_tag: field("v8dbg_ThinStringTag")?,
        sliced_tag: field("v8dbg_SlicedStringTag")?,
        external: external_strings(&field, &member),
        scope_info_first_vars: field("v8dbg_scopeinfo_idx_first_vars")?,
        scope_info_context_locals: field("v8dbg_scopeinfo_idx_ncontextlocals")?,
        lines: None,
        compiled: None,
        replaced: None,
    };
    let lines = lines::layout(&field, &member, (version.major, version.minor));
    let compiled = match &lines {
        Ok(_) => compiled::layout(
            &field,
            &member,
            (version.major, version.minor),
            version.function_shared,
        )
        .and_then(|compiled| match compiled.dispatch_table {
            Some(_) if symbols.isolate_group.is_none() => {
                Err(format!("no {ISOLATE_GROUP} symbol (the functions' code)"))
            }
            _ => Ok(compiled),
        }),
        Err(missing) => Err(missing.clone()),
    };
    let compiled_missing = compiled.as_ref().err().cloned();
    let replaced = replaced::layout(&field, &member, (version.major, version.minor)).ok();
    let version = Version {
        lines: lines.ok(),
        compiled: compiled.ok(),
        replaced,
        ..version
    };
    let size = u64::try_from(size).map_err(|_| format!("{BUILTINS_SIZE} = {size}"))?;
    Ok(Some(Binary {
        version,
        builtins: (builtins, size),
        builtins_file_offset,
        compiled_missing,
        isolate_group: symbols.isolate_group,
    }))
}

impl super::Interpreters {
    /// Publishes V8 `binary` as `pid`'s runtime if `mapping` holds its builtins.
    ///
    /// Node maps the file's builtins a second time, at a mapping of their own. Node 24 (V8
    /// 13.6) runs them there, so for V8 12+ a mapping of the same file that starts at the
    /// builtins' file offset is taken before `mapping`; node 20 (V8 11.3), the static build
    /// and Debian's libnode alike, runs them from its text (its JavaScript frames' return
    /// addresses are there), so V8 11 takes the text's bias, whichever mapping came first
    /// (libnode's copy of its builtins lies below the library). (Seen, not read from V8's
    /// sources: a V8 12 build is untested.)
    pub(super) fn publish_v8(
        &mut self,
        pid: u32,
        binary: &Binary,
        mapping: &ExecMapping,
        mappings: &[ExecMapping],
    ) -> bool {
        // The binary's load bias: from a mapping of its text, builtins included (not the
        // builtins' own mapping).
        let load_bias = mappings
            .iter()
            .filter(|other| {
                other.offset != binary.builtins_file_offset
                    && other.inode == mapping.inode
                    && other.device == mapping.device
            })
            .find_map(|other| {
                super::bias_at(binary.builtins.0, binary.builtins_file_offset, other)
            });
        let own = mappings.iter().find(|other| {
            binary.version.major >= 12
                && other.offset == binary.builtins_file_offset
                && other.inode == mapping.inode
                && other.device == mapping.device
        });
        let bias_in =
            |mapping| super::bias_at(binary.builtins.0, binary.builtins_file_offset, mapping);
        let bias = match own {
            Some(own) => bias_in(own),
            None => load_bias.or_else(|| bias_in(mapping)),
        };
        let Some(bias) = bias else {
            return false;
        };
        let v = binary.version;
        let name = format!("V8 {}.{} (Node.js)", v.major, v.minor);
        if let Some(missing) = &binary.compiled_missing {
            self.limits.insert(
                name.clone(),
                format!("optimized frames at their definition line ({missing})"),
            );
        }
        let process = binary.process(bias, load_bias.unwrap_or(bias));
        self.publish(pid, process, name, v);
        true
    }
}

/// Optimized `Code` objects read whose frames have no current line (no source position
/// table read), for `-v`.
static CODE_WITHOUT_LINES: AtomicU64 = AtomicU64::new(0);

/// Reads code object `code` (untagged) of process `pid`, as the kernel recorded it: an
/// optimized `Code` ([`compiled::read`]) or a `SharedFunctionInfo` ([`read_shared`]).
/// `generation`: the one the kernel announced a `Code` with
/// ([`tracekit_common::interp::v8::code_generation`] of its instructions' start and
/// size); `None` when the `Code` now at `code` has another (other code reused the address
/// since the frame was recorded: not named by it).
pub fn read_code(pid: u32, v: &Version, code: u64, generation: Option<u16>) -> Option<CodeInfo> {
    let reader = Reader { pid, v };
    if let (Some(compiled), Some(lines)) = (v.compiled, v.lines)
        && reader.object(code | 1)?.1 == compiled.type_code
    {
        if let Some(generation) = generation {
            let start = if compiled.instructions_inline {
                code + u64::from(compiled.instruction_start)
            } else {
                reader.field(code, compiled.instruction_start)?
            };
            let size = reader.field(code, compiled.instruction_size)? as u32;
            if slots::code_generation(start, size) != generation {
                return None;
            }
        }
        let shared = |object| read_shared(&reader, object);
        let sfi = v.type_shared_function_info;
        let info = compiled::read(&reader, &lines, &compiled, sfi, code, shared)?;
        if info.compiled.is_empty() {
            CODE_WITHOUT_LINES.fetch_add(1, Ordering::Relaxed);
        }
        return Some(info);
    }
    read_shared(&reader, code).map(|(info, _)| info)
}

impl super::Interpreters {
    /// For `-v`, when a V8 process was published: the optimized frames recorded (with a
    /// current line, or at their function's definition line) after a newline.
    pub(super) fn v8_report(&self) -> String {
        if !self.published.values().any(|name| name.starts_with("V8 ")) {
            return String::new();
        }
        let counters = self.counters();
        format!(
            "\nV8: {} optimized frames recorded as their code and offset (named with their \
             current line and inlined functions), {} in code their function no longer points \
             to (on-stack-replaced: named through the code found around their pc), {} as \
             their function alone (at its definition line: code not read); {} optimized code \
             objects had no source positions (their frames at the definition line)",
            counters[InterpStat::V8Optimized as usize],
            counters[InterpStat::V8Replaced as usize],
            counters[InterpStat::V8OptimizedNoCode as usize],
            CODE_WITHOUT_LINES.load(Ordering::Relaxed),
        )
    }
}

/// Reads the `SharedFunctionInfo` at untagged `shared`: the function's name (`(anonymous)`
/// when it has none) and its script's name, and its script (untagged).
fn read_shared(reader: &Reader, shared: u64) -> Option<compiled::Shared> {
    let v = reader.v;
    let name_or_scope = reader.field(shared, v.shared_name_or_scope_info)?;
    let (object, kind) = reader.object(name_or_scope)?;
    // Read once: for the name, and for the definition line.
    let scope_slots = (kind == v.type_scope_info)
        .then(|| reader.scope_info_slots(object))
        .flatten();
    let name = if kind < v.first_nonstring_type {
        reader.string(name_or_scope, 0)
    } else {
        scope_slots
            .as_deref()
            .and_then(|slots| reader.scope_info_name(slots))
    };
    let name = name
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "(anonymous)".into());
    let script = reader
        .field(shared, v.shared_script_or_debug_info)
        .and_then(|script| {
            let (object, kind) = reader.object(script)?;
            (kind == v.type_script).then_some(object)
        });
    let file = script
        .and_then(|object| reader.string(reader.field(object, v.script_name)?, 0))
        .unwrap_or_default();
    let (first_line, linetable) = match (v.lines, script) {
        (Some(layout), Some(script)) if !file.is_empty() => {
            let indices = (v.scope_info_first_vars, v.scope_info_context_locals);
            let bytecode_array = v.type_bytecode_array;
            lines::function_lines(
                reader,
                &layout,
                shared,
                scope_slots.as_deref(),
                indices,
                bytecode_array,
                script,
            )
        }
        _ => (0, Vec::new()),
    };
    let info = CodeInfo {
        name,
        file,
        first_line,
        linetable,
        minor: v.minor.min(255) as u8,
        compiled: Vec::new(),
    };
    Some((info, script))
}

/// The symbol of a named V8 frame recorded with offset `units` (the kernel's bytecode
/// offset; 0 in a compiled frame): `function (script:LINE)`, the line as [`lines`]
/// says; `function (script)` when no line is known; `function` when the script has no name
/// (the runtime's own code).
pub fn symbol(info: &CodeInfo, units: u32) -> String {
    if info.file.is_empty() {
        return info.name.clone();
    }
    // Compiled frames (0) have no pair: every recorded offset is past the array's header.
    let current = i32::try_from(units)
        .ok()
        .filter(|&units| units > 0)
        .and_then(|units| lines::line_at(&info.linetable, units));
    match current.or((info.first_line > 0).then_some(info.first_line)) {
        Some(line) => format!("{} ({}:{line})", info.name, info.file),
        None => format!("{} ({})", info.name, info.file),
    }
}

pub(super) mod compiled;
mod embedded;
pub(super) mod line_ends;
mod lines;
mod reader;
pub(super) mod replaced;

use compiled::CompiledLayout;
use lines::LineLayout;
pub(super) use reader::Reader;

#[cfg(test)]
mod tests;
