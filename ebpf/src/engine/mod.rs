//! The generic in-kernel aggregation engine behind `hist`, `count`, `trace`, `funccount`,
//! `funclatency`, `stackcount` and the presets (`bitesize`, `biolatency`, `syscount`). What
//! it reads, filters, keys and aggregates is the loader's [`Plan`] (see
//! `tracekit_common::engine`), a read-only global the verifier treats as constants, so each
//! plan runs only the code it needs.
//!
//! The `engine` object (`src/bin/engine.rs`) defines the maps and globals with
//! [`engine_maps!`](crate::engine_maps) and holds only the entry points: each loads its
//! context's arguments into the per-CPU [`Scratch`] and runs the start or main stage here.
//! A stage reads the plan's operands ([`operands`]), runs its filter program ([`filter`]),
//! and adds the event to an aggregate ([`aggregate`]) or sends it as a trace record.

use core::ffi::c_void;

use aya_ebpf::{
    helpers::{
        bpf_get_current_comm,
        generated::{bpf_get_smp_processor_id, bpf_ktime_get_ns},
    },
    programs::{RawTracePointContext, TracePointContext},
};
use tracekit_common::engine::{
    AFTER_START, CorrKey, MAX_OPERANDS, MAX_STRINGS, NO_OPERAND, Plan, SAVED_WORDS, STR_BYTES,
    StartValue, TraceRecord, agg, operand, stat,
};

/// Reads a plan field without letting the compiler fold the build-time default.
macro_rules! rd {
    ($e:expr) => {
        // SAFETY: reading a field of a static.
        unsafe { core::ptr::read_volatile(core::ptr::addr_of!($e)) }
    };
}

pub mod aggregate;
pub mod args;
pub mod dentry;
pub mod filter;
mod maps;
pub mod names;
pub mod operands;
pub mod outstanding;
pub mod strings;

pub use maps::{EngineMaps, Scratch};

use self::{
    aggregate::{aggregate, row_wanted},
    args::{ArgSource, NoRecord},
    filter::filter,
    operands::{int, read_operands},
};
use crate::{announce, current_pid_tid, in_cgroup, selected};

/// Counts one `index` (a [`stat`]) in `ENGINE_STATS`; a drop is logged at `-vv`.
#[inline(always)]
pub(crate) fn bump<M: EngineMaps>(index: u32) {
    if let Some(counter) = M::stats().get_ptr_mut(index) {
        // SAFETY: per-CPU slot, only this CPU writes it while the program runs.
        unsafe { *counter += 1 };
    }
    crate::log::engine_dropped(M::stats(), index);
}

/// A main-plan event from the program attached at `event`: find its start if it needs
/// one, filter, aggregate.
#[inline(always)]
fn run_main<M: EngineMaps, S: ArgSource>(
    source: &S,
    scratch: *mut Scratch,
    event: u32,
) -> Option<()> {
    let plan = M::plan();
    if rd!(plan.agg) == agg::OUTSTANDING {
        // A release counts in any task: memory one process allocated is often freed by
        // another (an RCU callback, a kworker).
        if outstanding::release::<M, S>(plan, source, scratch, event) {
            return Some(());
        }
        let ids = task_ids::<M>(plan)?;
        return outstanding::run::<M, S>(plan, source, scratch, ids, event);
    }
    let (pid, tid) = task_ids::<M>(plan)?;
    let all_read = read_operands::<M, S>(plan, source, scratch, pid, tid, event);
    if rd!(plan.key_set_used) != 0 {
        let first = (rd!(plan.key_parts[0]) as usize) & (MAX_OPERANDS - 1);
        if !row_wanted(plan, int(scratch, first)) {
            return None;
        }
    }
    let filter_first = rd!(plan.filter_first) != 0;
    if filter_first && !filter(plan, scratch) {
        bump::<M>(stat::FILTERED);
        return None;
    }
    if rd!(plan.needs_start) != 0 {
        let start = take_start::<M>(plan, scratch)?;
        // SAFETY: plain helper call.
        let now = unsafe { bpf_ktime_get_ns() };
        let latency_ns = now.saturating_sub(start.ts_ns);
        // Operands that depend on the start are filled in now.
        let n = rd!(plan.n_operands) as usize;
        for i in 0..MAX_OPERANDS {
            if i >= n {
                break;
            }
            // SAFETY: this CPU's scratch; i < MAX_OPERANDS.
            match rd!(plan.operands[i].kind) {
                operand::LATENCY => unsafe { (*scratch).ints[i] = latency_ns },
                operand::SAVED => {
                    let slot = (rd!(plan.operands[i].offset) as usize).min(SAVED_WORDS - 1);
                    // SAFETY: this CPU's scratch; i < MAX_OPERANDS.
                    unsafe { (*scratch).ints[i] = start.saved[slot] }
                }
                // A user string at the pointer the start saved, read now the syscall has
                // faulted its page in.
                operand::SAVED_USER_STR => {
                    let word = (rd!(plan.operands[i].offset) as usize).min(SAVED_WORDS - 1);
                    strings::read_saved::<M>(scratch, start.saved[word], i as u32);
                }
                // A directory at a descriptor the start saved.
                operand::DIR_PATH if rd!(plan.operands[i].flags) & AFTER_START != 0 => {
                    let dfd = int(scratch, rd!(plan.operands[i].aux) as usize);
                    dentry::read_dir::<M>(scratch, dfd, i as u32);
                }
                operand::SAVED_STR => {
                    let slot = (rd!(plan.operands[i].string_slot) as usize) & (MAX_STRINGS - 1);
                    // The string is the first four words; a comm (16 bytes or less) the
                    // first two, numbers the next two.
                    let short = rd!(plan.operands[i].size) as usize <= STR_BYTES / 2;
                    let words = [
                        start.saved[0],
                        start.saved[1],
                        if short { 0 } else { start.saved[2] },
                        if short { 0 } else { start.saved[3] },
                    ];
                    // SAFETY: this CPU's scratch; slot masked into range; 4 words are
                    // STR_BYTES bytes.
                    unsafe {
                        (*scratch).strings[slot] =
                            core::mem::transmute::<[u64; 4], [u8; STR_BYTES]>(words)
                    }
                }
                _ => {}
            }
        }
    }
    if !filter_first && !filter(plan, scratch) {
        bump::<M>(stat::FILTERED);
        return None;
    }
    // A field that could not be read drops the event the filter kept.
    if !all_read {
        bump::<M>(stat::READ_ERRORS);
        return None;
    }
    if rd!(plan.announce) != 0 && pid != 0 && !announce(pid, M::known(), M::announce()) {
        bump::<M>(stat::ANNOUNCE_LOST);
    }
    if rd!(plan.agg) == agg::TRACE {
        emit::<M>(scratch, pid, tid, event);
    } else {
        aggregate::<M>(plan, scratch);
    }
    Some(())
}

/// Takes the event's start out of `ENGINE_STARTS` (by its correlation key), counted as
/// ended, or copies it and leaves it there with [`Plan::keep_start`]; None, counted, when
/// there is none.
#[inline(always)]
pub(crate) fn take_start<M: EngineMaps>(
    plan: &'static Plan,
    scratch: *mut Scratch,
) -> Option<StartValue> {
    let key = corr_key(plan, scratch);
    // SAFETY: the value is copied out before the entry is removed.
    let Some(start) = (unsafe { M::starts().get(&key) }).copied() else {
        bump::<M>(stat::NO_START);
        return None;
    };
    // A kept start is the key's last value: it stays for the next end event.
    if rd!(plan.keep_start) == 0 {
        let _ = M::starts().remove(&key);
        bump::<M>(stat::STARTS_ENDED);
    }
    Some(start)
}

/// A start-plan event: filter, then remember when it happened.
#[inline(always)]
fn run_start<M: EngineMaps, S: ArgSource>(
    source: &S,
    scratch: *mut Scratch,
    event: u32,
) -> Option<()> {
    let plan = M::start_plan();
    let (pid, tid) = task_ids::<M>(plan)?;
    let all_read = read_operands::<M, S>(plan, source, scratch, pid, tid, event);
    if !filter(plan, scratch) {
        return None;
    }
    if !all_read {
        bump::<M>(stat::READ_ERRORS);
        return None;
    }
    let mut saved = [0u64; SAVED_WORDS];
    let first = rd!(plan.saves[0]);
    let first_kind = if first == NO_OPERAND {
        operand::NONE
    } else {
        rd!(plan.operands[(first as usize) & (MAX_OPERANDS - 1)].kind)
    };
    // A saved string fills the first four words (a comm, or a string of 16 bytes or less,
    // the first two: the loader saves nothing else there), numbers the others.
    let mut i = 0;
    let string = matches!(
        first_kind,
        operand::USER_STR
            | operand::KERNEL_STR
            | operand::PATH_STR
            | operand::FIELD_STRING
            | operand::FIELD_DATA_LOC
            | operand::COMM
    );
    if string {
        let slot = (rd!(plan.operands[(first as usize) & (MAX_OPERANDS - 1)].string_slot) as usize)
            & (MAX_STRINGS - 1);
        // SAFETY: this CPU's scratch; slot masked into range; STR_BYTES is 4 words.
        let words =
            unsafe { core::mem::transmute::<[u8; STR_BYTES], [u64; 4]>((*scratch).strings[slot]) };
        saved[0] = words[0];
        saved[1] = words[1];
        saved[2] = words[2];
        saved[3] = words[3];
        i = 2;
    }
    while i < SAVED_WORDS {
        let save = rd!(plan.saves[i]);
        // A string's own operand names its words, not a number (offcpu's first number,
        // the pid, is word 0).
        if save != NO_OPERAND && !(string && save == first) {
            saved[i] = int(scratch, save as usize);
        }
        i += 1;
    }
    if rd!(plan.announce) != 0 && pid != 0 && !announce(pid, M::known(), M::announce()) {
        bump::<M>(stat::ANNOUNCE_LOST);
    }
    // SAFETY: plain helper call.
    let start = StartValue {
        ts_ns: unsafe { bpf_ktime_get_ns() },
        saved,
    };
    if M::starts()
        .insert(&corr_key(plan, scratch), &start, 0)
        .is_err()
    {
        bump::<M>(stat::START_MAP_FULL);
    } else {
        bump::<M>(stat::STARTS);
    }
    Some(())
}

/// The current pid and tid, or None if the process is not traced (not a selected pid, or
/// outside `--cgroup`'s subtree). The helper calls are skipped when nothing needs them (no
/// pid filter, no cgroup, no self-exclusion, no pid operand).
#[inline(always)]
fn task_ids<M: EngineMaps>(plan: &'static Plan) -> Option<(u32, u32)> {
    if rd!(plan.all_tasks) != 0 {
        return Some(if rd!(plan.needs_ids) != 0 {
            current_pid_tid()
        } else {
            (0, 0)
        });
    }
    let cgroup = M::cgroup_id();
    if cgroup != 0 && !in_cgroup(cgroup, M::cgroup_level()) {
        return None;
    }
    let self_pid = M::self_pid();
    let filter = M::filter_pids();
    if self_pid == 0 && filter == 0 && rd!(plan.needs_ids) == 0 {
        return Some((0, 0));
    }
    let (pid, tid) = current_pid_tid();
    selected(pid, self_pid, filter, M::targets()).then_some((pid, tid))
}

/// The flag a trace record is committed with: wakeups batched, the reader polls and is
/// woken only when a quarter of the ring waits. The loader sizes a trace plan's ring at
/// TRACE_RING_BYTES: the threshold is a constant.
#[inline(always)]
pub(crate) fn wake_flag<M: EngineMaps>() -> u64 {
    const WAKE_BYTES: u64 = tracekit_common::engine::TRACE_RING_BYTES as u64
        / tracekit_common::engine::TRACE_WAKEUP_FRACTION;
    let waiting = M::trace().query(aya_ebpf::bindings::BPF_RB_AVAIL_DATA as u64);
    if waiting >= WAKE_BYTES {
        aya_ebpf::bindings::BPF_RB_FORCE_WAKEUP as u64
    } else {
        aya_ebpf::bindings::BPF_RB_NO_WAKEUP as u64
    }
}

/// Sends the event to userspace as a [`TraceRecord`], with its whole strings after it when
/// it has any ([`strings::emit_long`]); a full ring buffer is counted.
#[inline(always)]
fn emit<M: EngineMaps>(scratch: *mut Scratch, pid: u32, tid: u32, event: u32) {
    // SAFETY: this CPU's scratch.
    if unsafe { (*scratch).str_flags } != 0 {
        strings::emit_long::<M>(scratch, pid, tid, event);
        return;
    }
    let Some(mut entry) = M::trace().reserve::<TraceRecord>(0) else {
        bump::<M>(stat::TRACE_LOST);
        return;
    };
    let record = entry.as_mut_ptr();
    // SAFETY: the reserved entry is ours until submitted; scratch is this CPU's.
    unsafe {
        (*record).ts_ns = bpf_ktime_get_ns();
        (*record).pid = pid;
        (*record).tid = tid;
        (*record).cpu = bpf_get_smp_processor_id();
        (*record).event = event;
        (*record).comm = bpf_get_current_comm().unwrap_or_default();
        (*record).ints = (*scratch).ints;
        (*record).strings = (*scratch).strings;
        (*record).str_spans[0] = 0;
        (*record).str_spans[1] = 0;
        (*record).str_spans[2] = 0;
        (*record).str_spans[3] = 0;
        (*record).str_flags = 0;
        (*record).str_cap = 0;
    }
    entry.submit(wake_flag::<M>());
}

/// The correlation key of an event.
#[inline(always)]
pub(crate) fn corr_key(plan: &'static Plan, scratch: *mut Scratch) -> CorrKey {
    let mut key = CorrKey { words: [0; 2] };
    let n = rd!(plan.n_corr_parts) as usize;
    let mut i = 0;
    while i < 2 && i < n {
        key.words[i] = int(scratch, rd!(plan.corr_parts[i]) as usize);
        i += 1;
    }
    key
}

/// The shared body of the start stage's tracepoint programs.
#[inline(never)]
pub fn tracepoint_start<M: EngineMaps>(ctx: &TracePointContext, event: u32) -> u32 {
    if let Some(scratch) = M::scratch().get_ptr_mut(0) {
        let _ = run_start::<M, _>(ctx, scratch, event);
    }
    0
}

/// The body of the `engine_tp_simple_N` programs: a [`simple`] plan's main stage on a
/// classic tracepoint, inlined into each (no BPF-to-BPF call, as [`run_simple`]).
#[inline(always)]
pub fn tracepoint_simple<M: EngineMaps>(ctx: &TracePointContext, event: u32) -> u32 {
    if let Some(scratch) = M::scratch().get_ptr_mut(0) {
        let _ = simple::<M, _>(ctx, scratch, event);
    }
    0
}

/// The shared body of the `engine_tp_N` programs (a BPF subprogram: one copy of the code).
#[inline(never)]
pub fn tracepoint_main<M: EngineMaps>(ctx: &TracePointContext, event: u32) -> u32 {
    if let Some(scratch) = M::scratch().get_ptr_mut(0) {
        if rd!(M::plan().simple) != 0 {
            let _ = simple::<M, _>(ctx, scratch, event);
        } else {
            let _ = run_main::<M, _>(ctx, scratch, event);
        }
    }
    0
}

/// Runs the main (`start == false`) or start plan for a context without a record, after
/// `load` put its arguments into the scratch.
#[inline(always)]
pub fn run<M: EngineMaps>(
    ctx: *mut c_void,
    start: bool,
    event: u32,
    load: impl FnOnce(*mut Scratch, u32),
) {
    let Some(scratch) = M::scratch().get_ptr_mut(0) else {
        return;
    };
    let plan = if start { M::start_plan() } else { M::plan() };
    load(scratch, rd!(plan.raw_args));
    let source = NoRecord(ctx);
    if start {
        let _ = run_start::<M, _>(&source, scratch, event);
    } else if rd!(plan.simple) != 0 {
        let _ = simple::<M, _>(&source, scratch, event);
    } else {
        let _ = run_main::<M, _>(&source, scratch, event);
    }
}

/// The main stage of a [`simple`] plan and nothing else, for the entry points the loader
/// picks when the plan is simple: with the interpreter out of the program, every function is
/// inlined into the entry point, so an event makes no BPF-to-BPF call (each one's return
/// costs about 10 ns on a kernel with return thunks, SRSO's safe RET).
#[inline(always)]
pub fn run_simple<M: EngineMaps>(
    ctx: *mut c_void,
    event: u32,
    load: impl FnOnce(*mut Scratch, u32),
) {
    let Some(scratch) = M::scratch().get_ptr_mut(0) else {
        return;
    };
    load(scratch, rd!(M::plan().raw_args));
    let _ = simple::<M, _>(&NoRecord(ctx), scratch, event);
}

/// The interpreter's fast path for the plainest plan, `syscount` without options: count by
/// raw tracepoint argument 1 (the syscall number of `sys_enter`) in the per-CPU array, no
/// filter, no value. Same cells as [`run`] writes for the main plan; the loader picks this
/// program only for plans where the two agree (`fast_count_arg1` in userspace/src/engine/plan.rs).
#[inline(always)]
pub fn count_arg1<M: EngineMaps>(ctx: &RawTracePointContext) {
    let plan = M::plan();
    if task_ids::<M>(plan).is_none() {
        return;
    }
    // The loader attaches this program to raw tracepoints with two arguments.
    let key: u64 = ctx.arg(1);
    if !row_wanted(plan, key) {
        return;
    }
    let row = key.min(u64::from(rd!(plan.array_key_bound))) as u32;
    if let Some(entry) = M::array().get_ptr_mut(row) {
        // SAFETY: this CPU's slot of a per-CPU array.
        unsafe { (*entry).count += 1 };
    }
}

/// The main stage of the simplest plans, without the interpreter ([`Plan::simple`]): up to
/// three integer operands at hand (the event, record fields, arguments the entry point
/// loaded, the pid, the tid, the thread's name generation, the CPU), keyed by up to two of them, counted or with a log2
/// histogram of one, behind at most one integer comparison (`count EVENT --by pid`, `hist
/// block:block_rq_issue --value bytes --filter 'bytes > 4096'`). Same cells as the
/// interpreter writes, in the array or the hash; every kind, index and operator is a plan
/// constant, so the verifier keeps one branch of each. The loader sets `simple` only for
/// plans this computes exactly (`fast_simple` in userspace/src/engine/plan.rs).
#[inline(always)]
fn simple<M: EngineMaps, S: ArgSource>(
    source: &S,
    scratch: *mut Scratch,
    event: u32,
) -> Option<()> {
    let plan = M::plan();
    let (pid, tid) = task_ids::<M>(plan)?;
    let n = rd!(plan.n_operands);
    // A macro, not a closure: LLVM outlined the closure as a BPF subprogram, and a call's
    // return costs more than the rest of the plan on a kernel with return thunks (SRSO's
    // safe RET). Three scalars, not an array: a zeroed array is a memset call, a byte loop
    // in BPF.
    macro_rules! operand_at {
        ($i:literal) => {
            if $i < n {
                simple_operand::<M, S>(plan, source, scratch, $i, (pid, tid, event))?
            } else {
                0
            }
        };
    }
    let values = (operand_at!(0), operand_at!(1), operand_at!(2));
    if rd!(plan.n_insns) != 0 {
        let (a, b) = (
            pick_value(values, rd!(plan.insns[0].operand)),
            rd!(plan.insns[0].arg),
        );
        // `fast_simple` allows integer comparisons only.
        if !self::filter::compare(rd!(plan.insns[0].op), a, b).unwrap_or(false) {
            bump::<M>(stat::FILTERED);
            return None;
        }
    }
    let parts = rd!(plan.n_key_parts);
    let first = if parts > 0 {
        pick_value(values, rd!(plan.key_parts[0]))
    } else {
        0
    };
    if !row_wanted(plan, first) {
        return None;
    }
    let value_index = rd!(plan.value);
    let value = if value_index == NO_OPERAND {
        0
    } else {
        pick_value(values, value_index)
    };
    let signed = value_index != NO_OPERAND
        && rd!(plan.operands[(value_index as usize) & (MAX_OPERANDS - 1)].flags)
            & tracekit_common::engine::SIGNED
            != 0;
    let slot = if rd!(plan.agg) != agg::LOG2 || (signed && (value as i64) < 0) {
        0
    } else {
        tracekit_common::engine::log2_slot(value)
    };
    if rd!(plan.layout) == tracekit_common::engine::layout::ARRAY {
        let row = first.min(u64::from(rd!(plan.array_key_bound))) as u32;
        self::aggregate::add_to_array::<M>(row * rd!(plan.slots) + slot, value);
        return Some(());
    }
    let second = if parts > 1 {
        pick_value(values, rd!(plan.key_parts[1]))
    } else {
        0
    };
    // A new key (in the hash, or a cell just claimed): a thread name part records the
    // thread's comm (engine::names).
    let name_tasks = || {
        let mut i = 0;
        while i < 3 {
            if (i as u32) < n && rd!(plan.operands[i].kind) == operand::TASK {
                self::names::name_task::<M>(pick_value(values, i as u32));
            }
            i += 1;
        }
    };
    if rd!(plan.group_cache) != 0 {
        match cache_cell::<M>(first, second, slot, value) {
            Cell::Counted => return Some(()),
            Cell::Claimed => {
                name_tasks();
                return Some(());
            }
            Cell::Taken => {}
        }
    }
    // The key in the scratch, not on the stack: 6.1's verifier caps the call chain's
    // combined stack at 512 bytes.
    // SAFETY: this CPU's scratch; `simple` runs instead of the interpreter, which uses it.
    let key = unsafe { &mut (*scratch).key };
    key.words[0] = first;
    key.words[1] = second;
    self::aggregate::zero_words(&mut key.words, 2);
    key.slot = slot;
    key._pad = 0;
    self::aggregate::add_to_hash::<M>(key, value, name_tasks);
    Some(())
}

/// Operand `index` of a [`simple`] plan's three.
#[inline(always)]
fn pick_value(values: (u64, u64, u64), index: u32) -> u64 {
    match index {
        0 => values.0,
        1 => values.1,
        _ => values.2,
    }
}

/// What [`cache_cell`] did with an event.
enum Cell {
    /// Counted in the cell its group owns.
    Counted,
    /// Counted in a free cell its group now owns (a new group on this CPU).
    Claimed,
    /// Another group owns the cell: the event goes to the hash.
    Taken,
}

/// Counts an event of group (`word0`, `word1`, `slot`) in this CPU's cell of `ENGINE_CACHE`
/// when the group owns one of its two cells, or claims the first free one
/// ([`Plan::group_cache`]). A per-CPU array lookup is an address computation; the hash lookup
/// it saves hashes and compares a whole [`AggKey`]. Cells are never freed during a load, so a
/// group that finds a cell of its pair free has no events in the hash on this CPU.
#[inline(always)]
fn cache_cell<M: EngineMaps>(word0: u64, word1: u64, slot: u32, value: u64) -> Cell {
    let first = tracekit_common::engine::cache_index(word0, word1, slot);
    let mut free = None;
    for index in [first, first ^ 1] {
        let Some(cell) = M::cache().get_ptr_mut(index) else {
            return Cell::Taken;
        };
        // SAFETY: this CPU's cell of a per-CPU array; the engine's programs do not nest on
        // one CPU (the scratch assumes it too).
        unsafe {
            if (*cell).owned == 0 {
                if free.is_none() {
                    free = Some(cell);
                }
            } else if (*cell).words[0] == word0 && (*cell).words[1] == word1 && (*cell).slot == slot
            {
                (*cell).count += 1;
                (*cell).sum = (*cell).sum.wrapping_add(value);
                return Cell::Counted;
            }
        }
    }
    let Some(cell) = free else {
        return Cell::Taken;
    };
    // SAFETY: as above.
    unsafe {
        (*cell).words = [word0, word1];
        (*cell).slot = slot;
        (*cell).count = 1;
        (*cell).sum = value;
        (*cell).owned = 1;
    }
    Cell::Claimed
}

/// Operand `i` of a [`simple`] plan (one of the kinds `fast_simple` allows); None when a
/// record field cannot be read (counted, as the interpreter does).
#[inline(always)]
fn simple_operand<M: EngineMaps, S: ArgSource>(
    plan: &'static Plan,
    source: &S,
    scratch: *mut Scratch,
    i: usize,
    (pid, tid, event): (u32, u32, u32),
) -> Option<u64> {
    let (offset, size, flags) = (
        rd!(plan.operands[i].offset),
        rd!(plan.operands[i].size),
        rd!(plan.operands[i].flags),
    );
    Some(match rd!(plan.operands[i].kind) {
        operand::PID => u64::from(pid),
        operand::TID => u64::from(tid),
        operand::TASK => self::names::task_word::<M>(tid),
        // SAFETY: plain helper call.
        operand::CPU => u64::from(unsafe { bpf_get_smp_processor_id() }),
        operand::ARG => self::args::narrow(self::args::arg(scratch, offset), size, flags),
        operand::FIELD => {
            let Some(value) = self::args::read_int(source, offset, size, flags) else {
                bump::<M>(stat::READ_ERRORS);
                return None;
            };
            value
        }
        _ => u64::from(event),
    })
}

/// `sched:sched_process_exec`: the process's memory map is replaced, so it is announced
/// again at its next event. With `-p` / `-- CMD`, a selected process is announced right
/// away, so its memory map is read (and its unwind tables loading) before its first events:
/// a command that makes its events and exits at once would be gone before an announcement
/// made by its first event were read (as `profile_sched_exec` does).
#[inline(always)]
pub fn process_exec<M: EngineMaps>() {
    let (pid, _) = current_pid_tid();
    let _ = M::known().remove(pid);
    if M::filter_pids() != 0
        && selected(pid, M::self_pid(), 1, M::targets())
        && !announce(pid, M::known(), M::announce())
    {
        bump::<M>(stat::ANNOUNCE_LOST);
    }
}

/// The start of thread `tid`, when starts are kept per thread.
#[inline(always)]
fn thread_start(tid: u32) -> CorrKey {
    CorrKey {
        words: [u64::from(tid), 0],
    }
}

/// `sched:sched_process_exit` (include/trace/events/sched.h), attached when starts are kept
/// per thread (`Plan::by_thread`): a thread that exits never ends what it started (the
/// `exit_group` of `syscount --latency`), so its start goes now instead of filling the map.
#[inline(always)]
pub fn thread_exit<M: EngineMaps>() {
    let (_, tid) = current_pid_tid();
    if M::starts().remove(&thread_start(tid)).is_ok() {
        bump::<M>(stat::STARTS_EXITED);
    }
}

/// `sched:sched_process_fork`, attached when starts are kept per thread: a new thread that
/// reuses a dead thread's id must not find that thread's start.
#[inline(always)]
pub fn thread_fork<M: EngineMaps>(ctx: &TracePointContext) {
    let offset = M::fork_child_pid_offset() as usize;
    // SAFETY: the offset comes from the event's format file; read_at checks the access.
    if let Ok(child) = unsafe { ctx.read_at::<i32>(offset) }
        && M::starts().remove(&thread_start(child as u32)).is_ok()
    {
        bump::<M>(stat::STARTS_EXITED);
    }
}
