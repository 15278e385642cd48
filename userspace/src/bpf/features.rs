//! What the running kernel's BPF lacks that the kernel programs can do without, probed once
//! per run, and the path each loader takes instead.
//!
//! The kernel programs are built for the newest kernels. On older ones (Debian 11's 5.10):
//! - `bpf_loop` (5.17) walks user stacks. Without it the walk is a bounded loop (5.3+) of
//!   calls of a global BPF function (5.6+), and the function reference `bpf_loop` takes
//!   (`BPF_PSEUDO_FUNC`, 5.13) is dropped from the object: a kernel before 5.13 does not
//!   count the function it names as a subprogram while its BTF `func_info` does ("number of
//!   funcs in func_info doesn't match number of subprogs"), and refuses the load.
//! - `bpf_task_pt_regs` (5.15) finds a task's user registers. Without it they are read at
//!   the top of the task's kernel stack (`task_struct.stack`, from the kernel's BTF).
//!
//! Both choices reach the programs as read-only globals, so each kernel's verifier sees one
//! path only.

use std::sync::OnceLock;

use aya_obj::generated::{bpf_attr, bpf_cmd, bpf_insn, bpf_prog_type};

/// `BPF_FUNC_loop`.
const BPF_FUNC_LOOP: i32 = 181;
/// `BPF_FUNC_task_pt_regs`.
const BPF_FUNC_TASK_PT_REGS: i32 = 175;
/// `BPF_FUNC_get_func_ip`.
const BPF_FUNC_GET_FUNC_IP: i32 = 173;
/// `BPF_FUNC_get_attach_cookie`.
const BPF_FUNC_GET_ATTACH_COOKIE: i32 = 174;

/// Helpers of kprobe programs that older kernels lack, probed once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probes {
    /// `bpf_get_func_ip` in kprobes (5.15): which of several kernel functions fired, at
    /// their return too. Without it, a kprobe's saved instruction pointer names it at entry.
    pub func_ip: bool,
    /// `bpf_get_attach_cookie` (5.15): which of several user functions fired.
    pub attach_cookie: bool,
}

/// The kprobe helpers of the running kernel, probed once.
pub fn probes() -> &'static Probes {
    static PROBES: OnceLock<Probes> = OnceLock::new();
    PROBES.get_or_init(|| {
        let probes = Probes {
            func_ip: helper_known(bpf_prog_type::BPF_PROG_TYPE_KPROBE, BPF_FUNC_GET_FUNC_IP),
            attach_cookie: helper_known(
                bpf_prog_type::BPF_PROG_TYPE_KPROBE,
                BPF_FUNC_GET_ATTACH_COOKIE,
            ),
        };
        log::debug!("kernel kprobe helpers: {probes:?}");
        probes
    })
}

/// The unwinder's path on this kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unwinder {
    /// The kernel has `bpf_loop`.
    pub bpf_loop: bool,
    /// `task_struct.stack`'s offset when the kernel has no `bpf_task_pt_regs`; 0 when it has
    /// (or when neither is known: the load then says what is missing).
    pub task_stack_offset: u32,
    /// arm64: `pt_regs.syscallno`'s offset, where a sample inside `execve` is told apart
    /// (0: unknown, or x86_64, where the uapi `orig_rax` says it).
    pub syscallno_offset: u32,
}

static UNWINDER: OnceLock<Unwinder> = OnceLock::new();
/// Whether a loader used [`unwinder`] this run (what `-v` reports).
static USED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The unwinder's path on the running kernel, probed once.
pub fn unwinder() -> &'static Unwinder {
    USED.store(true, std::sync::atomic::Ordering::Relaxed);
    UNWINDER.get_or_init(|| {
        let tracepoint = bpf_prog_type::BPF_PROG_TYPE_TRACEPOINT;
        let bpf_loop = helper_known(tracepoint, BPF_FUNC_LOOP);
        let task_stack_offset = if helper_known(tracepoint, BPF_FUNC_TASK_PT_REGS) {
            0
        } else {
            kernel_member_offset("task_struct", "stack").unwrap_or_else(|err| {
                log::debug!(
                    "no bpf_task_pt_regs, and {err}: user registers unknown in tracepoints"
                );
                0
            })
        };
        let syscallno_offset = if cfg!(target_arch = "aarch64") {
            kernel_member_offset("pt_regs", "syscallno").unwrap_or_else(|err| {
                log::debug!("{err}: samples inside execve are walked as others");
                0
            })
        } else {
            0
        };
        let unwinder = Unwinder {
            bpf_loop,
            task_stack_offset,
            syscallno_offset,
        };
        log::debug!("kernel BPF features: {unwinder:?}");
        unwinder
    })
}

/// The fallbacks this run took, one line each (nothing on kernels that need none), for `-v`.
pub fn fallbacks() -> Vec<String> {
    if !USED.load(std::sync::atomic::Ordering::Relaxed) {
        return Vec::new();
    }
    let Some(unwinder) = UNWINDER.get() else {
        return Vec::new();
    };
    describe(unwinder)
}

fn describe(unwinder: &Unwinder) -> Vec<String> {
    let mut lines = Vec::new();
    if !unwinder.bpf_loop {
        lines.push(
            "kernel without bpf_loop (5.17+): user stacks walked by a bounded loop of a global \
             BPF function"
                .to_string(),
        );
    }
    if unwinder.task_stack_offset != 0 {
        lines.push(
            "kernel without bpf_task_pt_regs (5.15+): user registers read at the top of the \
             task's kernel stack"
                .to_string(),
        );
    }
    lines
}

/// Whether the kernel knows helper `id`: a program calling it is refused for its arguments,
/// not as an unknown function (libbpf's probe). A kernel that refuses every load (no
/// privileges) is taken to have it: the real load then says why.
fn helper_known(prog_type: bpf_prog_type, id: i32) -> bool {
    // SAFETY: bpf_insn is plain data; all-zero is `r0 = r0 + 0`'s encoding, overwritten.
    let mut call: bpf_insn = unsafe { std::mem::zeroed() };
    call.code = 0x85; // BPF_JMP | BPF_CALL
    call.imm = id;
    // SAFETY: as above.
    let mut exit: bpf_insn = unsafe { std::mem::zeroed() };
    exit.code = 0x95; // BPF_JMP | BPF_EXIT
    let insns = [call, exit];
    let license = c"GPL";
    let mut log = vec![0u8; 4096];
    // SAFETY: bpf_attr is plain data; all-zero is its "unset" value.
    let mut attr: bpf_attr = unsafe { std::mem::zeroed() };
    // SAFETY: writing the BPF_PROG_LOAD member of the union.
    let load = unsafe { &mut attr.__bindgen_anon_3 };
    load.prog_type = prog_type as u32;
    load.insns = insns.as_ptr() as u64;
    load.insn_cnt = insns.len() as u32;
    load.license = license.as_ptr() as u64;
    load.log_level = 1;
    load.log_buf = log.as_mut_ptr() as u64;
    load.log_size = log.len() as u32;
    match super::sys_bpf(bpf_cmd::BPF_PROG_LOAD, &mut attr) {
        Ok(fd) => {
            // SAFETY: the kernel returned a new descriptor that nothing else owns.
            drop(unsafe {
                <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd as i32)
            });
            true
        }
        Err(_) => {
            let text = String::from_utf8_lossy(&log);
            !(text.contains("invalid func ") || text.contains("unknown func "))
        }
    }
}

/// The offset of `structure`'s `member` in the running kernel, from its BTF
/// (`task_struct.stack`; arm64's `pt_regs.syscallno`).
fn kernel_member_offset(structure: &str, member: &str) -> Result<u32, String> {
    let data = std::fs::read("/sys/kernel/btf/vmlinux")
        .map_err(|err| format!("reading /sys/kernel/btf/vmlinux: {err}"))?;
    super::btf::struct_member_offset(&data, structure, member)
        .ok_or_else(|| format!("no {structure}.{member} in the kernel's BTF"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel programs tell a sample inside exec by these numbers: the syscall table's.
    #[test]
    fn exec_syscalls_are_the_tables() {
        use syscalls::Sysno;
        let table = [Sysno::execve.id() as u32, Sysno::execveat.id() as u32];
        #[cfg(target_arch = "x86_64")]
        assert_eq!(tracekit_common::unwind::EXEC_SYSCALLS_X86_64, table);
        #[cfg(target_arch = "aarch64")]
        assert_eq!(tracekit_common::unwind::EXEC_SYSCALLS_AARCH64, table);
    }

    #[test]
    fn fallbacks_name_the_feature_and_its_kernel() {
        let newest = Unwinder {
            bpf_loop: true,
            task_stack_offset: 0,
            syscallno_offset: 0,
        };
        assert!(describe(&newest).is_empty());
        let debian_11 = Unwinder {
            bpf_loop: false,
            task_stack_offset: 24,
            syscallno_offset: 0,
        };
        let lines = describe(&debian_11);
        assert_eq!(lines.len(), 2);
        assert!(lines[0].contains("bpf_loop (5.17+)"), "{lines:?}");
        assert!(lines[1].contains("bpf_task_pt_regs (5.15+)"), "{lines:?}");
    }
}
