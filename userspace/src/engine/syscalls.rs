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

/// The number of the syscall that tracepoint `syscalls:sys_enter_NAME` (or `sys_exit_NAME`)
/// traces, given `NAME`. The tracepoints take the kernel's `SYSCALL_DEFINE` names, which
/// differ from the syscall table's for a few: `newstat` is `stat`, `umount` is `umount2`.
///
/// ```
/// use tracekit::engine::syscalls::tracepoint_syscall;
/// assert_eq!(tracepoint_syscall("openat"), Some(257));
/// assert_eq!(tracepoint_syscall("newfstat"), Some(5));
/// assert_eq!(tracepoint_syscall("no_such_call"), None);
/// ```
pub fn tracepoint_syscall(name: &str) -> Option<u64> {
    // The `SYSCALL_DEFINE`s whose name is not the syscall's (fs/stat.c, kernel/sys.c,
    // fs/read_write.c, fs/namespace.c); the table's names parse as themselves.
    let table_name = match name {
        "newstat" => "stat",
        "newlstat" => "lstat",
        "newfstat" => "fstat",
        "newuname" => "uname",
        "sendfile64" => "sendfile",
        "umount" => "umount2",
        other => other,
    };
    table_name
        .parse::<syscalls::Sysno>()
        .ok()
        .map(|sysno| sysno.id() as u64)
}

/// The name of syscall `nr` on this architecture, or `syscall_NR`.
pub fn syscall_name(nr: u64) -> String {
    usize::try_from(nr)
        .ok()
        .and_then(syscalls::Sysno::new)
        .map(|sysno| sysno.name().to_string())
        .unwrap_or_else(|| format!("syscall_{nr}"))
}
