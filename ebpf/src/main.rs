//! tracekit's kernel programs. Each program is a thin entry point whose logic lives in a
//! `try_*` function returning `Result`; load-time settings are [`aya_ebpf::Global`]s that the
//! loader overrides, so the verifier prunes what a setting turns off.
#![no_std]
#![no_main]
// bpfel has no AtomicU64::fetch_add; the intrinsic lowers to BPF's atomic add.
#![feature(core_intrinsics)]
#![allow(internal_features)]

mod profile;

/// Atomically adds `value` to the map value at `ptr` (a value shared by all CPUs).
#[inline(always)]
fn atomic_add(ptr: *mut u64, value: u64) {
    // SAFETY: `ptr` comes from a successful map lookup and stays valid while the program runs.
    unsafe {
        core::intrinsics::atomic_xadd::<u64, u64, { core::intrinsics::AtomicOrdering::Relaxed }>(
            ptr, value,
        )
    };
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 4] = *b"GPL\0";
