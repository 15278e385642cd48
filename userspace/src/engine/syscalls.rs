//! The syscall constants of this architecture: names by number (the `syscalls` crate's
//! tables), the bound of syscall numbers the engine keys arrays by, and where `sys_exit`
//! finds the syscall number.

/// Syscall numbers at or above this share one row (x86_64 has about 460).
pub const SYSCALL_BOUND: u32 = 1024;

/// Offset of `orig_ax` in x86_64's `struct pt_regs` (arch/x86/include/uapi/asm/ptrace.h,
/// a stable ABI): the syscall number at `sys_exit`.
#[cfg(target_arch = "x86_64")]
pub const ORIG_AX_OFFSET: Option<u32> = Some(15 * 8);
#[cfg(not(target_arch = "x86_64"))]
pub const ORIG_AX_OFFSET: Option<u32> = None;

/// The name of syscall `nr` on this architecture, or `syscall_NR`.
pub fn syscall_name(nr: u64) -> String {
    usize::try_from(nr)
        .ok()
        .and_then(syscalls::Sysno::new)
        .map(|sysno| sysno.name().to_string())
        .unwrap_or_else(|| format!("syscall_{nr}"))
}
