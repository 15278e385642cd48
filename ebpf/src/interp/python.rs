//! CPython 3.8-3.13 frames: the current thread's `PyThreadState` through `_PyRuntime`'s
//! `autoTSSkey` (glibc thread-specific data, as `PyGILState_GetThisThreadState` finds it), so
//! each thread gets its own frames whether or not it holds the GIL, then the frame chain:
//! `PyFrameObject.f_back` (3.8-3.10, one frame per eval call), `_PyInterpreterFrame.previous`
//! (3.11+, the frames of one eval call end at its entry frame). Offsets come from userspace
//! per version (`tracekit_common::interp::python`).

use tracekit_common::interp::{
    InterpStat, NO_OFFSET, encode_frame,
    python::{
        CFRAME_CURRENT_FRAME, CODE_BYTECODE, FRAME_CODE, FRAME_ENTRY, FRAME_INSTRUCTION,
        FRAME_OWNED_BY_CSTACK, FRAME_PREVIOUS, TSTATE_FRAME, layout,
    },
    runtime,
};

use super::{DONE, InterpFrame, InterpWalk, NOT_STARTED, READY, bump, config, read_user};
use crate::unwind::UnwindMaps;

#[inline(always)]
fn offset(walk: &InterpWalk, slot: usize) -> u64 {
    u64::from(walk.process.offsets[slot])
}

/// The current thread's innermost frame, or 0.
#[inline(always)]
fn current_frame<M: UnwindMaps>(walk: &InterpWalk) -> Option<u64> {
    let config = config::<M>()?;
    let key = read_user::<u32>(walk.process.state_address)?;
    let tstate = super::thread_specific(&config, key)?;
    if tstate == 0 {
        return Some(0);
    }
    let mut frame = read_user::<u64>(tstate + offset(walk, TSTATE_FRAME))?;
    if walk.process.offsets[CFRAME_CURRENT_FRAME] != NO_OFFSET && frame != 0 {
        frame = read_user::<u64>(frame + offset(walk, CFRAME_CURRENT_FRAME))?;
    }
    Some(frame)
}

/// Whether `frame` (3.12+) is the shim an eval call pushes at its entry.
#[inline(always)]
fn owned_by_c_stack(walk: &InterpWalk, frame: u64) -> Option<bool> {
    Some(read_user::<u8>(frame + offset(walk, FRAME_ENTRY))? == FRAME_OWNED_BY_CSTACK)
}

/// One frame of the eval call at the walk's native frame (see [`InterpFrame`]).
#[inline(always)]
pub fn frame<M: UnwindMaps>(walk: &mut InterpWalk) -> InterpFrame {
    if walk.state == NOT_STARTED {
        match current_frame::<M>(walk) {
            Some(frame) => {
                walk.frame = frame;
                walk.state = READY;
            }
            None => {
                walk.state = DONE;
                bump::<M>(InterpStat::ReadErrors);
                return InterpFrame::Native;
            }
        }
    }
    if walk.state != READY {
        return InterpFrame::Native;
    }
    match read_frame::<M>(walk) {
        Some(Some(found)) => {
            bump::<M>(InterpStat::Frames);
            found
        }
        Some(None) => {
            walk.state = DONE;
            walk.pending = 0;
            bump::<M>(InterpStat::NoThreadState);
            InterpFrame::Native
        }
        None => {
            walk.state = DONE;
            walk.pending = 0;
            bump::<M>(InterpStat::ReadErrors);
            InterpFrame::Native
        }
    }
}

/// Reads the frame at `walk.frame` and moves to its caller. `Some(None)`: no frame left;
/// `None`: a read failed.
#[inline(always)]
fn read_frame<M: UnwindMaps>(walk: &mut InterpWalk) -> Option<Option<InterpFrame>> {
    let family = walk.process.layout;
    let owner_frames =
        family == layout::INTERPRETER_FRAME_OWNER || family == layout::INTERPRETER_FRAME_INSTR;
    let mut frame = walk.frame;
    // An eval call's entry shim (3.12+) is not a Python frame.
    if owner_frames {
        for _ in 0..2 {
            if frame != 0 && owned_by_c_stack(walk, frame)? {
                frame = read_user::<u64>(frame + offset(walk, FRAME_PREVIOUS))?;
            }
        }
    }
    if frame == 0 {
        return Some(None);
    }
    let code = read_user::<u64>(frame + offset(walk, FRAME_CODE))?;
    let units = if family == layout::FRAME_OBJECT_BYTES || family == layout::FRAME_OBJECT_UNITS {
        let lasti = read_user::<i32>(frame + offset(walk, FRAME_INSTRUCTION))?;
        let lasti = if lasti < 0 { 0 } else { lasti as u64 };
        if family == layout::FRAME_OBJECT_BYTES {
            lasti / 2
        } else {
            lasti
        }
    } else {
        let instruction = read_user::<u64>(frame + offset(walk, FRAME_INSTRUCTION))?;
        let bytecode = code + offset(walk, CODE_BYTECODE);
        if instruction >= bytecode {
            (instruction - bytecode) / 2
        } else {
            0
        }
    };
    let previous = read_user::<u64>(frame + offset(walk, FRAME_PREVIOUS))?;
    let last = if family == layout::INTERPRETER_FRAME_ENTRY {
        read_user::<u8>(frame + offset(walk, FRAME_ENTRY))? != 0
    } else if owner_frames {
        previous == 0 || owned_by_c_stack(walk, previous)?
    } else {
        true
    };
    super::announce_code::<M>(walk, code);
    // A chain that ends inside an eval call ends the call's frames too.
    let last = last || previous == 0;
    walk.frame = previous;
    walk.pending = u32::from(!last);
    Some(Some(InterpFrame::Frame {
        word: encode_frame(runtime::PYTHON, code, units),
        last,
    }))
}
