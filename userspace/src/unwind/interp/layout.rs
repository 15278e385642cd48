//! The kernel's and libc's layouts the interpreter unwinders need: where `task_struct`
//! keeps the user thread pointer (from the kernel's BTF) and where glibc keeps
//! thread-specific data from it (measured on this process's own thread), found once per
//! run.

use std::sync::OnceLock;

use tracekit_common::interp::InterpConfig;

use crate::bpf::btf::struct_member_path_offset;

static LAYOUTS: OnceLock<Result<InterpConfig, String>> = OnceLock::new();

/// The kernel's and libc's layouts the unwinders need, found once.
pub(super) fn layouts() -> &'static Result<InterpConfig, String> {
    LAYOUTS.get_or_init(|| {
        Ok(InterpConfig {
            task_thread_pointer_offset: task_thread_pointer_offset()?,
            // A tracekit linked with musl (the static build) cannot probe glibc's layout:
            // the interpreters it profiles use the machine's glibc.
            key_data_from_thread_pointer: key_data_from_thread_pointer().unwrap_or_else(|| {
                log::debug!(
                    "interpreters: no glibc thread-specific data measured here; using glibc's \
                     {} layout ({GLIBC_KEY_DATA})",
                    std::env::consts::ARCH
                );
                GLIBC_KEY_DATA
            }),
        })
    })
}

/// The user thread pointer's member of `struct task_struct`: `thread.fsbase` (x86_64),
/// `thread.uw.tp_value` (arm64's `tpidr_el0`).
const THREAD_POINTER: &[&str] = if cfg!(target_arch = "aarch64") {
    &["thread", "uw", "tp_value"]
} else {
    &["thread", "fsbase"]
};

/// The user thread pointer's offset in `struct task_struct`, from the kernel's BTF.
fn task_thread_pointer_offset() -> Result<u32, String> {
    let data = std::fs::read("/sys/kernel/btf/vmlinux")
        .map_err(|err| format!("reading /sys/kernel/btf/vmlinux: {err}"))?;
    struct_member_path_offset(&data, "task_struct", THREAD_POINTER).ok_or_else(|| {
        format!(
            "no task_struct.{} in the kernel's BTF",
            THREAD_POINTER.join(".")
        )
    })
}

/// glibc's key 0 `data` word from the thread pointer, where it cannot be measured (a musl
/// build). x86_64: `offsetof(struct pthread, specific_1stblock[0].data)`, 0x310 + 8, kept
/// for a decade (what [`key_data_from_thread_pointer`] measures, 792 here, glibc 2.36).
/// arm64: the `struct pthread` lies below the thread pointer, so this moves with its size:
/// -0x628 in Debian 12's glibc 2.36 (`pthread_getspecific` reads `tpidr_el0 - 0x630 + 8`),
/// -0x608 in Debian 13's 2.41.
const GLIBC_KEY_DATA: i32 = if cfg!(target_arch = "aarch64") {
    -0x628
} else {
    0x318
};

/// Where glibc keeps thread-specific key 0's value, from the thread pointer: found by
/// setting a key in this thread and looking for its value from `pthread_self()` (the layout
/// of `struct pthread` is glibc's private business). `None` in a musl build, which has no
/// glibc to measure: musl keeps its small `struct pthread` at the top of a thread's
/// mapping, so the 2 KiB scan ran off its end (the static build's unwind thread died of
/// SIGSEGV in `cargo xtask bench profile`).
#[cfg(not(target_env = "gnu"))]
fn key_data_from_thread_pointer() -> Option<i32> {
    None
}

/// See the other target's version: measured on this thread of a glibc build.
#[cfg(target_env = "gnu")]
fn key_data_from_thread_pointer() -> Option<i32> {
    static MARKER: u64 = 0x7472_6163_656b_6974;
    let marker = std::ptr::addr_of!(MARKER) as u64;
    // SAFETY: key created, set, and deleted here; the scan reads this thread's own
    // `struct pthread` (over 2 KiB in every glibc with first-level keys), word by word.
    unsafe {
        let mut key: libc::pthread_key_t = 0;
        if libc::pthread_key_create(&mut key, None) != 0 {
            return None;
        }
        let found =
            if key < 32 && libc::pthread_setspecific(key, marker as *const libc::c_void) == 0 {
                let base = libc::pthread_self() as *const u64;
                let hits: Vec<usize> = (0..256)
                    .filter(|&i| std::ptr::read_volatile(base.add(i)) == marker)
                    .collect();
                libc::pthread_setspecific(key, std::ptr::null());
                match hits[..] {
                    [one] => (one * 8).checked_sub(16 * key as usize),
                    _ => None,
                }
            } else {
                None
            };
        libc::pthread_key_delete(key);
        let from_self = i64::try_from(found?).ok()?;
        let self_from_tp = libc::pthread_self() as i64 - thread_pointer()? as i64;
        i32::try_from(from_self + self_from_tp).ok()
    }
}

/// This thread's thread pointer.
#[cfg(all(target_env = "gnu", target_arch = "x86_64"))]
fn thread_pointer() -> Option<u64> {
    // glibc's x86_64 `struct pthread` is at `fsbase`, and its `header.self` says so.
    // SAFETY: pthread_self() has no preconditions.
    Some(unsafe { libc::pthread_self() } as u64)
}

/// This thread's thread pointer.
#[cfg(all(target_env = "gnu", target_arch = "aarch64"))]
fn thread_pointer() -> Option<u64> {
    let tp: u64;
    // SAFETY: reads the thread's own `tpidr_el0`, which user code may read.
    unsafe { std::arch::asm!("mrs {}, tpidr_el0", out(reg) tp) };
    Some(tp)
}

/// This thread's thread pointer: unknown on other architectures.
#[cfg(all(
    target_env = "gnu",
    not(any(target_arch = "x86_64", target_arch = "aarch64"))
))]
fn thread_pointer() -> Option<u64> {
    None
}

#[cfg(test)]
mod config_tests {
    use super::*;

    #[test]
    fn kernel_and_libc_layouts() {
        let started = std::time::Instant::now();
        let thread_pointer = task_thread_pointer_offset();
        eprintln!(
            "thread pointer {thread_pointer:?} in {:?}",
            started.elapsed()
        );
        let key_data = key_data_from_thread_pointer();
        eprintln!("key data {key_data:?}");
        assert!(thread_pointer.is_ok());
        // glibc (every build of the tests links it) measured, and its known layout.
        assert_eq!(key_data, Some(GLIBC_KEY_DATA));
    }
}
