//! V8 (Node.js) JavaScript frames. V8's code (the embedded builtins in the binary's text,
//! JIT code in anonymous memory) has no unwind rows but keeps the frame-pointer chain, so
//! the walk steps through it by frame pointer; a frame whose context slot holds a heap
//! object (not a frame-type marker) is a JavaScript frame and is recorded, in the place of
//! its native PC, as its function's `SharedFunctionInfo` and its bytecode offset when it
//! is interpreted (layouts in `tracekit_common::interp::v8`, from the binary's `v8dbg_*`
//! symbols). Every pointer read is checked against its object's instance type, so a frame
//! that is not what it looks like stays native.

use tracekit_common::interp::{
    InterpStat, encode_frame, runtime,
    v8::{
        FP_BYTECODE_ARRAY, FP_BYTECODE_OFFSET, FP_CONTEXT, FP_FUNCTION, FUNCTION_SHARED,
        HEAP_OBJECT_TAG, HEAP_OBJECT_TAG_MASK, MAP_INSTANCE_TYPE, OBJECT_MAP, SMI_SHIFT,
        TYPE_BYTECODE_ARRAY, TYPE_FUNCTION_FIRST, TYPE_FUNCTION_LAST, TYPE_SHARED_FUNCTION_INFO,
    },
};

use super::{InterpWalk, announce_code, bump, read_user};
use crate::unwind::UnwindMaps;

#[inline(always)]
fn offset(walk: &InterpWalk, slot: usize) -> u64 {
    u64::from(walk.process.offsets[slot])
}

/// Whether native `pc` of the walk's process is V8 code: in the embedded builtins, or in
/// code with no unwind table (`untabled`: JIT code) of a V8 process.
#[inline(always)]
pub fn in_code(walk: &InterpWalk, pc: u64, untabled: bool) -> bool {
    walk.process.runtime == runtime::V8
        && (untabled || (walk.process.eval_begin <= pc && pc < walk.process.eval_end))
}

/// The untagged address of tagged heap object pointer `word`.
#[inline(always)]
fn heap_object(word: u64) -> Option<u64> {
    (word & HEAP_OBJECT_TAG_MASK == HEAP_OBJECT_TAG).then_some(word & !HEAP_OBJECT_TAG_MASK)
}

/// The instance type of the heap object at untagged `object` (through its map).
#[inline(always)]
fn instance_type(walk: &InterpWalk, object: u64) -> Option<u16> {
    let map = heap_object(read_user::<u64>(object + offset(walk, OBJECT_MAP))?)?;
    read_user::<u16>(map + offset(walk, MAP_INSTANCE_TYPE))
}

/// The encoded JavaScript frame whose frame pointer is `fp`, or `None`: a V8 frame of
/// another kind (entry, exit, stub: native frames), or memory that is not a V8 frame.
#[inline(always)]
pub fn frame<M: UnwindMaps>(walk: &InterpWalk, fp: u64) -> Option<u64> {
    bump::<M>(InterpStat::EvalFrames);
    if fp < 64 {
        return None;
    }
    let Some(context) = read_user::<u64>(fp - offset(walk, FP_CONTEXT)) else {
        bump::<M>(InterpStat::ReadErrors);
        return None;
    };
    // A frame-type marker (tag bit 0) is not a JavaScript frame.
    heap_object(context)?;
    let found = read_frame(walk, fp);
    match found {
        Some((shared, bytecode_offset)) => {
            announce_code::<M>(walk, shared);
            bump::<M>(InterpStat::Frames);
            Some(encode_frame(runtime::V8, shared, bytecode_offset))
        }
        None => {
            bump::<M>(InterpStat::ReadErrors);
            None
        }
    }
}

/// The `SharedFunctionInfo` (untagged) and bytecode offset (0: not interpreted) of the
/// JavaScript frame at `fp`.
#[inline(always)]
fn read_frame(walk: &InterpWalk, fp: u64) -> Option<(u64, u64)> {
    let function = heap_object(read_user::<u64>(fp - offset(walk, FP_FUNCTION))?)?;
    let kind = instance_type(walk, function)?;
    if kind < walk.process.offsets[TYPE_FUNCTION_FIRST]
        || kind > walk.process.offsets[TYPE_FUNCTION_LAST]
    {
        return None;
    }
    let shared = heap_object(read_user::<u64>(function + offset(walk, FUNCTION_SHARED))?)?;
    if instance_type(walk, shared)? != walk.process.offsets[TYPE_SHARED_FUNCTION_INFO] {
        return None;
    }
    Some((shared, bytecode_offset(walk, fp).unwrap_or(0)))
}

/// An interpreted frame's bytecode offset (a Smi beside its `BytecodeArray`, counted from
/// the array's tagged pointer), 0 in a compiled frame.
#[inline(always)]
fn bytecode_offset(walk: &InterpWalk, fp: u64) -> Option<u64> {
    let array = heap_object(read_user::<u64>(fp - offset(walk, FP_BYTECODE_ARRAY))?)?;
    if instance_type(walk, array)? != walk.process.offsets[TYPE_BYTECODE_ARRAY] {
        return Some(0);
    }
    let smi = read_user::<u64>(fp - offset(walk, FP_BYTECODE_OFFSET))?;
    if smi & 1 != 0 {
        return Some(0);
    }
    Some(smi >> SMI_SHIFT)
}
