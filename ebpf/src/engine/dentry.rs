//! Directories by the kernel's dentries ([`operand::DIR_PATH`]): the directory at a
//! descriptor, or the cwd, walked up to the task's root as the kernel's `d_path` does,
//! crossing mounts, at most [`DIR_DEPTH`] steps. Its names go to the record's tail from the
//! leaf up, each with its NUL ([`STR_DIR`]); userspace puts them in order.
//!
//! The tail's length is kept in the scratch, not in a register, through the loop: each
//! step then reaches the loop's head in one state whichever way it went (a name read, a
//! mount crossed), and the verifier checks one path per step, not one per combination.
//!
//! [`operand::DIR_PATH`]: tracekit_common::engine::operand::DIR_PATH

use core::ffi::c_void;

use aya_ebpf::helpers::{
    bpf_probe_read_kernel,
    generated::{bpf_get_current_task, bpf_probe_read_kernel_str},
};
use tracekit_common::engine::{
    DIR_DEPTH, MAX_OPERANDS, NAME_BYTES, STR_CUT, STR_DIR, STR_IN_TAIL, STR_UNREADABLE, TAIL_BYTES,
};

use super::{EngineMaps, Scratch, operands::fd_file, strings::mark};

/// `AT_FDCWD`: a descriptor that means the cwd.
const AT_FDCWD: i32 = -100;

/// The pointer at kernel address `at`, 0 when it cannot be read.
#[inline(always)]
fn word(at: u64) -> u64 {
    // SAFETY: bpf_probe_read_kernel checks the access.
    unsafe { bpf_probe_read_kernel(at as *const u64) }.unwrap_or(0)
}

/// Bytes of the scratch's record tail in use.
#[inline(always)]
fn tail_len(scratch: *mut Scratch) -> usize {
    // SAFETY: this CPU's scratch.
    unsafe { core::ptr::read_volatile(&raw const (*scratch).tail_len) as usize }
}

/// [`operand::DIR_PATH`] operand `i` of the main plan: the directory at descriptor `dfd`
/// (`AT_FDCWD`: the cwd) of the current task into the record's tail; unreadable when the
/// task has no such directory (a closed descriptor, an exiting task). Never inlined: one
/// copy serves every operand.
///
/// [`operand::DIR_PATH`]: tracekit_common::engine::operand::DIR_PATH
#[inline(never)]
pub(crate) fn read_dir<M: EngineMaps>(scratch: *mut Scratch, dfd: u64, i: u32) -> u32 {
    let plan = M::plan();
    let slot = rd!(plan.operands[i as usize & (MAX_OPERANDS - 1)].string_slot) as usize;
    let walk = M::dentry_walk();
    let (path_mnt, path_dentry) = (
        u64::from(rd!(walk.path_mnt)),
        u64::from(rd!(walk.path_dentry)),
    );
    let (mount_mnt, mnt_root) = (
        u64::from(rd!(walk.mount_mnt)),
        u64::from(rd!(walk.mnt_root)),
    );
    // SAFETY: plain helper call.
    let task = unsafe { bpf_get_current_task() };
    let fs = word(task + u64::from(rd!(walk.task_fs)));
    let first = tail_len(scratch);
    if first >= TAIL_BYTES {
        mark(scratch, slot, STR_IN_TAIL | STR_DIR | STR_CUT, 0, 0);
        return 0;
    }
    let at = if dfd as i32 == AT_FDCWD {
        fs + u64::from(rd!(walk.fs_pwd))
    } else {
        match fd_file(dfd, rd!(walk.files_fdt), rd!(walk.fd_max)) {
            0 => 0,
            file => file + u64::from(rd!(walk.file_path)),
        }
    };
    let mut vfsmnt = word(at + path_mnt);
    let mut dentry = word(at + path_dentry);
    if fs == 0 || at == 0 || vfsmnt == 0 || dentry == 0 {
        mark(scratch, slot, STR_IN_TAIL | STR_UNREADABLE, first, 0);
        return 0;
    }
    let root = fs + u64::from(rd!(walk.fs_root));
    let (root_mnt, root_dentry) = (word(root + path_mnt), word(root + path_dentry));
    // Cut until the walk reaches a root.
    let mut flags = STR_IN_TAIL | STR_DIR | STR_CUT;
    for _ in 0..DIR_DEPTH {
        if dentry == root_dentry && vfsmnt == root_mnt {
            flags &= !STR_CUT;
            break;
        }
        let mount = vfsmnt.wrapping_sub(mount_mnt);
        if dentry == word(vfsmnt + mnt_root) {
            let parent = word(mount + u64::from(rd!(walk.mnt_parent)));
            // The mount namespace's root mount is its own parent.
            if parent == mount || parent == 0 {
                flags &= !STR_CUT;
                break;
            }
            dentry = word(mount + u64::from(rd!(walk.mnt_mountpoint)));
            vfsmnt = parent + mount_mnt;
            continue;
        }
        let parent = word(dentry + u64::from(rd!(walk.d_parent)));
        // A filesystem's root not mounted where the walk came from (a detached tree).
        if parent == dentry || parent == 0 {
            flags &= !STR_CUT;
            break;
        }
        let end = tail_len(scratch);
        if end + NAME_BYTES as usize > TAIL_BYTES {
            break;
        }
        let off = end & (TAIL_BYTES - 1);
        let name = word(dentry + u64::from(rd!(walk.d_name)));
        // SAFETY: off < TAIL_BYTES and NAME_BYTES <= STR_MAX: inside the tail; the helper
        // bounds the copy by NAME_BYTES.
        let used = unsafe {
            let dst = (*scratch).out.tail.as_mut_ptr().add(off);
            let ret =
                bpf_probe_read_kernel_str(dst as *mut c_void, NAME_BYTES, name as *const c_void);
            if ret <= 0 {
                *dst = 0;
                1
            } else {
                ret as usize & (2 * NAME_BYTES as usize - 1)
            }
        };
        // SAFETY: this CPU's scratch.
        unsafe { core::ptr::write_volatile(&raw mut (*scratch).tail_len, (off + used) as u32) };
        dentry = parent;
    }
    let end = tail_len(scratch) & (2 * TAIL_BYTES - 1);
    mark(scratch, slot, flags, first, end.saturating_sub(first));
    0
}
