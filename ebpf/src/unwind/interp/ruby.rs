//! CRuby (MRI) 3.x frames: the current thread's `rb_execution_context_t` is the TLS variable
//! `ruby_current_ec` of `libruby` (found through glibc's DTV, as `__tls_get_addr` does), and
//! its control frames run from `ec->cfp` towards the stack's base (`cfp + 1` is the caller).
//! The frames of one `rb_vm_exec` call end at the one flagged `VM_FRAME_FLAG_FINISH`; C
//! function frames (no `pc`) are skipped, their native frames stay, up to the VM stack's
//! base frame. A frame is recorded as its `rb_iseq_t` and its `pc` in `VALUE`s from the
//! start of the iseq's encoded instructions. Offsets come from userspace per version
//! (`tracekit_common::interp::ruby`).

use tracekit_common::interp::{
    python::code_generation,
    ruby::{
        BODY_ENCODED, BODY_FIRST_LINENO, BODY_LABEL, BODY_PATHOBJ, CFP_EP, CFP_ISEQ, CFP_PC,
        CFP_SIZE, DTV_ENTRY_SIZE, EC_CFP, FRAME_FLAG_CFRAME, FRAME_FLAG_FINISH, ISEQ_BODY, TCB_DTV,
    },
    runtime,
};

use super::{EvalLoop, Found, InterpWalk, announce_first_generation, config, read_user};
use crate::unwind::UnwindMaps;

/// C function frames skipped in one step (each is one read of its `pc`).
const MAX_SKIPPED: usize = 8;

/// The flags of the VM stack's base frame (`rb_ec_initialize_vm_stack`'s dummy frame).
const BASE_FRAME: u64 = FRAME_FLAG_FINISH | FRAME_FLAG_CFRAME;

#[inline(always)]
fn offset(walk: &InterpWalk, slot: usize) -> u64 {
    u64::from(walk.process.offsets[slot])
}

/// The current thread's control frame (0: a thread with no execution context).
#[inline(always)]
fn current_frame<M: UnwindMaps>(walk: &InterpWalk) -> Option<u64> {
    let config = config::<M>()?;
    let module = read_user::<u64>(walk.process.state_address)?;
    let variable = read_user::<u64>(walk.process.state_address + 8)?;
    if module == 0 || module > 4096 {
        return None;
    }
    let tp = super::thread_pointer(&config)?;
    let dtv = read_user::<u64>(tp + TCB_DTV)?;
    let block = read_user::<u64>(dtv + DTV_ENTRY_SIZE * module)?;
    if block == 0 || block == u64::MAX {
        return Some(0);
    }
    let ec = read_user::<u64>(block + variable)?;
    if ec == 0 {
        return Some(0);
    }
    read_user::<u64>(ec + offset(walk, EC_CFP))
}

/// CRuby's eval loop, `vm_exec_core` (run by `rb_vm_exec`).
pub struct Ruby;

impl EvalLoop for Ruby {
    const RUNTIME: u8 = runtime::RUBY;

    #[inline(always)]
    fn first_frame<M: UnwindMaps>(walk: &InterpWalk) -> Option<u64> {
        current_frame::<M>(walk)
    }

    #[inline(always)]
    fn read_frame(walk: &InterpWalk) -> Option<Option<Found>> {
        read_frame(walk)
    }

    /// An iseq's frames carry its generation when its address held another iseq first (the
    /// top-level iseq of a required file is freed once it has run, and a later one takes
    /// its slot): [`announce_first_generation`].
    #[inline(always)]
    fn announce<M: UnwindMaps>(walk: &mut InterpWalk, found: &Found) -> u64 {
        announce_first_generation::<M>(walk, found, runtime::RUBY)
    }
}

/// The Ruby frame at or after `walk.frame`, with its caller. `Some(None)`: no Ruby frame
/// left in this call; `None`: a read failed.
#[inline(always)]
fn read_frame(walk: &InterpWalk) -> Option<Option<Found>> {
    let size = offset(walk, CFP_SIZE);
    let mut cfp = walk.frame;
    for _ in 0..MAX_SKIPPED {
        if cfp == 0 {
            return Some(None);
        }
        let pc = read_user::<u64>(cfp + offset(walk, CFP_PC))?;
        let iseq = read_user::<u64>(cfp + offset(walk, CFP_ISEQ))?;
        let ep = read_user::<u64>(cfp + offset(walk, CFP_EP))?;
        let flags = read_user::<u64>(ep)?;
        let finish = flags & FRAME_FLAG_FINISH != 0;
        if pc == 0 || iseq == 0 {
            // A C function's frame: its native frames are in the stack already. The call
            // ends at the VM stack's base frame only: C code pushes frames with no `pc`
            // flagged as a call's first that no `rb_vm_exec` runs (3.3's `require` and
            // `load` while they parse a file, `rb_vm_call_cfunc`), and its callers follow.
            if flags & BASE_FRAME == BASE_FRAME {
                return Some(None);
            }
            cfp += size;
            continue;
        }
        let body = read_user::<u64>(iseq + offset(walk, ISEQ_BODY))?;
        let encoded = read_user::<u64>(body + offset(walk, BODY_ENCODED))?;
        let units = if pc >= encoded { (pc - encoded) / 8 } else { 0 };
        // The iseq's first line (a Fixnum up to 3.1, an `int` after: its low half either
        // way), label and path, as userspace checks them when it reads the iseq.
        let first_line = read_user::<i32>(body + offset(walk, BODY_FIRST_LINENO))?;
        let label = read_user::<u64>(body + offset(walk, BODY_LABEL))?;
        let path = read_user::<u64>(body + offset(walk, BODY_PATHOBJ))?;
        return Some(Some(Found {
            generation: code_generation(first_line, label, path),
            code: iseq,
            offset: units,
            caller: cfp + size,
            last: finish,
        }));
    }
    // Only C frames within reach: none recorded for this call.
    Some(None)
}
