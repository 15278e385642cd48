//! HotSpot (OpenJDK's JVM) interpreted Java frames. The template interpreter's code is
//! generated into the code cache (anonymous memory, no unwind rows) and keeps rbp as a
//! frame pointer, so the walk steps through it by frame pointer; each interpreter frame
//! holds its `Method*` and bytecode pointer at fixed slots below rbp (layout in
//! `tracekit_common::interp::hotspot`, from the JVM's `gHotSpotVMStructs`) and is recorded
//! as that `Method*` and its bytecode index.
//!
//! Compiled (C1/C2) code, stubs and adapters are in the code cache's heaps
//! ([`CodeCache`], from userspace). A pc there belongs to the `CodeBlob` whose block starts
//! at the segment found by hopping back through the heap's segment map; the frame is
//! recorded as that blob and the pc's offset from it (userspace names an `nmethod` by its
//! `Method*` and its scopes), and stepped by `CodeBlob::_frame_size` (C1/C2 code uses rbp
//! as an ordinary register), or by frame pointer for blobs of no stated size (the call
//! stub, which keeps one).

use tracekit_common::interp::{
    InterpStat, NO_OFFSET, encode_frame,
    hotspot::{
        BCP_SLOT, CONST_METHOD_SIZE, MAX_CODE_HEAPS, MAX_FRAME_WORDS, METHOD_CONST_METHOD,
        METHOD_SLOT, SEGMAP_FREE, SEGMAP_HOPS, SEGMAP_START, SENDER_SP_SLOT,
    },
    runtime,
};

use super::{InterpWalk, announce_code, bump, read_user};
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
/// (memory that cannot be read: the frame stays native).
#[inline(always)]
pub fn frame<M: UnwindMaps>(walk: &InterpWalk, fp: u64) -> Option<u64> {
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
    let bci = bytecode_index(walk, fp, method).unwrap_or(0);
    announce_code::<M>(walk, method);
    bump::<M>(InterpStat::Frames);
    Some(encode_frame(runtime::HOTSPOT, method, bci))
}

/// The frame's bytecode index: its bytecode pointer from the start of its method's
/// bytecodes (which follow the `ConstMethod`).
#[inline(always)]
fn bytecode_index(walk: &InterpWalk, fp: u64, method: u64) -> Option<u64> {
    let bcp = read_user::<u64>(fp - offset(walk, BCP_SLOT))?;
    let const_method = read_user::<u64>(method + offset(walk, METHOD_CONST_METHOD))?;
    let codes = const_method + offset(walk, CONST_METHOD_SIZE);
    (bcp >= codes && bcp - codes < 65536).then(|| bcp - codes)
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

/// The encoded frame of code cache blob `blob` at `pc` (the sampled pc, or a return
/// address: as the blob's debug information states call sites): the blob and the pc's
/// offset from it. Announces the blob.
#[inline(always)]
pub fn compiled_frame<M: UnwindMaps>(walk: &InterpWalk, blob: u64, pc: u64) -> u64 {
    announce_code::<M>(walk, blob);
    bump::<M>(InterpStat::CompiledFrames);
    encode_frame(runtime::HOTSPOT, blob, pc - blob)
}
