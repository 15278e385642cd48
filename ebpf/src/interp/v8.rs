//! V8 (Node.js) JavaScript frames. V8's code (the embedded builtins in the binary's text,
//! JIT code in anonymous memory) has no unwind rows but keeps the frame-pointer chain, so
//! the walk steps through it by frame pointer; a frame whose context slot holds a heap
//! object (not a frame-type marker) is a JavaScript frame and is recorded, in the place of
//! its native PC, as its function's `SharedFunctionInfo` and its bytecode offset when it
//! is interpreted (layouts in `tracekit_common::interp::v8`, from the binary's `v8dbg_*`
//! symbols). Every pointer read is checked against its object's instance type, so a frame
//! that is not what it looks like stays native. An optimized frame (no `BytecodeArray` in
//! it) whose pc lies in its function's `Code` instructions is recorded as that `Code` and
//! the pc's offset in them ([`compiled_frame`]), for userspace to find its current line.

use tracekit_common::interp::{
    FRAME_OFFSET_MAX, InterpStat, NO_OFFSET, encode_frame, runtime,
    v8::{
        CODE_INSTRUCTIONS, FP_BYTECODE_ARRAY, FP_BYTECODE_OFFSET, FP_CONTEXT, FP_FUNCTION,
        FUNCTION_CODE, FUNCTION_SHARED, HEAP_OBJECT_TAG, HEAP_OBJECT_TAG_MASK, MAP_INSTANCE_TYPE,
        OBJECT_MAP, SMI_SHIFT, TYPE_BYTECODE_ARRAY, TYPE_CODE, TYPE_FUNCTION_FIRST,
        TYPE_FUNCTION_LAST, TYPE_SHARED_FUNCTION_INFO,
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

/// The encoded JavaScript frame whose frame pointer is `fp` and pc `pc` (a return address
/// less one), or `None`: a V8 frame of another kind (entry, exit, stub: native frames), or
/// memory that is not a V8 frame.
#[inline(always)]
pub fn frame<M: UnwindMaps>(walk: &InterpWalk, fp: u64, pc: u64) -> Option<u64> {
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
        Some((function, shared, bytecode_offset)) => {
            bump::<M>(InterpStat::Frames);
            let compiled = match bytecode_offset {
                Some(_) => None,
                None => compiled_frame::<M>(walk, function, pc),
            };
            compiled.or_else(|| {
                announce_code::<M>(walk, shared);
                Some(encode_frame(
                    runtime::V8,
                    shared,
                    bytecode_offset.unwrap_or(0),
                ))
            })
        }
        None => {
            bump::<M>(InterpStat::ReadErrors);
            None
        }
    }
}

/// The `JSFunction` and `SharedFunctionInfo` (untagged) of the JavaScript frame at `fp`,
/// and its bytecode offset ([`bytecode_offset`]).
#[inline(always)]
fn read_frame(walk: &InterpWalk, fp: u64) -> Option<(u64, u64, Option<u64>)> {
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
    Some((function, shared, bytecode_offset(walk, fp)))
}

/// An interpreted frame's bytecode offset (a Smi beside its `BytecodeArray`, counted from
/// the array's tagged pointer); 0 in an unoptimized frame without one (Sparkplug's baseline
/// frames keep the feedback vector there); `None` in a frame that holds no `BytecodeArray`
/// (optimized code), or that cannot be read.
#[inline(always)]
fn bytecode_offset(walk: &InterpWalk, fp: u64) -> Option<u64> {
    let array = heap_object(read_user::<u64>(fp - offset(walk, FP_BYTECODE_ARRAY))?)?;
    if instance_type(walk, array)? != walk.process.offsets[TYPE_BYTECODE_ARRAY] {
        return None;
    }
    let smi = read_user::<u64>(fp - offset(walk, FP_BYTECODE_OFFSET))?;
    if smi & 1 != 0 {
        return Some(0);
    }
    Some(smi >> SMI_SHIFT)
}

/// The encoded frame of optimized code running function `function` (untagged) at `pc`:
/// the function's `Code` object (its instance type checked) and the pc's offset from the
/// code's first instruction, announced. `None` (the frame is recorded as its function) when
/// the version's code is not read, the function's code is not a `Code`, or `pc` is not in
/// its instructions: on-stack-replaced code, which the function does not point to, or a
/// pc past the frame's 16-bit offset.
#[inline(always)]
fn compiled_frame<M: UnwindMaps>(walk: &InterpWalk, function: u64, pc: u64) -> Option<u64> {
    let slot = walk.process.offsets[FUNCTION_CODE];
    if slot == NO_OFFSET {
        return None;
    }
    let code = heap_object(read_user::<u64>(function + u64::from(slot))?)?;
    if instance_type(walk, code)? != walk.process.offsets[TYPE_CODE] {
        return None;
    }
    let fields = walk.process.offsets[CODE_INSTRUCTIONS];
    let start = read_user::<u64>(code + u64::from(fields & 0xFF))?;
    let size = read_user::<u32>(code + u64::from(fields >> 8))?;
    if pc < start || pc - start >= u64::from(size) || pc - start > u64::from(FRAME_OFFSET_MAX) {
        return None;
    }
    announce_code::<M>(walk, code);
    Some(encode_frame(runtime::V8, code, pc - start))
}
