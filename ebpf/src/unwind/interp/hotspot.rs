//! HotSpot (OpenJDK's JVM) interpreted Java frames. The template interpreter's code is
//! generated into the code cache (anonymous memory, no unwind rows) and keeps rbp as a
//! frame pointer, so the walk steps through it by frame pointer; each interpreter frame
//! holds its `Method*` and bytecode pointer at fixed slots below rbp (layout in
//! `tracekit_common::interp::hotspot`, from the JVM's `gHotSpotVMStructs`) and is recorded
//! as that `Method*` and its bytecode index, followed by a word with its method's
//! fingerprint (a `Method*` can be reused by another class's method after an unloading).
//!
//! Compiled (C1/C2) code, stubs and adapters are in the code cache's heaps
//! ([`CodeCache`], from userspace). A pc there belongs to the `CodeBlob` whose block starts
//! at the segment found by hopping back through the heap's segment map; the frame is
//! recorded as that blob and the pc's offset from it (userspace names an `nmethod` by its
//! `Method*` and its scopes), and stepped by `CodeBlob::_frame_size` (C1/C2 code uses rbp
//! as an ordinary register), or by frame pointer for blobs of no stated size (the call
//! stub, which keeps one).
//!
//! A sampled leaf pc in a blob's prologue or epilogue is in a frame only partly built or
//! already torn down, where stepping by the frame size would read the wrong slots and lose
//! or invent callers. [`edge`] tells those pcs apart from the instructions HotSpot's
//! prologues and epilogues are made of (C1, C2, native wrappers, runtime stubs), as the
//! OpenTelemetry profiler's HotSpot unwinder does: on x86_64 the stack bang, `push rbp`,
//! `sub rsp`, `mov [rsp+N], rbp`; `pop rbp`, the return poll, `ret`; on arm64
//! (`tracekit_common::interp::hotspot::arm64_edge`) `sub sp` and `stp x29, x30`, `ldp x29,
//! x30` and `add sp`, the return poll, `ret`, where a leaf's return address may still be
//! in the link register.

use tracekit_common::interp::{
    FRAME_OFFSET_MAX, InterpStat, NO_OFFSET,
    hotspot::{
        BCP_SLOT, CONST_METHOD_CONSTANTS, CONST_METHOD_NAME_INDEX, CONST_METHOD_SIGNATURE_INDEX,
        CONST_METHOD_SIZE, CONSTANT_POOL_HOLDER, KLASS_NAME, MAX_CODE_HEAPS, MAX_FRAME_WORDS,
        METHOD_CONST_METHOD, METHOD_SLOT, SEGMAP_FREE, SEGMAP_HOPS, SEGMAP_START, SENDER_SP_SLOT,
        arm64_edge, encode_blob, encode_fingerprint, fingerprint, method_key,
    },
    runtime,
};

pub use tracekit_common::interp::hotspot::Edge;

use super::{InterpWalk, announce_code, announce_generation, bump, read_user, record};
use crate::unwind::UnwindMaps;

#[inline(always)]
fn offset(walk: &InterpWalk, slot: usize) -> u64 {
    u64::from(walk.process.offsets[slot])
}

/// Whether native `pc` of the walk's process is in HotSpot's template interpreter.
#[inline(always)]
pub fn in_interpreter(walk: &InterpWalk, pc: u64) -> bool {
    walk.process.runtime == runtime::HOTSPOT
        && walk.process.eval_begin <= pc
        && pc < walk.process.eval_end
}

/// The encoded Java frame of the interpreter frame whose frame pointer is `fp`, or `None`
/// (memory that cannot be read: the frame stays native). The fingerprint word of its
/// method, which follows it in the stack
/// ([`tracekit_common::interp::hotspot::encode_fingerprint`]: a `Method*` reused by
/// another method after its class was unloaded is told apart), goes to `fingerprint` (the
/// walk's own slot, in its per-CPU map value). The method is announced as its
/// [`method_key`], once per fingerprint.
#[inline(always)]
pub fn frame<M: UnwindMaps>(walk: &InterpWalk, fp: u64, fingerprint: &mut u64) -> Option<u64> {
    bump::<M>(InterpStat::EvalFrames);
    let method_slot = offset(walk, METHOD_SLOT);
    if fp < 4096 + offset(walk, BCP_SLOT) || method_slot == 0 {
        bump::<M>(InterpStat::ReadErrors);
        return None;
    }
    let method = match read_user::<u64>(fp - method_slot) {
        Some(method) if method >= 4096 && method & 7 == 0 => method,
        _ => {
            bump::<M>(InterpStat::ReadErrors);
            return None;
        }
    };
    let const_method = read_user::<u64>(method + offset(walk, METHOD_CONST_METHOD));
    let bci = const_method
        .and_then(|const_method| bytecode_index(walk, fp, const_method))
        .unwrap_or(0);
    let method_fingerprint =
        const_method.and_then(|const_method| method_fingerprint(walk, const_method));
    if let Some(method_fingerprint) = method_fingerprint {
        announce_code::<M>(walk, method_key(method, method_fingerprint));
    }
    *fingerprint = encode_fingerprint(method_fingerprint);
    Some(record::<M>(
        InterpStat::Frames,
        runtime::HOTSPOT,
        method,
        bci,
    ))
}

/// The frame's bytecode index: its bytecode pointer from the start of its method's
/// bytecodes (which follow the `ConstMethod`).
#[inline(always)]
fn bytecode_index(walk: &InterpWalk, fp: u64, const_method: u64) -> Option<u64> {
    let bcp = read_user::<u64>(fp - offset(walk, BCP_SLOT))?;
    let codes = const_method + offset(walk, CONST_METHOD_SIZE);
    (bcp >= codes && bcp - codes < 65536).then(|| bcp - codes)
}

/// The [`fingerprint`] of the method whose `ConstMethod` is at `const_method`: its constant
/// pool, its class's name and its name and signature indexes (`None`: unreadable, or a
/// slot the layout lacks).
#[inline(always)]
fn method_fingerprint(walk: &InterpWalk, const_method: u64) -> Option<u16> {
    let slots = &walk.process.offsets;
    if slots[CONST_METHOD_CONSTANTS] == NO_OFFSET
        || slots[CONSTANT_POOL_HOLDER] == NO_OFFSET
        || slots[KLASS_NAME] == NO_OFFSET
        || slots[CONST_METHOD_NAME_INDEX] == NO_OFFSET
        || slots[CONST_METHOD_SIGNATURE_INDEX] == NO_OFFSET
    {
        return None;
    }
    let constants = read_user::<u64>(const_method + offset(walk, CONST_METHOD_CONSTANTS))?;
    let holder = read_user::<u64>(constants + offset(walk, CONSTANT_POOL_HOLDER))?;
    let class_name = read_user::<u64>(holder + offset(walk, KLASS_NAME))?;
    let name_index = read_user::<u16>(const_method + offset(walk, CONST_METHOD_NAME_INDEX))?;
    let signature_index =
        read_user::<u16>(const_method + offset(walk, CONST_METHOD_SIGNATURE_INDEX))?;
    Some(fingerprint(
        const_method,
        constants,
        class_name,
        name_index,
        signature_index,
    ))
}

/// The largest gap believed between an interpreter frame's top and the sender sp it saved
/// (the arguments a c2i adapter pushed).
pub const MAX_SENDER_GAP: u64 = 64 * 1024;

/// The sender sp saved in the interpreter frame whose frame pointer is `fp`, where the
/// JVM's layout states its slot.
#[inline(always)]
pub fn sender_sp(walk: &InterpWalk, fp: u64) -> Option<u64> {
    let slot = walk.process.offsets[SENDER_SP_SLOT];
    if slot == NO_OFFSET || slot == 0 || fp < 4096 + u64::from(slot) {
        return None;
    }
    read_user::<u64>(fp - u64::from(slot))
}

/// A blob of the code cache holding a pc.
pub struct Blob {
    /// The `CodeBlob`'s address.
    pub address: u64,
    /// Its frame in bytes (0: not stated, or not believed).
    pub frame_bytes: u64,
}

/// The code cache blob holding `pc` (adjusted into the call for return addresses), or
/// `None` when `pc` is not in the walk's JVM's code cache or its blob is not found.
#[inline(always)]
pub fn code_blob<M: UnwindMaps>(walk: &InterpWalk, pc: u64) -> Option<Blob> {
    let code = &walk.code;
    if walk.process.runtime != runtime::HOTSPOT || code.count == 0 {
        return None;
    }
    let mut found = None;
    for (index, heap) in code.heaps.iter().enumerate() {
        if index < MAX_CODE_HEAPS && (index as u32) < code.count && heap.low <= pc && pc < heap.high
        {
            found = Some(*heap);
        }
    }
    let heap = found?;
    let shift = u64::from(code.segment_shift & 63);
    let mut segment = (pc - heap.low) >> shift;
    let mut tag = SEGMAP_FREE;
    for _ in 0..SEGMAP_HOPS {
        tag = match read_user::<u8>(heap.segmap + segment) {
            Some(tag) => tag,
            None => break,
        };
        if tag == SEGMAP_START || tag == SEGMAP_FREE || u64::from(tag) > segment {
            break;
        }
        segment -= u64::from(tag);
    }
    if tag != SEGMAP_START {
        bump::<M>(InterpStat::CompiledMisses);
        return None;
    }
    let address = heap.low + (segment << shift) + u64::from(code.heap_block_size);
    let words = read_user::<i32>(address + u64::from(code.frame_size_offset)).unwrap_or(0);
    let frame_bytes = if words > 1 && (words as u32) <= MAX_FRAME_WORDS {
        words as u64 * 8
    } else {
        0
    };
    Some(Blob {
        address,
        frame_bytes,
    })
}

/// Byte `index` of little-endian `word`.
#[inline(always)]
fn byte(word: u64, index: u32) -> u8 {
    (word >> (8 * index)) as u8
}

/// The three low bytes of `word`: an instruction's opcode with its REX prefix and ModRM.
#[inline(always)]
fn low3(word: u64) -> u32 {
    (word & 0xFF_FFFF) as u32
}

/// `sub rsp, imm8` and `sub rsp, imm32` (REX.W 83 /5, REX.W 81 /5).
const SUB_RSP: [u32; 2] = [0xEC_83_48, 0xEC_81_48];
/// `mov rbp, rsp` (REX.W 89 /r).
const MOV_RBP_RSP: u32 = 0xE5_89_48;
/// `mov [rsp+disp8], rbp` and `mov [rsp+disp32], rbp` (REX.W 89 /r with a SIB byte).
const STORE_RBP: [u32; 2] = [0x24_6C_89_48, 0x24_AC_89_48];
/// `cmp rsp, [r15+disp32]`: the return poll C1 and C2 put between `pop rbp` and `ret`.
const RETURN_POLL: u32 = 0xA7_3B_49;
/// `ja rel32` (0F 87), the return poll's branch to its slow path, just before `ret`.
const JA_REL32: u16 = 0x87_0F;
const PUSH_RBP: u8 = 0x55;
const POP_RBP: u8 = 0x5D;
const RET: u8 = 0xC3;

/// Where the leaf frame of blob `blob` sampled at `pc` (exact: the interrupted
/// instruction starts there) keeps its caller, by the instructions of the architecture's
/// prologues and epilogues. [`Edge::Whole`] when the code cannot be read.
#[inline(always)]
pub fn edge(walk: &InterpWalk, blob: u64, pc: u64) -> Edge {
    if cfg!(bpf_target_arch = "aarch64") {
        edge_arm64(walk, blob, pc)
    } else {
        edge_x86_64(walk, blob, pc)
    }
}

/// The start of blob `blob`'s code and the end of its prologue
/// (`_code_begin + _frame_complete_offset`), where the JVM states them.
#[inline(always)]
fn prologue(walk: &InterpWalk, blob: u64) -> Option<(u64, u64)> {
    let code = &walk.code;
    if code.frame_complete_offset == 0 {
        return None;
    }
    let begin = if code.code_begin_is_offset != 0 {
        read_user::<i32>(blob + u64::from(code.code_begin_offset))
            .filter(|&offset| offset > 0)
            .map(|offset| blob + offset as u64)
    } else {
        read_user::<u64>(blob + u64::from(code.code_begin_offset))
    }?;
    let complete = read_user::<i32>(blob + u64::from(code.frame_complete_offset))?;
    (complete > 0).then(|| (begin, begin + complete as u64))
}

/// [`edge`] on arm64 ([`arm64_edge`]): the instruction at `pc` and the four before it
/// (those before the code's start, in the prologue, are none).
#[inline(always)]
fn edge_arm64(walk: &InterpWalk, blob: u64, pc: u64) -> Edge {
    let (Some(here), Some(near), Some(far)) = (
        read_user::<u32>(pc),
        read_user::<u64>(pc - 8),
        read_user::<u64>(pc - 16),
    ) else {
        return Edge::Whole;
    };
    let (begin, in_prologue) = match prologue(walk, blob) {
        Some((begin, end)) if begin <= pc && pc < end => (begin, true),
        _ => (0, false),
    };
    let word = |at: u64, pair: u64, high: bool| {
        let word = if high {
            (pair >> 32) as u32
        } else {
            pair as u32
        };
        if at >= begin { word } else { 0 }
    };
    let before = [
        word(pc - 4, near, true),
        word(pc - 8, near, false),
        word(pc - 12, far, true),
        word(pc - 16, far, false),
    ];
    arm64_edge(here, before, in_prologue)
}

/// [`edge`] on x86_64: inside the prologue (`pc` before `_code_begin +
/// _frame_complete_offset`) by the instruction about to run, and in an epilogue by
/// `pop rbp`, the return poll's `cmp`/`ja` and `ret`.
#[inline(always)]
fn edge_x86_64(walk: &InterpWalk, blob: u64, pc: u64) -> Edge {
    let (Some(here), Some(before)) = (read_user::<u64>(pc), read_user::<u64>(pc - 8)) else {
        return Edge::Whole;
    };
    let last = byte(before, 7);
    if let Some((begin, end)) = prologue(walk, blob)
        && begin <= pc
        && pc < end
    {
        let op = low3(here);
        let pushed = last == PUSH_RBP || (before >> 32) as u32 == ((MOV_RBP_RSP << 8) | 0x55);
        return if op == SUB_RSP[0] || op == SUB_RSP[1] {
            // After `push rbp` (C1; C2 with a stack bang), or the first instruction
            // (C2 without one: the frame is allocated, then rbp stored in it).
            if pushed {
                Edge::SavedRbp
            } else {
                Edge::ReturnAddress
            }
        } else if op == MOV_RBP_RSP && last == PUSH_RBP {
            Edge::SavedRbp
        } else if (here & 0xFFFF_FFFF) as u32 == STORE_RBP[0]
            || (here & 0xFFFF_FFFF) as u32 == STORE_RBP[1]
        {
            Edge::RbpInRegister
        } else if op == MOV_RBP_RSP {
            // -XX:+PreserveFramePointer after `mov [rsp+N], rbp`: the frame is whole.
            Edge::Whole
        } else {
            // The inline cache check, the stack bang, `push rbp`: nothing pushed yet.
            Edge::ReturnAddress
        };
    }
    let first = byte(here, 0);
    if first == POP_RBP && (byte(here, 1) == RET || low3(here >> 8) == RETURN_POLL) {
        Edge::SavedRbp
    } else if first == RET
        || (low3(here) == RETURN_POLL && last == POP_RBP)
        || ((here & 0xFFFF) as u16 == JA_REL32 && byte(here, 6) == RET)
    {
        Edge::ReturnAddress
    } else {
        Edge::Whole
    }
}

/// The encoded frame of code cache blob `blob` at `pc` (the sampled pc, or a return
/// address: as the blob's debug information states call sites): the blob, with the low
/// bits of its generation (`nmethod::_compile_id`, [`encode_blob`]) so that code compiled
/// later into the same space is another code object, and the pc's offset from the blob
/// (from the blob's 64 KiB window holding it, past the first).
/// Announces the blob with 16 bits of its generation.
#[inline(always)]
pub fn compiled_frame<M: UnwindMaps>(walk: &InterpWalk, blob: u64, pc: u64) -> u64 {
    let code = &walk.code;
    let generation = if code.compile_id_offset != 0 {
        read_user::<i32>(blob + u64::from(code.compile_id_offset)).unwrap_or(0) as u32
    } else {
        0
    };
    // A pc 64 KiB or more into its blob is recorded from the start of its 64 KiB window of
    // the blob (a segment start plus the header too), so its offset fits the frame's 16
    // bits; userspace finds the blob before the window.
    let window = (pc - blob) & !u64::from(FRAME_OFFSET_MAX);
    let encoded = encode_blob(
        blob + window,
        generation,
        code.segment_shift,
        code.heap_block_size,
    );
    announce_generation::<M>(walk, encoded, generation as u16);
    record::<M>(
        InterpStat::CompiledFrames,
        runtime::HOTSPOT,
        encoded,
        pc - blob - window,
    )
}
