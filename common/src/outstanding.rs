//! The outstanding-allocation stage's shared types (`agg::OUTSTANDING`, `memleak`): the
//! per-event size rules of a plan, and what `ENGINE_OUTSTANDING` holds per address.
//! Re-exported from [`crate::engine`].

/// [`Plan::release`](crate::engine::Plan::release)'s `aux` bit: a release deletes only an allocation of the releasing
/// process (user addresses are per process; kernel ones are not, and are freed from any
/// task).
pub const RELEASE_SAME_PROCESS: u32 = 1;

/// Events an [`agg::OUTSTANDING`](crate::engine::agg::OUTSTANDING) plan gives an allocation size rule ([`Plan::alloc_size`](crate::engine::Plan::alloc_size)).
pub const MAX_ALLOC_EVENTS: usize = 8;

/// Size rules of [`Plan::alloc_size`](crate::engine::Plan::alloc_size), one `u32` per allocation event: `SIZE_VALUE`, or
/// `SIZE_SAVED | a << 8 | b << 16 [| ADDR_AT_SAVED_0]` (the product of saved start values
/// `a` and `b`, slot [`size_rule::ONE`] reading as 1).
pub mod size_rule {
    /// The size is the plan's value operand (kernel tracepoints: `bytes_alloc`).
    pub const SIZE_VALUE: u32 = 0;
    /// The size is `saved[a] * saved[b]` of the start (the entry's arguments).
    pub const SIZE_SAVED: u32 = 1;
    /// The size is the 8-byte record field at offset `rule >> 8` (tracepoints whose size
    /// fields differ in place: `kmem:kmalloc`'s and `kmem:kmem_cache_alloc`'s `bytes_alloc`).
    pub const SIZE_FIELD: u32 = 2;
    /// `SIZE_FIELD` at `offset`.
    pub const fn field(offset: u32) -> u32 {
        SIZE_FIELD | (offset << 8)
    }
    /// A saved slot that reads as 1 (`malloc(size)`: `saved[0] * 1`).
    pub const ONE: u32 = 0xff;
    /// The address is not the return value but the pointer the function stored at saved
    /// start value 0, and only when it returned 0 (`posix_memalign(&ptr, align, size)`).
    pub const ADDR_AT_SAVED_0: u32 = 1 << 24;
    /// `saved[a] * saved[b]`.
    pub const fn saved(a: u32, b: u32) -> u32 {
        SIZE_SAVED | (a << 8) | (b << 16)
    }
}

/// Default entries of `ENGINE_OUTSTANDING`: allocations outstanding at once (about a
/// million; 40 bytes each and the hash map's own).
pub const DEFAULT_OUTSTANDING_ENTRIES: u32 = 1 << 20;

/// One outstanding allocation in `ENGINE_OUTSTANDING`, by address ([`agg::OUTSTANDING`](crate::engine::agg::OUTSTANDING)).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outstanding {
    /// Bytes asked for.
    pub size: u64,
    /// The stack's content hash in `ENGINE_STACKS` (key part 1); 0 when it was not recorded.
    pub stack: u64,
    /// `bpf_ktime_get_ns()` at the allocation (CLOCK_MONOTONIC, ns).
    pub ts_ns: u64,
    /// The allocating process.
    pub pid: u32,
    /// Padding, 0.
    pub _pad: u32,
}

crate::impl_pod!(Outstanding);
