//! HotSpot compiled frames: the code cache's heaps given to the kernel, and the names of a
//! frame the kernel recorded as a code cache blob and a pc offset in it.
//!
//! The code cache (`CodeCache::_heaps`, a `GrowableArray<CodeHeap*>`: 1 heap, or 3 with
//! JDK 9+'s segmented cache) is read once per JVM; each heap's reserved memory and segment
//! map are fixed for the JVM's life, so the kernel's [`CodeCache`] never goes stale.
//!
//! A blob named `nmethod` (`CodeBlob::_name`) is a compiled method (C1, C2, or a native
//! method's wrapper). Its debug information says, for each call site and safepoint, which
//! methods are running there, inlined ones included (JDK 9-22 and JDK 25, the JDK 17 and
//! 25 here the ones tested; where each part is: [`super::sections`]):
//! - the `PcDesc`s: `{pc_offset: i32 (from the blob's code), scope_decode_offset: i32, ...}`;
//! - the scopes: at a decode offset, UNSIGNED5 numbers (`CompressedReadStream::read_int`):
//!   the sender scope's decode offset (0: none, this is the compiled method itself), the
//!   method's index in the metadata (1-based), the bci plus one (`InvocationEntryBci` is -1);
//! - the metadata, `Metadata*` words.
//!
//! A return address of a Java call is a call site's `pc_offset` exactly; a sampled leaf pc
//! is named by the next `PcDesc` at or after it (as the JVM's own `pc_desc_near`), the next
//! call or safepoint of the code it runs (usually of the same method and inlining). Each
//! scope's line is the line of its bci in its method's line table
//! ([`super::lines`]). Nothing else is guessed: a return address with no `PcDesc`
//! of its own (a call into the VM that cannot stop at a safepoint, as
//! `os::javaTimeNanos`), or a leaf pc with no `PcDesc` after it, names the compiled method
//! alone, without a line. A pc 64 KiB or more into a blob is recorded from the blob's
//! 64 KiB window holding it ([`blob_of`] finds the blob, [`from_window`] the call sites).

use std::collections::HashMap;

use tracekit_common::interp::{
    FRAME_OFFSET_MAX,
    hotspot::{CodeCache, MAX_CODE_HEAPS, SEGMAP_FREE, SEGMAP_START, decode_blob, generation_mask},
};

use super::{Field, Layout, Memory, VmStructs, lines, sections::Sections};
use crate::unwind::interp::CodeInfo;

/// The deepest inlining decoded at one pc.
const MAX_SCOPE_DEPTH: usize = 64;

/// Where a compiled method's debug information is (byte offsets, from `gHotSpotVMStructs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompiledLayout {
    /// `sizeof(HeapBlock)`: the header before each blob in a heap.
    pub heap_block_size: u64,
    /// `VirtualSpace::_low_boundary` and `_high_boundary` (reserved bounds).
    pub reserved: (u64, u64),
    /// Where an nmethod's metadata, scopes and `PcDesc`s are.
    pub sections: Sections,
    /// `PcDesc::_pc_offset`, `PcDesc::_scope_decode_offset`, `sizeof(PcDesc)`.
    pub pc_desc: (u64, u64, u64),
    /// `nmethod::_compile_id` (an i32), the generation of the code at a blob's address
    /// ([`tracekit_common::interp::hotspot::encode_blob`]); `None` when not stated (a
    /// freed nmethod's space given to other code may then keep its old names).
    pub compile_id: Option<u64>,
}

impl CompiledLayout {
    /// The layout in `tables`, or `None` when a field is missing (compiled frames then
    /// stay native).
    pub fn of(tables: &VmStructs) -> Option<Self> {
        let offset = |name: &str| match tables.fields.get(name) {
            Some(Field::Offset(offset)) => Some(*offset),
            _ => None,
        };
        Some(Self {
            heap_block_size: *tables.sizes.get("HeapBlock")?,
            reserved: (
                offset("VirtualSpace::_low_boundary")?,
                offset("VirtualSpace::_high_boundary")?,
            ),
            sections: Sections::of(offset)?,
            pc_desc: (
                offset("PcDesc::_pc_offset")?,
                offset("PcDesc::_scope_decode_offset")?,
                *tables.sizes.get("PcDesc")?,
            ),
            compile_id: offset("nmethod::_compile_id"),
        })
    }
}

/// The code cache of a JVM through `CodeCache::_heaps`, as the kernel needs it.
pub fn read_code_cache(memory: &impl Memory, layout: &Layout) -> Result<CodeCache, String> {
    let compiled = layout
        .compiled
        .ok_or("the JVM does not state its code heaps' or nmethods' layout")?;
    let array = memory
        .u64(layout.code_cache_heaps)
        .filter(|&array| array != 0)
        .ok_or("CodeCache::_heaps is unreadable or null")?;
    let (len_at, data_at) = layout.growable_array;
    let len = memory
        .i32(array + len_at)
        .ok_or("the code heaps' array is unreadable")?;
    let data = memory
        .u64(array + data_at)
        .ok_or("the code heaps' array is unreadable")?;
    let count = usize::try_from(len).unwrap_or(0);
    if count == 0 || count > MAX_CODE_HEAPS {
        return Err(format!("{len} code heaps (1 to {MAX_CODE_HEAPS} are read)"));
    }
    let (memory_at, segmap_at, shift_at) = layout.code_heap;
    let (low_at, high_at) = compiled.reserved;
    let mut cache = CodeCache {
        count: count as u32,
        heap_block_size: u32::try_from(compiled.heap_block_size).map_err(|e| e.to_string())?,
        frame_size_offset: u32::try_from(layout.code_blob.1).map_err(|e| e.to_string())?,
        frame_complete_offset: layout
            .frame_complete
            .and_then(|at| u32::try_from(at).ok())
            .unwrap_or(0),
        code_begin_offset: u32::try_from(layout.code_blob.2).map_err(|e| e.to_string())?,
        code_begin_is_offset: u32::from(layout.code_begin_is_offset),
        compile_id_offset: compiled
            .compile_id
            .and_then(|at| u32::try_from(at).ok())
            .unwrap_or(0),
        ..CodeCache::default()
    };
    for (index, slot) in cache.heaps.iter_mut().take(count).enumerate() {
        let unreadable = || format!("code heap {index} is unreadable");
        let heap = memory
            .u64(data + 8 * index as u64)
            .filter(|&heap| heap != 0)
            .ok_or_else(unreadable)?;
        slot.low = memory
            .u64(heap + memory_at + low_at)
            .ok_or_else(unreadable)?;
        slot.high = memory
            .u64(heap + memory_at + high_at)
            .ok_or_else(unreadable)?;
        slot.segmap = memory
            .u64(heap + segmap_at + low_at)
            .ok_or_else(unreadable)?;
        let shift = memory.i32(heap + shift_at).ok_or_else(unreadable)?;
        if slot.low == 0 || slot.low >= slot.high || slot.segmap == 0 || !(4..=16).contains(&shift)
        {
            return Err(format!(
                "code heap {index} is not set up ({:#x}..{:#x}, segment map {:#x}, 2^{shift} bytes a segment)",
                slot.low, slot.high, slot.segmap
            ));
        }
        cache.segment_shift = shift as u32;
    }
    Ok(cache)
}

/// Whether `address` is in one of the heaps of `cache`.
pub fn in_code_cache(cache: &CodeCache, address: u64) -> bool {
    cache.heaps[..(cache.count as usize).min(MAX_CODE_HEAPS)]
        .iter()
        .any(|heap| heap.low <= address && address < heap.high)
}

/// The blob a frame's code pointer `code` names ([`encode_blob`]'s encoding, of the blob's
/// start or of a 64 KiB window into it) and the window's offset in it, if the code there
/// now is the generation the kernel saw: the generation bits in `code`, and all 16 bits of
/// `generation` when the kernel announced them. `None` when the space holds other code now
/// (the frame's code was freed: it is not named by its successor) or is free.
///
/// [`encode_blob`]: tracekit_common::interp::hotspot::encode_blob
pub fn blob_of(
    memory: &impl Memory,
    cache: &CodeCache,
    code: u64,
    generation: Option<u16>,
) -> Option<(u64, u64)> {
    let (shift, header) = (cache.segment_shift, cache.heap_block_size);
    let (start, bits) = decode_blob(code, shift, header);
    let blob = block_of(memory, cache, start)?;
    if cache.compile_id_offset != 0 {
        let now = memory.i32(blob + u64::from(cache.compile_id_offset))? as u32;
        if now & generation_mask(shift, header) != bits
            || generation.is_some_and(|generation| now as u16 != generation)
        {
            return None;
        }
    }
    Some((blob, start - blob))
}

/// Hops through a code heap's segment map at most (one hop goes back up to 254 segments).
const MAX_SEGMAP_HOPS: usize = 1 << 16;

/// The blob whose block holds `address`, found as the kernel finds it: back through the
/// heap's segment map to the block's first segment. `None` outside the heaps, in free
/// space, or where the map is unreadable.
fn block_of(memory: &impl Memory, cache: &CodeCache, address: u64) -> Option<u64> {
    let count = (cache.count as usize).min(MAX_CODE_HEAPS);
    let heap = cache.heaps[..count]
        .iter()
        .find(|heap| heap.low <= address && address < heap.high)?;
    let shift = cache.segment_shift;
    let mut segment = (address - heap.low) >> shift;
    for _ in 0..MAX_SEGMAP_HOPS {
        match memory.read(heap.segmap + segment, 1)?[0] {
            SEGMAP_START => {
                return Some(heap.low + (segment << shift) + u64::from(cache.heap_block_size));
            }
            SEGMAP_FREE => return None,
            hops if u64::from(hops) <= segment => segment -= u64::from(hops),
            _ => return None,
        }
    }
    None
}

/// [`CodeInfo::compiled`] of a blob as seen from `window` bytes into it (a frame recorded
/// from a 64 KiB window of a larger blob): the call sites from the window on, their offsets
/// from the window.
pub fn from_window(mut info: CodeInfo, window: u64) -> CodeInfo {
    let Ok(window) = u32::try_from(window) else {
        info.compiled.clear();
        return info;
    };
    if window > 0 {
        info.compiled = std::mem::take(&mut info.compiled)
            .into_iter()
            .filter_map(|(offset, frames)| Some((offset.checked_sub(window)?, frames)))
            .collect();
    }
    info
}

/// The names of code cache blob `blob`: an nmethod's method as `Class.method`, with
/// [`CodeInfo::compiled`] listing each call site's frames; any other blob by its name
/// (`StubRoutines (1)`). `method_code` reads a `Method*`'s names and line table. `None`
/// when unreadable.
pub fn read_blob(
    memory: &impl Memory,
    layout: &Layout,
    blob: u64,
    method_code: &mut dyn FnMut(u64) -> Option<CodeInfo>,
) -> Option<CodeInfo> {
    let (name_at, _, code_begin_at, _) = layout.code_blob;
    let name = memory.c_string(memory.u64(blob + name_at)?)?;
    let mut info = CodeInfo {
        name,
        file: String::new(),
        first_line: 0,
        linetable: Vec::new(),
        minor: 0,
        compiled: Vec::new(),
    };
    if info.name != "nmethod" {
        return Some(info);
    }
    let method = memory.u64(blob + layout.nmethod_method)?;
    let mut names: HashMap<u64, Option<CodeInfo>> = HashMap::new();
    let own = names.entry(method).or_insert_with(|| method_code(method));
    info.name = own.as_ref()?.name.clone();
    let compiled = layout.compiled?;
    let code_begin = if layout.code_begin_is_offset {
        blob + u64::try_from(memory.i32(blob + code_begin_at)?).ok()?
    } else {
        memory.u64(blob + code_begin_at)?
    };
    let Some(ranges) = compiled.sections.ranges(memory, blob) else {
        return Some(info);
    };
    if code_begin < blob {
        return Some(info);
    }
    let read = |(begin, end): (u64, u64)| memory.read(begin, (end - begin) as usize);
    let metadata = read(ranges.metadata)?;
    let scopes = read(ranges.scopes)?;
    let pcs = read(ranges.pcs)?;
    let debug = DebugInfo {
        metadata: &metadata,
        scopes: &scopes,
        excess: u32::from(layout.stream_excess),
    };
    let (pc_at, decode_at, size) = compiled.pc_desc;
    let mut by_scope: HashMap<u32, Vec<String>> = HashMap::new();
    for desc in pcs.chunks_exact(size.max(8) as usize) {
        let field = |at: u64| -> Option<i32> {
            let at = at as usize;
            Some(i32::from_le_bytes(desc.get(at..at + 4)?.try_into().ok()?))
        };
        let (Some(pc), Some(decode)) = (field(pc_at), field(decode_at)) else {
            continue;
        };
        let (Ok(pc), Ok(decode)) = (u64::try_from(pc), u32::try_from(decode)) else {
            continue;
        };
        if decode == 0 {
            continue;
        }
        let frames = match by_scope.get(&decode) {
            Some(frames) => frames.clone(),
            None => {
                let mut frames = Vec::new();
                for (method, bci) in debug.scopes(decode) {
                    let code = names.entry(method).or_insert_with(|| method_code(method));
                    let Some(code) = code else {
                        frames.clear();
                        break;
                    };
                    frames.push(lines::symbol(code, u32::try_from(bci).unwrap_or(0)));
                }
                // Outermost (the compiled method) first.
                frames.reverse();
                by_scope.insert(decode, frames.clone());
                frames
            }
        };
        if frames.is_empty() {
            continue;
        }
        let offset = code_begin - blob + pc;
        if let Ok(offset) = u32::try_from(offset) {
            info.compiled.push((offset, frames));
        }
    }
    info.compiled.sort_by_key(|(offset, _)| *offset);
    Some(info)
}

/// One nmethod's metadata and scopes.
struct DebugInfo<'a> {
    metadata: &'a [u8],
    scopes: &'a [u8],
    /// The scopes' UNSIGNED5 excess ([`Layout::stream_excess`]).
    excess: u32,
}

impl DebugInfo<'_> {
    /// The (`Method*`, bci) of the scope at `decode` and its senders, innermost first;
    /// empty if any is unreadable.
    fn scopes(&self, mut decode: u32) -> Vec<(u64, i64)> {
        let mut out = Vec::new();
        while decode != 0 && out.len() < MAX_SCOPE_DEPTH {
            let mut at = decode as usize;
            let (Some(sender), Some(index), Some(bci)) = (
                lines::unsigned5(self.scopes, &mut at, self.excess),
                lines::unsigned5(self.scopes, &mut at, self.excess),
                lines::unsigned5(self.scopes, &mut at, self.excess),
            ) else {
                return Vec::new();
            };
            let Some(method) = self.metadata(index) else {
                return Vec::new();
            };
            out.push((method, i64::from(bci) - 1));
            // Senders are written before the scopes they call.
            if sender >= decode {
                return Vec::new();
            }
            decode = sender;
        }
        if decode != 0 {
            return Vec::new();
        }
        out
    }

    /// `metadata_at(index)`: the 1-based `index`th word; `None` for 0 or out of range.
    fn metadata(&self, index: u32) -> Option<u64> {
        let at = (index as usize).checked_sub(1)? * 8;
        let word = u64::from_le_bytes(self.metadata.get(at..at + 8)?.try_into().ok()?);
        (word != 0).then_some(word)
    }
}

/// The frames of a compiled frame recorded at `offset` from its blob, outermost first, each
/// with whether it is inlined into the one before: from [`CodeInfo::compiled`] (the call
/// site at `offset` exactly for a return address, the next one for a `leaf`'s pc), else
/// the blob's name alone.
pub fn frames(info: &CodeInfo, offset: u32, leaf: bool) -> Vec<(String, bool)> {
    let found = if offset >= FRAME_OFFSET_MAX {
        None
    } else {
        let at = info.compiled.partition_point(|(pc, _)| *pc < offset);
        info.compiled
            .get(at)
            .filter(|(pc, _)| leaf || *pc == offset)
    };
    match found {
        Some((_, frames)) => frames
            .iter()
            .enumerate()
            .map(|(i, symbol)| (symbol.clone(), i > 0))
            .collect(),
        None => vec![(info.name.clone(), false)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Memory by byte: address -> byte; bytes never written read as 0.
    #[derive(Default)]
    struct Pages(HashMap<u64, u8>);

    impl Memory for Pages {
        fn read(&self, address: u64, length: usize) -> Option<Vec<u8>> {
            Some(
                (0..length as u64)
                    .map(|i| self.0.get(&(address + i)).copied().unwrap_or(0))
                    .collect(),
            )
        }
    }

    impl Pages {
        fn put(&mut self, at: u64, bytes: &[u8]) {
            for (i, byte) in bytes.iter().enumerate() {
                self.0.insert(at + i as u64, *byte);
            }
        }
    }

    /// JDK 17's offsets of what compiled frames need, as its `gHotSpotVMStructs` states
    /// them (read from Debian's 17.0 here), and the rest of a [`Layout`] at 0.
    fn jdk17() -> Layout {
        let mut tables = VmStructs::default();
        let fields = [
            ("CodeBlob::_code_begin", 32),
            ("CodeBlob::_frame_complete_offset", 20),
            ("CodeBlob::_frame_size", 28),
            ("CodeBlob::_name", 96),
            ("CodeBlob::_size", 12),
            ("CodeHeap::_log2_segment_size", 256),
            ("CodeHeap::_memory", 8),
            ("CodeHeap::_segmap", 120),
            ("CompiledMethod::_method", 112),
            ("CompiledMethod::_scopes_data_begin", 120),
            ("GrowableArrayBase::_len", 0),
            ("GrowableArray<int>::_data", 8),
            ("PcDesc::_pc_offset", 0),
            ("PcDesc::_scope_decode_offset", 4),
            ("VirtualSpace::_high_boundary", 8),
            ("VirtualSpace::_low_boundary", 0),
            ("VirtualSpace::_low", 16),
            ("VirtualSpace::_high", 24),
            ("nmethod::_dependencies_offset", 272),
            ("nmethod::_metadata_offset", 260),
            ("nmethod::_scopes_pcs_offset", 268),
        ];
        for (name, offset) in fields {
            tables.fields.insert(name.into(), Field::Offset(offset));
        }
        for name in [
            "CodeCache::_low_bound",
            "CodeCache::_high_bound",
            "Method::_constMethod",
            "ConstMethod::_constants",
            "ConstMethod::_name_index",
            "ConstMethod::_signature_index",
            "ConstantPool::_pool_holder",
            "Klass::_name",
            "Symbol::_length",
            "Symbol::_body",
        ] {
            tables.fields.insert(name.into(), Field::Offset(0));
        }
        tables
            .fields
            .insert("CodeCache::_heaps".into(), Field::Static(0x1000));
        tables.sizes.insert("ConstantPool".into(), 0x48);
        tables.sizes.insert("HeapBlock".into(), 16);
        tables.sizes.insert("PcDesc".into(), 16);
        Layout::of(&tables).unwrap()
    }

    #[test]
    fn the_code_heaps_are_read_through_the_growable_array() {
        let layout = jdk17();
        let mut memory = Pages::default();
        // CodeCache::_heaps -> array {len 2, data} -> two CodeHeap*.
        memory.put(0x1000, &0x2000u64.to_le_bytes());
        memory.put(0x2000, &2i32.to_le_bytes());
        memory.put(0x2008, &0x3000u64.to_le_bytes());
        memory.put(0x3000, &0x4000u64.to_le_bytes());
        memory.put(0x3008, &0x5000u64.to_le_bytes());
        for (heap, low) in [(0x4000u64, 0x7000_0000u64), (0x5000, 0x7100_0000)] {
            memory.put(heap + 8, &low.to_le_bytes());
            memory.put(heap + 16, &(low + 0x10_0000).to_le_bytes());
            memory.put(heap + 120, &(low - 0x1000_0000).to_le_bytes());
            memory.put(heap + 256, &7i32.to_le_bytes());
        }
        let cache = read_code_cache(&memory, &layout).unwrap();
        assert_eq!(cache.count, 2);
        assert_eq!(cache.segment_shift, 7);
        assert_eq!((cache.heap_block_size, cache.frame_size_offset), (16, 28));
        // Where the kernel finds a sampled leaf's prologue: `_code_begin` is a pointer.
        assert_eq!(
            (
                cache.frame_complete_offset,
                cache.code_begin_offset,
                cache.code_begin_is_offset
            ),
            (20, 32, 0)
        );
        // `nmethod::_compile_id` is not among this table's fields: frames carry no
        // generation.
        assert_eq!(cache.compile_id_offset, 0);
        assert_eq!(
            (
                cache.heaps[1].low,
                cache.heaps[1].high,
                cache.heaps[1].segmap
            ),
            (0x7100_0000, 0x7110_0000, 0x6100_0000)
        );
        assert!(in_code_cache(&cache, 0x700f_ffff));
        assert!(!in_code_cache(&cache, 0x7010_0000));
        // A heap not set up yet (no segment map) is an error, not a cache.
        memory.put(0x5000 + 120, &0u64.to_le_bytes());
        assert!(read_code_cache(&memory, &layout).is_err());
    }

    #[test]
    fn an_nmethod_names_each_call_site_with_its_inlined_methods() {
        let layout = jdk17();
        let blob = 0x10_0000u64;
        let mut memory = Pages::default();
        memory.put(0x9000, b"nmethod\0");
        memory.put(blob + 96, &0x9000u64.to_le_bytes());
        memory.put(blob + 112, &0xA000u64.to_le_bytes());
        // Code at blob + 0x100; metadata at 0x400, scopes at 0x410, PcDescs 0x420..0x440.
        memory.put(blob + 32, &(blob + 0x100).to_le_bytes());
        memory.put(blob + 260, &0x400i32.to_le_bytes());
        memory.put(blob + 120, &(blob + 0x410).to_le_bytes());
        memory.put(blob + 268, &0x420i32.to_le_bytes());
        memory.put(blob + 272, &0x440i32.to_le_bytes());
        memory.put(blob + 0x400, &0xA000u64.to_le_bytes());
        memory.put(blob + 0x408, &0xB000u64.to_le_bytes());
        // Scope 1: the compiled method at bci 4; scope 4: 0xB000 at bci 2 inlined at 1.
        memory.put(
            blob + 0x410,
            &[0, 0, 1, 5, 1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        );
        let desc = |pc: i32, decode: i32| {
            let mut bytes = pc.to_le_bytes().to_vec();
            bytes.extend_from_slice(&decode.to_le_bytes());
            bytes.extend_from_slice(&[0; 8]);
            bytes
        };
        memory.put(blob + 0x420, &desc(0x20, 4));
        memory.put(blob + 0x430, &desc(0x40, 1));
        let info = read_blob(&memory, &layout, blob, &mut |method| {
            Some(CodeInfo {
                name: format!("M{method:x}"),
                file: "M.java".into(),
                first_line: 0,
                // bci 0.. line 7, bci 2.. line 8, bci 4.. line 9.
                linetable: vec![0x07, 0x11, 0x11, 0x00],
                minor: 0,
                compiled: Vec::new(),
            })
        })
        .unwrap();
        assert_eq!(info.name, "Ma000");
        assert_eq!(
            info.compiled,
            [
                (
                    0x120,
                    vec!["Ma000 (M.java:9)".to_string(), "Mb000 (M.java:8)".into()]
                ),
                (0x140, vec!["Ma000 (M.java:9)".to_string()]),
            ]
        );
        // Any other blob is its name.
        memory.put(0x9000, b"StubRoutines (1)\0");
        let stub = read_blob(&memory, &layout, blob, &mut |_| None).unwrap();
        assert_eq!(
            (stub.name.as_str(), stub.compiled.len()),
            ("StubRoutines (1)", 0)
        );
    }

    #[test]
    fn a_blob_is_read_only_while_it_holds_the_generation_recorded() {
        let low = 0x7f65_7330_0000u64;
        let mut cache = CodeCache {
            count: 1,
            segment_shift: 7,
            heap_block_size: 16,
            compile_id_offset: 200,
            ..CodeCache::default()
        };
        cache.heaps[0] = tracekit_common::interp::hotspot::CodeHeap {
            low,
            high: low + 0x10_0000,
            segmap: 0x1000,
        };
        // A blob of 1,000 segments (125 KiB) at segment 0x89: its first segment is 0,
        // the others the hops back (at most 254), as HotSpot marks them.
        let mut memory = Pages::default();
        let first = 0x89u64;
        for segment in 0..1000u64 {
            let hops = if segment == 0 {
                0
            } else {
                (segment - 1) % 254 + 1
            };
            memory.put(0x1000 + first + segment, &[hops as u8]);
        }
        memory.put(0x1000 + first + 1000, &[0xFF]);
        let blob = low + (first << 7) + 16;
        memory.put(blob + 200, &140i32.to_le_bytes());
        let encode = |at, id| tracekit_common::interp::hotspot::encode_blob(at, id, 7, 16);
        // The frame's 4 bits (140 & 15 == 12) and the announcement's 16 bits agree.
        assert_eq!(
            blob_of(&memory, &cache, encode(blob, 140), None),
            Some((blob, 0))
        );
        assert_eq!(
            blob_of(&memory, &cache, encode(blob, 140), Some(140)),
            Some((blob, 0))
        );
        // The nmethod the frame was of (107) is gone: its space holds 140 now.
        assert_eq!(blob_of(&memory, &cache, encode(blob, 107), None), None);
        // Same low bits, another compilation: only the announcement tells them apart.
        assert_eq!(
            blob_of(&memory, &cache, encode(blob, 124), None),
            Some((blob, 0))
        );
        assert_eq!(blob_of(&memory, &cache, encode(blob, 124), Some(124)), None);
        // A frame recorded from the blob's second 64 KiB window.
        let window = encode(blob + 0x1_0000, 140);
        assert_eq!(
            blob_of(&memory, &cache, window, Some(140)),
            Some((blob, 0x1_0000))
        );
        // Free space: nothing.
        assert_eq!(
            blob_of(
                &memory,
                &cache,
                encode(low + ((first + 1000) << 7) + 16, 140),
                None
            ),
            None
        );
        // A JVM that does not state `_compile_id`: the blob as recorded.
        let plain = CodeCache {
            compile_id_offset: 0,
            ..cache
        };
        assert_eq!(
            blob_of(&memory, &plain, encode(blob, 107), Some(107)),
            Some((blob, 0))
        );
    }

    #[test]
    fn a_window_of_a_large_blob_keeps_its_call_sites() {
        let info = CodeInfo {
            name: "Big.run".into(),
            file: String::new(),
            first_line: 0,
            linetable: Vec::new(),
            minor: 0,
            compiled: vec![
                (0x120, vec!["Big.run (Big.java:3)".into()]),
                (0x1_0040, vec!["Big.run (Big.java:900)".into()]),
            ],
        };
        let window = from_window(info.clone(), 0x1_0000);
        assert_eq!(
            frames(&window, 0x40, false),
            [("Big.run (Big.java:900)".to_string(), false)]
        );
        assert_eq!(from_window(info.clone(), 0), info);
    }

    #[test]
    fn scopes_decode_to_their_methods_and_bcis() {
        // Metadata: two Method*s. Scope at 1: the compiled method itself (sender 0,
        // method 1, bci 4 as 5); scope at 4: inlined method 2 at bci 0 (as 1), sent from 1.
        let mut metadata = Vec::new();
        metadata.extend_from_slice(&0x1000u64.to_le_bytes());
        metadata.extend_from_slice(&0x2000u64.to_le_bytes());
        let scopes = [0u8, 0, 1, 5, 1, 2, 1];
        let debug = DebugInfo {
            metadata: &metadata,
            scopes: &scopes,
            excess: 0,
        };
        assert_eq!(debug.scopes(4), [(0x2000, 0), (0x1000, 4)]);
        assert_eq!(debug.scopes(1), [(0x1000, 4)]);
        // A cut scope, or a method index beyond the metadata: nothing.
        assert_eq!(debug.scopes(5), Vec::new());
        let bad = [0u8, 0, 3, 5];
        let debug = DebugInfo {
            metadata: &metadata,
            scopes: &bad,
            excess: 0,
        };
        assert_eq!(debug.scopes(1), Vec::new());
    }

    #[test]
    fn a_return_address_takes_its_call_site_and_a_leaf_pc_the_next() {
        let info = CodeInfo {
            name: "Ledger.sumCents".into(),
            file: String::new(),
            first_line: 0,
            linetable: Vec::new(),
            minor: 0,
            compiled: vec![
                (0x120, vec!["A.outer (A.java:3)".into()]),
                (
                    0x180,
                    vec!["A.outer (A.java:4)".into(), "A.inner (A.java:9)".into()],
                ),
            ],
        };
        let outer = [("A.outer (A.java:3)".to_string(), false)];
        assert_eq!(frames(&info, 0x120, false), outer);
        assert_eq!(frames(&info, 0x120, true), outer);
        let inlined = [
            ("A.outer (A.java:4)".to_string(), false),
            ("A.inner (A.java:9)".to_string(), true),
        ];
        assert_eq!(frames(&info, 0x121, true), inlined);
        // A return address that is no call site of the method's debug information.
        let alone = [("Ledger.sumCents".to_string(), false)];
        assert_eq!(frames(&info, 0x121, false), alone);
        assert_eq!(frames(&info, 0x181, true), alone);
        assert_eq!(frames(&info, FRAME_OFFSET_MAX, true), alone);
    }
}
