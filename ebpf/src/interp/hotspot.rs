//! HotSpot (OpenJDK's JVM) interpreted Java frames. The template interpreter's code is
//! generated into the code cache (anonymous memory, no unwind rows) and keeps rbp as a
//! frame pointer, so the walk steps through it by frame pointer; each interpreter frame
//! holds its `Method*` and bytecode pointer at fixed slots below rbp (layout in
//! `tracekit_common::interp::hotspot`, from the JVM's `gHotSpotVMStructs`) and is recorded
//! as that `Method*` and its bytecode index. Compiled (C1/C2) frames are not recognised yet:
//! they stay native.

use tracekit_common::interp::{
    InterpStat, encode_frame,
    hotspot::{BCP_SLOT, CONST_METHOD_SIZE, METHOD_CONST_METHOD, METHOD_SLOT},
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
