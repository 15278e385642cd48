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
//! on x86_64 are below 2^47, so a word with any of bits 60..63 set is never one: an
//! interpreter frame is recorded in the place of the eval loop's native frame as
//!
//! ```text
//!  63    60 59            44 43                           0
//! | runtime | instruction    | code object pointer >> 3     |
//! |  (4)    | offset (16)    | (44: pointers below 2^47)    |
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
//! no frame of its own ([`hotspot::encode_fingerprint`]).
//!
//! # Adding a runtime
//! One kernel module (`ebpf/src/interp/<runtime>.rs`: one frame per call, given the walk's
//! state), one userspace module (`userspace/src/unwind/interp/<runtime>.rs`: detection, offsets,
//! naming), a [`runtime`] constant and its dispatch lines. [`InterpProcess::offsets`] is a
//! runtime-defined table of structure offsets (CPython's slots: [`python`]).

/// Runtimes ([`InterpProcess::runtime`], the top 4 bits of an encoded frame).
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

/// Bit where an encoded frame's runtime starts.
pub const FRAME_RUNTIME_SHIFT: u32 = 60;
/// Bit where an encoded frame's instruction offset starts.
pub const FRAME_OFFSET_SHIFT: u32 = 44;
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
    (u64::from(runtime & 15) << FRAME_RUNTIME_SHIFT)
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

/// One process's interpreter. 64 bytes, no padding.
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
}

/// What the interpreter unwinders need of the kernel and libc (the one `INTERP_CONFIG`
/// entry); 0 means unknown, and the unwinders stay off.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InterpConfig {
    /// Offset of `thread.fsbase` in `struct task_struct` (from the kernel's BTF): the user
    /// thread pointer, `pthread_self()` under glibc on x86_64.
    pub task_fsbase_offset: u32,
    /// Offset from `pthread_self()` of the `data` word of thread-specific key 0
    /// (`specific_1stblock[0].data` of glibc's `struct pthread`); key `k < 32` is
    /// `16 * k` further.
    pub pthread_key_data_offset: u32,
}

/// A code object a process ran, announced once through the `INTERP_CODES` ring buffer
/// (the `INTERP_SEEN` LRU map remembers which were), so userspace reads its names while the
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
    /// [`v8::code_generation`] (never 0); 0 for every other code object.
    pub generation: u16,
    /// The code object's address in the process (a HotSpot blob's with the low bits of its
    /// generation, [`hotspot::encode_blob`]).
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
    /// Stacks whose interpreter frames were cut at [`crate::profile::MAX_STACK_DEPTH`].
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

/// CPython's offset slots ([`InterpProcess::offsets`]) and layout families.
pub mod python {
    /// `PyThreadState` to its frames: `frame` (3.8-3.10), `cframe` (3.11-3.12),
    /// `current_frame` (3.13+).
    pub const TSTATE_FRAME: usize = 0;
    /// `_PyCFrame.current_frame` (3.11-3.12); [`super::NO_OFFSET`] otherwise.
    pub const CFRAME_CURRENT_FRAME: usize = 1;
    /// The caller frame: `f_back` (3.8-3.10), `previous` (3.11+).
    pub const FRAME_PREVIOUS: usize = 2;
    /// The frame's code: `f_code` (-3.12), `f_executable` (3.13+).
    pub const FRAME_CODE: usize = 3;
    /// Where the frame is: `f_lasti` (an `int`, 3.8-3.10), `prev_instr` (3.11-3.12),
    /// `instr_ptr` (3.13+).
    pub const FRAME_INSTRUCTION: usize = 4;
    /// `is_entry` (3.11), `owner` (3.12+).
    pub const FRAME_ENTRY: usize = 5;
    /// `co_code_adaptive`, the bytecode's offset in the code object (3.11+).
    pub const CODE_BYTECODE: usize = 6;

    /// Layout families ([`super::InterpProcess::layout`]).
    pub mod layout {
        /// 3.8-3.9: `PyFrameObject` chain, `f_lasti` in bytes.
        pub const FRAME_OBJECT_BYTES: u8 = 1;
        /// 3.10: `PyFrameObject` chain, `f_lasti` in 2-byte code units.
        pub const FRAME_OBJECT_UNITS: u8 = 2;
        /// 3.11: `_PyInterpreterFrame` through `cframe`, `is_entry` ends an eval call.
        pub const INTERPRETER_FRAME_ENTRY: u8 = 3;
        /// 3.12: `_PyInterpreterFrame` through `cframe`, a C-stack-owned frame ends one.
        pub const INTERPRETER_FRAME_OWNER: u8 = 4;
        /// 3.13+: `tstate->current_frame`, `instr_ptr` (the current instruction).
        pub const INTERPRETER_FRAME_INSTR: u8 = 5;
    }

    /// `FRAME_OWNED_BY_CSTACK` (`Include/internal/pycore_frame.h`, 3.12+): the shim frame an
    /// eval call pushes at its entry.
    pub const FRAME_OWNED_BY_CSTACK: u8 = 3;
}

/// CRuby's offset slots ([`InterpProcess::offsets`]). `state_address` is the GOT slot of
/// `ruby_current_ec`'s TLS module id (its `R_X86_64_DTPMOD64` relocation); the word after it
/// is the variable's offset in the module's block (`R_X86_64_DTPOFF64`). The kernel finds
/// the thread's block through glibc's DTV (`tcbhead_t.dtv` at 8 from the thread pointer,
/// 16-byte `dtv_t` entries), as `__tls_get_addr` does for a module loaded at start-up.
pub mod ruby {
    /// `rb_execution_context_t.vm_stack` (the start of the VM stack).
    pub const EC_VM_STACK: usize = 0;
    /// `rb_execution_context_t.vm_stack_size` (in `VALUE`s).
    pub const EC_VM_STACK_SIZE: usize = 1;
    /// `rb_execution_context_t.cfp` (the current control frame).
    pub const EC_CFP: usize = 2;
    /// `rb_control_frame_t.pc`.
    pub const CFP_PC: usize = 3;
    /// `rb_control_frame_t.iseq`.
    pub const CFP_ISEQ: usize = 4;
    /// `rb_control_frame_t.ep`.
    pub const CFP_EP: usize = 5;
    /// `sizeof(rb_control_frame_t)`.
    pub const CFP_SIZE: usize = 6;
    /// `rb_iseq_t.body`.
    pub const ISEQ_BODY: usize = 7;
    /// `rb_iseq_constant_body.iseq_encoded`.
    pub const BODY_ENCODED: usize = 8;
    /// `VM_FRAME_FLAG_FINISH` in `ep[0]`: the frame an `rb_vm_exec` call started with.
    pub const FRAME_FLAG_FINISH: u64 = 0x0020;
    /// Glibc x86_64: `tcbhead_t.dtv`'s offset from the thread pointer.
    pub const TCB_DTV: u64 = 8;
    /// Glibc x86_64: `sizeof(dtv_t)`.
    pub const DTV_ENTRY_SIZE: u64 = 16;
}

/// PHP's offset slots ([`InterpProcess::offsets`]). `state_address` is
/// `&executor_globals.current_execute_data` (a non-ZTS build: the CLI).
pub mod php {
    /// `zend_execute_data.opline`.
    pub const EX_OPLINE: usize = 0;
    /// `zend_execute_data.func`.
    pub const EX_FUNC: usize = 1;
    /// `zend_execute_data.This.u1.type_info` (the call info).
    pub const EX_CALL_INFO: usize = 2;
    /// `zend_execute_data.prev_execute_data`.
    pub const EX_PREVIOUS: usize = 3;
    /// `zend_op.lineno`.
    pub const OP_LINENO: usize = 4;
    /// `zend_function.type` (a byte).
    pub const FUNC_TYPE: usize = 5;
    /// `ZEND_USER_FUNCTION` (`ZEND_INTERNAL_FUNCTION` is 1: run natively, kept native).
    pub const USER_FUNCTION: u8 = 2;
    /// `ZEND_EVAL_CODE`.
    pub const EVAL_CODE: u8 = 4;
    /// `ZEND_CALL_TOP` in the call info: the frame an `execute_ex` call started with.
    pub const CALL_TOP: u32 = 1 << 17;
}

/// V8's offset slots ([`InterpProcess::offsets`]), all from the binary's `v8dbg_*`
/// postmortem symbols. `eval_begin..eval_end` is the embedded builtins' code
/// (`v8_Default_embedded_blob_code_`, `Builtins_*` in the binary's text, with no unwind
/// rows); JIT code is anonymous memory. Both keep V8's frame-pointer chain, on which a
/// JavaScript frame holds its context (a heap object) at `fp - FP_CONTEXT` and its
/// `JSFunction` at `fp - FP_FUNCTION`; any other V8 frame holds a type marker (a small
/// integer: tag bit 0) in the context's place. A JavaScript frame is recorded as its
/// function's `SharedFunctionInfo` (tag cleared) and, for interpreted frames, the bytecode
/// offset (a Smi at `fp - FP_BYTECODE_OFFSET`); 0 when not known. A frame that holds no
/// `BytecodeArray` (optimized: Maglev, TurboFan) whose pc is in its function's `Code`
/// instructions is recorded as that `Code` object (tag cleared) and the pc's offset from
/// `Code::instruction_start` instead (userspace tells the two by the object's instance
/// type). Pointers are tagged: heap objects end in binary 01 (`HeapObjectTag`), Smis in 0
/// with the value in the high 32 bits (no pointer compression: 8-byte tagged words).
pub mod v8 {
    /// `-v8dbg_off_fp_context_or_frame_type` (bytes below the frame pointer).
    pub const FP_CONTEXT: usize = 0;
    /// `-v8dbg_off_fp_function`.
    pub const FP_FUNCTION: usize = 1;
    /// `-v8dbg_off_fp_bytecode_offset`.
    pub const FP_BYTECODE_OFFSET: usize = 2;
    /// `v8dbg_class_HeapObject__map__Map`.
    pub const OBJECT_MAP: usize = 3;
    /// `v8dbg_class_Map__instance_type__uint16_t`.
    pub const MAP_INSTANCE_TYPE: usize = 4;
    /// `v8dbg_class_JSFunction__shared__SharedFunctionInfo`.
    pub const FUNCTION_SHARED: usize = 5;
    /// First instance type of the `JSFunction` classes (`v8dbg_type_JSFunction__...`).
    pub const TYPE_FUNCTION_FIRST: usize = 6;
    /// Last instance type of the `JSFunction` classes (class constructors and the like
    /// follow the first).
    pub const TYPE_FUNCTION_LAST: usize = 7;
    /// `v8dbg_type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE`.
    pub const TYPE_SHARED_FUNCTION_INFO: usize = 8;
    /// `-v8dbg_off_fp_bytecode_array`.
    pub const FP_BYTECODE_ARRAY: usize = 9;
    /// `v8dbg_type_BytecodeArray__BYTECODE_ARRAY_TYPE`.
    pub const TYPE_BYTECODE_ARRAY: usize = 10;
    /// `JSFunction::code` (V8 11.3 states no symbol: 24 past `shared`); [`super::NO_OFFSET`]
    /// when the version's compiled code is not read: its frames are recorded as their
    /// `SharedFunctionInfo`.
    pub const FUNCTION_CODE: usize = 11;
    /// `Code::instruction_start` (a pointer, low byte) and `Code::instruction_size` (a u32,
    /// high byte), packed: both are below 256.
    pub const CODE_INSTRUCTIONS: usize = 12;
    /// `v8dbg_type_Code__CODE_TYPE`.
    pub const TYPE_CODE: usize = 13;
    /// V8 13.6 (leaptiering): where the `JSDispatchTable`'s entries start in the
    /// `IsolateGroup` (the process's, at `*state_address`: `IsolateGroup::
    /// default_isolate_group_`); `FUNCTION_CODE` is then the function's `dispatch_handle`
    /// (a `u32`) and its `Code` is in the table's entry ([`DISPATCH_HANDLE_SHIFT`]).
    /// [`super::NO_OFFSET`]: `FUNCTION_CODE` holds a tagged `Code` pointer (V8 11.3).
    pub const DISPATCH_TABLE: usize = 14;
    /// V8 13.6's `JSDispatchTable`: entry `handle >> DISPATCH_HANDLE_SHIFT`, of
    /// `DISPATCH_ENTRY_SIZE` bytes, holds at `DISPATCH_ENTRY_CODE` the function's `Code`
    /// (untagged) shifted left by `DISPATCH_CODE_SHIFT`, its parameter count in the low
    /// bits (read from a live node 24).
    pub const DISPATCH_HANDLE_SHIFT: u32 = 8;
    pub const DISPATCH_ENTRY_SIZE: u64 = 16;
    pub const DISPATCH_ENTRY_CODE: u64 = 8;
    pub const DISPATCH_CODE_SHIFT: u32 = 16;
    /// Low bits of a tagged heap object pointer (`v8dbg_HeapObjectTagMask`).
    pub const HEAP_OBJECT_TAG_MASK: u64 = 3;
    /// Their value in a heap object pointer (`v8dbg_HeapObjectTag`).
    pub const HEAP_OBJECT_TAG: u64 = 1;
    /// Shift of a Smi's value in its word (`v8dbg_SmiShiftSize` + the 1-bit tag).
    pub const SMI_SHIFT: u32 = 32;

    /// The generation an optimized `Code` is announced with ([`super::CodeKey`]): its
    /// instructions' first address and size folded to 16 bits, never 0 (0: a
    /// `SharedFunctionInfo`, which has none). Other code at a reused `Code` address almost
    /// always has another; userspace reads the `Code` again and names it by neither when
    /// the two differ (a move of the same instructions reads the same).
    #[inline(always)]
    pub fn code_generation(start: u64, size: u32) -> u16 {
        // Fibonacci hashing: the top 16 bits of the pair (start below 2^47) times 2^64 / phi.
        let pair = start ^ (u64::from(size) << 47);
        let folded = (pair.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 48) as u16;
        if folded == 0 { 1 } else { folded }
    }
}

/// HotSpot's offset slots ([`InterpProcess::offsets`]), from the JVM's `gHotSpotVMStructs`.
/// `eval_begin..eval_end` is the template interpreter's code (`AbstractInterpreter::_code`,
/// a `StubQueue` in the code cache). Interpreted frames keep rbp as a frame pointer and
/// hold the frame's `Method*` at `rbp - METHOD_SLOT` and its bytecode pointer at
/// `rbp - BCP_SLOT`; such a frame is recorded as its `Method*` and its bytecode index
/// (`bcp - (constMethod + sizeof(ConstMethod))`, 0 when it is not in the method's code).
///
/// A pc in the code cache's heaps ([`hotspot::CodeCache`], `HOTSPOT_CODE`) is recorded as
/// its `CodeBlob` (found through the heap's segment map) and the pc's offset in bytes from
/// the blob (saturated at [`super::FRAME_OFFSET_MAX`]: the code pointer tells the two kinds
/// apart, a `Method*` is never in the code cache), and stepped by `CodeBlob::_frame_size`.
pub mod hotspot {
    /// Bytes below rbp of the interpreter frame's `Method*`.
    pub const METHOD_SLOT: usize = 0;
    /// Bytes below rbp of its bytecode pointer.
    pub const BCP_SLOT: usize = 1;
    /// `Method::_constMethod`.
    pub const METHOD_CONST_METHOD: usize = 2;
    /// `sizeof(ConstMethod)`: where the bytecodes start in a `ConstMethod`.
    pub const CONST_METHOD_SIZE: usize = 3;
    /// Bytes below rbp of the interpreter frame's sender sp (the caller's unextended sp,
    /// where a compiled caller's frame starts).
    pub const SENDER_SP_SLOT: usize = 4;
    /// `ConstMethod::_constants` (the method's `ConstantPool*`), for its [`fingerprint`].
    pub const CONST_METHOD_CONSTANTS: usize = 5;
    /// `ConstantPool::_pool_holder` (the method's class, a `Klass*`).
    pub const CONSTANT_POOL_HOLDER: usize = 6;
    /// `Klass::_name` (the class name's `Symbol*`).
    pub const KLASS_NAME: usize = 7;
    /// `ConstMethod::_name_index` (a u16: the method name's constant pool slot).
    pub const CONST_METHOD_NAME_INDEX: usize = 8;
    /// `ConstMethod::_signature_index` (a u16).
    pub const CONST_METHOD_SIGNATURE_INDEX: usize = 9;

    /// A fingerprint of the method whose `ConstMethod*` is `const_method`, whose constant
    /// pool is `constants`, whose class name is `Symbol*` `class_name`, and whose name and
    /// signature are constant pool slots `name_index` and `signature_index`: 16 bits that
    /// differ, but for 1 in 65,536, between two methods that held the same `Method*` one
    /// after the other (a class unloaded and its metaspace given to another: the address
    /// says nothing, the names' symbols and the pool do). The kernel computes it when it
    /// records an interpreted frame ([`encode_fingerprint`]) and userspace again from the
    /// process's memory before it names the frame.
    #[inline(always)]
    pub fn fingerprint(
        const_method: u64,
        constants: u64,
        class_name: u64,
        name_index: u16,
        signature_index: u16,
    ) -> u16 {
        let mut hash = const_method
            ^ constants.rotate_left(21)
            ^ class_name.rotate_left(42)
            ^ (u64::from(name_index) | u64::from(signature_index) << 16);
        hash = hash.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        hash ^= hash >> 29;
        hash = hash.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        (hash >> 48) as u16
    }

    /// The code pointer of a fingerprint word ([`encode_fingerprint`]), below any
    /// `Method*` or blob; one with an unreadable fingerprint has twice it.
    pub const FINGERPRINT_CODE: u64 = 8;

    /// The word that follows an interpreted frame's (toward the root) in a recorded stack:
    /// its method's [`fingerprint`] (`None`: unreadable), as a HotSpot frame of code pointer
    /// [`FINGERPRINT_CODE`] whose offset is the fingerprint. It is no frame of its own.
    #[inline(always)]
    pub fn encode_fingerprint(fingerprint: Option<u16>) -> u64 {
        match fingerprint {
            Some(fingerprint) => super::encode_frame(
                super::runtime::HOTSPOT,
                FINGERPRINT_CODE,
                u64::from(fingerprint),
            ),
            None => super::encode_frame(super::runtime::HOTSPOT, 2 * FINGERPRINT_CODE, 0),
        }
    }

    /// The fingerprint of a word [`encode_fingerprint`] wrote (`Some(None)`: it was
    /// unreadable); `None` when `word` is not one.
    pub fn decode_fingerprint(word: u64) -> Option<Option<u16>> {
        match super::decode_frame(word)? {
            (super::runtime::HOTSPOT, FINGERPRINT_CODE, fingerprint) => {
                Some(Some(fingerprint as u16))
            }
            (super::runtime::HOTSPOT, code, _) if code == 2 * FINGERPRINT_CODE => Some(None),
            _ => None,
        }
    }

    /// Bit of a [`method_key`] that says it holds a fingerprint (never set in an address).
    pub const METHOD_KEY_FLAG: u64 = 1 << 63;
    /// Bit where a [`method_key`]'s fingerprint starts (above any user address).
    pub const METHOD_KEY_SHIFT: u32 = 47;

    /// The code object an interpreted frame of `method` with `fingerprint` is announced and
    /// named as: one per (`Method*`, fingerprint), so that a `Method*` reused by another
    /// method is another code object. [`split_method_key`] undoes it.
    #[inline(always)]
    pub fn method_key(method: u64, fingerprint: u16) -> u64 {
        METHOD_KEY_FLAG
            | (u64::from(fingerprint) << METHOD_KEY_SHIFT)
            | (method & ((1 << METHOD_KEY_SHIFT) - 1))
    }

    /// The `Method*` and fingerprint of a [`method_key`]; `None` for any other code pointer.
    pub fn split_method_key(key: u64) -> Option<(u64, u16)> {
        (key & METHOD_KEY_FLAG != 0).then_some((
            key & ((1 << METHOD_KEY_SHIFT) - 1),
            (key >> METHOD_KEY_SHIFT) as u16,
        ))
    }

    /// Code heaps of one JVM at most ([`CodeCache::heaps`]; JDK 9+ has 1 or 3).
    pub const MAX_CODE_HEAPS: usize = 4;
    /// JVMs whose compiled frames the kernel unwinds at once (`HOTSPOT_CODE` entries).
    pub const MAX_JVMS: u32 = 1024;
    /// Hops through a code heap's segment map at most: one hop goes back up to 254
    /// segments, so 16 hops find the start of any blob below about 500 KiB with 128-byte
    /// segments (C2's largest methods are tens of KiB).
    pub const SEGMAP_HOPS: u32 = 16;
    /// A segment map byte of a segment that starts a block.
    pub const SEGMAP_START: u8 = 0;
    /// A segment map byte of a free segment.
    pub const SEGMAP_FREE: u8 = 0xFF;
    /// The largest `CodeBlob::_frame_size` believed, in words (larger: the blob is not
    /// stepped by its size).
    pub const MAX_FRAME_WORDS: u32 = 8192;

    /// One code heap: its reserved code memory `[low, high)` and its segment map (one byte
    /// per `1 << CodeCache::segment_shift` bytes of code: 0 at a block's first segment, the
    /// hops back to it elsewhere, 0xFF when free).
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct CodeHeap {
        /// `CodeHeap::_memory._low_boundary`.
        pub low: u64,
        /// `CodeHeap::_memory._high_boundary`.
        pub high: u64,
        /// `CodeHeap::_segmap._low_boundary`.
        pub segmap: u64,
    }

    /// A JVM's code cache, where its compiled (C1/C2) methods, stubs and adapters are
    /// (`HOTSPOT_CODE`, pid (tgid) to this; written by userspace when the JVM's layout is
    /// read). A pc in a heap belongs to the `CodeBlob` found through the segment map: at
    /// `low + (segment << segment_shift) + heap_block_size`. 128 bytes, no padding.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct CodeCache {
        /// The heaps, `count` of them.
        pub heaps: [CodeHeap; MAX_CODE_HEAPS],
        /// Heaps in use.
        pub count: u32,
        /// `CodeHeap::_log2_segment_size`.
        pub segment_shift: u32,
        /// `sizeof(HeapBlock)`: the block header before each blob.
        pub heap_block_size: u32,
        /// `CodeBlob::_frame_size` (an i32, in words: the frame with its return address).
        pub frame_size_offset: u32,
        /// `CodeBlob::_frame_complete_offset` (an i32: bytes from the code's start to the
        /// first instruction after the prologue); 0 when the JVM does not state it (a
        /// sampled prologue is then stepped as a whole frame).
        pub frame_complete_offset: u32,
        /// `CodeBlob::_code_begin` (a pointer, JDK 9-22) or `_code_offset` (an i32 from the
        /// blob, [`CodeCache::code_begin_is_offset`]).
        pub code_begin_offset: u32,
        /// 1 when `code_begin_offset` is `_code_offset`, 0 for `_code_begin`.
        pub code_begin_is_offset: u32,
        /// `nmethod::_compile_id` (an i32: the compilation's number, new for each nmethod
        /// the JVM makes; [`encode_blob`]); 0 when the JVM does not state it (a blob's
        /// frames then carry no generation).
        pub compile_id_offset: u32,
    }

    /// The most bits of a generation an encoded blob carries ([`encode_blob`]).
    pub const MAX_GENERATION_BITS: u32 = 12;

    /// How many bits of a blob's generation fit into the low bits of its address, with
    /// `segment_shift` and `heap_block_size` of [`CodeCache`]: a blob starts at
    /// `heap_block_size` bytes past a segment's start, so its address bits 3 to
    /// `segment_shift - 1` are known (4 bits with JDK 17's 128-byte segments, 2 at the
    /// smallest segments HotSpot allows on x86_64, 32 bytes). 0 when they are not known.
    #[inline(always)]
    pub fn generation_bits(segment_shift: u32, heap_block_size: u32) -> u32 {
        if segment_shift <= 3
            || segment_shift > 16
            || heap_block_size & 7 != 0
            || u64::from(heap_block_size) >= 1 << segment_shift
        {
            return 0;
        }
        let bits = segment_shift - 3;
        if bits > MAX_GENERATION_BITS {
            MAX_GENERATION_BITS
        } else {
            bits
        }
    }

    /// The code pointer a frame and an announcement record for code cache blob `blob` of
    /// generation `generation` (its nmethod's `_compile_id`): the blob's segment start
    /// plus the generation's low [`generation_bits`] bits times 8, so that a blob freed
    /// and given to other code is another code object (named again) while the pointer
    /// stays in the same segment; [`decode_blob`] undoes it. `blob` itself when no bits
    /// fit.
    #[inline(always)]
    pub fn encode_blob(
        blob: u64,
        generation: u32,
        segment_shift: u32,
        heap_block_size: u32,
    ) -> u64 {
        let bits = generation_bits(segment_shift, heap_block_size);
        if bits == 0 {
            return blob;
        }
        let start = blob - u64::from(heap_block_size);
        start + ((u64::from(generation) & ((1 << bits) - 1)) << 3)
    }

    /// The blob and generation bits of a code pointer [`encode_blob`] wrote (`code` and 0
    /// when no bits fit).
    pub fn decode_blob(code: u64, segment_shift: u32, heap_block_size: u32) -> (u64, u32) {
        let bits = generation_bits(segment_shift, heap_block_size);
        if bits == 0 {
            return (code, 0);
        }
        let segment = (1u64 << segment_shift) - 1;
        (
            (code & !segment) + u64::from(heap_block_size),
            ((code & segment) >> 3) as u32,
        )
    }

    /// The mask of a generation's bits an encoded blob keeps.
    pub fn generation_mask(segment_shift: u32, heap_block_size: u32) -> u32 {
        (1 << generation_bits(segment_shift, heap_block_size)) - 1
    }
}

crate::impl_pod!(InterpProcess, InterpConfig, CodeKey, hotspot::CodeCache);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_have_no_padding() {
        assert_eq!(size_of::<InterpProcess>(), 64);
        assert_eq!(size_of::<InterpConfig>(), 8);
        assert_eq!(size_of::<hotspot::CodeCache>(), 128);
        assert_eq!(size_of::<CodeKey>(), 16);
    }

    #[test]
    fn blobs_carry_their_generation_in_their_known_low_bits() {
        use hotspot::{decode_blob, encode_blob, generation_bits};
        // JDK 17: 128-byte segments, 16-byte block headers: 4 bits.
        let blob = 0x7f65_7333_4590;
        assert_eq!(generation_bits(7, 16), 4);
        let (old, new) = (encode_blob(blob, 107, 7, 16), encode_blob(blob, 140, 7, 16));
        assert_ne!(old, new);
        // Still in the blob's segment, so still in the code cache.
        assert_eq!(old & !127, blob & !127);
        assert_eq!(decode_blob(old, 7, 16), (blob, 107 & 15));
        assert_eq!(decode_blob(new, 7, 16), (blob, 140 & 15));
        // 32-byte segments keep 2 bits; bits beyond them wrap.
        assert_eq!(generation_bits(5, 16), 2);
        assert_eq!(
            decode_blob(encode_blob(0x1010, 7, 5, 16), 5, 16),
            (0x1010, 3)
        );
        // Nothing fits: the blob as it is.
        assert_eq!(generation_bits(4, 16), 0);
        assert_eq!(encode_blob(0x1010, 7, 4, 16), 0x1010);
        assert_eq!(decode_blob(0x1010, 4, 16), (0x1010, 0));
        // Large segments are capped.
        assert_eq!(generation_bits(16, 16), hotspot::MAX_GENERATION_BITS);
        assert_eq!(
            decode_blob(encode_blob(0x1_0010, 0xFFFF, 16, 16), 16, 16),
            (0x1_0010, 0xFFF)
        );
    }

    /// A V8 `Code`'s generation is never 0 (a `SharedFunctionInfo`'s), and other
    /// instructions (a start 16 bytes on, or a size one byte more) give another one.
    #[test]
    fn v8_code_generations_tell_other_instructions_apart() {
        use v8::code_generation;
        let (start, size) = (0x0e4a_f3c0_2040, 1184);
        let generation = code_generation(start, size);
        assert_ne!(generation, 0);
        assert_eq!(code_generation(start, size), generation);
        assert_ne!(code_generation(start + 16, size), generation);
        assert_ne!(code_generation(start, size + 1), generation);
        // Over a spread of starts, sizes: almost all distinct, none 0.
        let mut seen = [false; 1 << 16];
        let mut distinct = 0;
        for i in 0..1000u64 {
            let generation = code_generation(start + 64 * i, 1184 + (i as u32 % 7));
            assert_ne!(generation, 0);
            distinct += usize::from(!seen[usize::from(generation)]);
            seen[usize::from(generation)] = true;
        }
        assert!(distinct >= 990, "{distinct} of 1000");
    }

    #[test]
    fn interpreted_frames_carry_their_methods_fingerprint() {
        use hotspot::{
            decode_fingerprint, encode_fingerprint, fingerprint, method_key, split_method_key,
        };
        // Two classes whose metadata was laid out alike (the JReuse fixture's P0 and P1):
        // the same ConstMethod, pool and indexes, another class name.
        let p0 = fingerprint(0x7f10_0000_2a08, 0x7f10_0000_1c40, 0x7f22_0001_3e50, 17, 18);
        let p1 = fingerprint(0x7f10_0000_2a08, 0x7f10_0000_1c40, 0x7f22_0001_3e70, 17, 18);
        assert_ne!(p0, p1);
        assert_ne!(
            p0,
            fingerprint(0x7f10_0000_2a08, 0x7f10_0000_1c40, 0x7f22_0001_3e50, 17, 20)
        );
        assert_eq!(
            p0,
            fingerprint(0x7f10_0000_2a08, 0x7f10_0000_1c40, 0x7f22_0001_3e50, 17, 18)
        );
        for fp in [Some(0), Some(p0), Some(u16::MAX), None] {
            let word = encode_fingerprint(fp);
            assert!(word >= 1 << 47);
            assert_eq!(decode_fingerprint(word), Some(fp));
        }
        // Frames of methods and blobs are not fingerprints.
        let method = 0x7f10_0000_2b10;
        assert_eq!(
            decode_fingerprint(encode_frame(runtime::HOTSPOT, method, 8)),
            None
        );
        assert_eq!(
            decode_fingerprint(encode_frame(runtime::PYTHON, 8, 3)),
            None
        );
        assert_eq!(decode_fingerprint(method), None);
        let key = method_key(method, 0xBEEF);
        assert_eq!(key, 0xDF77_FF10_0000_2B10);
        assert_eq!(split_method_key(key), Some((method, 0xBEEF)));
        assert_ne!(key, method_key(method, 0xBEEE));
        assert_eq!(split_method_key(method), None);
    }

    #[test]
    fn frames_round_trip_and_never_look_like_user_addresses() {
        let code = 0x7f3a_1c20_1238;
        let word = encode_frame(runtime::PYTHON, code, 37);
        assert!(word >= 1 << 47);
        assert_eq!(decode_frame(word), Some((runtime::PYTHON, code, 37)));
        assert_eq!(decode_frame(0x7fff_ffff_f000), None);
        // Offsets past the field saturate instead of spilling into the runtime.
        let big = encode_frame(runtime::PYTHON, code, 1 << 20);
        assert_eq!(
            decode_frame(big),
            Some((runtime::PYTHON, code, FRAME_OFFSET_MAX))
        );
    }
}
