//! V8's offset slots ([`super::InterpProcess::offsets`]), all from the binary's `v8dbg_*`
//! postmortem symbols. `eval_begin..eval_end` is the embedded builtins' code
//! (`v8_Default_embedded_blob_code_`, `Builtins_*` in the binary's text, with no unwind
//! rows); JIT code is anonymous memory. Both keep V8's frame-pointer chain, on which a
//! JavaScript frame holds its context (a heap object) at `fp - FP_CONTEXT` and its
//! `JSFunction` at `fp - FP_FUNCTION`; any other V8 frame holds a type marker (a small
//! integer: tag bit 0) in the context's place. A JavaScript frame is recorded as its
//! function's `SharedFunctionInfo` (tag cleared) and, for interpreted frames, the bytecode
//! offset (a Smi at `fp - FP_BYTECODE_OFFSET`); 0 when not known. A frame that holds no
//! `BytecodeArray` (optimized: Maglev, TurboFan) whose pc is in its function's `Code`
//! instructions is recorded as that `Code` object (tag cleared) and the pc's offset from
//! `Code::instruction_start` instead (userspace tells the two by the object's instance
//! type). Pointers are tagged: heap objects end in binary 01 (`HeapObjectTag`), Smis in 0
//! with the value in the high 32 bits (no pointer compression: 8-byte tagged words).

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
/// high byte's low 7 bits), packed: both are below 256 and 128. With
/// [`CODE_INSTRUCTIONS_INLINE`] set, the low byte is where the instructions themselves
/// start in the `Code` object (V8 10.2: `Code::kHeaderSize`, no pointer).
pub const CODE_INSTRUCTIONS: usize = 12;
/// The flag of [`CODE_INSTRUCTIONS`]: the `Code` holds its instructions (V8 before 11).
pub const CODE_INSTRUCTIONS_INLINE: u16 = 0x8000;
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
