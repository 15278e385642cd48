//! Trace records ([`TraceRecord`]) and their whole strings: the operand flags that read a
//! string whole into the record's tail, the tail's bounds, and the flags each record carries
//! per string slot ([`TraceRecord::str_flags`]).

use crate::engine::{MAX_OPERANDS, MAX_STRINGS, STR_BYTES};

/// [`Operand::flags`](crate::engine::Operand::flags) bit of the string operands that read through a pointer
/// ([`operand::USER_STR`](crate::engine::operand::USER_STR), [`operand::KERNEL_STR`](crate::engine::operand::KERNEL_STR), [`operand::PATH_STR`](crate::engine::operand::PATH_STR),
/// [`operand::SAVED_USER_STR`](crate::engine::operand::SAVED_USER_STR)) or from the record
/// ([`operand::FIELD_DATA_LOC`](crate::engine::operand::FIELD_DATA_LOC)) in trace plans: the string, at most `size` bytes with its
/// NUL (at most [`STR_MAX`]), goes to the record's tail ([`TraceRecord::str_spans`]); its
/// first [`STR_BYTES`] also to the string slot, which filters compare.
pub const LONG_STR: u32 = 32;
/// [`Operand::flags`](crate::engine::Operand::flags) bit of a [`LONG_STR`] [`PTR_ARRAY`](crate::engine::PTR_ARRAY) operand: every string of the
/// array up to its NULL end, at most `aux` of them (at most [`MAX_ARGS`]), each at most
/// `size` bytes with its NUL, one after the other with their NULs in the tail (execsnoop's
/// `argv`); [`STR_MORE`] when the array had more.
pub const ALL_STRINGS: u32 = 64;
/// [`Operand::flags`](crate::engine::Operand::flags) bit of a [`LONG_STR`] operand: the filter compares the string, so its
/// first [`STR_BYTES`] are copied to the string slot too (else the slot stays empty).
pub const LONG_HEAD: u32 = 128;
/// Most bytes a [`LONG_STR`] string takes with its NUL: `PATH_MAX`.
pub const STR_MAX: usize = 4096;
/// Bytes of a trace record's tail that strings may start in (a string that starts there
/// may run [`STR_MAX`] past it).
pub const TAIL_BYTES: usize = 16384;
/// Most strings an [`ALL_STRINGS`] operand reads (`--max-args`).
pub const MAX_ARGS: u32 = 128;
/// [`TraceRecord::str_flags`] bits, 8 a slot (slot `i` at bit `8 * i`): the string is in the
/// tail, at its [`TraceRecord::str_spans`] entry.
pub const STR_IN_TAIL: u32 = 1;
/// The string filled its `size` and may go on (it is shown cut).
pub const STR_CUT: u32 = 2;
/// The string could not be read (a NULL pointer, a page not faulted in).
pub const STR_UNREADABLE: u32 = 4;
/// [`ALL_STRINGS`]: the array had more strings than were read.
pub const STR_MORE: u32 = 8;

/// A trace record as a plan with [`LONG_STR`] strings builds it in its per-CPU scratch: the
/// header, then the strings; `bpf_ringbuf_output` sends the header and the tail's used
/// bytes only.
#[repr(C)]
pub struct TraceOut {
    pub head: TraceRecord,
    pub tail: [u8; TAIL_BYTES + STR_MAX],
}

/// One event sent to userspace by a [`agg::TRACE`](crate::engine::agg::TRACE) plan.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TraceRecord {
    /// `bpf_ktime_get_ns()`: CLOCK_MONOTONIC, in ns.
    pub ts_ns: u64,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// CPU.
    pub cpu: u32,
    /// Which attachment fired (see [`operand::EVENT_INDEX`](crate::engine::operand::EVENT_INDEX)).
    pub event: u32,
    /// The thread's `comm`.
    pub comm: [u8; 16],
    /// Integer operand values, by operand index.
    pub ints: [u64; MAX_OPERANDS],
    /// String operand values, by string slot ([`LONG_STR`] strings: their first bytes).
    pub strings: [[u8; STR_BYTES]; MAX_STRINGS],
    /// By string slot: where a [`STR_IN_TAIL`] string is in the record's tail, the bytes
    /// after this header: its offset, and its length (without its NUL) `<< 16`.
    pub str_spans: [u32; MAX_STRINGS],
    /// By string slot, 8 bits each: [`STR_IN_TAIL`], [`STR_CUT`], [`STR_UNREADABLE`],
    /// [`STR_MORE`].
    pub str_flags: u32,
    /// The `size` of the record's [`ALL_STRINGS`] string, if any: a string of it that is
    /// `str_cap - 1` bytes long filled it and was cut (its last byte is not shown).
    pub str_cap: u32,
}
