//! The user registers an unwind starts from, per architecture (`bpf_target_arch`, which
//! aya-build sets to the userspace target's): where they are in a perf event sample and in
//! the registers a task saved entering the kernel, and whether they were taken in user mode.
//!
//! - x86_64: `struct pt_regs` (uapi); user mode is RPL 3 in `cs`.
//! - aarch64: `struct user_pt_regs` (uapi: `regs[31]`, `sp`, `pc`, `pstate`), which the
//!   kernel's `struct pt_regs` begins with; user mode is EL0 in `pstate`'s mode bits. The
//!   frame pointer is x29, the link register x30.

use core::ptr;

use aya_ebpf::{
    helpers::{
        bpf_probe_read_kernel,
        generated::{bpf_get_current_task_btf, bpf_task_pt_regs},
    },
    programs::PerfEventContext,
};

use tracekit_common::unwind::UnwindStat;

use super::{UnwindMaps, UserRegs};

#[cfg(bpf_target_arch = "x86_64")]
type Regs = aya_ebpf::bindings::pt_regs;
#[cfg(bpf_target_arch = "aarch64")]
type Regs = aya_ebpf::bindings::user_pt_regs;

/// `THREAD_SIZE` of x86_64 kernels built without KASAN (Debian's and the distributions'):
/// a task's kernel stack, whose top holds the user registers it entered the kernel with.
#[cfg(bpf_target_arch = "x86_64")]
const THREAD_SIZE: u64 = 16 * 1024;

/// The registers of a perf event sample (direct context loads: the verifier rewrites them)
/// when it hit user mode: RPL 3 in `cs`.
#[cfg(bpf_target_arch = "x86_64")]
#[inline(always)]
fn sampled(regs: &Regs) -> Option<UserRegs> {
    (regs.cs & 3 == 3).then_some(UserRegs {
        ip: regs.rip,
        sp: regs.rsp,
        bp: regs.rbp,
        lr: 0,
    })
}

/// The registers of a perf event sample (direct context loads: the verifier rewrites them)
/// when it hit user mode: `pstate`'s mode field (`PSR_MODE_MASK`, 0xf) is EL0 (0), for
/// AArch64 and AArch32 tasks alike.
#[cfg(bpf_target_arch = "aarch64")]
#[inline(always)]
fn sampled(regs: &Regs) -> Option<UserRegs> {
    (regs.pstate & 0xf == 0).then_some(UserRegs {
        ip: regs.pc,
        sp: regs.sp,
        bp: regs.regs[29],
        lr: regs.regs[30],
    })
}

/// The saved registers at `regs` (kernel memory) if they were taken in user mode.
#[cfg(bpf_target_arch = "x86_64")]
#[inline(always)]
fn saved(regs: *const Regs) -> Option<UserRegs> {
    // SAFETY: bpf_probe_read_kernel faults safely.
    unsafe {
        let cs = bpf_probe_read_kernel(ptr::addr_of!((*regs).cs)).ok()?;
        if cs & 3 != 3 {
            return None;
        }
        Some(UserRegs {
            ip: bpf_probe_read_kernel(ptr::addr_of!((*regs).rip)).ok()?,
            sp: bpf_probe_read_kernel(ptr::addr_of!((*regs).rsp)).ok()?,
            bp: bpf_probe_read_kernel(ptr::addr_of!((*regs).rbp)).ok()?,
            lr: 0,
        })
    }
}

/// The saved registers at `regs` (kernel memory) if they were taken in user mode (EL0).
#[cfg(bpf_target_arch = "aarch64")]
#[inline(always)]
fn saved(regs: *const Regs) -> Option<UserRegs> {
    // SAFETY: bpf_probe_read_kernel faults safely.
    unsafe {
        let pstate = bpf_probe_read_kernel(ptr::addr_of!((*regs).pstate)).ok()?;
        if pstate & 0xf != 0 {
            return None;
        }
        Some(UserRegs {
            ip: bpf_probe_read_kernel(ptr::addr_of!((*regs).pc)).ok()?,
            sp: bpf_probe_read_kernel(ptr::addr_of!((*regs).sp)).ok()?,
            bp: bpf_probe_read_kernel(ptr::addr_of!((*regs).regs[29])).ok()?,
            lr: bpf_probe_read_kernel(ptr::addr_of!((*regs).regs[30])).ok()?,
        })
    }
}

/// The user registers of a perf event sample: the sampled registers when the sample hit
/// user mode, else those the task saved entering the kernel. `None` for kernel threads.
#[inline(always)]
pub fn user_regs_at_sample<M: UnwindMaps>(ctx: &PerfEventContext) -> Option<UserRegs> {
    // SAFETY: bpf_perf_event_data's regs are readable context fields.
    let regs = unsafe { &(*ctx.ctx).regs };
    sampled(regs).or_else(user_regs_of_task::<M>)
}

/// The user registers the current task saved when it entered the kernel
/// (`bpf_task_pt_regs`, 5.15+; before it, on x86_64, the top of the task's kernel stack, as
/// the kernel's `task_pt_regs` finds them). `None` for kernel threads, which have none.
#[inline(always)]
pub fn user_regs_of_task<M: UnwindMaps>() -> Option<UserRegs> {
    saved(task_regs::<M>()?)
}

/// Whether a perf event sample that hit kernel mode is inside `execve` or `execveat` (the
/// syscall number its task saved entering the kernel) before the new image's registers
/// are set (counted as `UnwindStat::InExec`). Its saved user registers are then the old
/// image's call of exec: once the exec has installed the new memory map and name, they
/// point into memory that is gone, and a walk from them is one frame resolving nowhere.
/// The new image's registers start with a zero frame pointer (x86_64's `ELF_PLAT_INIT`,
/// arm64's `start_thread`), which the old image's call of exec has not on arm64.
#[inline(always)]
pub fn sampled_in_exec<M: UnwindMaps>(ctx: &PerfEventContext) -> bool {
    // SAFETY: bpf_perf_event_data's regs are readable context fields.
    let regs = unsafe { &(*ctx.ctx).regs };
    if sampled(regs).is_some() {
        return false;
    }
    let Some(saved_regs) = task_regs::<M>() else {
        return false;
    };
    let Some(number) = syscall_number::<M>(saved_regs) else {
        return false;
    };
    let exec = (number == EXEC_SYSCALLS[0] || number == EXEC_SYSCALLS[1])
        && saved(saved_regs).is_some_and(|user| user.bp != 0);
    if exec {
        super::bump::<M>(UnwindStat::InExec);
    }
    exec
}

#[cfg(bpf_target_arch = "x86_64")]
const EXEC_SYSCALLS: [u32; 2] = tracekit_common::unwind::EXEC_SYSCALLS_X86_64;
#[cfg(bpf_target_arch = "aarch64")]
const EXEC_SYSCALLS: [u32; 2] = tracekit_common::unwind::EXEC_SYSCALLS_AARCH64;

/// The number of the syscall the task is in, from its saved registers at `regs`
/// (`orig_rax`, uapi; a negative number, as -1 outside a syscall, is none of exec's).
#[cfg(bpf_target_arch = "x86_64")]
#[inline(always)]
fn syscall_number<M: UnwindMaps>(regs: *const Regs) -> Option<u32> {
    // SAFETY: bpf_probe_read_kernel faults safely.
    unsafe { bpf_probe_read_kernel(ptr::addr_of!((*regs).orig_rax)) }
        .ok()
        .map(|number| number as u32)
}

/// The number of the syscall the task is in, from its saved registers at `regs`
/// (`pt_regs.syscallno`, past the uapi registers, at the offset the kernel's BTF states;
/// `NO_SYSCALL`, -1, outside a syscall). `None` when the offset is unknown.
#[cfg(bpf_target_arch = "aarch64")]
#[inline(always)]
fn syscall_number<M: UnwindMaps>(regs: *const Regs) -> Option<u32> {
    let offset = M::syscallno_offset();
    if offset == 0 {
        return None;
    }
    // SAFETY: bpf_probe_read_kernel faults safely.
    unsafe { bpf_probe_read_kernel((regs as u64 + u64::from(offset)) as *const i32) }
        .ok()
        .map(|number| number as u32)
}

/// Where the current task saved its user registers entering the kernel.
#[inline(always)]
fn task_regs<M: UnwindMaps>() -> Option<*const Regs> {
    let stack_offset = M::task_stack_offset();
    // SAFETY: the helpers take and return kernel pointers the verifier tracks; the fields
    // are read with bpf_probe_read_kernel, which faults safely. The loader sets the offset
    // (a read-only global) only on kernels without bpf_task_pt_regs, so the verifier of
    // each kernel sees one of the two calls.
    unsafe {
        if stack_offset == 0 {
            let task = bpf_get_current_task_btf();
            Some(bpf_task_pt_regs(task) as *const Regs)
        } else {
            task_stack_regs(stack_offset)
        }
    }
}

/// The saved user registers at the top of the current task's kernel stack
/// (`task_struct.stack` at `stack_offset`).
#[cfg(bpf_target_arch = "x86_64")]
#[inline(always)]
unsafe fn task_stack_regs(stack_offset: u32) -> Option<*const Regs> {
    // SAFETY: the task pointer is the current task's; the read faults safely.
    let stack: u64 = unsafe {
        let task = aya_ebpf::helpers::generated::bpf_get_current_task();
        bpf_probe_read_kernel((task + u64::from(stack_offset)) as *const u64).ok()?
    };
    Some((stack + THREAD_SIZE - core::mem::size_of::<Regs>() as u64) as *const Regs)
}

/// None: arm64's `struct pt_regs` is larger than the uapi registers and its size changes
/// between kernels, so the top of the stack is not found without BTF; arm64 kernels
/// before 5.15 (no `bpf_task_pt_regs`) get no user stacks outside perf event samples.
#[cfg(bpf_target_arch = "aarch64")]
#[inline(always)]
unsafe fn task_stack_regs(_stack_offset: u32) -> Option<*const Regs> {
    None
}
