//! `ksyms`: kernel addresses to function names by the kernel's own kallsyms lookup.
//!
//! Reading `/proc/kallsyms` makes the kernel format every symbol it has (120k+ on a distro
//! kernel, ~60 ms of CPU) to name the few hundred addresses a profile holds. This program
//! names just those: `bpf_snprintf`'s `%ps` calls `sprint_symbol_no_offset()`
//! (kernel/kallsyms.c), a binary search in the kernel's symbol table, which also knows BPF
//! programs and trampolines as they are now. Userspace runs it with `BPF_PROG_TEST_RUN`;
//! it is never attached. Shared layouts: `tracekit_common::ksyms`.
#![no_std]
#![no_main]

use aya_ebpf::{
    cty::c_char,
    helpers::generated::bpf_snprintf,
    macros::{map, raw_tracepoint},
    maps::Array,
    programs::RawTracePointContext,
};
use tracekit_common::ksyms::{BATCH, KsymAddrs, KsymNames, NAME_BYTES};
// The panic handler.
use tracekit_ebpf as _;

#[map]
static KSYMS_ADDRS: Array<KsymAddrs> = Array::with_max_entries(1, 0);
#[map]
static KSYMS_NAMES: Array<KsymNames> = Array::with_max_entries(1, 0);

/// In `.rodata`, which the loader freezes: `bpf_snprintf` takes its format only from a
/// read-only map.
static FORMAT: [u8; 4] = *b"%ps\0";

#[raw_tracepoint]
pub fn ksyms_lookup(_ctx: RawTracePointContext) -> i32 {
    let (Some(addrs), Some(names)) = (KSYMS_ADDRS.get_ptr(0), KSYMS_NAMES.get_ptr_mut(0)) else {
        return 1;
    };
    // SAFETY: the map's only value.
    let len = unsafe { (*addrs).len } as usize;
    for i in 0..BATCH {
        if i >= len {
            break;
        }
        // SAFETY: i < BATCH indexes both arrays; the helper writes at most NAME_BYTES.
        unsafe {
            let addr = (*addrs).addrs.as_ptr().add(i);
            let name = (*names).names.as_mut_ptr().add(i) as *mut c_char;
            bpf_snprintf(
                name,
                NAME_BYTES as u32,
                FORMAT.as_ptr() as *const c_char,
                addr as *mut u64,
                8,
            );
        }
    }
    0
}

/// `bpf_snprintf` is GPL-only.
#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 4] = *b"GPL\0";
