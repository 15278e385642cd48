//! HotSpot's offset slots ([`super::InterpProcess::offsets`]), from the JVM's
//! `gHotSpotVMStructs`. `eval_begin..eval_end` is the template interpreter's code
//! (`AbstractInterpreter::_code`, a `StubQueue` in the code cache). Interpreted frames keep
//! rbp as a frame pointer and hold the frame's `Method*` at `rbp - METHOD_SLOT` and its
//! bytecode pointer at `rbp - BCP_SLOT`; such a frame is recorded as its `Method*` and its
//! bytecode index (`bcp - (constMethod + sizeof(ConstMethod))`, 0 when it is not in the
//! method's code).
//!
//! A pc in the code cache's heaps ([`CodeCache`], `HOTSPOT_CODE`) is recorded as
//! its `CodeBlob` (found through the heap's segment map) and the pc's offset in bytes from
//! the blob (saturated at [`super::FRAME_OFFSET_MAX`]: the code pointer tells the two kinds
//! apart, a `Method*` is never in the code cache), and stepped by `CodeBlob::_frame_size`.

/// Bytes below rbp of the interpreter frame's `Method*`.
pub const METHOD_SLOT: usize = 0;
/// Bytes below rbp of its bytecode pointer.
pub const BCP_SLOT: usize = 1;
/// `Method::_constMethod`.
pub const METHOD_CONST_METHOD: usize = 2;
/// `sizeof(ConstMethod)`: where the bytecodes start in a `ConstMethod`.
pub const CONST_METHOD_SIZE: usize = 3;
/// Bytes below rbp of the interpreter frame's sender sp (the caller's unextended sp,
/// where a compiled caller's frame starts).
pub const SENDER_SP_SLOT: usize = 4;
/// `ConstMethod::_constants` (the method's `ConstantPool*`), for its [`fingerprint`].
pub const CONST_METHOD_CONSTANTS: usize = 5;
/// `ConstantPool::_pool_holder` (the method's class, a `Klass*`).
pub const CONSTANT_POOL_HOLDER: usize = 6;
/// `Klass::_name` (the class name's `Symbol*`).
pub const KLASS_NAME: usize = 7;
/// `ConstMethod::_name_index` (a u16: the method name's constant pool slot).
pub const CONST_METHOD_NAME_INDEX: usize = 8;
/// `ConstMethod::_signature_index` (a u16).
pub const CONST_METHOD_SIGNATURE_INDEX: usize = 9;

/// A fingerprint of the method whose `ConstMethod*` is `const_method`, whose constant
/// pool is `constants`, whose class name is `Symbol*` `class_name`, and whose name and
/// signature are constant pool slots `name_index` and `signature_index`: 16 bits that
/// differ, but for 1 in 65,536, between two methods that held the same `Method*` one
/// after the other (a class unloaded and its metaspace given to another: the address
/// says nothing, the names' symbols and the pool do). The kernel computes it when it
/// records an interpreted frame ([`encode_fingerprint`]) and userspace again from the
/// process's memory before it names the frame.
#[inline(always)]
pub fn fingerprint(
    const_method: u64,
    constants: u64,
    class_name: u64,
    name_index: u16,
    signature_index: u16,
) -> u16 {
    let mut hash = const_method
        ^ constants.rotate_left(21)
        ^ class_name.rotate_left(42)
        ^ (u64::from(name_index) | u64::from(signature_index) << 16);
    hash = hash.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    hash ^= hash >> 29;
    hash = hash.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    (hash >> 48) as u16
}

/// The code pointer of a fingerprint word ([`encode_fingerprint`]), below any
/// `Method*` or blob; one with an unreadable fingerprint has twice it.
pub const FINGERPRINT_CODE: u64 = 8;

/// The word that follows an interpreted frame's (toward the root) in a recorded stack:
/// its method's [`fingerprint`] (`None`: unreadable), as a HotSpot frame of code pointer
/// [`FINGERPRINT_CODE`] whose offset is the fingerprint. It is no frame of its own.
#[inline(always)]
pub fn encode_fingerprint(fingerprint: Option<u16>) -> u64 {
    match fingerprint {
        Some(fingerprint) => super::encode_frame(
            super::runtime::HOTSPOT,
            FINGERPRINT_CODE,
            u64::from(fingerprint),
        ),
        None => super::encode_frame(super::runtime::HOTSPOT, 2 * FINGERPRINT_CODE, 0),
    }
}

/// The fingerprint of a word [`encode_fingerprint`] wrote (`Some(None)`: it was
/// unreadable); `None` when `word` is not one.
pub fn decode_fingerprint(word: u64) -> Option<Option<u16>> {
    match super::decode_frame(word)? {
        (super::runtime::HOTSPOT, FINGERPRINT_CODE, fingerprint) => Some(Some(fingerprint as u16)),
        (super::runtime::HOTSPOT, code, _) if code == 2 * FINGERPRINT_CODE => Some(None),
        _ => None,
    }
}

/// Bit of a [`method_key`] that says it holds a fingerprint (never set in an address).
pub const METHOD_KEY_FLAG: u64 = 1 << 63;
/// Bit where a [`method_key`]'s fingerprint starts: above its `Method*` shifted right by 3
/// (metaspace words are 8-byte aligned), 45 bits for user addresses below 2^48 (arm64's
/// reach it: a JVM's metaspace there is above 2^47).
pub const METHOD_KEY_SHIFT: u32 = 45;

/// The code object an interpreted frame of `method` with `fingerprint` is announced and
/// named as: one per (`Method*`, fingerprint), so that a `Method*` reused by another
/// method is another code object. [`split_method_key`] undoes it.
#[inline(always)]
pub fn method_key(method: u64, fingerprint: u16) -> u64 {
    METHOD_KEY_FLAG
        | (u64::from(fingerprint) << METHOD_KEY_SHIFT)
        | ((method >> 3) & ((1 << METHOD_KEY_SHIFT) - 1))
}

/// The `Method*` and fingerprint of a [`method_key`]; `None` for any other code pointer.
pub fn split_method_key(key: u64) -> Option<(u64, u16)> {
    (key & METHOD_KEY_FLAG != 0).then_some((
        (key & ((1 << METHOD_KEY_SHIFT) - 1)) << 3,
        (key >> METHOD_KEY_SHIFT) as u16,
    ))
}

/// Code heaps of one JVM at most ([`CodeCache::heaps`]; JDK 9+ has 1 or 3).
pub const MAX_CODE_HEAPS: usize = 4;
/// JVMs whose compiled frames the kernel unwinds at once (`HOTSPOT_CODE` entries).
pub const MAX_JVMS: u32 = 1024;
/// Hops through a code heap's segment map at most: one hop goes back up to 254
/// segments, so 16 hops find the start of any blob below about 500 KiB with 128-byte
/// segments (C2's largest methods are tens of KiB).
pub const SEGMAP_HOPS: u32 = 16;
/// A segment map byte of a segment that starts a block.
pub const SEGMAP_START: u8 = 0;
/// A segment map byte of a free segment.
pub const SEGMAP_FREE: u8 = 0xFF;
/// The largest `CodeBlob::_frame_size` believed, in words (larger: the blob is not
/// stepped by its size).
pub const MAX_FRAME_WORDS: u32 = 8192;

/// One code heap: its reserved code memory `[low, high)` and its segment map (one byte
/// per `1 << CodeCache::segment_shift` bytes of code: 0 at a block's first segment, the
/// hops back to it elsewhere, 0xFF when free).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodeHeap {
    /// `CodeHeap::_memory._low_boundary`.
    pub low: u64,
    /// `CodeHeap::_memory._high_boundary`.
    pub high: u64,
    /// `CodeHeap::_segmap._low_boundary`.
    pub segmap: u64,
}

/// A JVM's code cache, where its compiled (C1/C2) methods, stubs and adapters are
/// (`HOTSPOT_CODE`, pid (tgid) to this; written by userspace when the JVM's layout is
/// read). A pc in a heap belongs to the `CodeBlob` found through the segment map: at
/// `low + (segment << segment_shift) + heap_block_size`. 128 bytes, no padding.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodeCache {
    /// The heaps, `count` of them.
    pub heaps: [CodeHeap; MAX_CODE_HEAPS],
    /// Heaps in use.
    pub count: u32,
    /// `CodeHeap::_log2_segment_size`.
    pub segment_shift: u32,
    /// `sizeof(HeapBlock)`: the block header before each blob.
    pub heap_block_size: u32,
    /// `CodeBlob::_frame_size` (an i32, in words: the frame with its return address).
    pub frame_size_offset: u32,
    /// `CodeBlob::_frame_complete_offset` (an i32: bytes from the code's start to the
    /// first instruction after the prologue); 0 when the JVM does not state it (a
    /// sampled prologue is then stepped as a whole frame).
    pub frame_complete_offset: u32,
    /// `CodeBlob::_code_begin` (a pointer, JDK 9-22) or `_code_offset` (an i32 from the
    /// blob, [`CodeCache::code_begin_is_offset`]).
    pub code_begin_offset: u32,
    /// 1 when `code_begin_offset` is `_code_offset`, 0 for `_code_begin`.
    pub code_begin_is_offset: u32,
    /// `nmethod::_compile_id` (an i32: the compilation's number, new for each nmethod
    /// the JVM makes; [`encode_blob`]); 0 when the JVM does not state it (a blob's
    /// frames then carry no generation).
    pub compile_id_offset: u32,
}

/// The most bits of a generation an encoded blob carries ([`encode_blob`]).
pub const MAX_GENERATION_BITS: u32 = 12;

/// How many bits of a blob's generation fit into the low bits of its address, with
/// `segment_shift` and `heap_block_size` of [`CodeCache`]: a blob starts at
/// `heap_block_size` bytes past a segment's start, so its address bits 3 to
/// `segment_shift - 1` are known (4 bits with JDK 17's 128-byte segments, 2 at the
/// smallest segments HotSpot allows on x86_64, 32 bytes). 0 when they are not known.
#[inline(always)]
pub fn generation_bits(segment_shift: u32, heap_block_size: u32) -> u32 {
    if segment_shift <= 3
        || segment_shift > 16
        || heap_block_size & 7 != 0
        || u64::from(heap_block_size) >= 1 << segment_shift
    {
        return 0;
    }
    let bits = segment_shift - 3;
    if bits > MAX_GENERATION_BITS {
        MAX_GENERATION_BITS
    } else {
        bits
    }
}

/// The code pointer a frame and an announcement record for code cache blob `blob` of
/// generation `generation` (its nmethod's `_compile_id`): the blob's segment start
/// plus the generation's low [`generation_bits`] bits times 8, so that a blob freed
/// and given to other code is another code object (named again) while the pointer
/// stays in the same segment; [`decode_blob`] undoes it. `blob` itself when no bits
/// fit.
#[inline(always)]
pub fn encode_blob(blob: u64, generation: u32, segment_shift: u32, heap_block_size: u32) -> u64 {
    let bits = generation_bits(segment_shift, heap_block_size);
    if bits == 0 {
        return blob;
    }
    let start = blob - u64::from(heap_block_size);
    start + ((u64::from(generation) & ((1 << bits) - 1)) << 3)
}

/// The blob and generation bits of a code pointer [`encode_blob`] wrote (`code` and 0
/// when no bits fit).
pub fn decode_blob(code: u64, segment_shift: u32, heap_block_size: u32) -> (u64, u32) {
    let bits = generation_bits(segment_shift, heap_block_size);
    if bits == 0 {
        return (code, 0);
    }
    let segment = (1u64 << segment_shift) - 1;
    (
        (code & !segment) + u64::from(heap_block_size),
        ((code & segment) >> 3) as u32,
    )
}

/// The mask of a generation's bits an encoded blob keeps.
pub fn generation_mask(segment_shift: u32, heap_block_size: u32) -> u32 {
    (1 << generation_bits(segment_shift, heap_block_size)) - 1
}

/// Where a leaf frame of compiled code (or a stub), sampled at its pc, keeps its caller's
/// pc and frame pointer: told apart by the instructions of its prologue and epilogue
/// (x86_64: `tracekit_ebpf`'s byte patterns; arm64: [`arm64_edge`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edge {
    /// The frame is whole: its size says where the return address and the saved frame
    /// pointer are (at its top, the return address above the frame pointer).
    Whole,
    /// x86_64: the stack pointer points at the return address; rbp is still the caller's
    /// (before the prologue pushed or stored anything, or after the epilogue popped rbp).
    ReturnAddress,
    /// The saved frame pointer is at the stack pointer, the return address above it
    /// (x86_64: after `push rbp`, or at the epilogue's `pop rbp`; arm64: after
    /// `stp x29, x30, [sp, #-16]!`, or at `ldp x29, x30, [sp], #16`).
    SavedRbp,
    /// x86_64: the frame is allocated but rbp is not stored in it yet: stepped by the
    /// frame size, rbp is still the caller's.
    RbpInRegister,
    /// arm64: the return address is in the link register (x30) and the stack pointer and
    /// x29 are the caller's (before the prologue allocated or stored anything, or after
    /// the epilogue freed the frame).
    LinkRegister,
    /// arm64: the frame is allocated but the return address and the caller's x29 are
    /// still in registers (at `stp x29, x30, [sp, #N]`, or after `ldp x29, x30, [sp, #N]`
    /// at the `add sp` that frees the frame).
    AllocatedLinkRegister,
}

/// The arm64 instructions HotSpot builds and tears down compiled frames with
/// (`MacroAssembler::build_frame` and `remove_frame` of JDK 17's
/// macroAssembler_aarch64.cpp: the frame record, x29 and x30, at the frame's top), as
/// 32-bit words.
pub mod arm64 {
    /// The operand bits of a load or store pair of x29 (Rt) and x30 (Rt2) at sp (Rn).
    const FRAME_RECORD: u32 = 29 | 30 << 10 | 31 << 5;
    /// A 64-bit load or store pair's opcode, addressing mode and registers (not its
    /// offset).
    const PAIR_MASK: u32 = 0xFFC0_7FFF;
    /// `stp x29, x30, [sp, #N]` (signed offset).
    pub const STP_RECORD: u32 = 0xA900_0000 | FRAME_RECORD;
    /// `stp x29, x30, [sp, #-N]!` (pre-index).
    pub const STP_RECORD_PUSH: u32 = 0xA980_0000 | FRAME_RECORD;
    /// `ldp x29, x30, [sp, #N]` (signed offset).
    pub const LDP_RECORD: u32 = 0xA940_0000 | FRAME_RECORD;
    /// `ldp x29, x30, [sp], #N` (post-index).
    pub const LDP_RECORD_POP: u32 = 0xA8C0_0000 | FRAME_RECORD;
    /// `ret` (to x30).
    pub const RET: u32 = 0xD65F_03C0;

    /// Whether `word` is the pair instruction `pair` (one of the `*_RECORD*` words) at any
    /// offset.
    #[inline(always)]
    pub fn is_pair(word: u32, pair: u32) -> bool {
        word & PAIR_MASK == pair
    }

    /// Whether `word` moves sp by `sub` (else `add`): `sub sp, sp, #imm` (shifted or not)
    /// or `sub sp, sp, xM` (extended register), for frames past 4 KiB.
    #[inline(always)]
    pub fn moves_sp(word: u32, sub: bool) -> bool {
        let (immediate, register) = if sub {
            (0xD100_03FF, 0xCB20_03FF)
        } else {
            (0x9100_03FF, 0x8B20_03FF)
        };
        word & 0xFF80_03FF == immediate || word & 0xFFE0_03FF == register
    }
}

/// [`Edge`] of an arm64 leaf frame sampled at instruction `here`, with the instructions
/// before it (`before[0]` at pc - 4, up to pc - 16; 0 for a word outside the code, or
/// before the code's start in a prologue), and whether pc is in the prologue (before
/// `_code_begin + _frame_complete_offset`). The prologue (after the inline cache check
/// and the stack bang) is `sub sp; stp x29, x30, [sp, #N]` for frames below 528 bytes,
/// else `stp x29, x30, [sp, #-16]!; [mov x29, sp;] [mov x8, #N;] sub sp`; the epilogue
/// is `ldp x29, x30, [sp, #N]; add sp` or `add sp; ldp x29, x30, [sp], #16`, then the
/// return poll (`ldr`, `cmp sp`, `b.hi`, C1 and C2 alike) and `ret`.
#[inline(always)]
pub fn arm64_edge(here: u32, before: [u32; 4], prologue: bool) -> Edge {
    use arm64::{LDP_RECORD, LDP_RECORD_POP, RET, STP_RECORD, STP_RECORD_PUSH, is_pair, moves_sp};
    if prologue {
        if is_pair(here, STP_RECORD) {
            return Edge::AllocatedLinkRegister;
        }
        for word in before {
            if moves_sp(word, true) || is_pair(word, STP_RECORD) {
                return Edge::Whole;
            }
            if is_pair(word, STP_RECORD_PUSH) {
                return Edge::SavedRbp;
            }
        }
        // The inline cache check, the stack bang, the first `sub sp` or `stp`.
        return Edge::LinkRegister;
    }
    if here == RET {
        return Edge::LinkRegister;
    }
    if is_pair(here, LDP_RECORD_POP) {
        return Edge::SavedRbp;
    }
    if moves_sp(here, false) && is_pair(before[0], LDP_RECORD) {
        return Edge::AllocatedLinkRegister;
    }
    // In the return poll after the frame was freed.
    for (index, word) in before.iter().enumerate() {
        let freed = is_pair(*word, LDP_RECORD_POP)
            || (moves_sp(*word, false) && index < 3 && is_pair(before[index + 1], LDP_RECORD));
        if freed {
            return Edge::LinkRegister;
        }
    }
    Edge::Whole
}
