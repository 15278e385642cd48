//! Where the engine's values come from: the probe's arguments (loaded into the scratch by
//! each entry point), tracepoint record fields, registers and user memory.

use core::ffi::c_void;

use aya_ebpf::{
    EbpfContext,
    helpers::{bpf_probe_read_kernel, bpf_probe_read_user},
    programs::TracePointContext,
};
use tracekit_common::engine::SIGNED;

use super::Scratch;

/// Index of the return value in `Scratch::args`.
pub const RET: usize = 7;

/// Where operands come from. Arguments are loaded into the scratch by each entry point;
/// only tracepoints have a record with fields.
pub trait ArgSource {
    /// Reads a `T` at `offset` in the record.
    fn field<T>(&self, offset: u32) -> Option<T>;
    /// The record's address (for `__data_loc` strings).
    fn record(&self) -> *const u8;
    /// The program's context.
    fn ctx(&self) -> *mut c_void;
}

impl ArgSource for TracePointContext {
    #[inline(always)]
    fn field<T>(&self, offset: u32) -> Option<T> {
        // SAFETY: bpf_probe_read_kernel checks the access.
        unsafe { self.read_at::<T>(offset as usize) }.ok()
    }
    #[inline(always)]
    fn record(&self) -> *const u8 {
        self.as_ptr() as *const u8
    }
    #[inline(always)]
    fn ctx(&self) -> *mut c_void {
        self.as_ptr()
    }
}

/// Any other context: no record, only the context pointer.
pub struct NoRecord(pub *mut c_void);

impl ArgSource for NoRecord {
    #[inline(always)]
    fn field<T>(&self, _offset: u32) -> Option<T> {
        None
    }
    #[inline(always)]
    fn record(&self) -> *const u8 {
        core::ptr::null()
    }
    #[inline(always)]
    fn ctx(&self) -> *mut c_void {
        self.0
    }
}

impl EbpfContext for NoRecord {
    fn as_ptr(&self) -> *mut c_void {
        self.0
    }
}

/// Stores the first `n` arguments into the scratch, `arg(i)` reading each at a literal
/// index (the verifier refuses context loads through a computed pointer).
#[macro_export]
macro_rules! load_args {
    ($scratch:expr, $n:expr, $arg:expr) => {{
        // SAFETY: this CPU's scratch.
        let args = unsafe { &mut (*$scratch).args };
        let n = $n;
        if n > 0 {
            args[0] = $arg(0);
        }
        if n > 1 {
            args[1] = $arg(1);
        }
        if n > 2 {
            args[2] = $arg(2);
        }
        if n > 3 {
            args[3] = $arg(3);
        }
        if n > 4 {
            args[4] = $arg(4);
        }
        if n > 5 {
            args[5] = $arg(5);
        }
    }};
}

/// Argument `n` loaded by the entry point.
#[inline(always)]
pub(crate) fn arg(scratch: *mut Scratch, n: u32) -> u64 {
    // SAFETY: this CPU's scratch; index clamped.
    unsafe { (*scratch).args[(n as usize).min(RET)] }
}

/// Narrows a raw 64-bit value to `size` bytes, sign-extending when `flags` says signed.
#[inline(always)]
pub(crate) fn narrow(raw: u64, size: u32, flags: u32) -> u64 {
    let signed = flags & SIGNED != 0;
    match size {
        1 if signed => raw as i8 as i64 as u64,
        1 => raw as u8 as u64,
        2 if signed => raw as i16 as i64 as u64,
        2 => raw as u16 as u64,
        4 if signed => raw as i32 as i64 as u64,
        4 => raw as u32 as u64,
        _ => raw,
    }
}

/// The 8 bytes at byte `offset` of the probe's `struct pt_regs` (the program's context in
/// uprobes and kprobes). The plan's offsets stay inside the struct (the loader takes them
/// from a fixed table), and the helper checks the access anyway.
#[inline(always)]
pub(crate) fn pt_regs_word(ctx: *mut c_void, offset: u32) -> Option<u64> {
    let offset = (offset as usize).min(PT_REGS_BYTES - 8);
    // SAFETY: bpf_probe_read_kernel checks the access.
    unsafe { bpf_probe_read_kernel((ctx as *const u8).add(offset) as *const u64) }.ok()
}

/// `struct pt_regs` of x86_64: 21 registers of 8 bytes.
#[cfg(bpf_target_arch = "x86_64")]
const PT_REGS_BYTES: usize = 21 * 8;
/// `struct user_pt_regs` of arm64 (what a kprobe's or uprobe's context starts with):
/// x0-x30, sp, pc, pstate.
#[cfg(bpf_target_arch = "aarch64")]
const PT_REGS_BYTES: usize = 34 * 8;

/// `ip`'s offset in x86_64's `struct pt_regs` (after 15 registers and `orig_ax`).
#[cfg(bpf_target_arch = "x86_64")]
pub(crate) const PT_REGS_IP: u32 = 16 * 8;
/// `pc`'s offset in arm64's `struct user_pt_regs` (after x0-x30 and sp).
#[cfg(bpf_target_arch = "aarch64")]
pub(crate) const PT_REGS_IP: u32 = 32 * 8;

/// What a kprobe's saved instruction pointer is past the probed address: x86_64's `int3`
/// has run (1 byte); arm64's `brk` leaves the pc at the probed instruction.
#[cfg(bpf_target_arch = "x86_64")]
pub(crate) const PROBE_IP_PAST: u64 = 1;
#[cfg(bpf_target_arch = "aarch64")]
pub(crate) const PROBE_IP_PAST: u64 = 0;

/// `size` bytes of user memory at `addr`, zero-extended (exactly `size` bytes are read, so
/// a value at the end of a page reads).
#[inline(always)]
pub(crate) fn read_user(addr: u64, size: u32) -> Option<u64> {
    // SAFETY: bpf_probe_read_user checks the access.
    unsafe {
        match size {
            1 => bpf_probe_read_user(addr as *const u8).ok().map(u64::from),
            2 => bpf_probe_read_user(addr as *const u16).ok().map(u64::from),
            4 => bpf_probe_read_user(addr as *const u32).ok().map(u64::from),
            _ => bpf_probe_read_user(addr as *const u64).ok(),
        }
    }
}

/// Reads an integer field of `size` bytes.
#[inline(always)]
pub(crate) fn read_int<S: ArgSource>(
    source: &S,
    offset: u32,
    size: u32,
    flags: u32,
) -> Option<u64> {
    let raw = match size {
        1 => u64::from(source.field::<u8>(offset)?),
        2 => u64::from(source.field::<u16>(offset)?),
        4 => u64::from(source.field::<u32>(offset)?),
        _ => source.field::<u64>(offset)?,
    };
    Some(narrow(raw, size, flags))
}
