//! Types shared by tracekit's kernel programs (`tracekit-ebpf`) and its loader (`tracekit`).
//!
//! Every type here is `#[repr(C)]` with explicit padding so that both halves agree on its
//! layout byte for byte. One module per kernel program; the `user` feature implements
//! `aya::Pod` so the loader can read them out of maps.
#![no_std]

pub mod cpu_sampler;
pub mod engine;
pub mod interp;
pub mod ksyms;
pub mod outstanding;
pub mod unwind;

/// Length of a task's `comm` (`TASK_COMM_LEN` in `include/linux/sched.h`), NUL-padded.
pub const TASK_COMM_LEN: usize = 16;

/// Implements `aya::Pod` for shared types when the `user` feature is on.
#[macro_export]
#[doc(hidden)]
macro_rules! impl_pod {
    ($($t:ty),* $(,)?) => {
        $(
            #[cfg(feature = "user")]
            // SAFETY: the type is #[repr(C)], Copy, and has no implicit padding.
            unsafe impl aya::Pod for $t {}
        )*
    };
}
