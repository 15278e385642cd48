//! V8 (Node.js) JavaScript frames. V8's code (the embedded builtins in the binary's text,
//! JIT code in anonymous memory) has no unwind rows but keeps the frame-pointer chain, so
//! the walk steps through it by frame pointer; a frame whose context slot holds a heap
//! object (not a frame-type marker) is a JavaScript frame and is recorded, in the place of
//! its native PC, as its function's `SharedFunctionInfo` and its bytecode offset when it
//! is interpreted (layouts in `tracekit_common::interp::v8`, from the binary's `v8dbg_*`
//! symbols). Every pointer read is checked against its object's instance type (a function
//! once per CPU while it stays cached, see below), so a frame that is not what it looks like
//! stays native. An optimized frame (no `BytecodeArray` in it) whose pc lies in its
//! function's `Code` instructions is recorded as that `Code` and the pc's offset in them
//! ([`compiled_frame`]), for userspace to find its current line; one whose pc is outside
//! its function's code is recorded for userspace to find that code ([`replaced_frame`]).
//! V8 13.6 keeps a function's code in the process's `JSDispatchTable` ([`function_code`]).
//!
//! Cost (a helper call per user read, each paying the CPU's return thunk): a frame's slots,
//! saved frame pointer and return address are read in one block ([`FrameBlock`]), and a
//! per-CPU cache ([`V8State`]) remembers the functions validated and announced in earlier
//! stacks of the same process (with the `BytecodeArray` its interpreted frames held), so a
//! JavaScript frame seen before costs the block and one read of its function's `shared`
//! (compared with the cached one): 2 reads instead of 13 and a hash lookup. An optimized
//! frame seen before costs the same 2: the cache entry also keeps the function's `Code`
//! and its instructions' range ([`cached_compiled`]), and the frame's pc in that range and
//! the function's `code` (read, compared with the cached one) stand for the 7 reads of
//! its `shared`, its frame slots' `BytecodeArray` check and [`compiled_frame`] (V8 13.6:
//! 3 reads more, the function's code being 4 reads through the dispatch table).

use aya_ebpf::helpers::generated::bpf_probe_read_user;
use tracekit_common::interp::{
    FRAME_OFFSET_MAX, FRAME_RUNTIME_SHIFT, InterpStat, NO_OFFSET, OFFSET_SLOTS, encode_frame,
    runtime,
    v8::{
        CODE_INSTRUCTIONS, CODE_INSTRUCTIONS_INLINE, DISPATCH_CODE_SHIFT, DISPATCH_ENTRY_CODE,
        DISPATCH_ENTRY_SIZE, DISPATCH_HANDLE_SHIFT, DISPATCH_TABLE, FP_BYTECODE_ARRAY,
        FP_BYTECODE_OFFSET, FP_CONTEXT, FP_FUNCTION, FUNCTION_CODE, FUNCTION_SHARED,
        HEAP_OBJECT_TAG, HEAP_OBJECT_TAG_MASK, MAP_INSTANCE_TYPE, OBJECT_MAP, SMI_SHIFT,
        TYPE_BYTECODE_ARRAY, TYPE_CODE, TYPE_FUNCTION_FIRST, TYPE_FUNCTION_LAST,
        TYPE_SHARED_FUNCTION_INFO, code_generation,
    },
};

use super::{InterpWalk, announce_as, announce_code, announce_generation, bump, read_user, record};
use crate::unwind::UnwindMaps;

/// Words of a frame read at once: [`BLOCK_BELOW`] below the frame pointer (V8's x64 frame
/// slots: context, function, argc, bytecode array, bytecode offset at fp-8..fp-40), then
/// the saved frame pointer and the return address.
const BLOCK_WORDS: usize = 8;
/// Words of the block below the frame pointer.
const BLOCK_BELOW: usize = 6;
/// Entries of the per-CPU function cache (direct-mapped by a hash of the function's
/// address; a stack of node's has 10 to 20 JavaScript frames, which 16 entries would
/// often map two to a slot, each evicting the other every stack).
const FUNCTION_CACHE_BITS: u32 = 6;
const FUNCTION_CACHE: usize = 1 << FUNCTION_CACHE_BITS;
/// [`V8State::block_index`] of a slot that is not in the block.
const NOT_IN_BLOCK: u8 = 0xFF;

/// One frame's words, `fp - 8 * BLOCK_BELOW .. fp + 16`, read with one helper call.
#[repr(C)]
pub struct FrameBlock {
    words: [u64; BLOCK_WORDS],
    /// 1 when `words` holds the frame at `fp`.
    valid: u32,
    padding: u32,
    fp: u64,
}

/// V8's per-CPU state, in the walk's per-CPU map value (no BPF stack): the frame block and
/// caches valid for one process (`pid`, `builtins`: a process that execs a new node has
/// another builtins address).
#[repr(C)]
pub struct V8State {
    block: FrameBlock,
    pid: u32,
    padding: u32,
    builtins: u64,
    /// Each frame-slot offset's word in [`FrameBlock::words`] ([`NOT_IN_BLOCK`]: read
    /// apart), for the process's layout. Computed once per process and loaded from here:
    /// an index the compiler derived from a range check would reach the verifier without
    /// bounds.
    block_index: [u8; OFFSET_SLOTS],
    /// The untagged map whose instance type was `BytecodeArray` (a read-only-space map: it
    /// never moves), 0: none yet.
    bytecode_array_map: u64,
    /// Untagged `JSFunction` addresses whose type was checked, and whose `shared` (beside
    /// it) was checked as a `SharedFunctionInfo` and announced. A frame's function hits when
    /// its address is cached and its `shared` field still holds the cached one: the pair
    /// is what was validated, wherever a GC moved things since.
    functions: [u64; FUNCTION_CACHE],
    shareds: [u64; FUNCTION_CACHE],
    /// The untagged `BytecodeArray` an interpreted frame of the entry's function held
    /// (its type checked), 0: none yet.
    arrays: [u64; FUNCTION_CACHE],
    /// The untagged optimized `Code` an optimized frame of the entry's function ran in (its
    /// type checked, announced), 0: none yet; its first instruction's address, and the
    /// instructions' size (at most `FRAME_OFFSET_MAX + 1`). A frame hits when its pc is in
    /// that range and its function's `code` still holds the cached one: a GC that moves
    /// the function, the `Code` or its instructions, or a deoptimization, is a miss.
    codes: [u64; FUNCTION_CACHE],
    code_starts: [u64; FUNCTION_CACHE],
    code_sizes: [u32; FUNCTION_CACHE],
}

/// What the walk learnt of the V8 frame at a frame pointer.
pub struct V8Frame {
    /// The encoded JavaScript frame, `None`: a native frame.
    pub word: Option<u64>,
    /// The frame's saved frame pointer and return address, when read with its slots.
    pub caller: Caller,
}

/// A frame's saved frame pointer (`bp`) and return address (`pc`), valid when `read` is
/// true. Plain fields, no `Option`: LLVM would leave a `None`'s payload undefined and spill
/// it, which the verifier rejects (`!read_ok`).
#[derive(Clone, Copy)]
pub struct Caller {
    pub read: bool,
    pub bp: u64,
    pub pc: u64,
}

/// No caller read.
pub const NO_CALLER: Caller = Caller {
    read: false,
    bp: 0,
    pc: 0,
};

#[inline(always)]
fn offset(walk: &InterpWalk, slot: usize) -> u64 {
    u64::from(walk.process.offsets[slot])
}

/// Whether native `pc` of the walk's process is V8 code: in the embedded builtins, or in
/// code with no unwind table (`untabled`: JIT code) of a V8 process.
#[inline(always)]
pub fn in_code(walk: &InterpWalk, pc: u64, untabled: bool) -> bool {
    walk.process.runtime == runtime::V8
        && (untabled || (walk.process.eval_begin <= pc && pc < walk.process.eval_end))
}

/// The untagged address of tagged heap object pointer `word`.
#[inline(always)]
fn heap_object(word: u64) -> Option<u64> {
    (word & HEAP_OBJECT_TAG_MASK == HEAP_OBJECT_TAG).then_some(word & !HEAP_OBJECT_TAG_MASK)
}

/// The instance type of the heap object whose untagged map is `map`.
#[inline(always)]
fn map_type(walk: &InterpWalk, map: u64) -> Option<u16> {
    read_user::<u16>(map + offset(walk, MAP_INSTANCE_TYPE))
}

/// The untagged map of the heap object at untagged `object`.
#[inline(always)]
fn map_of(walk: &InterpWalk, object: u64) -> Option<u64> {
    heap_object(read_user::<u64>(object + offset(walk, OBJECT_MAP))?)
}

/// The instance type of the heap object at untagged `object` (through its map).
#[inline(always)]
fn instance_type(walk: &InterpWalk, object: u64) -> Option<u16> {
    map_type(walk, map_of(walk, object)?)
}

/// Forgets the caches when the walk is of another process than the one they hold.
#[inline(always)]
fn claim_cache(walk: &mut InterpWalk) {
    let v8 = &mut walk.v8;
    if v8.pid == walk.pid && v8.builtins == walk.process.eval_begin {
        return;
    }
    v8.pid = walk.pid;
    v8.builtins = walk.process.eval_begin;
    v8.bytecode_array_map = 0;
    // Word by word, volatile: LLVM would make these a call of `memset`, a BPF function
    // whose frame adds 32 bytes to the unwinder's call chain (Debian 6.1 allows 512 in
    // all, which the chain reaches). An entry's `arrays` and `codes` are reset when a
    // function takes it ([`read_frame`]): `functions` alone is forgotten here.
    for at in 0..FUNCTION_CACHE {
        // SAFETY: a field of this CPU's map value.
        unsafe { core::ptr::write_volatile(&mut v8.functions[at], 0) };
    }
    for slot in 0..OFFSET_SLOTS {
        // SAFETY: as above.
        unsafe { core::ptr::write_volatile(&mut v8.block_index[slot], NOT_IN_BLOCK) };
    }
    for slot in [
        FP_CONTEXT,
        FP_FUNCTION,
        FP_BYTECODE_OFFSET,
        FP_BYTECODE_ARRAY,
    ] {
        let below = walk.process.offsets[slot] as usize;
        if below.is_multiple_of(8) && (8..=BLOCK_BELOW * 8).contains(&below) {
            v8.block_index[slot] = (BLOCK_BELOW - below / 8) as u8;
        }
    }
}

/// Reads the block of the frame at `fp` into the per-CPU state; its saved frame pointer and
/// return address, not `read` when the block could not be read (the slots are then read one
/// by one).
#[inline(always)]
fn read_block(walk: &mut InterpWalk, fp: u64) -> Caller {
    let block = &mut walk.v8.block;
    block.valid = 0;
    let from = fp - (BLOCK_BELOW as u64) * 8;
    // SAFETY: the destination is this CPU's map value, BLOCK_WORDS words long; the helper
    // faults safely on a bad user address.
    let read = unsafe {
        bpf_probe_read_user(
            block.words.as_mut_ptr().cast(),
            (BLOCK_WORDS * 8) as u32,
            from as *const _,
        )
    };
    if read != 0 {
        return NO_CALLER;
    }
    block.valid = 1;
    block.fp = fp;
    Caller {
        read: true,
        bp: block.words[BLOCK_BELOW],
        pc: block.words[BLOCK_BELOW + 1],
    }
}

/// The word at `offsets[slot]` bytes below frame pointer `fp`: from the block when it holds
/// it, else read.
#[inline(always)]
fn slot(walk: &InterpWalk, fp: u64, slot: usize) -> Option<u64> {
    let index = walk.v8.block_index[slot];
    let block = &walk.v8.block;
    if index != NOT_IN_BLOCK && block.valid != 0 && block.fp == fp {
        return Some(block.words[index as usize & (BLOCK_WORDS - 1)]);
    }
    read_user::<u64>(fp - offset(walk, slot))
}

/// The V8 frame whose frame pointer is `fp` and pc `pc` (a return address less one): its encoded JavaScript frame, or none (a V8
/// frame of another kind: entry, exit, stub; or memory that is not a V8 frame), and its
/// caller's frame pointer and return address when they were read with it.
#[inline(always)]
pub fn frame<M: UnwindMaps>(walk: &mut InterpWalk, fp: u64, pc: u64) -> V8Frame {
    bump::<M>(InterpStat::EvalFrames);
    if fp < 64 {
        return V8Frame {
            word: None,
            caller: NO_CALLER,
        };
    }
    claim_cache(walk);
    let caller = read_block(walk, fp);
    let Some(context) = slot(walk, fp, FP_CONTEXT) else {
        bump::<M>(InterpStat::ReadErrors);
        return V8Frame { word: None, caller };
    };
    // A frame-type marker (tag bit 0) is not a JavaScript frame.
    if heap_object(context).is_none() {
        return V8Frame { word: None, caller };
    }
    if let Some(word) = cached_compiled(walk, fp, pc) {
        bump::<M>(InterpStat::Frames);
        bump::<M>(InterpStat::V8Optimized);
        return V8Frame {
            word: Some(word),
            caller,
        };
    }
    let word = match read_frame::<M>(walk, fp) {
        Some((function, shared, bytecode_offset)) => {
            // Recorded as its function, unless its optimized code is found.
            let function_word = record::<M>(
                InterpStat::Frames,
                runtime::V8,
                shared,
                bytecode_offset.unwrap_or(0),
            );
            let compiled = match bytecode_offset {
                // An unoptimized frame's slots, but maybe not its code: V8 enters
                // on-stack-replaced code from such a frame and keeps its slots.
                Some(_) => {
                    let replaced = !in_builtins(walk, pc) && !in_function_code(walk, function, pc);
                    let word = if replaced {
                        replaced_frame::<M>(walk, shared, pc)
                    } else {
                        None
                    };
                    if word.is_some() {
                        bump::<M>(InterpStat::V8Replaced);
                    }
                    word
                }
                // A JavaScript builtin's frame (`Set.prototype.forEach` calling back into
                // the script): its code is V8's builtin, which has no source positions.
                None if in_builtins(walk, pc) => None,
                None => {
                    let compiled = compiled_frame::<M>(walk, function, shared, pc);
                    bump::<M>(match compiled {
                        Some(word) if word >> FRAME_RUNTIME_SHIFT == V8_REPLACED_BITS => {
                            InterpStat::V8Replaced
                        }
                        Some(_) => InterpStat::V8Optimized,
                        None => InterpStat::V8OptimizedNoCode,
                    });
                    compiled
                }
            };
            compiled.or(Some(function_word))
        }
        None => {
            bump::<M>(InterpStat::ReadErrors);
            None
        }
    };
    V8Frame { word, caller }
}

/// The `JSFunction` and `SharedFunctionInfo` (untagged) of the JavaScript frame at `fp`,
/// and its bytecode offset ([`bytecode_offset`]), its function announced.
#[inline(always)]
fn read_frame<M: UnwindMaps>(walk: &mut InterpWalk, fp: u64) -> Option<(u64, u64, Option<u64>)> {
    let function = heap_object(slot(walk, fp, FP_FUNCTION)?)?;
    let shared = heap_object(read_user::<u64>(function + offset(walk, FUNCTION_SHARED))?)?;
    let at = function_cache_index(function);
    let mut cached = walk.v8.functions[at] == function && walk.v8.shareds[at] == shared;
    if !cached {
        if !valid_function(walk, function, shared) {
            return None;
        }
        if announce_code::<M>(walk, shared) {
            walk.v8.functions[at] = function;
            walk.v8.shareds[at] = shared;
            walk.v8.arrays[at] = 0;
            walk.v8.codes[at] = 0;
            cached = true;
        }
    }
    Some((function, shared, bytecode_offset(walk, fp, at, cached)))
}

/// The encoded frame of the optimized frame at `fp` running at `pc`, when the function
/// cache holds its function with the `Code` whose instructions hold `pc`, and the
/// function's `code` is still that `Code` (the one read); `None`: look at the frame anew.
#[inline(always)]
fn cached_compiled(walk: &InterpWalk, fp: u64, pc: u64) -> Option<u64> {
    let function = heap_object(slot(walk, fp, FP_FUNCTION)?)?;
    let at = function_cache_index(function);
    let v8 = &walk.v8;
    let code = v8.codes[at];
    if code == 0 || v8.functions[at] != function {
        return None;
    }
    let start = v8.code_starts[at];
    if pc < start || pc - start >= u64::from(v8.code_sizes[at]) {
        return None;
    }
    if function_code(walk, function)? != code {
        return None;
    }
    Some(encode_frame(runtime::V8, code, pc - start))
}

/// The function cache's slot of untagged function address `function` (Fibonacci hashing:
/// the top bits of the address times 2^64 / phi).
#[inline(always)]
fn function_cache_index(function: u64) -> usize {
    ((function >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - FUNCTION_CACHE_BITS)) as usize
        & (FUNCTION_CACHE - 1)
}

/// Whether `function` is a `JSFunction` and `shared` a `SharedFunctionInfo`, by their
/// instance types.
#[inline(always)]
fn valid_function(walk: &InterpWalk, function: u64, shared: u64) -> bool {
    let Some(kind) = instance_type(walk, function) else {
        return false;
    };
    if kind < walk.process.offsets[TYPE_FUNCTION_FIRST]
        || kind > walk.process.offsets[TYPE_FUNCTION_LAST]
    {
        return false;
    }
    instance_type(walk, shared) == Some(walk.process.offsets[TYPE_SHARED_FUNCTION_INFO])
}

/// An interpreted frame's bytecode offset (a Smi beside its `BytecodeArray`, counted from
/// the array's tagged pointer); 0 in an unoptimized frame whose offset slot holds no Smi
/// (Sparkplug's baseline frames); `None` in a frame that holds no `BytecodeArray`
/// (optimized code), or that cannot be read. `entry`: the function's cache entry, when
/// `cached` (it holds the frame's function), whose `BytecodeArray` needs no check again.
/// (Two plain arguments, not an `Option`: see [`Caller`].)
#[inline(always)]
fn bytecode_offset(walk: &mut InterpWalk, fp: u64, entry: usize, cached: bool) -> Option<u64> {
    let smi = slot(walk, fp, FP_BYTECODE_OFFSET)?;
    let array = heap_object(slot(walk, fp, FP_BYTECODE_ARRAY)?)?;
    let entry = entry & (FUNCTION_CACHE - 1);
    if !(cached && walk.v8.arrays[entry] == array) {
        let map = map_of(walk, array)?;
        if map != walk.v8.bytecode_array_map {
            if map_type(walk, map) != Some(walk.process.offsets[TYPE_BYTECODE_ARRAY]) {
                return None;
            }
            walk.v8.bytecode_array_map = map;
        }
        if cached {
            walk.v8.arrays[entry] = array;
        }
    }
    if smi & 1 != 0 {
        return Some(0);
    }
    Some(smi >> SMI_SHIFT)
}

/// The encoded frame of optimized code running function `function` (untagged, its
/// `SharedFunctionInfo` `shared`) at `pc`: the function's `Code` object (its instance type
/// checked) and the pc's offset from the code's first instruction, announced; a
/// [`replaced_frame`] when `pc` is not in those instructions. `None` (the frame is recorded
/// as its function) when the version's code is not read, the function's code is not a
/// `Code`, or the pc is past the frame's 16-bit offset. The code is announced with its generation
/// ([`code_generation`]: a `Code` address reused by other code is announced again), and
/// kept in the function's cache entry ([`cached_compiled`]) when the function has one.
#[inline(always)]
fn compiled_frame<M: UnwindMaps>(
    walk: &mut InterpWalk,
    function: u64,
    shared: u64,
    pc: u64,
) -> Option<u64> {
    let code = function_code(walk, function)?;
    if instance_type(walk, code)? != walk.process.offsets[TYPE_CODE] {
        return None;
    }
    let (start, size) = code_instructions(walk, code)?;
    if pc < start || pc - start >= u64::from(size) {
        return replaced_frame::<M>(walk, shared, pc);
    }
    if pc - start > u64::from(FRAME_OFFSET_MAX) {
        return None;
    }
    if announce_generation::<M>(walk, code, code_generation(start, size)) {
        let at = function_cache_index(function);
        if walk.v8.functions[at] == function {
            walk.v8.codes[at] = code;
            walk.v8.code_starts[at] = start;
            walk.v8.code_sizes[at] = size.min(FRAME_OFFSET_MAX + 1);
        }
    }
    Some(encode_frame(runtime::V8, code, pc - start))
}

/// The encoded frame of an optimized frame of `shared` whose pc is outside its function's
/// current `Code`: code the function no longer points to (on-stack-replaced code, which
/// V8 enters from a hot loop of an unoptimized frame, or code replaced while the frame ran)
/// holds it. Recorded as [`runtime::V8_REPLACED`], the function and the pc's low 16 bits,
/// the pc announced: userspace finds the code object around it, and names the frame with
/// its line and inlined functions (the code's and `shared` must agree), else as
/// `shared`. `None` for a pc in the embedded builtins: the top frame's callee (a builtin
/// that pushed no frame) runs there.
#[inline(always)]
fn replaced_frame<M: UnwindMaps>(walk: &InterpWalk, shared: u64, pc: u64) -> Option<u64> {
    if in_builtins(walk, pc) {
        return None;
    }
    announce_as::<M>(walk, runtime::V8_REPLACED, pc, 0);
    Some(encode_frame(
        runtime::V8_REPLACED,
        shared,
        pc & u64::from(FRAME_OFFSET_MAX),
    ))
}

/// [`runtime::V8_REPLACED`] as the top bits of an encoded frame.
const V8_REPLACED_BITS: u64 = runtime::V8_REPLACED as u64;

/// Whether `pc` is in V8's embedded builtins (the interpreter's handlers among them).
#[inline(always)]
fn in_builtins(walk: &InterpWalk, pc: u64) -> bool {
    walk.process.eval_begin <= pc && pc < walk.process.eval_end
}

/// Whether `pc` is in the instructions of function `function`'s (untagged) current code
/// (an unoptimized frame's baseline code); true when that cannot be told (the version's
/// code is not read, or not readable): the frame is then recorded as it looks.
#[inline(always)]
fn in_function_code(walk: &InterpWalk, function: u64, pc: u64) -> bool {
    if walk.process.offsets[FUNCTION_CODE] == NO_OFFSET {
        return true;
    }
    let Some(code) = function_code(walk, function) else {
        return true;
    };
    let Some((start, size)) = code_instructions(walk, code) else {
        return true;
    };
    start <= pc && pc - start < u64::from(size)
}

/// The first address and the size of `Code` object `code`'s (untagged) instructions: where
/// its instruction start field points, or (V8 10: [`CODE_INSTRUCTIONS_INLINE`]) inside it.
#[inline(always)]
fn code_instructions(walk: &InterpWalk, code: u64) -> Option<(u64, u32)> {
    let fields = walk.process.offsets[CODE_INSTRUCTIONS];
    let start = if fields & CODE_INSTRUCTIONS_INLINE != 0 {
        code + u64::from(fields & 0xFF)
    } else {
        read_user::<u64>(code + u64::from(fields & 0xFF))?
    };
    let size = read_user::<u32>(code + u64::from((fields >> 8) & 0x7F))?;
    Some((start, size))
}

/// The untagged `Code` function `function` (untagged) runs: the tagged pointer its code
/// field holds (V8 11.3), or (V8 13.6, `DISPATCH_TABLE` set) the `Code` of the
/// `JSDispatchTable` entry of the dispatch handle it holds, the table's entries found in
/// the process's `IsolateGroup` (`*state_address`). `None`: the version's code is not
/// read, or not readable. Unchecked: the caller checks its instance type.
#[inline(always)]
fn function_code(walk: &InterpWalk, function: u64) -> Option<u64> {
    let slot = walk.process.offsets[FUNCTION_CODE];
    if slot == NO_OFFSET {
        return None;
    }
    let field = function + u64::from(slot);
    let table = walk.process.offsets[DISPATCH_TABLE];
    if table == NO_OFFSET {
        return heap_object(read_user::<u64>(field)?);
    }
    let group = read_user::<u64>(walk.process.state_address)?;
    let entries = read_user::<u64>(group + u64::from(table))?;
    let handle = read_user::<u32>(field)?;
    let entry = entries + u64::from(handle >> DISPATCH_HANDLE_SHIFT) * DISPATCH_ENTRY_SIZE;
    let word = read_user::<u64>(entry + DISPATCH_ENTRY_CODE)?;
    Some((word >> DISPATCH_CODE_SHIFT) & !HEAP_OBJECT_TAG_MASK)
}
