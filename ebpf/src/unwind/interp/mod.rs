//! Interpreter frames in the DWARF walk: when the native walk (`crate::unwind`) reaches a
//! process's eval loop, the runtime's unwinder records the interpreted frames that eval call
//! runs in its place, one frame per `bpf_loop` step (layouts and the frame encoding in
//! `tracekit_common::interp`).
//!
//! A runtime walked through its eval loop (CPython, CRuby, PHP) is one module here with a
//! type implementing [`EvalLoop`] (how the thread's current frame is found, how one frame is
//! read), and one line in [`frame_at`]; [`eval_frame`] runs it and [`record`] writes every
//! runtime's frames. V8 and HotSpot keep frame pointers: the walk steps through their code
//! and asks their modules for the frame at each frame pointer (`crate::unwind`).

pub mod hotspot;
pub mod php;
pub mod python;
pub mod ruby;
pub mod v8;

use aya_ebpf::helpers::{bpf_probe_read_kernel, bpf_probe_read_user};
use tracekit_common::interp::{
    CodeKey, InterpConfig, InterpProcess, InterpStat, encode_frame,
    hotspot::CodeCache,
    python::{code_key, encode_generation},
    runtime,
};

use crate::unwind::UnwindMaps;

/// `InterpWalk::state`: the runtime's frames are not looked for yet in this stack.
pub const NOT_STARTED: u32 = 0;
/// The next frame to record is in `InterpWalk::frame`.
pub const READY: u32 = 1;
/// No more interpreter frames in this stack (none, or a read failed): eval-loop frames
/// stay native.
pub const DONE: u32 = 2;

/// The interpreter part of one stack walk, kept in the walk's per-CPU state.
#[repr(C)]
pub struct InterpWalk {
    /// The process's interpreter (`runtime` 0: none).
    pub process: InterpProcess,
    /// The runtime's next frame to record (its address in the process).
    pub frame: u64,
    /// [`NOT_STARTED`], [`READY`] or [`DONE`].
    pub state: u32,
    /// 1 while an eval call's frames are being recorded (more follow at the same native
    /// frame).
    pub pending: u32,
    /// The process (tgid).
    pub pid: u32,
    /// A CPython or Ruby code address's first generation, as `INTERP_SEEN` is given it.
    pub first: u16,
    padding: u16,
    /// The code object being announced ([`announce_key`]): kept here, off the BPF stack,
    /// which the step that records a frame has little of.
    pub key: CodeKey,
    /// The JVM's code cache (`count` 0: none, or not a JVM).
    pub code: CodeCache,
    /// V8's per-CPU frame block and caches; kept from stack to stack (not reset by
    /// [`InterpWalk::start`]).
    pub v8: v8::V8State,
}

impl InterpWalk {
    /// Starts a stack of process `pid`.
    #[inline(always)]
    pub fn start<M: UnwindMaps>(&mut self, pid: u32) {
        self.frame = 0;
        self.state = NOT_STARTED;
        self.pending = 0;
        self.pid = pid;
        // SAFETY: plain lookup; the value is copied out at once.
        match unsafe { M::interp_processes().get(&pid) } {
            Some(process) => self.process = *process,
            None => self.process.runtime = runtime::NONE,
        }
        self.code.count = 0;
        if self.process.runtime == runtime::HOTSPOT {
            // SAFETY: plain lookup; the value is copied out at once.
            if let Some(code) = unsafe { M::hotspot_code().get(&pid) } {
                self.code = *code;
            }
        }
    }

    /// Ends a stack: counts interpreter frames cut at the frame budget.
    #[inline(always)]
    pub fn finish<M: UnwindMaps>(&self) {
        if self.pending != 0 {
            bump::<M>(InterpStat::Truncated);
        }
    }
}

/// What to record for the frame at a native PC.
pub enum InterpFrame {
    /// The native frame itself.
    Native,
    /// An encoded interpreter frame; `last`: the eval call's last one, so the walk steps
    /// past the native frame after it (else it stays at that frame for the next one);
    /// `after`: the word the next step records after it (a CPython frame's generation,
    /// `tracekit_common::interp::python::encode_generation`), 0: none.
    Frame { word: u64, last: bool, after: u64 },
}

/// The frame to record for native `pc` (adjusted into the call for return addresses).
#[inline(always)]
pub fn frame_at<M: UnwindMaps>(walk: &mut InterpWalk, pc: u64) -> InterpFrame {
    let process = &walk.process;
    // V8's frames are found by frame pointer where the walk meets V8 code (`v8::in_code`).
    if process.runtime == runtime::NONE
        || process.runtime == runtime::V8
        || process.runtime == runtime::HOTSPOT
        || !process.in_eval(pc)
    {
        return InterpFrame::Native;
    }
    if walk.pending == 0 {
        bump::<M>(InterpStat::EvalFrames);
    }
    match walk.process.runtime {
        runtime::PYTHON => eval_frame::<M, python::Python>(walk),
        runtime::RUBY => eval_frame::<M, ruby::Ruby>(walk),
        runtime::PHP => eval_frame::<M, php::Php>(walk),
        _ => InterpFrame::Native,
    }
}

/// A runtime whose frames are read where the walk meets its eval loop: the interpreted
/// frames one eval call runs are recorded in the place of its native frame, one per step.
pub trait EvalLoop {
    /// Its tag in encoded frames ([`runtime`]).
    const RUNTIME: u8;

    /// The current thread's innermost frame (0: the thread runs none), `None` when a read
    /// failed.
    fn first_frame<M: UnwindMaps>(walk: &InterpWalk) -> Option<u64>;

    /// The frame to record at or after `walk.frame` (frames the runtime does not record
    /// skipped): `Some(None)` when the eval call has none left, `None` when a read failed.
    fn read_frame(walk: &InterpWalk) -> Option<Option<Found>>;

    /// Announces `found`'s code object; returns the word recorded after its frame (0:
    /// none).
    #[inline(always)]
    fn announce<M: UnwindMaps>(walk: &mut InterpWalk, found: &Found) -> u64 {
        announce_generation::<M>(walk, found.code, found.generation);
        0
    }
}

/// A frame an [`EvalLoop`] read.
pub struct Found {
    /// Its code object (announced to userspace, which names it).
    pub code: u64,
    /// What identifies the object at `code` now (0: nothing): announced with it, so that
    /// an address a freed object's successor took is announced again.
    pub generation: u16,
    /// Where it is in the code, in the runtime's units.
    pub offset: u64,
    /// Its caller, the next frame to read.
    pub caller: u64,
    /// The eval call's last frame: the walk steps past the native frame after it.
    pub last: bool,
}

/// One frame of the eval call at the walk's native frame, read by `R` (see [`InterpFrame`]):
/// the thread's current frame is found at the call's first step; a walk that cannot go on
/// leaves the eval-loop frames native, counted.
#[inline(always)]
pub fn eval_frame<M: UnwindMaps, R: EvalLoop>(walk: &mut InterpWalk) -> InterpFrame {
    if walk.state == NOT_STARTED {
        match R::first_frame::<M>(walk) {
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
    match R::read_frame(walk) {
        Some(Some(found)) => {
            walk.frame = found.caller;
            walk.pending = u32::from(!found.last);
            let after = R::announce::<M>(walk, &found);
            InterpFrame::Frame {
                word: record::<M>(InterpStat::Frames, R::RUNTIME, found.code, found.offset),
                last: found.last,
                after,
            }
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

/// Every runtime's frame, as the walk stores it in the stack: code object `code` of runtime
/// `runtime` at `offset` (in the runtime's units), encoded, and counted as `stat`.
#[inline(always)]
pub fn record<M: UnwindMaps>(stat: InterpStat, runtime: u8, code: u64, offset: u64) -> u64 {
    bump::<M>(stat);
    encode_frame(runtime, code, offset)
}

/// Announces code object `code` of the walk's process to userspace the first time it is
/// recorded, so its names are read while the process lives. Returns whether it is announced
/// (now or before); false when the announcement was lost (ring buffer full).
#[inline(always)]
pub fn announce_code<M: UnwindMaps>(walk: &InterpWalk, code: u64) -> bool {
    announce_generation::<M>(walk, code, 0)
}

/// [`announce_code`] of a code object that has a generation (a HotSpot blob's
/// `_compile_id`): announced again when the same address holds another generation.
#[inline(always)]
pub fn announce_generation<M: UnwindMaps>(walk: &InterpWalk, code: u64, generation: u16) -> bool {
    announce_as::<M>(walk, walk.process.runtime, code, generation)
}

/// [`announce_generation`] under runtime id `runtime` (V8's replaced-code pcs, announced
/// under [`runtime::V8_REPLACED`]).
#[inline(always)]
pub fn announce_as<M: UnwindMaps>(
    walk: &InterpWalk,
    runtime: u8,
    code: u64,
    generation: u16,
) -> bool {
    let key = CodeKey {
        pid: walk.pid,
        runtime: u16::from(runtime),
        generation,
        code,
    };
    announce_key::<M>(&key)
}

/// Announces `found`'s code object of `runtime` (CPython, Ruby), whose generation tells
/// the objects that took one address apart: the first generation seen at an address names
/// its bare frames; a later one (the first object was freed and another took its address)
/// is announced as its [`code_key`] and its frames carry their generation in the word
/// after them (returned, 0: none).
#[inline(always)]
pub fn announce_first_generation<M: UnwindMaps>(
    walk: &mut InterpWalk,
    found: &Found,
    runtime: u8,
) -> u64 {
    let generation = found.generation;
    // The address's first generation is kept under generation 0, which no object has.
    walk.key.pid = walk.pid;
    walk.key.runtime = u16::from(runtime);
    walk.key.generation = 0;
    walk.key.code = found.code;
    let mut after = 0;
    if generation != 0 {
        // SAFETY: plain lookup; the value is copied out at once.
        match unsafe { M::interp_seen().get(&walk.key) } {
            Some(&first) if first != generation => {
                walk.key.code = code_key(found.code, generation);
                after = encode_generation(generation);
            }
            Some(_) => {}
            None => {
                walk.first = generation;
                let _ = M::interp_seen().insert(&walk.key, &walk.first, 0);
            }
        }
        walk.key.generation = generation;
    }
    announce_key::<M>(&walk.key);
    after
}

/// Announces `key` unless `INTERP_SEEN` remembers it announced; see [`announce_code`].
#[inline(always)]
pub fn announce_key<M: UnwindMaps>(key: &CodeKey) -> bool {
    // SAFETY: the value is only tested for presence.
    if unsafe { M::interp_seen().get(key) }.is_some() {
        return true;
    }
    if M::interp_codes().output::<CodeKey>(key, 0).is_ok() {
        let _ = M::interp_seen().insert(key, &1u16, 0);
        true
    } else {
        bump::<M>(InterpStat::CodesLost);
        false
    }
}

/// The config userspace wrote, if it is complete.
#[inline(always)]
pub fn config<M: UnwindMaps>() -> Option<InterpConfig> {
    let config = *M::interp_config().get(0)?;
    (config.task_thread_pointer_offset != 0 && config.key_data_from_thread_pointer != 0)
        .then_some(config)
}

/// The current thread's user thread pointer (x86_64's `fsbase`, arm64's `tpidr_el0`), from
/// its `task_struct`.
#[inline(always)]
pub fn thread_pointer(config: &InterpConfig) -> Option<u64> {
    // SAFETY: a helper without arguments; the task is read with bpf_probe_read_kernel,
    // which faults safely.
    unsafe {
        let task = aya_ebpf::helpers::generated::bpf_get_current_task();
        bpf_probe_read_kernel((task + u64::from(config.task_thread_pointer_offset)) as *const u64)
            .ok()
    }
}

/// The value of glibc thread-specific key `key` of the current thread (first-level keys
/// only: `key < 32`, as runtimes' keys created at start-up are).
#[inline(always)]
pub fn thread_specific(config: &InterpConfig, key: u32) -> Option<u64> {
    if key >= 32 {
        return None;
    }
    let data = thread_pointer(config)?
        .wrapping_add(i64::from(config.key_data_from_thread_pointer) as u64)
        .wrapping_add(16 * u64::from(key));
    read_user::<u64>(data)
}

#[inline(always)]
pub fn read_user<T>(address: u64) -> Option<T> {
    // SAFETY: bpf_probe_read_user faults safely on a bad address.
    unsafe { bpf_probe_read_user(address as *const T) }.ok()
}

#[inline(always)]
pub fn bump<M: UnwindMaps>(stat: InterpStat) {
    if let Some(counter) = M::interp_stats().get_ptr_mut(stat as u32) {
        // SAFETY: per-CPU slot, only this CPU writes it while the program runs.
        unsafe { *counter += 1 };
    }
}
