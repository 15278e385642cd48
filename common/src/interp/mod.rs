//! Shared types of the in-kernel interpreter unwinders (`tracekit_ebpf::interp`): the frames
//! of interpreted code (Python functions) read from the interpreter's own memory while the
//! native DWARF walk (`tracekit_common::unwind`) passes through the interpreter's eval loop.
//!
//! # Maps (defined with the unwinder's, in every object that unwinds)
//! - `INTERP_PROCESSES`, a hash map from pid (tgid) to its [`InterpProcess`]: where its eval
//!   loop is, where its thread state is found, and the version's structure offsets. Written
//!   by userspace when it detects an interpreter in a process's mappings.
//! - `INTERP_CONFIG`, one [`InterpConfig`]: what the kernel and libc layouts need (the
//!   thread pointer in `task_struct`, glibc's thread-specific data in `struct pthread`).
//! - `INTERP_STATS`, per-CPU counters indexed by [`InterpStat`].
//!
//! # Frame encoding
//! A recorded user stack is `[u64; 127]` of instruction pointers, leaf first. User addresses
//! are below 2^47 on x86_64 and 2^48 on arm64 (whose heaps and mappings are above 2^47:
//! `0xaaaa...`, `0xffff...`), so a word with any of bits 61..63 set is never one: an
//! interpreter frame is recorded in the place of the eval loop's native frame as
//!
//! ```text
//!  63    61 60            45 44                           0
//! | runtime | instruction    | code object pointer >> 3     |
//! |  (3)    | offset (16)    | (45: pointers below 2^48)    |
//! ```
//!
//! `runtime` is one of [`runtime`] (never 0), the instruction offset is in the runtime's code
//! units (CPython: 2-byte units from the start of the code object's bytecode; Ruby: the
//! frame's `pc` in `VALUE`s from the iseq's encoded instructions; PHP: the line of the
//! frame's `opline` itself), saturated at [`FRAME_OFFSET_MAX`]. The code pointer is
//! CPython's code object, Ruby's `rb_iseq_t`, PHP's `zend_function`. [`encode_frame`] and [`decode_frame`] are the only readers and
//! writers. One eval-loop frame becomes one interpreter frame (CPython 3.8-3.10) or the run of
//! frames it executes, up to its entry frame (3.11+), in their true place among the native
//! frames: C extension frames called from Python stay above the Python caller. A HotSpot
//! interpreted frame is followed (toward the root) by a word of its method's fingerprint,
//! no frame of its own ([`hotspot::encode_fingerprint`]); so is a CPython frame of a code
//! object that is not the first the kernel saw at its address, by a word of its generation
//! ([`python::encode_generation`]).
//!
//! # Adding a runtime
//! One file here (`common/src/interp/<runtime>.rs`: its offset slots and constants) and a
//! [`runtime`] tag, one kernel walker (`ebpf/src/unwind/interp/<runtime>.rs`) and one userspace
//! folder (`userspace/src/unwind/interp/<runtime>/`: detection, layouts, naming), each with
//! its line in its crate's table (`docs/architecture.md`, "Adding a runtime").
//! [`InterpProcess::offsets`] is a runtime-defined table of structure offsets (CPython's
//! slots: [`python`]).

pub mod hotspot;
pub mod php;
pub mod python;
pub mod ruby;
pub mod v8;

/// Runtimes ([`InterpProcess::runtime`], the top 3 bits of an encoded frame: 7 at most).
pub mod runtime {
    /// No interpreter.
    pub const NONE: u8 = 0;
    /// CPython.
    pub const PYTHON: u8 = 1;
    /// CRuby (MRI).
    pub const RUBY: u8 = 2;
    /// PHP (Zend).
    pub const PHP: u8 = 3;
    /// V8 (Node.js): JavaScript frames on the frame-pointer chain ([`super::v8`]).
    pub const V8: u8 = 4;
    /// HotSpot (OpenJDK's JVM): interpreted Java frames on the frame-pointer chain, and
    /// frames of its code cache (compiled methods, stubs) ([`super::hotspot`]).
    pub const HOTSPOT: u8 = 5;
    /// A V8 optimized frame whose pc is outside its function's current `Code`
    /// (on-stack-replaced code, or older code still on the stack): recorded as its
    /// `SharedFunctionInfo` and the pc's low 16 bits, the pc itself announced
    /// ([`super::CodeKey`] with this runtime and the pc as `code`) so that userspace finds
    /// the code around it ([`super::v8`]).
    pub const V8_REPLACED: u8 = 6;
}

/// Bit where an encoded frame's runtime starts (3 bits: runtimes 1 to 7).
pub const FRAME_RUNTIME_SHIFT: u32 = 61;
/// Bit where an encoded frame's instruction offset starts.
pub const FRAME_OFFSET_SHIFT: u32 = 45;
/// Largest instruction offset an encoded frame holds (larger ones are saturated).
pub const FRAME_OFFSET_MAX: u32 = (1 << 16) - 1;
/// Mask of the code pointer's bits (shifted right by 3) in an encoded frame.
pub const FRAME_POINTER_MASK: u64 = (1 << FRAME_OFFSET_SHIFT) - 1;

/// An interpreter frame as a stack word (see the module docs).
#[inline(always)]
pub fn encode_frame(runtime: u8, code: u64, offset: u64) -> u64 {
    let offset = if offset > FRAME_OFFSET_MAX as u64 {
        FRAME_OFFSET_MAX as u64
    } else {
        offset
    };
    (u64::from(runtime & 7) << FRAME_RUNTIME_SHIFT)
        | (offset << FRAME_OFFSET_SHIFT)
        | ((code >> 3) & FRAME_POINTER_MASK)
}

/// An encoded frame's (runtime, code pointer, instruction offset); `None` for a native
/// address.
#[inline(always)]
pub fn decode_frame(word: u64) -> Option<(u8, u64, u32)> {
    let runtime = (word >> FRAME_RUNTIME_SHIFT) as u8;
    if runtime == runtime::NONE {
        return None;
    }
    Some((
        runtime,
        (word & FRAME_POINTER_MASK) << 3,
        ((word >> FRAME_OFFSET_SHIFT) as u32) & FRAME_OFFSET_MAX,
    ))
}

/// Processes with an interpreter the kernel unwinds (`INTERP_PROCESSES` entries).
pub const MAX_INTERP_PROCESSES: u32 = 8192;
/// Structure offsets one runtime version needs ([`InterpProcess::offsets`]).
pub const OFFSET_SLOTS: usize = 16;
/// An offset slot the version does not have.
pub const NO_OFFSET: u16 = u16::MAX;

/// One process's interpreter. 80 bytes, no padding.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InterpProcess {
    /// First address of the eval loop's function, in the process.
    pub eval_begin: u64,
    /// One past its last address.
    pub eval_end: u64,
    /// Where the current thread's interpreter state is found; runtime-defined (CPython: the
    /// address of the `pthread_key_t` of `_PyRuntime`'s `autoTSSkey`).
    pub state_address: u64,
    /// One of [`runtime`].
    pub runtime: u8,
    /// Runtime-defined layout family (CPython: [`python::layout`]).
    pub layout: u8,
    /// The runtime's minor version (for reports).
    pub version_minor: u8,
    /// Zero.
    pub padding: [u8; 5],
    /// Runtime-defined structure offsets (CPython: indexed by the [`python`] slots),
    /// [`NO_OFFSET`] where the version has none.
    pub offsets: [u16; OFFSET_SLOTS],
    /// A second range of the eval loop's code, `[cold_begin, cold_end)`: a part of the
    /// function the compiler placed apart (GCC's `.cold` blocks, which profile-guided builds
    /// fill with whatever their training left cold); 0, 0: none.
    pub cold_begin: u64,
    /// One past its last address.
    pub cold_end: u64,
}

impl InterpProcess {
    /// Whether `pc` is in the eval loop's code (either of its ranges).
    #[inline(always)]
    pub fn in_eval(&self, pc: u64) -> bool {
        (self.eval_begin <= pc && pc < self.eval_end)
            || (self.cold_begin <= pc && pc < self.cold_end)
    }
}

/// What the interpreter unwinders need of the kernel and libc (the one `INTERP_CONFIG`
/// entry); 0 means unknown, and the unwinders stay off.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InterpConfig {
    /// Offset in `struct task_struct` (from the kernel's BTF) of the user thread pointer:
    /// `thread.fsbase` on x86_64 (where it is `pthread_self()` under glibc),
    /// `thread.uw.tp_value` (`tpidr_el0`) on arm64.
    pub task_thread_pointer_offset: u32,
    /// Offset from the thread pointer, in bytes, of the `data` word of thread-specific key 0
    /// (`specific_1stblock[0].data` of glibc's `struct pthread`): positive on x86_64, where
    /// the thread pointer is the `struct pthread`; negative on arm64, where the
    /// `struct pthread` ends at it. Key `k < 32` is `16 * k` further.
    pub key_data_from_thread_pointer: i32,
}

/// A code object a process ran, announced once through the `INTERP_CODES` ring buffer
/// (the `INTERP_SEEN` LRU map remembers which were, and under generation 0 the first
/// generation seen at each CPython code address), so userspace reads its names while the
/// process lives.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CodeKey {
    /// Process id (tgid).
    pub pid: u32,
    /// One of [`runtime`].
    pub runtime: u16,
    /// The low 16 bits of a HotSpot compiled method's `_compile_id` (read with the frame:
    /// a blob freed and reused by other code is announced again, and userspace tells the
    /// two apart, [`hotspot::encode_blob`]); a V8 optimized `Code`'s
    /// [`v8::code_generation`] (never 0); a CPython code object's
    /// [`python::code_generation`] (0: unreadable); 0 for every other code object.
    pub generation: u16,
    /// The code object's address in the process (a HotSpot blob's with the low bits of its
    /// generation, [`hotspot::encode_blob`]; a CPython code object that is not the first
    /// generation at its address, its [`python::code_key`]).
    pub code: u64,
}

/// Code objects `INTERP_SEEN` remembers as announced (LRU: a forgotten one is announced
/// again, which is harmless).
pub const MAX_SEEN_CODES: u32 = 65536;
/// Size of the `INTERP_CODES` ring buffer, in bytes (a power of two pages).
pub const CODES_RING_BYTES: u32 = 256 * 1024;

/// Indices of the per-CPU counters in the `INTERP_STATS` array.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InterpStat {
    /// Native eval-loop frames the walk met in processes with an interpreter (V8: frames
    /// in V8's code, builtins or JIT).
    EvalFrames = 0,
    /// Interpreter frames recorded.
    Frames = 1,
    /// Eval-loop frames kept native: the thread had no interpreter state (a thread the
    /// runtime does not know) or no frame left for it.
    NoThreadState = 2,
    /// Eval-loop frames kept native because interpreter memory could not be read.
    ReadErrors = 3,
    /// Stacks whose interpreter frames were cut at [`crate::cpu_sampler::MAX_STACK_DEPTH`].
    Truncated = 4,
    /// New code objects not announced because `INTERP_CODES` was full (announced again at
    /// their next sample).
    CodesLost = 5,
    /// HotSpot frames in the code cache (compiled methods, stubs) recorded.
    CompiledFrames = 6,
    /// HotSpot pcs in the code cache whose blob was not found (a free segment, or a blob
    /// beyond [`hotspot::SEGMAP_HOPS`]): stepped by frame pointer, kept native.
    CompiledMisses = 7,
    /// V8 optimized frames (no `BytecodeArray`) recorded as their `Code` and the pc's
    /// offset in it (userspace finds their current line).
    V8Optimized = 8,
    /// V8 optimized frames recorded as their function, at its definition line: the
    /// version's `Code` is not read, the function's code is not a `Code`, or the pc's
    /// offset is past 16 bits.
    V8OptimizedNoCode = 9,
    /// V8 optimized frames whose pc is outside their function's `Code` (on-stack-replaced
    /// or older code), recorded as [`runtime::V8_REPLACED`] frames: userspace names them
    /// through the code it finds around the announced pc, else as their function.
    V8Replaced = 10,
}

/// Number of [`InterpStat`] counters.
pub const INTERP_STAT_COUNT: u32 = 11;

crate::impl_pod!(InterpProcess, InterpConfig, CodeKey, hotspot::CodeCache);

#[cfg(test)]
mod tests;
