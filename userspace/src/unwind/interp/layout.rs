//! The kernel's and libc's layouts the interpreter unwinders need: `task_struct`'s
//! `fsbase` (from the kernel's BTF) and glibc's thread-specific data (measured on this
//! process's own thread), found once per run.

use std::sync::OnceLock;

use tracekit_common::interp::InterpConfig;

use crate::bpf::btf::struct_member_offset;

static LAYOUTS: OnceLock<Result<InterpConfig, String>> = OnceLock::new();

/// The kernel's and libc's layouts the unwinders need, found once.
pub(super) fn layouts() -> &'static Result<InterpConfig, String> {
    LAYOUTS.get_or_init(|| {
        Ok(InterpConfig {
            task_fsbase_offset: task_fsbase_offset()?,
            // A tracekit linked with musl (the static build) cannot probe glibc's layout:
            // the interpreters it profiles use the machine's glibc, whose x86_64 layout has
            // kept `specific_1stblock` at 0x310 (data at +8) for a decade.
            pthread_key_data_offset: pthread_key_data_offset().unwrap_or_else(|| {
                log::debug!("interpreters: no glibc thread-specific data found at our own pthread_self(); using glibc's x86_64 layout");
                GLIBC_X86_64_KEY_DATA
            }),
        })
    })
}

/// `thread.fsbase`'s offset in `struct task_struct`, from the kernel's BTF.
fn task_fsbase_offset() -> Result<u32, String> {
    let data = std::fs::read("/sys/kernel/btf/vmlinux")
        .map_err(|err| format!("reading /sys/kernel/btf/vmlinux: {err}"))?;
    let thread = struct_member_offset(&data, "task_struct", "thread")
        .ok_or("no task_struct.thread in the kernel's BTF")?;
    let fsbase = struct_member_offset(&data, "thread_struct", "fsbase")
        .ok_or("no thread_struct.fsbase in the kernel's BTF")?;
    Ok(thread + fsbase)
}

/// glibc x86_64's `offsetof(struct pthread, specific_1stblock[0].data)` (0x310 + 8), which
/// [`pthread_key_data_offset`] measures on this machine (792 here, glibc 2.36).
const GLIBC_X86_64_KEY_DATA: u32 = 0x318;

/// Where glibc keeps thread-specific key 0's value, from `pthread_self()`: found by setting
/// a key in this thread and looking for its value (the layout of `struct pthread` is
/// glibc's private business). `None` in a musl build, which has no glibc to measure: musl
/// keeps its small `struct pthread` at the top of a thread's mapping, so the 2 KiB scan ran
/// off its end (the static build's unwind thread died of SIGSEGV in `cargo xtask bench
/// profile`).
#[cfg(not(target_env = "gnu"))]
fn pthread_key_data_offset() -> Option<u32> {
    None
}

/// See the other target's version: measured on this thread of a glibc build.
#[cfg(target_env = "gnu")]
fn pthread_key_data_offset() -> Option<u32> {
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
        found.and_then(|offset| u32::try_from(offset).ok())
    }
}

#[cfg(test)]
mod config_tests {
    use super::*;

    #[test]
    fn kernel_and_libc_layouts() {
        let started = std::time::Instant::now();
        let fsbase = task_fsbase_offset();
        eprintln!("fsbase {fsbase:?} in {:?}", started.elapsed());
        let key_data = pthread_key_data_offset();
        eprintln!("key data {key_data:?}");
        assert!(fsbase.is_ok());
        // glibc (every build of the tests links it) measured, and its known layout.
        assert_eq!(key_data, Some(GLIBC_X86_64_KEY_DATA));
    }
}
