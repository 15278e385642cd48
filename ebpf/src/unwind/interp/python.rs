//! CPython 3.8-3.14 frames: the current thread's `PyThreadState` through `_PyRuntime`'s
//! `autoTSSkey` (glibc thread-specific data, as `PyGILState_GetThisThreadState` finds it), so
//! each thread gets its own frames whether or not it holds the GIL, then the frame chain:
//! `PyFrameObject.f_back` (3.8-3.10, one frame per eval call), `_PyInterpreterFrame.previous`
//! (3.11+, the frames of one eval call end at its entry frame). Offsets come from userspace
//! per version (`tracekit_common::interp::python`).

use tracekit_common::interp::{
    NO_OFFSET,
    python::{
        CFRAME_CURRENT_FRAME, CODE_BYTECODE, CODE_FILENAME, CODE_FIRSTLINENO, CODE_NAME,
        FRAME_CODE, FRAME_CODE_TAG_BITS, FRAME_ENTRY, FRAME_INSTRUCTION, FRAME_OWNED_BY_SHIM,
        FRAME_PREVIOUS, TSTATE_FRAME, code_generation, layout,
    },
    runtime,
};

use super::{EvalLoop, Found, InterpWalk, announce_first_generation, config, read_user};
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

/// Whether `frame` (3.12+) is the shim an eval call pushes at its entry (or another frame
/// of no Python function).
#[inline(always)]
fn owned_by_c_stack(walk: &InterpWalk, frame: u64) -> Option<bool> {
    Some(read_user::<u8>(frame + offset(walk, FRAME_ENTRY))? >= FRAME_OWNED_BY_SHIM)
}

/// CPython's eval loop, `_PyEval_EvalFrameDefault`.
pub struct Python;

impl EvalLoop for Python {
    const RUNTIME: u8 = runtime::PYTHON;

    #[inline(always)]
    fn first_frame<M: UnwindMaps>(walk: &InterpWalk) -> Option<u64> {
        current_frame::<M>(walk)
    }

    #[inline(always)]
    fn read_frame(walk: &InterpWalk) -> Option<Option<Found>> {
        read_frame(walk)
    }

    /// A code object's frames carry its generation when its address held another one
    /// first ([`announce_first_generation`]).
    #[inline(always)]
    fn announce<M: UnwindMaps>(walk: &mut InterpWalk, found: &Found) -> u64 {
        announce_first_generation::<M>(walk, found, runtime::PYTHON)
    }
}

/// The frame at `walk.frame`, with its caller. `Some(None)`: no frame left; `None`: a read
/// failed.
#[inline(always)]
fn read_frame(walk: &InterpWalk) -> Option<Option<Found>> {
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
    let code = read_user::<u64>(frame + offset(walk, FRAME_CODE))? & !FRAME_CODE_TAG_BITS;
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
    // A chain that ends inside an eval call ends the call's frames too.
    Some(Some(Found {
        generation: generation(walk, code).unwrap_or(0),
        code,
        offset: units,
        caller: previous,
        last: last || previous == 0,
    }))
}

/// [`code_generation`] of the code object at `code`; `None` when the version has no slots
/// for it or a read failed (the object is announced without one).
#[inline(always)]
fn generation(walk: &InterpWalk, code: u64) -> Option<u16> {
    let slots = &walk.process.offsets;
    if slots[CODE_FIRSTLINENO] == NO_OFFSET
        || slots[CODE_NAME] == NO_OFFSET
        || slots[CODE_FILENAME] == NO_OFFSET
    {
        return None;
    }
    let first_line = read_user::<i32>(code + offset(walk, CODE_FIRSTLINENO))?;
    let name = read_user::<u64>(code + offset(walk, CODE_NAME))?;
    let filename = read_user::<u64>(code + offset(walk, CODE_FILENAME))?;
    Some(code_generation(first_line, name, filename))
}
