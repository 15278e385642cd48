//! PHP 8 (Zend) frames: `executor_globals.current_execute_data` (a non-ZTS build), then
//! `prev_execute_data`. The frames of one `execute_ex` call end at the one whose call info
//! has `ZEND_CALL_TOP`; internal (C) functions' frames are skipped, their native frames
//! stay. A frame is recorded as its `zend_function` and the line of its `opline` (the
//! current op for callers; for the innermost frame, the last op that saved it).

use tracekit_common::interp::{
    php::{
        CALL_TOP, EVAL_CODE, EX_CALL_INFO, EX_FUNC, EX_OPLINE, EX_PREVIOUS, FUNC_TYPE, OP_LINENO,
        USER_FUNCTION,
    },
    runtime,
};

use super::{EvalLoop, Found, InterpWalk, read_user};
use crate::unwind::UnwindMaps;

/// Internal function frames skipped in one step.
const MAX_SKIPPED: usize = 8;

#[inline(always)]
fn offset(walk: &InterpWalk, slot: usize) -> u64 {
    u64::from(walk.process.offsets[slot])
}

/// PHP's eval loop, `execute_ex`.
pub struct Php;

impl EvalLoop for Php {
    const RUNTIME: u8 = runtime::PHP;

    /// `executor_globals.current_execute_data`.
    #[inline(always)]
    fn first_frame<M: UnwindMaps>(walk: &InterpWalk) -> Option<u64> {
        read_user::<u64>(walk.process.state_address)
    }

    #[inline(always)]
    fn read_frame(walk: &InterpWalk) -> Option<Option<Found>> {
        read_frame(walk)
    }
}

/// The user frame at or after `walk.frame` (its function, and the line of its `opline`),
/// with its caller. `Some(None)`: none left; `None`: a read failed.
#[inline(always)]
fn read_frame(walk: &InterpWalk) -> Option<Option<Found>> {
    let mut ex = walk.frame;
    for _ in 0..MAX_SKIPPED {
        if ex == 0 {
            return Some(None);
        }
        let func = read_user::<u64>(ex + offset(walk, EX_FUNC))?;
        let previous = read_user::<u64>(ex + offset(walk, EX_PREVIOUS))?;
        let kind = if func == 0 {
            0
        } else {
            read_user::<u8>(func + offset(walk, FUNC_TYPE))?
        };
        if kind != USER_FUNCTION && kind != EVAL_CODE {
            // An internal function (run natively) or a frame without a function.
            ex = previous;
            continue;
        }
        let call_info = read_user::<u32>(ex + offset(walk, EX_CALL_INFO))?;
        let opline = read_user::<u64>(ex + offset(walk, EX_OPLINE))?;
        let line = if opline == 0 {
            0
        } else {
            u64::from(read_user::<u32>(opline + offset(walk, OP_LINENO))?)
        };
        return Some(Some(Found {
            generation: 0,
            code: func,
            offset: line,
            caller: previous,
            last: call_info & CALL_TOP != 0 || previous == 0,
        }));
    }
    Some(None)
}
