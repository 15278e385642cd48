//! Reads the plan's operands into the scratch: arguments, fields, registers, user memory,
//! stacks, task ids, strings, and what the start stage left.

use aya_ebpf::helpers::{
    bpf_get_current_comm, bpf_probe_read_kernel, bpf_probe_read_kernel_buf,
    bpf_probe_read_kernel_str_bytes, bpf_probe_read_user, bpf_probe_read_user_str_bytes,
    generated::{
        bpf_get_current_cgroup_id, bpf_get_current_task, bpf_get_func_ip, bpf_get_smp_processor_id,
    },
};
use tracekit_common::{
    cpu_sampler::{STACK_ERROR, STACK_NONE},
    engine::{
        AFTER_START, FD_INT32, LONG_STR, MAX_OPERANDS, MAX_PATH, MAX_STRINGS, Operand, PATH_BYTES,
        PTR_ARRAY, PTR_FROM_ARG, Plan, SIGNED, STR_BYTES, operand, stat,
    },
};

use super::{
    EngineMaps, Scratch,
    args::{
        ArgSource, NoRecord, PROBE_IP_PAST, PT_REGS_IP, RET, arg, narrow, pt_regs_word, read_int,
        read_user,
    },
    bump,
};
use crate::{
    Recorded, current_pid_tid, record_stack, record_user_stack_fp,
    unwind::{record_user_stack, user_regs_of_task},
};

/// Reads every operand of `plan` into the scratch. Returns whether every read succeeded:
/// one that failed (a NULL pointer on a path's way) reads as 0 and the others are still
/// read, so that the filter sees the event; the caller drops an event with a failed read
/// that the filter keeps, counted in [`stat::READ_ERRORS`] (io_uring
/// completions that are no accept, whose `req` is NULL or whose result is no socket's
/// descriptor, are filtered out, not read errors).
#[inline(always)]
pub(crate) fn read_operands<M: EngineMaps, S: ArgSource>(
    plan: &'static Plan,
    source: &S,
    scratch: *mut Scratch,
    pid: u32,
    tid: u32,
    event: u32,
) -> bool {
    let mut all_read = true;
    // SAFETY: this CPU's scratch.
    unsafe {
        (*scratch).str_flags = 0;
        (*scratch).tail_len = 0;
    }
    let n = rd!(plan.n_operands) as usize;
    for i in 0..MAX_OPERANDS {
        if i >= n {
            break;
        }
        let operand = Operand {
            kind: rd!(plan.operands[i].kind),
            offset: rd!(plan.operands[i].offset),
            size: rd!(plan.operands[i].size),
            flags: rd!(plan.operands[i].flags),
            aux: rd!(plan.operands[i].aux),
            string_slot: rd!(plan.operands[i].string_slot),
            index_offset: rd!(plan.operands[i].index_offset),
            index_shift: rd!(plan.operands[i].index_shift),
            // Read where used (paths only).
            path: [0; MAX_PATH],
        };
        let slot = (operand.string_slot as usize) & (MAX_STRINGS - 1);
        // SAFETY: scratch is this CPU's map value; slot is masked into range.
        let buf = unsafe { &mut (*scratch).strings[slot] };
        let value = match operand.kind {
            operand::FIELD => read_int(source, operand.offset, operand.size, operand.flags),
            operand::ARG => Some(narrow(
                arg(scratch, operand.offset),
                operand.size,
                operand.flags,
            )),
            operand::RETVAL => Some(narrow(
                arg(scratch, RET as u32),
                operand.size,
                operand.flags,
            )),
            // SAFETY: plain helper call on the program's context.
            operand::FUNC_IP if M::func_ip_helper() != 0 => {
                Some(unsafe { bpf_get_func_ip(source.ctx()) })
            }
            // Before 5.15, a kprobe's saved instruction pointer: the function's address (the
            // probe's, at its entry), past the `int3` the probe hit on x86_64, as bcc reads
            // it. The loader keys several kernel functions by it at entry only.
            operand::FUNC_IP => pt_regs_word(source.ctx(), PT_REGS_IP).map(|ip| ip - PROBE_IP_PAST),
            operand::KERNEL_STACK => Some(stack_operand::<M, S>(source, scratch, 0)),
            operand::USER_STACK => Some(user_stack_operand::<M, S>(source, scratch)),
            operand::ARG_DEREF => {
                let base = arg(scratch, operand.offset);
                // SAFETY: bpf_probe_read_kernel checks the access.
                unsafe { bpf_probe_read_kernel((base + u64::from(operand.aux)) as *const u64).ok() }
                    .map(|raw| narrow(raw, operand.size, operand.flags))
            }
            operand::REG => pt_regs_word(source.ctx(), operand.offset)
                .map(|raw| narrow(raw, operand.size, operand.flags)),
            operand::USER_MEM => pt_regs_word(source.ctx(), operand.offset).and_then(|base| {
                let addr = base.wrapping_add(operand.aux as i32 as i64 as u64);
                read_user(addr, operand.size).map(|raw| narrow(raw, operand.size, operand.flags))
            }),
            operand::USER_MEM_INDEXED => pt_regs_word(source.ctx(), operand.offset)
                .zip(pt_regs_word(source.ctx(), operand.index_offset))
                .and_then(|(base, index)| {
                    let addr = base
                        .wrapping_add(index << (operand.index_shift & 3))
                        .wrapping_add(operand.aux as i32 as i64 as u64);
                    read_user(addr, operand.size)
                        .map(|raw| narrow(raw, operand.size, operand.flags))
                }),
            operand::CONST => Some(narrow(
                u64::from(operand.offset) | u64::from(operand.aux) << 32,
                operand.size,
                operand.flags,
            )),
            operand::PID => Some(u64::from(pid)),
            operand::TID => Some(u64::from(tid)),
            operand::TASK => Some(super::names::task_word::<M>(tid)),
            // SAFETY: plain helper call.
            operand::CGROUP => Some(unsafe { bpf_get_current_cgroup_id() }),
            // SAFETY: plain helper call.
            operand::CPU => Some(u64::from(unsafe { bpf_get_smp_processor_id() })),
            operand::FOLLOWS => Some(follows::<M>(scratch, &operand)),
            // What the start probe left: filled in once the start is found (run_main).
            operand::LATENCY | operand::SAVED => Some(0),
            operand::EVENT_INDEX => Some(u64::from(event)),
            operand::COMM => {
                *buf = [0; STR_BYTES];
                let comm = bpf_get_current_comm().unwrap_or_default();
                buf[..16].copy_from_slice(&comm);
                Some(0)
            }
            operand::FIELD_STRING => {
                *buf = [0; STR_BYTES];
                let size = (operand.size as usize).min(STR_BYTES);
                // SAFETY: reads at most `size` bytes of the record into the buffer.
                let src = unsafe { source.record().add(operand.offset as usize) };
                // SAFETY: the helper bounds the copy by the slice length.
                unsafe { bpf_probe_read_kernel_str_bytes(src, &mut buf[..size]) }
                    .ok()
                    .map(|_| 0)
            }
            operand::FIELD_DATA_LOC => {
                *buf = [0; STR_BYTES];
                source.field::<u32>(operand.offset).and_then(|loc| {
                    let data_offset = (loc & 0xffff) as usize;
                    // SAFETY: the location comes from the record itself.
                    let src = unsafe { source.record().add(data_offset) };
                    if operand.flags & LONG_STR != 0 {
                        let how = super::strings::how(slot as u32, false, operand.flags);
                        return Some(u64::from(super::strings::read_long(
                            scratch,
                            src as u64,
                            operand.size,
                            how,
                        )));
                    }
                    // The length counts the NUL: a longer string is marked in the last
                    // byte, as a whole string's group key is.
                    let stored = (loc >> 16) as usize;
                    let len = stored.min(STR_BYTES);
                    // SAFETY: the helper bounds the copy by the slice length.
                    let read = unsafe { bpf_probe_read_kernel_str_bytes(src, &mut buf[..len]) }
                        .ok()
                        .map(|_| 0);
                    if stored > STR_BYTES {
                        buf[STR_BYTES - 1] = 1;
                    }
                    read
                })
            }
            // Raw bytes (addresses), NULs kept.
            operand::FIELD_BYTES => {
                *buf = [0; STR_BYTES];
                let size = (operand.size as usize).min(STR_BYTES);
                // SAFETY: reads at most `size` bytes of the record.
                let src = unsafe { source.record().add(operand.offset as usize) };
                // SAFETY: the helper bounds the copy by the slice length.
                unsafe { bpf_probe_read_kernel_buf(src, &mut buf[..size]) }
                    .ok()
                    .map(|_| 0)
            }
            // BTF paths from the task or a record pointer.
            operand::TASK_PATH => {
                // SAFETY: plain helper call.
                let task = unsafe { bpf_get_current_task() };
                follow(plan, path_shape(i, &operand), task, scratch)
            }
            operand::FIELD_PATH => read_int(source, operand.offset, 8, 0)
                .and_then(|base| follow(plan, path_shape(i, &operand), base, scratch)),
            // A path from the file at a descriptor (an 8-byte or an `int` one).
            operand::FD_PATH => read_int(
                source,
                operand.offset,
                if operand.flags & FD_INT32 != 0 { 4 } else { 8 },
                SIGNED,
            )
            .and_then(|fd| {
                match fd_file(fd, operand.index_offset, operand.index_shift) {
                    0 => {
                        *buf = [0; STR_BYTES];
                        Some(0)
                    }
                    file => follow(plan, path_shape(i, &operand), file, scratch),
                }
            }),
            // From a function's parameter, and strings at a path's end.
            operand::ARG_PATH => follow(
                plan,
                path_shape(i, &operand),
                arg(scratch, operand.offset),
                scratch,
            ),
            operand::PATH_STR => {
                *buf = [0; STR_BYTES];
                let base = match operand.index_offset {
                    // SAFETY: plain helper call.
                    operand::TASK_PATH => Some(unsafe { bpf_get_current_task() }),
                    operand::ARG_PATH => Some(arg(scratch, operand.offset)),
                    _ => read_int(source, operand.offset, 8, 0),
                };
                // The path's last value is the `char *`: 8 bytes, unsigned.
                base.and_then(|base| follow(plan, shape(i, operand.aux, 8, 0), base, scratch))
                    .map(|ptr| {
                        if operand.flags & LONG_STR != 0 {
                            return u64::from(super::strings::read_operand::<M>(
                                scratch, ptr, i as u32,
                            ));
                        }
                        let size = (operand.size as usize).min(STR_BYTES);
                        // SAFETY: the helper bounds the copy by the slice length.
                        let read = unsafe {
                            bpf_probe_read_kernel_str_bytes(ptr as *const u8, &mut buf[..size])
                        };
                        if read.is_err() {
                            *buf = [0; STR_BYTES];
                        }
                        0
                    })
            }
            operand::DIR_PATH if operand.flags & AFTER_START == 0 => Some(u64::from(
                super::dentry::read_dir::<M>(scratch, int(scratch, operand.aux as usize), i as u32),
            )),
            operand::USER_STR | operand::KERNEL_STR => {
                *buf = [0; STR_BYTES];
                let user = operand.kind == operand::USER_STR;
                let pointer = if operand.flags & PTR_FROM_ARG != 0 {
                    Some(arg(scratch, operand.offset))
                } else {
                    source.field::<u64>(operand.offset)
                };
                pointer.and_then(|mut ptr| {
                    if operand.flags & LONG_STR != 0 {
                        return Some(u64::from(super::strings::read_operand::<M>(
                            scratch, ptr, i as u32,
                        )));
                    }
                    if operand.flags & PTR_ARRAY != 0 {
                        let at = (ptr + 8 * u64::from(operand.aux)) as *const u64;
                        // SAFETY: the helpers check the access.
                        ptr = if user {
                            unsafe { bpf_probe_read_user(at) }.ok()?
                        } else {
                            unsafe { bpf_probe_read_kernel(at) }.ok()?
                        };
                        // Past the array's NULL end: an empty string, not an error.
                        if ptr == 0 {
                            return Some(0);
                        }
                    }
                    let src = ptr as *const u8;
                    // SAFETY: the helpers bound the copy by the slice length.
                    let read = if user {
                        unsafe { bpf_probe_read_user_str_bytes(src, &mut buf[..]) }.ok()
                    } else {
                        unsafe { bpf_probe_read_kernel_str_bytes(src, &mut buf[..]) }.ok()
                    };
                    // A page not faulted in yet (a literal in a forked child's .rodata)
                    // reads as nothing: the event is kept (a trace plan reads whole strings,
                    // marked unreadable: super::strings).
                    if read.is_none() {
                        *buf = [0; STR_BYTES];
                    }
                    Some(0)
                })
            }
            _ => Some(0),
        };
        all_read &= value.is_some();
        // SAFETY: this CPU's scratch; i < MAX_OPERANDS.
        unsafe { (*scratch).ints[i] = value.unwrap_or(0) };
    }
    all_read
}

/// A path operand's offset count (`aux`), width, index `i` and flags in one word: a BPF
/// function takes at most five arguments (an `Option<u64>` result takes one of them).
#[inline(always)]
fn path_shape(i: usize, operand: &Operand) -> u64 {
    shape(i, operand.aux, operand.size, operand.flags)
}

/// [`path_shape`]'s packing: `n` offsets, a value of `size` bytes, operand `i`, `flags`.
#[inline(always)]
fn shape(i: usize, n: u32, size: u32, flags: u32) -> u64 {
    u64::from(n & 0xff)
        | u64::from(size & 0xff) << 8
        | ((i & 0xff) as u64) << 16
        | u64::from(flags) << 32
}

/// The `struct file *` the current task has open at descriptor `fd`, 0 when there is none
/// (a negative descriptor, one at or past `max_fds`, a failed read): the walk of
/// [`operand::FD_PATH`], its offsets packed as there (`files | fdt << 16`, `fd | max_fds <<
/// 16`). Never inlined, for the same reason as [`follow`].
#[inline(never)]
pub(crate) fn fd_file(fd: u64, files_fdt: u32, fd_max: u32) -> u64 {
    let fd = fd as i64;
    if fd < 0 {
        return 0;
    }
    let read = |at: u64| -> u64 {
        // SAFETY: bpf_probe_read_kernel checks the access.
        unsafe { bpf_probe_read_kernel(at as *const u64) }.unwrap_or(0)
    };
    // SAFETY: plain helper call.
    let task = unsafe { bpf_get_current_task() };
    let files = read(task + u64::from(files_fdt & 0xffff));
    if files == 0 {
        return 0;
    }
    let fdt = read(files + u64::from(files_fdt >> 16));
    if fdt == 0 {
        return 0;
    }
    // SAFETY: bpf_probe_read_kernel checks the access.
    let max_fds = unsafe { bpf_probe_read_kernel((fdt + u64::from(fd_max >> 16)) as *const u32) }
        .unwrap_or(0);
    if fd as u64 >= u64::from(max_fds) {
        return 0;
    }
    let array = read(fdt + u64::from(fd_max & 0xffff));
    if array == 0 {
        return 0;
    }
    read(array + 8 * fd as u64)
}

/// Follows operand `i`'s (in `shape`) path from `base`: `n` offsets (1..=[`MAX_PATH`]), a pointer read
/// at each but the last, then `size` bytes at the last: an integer, or with [`PATH_BYTES`]
/// raw bytes into the operand's string slot of `scratch` (the value is then 0). None when a
/// read fails (a NULL pointer on the way). `shape` is [`path_shape`]'s packing of `n`,
/// `size` and `flags`.
///
/// Never inlined: its reads' stack slots would otherwise sit in every entry program's
/// frame, and 6.1's verifier counts that frame in the user-stack unwinder's call chain
/// (512 bytes over the chain; the classic tracepoint program came to 544).
#[inline(never)]
fn follow(plan: &'static Plan, shape: u64, base: u64, scratch: *mut Scratch) -> Option<u64> {
    let (n, size, flags) = (
        shape as u32 & 0xff,
        (shape >> 8) as u32 & 0xff,
        (shape >> 32) as u32,
    );
    let i = (shape >> 16) as usize & (MAX_OPERANDS - 1);
    let mut at = base;
    for j in 0..MAX_PATH - 1 {
        if j + 1 >= n as usize {
            break;
        }
        let offset = rd!(plan.operands[i].path[j & (MAX_PATH - 1)]);
        // SAFETY: bpf_probe_read_kernel checks the access.
        at = unsafe { bpf_probe_read_kernel(at.wrapping_add(u64::from(offset)) as *const u64) }
            .ok()?;
        if at == 0 {
            return None;
        }
    }
    let last = rd!(plan.operands[i].path[(n as usize).wrapping_sub(1) & (MAX_PATH - 1)]);
    let addr = at.wrapping_add(u64::from(last));
    if flags & PATH_BYTES != 0 {
        let slot = rd!(plan.operands[i].string_slot) as usize & (MAX_STRINGS - 1);
        // SAFETY: this CPU's scratch; slot masked into range.
        let buf = unsafe { &mut (*scratch).strings[slot] };
        *buf = [0; STR_BYTES];
        let len = (size as usize).min(STR_BYTES);
        // SAFETY: the helper bounds the copy by the slice length.
        return unsafe { bpf_probe_read_kernel_buf(addr as *const u8, &mut buf[..len]) }
            .ok()
            .map(|_| 0);
    }
    // SAFETY: bpf_probe_read_kernel checks each access.
    let raw = unsafe {
        match size {
            1 => bpf_probe_read_kernel(addr as *const u8).ok().map(u64::from),
            2 => bpf_probe_read_kernel(addr as *const u16)
                .ok()
                .map(u64::from),
            4 => bpf_probe_read_kernel(addr as *const u32)
                .ok()
                .map(u64::from),
            _ => bpf_probe_read_kernel(addr as *const u64).ok(),
        }
    }?;
    Some(narrow(raw, size, flags))
}

/// Integer operand `index` of the current event.
#[inline(always)]
pub(crate) fn int(scratch: *mut Scratch, index: usize) -> u64 {
    // SAFETY: this CPU's scratch; index masked into range.
    unsafe { (*scratch).ints[index & (MAX_OPERANDS - 1)] }
}

/// [`operand::FOLLOWS`]: 1 when the event starts where its stream's previous event ended, 0
/// when not, 2 for the stream's first event; the stream's end becomes this event's.
/// Concurrent events of one stream on two CPUs race as libbpf-tools' `biopattern` does.
#[inline(always)]
fn follows<M: EngineMaps>(scratch: *mut Scratch, operand: &Operand) -> u64 {
    let stream = int(scratch, operand.offset as usize);
    let position = int(scratch, operand.aux as usize);
    let end = position.wrapping_add(int(scratch, operand.index_offset as usize));
    if let Some(previous) = M::follows().get_ptr_mut(&stream) {
        // SAFETY: the entry's value, read and replaced in place.
        unsafe {
            let verdict = u64::from(*previous == position);
            *previous = end;
            return verdict;
        }
    }
    if M::follows().insert(&stream, &end, 0).is_err() {
        bump::<M>(stat::READ_ERRORS);
    }
    2
}

/// Records a stack operand, counting what could not be recorded.
#[inline(always)]
fn stack_operand<M: EngineMaps, S: ArgSource>(
    source: &S,
    scratch: *mut Scratch,
    flags: u64,
) -> u64 {
    // SAFETY: this CPU's scratch.
    let frames = unsafe { &raw mut (*scratch).frames };
    stored::<M>(record_stack(
        &NoRecord(source.ctx()),
        frames,
        M::stacks(),
        flags,
        0,
    ))
}

/// Records the user stack: unwound from tables with `ENGINE_USER_UNWIND`, else by frame
/// pointers.
#[inline(always)]
fn user_stack_operand<M: EngineMaps, S: ArgSource>(source: &S, scratch: *mut Scratch) -> u64 {
    if M::user_unwind() == 0 {
        // SAFETY: this CPU's scratch.
        let frames = unsafe { &raw mut (*scratch).frames };
        return stored::<M>(record_user_stack_fp(
            &NoRecord(source.ctx()),
            frames,
            M::stacks(),
            user_regs_of_task::<M::Unwind>().as_ref(),
            0,
        ));
    }
    let (pid, _) = current_pid_tid();
    match user_regs_of_task::<M::Unwind>() {
        Some(regs) => stored::<M>(record_user_stack::<M::Unwind>(&regs, pid, M::stacks(), 0)),
        // Kernel threads have no user stack.
        None => STACK_NONE,
    }
}

/// The key of a recorded stack, counting what could not be recorded.
#[inline(always)]
fn stored<M: EngineMaps>(recorded: Recorded) -> u64 {
    match recorded {
        Recorded::Stack(hash) => hash,
        Recorded::None => STACK_NONE,
        Recorded::WalkError => {
            bump::<M>(stat::STACK_ERRORS);
            STACK_ERROR
        }
        Recorded::MapFull => {
            bump::<M>(stat::STACK_MAP_FULL);
            STACK_ERROR
        }
    }
}
