//! `engine`: the generic in-kernel aggregation engine behind `hist`, `count`, `trace`,
//! `funccount`, `funclatency`, `stackcount` and the presets (`bitesize`, `biolatency`,
//! `syscount`). What it reads, filters, keys and aggregates is the loader's [`Plan`] (see
//! `tracekit_common::engine`), a read-only global the verifier treats as constants, so each
//! plan runs only the code it needs.
//!
//! Every entry point (tracepoint, raw tracepoint, kprobe, kretprobe, uprobe, uretprobe,
//! fentry, fexit, perf event) loads its context's arguments into the per-CPU scratch, then
//! runs the shared start or main logic.
#![no_std]
#![no_main]

use core::ffi::c_void;

use aya_ebpf::{
    EbpfContext,
    bindings::BPF_NOEXIST,
    helpers::{
        bpf_get_current_comm, bpf_probe_read_kernel, bpf_probe_read_kernel_str_bytes,
        bpf_probe_read_user,
        generated::{
            bpf_get_attach_cookie, bpf_get_current_cgroup_id, bpf_get_func_ip,
            bpf_get_smp_processor_id, bpf_ktime_get_ns,
        },
    },
    macros::{
        fentry, fexit, kprobe, kretprobe, map, perf_event, raw_tracepoint, tracepoint, uprobe,
        uretprobe,
    },
    maps::{HashMap, LruHashMap, PerCpuArray, PerCpuHashMap, RingBuf},
    programs::{
        FEntryContext, FExitContext, PerfEventContext, ProbeContext, RawTracePointContext,
        RetProbeContext, TracePointContext,
    },
};
use tracekit_common::{
    engine::{
        AggKey, AggValue, CorrKey, DEFAULT_HASH_ENTRIES, DEFAULT_STACK_ENTRIES,
        DEFAULT_START_ENTRIES, KEY_SET_BITS, KEY_SET_WORDS, KEY_WORDS, MAX_INSNS, MAX_KEY_PARTS,
        MAX_OPERANDS, MAX_PRECISION, MAX_STRINGS, MAX_TARGET_PIDS, NO_OPERAND, Operand, Plan,
        SIGNED, STAT_COUNT, STR_BYTES, StartValue, TRACE_RING_BYTES, TraceRecord, agg, layout,
        log_linear_slot, log2_slot, op, operand, stat,
    },
    profile::{EVENTS_RING_BYTES, MAX_KNOWN_PIDS, STACK_ERROR, STACK_NONE, StackFrames},
};
use tracekit_ebpf::{
    Recorded, announce, current_pid_tid, follow_fork, forget_on_exec_mmap, record_stack,
    record_user_stack_fp, selected,
    unwind::{record_user_stack, user_regs_of_task},
};

/// The main plan (events that are aggregated).
#[unsafe(no_mangle)]
static ENGINE_PLAN: Plan = Plan::EMPTY;
/// The start plan (events that only leave a timestamp for the main plan).
#[unsafe(no_mangle)]
static ENGINE_START_PLAN: Plan = Plan::EMPTY;
/// The loader's own pid: never traced.
#[unsafe(no_mangle)]
static ENGINE_SELF_PID: u32 = 0;
/// 1: only pids in `ENGINE_TARGETS` are traced.
#[unsafe(no_mangle)]
static ENGINE_FILTER_PIDS: u8 = 0;
/// Offset of `child_pid` in `sched:sched_process_fork` records (for `-- CMD`).
#[unsafe(no_mangle)]
static ENGINE_FORK_CHILD_PID_OFFSET: u32 = 0;
/// Offset of `prot` in `syscalls:sys_enter_mmap` records (with `Plan::announce`).
#[unsafe(no_mangle)]
static ENGINE_MMAP_PROT_OFFSET: u32 = 0;
/// 1: user stack operands are walked by the DWARF unwinder (`--call-graph dwarf`) from the
/// registers the task saved when it entered the kernel; 0: by frame pointers.
#[unsafe(no_mangle)]
static ENGINE_USER_UNWIND: u8 = 0;

/// Array layout aggregates; the loader sizes it to `(array_key_bound + 1) * slots`.
#[map]
static ENGINE_ARRAY: PerCpuArray<AggValue> = PerCpuArray::with_max_entries(1, 0);

/// Hash layout aggregates.
#[map]
static ENGINE_HASH: PerCpuHashMap<AggKey, AggValue> =
    PerCpuHashMap::with_max_entries(DEFAULT_HASH_ENTRIES, 0);

/// Start timestamps by correlation key.
#[map]
static ENGINE_STARTS: HashMap<CorrKey, StartValue> =
    HashMap::with_max_entries(DEFAULT_START_ENTRIES, 0);

#[map]
static ENGINE_STATS: PerCpuArray<u64> = PerCpuArray::with_max_entries(STAT_COUNT, 0);

#[map]
static ENGINE_TARGETS: HashMap<u32, u8> = HashMap::with_max_entries(MAX_TARGET_PIDS, 0);

/// Stacks by content hash (stack operands); the loader shrinks it when unused.
#[map]
static ENGINE_STACKS: HashMap<u64, StackFrames> =
    HashMap::with_max_entries(DEFAULT_STACK_ENTRIES, 0);

/// Per-event records (`agg::TRACE`).
#[map]
static ENGINE_TRACE: RingBuf = RingBuf::with_byte_size(TRACE_RING_BYTES, 0);

/// New processes, announced once (`Plan::announce`).
#[map]
static ENGINE_ANNOUNCE: RingBuf = RingBuf::with_byte_size(EVENTS_RING_BYTES, 0);

/// Processes already announced.
#[map]
static ENGINE_KNOWN: LruHashMap<u32, u8> = LruHashMap::with_max_entries(MAX_KNOWN_PIDS, 0);

// The DWARF unwinder's tables; the loader shrinks them when user stacks are not unwound.
tracekit_ebpf::unwind_maps!(EngineUnwind);

/// Index of the return value in `Scratch::args`.
const RET: usize = 7;

/// Per-CPU room for an event's values and the group key (the BPF stack is 512 bytes).
#[repr(C)]
struct Scratch {
    /// Integer operand values, by operand index.
    ints: [u64; MAX_OPERANDS],
    /// Probe arguments 0..6, and the return value at [`RET`].
    args: [u64; 8],
    /// A stack being recorded.
    frames: StackFrames,
    /// String operand values, by string slot.
    strings: [[u8; STR_BYTES]; MAX_STRINGS],
    key: AggKey,
}

#[map]
static ENGINE_SCRATCH: PerCpuArray<Scratch> = PerCpuArray::with_max_entries(1, 0);

/// Reads a plan field without letting the compiler fold the build-time default.
macro_rules! rd {
    ($e:expr) => {
        // SAFETY: reading a field of a static.
        unsafe { core::ptr::read_volatile(core::ptr::addr_of!($e)) }
    };
}

#[inline(always)]
fn bump(index: u32) {
    if let Some(counter) = ENGINE_STATS.get_ptr_mut(index) {
        // SAFETY: per-CPU slot, only this CPU writes it while the program runs.
        unsafe { *counter += 1 };
    }
}

/// Where operands come from. Arguments are loaded into the scratch by each entry point;
/// only tracepoints have a record with fields.
trait Source {
    /// Reads a `T` at `offset` in the record.
    fn field<T>(&self, offset: u32) -> Option<T>;
    /// The record's address (for `__data_loc` strings).
    fn record(&self) -> *const u8;
    /// The program's context.
    fn ctx(&self) -> *mut c_void;
}

impl Source for TracePointContext {
    #[inline(always)]
    fn field<T>(&self, offset: u32) -> Option<T> {
        // SAFETY: bpf_probe_read_kernel checks the access.
        unsafe { self.read_at::<T>(offset as usize) }.ok()
    }
    #[inline(always)]
    fn record(&self) -> *const u8 {
        self.as_ptr() as *const u8
    }
    #[inline(always)]
    fn ctx(&self) -> *mut c_void {
        self.as_ptr()
    }
}

/// Any other context: no record, only the context pointer.
struct NoRecord(*mut c_void);

impl Source for NoRecord {
    #[inline(always)]
    fn field<T>(&self, _offset: u32) -> Option<T> {
        None
    }
    #[inline(always)]
    fn record(&self) -> *const u8 {
        core::ptr::null()
    }
    #[inline(always)]
    fn ctx(&self) -> *mut c_void {
        self.0
    }
}

impl EbpfContext for NoRecord {
    fn as_ptr(&self) -> *mut c_void {
        self.0
    }
}

/// Stores the first `n` arguments into the scratch, `arg(i)` reading each at a literal
/// index (the verifier refuses context loads through a computed pointer).
macro_rules! load_args {
    ($scratch:expr, $n:expr, $arg:expr) => {{
        // SAFETY: this CPU's scratch.
        let args = unsafe { &mut (*$scratch).args };
        let n = $n;
        if n > 0 {
            args[0] = $arg(0);
        }
        if n > 1 {
            args[1] = $arg(1);
        }
        if n > 2 {
            args[2] = $arg(2);
        }
        if n > 3 {
            args[3] = $arg(3);
        }
        if n > 4 {
            args[4] = $arg(4);
        }
        if n > 5 {
            args[5] = $arg(5);
        }
    }};
}

/// Records a stack operand, counting what could not be recorded.
#[inline(always)]
fn stack_operand<S: Source>(source: &S, scratch: *mut Scratch, flags: u64) -> u64 {
    // SAFETY: this CPU's scratch.
    let frames = unsafe { &raw mut (*scratch).frames };
    stored(record_stack(
        &NoRecord(source.ctx()),
        frames,
        &ENGINE_STACKS,
        flags,
        0,
    ))
}

/// Records the user stack: unwound from tables with `ENGINE_USER_UNWIND`, else by frame
/// pointers.
#[inline(always)]
fn user_stack_operand<S: Source>(source: &S, scratch: *mut Scratch) -> u64 {
    if rd!(ENGINE_USER_UNWIND) == 0 {
        // SAFETY: this CPU's scratch.
        let frames = unsafe { &raw mut (*scratch).frames };
        return stored(record_user_stack_fp(
            &NoRecord(source.ctx()),
            frames,
            &ENGINE_STACKS,
            user_regs_of_task().as_ref(),
            0,
        ));
    }
    let (pid, _) = current_pid_tid();
    match user_regs_of_task() {
        Some(regs) => stored(record_user_stack::<EngineUnwind>(
            &regs,
            pid,
            &ENGINE_STACKS,
            0,
        )),
        // Kernel threads have no user stack.
        None => STACK_NONE,
    }
}

/// The key of a recorded stack, counting what could not be recorded.
#[inline(always)]
fn stored(recorded: Recorded) -> u64 {
    match recorded {
        Recorded::Stack(hash) => hash,
        Recorded::None => STACK_NONE,
        Recorded::WalkError => {
            bump(stat::STACK_ERRORS);
            STACK_ERROR
        }
        Recorded::MapFull => {
            bump(stat::STACK_MAP_FULL);
            STACK_ERROR
        }
    }
}

/// Argument `n` loaded by the entry point.
#[inline(always)]
fn arg(scratch: *mut Scratch, n: u32) -> u64 {
    // SAFETY: this CPU's scratch; index clamped.
    unsafe { (*scratch).args[(n as usize).min(RET)] }
}

/// Narrows a raw 64-bit value to `size` bytes, sign-extending when `flags` says signed.
#[inline(always)]
fn narrow(raw: u64, size: u32, flags: u32) -> u64 {
    let signed = flags & SIGNED != 0;
    match size {
        1 if signed => raw as i8 as i64 as u64,
        1 => raw as u8 as u64,
        2 if signed => raw as i16 as i64 as u64,
        2 => raw as u16 as u64,
        4 if signed => raw as i32 as i64 as u64,
        4 => raw as u32 as u64,
        _ => raw,
    }
}

/// The 8 bytes at byte `offset` of the probe's `struct pt_regs` (the program's context in
/// uprobes and kprobes). The plan's offsets stay inside the struct (the loader takes them
/// from a fixed table), and the helper checks the access anyway.
#[inline(always)]
fn pt_regs_word(ctx: *mut c_void, offset: u32) -> Option<u64> {
    let offset = (offset as usize).min(PT_REGS_BYTES - 8);
    // SAFETY: bpf_probe_read_kernel checks the access.
    unsafe { bpf_probe_read_kernel((ctx as *const u8).add(offset) as *const u64) }.ok()
}

/// `struct pt_regs` of x86_64: 21 registers of 8 bytes.
const PT_REGS_BYTES: usize = 21 * 8;

/// `size` bytes of user memory at `addr`, zero-extended (exactly `size` bytes are read, so
/// a value at the end of a page reads).
#[inline(always)]
fn read_user(addr: u64, size: u32) -> Option<u64> {
    // SAFETY: bpf_probe_read_user checks the access.
    unsafe {
        match size {
            1 => bpf_probe_read_user(addr as *const u8).ok().map(u64::from),
            2 => bpf_probe_read_user(addr as *const u16).ok().map(u64::from),
            4 => bpf_probe_read_user(addr as *const u32).ok().map(u64::from),
            _ => bpf_probe_read_user(addr as *const u64).ok(),
        }
    }
}

/// Reads an integer field of `size` bytes.
#[inline(always)]
fn read_int<S: Source>(source: &S, offset: u32, size: u32, flags: u32) -> Option<u64> {
    let raw = match size {
        1 => u64::from(source.field::<u8>(offset)?),
        2 => u64::from(source.field::<u16>(offset)?),
        4 => u64::from(source.field::<u32>(offset)?),
        _ => source.field::<u64>(offset)?,
    };
    Some(narrow(raw, size, flags))
}

/// What the start probe left for this event.
#[derive(Clone, Copy)]
struct Started {
    latency_ns: u64,
    saved: [u64; 4],
}

/// Reads every operand of `plan` into the scratch. Returns None if a read failed (counted).
#[inline(always)]
fn read_operands<S: Source>(
    plan: &'static Plan,
    source: &S,
    scratch: *mut Scratch,
    pid: u32,
    tid: u32,
    event: u32,
    started: Started,
) -> Option<()> {
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
            operand::FUNC_IP => Some(unsafe { bpf_get_func_ip(source.ctx()) }),
            operand::KERNEL_STACK => Some(stack_operand(source, scratch, 0)),
            operand::USER_STACK => Some(user_stack_operand(source, scratch)),
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
            // SAFETY: plain helper call.
            operand::CGROUP => Some(unsafe { bpf_get_current_cgroup_id() }),
            // SAFETY: plain helper call.
            operand::CPU => Some(u64::from(unsafe { bpf_get_smp_processor_id() })),
            operand::LATENCY => Some(started.latency_ns),
            operand::SAVED => Some(started.saved[(operand.offset & 3) as usize]),
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
                    let len = ((loc >> 16) as usize).min(STR_BYTES);
                    // SAFETY: the location comes from the record itself.
                    let src = unsafe { source.record().add(data_offset) };
                    // SAFETY: the helper bounds the copy by the slice length.
                    unsafe { bpf_probe_read_kernel_str_bytes(src, &mut buf[..len]) }
                        .ok()
                        .map(|_| 0)
                })
            }
            _ => Some(0),
        };
        match value {
            // SAFETY: this CPU's scratch; i < MAX_OPERANDS.
            Some(value) => unsafe { (*scratch).ints[i] = value },
            None => {
                bump(stat::READ_ERRORS);
                return None;
            }
        }
    }
    Some(())
}

/// Integer operand `index` of the current event.
#[inline(always)]
fn int(scratch: *mut Scratch, index: usize) -> u64 {
    // SAFETY: this CPU's scratch; index masked into range.
    unsafe { (*scratch).ints[index & (MAX_OPERANDS - 1)] }
}

/// Compares string buffer `s` with string constant `c` of `plan` under `opcode`.
#[inline(always)]
fn match_string(plan: &'static Plan, opcode: u32, s: &[u8; STR_BYTES], c: usize) -> bool {
    let c = c & 3;
    let len = (rd!(plan.str_lens[c]) as usize).min(STR_BYTES);
    let constant = |i: usize| rd!(plan.str_consts[c][i & (STR_BYTES - 1)]);
    match opcode {
        op::STR_EQ => {
            // Both sides are NUL-padded: equal strings are equal byte arrays.
            let mut i = 0;
            while i < STR_BYTES {
                if s[i] != constant(i) {
                    return false;
                }
                i += 1;
            }
            true
        }
        op::STR_PREFIX => {
            let mut i = 0;
            while i < STR_BYTES && i < len {
                if s[i] != constant(i) {
                    return false;
                }
                i += 1;
            }
            true
        }
        _ => {
            let mut n = 0;
            while n < STR_BYTES && s[n] != 0 {
                n += 1;
            }
            if len > n {
                return false;
            }
            let last_start = n - len;
            let (first, last) = if opcode == op::STR_SUFFIX {
                (last_start, last_start)
            } else {
                (0, last_start)
            };
            let mut start = first;
            while start <= last && start < STR_BYTES {
                let mut j = 0;
                let mut equal = true;
                while j < len && j < STR_BYTES {
                    if s[(start + j) & (STR_BYTES - 1)] != constant(j) {
                        equal = false;
                        break;
                    }
                    j += 1;
                }
                if equal {
                    return true;
                }
                start += 1;
            }
            false
        }
    }
}

/// Runs the filter program; an empty program passes.
#[inline(always)]
fn filter(plan: &'static Plan, scratch: *mut Scratch) -> bool {
    let n = rd!(plan.n_insns) as usize;
    if n == 0 {
        return true;
    }
    let mut stack: u64 = 0;
    for i in 0..MAX_INSNS {
        if i >= n {
            break;
        }
        let opcode = rd!(plan.insns[i].op);
        let index = (rd!(plan.insns[i].operand) as usize) & (MAX_OPERANDS - 1);
        let a = int(scratch, index);
        let b = rd!(plan.insns[i].arg);
        let bit = match opcode {
            op::AND => {
                let top = stack & 1;
                stack >>= 1;
                let below = stack & 1;
                stack >>= 1;
                top & below
            }
            op::OR => {
                let top = stack & 1;
                stack >>= 1;
                let below = stack & 1;
                stack >>= 1;
                top | below
            }
            op::NOT => {
                let top = stack & 1;
                stack >>= 1;
                top ^ 1
            }
            op::EQ => u64::from(a == b),
            op::NE => u64::from(a != b),
            op::LT => u64::from(a < b),
            op::LE => u64::from(a <= b),
            op::GT => u64::from(a > b),
            op::GE => u64::from(a >= b),
            op::SLT => u64::from((a as i64) < (b as i64)),
            op::SLE => u64::from((a as i64) <= (b as i64)),
            op::SGT => u64::from((a as i64) > (b as i64)),
            op::SGE => u64::from((a as i64) >= (b as i64)),
            op::BITAND => u64::from(a & b != 0),
            _ => {
                let slot = (rd!(plan.operands[index].string_slot) as usize) & (MAX_STRINGS - 1);
                // SAFETY: this CPU's scratch; slot masked into range.
                let s = unsafe { &(*scratch).strings[slot] };
                u64::from(match_string(plan, opcode, s, b as usize))
            }
        };
        stack = (stack << 1) | bit;
    }
    stack & 1 == 1
}

/// The histogram slot of `value` under `plan`.
#[inline(always)]
fn slot_of(plan: &'static Plan, value: u64, signed: bool) -> u32 {
    match rd!(plan.agg) {
        agg::LOG2 => {
            if signed && (value as i64) < 0 {
                0
            } else {
                log2_slot(value)
            }
        }
        agg::LOG_LINEAR => {
            if signed && (value as i64) < 0 {
                0
            } else {
                // Bounded so the verifier sees every shift below 64.
                log_linear_slot(value, rd!(plan.precision).min(MAX_PRECISION))
            }
        }
        agg::LINEAR => {
            let min = rd!(plan.linear_min);
            let step = rd!(plan.linear_step).max(1);
            let slots = rd!(plan.slots);
            let v = value as i64;
            if v < min {
                0
            } else {
                let bucket = ((v - min) as u64) / step;
                if bucket >= u64::from(slots - 2) {
                    slots - 1
                } else {
                    bucket as u32 + 1
                }
            }
        }
        _ => 0,
    }
}

/// Adds one event (and `value` to the sum) to the aggregate `plan` keys it under.
#[inline(always)]
fn aggregate(plan: &'static Plan, scratch: *mut Scratch) {
    let value_index = rd!(plan.value);
    let (value, signed) = if value_index == NO_OPERAND {
        (0, false)
    } else {
        let index = (value_index as usize) & (MAX_OPERANDS - 1);
        (
            int(scratch, index),
            rd!(plan.operands[index].flags) & SIGNED != 0,
        )
    };
    let div = rd!(plan.value_div);
    let scaled = if div > 1 { value / div } else { value };
    let slot = slot_of(plan, scaled, signed);
    let n_key_parts = rd!(plan.n_key_parts) as usize;

    if rd!(plan.layout) == layout::ARRAY {
        let mut row = 0u64;
        if n_key_parts > 0 {
            let index = rd!(plan.key_parts[0]) as usize;
            row = int(scratch, index).min(u64::from(rd!(plan.array_key_bound)));
        }
        let index = row as u32 * rd!(plan.slots) + slot;
        if let Some(entry) = ENGINE_ARRAY.get_ptr_mut(index) {
            // SAFETY: this CPU's slot of a per-CPU array.
            unsafe {
                (*entry).count += 1;
                (*entry).sum = (*entry).sum.wrapping_add(value);
            }
        }
        return;
    }

    // SAFETY: this CPU's scratch.
    let key = unsafe { &mut (*scratch).key };
    key.words = [0; KEY_WORDS];
    key.slot = slot;
    key._pad = 0;
    let mut word = 0usize;
    for part in 0..MAX_KEY_PARTS {
        if part >= n_key_parts {
            break;
        }
        let index = (rd!(plan.key_parts[part]) as usize) & (MAX_OPERANDS - 1);
        let kind = rd!(plan.operands[index].kind);
        let is_string = Operand {
            kind,
            ..Operand::NONE
        }
        .is_string();
        if is_string {
            let slot = (rd!(plan.operands[index].string_slot) as usize) & (MAX_STRINGS - 1);
            // SAFETY: this CPU's scratch; slot masked into range.
            let s = unsafe { &(*scratch).strings[slot] };
            let mut w = 0;
            while w < STR_BYTES / 8 {
                let mut bytes = [0u8; 8];
                bytes.copy_from_slice(&s[w * 8..w * 8 + 8]);
                if word + w < KEY_WORDS {
                    key.words[word + w] = u64::from_ne_bytes(bytes);
                }
                w += 1;
            }
            word += STR_BYTES / 8;
        } else {
            if word < KEY_WORDS {
                key.words[word] = int(scratch, index);
            }
            word += 1;
        }
    }
    if let Some(entry) = ENGINE_HASH.get_ptr_mut(&*key) {
        // SAFETY: this CPU's value of a per-CPU hash entry.
        unsafe {
            (*entry).count += 1;
            (*entry).sum = (*entry).sum.wrapping_add(value);
        }
        return;
    }
    let first = AggValue {
        count: 1,
        sum: value,
    };
    if ENGINE_HASH
        .insert(&*key, &first, u64::from(BPF_NOEXIST))
        .is_err()
    {
        bump(stat::MAP_FULL);
    }
}

/// Whether `row` (the first key part) is one the plan counts: every row unless the plan
/// names a set ([`Plan::key_set`]), as the shared `raw_syscalls` program does for a set of
/// `syscalls:*` tracepoints.
#[inline(always)]
fn row_wanted(plan: &'static Plan, row: u64) -> bool {
    if rd!(plan.key_set_used) == 0 {
        return true;
    }
    if row >= KEY_SET_BITS {
        return false;
    }
    let word = rd!(plan.key_set[(row / 64) as usize & (KEY_SET_WORDS - 1)]);
    (word >> (row % 64)) & 1 != 0
}

/// The current pid and tid, or None if the process is not traced. The helper call is
/// skipped when nothing needs it (no pid filter, no self-exclusion, no pid operand).
#[inline(always)]
fn task_ids(plan: &'static Plan) -> Option<(u32, u32)> {
    if rd!(plan.all_tasks) != 0 {
        return Some(if rd!(plan.needs_ids) != 0 {
            current_pid_tid()
        } else {
            (0, 0)
        });
    }
    let self_pid = rd!(ENGINE_SELF_PID);
    let filter = rd!(ENGINE_FILTER_PIDS);
    if self_pid == 0 && filter == 0 && rd!(plan.needs_ids) == 0 {
        return Some((0, 0));
    }
    let (pid, tid) = current_pid_tid();
    selected(pid, self_pid, filter, &ENGINE_TARGETS).then_some((pid, tid))
}

/// Sends the event to userspace as a [`TraceRecord`]; a full ring buffer is counted.
#[inline(always)]
fn emit(scratch: *mut Scratch, pid: u32, tid: u32, event: u32) {
    let Some(mut entry) = ENGINE_TRACE.reserve::<TraceRecord>(0) else {
        bump(stat::TRACE_LOST);
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
    }
    entry.submit(0);
}

/// The correlation key of an event.
#[inline(always)]
fn corr_key(plan: &'static Plan, scratch: *mut Scratch) -> CorrKey {
    let mut key = CorrKey { words: [0; 2] };
    let n = rd!(plan.n_corr_parts) as usize;
    let mut i = 0;
    while i < 2 && i < n {
        key.words[i] = int(scratch, rd!(plan.corr_parts[i]) as usize);
        i += 1;
    }
    key
}

/// A main-plan event from the program attached at `event`: find its start if it needs
/// one, filter, aggregate.
#[inline(always)]
fn run_main<S: Source>(source: &S, scratch: *mut Scratch, event: u32) -> Option<()> {
    let plan = &ENGINE_PLAN;
    let (pid, tid) = task_ids(plan)?;
    let mut started = Started {
        latency_ns: 0,
        saved: [0; 4],
    };
    read_operands(plan, source, scratch, pid, tid, event, started)?;
    if rd!(plan.key_set_used) != 0 {
        let first = (rd!(plan.key_parts[0]) as usize) & (MAX_OPERANDS - 1);
        if !row_wanted(plan, int(scratch, first)) {
            return None;
        }
    }
    let filter_first = rd!(plan.filter_first) != 0;
    if filter_first && !filter(plan, scratch) {
        bump(stat::FILTERED);
        return None;
    }
    if rd!(plan.needs_start) != 0 {
        let key = corr_key(plan, scratch);
        // SAFETY: the value is copied out before the entry is removed.
        let Some(start) = (unsafe { ENGINE_STARTS.get(&key) }).copied() else {
            bump(stat::NO_START);
            return None;
        };
        let _ = ENGINE_STARTS.remove(&key);
        bump(stat::STARTS_ENDED);
        // SAFETY: plain helper call.
        let now = unsafe { bpf_ktime_get_ns() };
        started = Started {
            latency_ns: now.saturating_sub(start.ts_ns),
            saved: start.saved,
        };
        // Operands that depend on the start are filled in now.
        let n = rd!(plan.n_operands) as usize;
        for i in 0..MAX_OPERANDS {
            if i >= n {
                break;
            }
            // SAFETY: this CPU's scratch; i < MAX_OPERANDS.
            match rd!(plan.operands[i].kind) {
                operand::LATENCY => unsafe { (*scratch).ints[i] = started.latency_ns },
                operand::SAVED => {
                    let slot = (rd!(plan.operands[i].offset) & 3) as usize;
                    // SAFETY: this CPU's scratch; i < MAX_OPERANDS.
                    unsafe { (*scratch).ints[i] = started.saved[slot] }
                }
                _ => {}
            }
        }
    }
    if !filter_first && !filter(plan, scratch) {
        bump(stat::FILTERED);
        return None;
    }
    if rd!(plan.announce) != 0 && pid != 0 && !announce(pid, &ENGINE_KNOWN, &ENGINE_ANNOUNCE) {
        bump(stat::ANNOUNCE_LOST);
    }
    if rd!(plan.agg) == agg::TRACE {
        emit(scratch, pid, tid, event);
    } else {
        aggregate(plan, scratch);
    }
    Some(())
}

/// A start-plan event: filter, then remember when it happened.
#[inline(always)]
fn run_start<S: Source>(source: &S, scratch: *mut Scratch, event: u32) -> Option<()> {
    let plan = &ENGINE_START_PLAN;
    let (pid, tid) = task_ids(plan)?;
    let none = Started {
        latency_ns: 0,
        saved: [0; 4],
    };
    read_operands(plan, source, scratch, pid, tid, event, none)?;
    if !filter(plan, scratch) {
        return None;
    }
    let mut saved = [0u64; 4];
    let mut i = 0;
    while i < 4 {
        let save = rd!(plan.saves[i]);
        if save != NO_OPERAND {
            saved[i] = int(scratch, save as usize);
        }
        i += 1;
    }
    if rd!(plan.announce) != 0 && pid != 0 && !announce(pid, &ENGINE_KNOWN, &ENGINE_ANNOUNCE) {
        bump(stat::ANNOUNCE_LOST);
    }
    // SAFETY: plain helper call.
    let start = StartValue {
        ts_ns: unsafe { bpf_ktime_get_ns() },
        saved,
    };
    if ENGINE_STARTS
        .insert(&corr_key(plan, scratch), &start, 0)
        .is_err()
    {
        bump(stat::START_MAP_FULL);
    } else {
        bump(stat::STARTS);
    }
    Some(())
}

/// The shared body of the start stage's tracepoint programs.
#[inline(never)]
fn tracepoint_start(ctx: &TracePointContext, event: u32) -> u32 {
    if let Some(scratch) = ENGINE_SCRATCH.get_ptr_mut(0) {
        let _ = run_start(ctx, scratch, event);
    }
    0
}

/// Start-stage entry points, one per tracepoint (`runqlat` starts at wakeups and at
/// preemption); the start plan sees which one fired as the event index.
#[tracepoint]
pub fn engine_tp_start(ctx: TracePointContext) -> u32 {
    tracepoint_start(&ctx, 0)
}

#[tracepoint]
pub fn engine_tp_start_1(ctx: TracePointContext) -> u32 {
    tracepoint_start(&ctx, 1)
}

#[tracepoint]
pub fn engine_tp_start_2(ctx: TracePointContext) -> u32 {
    tracepoint_start(&ctx, 2)
}

#[tracepoint]
pub fn engine_tp_start_3(ctx: TracePointContext) -> u32 {
    tracepoint_start(&ctx, 3)
}

/// The shared body of the `engine_tp_N` programs (a BPF subprogram: one copy of the code).
#[inline(never)]
fn tracepoint_main(ctx: &TracePointContext, event: u32) -> u32 {
    if let Some(scratch) = ENGINE_SCRATCH.get_ptr_mut(0) {
        let _ = run_main(ctx, scratch, event);
    }
    0
}

/// One entry point per tracepoint of the stage, so the program knows which one fired.
macro_rules! tracepoint_programs {
    ($($name:ident = $index:literal),* $(,)?) => {
        $(
            #[tracepoint]
            pub fn $name(ctx: TracePointContext) -> u32 {
                tracepoint_main(&ctx, $index)
            }
        )*
    };
}

tracepoint_programs!(
    engine_tp_0 = 0,
    engine_tp_1 = 1,
    engine_tp_2 = 2,
    engine_tp_3 = 3,
    engine_tp_4 = 4,
    engine_tp_5 = 5,
    engine_tp_6 = 6,
    engine_tp_7 = 7,
    engine_tp_8 = 8,
    engine_tp_9 = 9,
    engine_tp_10 = 10,
    engine_tp_11 = 11,
    engine_tp_12 = 12,
    engine_tp_13 = 13,
    engine_tp_14 = 14,
    engine_tp_15 = 15,
    engine_tp_16 = 16,
    engine_tp_17 = 17,
    engine_tp_18 = 18,
    engine_tp_19 = 19,
    engine_tp_20 = 20,
    engine_tp_21 = 21,
    engine_tp_22 = 22,
    engine_tp_23 = 23,
    engine_tp_24 = 24,
    engine_tp_25 = 25,
    engine_tp_26 = 26,
    engine_tp_27 = 27,
    engine_tp_28 = 28,
    engine_tp_29 = 29,
    engine_tp_30 = 30,
    engine_tp_31 = 31,
    engine_tp_32 = 32,
    engine_tp_33 = 33,
    engine_tp_34 = 34,
    engine_tp_35 = 35,
    engine_tp_36 = 36,
    engine_tp_37 = 37,
    engine_tp_38 = 38,
    engine_tp_39 = 39,
    engine_tp_40 = 40,
    engine_tp_41 = 41,
    engine_tp_42 = 42,
    engine_tp_43 = 43,
    engine_tp_44 = 44,
    engine_tp_45 = 45,
    engine_tp_46 = 46,
    engine_tp_47 = 47,
    engine_tp_48 = 48,
    engine_tp_49 = 49,
    engine_tp_50 = 50,
    engine_tp_51 = 51,
    engine_tp_52 = 52,
    engine_tp_53 = 53,
    engine_tp_54 = 54,
    engine_tp_55 = 55,
    engine_tp_56 = 56,
    engine_tp_57 = 57,
    engine_tp_58 = 58,
    engine_tp_59 = 59,
    engine_tp_60 = 60,
    engine_tp_61 = 61,
    engine_tp_62 = 62,
    engine_tp_63 = 63,
);

/// Runs the main (`start == false`) or start plan for a context without a record, after
/// `load` put its arguments into the scratch.
#[inline(always)]
fn run(ctx: *mut c_void, start: bool, event: u32, load: impl FnOnce(*mut Scratch, u32)) {
    let Some(scratch) = ENGINE_SCRATCH.get_ptr_mut(0) else {
        return;
    };
    let plan = if start {
        &ENGINE_START_PLAN
    } else {
        &ENGINE_PLAN
    };
    load(scratch, rd!(plan.raw_args));
    let source = NoRecord(ctx);
    if start {
        let _ = run_start(&source, scratch, event);
    } else {
        let _ = run_main(&source, scratch, event);
    }
}

#[raw_tracepoint]
pub fn engine_raw_tp(ctx: RawTracePointContext) -> i32 {
    run(ctx.as_ptr(), false, 0, |s, n| {
        load_args!(s, n, |i| ctx.arg::<u64>(i))
    });
    0
}

/// The interpreter's fast path for the plainest plan, `syscount` without options: count by
/// raw tracepoint argument 1 (the syscall number of `sys_enter`) in the per-CPU array, no
/// filter, no value. Same cells as [`engine_raw_tp`] writes; the loader picks this program
/// only for plans where the two agree (`fast_count_arg1` in userspace/src/engine.rs).
#[raw_tracepoint]
pub fn engine_raw_tp_count_arg1(ctx: RawTracePointContext) -> i32 {
    let plan = &ENGINE_PLAN;
    if task_ids(plan).is_none() {
        return 0;
    }
    // The loader attaches this program to raw tracepoints with two arguments.
    let key: u64 = ctx.arg(1);
    if !row_wanted(plan, key) {
        return 0;
    }
    let row = key.min(u64::from(rd!(plan.array_key_bound))) as u32;
    if let Some(entry) = ENGINE_ARRAY.get_ptr_mut(row) {
        // SAFETY: this CPU's slot of a per-CPU array.
        unsafe { (*entry).count += 1 };
    }
    0
}

#[raw_tracepoint]
pub fn engine_raw_tp_start(ctx: RawTracePointContext) -> i32 {
    run(ctx.as_ptr(), true, 0, |s, n| {
        load_args!(s, n, |i| ctx.arg::<u64>(i))
    });
    0
}

/// Kernel function entry (kprobe): arguments from the registers.
#[kprobe]
pub fn engine_kprobe(ctx: ProbeContext) -> u32 {
    run(ctx.as_ptr(), false, 0, |s, n| {
        load_args!(s, n, |i| ctx.arg::<u64>(i).unwrap_or(0))
    });
    0
}

#[kprobe]
pub fn engine_kprobe_start(ctx: ProbeContext) -> u32 {
    run(ctx.as_ptr(), true, 0, |s, n| {
        load_args!(s, n, |i| ctx.arg::<u64>(i).unwrap_or(0))
    });
    0
}

/// Kernel function return (kretprobe): the return value.
#[kretprobe]
pub fn engine_kretprobe(ctx: RetProbeContext) -> u32 {
    run(ctx.as_ptr(), false, 0, |s, _| {
        // SAFETY: this CPU's scratch.
        unsafe { (*s).args[RET] = ctx.ret::<u64>() }
    });
    0
}

/// User function entry (uprobe); the attach cookie says which function.
#[uprobe]
pub fn engine_uprobe(ctx: ProbeContext) -> u32 {
    // SAFETY: plain helper call.
    let event = unsafe { bpf_get_attach_cookie(ctx.as_ptr()) } as u32;
    run(ctx.as_ptr(), false, event, |s, n| {
        load_args!(s, n, |i| ctx.arg::<u64>(i).unwrap_or(0))
    });
    0
}

#[uprobe]
pub fn engine_uprobe_start(ctx: ProbeContext) -> u32 {
    // SAFETY: plain helper call.
    let event = unsafe { bpf_get_attach_cookie(ctx.as_ptr()) } as u32;
    run(ctx.as_ptr(), true, event, |s, n| {
        load_args!(s, n, |i| ctx.arg::<u64>(i).unwrap_or(0))
    });
    0
}

/// User function return (uretprobe).
#[uretprobe]
pub fn engine_uretprobe(ctx: RetProbeContext) -> u32 {
    // SAFETY: plain helper call.
    let event = unsafe { bpf_get_attach_cookie(ctx.as_ptr()) } as u32;
    run(ctx.as_ptr(), false, event, |s, _| {
        // SAFETY: this CPU's scratch.
        unsafe { (*s).args[RET] = ctx.ret::<u64>() }
    });
    0
}

/// Kernel function entry through a BPF trampoline (fentry).
#[fentry]
pub fn engine_fentry(ctx: FEntryContext) -> u32 {
    run(ctx.as_ptr(), false, 0, |s, n| {
        load_args!(s, n, |i| ctx.arg::<u64>(i))
    });
    0
}

#[fentry]
pub fn engine_fentry_start(ctx: FEntryContext) -> u32 {
    run(ctx.as_ptr(), true, 0, |s, n| {
        load_args!(s, n, |i| ctx.arg::<u64>(i))
    });
    0
}

/// Kernel function return through a BPF trampoline (fexit): arguments and return value.
#[fexit]
pub fn engine_fexit(ctx: FExitContext) -> u32 {
    run(ctx.as_ptr(), false, 0, |s, n| {
        load_args!(s, n, |i| ctx.arg::<u64>(i));
        // SAFETY: this CPU's scratch.
        unsafe { (*s).args[RET] = ctx.ret::<u64>().unwrap_or(0) }
    });
    0
}

/// A perf event (software events: page faults, context switches, ...).
#[perf_event]
pub fn engine_perf_event(ctx: PerfEventContext) -> u32 {
    run(ctx.as_ptr(), false, 0, |_, _| {});
    0
}

/// `sched:sched_process_exec`: the process's memory map is replaced, so it is announced
/// again at its next event. With `-p` / `-- CMD`, a selected process is announced right
/// away, so its memory map is read (and its unwind tables loading) before its first events:
/// a command that makes its events and exits at once would be gone before an announcement
/// made by its first event were read (as `profile_sched_exec` does).
#[tracepoint]
pub fn engine_sched_exec(_ctx: TracePointContext) -> u32 {
    let (pid, _) = current_pid_tid();
    let _ = ENGINE_KNOWN.remove(pid);
    if rd!(ENGINE_FILTER_PIDS) != 0
        && selected(pid, rd!(ENGINE_SELF_PID), 1, &ENGINE_TARGETS)
        && !announce(pid, &ENGINE_KNOWN, &ENGINE_ANNOUNCE)
    {
        bump(stat::ANNOUNCE_LOST);
    }
    0
}

/// `syscalls:sys_enter_mmap`: new executable code means a new memory map to read.
#[tracepoint]
pub fn engine_mmap_exec(ctx: TracePointContext) -> u32 {
    forget_on_exec_mmap(&ctx, rd!(ENGINE_MMAP_PROT_OFFSET), &ENGINE_KNOWN);
    0
}

/// `sched:sched_process_fork`, for `-- CMD`: children of a traced process are traced.
#[tracepoint]
pub fn engine_sched_fork(ctx: TracePointContext) -> u32 {
    follow_fork(&ctx, rd!(ENGINE_FORK_CHILD_PID_OFFSET), &ENGINE_TARGETS);
    0
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
#[tracepoint]
pub fn engine_start_exit(_ctx: TracePointContext) -> u32 {
    let (_, tid) = current_pid_tid();
    if ENGINE_STARTS.remove(&thread_start(tid)).is_ok() {
        bump(stat::STARTS_EXITED);
    }
    0
}

/// `sched:sched_process_fork`, attached when starts are kept per thread: a new thread that
/// reuses a dead thread's id must not find that thread's start.
#[tracepoint]
pub fn engine_start_fork(ctx: TracePointContext) -> u32 {
    let offset = rd!(ENGINE_FORK_CHILD_PID_OFFSET) as usize;
    // SAFETY: the offset comes from the event's format file; read_at checks the access.
    if let Ok(child) = unsafe { ctx.read_at::<i32>(offset) }
        && ENGINE_STARTS.remove(&thread_start(child as u32)).is_ok()
    {
        bump(stat::STARTS_EXITED);
    }
    0
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 4] = *b"GPL\0";

/// An empty program, for benchmarks: attached to a hook it measures the hook's own cost,
/// the floor every program on that hook pays.
#[raw_tracepoint]
pub fn engine_empty(_ctx: RawTracePointContext) -> i32 {
    0
}
