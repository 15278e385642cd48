//! Helpers shared by tracekit's kernel programs. Each program set is its own BPF object
//! (`src/bin/*.rs`): aya creates every map of an object when it loads it, so one object per
//! tool keeps a tool from paying for another's maps.
//!
//! Programs are thin entry points whose logic lives in `try_*` functions; load-time settings
//! are read-only globals the loader overrides, so the verifier prunes what a setting turns off.
#![no_std]
// bpfel has no AtomicU64::fetch_add; the intrinsic lowers to BPF's atomic add.
#![feature(core_intrinsics)]
#![allow(internal_features)]

use aya_ebpf::maps::HashMap;

/// Atomically adds `value` to the map value at `ptr` (a value shared by all CPUs).
#[inline(always)]
pub fn atomic_add(ptr: *mut u64, value: u64) {
    // SAFETY: `ptr` comes from a successful map lookup and stays valid while the program runs.
    unsafe {
        core::intrinsics::atomic_xadd::<u64, u64, { core::intrinsics::AtomicOrdering::Relaxed }>(
            ptr, value,
        )
    };
}

/// The current process id (tgid) and thread id.
#[inline(always)]
pub fn current_pid_tid() -> (u32, u32) {
    let id = aya_ebpf::helpers::bpf_get_current_pid_tgid();
    ((id >> 32) as u32, id as u32)
}

/// Whether process `pid` is traced: never the loader itself (`self_pid`); when `filter` is
/// set, only the pids in `targets` (`-p`, `-- CMD` and its children).
#[inline(always)]
pub fn selected(pid: u32, self_pid: u32, filter: u8, targets: &HashMap<u32, u8>) -> bool {
    if pid == self_pid {
        return false;
    }
    // SAFETY: the value is only tested for presence.
    filter == 0 || unsafe { targets.get(pid) }.is_some()
}

/// `sched:sched_process_fork` logic for `-- CMD`: a child of a selected process is selected.
/// `child_pid_offset` is `child_pid`'s offset, from the event's format file.
#[inline(always)]
pub fn follow_fork(
    ctx: &aya_ebpf::programs::TracePointContext,
    child_pid_offset: u32,
    targets: &HashMap<u32, u8>,
) {
    let (parent, _) = current_pid_tid();
    // SAFETY: the value is only tested for presence.
    if unsafe { targets.get(parent) }.is_none() {
        return;
    }
    // SAFETY: the offset comes from the event's format file; read_at checks the access.
    if let Ok(child) = unsafe { ctx.read_at::<i32>(child_pid_offset as usize) } {
        let _ = targets.insert(child as u32, 1, 0);
    }
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}
