//! The embedded kernel programs, and what every loader does before loading them.

use crate::{Error, Result};

/// The BPF object built from `ebpf/` (empty when the build had no BPF toolchain).
static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/tracekit"));

/// The embedded BPF object, or an error saying how to build a binary that has it.
pub fn object() -> Result<&'static [u8]> {
    if OBJECT.is_empty() {
        return Err(Error::runtime(
            "this tracekit binary was built without its kernel programs (no bpf-linker or \
             nightly rust-src at build time); build it with `cargo xtask build`",
        ));
    }
    Ok(OBJECT)
}

/// Lifts `RLIMIT_MEMLOCK`, which kernels before 5.11 charge BPF maps against. Newer kernels
/// account BPF memory to the memory cgroup instead, so a failure (no `CAP_SYS_RESOURCE`) is
/// logged and ignored.
pub fn raise_memlock_limit() {
    let unlimited = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: setrlimit(2) with a live struct.
    if unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &unlimited) } != 0 {
        log::debug!(
            "setrlimit(RLIMIT_MEMLOCK): {} (harmless on kernels that account BPF memory to memcg)",
            std::io::Error::last_os_error()
        );
    }
}

/// `kernel.perf_event_max_sample_rate`: the highest `-F` the kernel accepts, in Hz.
pub fn max_sample_rate_hz() -> u64 {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(100_000)
}

/// Checks `-F HZ` against 1 ..= `kernel.perf_event_max_sample_rate`.
pub fn check_frequency(hz: u64) -> Result<u64> {
    let max = max_sample_rate_hz();
    if hz == 0 || hz > max {
        return Err(Error::usage(format!(
            "-F {hz}: the sampling frequency must be between 1 and {max} Hz \
             (kernel.perf_event_max_sample_rate)"
        )));
    }
    Ok(hz)
}
