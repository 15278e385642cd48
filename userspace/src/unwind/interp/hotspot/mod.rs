//! HotSpot (OpenJDK's JVM): detection by `libjvm.so`'s exported serviceability tables and
//! the structure offsets read from them. The layout is read and checked for every JVM
//! process, and the report (`-v`) says what was read or why it could not be. Interpreted
//! frames are named here and in [`lines`]; compiled frames (the code cache's
//! heaps, an nmethod's method and scopes) in [`compiled`].
//!
//! `libjvm.so` exports `gHotSpotVMStructs` and `gHotSpotVMTypes` (pointers to arrays of
//! entries) and the globals that describe one entry's layout
//! (`gHotSpotVMStructEntryTypeNameOffset`, ..., `gHotSpotVMStructEntryArrayStride`); the
//! serviceability agent and debuggers read the JVM the same way. The layout globals live in
//! `.bss` and are filled by `VMStructs::init` when the JVM starts, and the entries hold
//! relocated pointers to C strings, so everything is read from the process's memory
//! (`process_vm_readv`), never from the file.
//!
//! A `VMStructEntry` is `{typeName, fieldName, typeString: *const c_char, isStatic: i32,
//! offset: u64, address: *mut c_void}` at the offsets the globals state; the array ends at
//! an entry whose type name is null. A `VMTypeEntry` is `{typeName, superclassName, isOopType,
//! isIntegerType, isUnsigned, size: u64}`. `gHotSpotVMIntConstants` lists `{name, value:
//! i32}`.

use std::collections::HashMap;

use tracekit_common::interp::{
    InterpProcess, NO_OFFSET, OFFSET_SLOTS, decode_frame,
    hotspot::{CodeCache, decode_fingerprint, fingerprint, method_key, split_method_key},
    runtime,
};

use super::{
    read_memory,
    runtime::{Detected, Runtime as _, Unsupported},
};
use crate::unwind::process::ExecMapping;

/// Whether `name` (a file name) is HotSpot's shared library.
pub fn is_libjvm(name: &str) -> bool {
    name == "libjvm.so"
}

/// The exported symbols of one `libjvm.so` that the tables are read through: ELF
/// addresses (add the load bias for the process's addresses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binary {
    /// Symbol name -> ELF virtual address, for the `gHotSpot*` globals.
    pub symbols: HashMap<String, u64>,
    /// A function in the executable segment (`JNI_CreateJavaVM`): ELF address and file
    /// offset, to find the load bias from the exec mapping.
    pub anchor: (u64, u64),
}

/// A JVM whose Java frames (or compiled ones) stay native for `reason`, found after
/// detection (the process's own VM structures could not be read).
pub(super) fn not_named(reason: String) -> Unsupported {
    Unsupported {
        runtime: HOTSPOT.name(),
        version: None,
        reason,
    }
}

/// Checks `file` (a mapping of `libjvm.so`) for the serviceability tables' symbols.
fn detect(file: &std::path::Path) -> Detected {
    use object::{Object as _, ObjectSection as _, ObjectSymbol as _};
    let data = match std::fs::File::open(file).and_then(|f| {
        // SAFETY: a read-only private mapping of a shared library; it is only read.
        unsafe { memmap2::Mmap::map(&f) }
    }) {
        Ok(data) => data,
        Err(err) => return Detected::unsupported(format!("reading libjvm.so: {err}")),
    };
    let elf = match object::File::parse(&*data) {
        Ok(elf) => elf,
        Err(err) => return Detected::unsupported(format!("libjvm.so is not ELF: {err}")),
    };
    let mut symbols = HashMap::new();
    let mut anchor = None;
    for symbol in elf.dynamic_symbols().chain(elf.symbols()) {
        let Ok(name) = symbol.name() else { continue };
        if name.starts_with("gHotSpotVM") {
            symbols.insert(name.to_string(), symbol.address());
        } else if name == "JNI_CreateJavaVM" && anchor.is_none() {
            let section = symbol
                .section_index()
                .and_then(|index| elf.section_by_index(index).ok());
            if let Some(section) = section
                && let Some((file_offset, _)) = section.file_range()
            {
                let address = symbol.address();
                anchor = Some((address, address - section.address() + file_offset));
            }
        }
    }
    let missing: Vec<&str> = REQUIRED_SYMBOLS
        .iter()
        .copied()
        .filter(|name| !symbols.contains_key(*name))
        .collect();
    if !missing.is_empty() {
        return Detected::unsupported(format!(
            "HotSpot without its serviceability symbols: {} missing",
            missing.join(", ")
        ));
    }
    let Some(anchor) = anchor else {
        return Detected::unsupported("libjvm.so without JNI_CreateJavaVM");
    };
    Detected::found(Binary { symbols, anchor })
}

/// The symbols [`detect`] requires.
const REQUIRED_SYMBOLS: [&str; 20] = [
    "gHotSpotVMStructs",
    "gHotSpotVMStructEntryTypeNameOffset",
    "gHotSpotVMStructEntryFieldNameOffset",
    "gHotSpotVMStructEntryTypeStringOffset",
    "gHotSpotVMStructEntryIsStaticOffset",
    "gHotSpotVMStructEntryOffsetOffset",
    "gHotSpotVMStructEntryAddressOffset",
    "gHotSpotVMStructEntryArrayStride",
    "gHotSpotVMTypes",
    "gHotSpotVMTypeEntryTypeNameOffset",
    "gHotSpotVMTypeEntrySuperclassNameOffset",
    "gHotSpotVMTypeEntryIsOopTypeOffset",
    "gHotSpotVMTypeEntryIsIntegerTypeOffset",
    "gHotSpotVMTypeEntryIsUnsignedOffset",
    "gHotSpotVMTypeEntrySizeOffset",
    "gHotSpotVMTypeEntryArrayStride",
    "gHotSpotVMIntConstants",
    "gHotSpotVMIntConstantEntryNameOffset",
    "gHotSpotVMIntConstantEntryValueOffset",
    "gHotSpotVMIntConstantEntryArrayStride",
];

/// Reads `length` bytes at an address of the JVM process (`None`: unreadable).
pub trait Memory {
    /// The bytes at `address`, or `None`.
    fn read(&self, address: u64, length: usize) -> Option<Vec<u8>>;

    /// The little-endian u64 at `address`.
    fn u64(&self, address: u64) -> Option<u64> {
        Some(u64::from_le_bytes(self.read(address, 8)?.try_into().ok()?))
    }

    /// The little-endian i32 at `address`.
    fn i32(&self, address: u64) -> Option<i32> {
        Some(i32::from_le_bytes(self.read(address, 4)?.try_into().ok()?))
    }

    /// The NUL-terminated string at `address` (at most 256 bytes; `None` if longer or
    /// unreadable).
    fn c_string(&self, address: u64) -> Option<String> {
        let mut out = Vec::new();
        for chunk in 0..4u64 {
            // Read in 64-byte pieces so a string near the end of a mapping is still read.
            let bytes = self.read(address + chunk * 64, 64)?;
            if let Some(end) = bytes.iter().position(|&b| b == 0) {
                out.extend_from_slice(&bytes[..end]);
                return String::from_utf8(out).ok();
            }
            out.extend_from_slice(&bytes);
        }
        None
    }
}

/// A live process's memory, through `process_vm_readv`.
pub struct Process(pub u32);

impl Memory for Process {
    fn read(&self, address: u64, length: usize) -> Option<Vec<u8>> {
        read_memory(self.0, address, length)
    }
}

/// The serviceability tables of one JVM: fields by `Type::_field`, type sizes, integer
/// constants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VmStructs {
    /// `"CodeBlob::_frame_size"` -> byte offset (instance fields) or address (static
    /// fields, as [`Field::Static`]).
    pub fields: HashMap<String, Field>,
    /// `"ConstantPool"` -> `sizeof` in bytes.
    pub sizes: HashMap<String, u64>,
    /// `"frame::interpreter_frame_last_sp_offset"` -> value.
    pub int_constants: HashMap<String, i32>,
}

/// Where one field is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// Byte offset in an instance.
    Offset(u64),
    /// Process address of a static field.
    Static(u64),
}

/// At most this many entries are read from one table (JDK 17 has about 1,500 structs).
const MAX_ENTRIES: u64 = 20_000;

/// Reads the tables through the `gHotSpot*` globals at process addresses `at(name)`.
/// Errors name the global or entry that could not be read.
pub fn read_vmstructs(memory: &impl Memory, at: &dyn Fn(&str) -> u64) -> Result<VmStructs, String> {
    let global = |name: &str| -> Result<u64, String> {
        memory
            .u64(at(name))
            .ok_or_else(|| format!("{name} is unreadable"))
    };
    let stride = global("gHotSpotVMStructEntryArrayStride")?;
    if stride == 0 {
        return Err("gHotSpotVMStructEntryArrayStride is 0 (the JVM has not started yet)".into());
    }
    let mut tables = VmStructs::default();
    let (type_name, field_name, is_static, offset, address) = (
        global("gHotSpotVMStructEntryTypeNameOffset")?,
        global("gHotSpotVMStructEntryFieldNameOffset")?,
        global("gHotSpotVMStructEntryIsStaticOffset")?,
        global("gHotSpotVMStructEntryOffsetOffset")?,
        global("gHotSpotVMStructEntryAddressOffset")?,
    );
    let base = global("gHotSpotVMStructs")?;
    for i in 0..MAX_ENTRIES {
        let entry = base + i * stride;
        let unreadable = || format!("VMStructEntry {i} at {entry:#x} is unreadable");
        let type_ptr = memory.u64(entry + type_name).ok_or_else(unreadable)?;
        if type_ptr == 0 {
            break;
        }
        let field_ptr = memory.u64(entry + field_name).ok_or_else(unreadable)?;
        if field_ptr == 0 {
            continue;
        }
        let (Some(type_name), Some(field)) =
            (memory.c_string(type_ptr), memory.c_string(field_ptr))
        else {
            return Err(unreadable());
        };
        let value = if memory.i32(entry + is_static).ok_or_else(unreadable)? != 0 {
            Field::Static(memory.u64(entry + address).ok_or_else(unreadable)?)
        } else {
            Field::Offset(memory.u64(entry + offset).ok_or_else(unreadable)?)
        };
        tables.fields.insert(format!("{type_name}::{field}"), value);
    }
    let stride = global("gHotSpotVMTypeEntryArrayStride")?;
    let (type_name, size) = (
        global("gHotSpotVMTypeEntryTypeNameOffset")?,
        global("gHotSpotVMTypeEntrySizeOffset")?,
    );
    let base = global("gHotSpotVMTypes")?;
    for i in 0..MAX_ENTRIES {
        let entry = base + i * stride;
        let unreadable = || format!("VMTypeEntry {i} at {entry:#x} is unreadable");
        let type_ptr = memory.u64(entry + type_name).ok_or_else(unreadable)?;
        if type_ptr == 0 {
            break;
        }
        let name = memory.c_string(type_ptr).ok_or_else(unreadable)?;
        let bytes = memory.u64(entry + size).ok_or_else(unreadable)?;
        tables.sizes.insert(name, bytes);
    }
    let stride = global("gHotSpotVMIntConstantEntryArrayStride")?;
    let (name_at, value_at) = (
        global("gHotSpotVMIntConstantEntryNameOffset")?,
        global("gHotSpotVMIntConstantEntryValueOffset")?,
    );
    let base = global("gHotSpotVMIntConstants")?;
    for i in 0..MAX_ENTRIES {
        let entry = base + i * stride;
        let unreadable = || format!("VMIntConstantEntry {i} at {entry:#x} is unreadable");
        let name_ptr = memory.u64(entry + name_at).ok_or_else(unreadable)?;
        if name_ptr == 0 {
            break;
        }
        let name = memory.c_string(name_ptr).ok_or_else(unreadable)?;
        let value = memory.i32(entry + value_at).ok_or_else(unreadable)?;
        tables.int_constants.insert(name, value);
    }
    Ok(tables)
}

/// Whether `CodeBlob`'s field at `at` can be an i32, as the kernel reads
/// `_frame_complete_offset`: no other field of it starts in its 4 bytes (JDK 25 made it an
/// `int16_t`, `_kind` 2 bytes after it).
fn i32_wide(tables: &VmStructs, at: u64) -> bool {
    !tables.fields.iter().any(|(name, field)| {
        name.starts_with("CodeBlob::")
            && matches!(field, Field::Offset(other) if (at + 1..at + 4).contains(other))
    })
}

/// The offsets a HotSpot unwinder needs (bytes unless said; instance fields). Read by
/// [`Layout::of`] from a JVM's [`VmStructs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// `CodeCache::_heaps`: process address of the `GrowableArray<CodeHeap*>*`.
    pub code_cache_heaps: u64,
    /// `CodeCache::_low_bound` and `_high_bound`: process addresses of the code cache's
    /// bounds (pointers).
    pub code_cache_bounds: (u64, u64),
    /// `GrowableArrayBase::_len` (or `GenericGrowableArray::_len`) and
    /// `GrowableArray<int>::_data`.
    pub growable_array: (u64, u64),
    /// `CodeHeap::_memory`, `CodeHeap::_segmap` (both `VirtualSpace`),
    /// `CodeHeap::_log2_segment_size`.
    pub code_heap: (u64, u64, u64),
    /// `VirtualSpace::_low` and `VirtualSpace::_high`.
    pub virtual_space: (u64, u64),
    /// `CodeBlob::_name`, `_frame_size` (in words), `_code_begin` (a pointer; or
    /// `_code_offset` from the blob, see [`Layout::code_begin_is_offset`]), `_size`.
    pub code_blob: (u64, u64, u64, u64),
    /// `CodeBlob::_frame_complete_offset` (an i32 from the code's start: where the
    /// prologue ends); `None` when the JVM does not state it.
    pub frame_complete: Option<u64>,
    /// Whether `code_blob.2` is `_code_offset` (an i32 from the blob's start, JDK 8) rather
    /// than `_code_begin` (a pointer, JDK 9+).
    pub code_begin_is_offset: bool,
    /// `nmethod::_method` (or `CompiledMethod::_method`, JDK 9-22).
    pub nmethod_method: u64,
    /// `Method::_constMethod`.
    pub method_const_method: u64,
    /// `ConstMethod::_constants`, `_name_index`, `_signature_index` (u16 indexes).
    pub const_method: (u64, u64, u64),
    /// `ConstantPool::_pool_holder` and `sizeof(ConstantPool)` (the slots follow it).
    pub constant_pool: (u64, u64),
    /// `Klass::_name`.
    pub klass_name: u64,
    /// `Symbol::_length` (u16) and `Symbol::_body`.
    pub symbol: (u64, u64),
    /// The interpreter's frame, in words from its frame pointer (rbp, arm64's x29): the
    /// `Method*` slot and the bcp slot ([`interpreter_frame`]).
    pub interpreter_frame: (i32, i32),
    /// `AbstractInterpreter::_code` (process address of the `StubQueue*` of the template
    /// interpreter), `StubQueue::_stub_buffer` and `StubQueue::_buffer_limit` (an i32 in
    /// bytes); `None` when the JVM does not state them.
    pub interpreter_queue: Option<(u64, u64, u64)>,
    /// `sizeof(ConstMethod)`: the bytecodes follow it.
    pub const_method_size: Option<u64>,
    /// The template interpreter's code in the process, `[begin, end)`: read by [`probe`]
    /// through `interpreter_queue` (`None` from [`Layout::of`]).
    pub interpreter_code: Option<(u64, u64)>,
    /// Where a method's line numbers are; `None` when the JVM does not state it (frames are
    /// then named without file and line).
    pub lines: Option<lines::LineLayout>,
    /// The interpreter frame's sender sp slot, in words from rbp
    /// (`frame::interpreter_frame_sender_sp_offset`; x86_64's -1 when not stated).
    pub sender_sp_slot: i32,
    /// Where compiled methods' debug information is; `None` when the JVM does not state
    /// it (compiled frames stay native).
    pub compiled: Option<compiled::CompiledLayout>,
    /// The UNSIGNED5 excess of the JVM's scopes and line tables ([`lines::unsigned5`]): 1
    /// from JDK 20 (`Abstract_VM_Version::_vm_major_version`, set by [`read_layout`]), else 0.
    pub stream_excess: u8,
    /// The code cache's heaps in the process: read by [`probe`] (`None` from
    /// [`Layout::of`], or when unreadable: compiled frames stay native).
    pub code_cache: Option<CodeCache>,
}

impl Layout {
    /// The layout in `tables`; an error names every field that is missing.
    pub fn of(tables: &VmStructs) -> Result<Layout, String> {
        let mut missing = Vec::new();
        let mut take = |names: &[&str]| -> Field {
            for name in names {
                if let Some(&field) = tables.fields.get(*name) {
                    return field;
                }
            }
            missing.push(names[0].to_string());
            Field::Offset(0)
        };
        let offset = |field: Field| match field {
            Field::Offset(offset) => offset,
            Field::Static(address) => address,
        };
        let code_cache_heaps = offset(take(&["CodeCache::_heaps"]));
        let low = offset(take(&["CodeCache::_low_bound"]));
        let high = offset(take(&["CodeCache::_high_bound"]));
        let growable_array = (
            offset(take(&[
                "GrowableArrayBase::_len",
                "GenericGrowableArray::_len",
            ])),
            offset(take(&["GrowableArray<int>::_data"])),
        );
        let code_heap = (
            offset(take(&["CodeHeap::_memory"])),
            offset(take(&["CodeHeap::_segmap"])),
            offset(take(&["CodeHeap::_log2_segment_size"])),
        );
        let virtual_space = (
            offset(take(&["VirtualSpace::_low"])),
            offset(take(&["VirtualSpace::_high"])),
        );
        let code_begin_is_offset = !tables.fields.contains_key("CodeBlob::_code_begin");
        let code_blob = (
            offset(take(&["CodeBlob::_name"])),
            offset(take(&["CodeBlob::_frame_size"])),
            offset(take(&["CodeBlob::_code_begin", "CodeBlob::_code_offset"])),
            offset(take(&["CodeBlob::_size"])),
        );
        let nmethod_method = offset(take(&["nmethod::_method", "CompiledMethod::_method"]));
        let method_const_method = offset(take(&["Method::_constMethod"]));
        let const_method = (
            offset(take(&["ConstMethod::_constants"])),
            offset(take(&["ConstMethod::_name_index"])),
            offset(take(&["ConstMethod::_signature_index"])),
        );
        let pool_holder = offset(take(&["ConstantPool::_pool_holder"]));
        let klass_name = offset(take(&["Klass::_name"]));
        let symbol = (
            offset(take(&["Symbol::_length"])),
            offset(take(&["Symbol::_body"])),
        );
        let pool_size = tables.sizes.get("ConstantPool").copied();
        if pool_size.is_none() {
            missing.push("sizeof(ConstantPool)".into());
        }
        if !missing.is_empty() {
            return Err(format!(
                "HotSpot layout incomplete: {} missing",
                missing.join(", ")
            ));
        }
        let interpreter_frame = interpreter_frame(
            tables
                .int_constants
                .get("frame::interpreter_frame_last_sp_offset")
                .copied(),
            cfg!(target_arch = "aarch64"),
        );
        let get = |name: &str| match tables.fields.get(name) {
            Some(Field::Offset(offset)) | Some(Field::Static(offset)) => Some(*offset),
            None => None,
        };
        let interpreter_queue = match (
            get("AbstractInterpreter::_code"),
            get("StubQueue::_stub_buffer"),
            get("StubQueue::_buffer_limit"),
        ) {
            (Some(code), Some(buffer), Some(limit)) => Some((code, buffer, limit)),
            _ => None,
        };
        Ok(Layout {
            frame_complete: get("CodeBlob::_frame_complete_offset")
                .filter(|&at| i32_wide(tables, at)),
            sender_sp_slot: tables
                .int_constants
                .get("frame::interpreter_frame_sender_sp_offset")
                .copied()
                .unwrap_or(-1),
            compiled: compiled::CompiledLayout::of(tables),
            code_cache: None,
            stream_excess: 0,
            lines: lines::LineLayout::of(tables),
            interpreter_queue,
            const_method_size: tables.sizes.get("ConstMethod").copied(),
            interpreter_code: None,
            code_cache_heaps,
            code_cache_bounds: (low, high),
            growable_array,
            code_heap,
            virtual_space,
            code_blob,
            code_begin_is_offset,
            nmethod_method,
            method_const_method,
            const_method,
            constant_pool: (pool_holder, pool_size.unwrap_or(0)),
            klass_name,
            symbol,
            interpreter_frame,
        })
    }
}

/// The interpreter frame's `Method*` and bcp slots, in words from its frame pointer, below
/// its last sp slot (`frame::interpreter_frame_last_sp_offset`: stated by x86_64's JVMs
/// alone, -2 on both architectures): the method is the next slot down on both; the bcp is
/// five below it on x86_64 (frame_x86.hpp: method, mirror, mdp, cache, locals, bcp) and
/// six on arm64 (frame_aarch64.hpp: method, mdp, padding, mirror, cache, locals, bcp).
pub fn interpreter_frame(last_sp: Option<i32>, arm64: bool) -> (i32, i32) {
    let last_sp = last_sp.unwrap_or(-2);
    (last_sp - 1, last_sp - if arm64 { 7 } else { 6 })
}

/// Why [`probe`] read no layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotRead {
    /// What could not be read, for the report.
    pub reason: String,
    /// Whether a later probe may succeed: the JVM is still starting (its tables are not
    /// filled, its interpreter not generated yet), unlike a layout that lacks a field.
    pub may_change: bool,
}

impl NotRead {
    fn starting(reason: String) -> Self {
        Self {
            reason,
            may_change: true,
        }
    }

    fn never(reason: String) -> Self {
        Self {
            reason,
            may_change: false,
        }
    }
}

/// Reads the layout of JVM `pid`, whose `libjvm.so` (`binary`) is mapped executable at
/// `mapping`: `Ok` with a one-line summary for the report, or why it could not be read.
/// A JVM announced at its `exec` or at the `mmap` of `libjvm.so` has not filled its tables
/// yet: that error says it may change ([`NotRead::may_change`]), and the caller retries.
pub fn probe(
    pid: u32,
    binary: &Binary,
    mapping: &ExecMapping,
) -> Result<(Layout, String), NotRead> {
    let (layout, summary) = read_layout(pid, binary, mapping)?;
    with_interpreter(pid, layout, summary)
}

/// The first half of [`probe`]: the layout from the JVM's tables, and the report's summary
/// of it (without [`Layout::interpreter_code`]).
pub fn read_layout(
    pid: u32,
    binary: &Binary,
    mapping: &ExecMapping,
) -> Result<(Layout, String), NotRead> {
    let (address, file_offset) = binary.anchor;
    let bias = super::bias_at(address, file_offset, mapping).ok_or_else(|| {
        NotRead::never("the exec mapping of libjvm.so does not hold JNI_CreateJavaVM".into())
    })?;
    let at = |name: &str| {
        binary
            .symbols
            .get(name)
            .copied()
            .unwrap_or(0)
            .wrapping_add(bias)
    };
    let tables = read_vmstructs(&Process(pid), &at).map_err(NotRead::starting)?;
    let mut layout = Layout::of(&tables).map_err(NotRead::never)?;
    if let Some(Field::Static(at)) = tables.fields.get("Abstract_VM_Version::_vm_major_version") {
        layout.stream_excess = u8::from(Process(pid).i32(*at).is_some_and(|major| major >= 20));
    }
    let summary = format!(
        "HotSpot layout read ({} fields, {} types, {} constants; Method* at rbp{:+} words)",
        tables.fields.len(),
        tables.sizes.len(),
        tables.int_constants.len(),
        layout.interpreter_frame.0,
    );
    Ok((layout, summary))
}

/// The second half of [`probe`]: `layout` with the template interpreter's code read from
/// JVM `pid` (generated a little after the tables are filled).
pub fn with_interpreter(
    pid: u32,
    mut layout: Layout,
    summary: String,
) -> Result<(Layout, String), NotRead> {
    let code = interpreter_code(&Process(pid), &layout).map_err(|why| {
        let reason = format!("{summary}, but interpreted Java frames stay native: {why}");
        // Stated but empty: the interpreter is generated a little later in the JVM's start.
        if layout.interpreter_queue.is_some() {
            NotRead::starting(reason)
        } else {
            NotRead::never(reason)
        }
    })?;
    layout.interpreter_code = Some(code);
    // The code heaps exist before the interpreter is generated.
    let summary = match compiled::read_code_cache(&Process(pid), &layout) {
        Ok(cache) => {
            layout.code_cache = Some(cache);
            format!("{summary}; {} code heaps", cache.count)
        }
        Err(why) => format!("{summary}; compiled Java frames stay native: {why}"),
    };
    Ok((layout, summary))
}

/// The template interpreter's code, `[begin, end)`, through `AbstractInterpreter::_code`.
fn interpreter_code(memory: &impl Memory, layout: &Layout) -> Result<(u64, u64), String> {
    let (code, buffer, limit) = layout.interpreter_queue.ok_or(
        "the JVM does not state AbstractInterpreter::_code or StubQueue::_stub_buffer/_buffer_limit",
    )?;
    let queue = memory
        .u64(code)
        .filter(|&queue| queue != 0)
        .ok_or("AbstractInterpreter::_code is unreadable or null")?;
    let begin = memory
        .u64(queue + buffer)
        .ok_or("StubQueue::_stub_buffer is unreadable")?;
    let size = memory
        .i32(queue + limit)
        .ok_or("StubQueue::_buffer_limit is unreadable")?;
    if begin == 0 || size <= 0 {
        return Err(format!(
            "the interpreter's code is empty ({begin:#x}, {size} bytes)"
        ));
    }
    Ok((begin, begin + size as u64))
}

impl Layout {
    /// What the kernel needs to record `pid`'s interpreted Java frames (`None` if the
    /// interpreter's code was not read, or a slot does not fit the table).
    pub fn process(&self) -> Option<InterpProcess> {
        use tracekit_common::interp::hotspot as slots;
        let (begin, end) = self.interpreter_code?;
        let below = |words: i32| u16::try_from(-i64::from(words) * 8).ok().filter(|&b| b > 0);
        let mut offsets = [NO_OFFSET; OFFSET_SLOTS];
        offsets[slots::METHOD_SLOT] = below(self.interpreter_frame.0)?;
        offsets[slots::BCP_SLOT] = below(self.interpreter_frame.1)?;
        offsets[slots::METHOD_CONST_METHOD] = u16::try_from(self.method_const_method).ok()?;
        offsets[slots::CONST_METHOD_SIZE] = u16::try_from(self.const_method_size?).ok()?;
        offsets[slots::SENDER_SP_SLOT] = below(self.sender_sp_slot).unwrap_or(NO_OFFSET);
        // The method's fingerprint: without these slots, interpreted frames are [unknown].
        let (constants, name_index, signature_index) = self.const_method;
        for (slot, value) in [
            (slots::CONST_METHOD_CONSTANTS, constants),
            (slots::CONSTANT_POOL_HOLDER, self.constant_pool.0),
            (slots::KLASS_NAME, self.klass_name),
            (slots::CONST_METHOD_NAME_INDEX, name_index),
            (slots::CONST_METHOD_SIGNATURE_INDEX, signature_index),
        ] {
            offsets[slot] = u16::try_from(value).unwrap_or(NO_OFFSET);
        }
        Some(InterpProcess {
            eval_begin: begin,
            eval_end: end,
            state_address: 0,
            runtime: runtime::HOTSPOT,
            layout: 0,
            version_minor: 0,
            padding: [0; 5],
            offsets,
            cold_begin: 0,
            cold_end: 0,
        })
    }
}

/// The longest symbol read (bytes).
const MAX_SYMBOL: u64 = 4096;

/// The text of HotSpot `Symbol` at `symbol`.
pub(super) fn symbol_text(memory: &impl Memory, layout: &Layout, symbol: u64) -> Option<String> {
    let (length_at, body_at) = layout.symbol;
    let length = u16::from_le_bytes(memory.read(symbol + length_at, 2)?.try_into().ok()?);
    let length = u64::from(length).min(MAX_SYMBOL);
    if length == 0 {
        return Some(String::new());
    }
    let bytes = memory.read(symbol + body_at, length as usize)?;
    String::from_utf8(bytes).ok()
}

/// `Class.method` of `Method*` `method`, as `Ledger.sumCents` (the class's binary name with
/// dots, nested classes keep their `$`): through `Method::_constMethod`, the constant pool
/// (`_pool_holder`'s `Klass::_name`, the method name's symbol in the pool's slots).
pub fn method_name(memory: &impl Memory, layout: &Layout, method: u64) -> Option<String> {
    let const_method = memory.u64(method + layout.method_const_method)?;
    let (constants_at, name_index_at, _) = layout.const_method;
    let constants = memory.u64(const_method + constants_at)?;
    let name_index = u16::from_le_bytes(
        memory
            .read(const_method + name_index_at, 2)?
            .try_into()
            .ok()?,
    );
    let (holder_at, pool_size) = layout.constant_pool;
    let holder = memory.u64(constants + holder_at)?;
    let class = symbol_text(memory, layout, memory.u64(holder + layout.klass_name)?)?;
    let name_symbol = memory.u64(constants + pool_size + 8 * u64::from(name_index))?;
    let name = symbol_text(memory, layout, name_symbol)?;
    if class.is_empty() || name.is_empty() {
        return None;
    }
    Some(format!("{}.{name}", class.replace('/', ".")))
}

/// The names of code object `code` of JVM `pid`: a blob of its code cache
/// ([`compiled::read_blob`]; `None` when its space holds another
/// generation now, [`compiled::blob_of`]: the kernel's announcement gives
/// `generation`), else an interpreted frame's [`method_key`] ([`read_method`], `None`
/// when the `Method*` holds a method of another fingerprint now, [`method_fingerprint`]).
/// `None` for a bare `Method*`: without its fingerprint, the method it was is not known.
pub(super) fn read_code(
    pid: u32,
    layout: &Layout,
    code: u64,
    generation: Option<u16>,
) -> Option<super::CodeInfo> {
    match layout.code_cache {
        Some(cache) if compiled::in_code_cache(&cache, code) => {
            let memory = Process(pid);
            let (blob, window) = compiled::blob_of(&memory, &cache, code, generation)?;
            let info = compiled::read_blob(&memory, layout, blob, &mut |method| {
                read_method(pid, layout, method)
            })?;
            Some(compiled::from_window(info, window))
        }
        _ => read_method_key(&Process(pid), layout, code),
    }
}

/// The names of the method of [`method_key`] `key` (`None` for any other code pointer):
/// [`read_method`]'s, when the `Method*` holds a method of the key's fingerprint; `None`
/// when it holds another now (its class was unloaded and the space given to another's).
pub fn read_method_key(memory: &impl Memory, layout: &Layout, key: u64) -> Option<super::CodeInfo> {
    let (method, fingerprint) = split_method_key(key)?;
    if method_fingerprint(memory, layout, method)? != fingerprint {
        return None;
    }
    method_info(memory, layout, method)
}

/// The code object that names interpreter frame `word` of a recorded stack, given the word
/// after it, toward the root (`next`): a HotSpot interpreted frame's [`method_key`] when
/// `next` is its fingerprint ([`decode_fingerprint`]); the frame's code pointer for any
/// other frame. `None` for a native address, a fingerprint word, and an interpreted frame
/// whose fingerprint the kernel could not read (named `[unknown]`).
pub fn frame_code(word: u64, next: Option<u64>) -> Option<u64> {
    let (id, code, _) = decode_frame(word)?;
    if id != runtime::HOTSPOT {
        return Some(code);
    }
    if decode_fingerprint(word).is_some() {
        return None;
    }
    match next.and_then(decode_fingerprint) {
        Some(Some(fingerprint)) => Some(method_key(code, fingerprint)),
        Some(None) => None,
        None => Some(code),
    }
}

/// The [`fingerprint`] of `Method*` `method` as the process's memory holds it now (the one
/// the kernel recorded with the frame, unless the `Method*` was given to another method).
pub fn method_fingerprint(memory: &impl Memory, layout: &Layout, method: u64) -> Option<u16> {
    let const_method = memory.u64(method + layout.method_const_method)?;
    let (constants_at, name_index_at, signature_index_at) = layout.const_method;
    let constants = memory.u64(const_method + constants_at)?;
    let holder = memory.u64(constants + layout.constant_pool.0)?;
    let class_name = memory.u64(holder + layout.klass_name)?;
    let u16_at = |address: u64| -> Option<u16> {
        Some(u16::from_le_bytes(
            memory.read(address, 2)?.try_into().ok()?,
        ))
    };
    Some(fingerprint(
        const_method,
        constants,
        class_name,
        u16_at(const_method + name_index_at)?,
        u16_at(const_method + signature_index_at)?,
    ))
}

/// The names of `Method*` `method` of JVM `pid`: `Class.method`, and where the JVM states
/// them, its class's source file and its compressed line number table
/// ([`lines`]; empty when unreadable or absent).
pub(super) fn read_method(pid: u32, layout: &Layout, method: u64) -> Option<super::CodeInfo> {
    method_info(&Process(pid), layout, method)
}

/// [`read_method`] in `memory`.
fn method_info(memory: &impl Memory, layout: &Layout, method: u64) -> Option<super::CodeInfo> {
    let name = method_name(memory, layout, method)?;
    let (file, linetable) = layout
        .lines
        .and_then(|lines| lines.read(memory, layout, method))
        .unwrap_or_default();
    Some(super::CodeInfo {
        name,
        file,
        first_line: 0,
        linetable,
        // The line table's excess, for `lines::symbol`.
        minor: layout.stream_excess,
        compiled: Vec::new(),
    })
}

pub(super) mod compiled;
mod entry;
pub(super) mod lines;
pub(super) mod pending;
mod sections;

pub use entry::{HOTSPOT, HotSpot, MODULE};

#[cfg(test)]
mod tests;
