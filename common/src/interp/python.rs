//! CPython's offset slots ([`super::InterpProcess::offsets`]) and layout families.

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
/// `co_firstlineno` (an `int`): with [`CODE_NAME`] and [`CODE_FILENAME`], what tells a
/// code object from the one its address held before ([`code_generation`]).
pub const CODE_FIRSTLINENO: usize = 7;
/// `co_name` (a pointer).
pub const CODE_NAME: usize = 8;
/// `co_filename` (a pointer).
pub const CODE_FILENAME: usize = 9;

/// The generation a code object is announced with: its first line and the addresses of its
/// name and file, folded to 16 bits, never 0 (none). A code object freed during start-up
/// whose address another one takes has, but by a 1-in-65536 chance, another: the kernel
/// records the second's frames with their generation ([`encode_generation`]) and announces
/// it as its [`code_key`], so userspace names each object's frames by that object. Ruby's
/// iseqs are told apart the same way, by their first line, label and path.
#[inline(always)]
pub fn code_generation(first_line: i32, name: u64, filename: u64) -> u16 {
    let folded = (first_line as u32 as u16)
        ^ ((name >> 4) as u16)
        ^ ((name >> 20) as u16)
        ^ ((filename >> 4) as u16).rotate_left(8)
        ^ ((filename >> 20) as u16).rotate_left(8);
    if folded == 0 { 1 } else { folded }
}

/// The code pointer of a generation word ([`encode_generation`]), below any code object.
pub const GENERATION_CODE: u64 = 8;

/// The word that follows (toward the root) a frame of a code object whose generation is
/// not the first the kernel saw at its address: the generation, as a CPython frame of code
/// pointer [`GENERATION_CODE`] whose offset is the generation. It is no frame of its own.
/// A frame without one is of the address's first generation.
#[inline(always)]
pub fn encode_generation(generation: u16) -> u64 {
    super::encode_frame(
        super::runtime::PYTHON,
        GENERATION_CODE,
        u64::from(generation),
    )
}

/// The generation of a word [`encode_generation`] wrote; `None` when `word` is not one.
pub fn decode_generation(word: u64) -> Option<u16> {
    match super::decode_frame(word)? {
        (super::runtime::PYTHON, GENERATION_CODE, generation) => Some(generation as u16),
        _ => None,
    }
}

/// Bit of a [`code_key`] that says it holds a generation (never set in an address).
pub const CODE_KEY_FLAG: u64 = 1 << 63;
/// Bit where a [`code_key`]'s generation starts (above any user address).
pub const CODE_KEY_SHIFT: u32 = 47;

/// The code object a frame of code object `code` of `generation`, followed by its
/// generation word, is announced and named as: the address alone names the frames of its
/// first generation, this key those of each later one. [`split_code_key`] undoes it.
#[inline(always)]
pub fn code_key(code: u64, generation: u16) -> u64 {
    CODE_KEY_FLAG | (u64::from(generation) << CODE_KEY_SHIFT) | (code & ((1 << CODE_KEY_SHIFT) - 1))
}

/// The address and generation of a [`code_key`]; `None` for a bare address.
pub fn split_code_key(key: u64) -> Option<(u64, u16)> {
    (key & CODE_KEY_FLAG != 0).then_some((
        key & ((1 << CODE_KEY_SHIFT) - 1),
        (key >> CODE_KEY_SHIFT) as u16,
    ))
}

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
    /// 3.13+: `tstate->current_frame`, `instr_ptr` (the current instruction); 3.14's
    /// `f_executable` a tagged reference ([`super::FRAME_CODE_TAG_BITS`]).
    pub const INTERPRETER_FRAME_INSTR: u8 = 5;
}

/// The first `owner` of a frame that is not a Python function's (3.12+): the shim frame an
/// eval call pushes at its entry. `FRAME_OWNED_BY_CSTACK` in 3.12-3.13
/// (`Include/internal/pycore_frame.h`); 3.14 has `FRAME_OWNED_BY_INTERPRETER` there and
/// `FRAME_OWNED_BY_CSTACK` after it (`pycore_interpframe_structs.h`), neither a Python frame.
pub const FRAME_OWNED_BY_SHIM: u8 = 3;

/// Low bits of a frame's code reference that are not the pointer: 3.14's `f_executable` is
/// a `_PyStackRef`, whose bits 0-1 tag a deferred or immortal reference
/// (`Include/internal/pycore_stackref.h`); earlier versions' plain pointers are 8-aligned.
pub const FRAME_CODE_TAG_BITS: u64 = 3;
