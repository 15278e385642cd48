//! Shared types of the generic aggregation engine (`ebpf/src/bin/engine.rs`).
//!
//! The loader compiles a command line (probe, `--value`, `--by`, `--filter`, aggregation)
//! into a [`Plan`] and writes it into the object's read-only data before loading. The
//! verifier then knows every plan field as a constant and prunes the code paths the plan does
//! not use, so a plain counter costs what a hand-written counter costs.
//!
//! One object holds one main plan (`ENGINE_PLAN`) and optionally one start plan
//! (`ENGINE_START_PLAN`): a start probe stores a timestamp (and one saved value) under a
//! correlation key; the main probe finds it again to compute a latency (block I/O issue to
//! completion, syscall entry to exit, function entry to return).
//!
//! Values are computed from up to [`MAX_OPERANDS`] [`Operand`]s: tracepoint record fields,
//! raw tracepoint arguments, and built-ins (pid, tid, cpu, comm, latency, ...). The filter is
//! a postfix program of [`Insn`]s over those operands evaluated on a stack of booleans held
//! in the bits of a `u64`.

/// Operands a plan may read (a power of two: indices are masked with it). 16: tcplife
/// reads 10 (two addresses, two ports, two byte counts through BTF, the saved pid, the
/// latency, the state and the socket); the verifier walks only the `n_operands` a plan has.
pub const MAX_OPERANDS: usize = 16;
/// Group-key parts (`--by`): as many as [`KEY_WORDS`], so a key of integers alone may fill
/// every word (tcptop: the probe, pid, comm, two addresses and two ports are 7).
pub const MAX_KEY_PARTS: usize = KEY_WORDS;
/// Filter instructions.
pub const MAX_INSNS: usize = 32;
/// String constants a filter may compare against.
pub const MAX_STR_CONSTS: usize = 4;
/// String operands a plan may read.
pub const MAX_STRINGS: usize = 4;
/// Bytes of a string operand that are compared and keyed (longer strings are cut).
pub const STR_BYTES: usize = 32;
/// 64-bit words of a group key: an integer part takes one, a string part four, raw bytes
/// as many as they fill ([`Operand::key_words`]: an IPv6 address two).
pub const KEY_WORDS: usize = 8;
/// Slots of a log2 histogram: slot `i` holds values in `[2^i, 2^(i+1))`, slot 0 also 0.
pub const LOG2_SLOTS: u32 = 64;
/// The log2 histogram slot of `value`: floor(log2(value)), with 0 and 1 both in slot 0
/// (libbpf-tools' `log2l`). The kernel program buckets with it and the renderers label with
/// [`log2_slot_bounds`], so the two cannot disagree.
#[inline(always)]
pub fn log2_slot(mut value: u64) -> u32 {
    let mut slot = 0;
    let mut shift = 32;
    while shift > 0 {
        if value >> shift != 0 {
            value >>= shift;
            slot += shift;
        }
        shift >>= 1;
    }
    slot
}

/// The values log2 slot `slot` holds, inclusive: `[2^slot, 2^(slot+1) - 1]`, and 0 in slot 0.
pub const fn log2_slot_bounds(slot: u32) -> (u64, u64) {
    let low = if slot == 0 { 0 } else { 1u64 << slot };
    let high = if slot >= 63 {
        u64::MAX
    } else {
        (1u64 << (slot + 1)) - 1
    };
    (low, high)
}

/// Words of [`Plan::key_set`]: rows 0..1024 (every x86_64 syscall number).
pub const KEY_SET_WORDS: usize = 16;
/// Rows [`Plan::key_set`] can hold; rows at or above it are outside any set.
pub const KEY_SET_BITS: u64 = 64 * KEY_SET_WORDS as u64;
/// Default sub-bucket bits of a log-linear histogram: 2^4 = 16 linear sub-buckets per power
/// of two, a bucket at most 1/16 (6.25%) of its low end wide.
pub const DEFAULT_PRECISION: u32 = 4;
/// Most sub-bucket bits `--precision` takes (128 sub-buckets, 0.8%; 7424 slots).
pub const MAX_PRECISION: u32 = 7;

/// Slots of a log-linear histogram with `precision` sub-bucket bits: values below
/// 2^precision each have a slot of their own, then each power of two up to 2^63 has
/// 2^precision: `(65 - precision) * 2^precision` (976 for the default 4).
pub const fn log_linear_slots(precision: u32) -> u32 {
    (65 - precision) << precision
}

/// The log-linear (HDR-style) slot of `value` with `precision` sub-bucket bits (at most
/// [`MAX_PRECISION`]): values below `2^precision` are their own slot; a larger value with
/// its highest bit at `e` goes to power-of-two group `e - precision + 1`, sub-bucket the
/// `precision` bits below its highest bit. Branch-free but for the small-value test: the
/// kernel program runs this on every event (`leading_zeros` compiles to a few ALU
/// instructions on BPF, which has no loop here for the verifier to walk).
#[inline(always)]
pub fn log_linear_slot(value: u64, precision: u32) -> u32 {
    let linear = 1u64 << precision;
    if value < linear {
        return value as u32;
    }
    let top = 63 - value.leading_zeros();
    let sub = ((value >> (top - precision)) as u32) & ((linear as u32) - 1);
    ((top - precision + 1) << precision) + sub
}

/// The values log-linear slot `slot` holds, inclusive: the inverse of [`log_linear_slot`].
/// Slots past the last (`log_linear_slots(precision)` and up) hold nothing; they are given
/// the last slot's bounds.
pub const fn log_linear_slot_bounds(slot: u32, precision: u32) -> (u64, u64) {
    let linear = 1u32 << precision;
    if slot < linear {
        return (slot as u64, slot as u64);
    }
    let last = log_linear_slots(precision) - 1;
    let slot = if slot > last { last } else { slot };
    let group = slot >> precision;
    let sub = (slot & (linear - 1)) as u64;
    // The highest bit of the group's values.
    let top = group + precision - 1;
    let width_shift = top - precision;
    let low = ((linear as u64) | sub) << width_shift;
    (low, low + ((1u64 << width_shift) - 1))
}

/// The log2 slot ([`log2_slot`]) that holds every value of log-linear slot `slot`: the
/// log-linear buckets nest in the powers of two, so a log-linear histogram folds into a
/// log2 one exactly.
pub const fn log_linear_to_log2(slot: u32, precision: u32) -> u32 {
    let (low, _) = log_linear_slot_bounds(slot, precision);
    if low == 0 {
        0
    } else {
        63 - low.leading_zeros()
    }
}

/// Largest linear histogram (buckets, plus one below and one above the range).
pub const MAX_LINEAR_SLOTS: u32 = 1002;
/// An operand index that means "none".
pub const NO_OPERAND: u32 = u32::MAX;

/// Default entries of the per-CPU group hash map.
pub const DEFAULT_HASH_ENTRIES: u32 = 10240;
/// Default entries of the start-timestamp map (requests or calls in flight).
pub const DEFAULT_START_ENTRIES: u32 = 10240;
/// How many processes `-p`/`-- CMD` may select (children of `-- CMD` included).
pub const MAX_TARGET_PIDS: u32 = 8192;
/// Tracepoint programs per engine object (`engine_tp_0` ...): one per attached tracepoint,
/// so the program knows which tracepoint fired.
pub const MAX_TRACEPOINTS: usize = 64;
/// Tracepoint programs for [`Plan::simple`] main stages (`engine_tp_simple_0` ...), each
/// with the simple path inlined; a simple plan on more tracepoints uses `engine_tp_N`.
pub const SIMPLE_TRACEPOINTS: usize = 4;
/// Tracepoint programs of the start stage (`engine_tp_start`, `engine_tp_start_1` ...).
pub const MAX_START_TRACEPOINTS: usize = 4;

/// What an [`Operand`] reads. `u32` values in [`Operand::kind`].
pub mod operand {
    /// Unused slot.
    pub const NONE: u32 = 0;
    /// Integer field of a tracepoint record: `offset`, `size` (1, 2, 4, 8), [`super::SIGNED`].
    pub const FIELD: u32 = 1;
    /// Fixed-size `char` array field of a tracepoint record: `offset`, `size`.
    pub const FIELD_STRING: u32 = 2;
    /// `__data_loc` string field: a `u32` at `offset`, low 16 bits the data's offset in the
    /// record, high 16 bits its length with its NUL. With [`super::LONG_STR`] read whole
    /// into the tail; else its first [`super::STR_BYTES`]` - 1` bytes, the last byte 1 when
    /// it is longer (a group key's mark).
    pub const FIELD_DATA_LOC: u32 = 3;
    /// Argument number `offset` of a raw tracepoint, `size` bytes wide.
    pub const ARG: u32 = 4;
    /// `size` bytes at `aux` bytes past the pointer in raw tracepoint argument `offset`
    /// (e.g. `regs->orig_ax` of `raw_syscalls:sys_exit`).
    pub const ARG_DEREF: u32 = 5;
    /// Process id (tgid).
    pub const PID: u32 = 6;
    /// Thread id.
    pub const TID: u32 = 7;
    /// CPU number.
    pub const CPU: u32 = 8;
    /// The current thread's `comm` (a string).
    pub const COMM: u32 = 9;
    /// Nanoseconds since the start probe fired for this event's correlation key.
    pub const LATENCY: u32 = 10;
    /// Value number `offset` (0..[`super::SAVED_WORDS`]) the start probe saved.
    pub const SAVED: u32 = 11;
    /// Which attachment fired: for tracepoints the index in the stage's attach list (the
    /// record's own `common_type` is overwritten before BPF runs), for uprobes the attach
    /// cookie, which the loader sets to the same index.
    pub const EVENT_INDEX: u32 = 12;
    /// The probed function's return value (return probes).
    pub const RETVAL: u32 = 13;
    /// The probed kernel function's address (`bpf_get_func_ip`), naming it among several.
    pub const FUNC_IP: u32 = 14;
    /// The kernel stack, stored in `ENGINE_STACKS` under this hash (0: none, 1: lost).
    pub const KERNEL_STACK: u32 = 15;
    /// The user stack, likewise.
    pub const USER_STACK: u32 = 16;
    /// `size` bytes of the register at byte `offset` of the probe's `struct pt_regs`
    /// (uprobes, kprobes; x86_64's uapi layout), [`super::SIGNED`] to sign-extend: USDT
    /// arguments in registers (`-4@%edi`).
    pub const REG: u32 = 17;
    /// `size` (1, 2, 4, 8) bytes of user memory at the register at `offset` of `pt_regs` plus
    /// `aux` (an `i32` displacement): USDT arguments in memory (`8@-16(%rbp)`). With the
    /// `rip` slot as the register, the address is relative to the probe's own address (a
    /// uprobe's handler sees `rip` at the probed instruction): RIP-relative USDT arguments
    /// (`8@counter(%rip)`), whose symbol the loader resolved to a distance from the probe.
    pub const USER_MEM: u32 = 18;
    /// The constant `offset | aux << 32`, narrowed to `size` bytes: USDT arguments the
    /// compiler knew (`4@$5`).
    pub const CONST: u32 = 19;
    /// The current task's cgroup v2 id (`bpf_get_current_cgroup_id()`, Linux 4.18+): the
    /// inode number of its cgroup's directory in the cgroup2 filesystem.
    pub const CGROUP: u32 = 20;
    /// `size` bytes of user memory at register `offset` + (register `index_offset` <<
    /// `index_shift`) + `aux` (an `i32`), registers as in [`USER_MEM`]: USDT arguments in
    /// scale-index-base form (`-4@-8(%rbp,%rax,4)`, array elements).
    pub const USER_MEM_INDEXED: u32 = 21;

    // Network addresses and BTF paths.
    /// `size` (at most [`super::STR_BYTES`]) raw bytes of the tracepoint record at `offset`,
    /// copied as they are (NULs included) into the operand's string slot: byte arrays such
    /// as `__u8 saddr_v6[16]`, shown as addresses.
    pub const FIELD_BYTES: u32 = 40;
    /// `size` bytes (1, 2, 4, 8; [`super::SIGNED`]) reached from the current task (`struct
    /// task_struct *`) through [`super::Operand::path`]: `aux` offsets, every one but the
    /// last followed as a pointer, the last one where the value is (`task->real_parent->tgid`:
    /// the offset of `real_parent`, then of `tgid`). Offsets come from the running kernel's
    /// BTF at load time. A NULL pointer on the way is a read error.
    pub const TASK_PATH: u32 = 41;
    /// The same from the pointer in the 8-byte tracepoint record field at `offset`
    /// (`skaddr` of `sock:inet_sock_set_state` as a `struct tcp_sock *`).
    pub const FIELD_PATH: u32 = 42;
    // Strings through pointers.
    /// A NUL-terminated string in user memory (`bpf_probe_read_user_str`), at most
    /// [`super::STR_BYTES`] bytes (longer ones are cut): the pointer is the 8-byte record
    /// field at `offset` (the `const char *` fields of `syscalls:*`); with `flags`
    /// [`super::PTR_ARRAY`] that field points to an array of pointers and element `aux` is
    /// the string's (`argv[1]`).
    pub const USER_STR: u32 = 43;
    /// Likewise in kernel memory (`bpf_probe_read_kernel_str`): `const char *` fields of
    /// other tracepoints.
    pub const KERNEL_STR: u32 = 44;
    /// The string the start stage saved: its [`super::STR_BYTES`] bytes fill the first four
    /// saved words (`size` 16 or less: the first two), numbers the others.
    pub const SAVED_STR: u32 = 45;
    // `--by comm` without the string on the hot path.
    /// The current thread's name as a number: `tid | generation << 32`, the generation
    /// from `ENGINE_TASK_GENS` (0 until the thread is first renamed or exits, see
    /// [`super::TASK_NAMES_ENTRIES`]); the idle task (tid 0) is [`super::IDLE_TASK`] `|
    /// cpu`. Userspace shows it as the comm the thread had in that generation.
    pub const TASK: u32 = 46;
    // Access patterns (biopattern).
    /// Whether the event continues its stream: 1 when operand `aux`'s value (a position,
    /// such as `sector`) equals where the previous event of the same stream ended (that
    /// event's position plus its operand `index_offset`, a length such as `nr_sector`),
    /// 0 when it does not, 2 for a stream's first event. The stream is operand `offset`'s
    /// value (`dev`); operands `offset`, `aux` and `index_offset` come before this one. Each
    /// stream's end is kept in `ENGINE_FOLLOWS` ([`super::FOLLOWS_ENTRIES`] streams; a
    /// stream that does not fit is counted in [`super::stat::READ_ERRORS`] and its events
    /// are first ones).
    pub const FOLLOWS: u32 = 60;
    // Descriptors.
    /// [`FIELD_PATH`]'s path from the `struct file *` the current task has open at the
    /// descriptor in the 8-byte signed record field at `offset` (`ret` of
    /// `syscalls:sys_exit_accept4`; with [`super::FD_INT32`], a 4-byte `int`: `res` of
    /// `io_uring:io_uring_complete`): `task->files->fdt->fd[FD]`. The walk's offsets come
    /// from BTF, two `u16` to a word: `index_offset` is `files | fdt << 16` (`task_struct`,
    /// `files_struct`), `index_shift` is `fd | max_fds << 16` (`fdtable`). A negative
    /// descriptor, one at or past `max_fds` or one with no file reads as 0 (no error): a
    /// failed `accept` is no read error.
    pub const FD_PATH: u32 = 70;
    // Paths from a function's parameters, and strings at their end.
    /// [`TASK_PATH`]'s read from the pointer in probe argument `offset` (a kernel function's
    /// parameter: `iocb->ki_filp->f_pos`), any depth up to [`super::MAX_PATH`] offsets
    /// ([`ARG_DEREF`] is one deep).
    pub const ARG_PATH: u32 = 72;
    /// A string at the end of a path: the path's last value is a `char *` (read as 8 bytes)
    /// and the NUL-terminated kernel string it points to, at most `size` bytes
    /// ([`super::STR_BYTES`] or fewer), goes into the operand's string slot
    /// (`iocb->ki_filp->f_path.dentry->d_name.name`). The path starts as `index_offset`
    /// says: [`TASK_PATH`] (the current task), [`FIELD_PATH`] (the record's pointer field
    /// at `offset`) or [`ARG_PATH`] (probe argument `offset`); `aux` offsets in
    /// [`super::Operand::path`]. A NULL pointer on the way is a read error; a string that
    /// cannot be read is empty.
    pub const PATH_STR: u32 = 73;
    /// A NUL-terminated string in user memory at the pointer the start stage saved as its
    /// number `offset` (`syscalls:sys_enter_openat`'s `filename`): read at the end event,
    /// when the kernel has faulted the page in (a path in a page not touched yet reads at
    /// the syscall's entry as nothing).
    pub const SAVED_USER_STR: u32 = 74;
    /// The directory at the descriptor that is operand `aux`'s value, by the kernel's
    /// dentries: [`super::DentryWalk`] says how (operand `aux` a start's saved value with
    /// [`super::AFTER_START`]).
    pub const DIR_PATH: u32 = 75;
}

/// [`operand::TASK`] of the idle task on a CPU (its tid is 0 on every CPU; its comm is
/// `swapper/CPU`): this bit with the CPU number.
pub const IDLE_TASK: u64 = 1 << 63;

/// Entries of `ENGINE_TASK_NAMES` (the comm each `tid | generation << 32` ended with, at a
/// rename, an exec or an exit) and of `ENGINE_TASK_GENS` (each renamed or exited thread's
/// current generation) when a plan keys by [`operand::TASK`]. Names that do not fit are
/// counted in [`stat::NAMES_LOST`].
pub const TASK_NAMES_ENTRIES: u32 = 65536;

/// Streams whose end [`operand::FOLLOWS`] keeps (disks for `biopattern`); the loader gives
/// `ENGINE_FOLLOWS` one entry when no plan reads it.
pub const FOLLOWS_ENTRIES: u32 = 4096;

/// Offsets of a path ([`operand::TASK_PATH`]): at most 3 pointers followed.
pub const MAX_PATH: usize = 4;

/// [`Operand::flags`] bit: the integer is signed (sign-extended from `size`).
pub const SIGNED: u32 = 1;
/// [`Operand::flags`] bit of [`operand::USER_STR`]/[`operand::KERNEL_STR`]: the field
/// points to an array of string pointers; the string is element `aux`.
pub const PTR_ARRAY: u32 = 2;
/// [`Operand::flags`] bit of [`operand::USER_STR`]/[`operand::KERNEL_STR`]: the pointer is
/// probe argument `offset` (7: the return value), not a record field (`str(arg1)`,
/// `str(retval)` of function probes).
pub const PTR_FROM_ARG: u32 = 4;
/// [`Operand::flags`] bit of [`operand::FD_PATH`]: the descriptor field at `offset` is a
/// 4-byte `int` (`res` of `io_uring:io_uring_complete`), sign-extended, not 8 bytes.
pub const FD_INT32: u32 = 16;
/// [`Operand::flags`] bit of the path operands ([`operand::TASK_PATH`],
/// [`operand::FIELD_PATH`], [`operand::FD_PATH`]): the value is `size` (at most
/// [`STR_BYTES`]) raw bytes at the path's end, copied into the operand's string slot
/// (`skc_v6_daddr`, a `struct in6_addr`).
pub const PATH_BYTES: u32 = 8;

mod dentry;
pub use dentry::{AFTER_START, DIR_DEPTH, DentryWalk, NAME_BYTES, STR_DIR};
mod strings;
pub use strings::{
    ALL_STRINGS, LONG_HEAD, LONG_STR, MAX_ARGS, STR_CUT, STR_IN_TAIL, STR_MAX, STR_MORE,
    STR_UNREADABLE, TAIL_BYTES, TraceOut, TraceRecord,
};

/// Words a start stage saves ([`StartValue::saved`]): a string of [`STR_BYTES`] in the first
/// four and two numbers beside it (fsslower's whole file name and its offset), a comm and
/// four numbers, or six numbers.
pub const SAVED_WORDS: usize = 6;

// A start stage saves a string in the first four words of [`StartValue::saved`].
const _: () = assert!(STR_BYTES == 4 * 8 && SAVED_WORDS >= 4);

/// One value a plan reads.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operand {
    /// One of [`operand`]'s constants.
    pub kind: u32,
    /// Record offset, or argument number.
    pub offset: u32,
    /// Width in bytes (strings: bytes to read, at most [`STR_BYTES`]).
    pub size: u32,
    /// [`SIGNED`] or 0.
    pub flags: u32,
    /// Extra offset (for [`operand::ARG_DEREF`]).
    pub aux: u32,
    /// For string operands: which of the [`MAX_STRINGS`] string buffers holds it.
    pub string_slot: u32,
    /// For [`operand::USER_MEM_INDEXED`]: the index register's byte offset in `pt_regs`.
    pub index_offset: u32,
    /// For [`operand::USER_MEM_INDEXED`]: log2 of the scale (0..=3 for 1, 2, 4, 8).
    pub index_shift: u32,
    /// For [`operand::TASK_PATH`], [`operand::FIELD_PATH`], [`operand::ARG_PATH`] and
    /// [`operand::PATH_STR`]: byte offsets, `aux` of them.
    pub path: [u32; MAX_PATH],
}

impl Operand {
    /// The unused operand.
    pub const NONE: Operand = Operand {
        kind: operand::NONE,
        offset: 0,
        size: 0,
        flags: 0,
        aux: 0,
        string_slot: 0,
        index_offset: 0,
        index_shift: 0,
        path: [0; MAX_PATH],
    };

    /// Whether the operand is raw bytes of a known size ([`operand::FIELD_BYTES`], a path
    /// with [`PATH_BYTES`]): an address, not a NUL-terminated string.
    pub const fn is_raw_bytes(&self) -> bool {
        self.kind == operand::FIELD_BYTES
            || (matches!(
                self.kind,
                operand::TASK_PATH | operand::FIELD_PATH | operand::FD_PATH
            ) && self.flags & PATH_BYTES != 0)
    }

    /// The 64-bit words this operand takes in a group key ([`AggKey::words`]): an integer
    /// 1, raw bytes as many as their `size` fills (an IPv6 address 2, at most 4), any other
    /// string [`STR_BYTES`]` / 8` (4). The kernel packs keys and userspace unpacks them by
    /// this one rule.
    pub const fn key_words(&self) -> usize {
        if self.is_raw_bytes() {
            let size = if self.size == 0 || self.size as usize > STR_BYTES {
                STR_BYTES
            } else {
                self.size as usize
            };
            size.div_ceil(8)
        } else if self.is_string() {
            STR_BYTES / 8
        } else {
            1
        }
    }

    /// Whether the operand is a string.
    pub const fn is_string(&self) -> bool {
        matches!(
            self.kind,
            operand::FIELD_STRING
                | operand::FIELD_DATA_LOC
                | operand::COMM
                | operand::FIELD_BYTES
                | operand::USER_STR
                | operand::KERNEL_STR
                | operand::SAVED_STR
                | operand::PATH_STR
                | operand::SAVED_USER_STR
                | operand::DIR_PATH
        ) || (matches!(
            self.kind,
            operand::TASK_PATH | operand::FIELD_PATH | operand::FD_PATH
        ) && self.flags & PATH_BYTES != 0)
    }
}

/// Filter instruction opcodes, `u32` values in [`Insn::op`].
pub mod op {
    /// Pops b, a; pushes a && b.
    pub const AND: u32 = 1;
    /// Pops b, a; pushes a || b.
    pub const OR: u32 = 2;
    /// Pops a; pushes !a.
    pub const NOT: u32 = 3;
    /// Pushes `operand == arg` (and so on; `S` variants compare as signed).
    pub const EQ: u32 = 10;
    pub const NE: u32 = 11;
    pub const LT: u32 = 12;
    pub const LE: u32 = 13;
    pub const GT: u32 = 14;
    pub const GE: u32 = 15;
    pub const SLT: u32 = 16;
    pub const SLE: u32 = 17;
    pub const SGT: u32 = 18;
    pub const SGE: u32 = 19;
    /// Pushes `operand & arg != 0`.
    pub const BITAND: u32 = 20;
    /// Pushes whether the string operand equals string constant `arg`.
    pub const STR_EQ: u32 = 30;
    /// Pushes whether the string operand starts with constant `arg` (`"abc*"`).
    pub const STR_PREFIX: u32 = 31;
    /// Pushes whether the string operand ends with constant `arg` (`"*abc"`).
    pub const STR_SUFFIX: u32 = 32;
    /// Pushes whether the string operand contains constant `arg` (`"*abc*"`).
    pub const STR_CONTAINS: u32 = 33;
}

/// One filter instruction.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    /// One of [`op`]'s constants.
    pub op: u32,
    /// The operand compared (comparisons only).
    pub operand: u32,
    /// The constant compared with, or the string constant's index.
    pub arg: u64,
}

impl Insn {
    /// The unused instruction.
    pub const NONE: Insn = Insn {
        op: 0,
        operand: 0,
        arg: 0,
    };
}

/// How events are aggregated, `u32` values in [`Plan::agg`].
pub mod agg {
    /// Count events (the value's sum is kept too when there is a value).
    pub const COUNT: u32 = 0;
    /// Log2 histogram of the value.
    pub const LOG2: u32 = 1;
    /// Linear histogram of the value: slot 0 below `linear_min`, slot `slots - 1` above.
    pub const LINEAR: u32 = 2;
    /// No aggregation: each event goes to userspace as a [`super::TraceRecord`].
    pub const TRACE: u32 = 3;
    /// Log-linear (HDR-style) histogram of the value, [`super::Plan::precision`] sub-bucket
    /// bits: [`super::log_linear_slot`].
    pub const LOG_LINEAR: u32 = 4;
    /// No aggregation: each allocation event stores `address -> (size, stack, time)` in
    /// `ENGINE_OUTSTANDING` ([`super::Outstanding`]); the events in
    /// [`super::Plan::release_events`] delete their address from it (`memleak`). Key part 0
    /// is the address, key part 1 the stack, the size is [`super::Plan::alloc_size`].
    pub const OUTSTANDING: u32 = 5;
}

pub use crate::outstanding::{
    DEFAULT_OUTSTANDING_ENTRIES, MAX_ALLOC_EVENTS, Outstanding, RELEASE_SAME_PROCESS, size_rule,
};

/// Where aggregates live, `u32` values in [`Plan::layout`].
pub mod layout {
    /// Per-CPU array indexed by `min(key, array_key_bound) * slots + slot`: the key is at
    /// most one small integer (a syscall id, a histogram slot). No hashing on the hot path.
    pub const ARRAY: u32 = 0;
    /// Per-CPU hash keyed by [`super::AggKey`].
    pub const HASH: u32 = 1;
}

/// A compiled command line. See the module documentation.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The values read, by index.
    pub operands: [Operand; MAX_OPERANDS],
    /// The filter, postfix; an empty filter passes every event.
    pub insns: [Insn; MAX_INSNS],
    /// String constants, NUL-padded.
    pub str_consts: [[u8; STR_BYTES]; MAX_STR_CONSTS],
    /// Their lengths.
    pub str_lens: [u32; MAX_STR_CONSTS],
    /// Operand indices of the group key parts, in order.
    pub key_parts: [u32; MAX_KEY_PARTS],
    /// Operand indices of the correlation key (start and main plans must agree).
    pub corr_parts: [u32; 2],
    /// Start plans: the operands saved with the timestamp, read back by the main plan as
    /// [`operand::SAVED`] number 0..[`SAVED_WORDS`]; [`NO_OPERAND`] where unused. A string
    /// takes words 0..3 (a comm, or one of at most 16 bytes, 0..1), numbers the rest.
    pub saves: [u32; SAVED_WORDS],
    /// Used entries of `operands`, `insns`, `key_parts`, `corr_parts`.
    pub n_operands: u32,
    pub n_insns: u32,
    pub n_key_parts: u32,
    pub n_corr_parts: u32,
    /// The operand aggregated (histogram value, summed value), or [`NO_OPERAND`].
    pub value: u32,
    /// Main plans: 1 if events need a start (latency, saved value), else 0.
    pub needs_start: u32,
    /// One of [`agg`]'s constants.
    pub agg: u32,
    /// One of [`layout`]'s constants.
    pub layout: u32,
    /// Array layout: key values at or above this share the last row.
    pub array_key_bound: u32,
    /// Histogram slots per group (1 when counting).
    pub slots: u32,
    /// Raw tracepoint arguments the plan reads (highest index + 1): only these are loaded,
    /// as attaching checks the program reads no more arguments than the tracepoint has.
    pub raw_args: u32,
    /// 1 if the plan reads the pid or tid (operands, correlation); with no pid filter and
    /// no self-exclusion, the program then skips `bpf_get_current_pid_tgid()`.
    pub needs_ids: u32,
    /// 1: announce each traced process once (ring buffer `ENGINE_ANNOUNCE`), so userspace
    /// can cache its memory map for symbolizing user stacks after it exits.
    pub announce: u32,
    /// 1: this plan's events happen in another task's context (the main stage of
    /// `sched_switch` runs as the task leaving): no pid filter, no self-exclusion; the start
    /// stage selects.
    pub all_tasks: u32,
    /// Main plans with a start: 1 when the filter reads nothing from the start (no latency,
    /// no saved value), so it runs before the start is looked up and events it drops are not
    /// counted as missing their start (`runqlat`'s switches to the idle task).
    pub filter_first: u32,
    /// Start plans: 1 when the correlation key is one thread id, so the start of a thread
    /// that exits is dropped (`sched:sched_process_exit`) and a new thread reusing its id
    /// never inherits one (`sched:sched_process_fork`).
    pub by_thread: u32,
    /// Log-linear histograms: sub-bucket bits (`--precision`, 0..=[`MAX_PRECISION`]).
    pub precision: u32,
    /// 1: the loader found the plan simple enough for `engine::simple` in the kernel, which
    /// computes it without the interpreter (integers at hand, at most one comparison; see
    /// `fast_simple` in userspace/src/engine/plan.rs); 0: the interpreter runs it.
    pub simple: u32,
    /// 1: a [`Plan::simple`] plan with the hash layout counts each group in its CPU's
    /// [`CacheCell`] of `ENGINE_CACHE` first (a direct-mapped cell the group owns for the whole
    /// load), and in the group hash only when another group owns that cell: no hashing of the
    /// [`AggKey`] on the hot path. Userspace adds cells and hash entries up.
    pub group_cache: u32,
    /// Main plans with a start: 1 to read the start without removing it, so it stays the
    /// last value per correlation key that any number of end events read until the next
    /// begin event replaces it (`cpufreq`: a CPU's frequency, set by `power:cpu_frequency`,
    /// read by each sample); 0: an end event takes its start away (latencies).
    pub keep_start: u32,
    /// Linear histograms: the first bucket's low end, and the bucket width.
    pub linear_min: i64,
    pub linear_step: u64,
    /// The value is divided by this before it picks a histogram slot (ns to us: 1000);
    /// sums stay undivided.
    pub value_div: u64,
    /// With [`Plan::key_set_used`]: the values of the first key part (rows) the command
    /// asked for, bit `row % 64` of word `row / 64`. An event of another row is
    /// not counted at all, before the filter runs: the shared `raw_syscalls` program behind
    /// `syscalls:sys_enter_open*` sees every syscall but counts only the ones named.
    pub key_set: [u64; KEY_SET_WORDS],
    /// 1: only rows in `key_set` count; 0: every row does. `u64` so the type has no padding.
    pub key_set_used: u64,
    /// [`agg::OUTSTANDING`]: bit `event` set for the events that release an address (`free`,
    /// `kmem:kfree`) instead of allocating.
    pub release_events: u64,
    /// [`agg::OUTSTANDING`]: where a release event's address is ([`operand::ARG`] or
    /// [`operand::FIELD`]); read without the interpreter.
    pub release: Operand,
    /// [`agg::OUTSTANDING`]: each allocation event's size rule ([`size_rule`]), by event index.
    pub alloc_size: [u32; MAX_ALLOC_EVENTS],
}

impl Plan {
    /// A plan that reads nothing and counts every event.
    pub const EMPTY: Plan = Plan {
        operands: [Operand::NONE; MAX_OPERANDS],
        insns: [Insn::NONE; MAX_INSNS],
        str_consts: [[0; STR_BYTES]; MAX_STR_CONSTS],
        str_lens: [0; MAX_STR_CONSTS],
        key_parts: [NO_OPERAND; MAX_KEY_PARTS],
        corr_parts: [NO_OPERAND; 2],
        saves: [NO_OPERAND; SAVED_WORDS],
        n_operands: 0,
        n_insns: 0,
        n_key_parts: 0,
        n_corr_parts: 0,
        value: NO_OPERAND,
        needs_start: 0,
        agg: agg::COUNT,
        layout: layout::ARRAY,
        array_key_bound: 0,
        slots: 1,
        raw_args: 0,
        needs_ids: 0,
        announce: 0,
        all_tasks: 0,
        filter_first: 0,
        by_thread: 0,
        precision: DEFAULT_PRECISION,
        simple: 0,
        group_cache: 0,
        keep_start: 0,
        linear_min: 0,
        linear_step: 1,
        value_div: 1,
        key_set: [0; KEY_SET_WORDS],
        key_set_used: 0,
        release_events: 0,
        release: Operand::NONE,
        alloc_size: [size_rule::SIZE_VALUE; MAX_ALLOC_EVENTS],
    };
}

/// Key of the per-CPU group hash map.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AggKey {
    /// The group key parts, packed: integers one word each, strings [`STR_BYTES`] each.
    pub words: [u64; KEY_WORDS],
    /// Histogram slot (0 when counting).
    pub slot: u32,
    pub _pad: u32,
}

/// Cells of `ENGINE_CACHE` per CPU ([`Plan::group_cache`]), as a power of two.
pub const CACHE_BITS: u32 = 10;
/// Cells of `ENGINE_CACHE` per CPU.
pub const CACHE_CELLS: u32 = 1 << CACHE_BITS;

/// One CPU's cell of the group cache: the group (the first two key words and the slot) that
/// owns it, and that group's count and sum on this CPU. A cell is claimed by the first group
/// that maps to its pair of cells and finds it free, and is never given back during a load, so each group's events on a CPU
/// are either all in its cell or all in the group hash, and a read adds both up exactly.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheCell {
    /// The owning group's first two key words ([`AggKey::words`]; the rest are zero).
    pub words: [u64; 2],
    /// Its histogram slot.
    pub slot: u32,
    /// 1 once claimed.
    pub owned: u32,
    /// Events of the owning group on this CPU.
    pub count: u64,
    /// Sum of their values.
    pub sum: u64,
}

/// The first of the two cells of `ENGINE_CACHE` a group may own (the other is this one with
/// the lowest bit flipped): a multiplicative hash of its words and slot, so pids and tids
/// that differ in their low bits land in different pairs.
#[inline(always)]
pub fn cache_index(word0: u64, word1: u64, slot: u32) -> u32 {
    let mixed = (word0 ^ word1.rotate_left(17) ^ u64::from(slot).rotate_left(40))
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (mixed >> (64 - CACHE_BITS)) as u32
}

/// An aggregate: how many events, and the sum of their values.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AggValue {
    /// Events.
    pub count: u64,
    /// Sum of the value operand (0 without one).
    pub sum: u64,
}

/// Key of the start map.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CorrKey {
    pub words: [u64; 2],
}

/// What a start probe left for the main probe.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StartValue {
    /// `bpf_ktime_get_ns()` at the start.
    pub ts_ns: u64,
    /// The saved operands' values ([`Plan::saves`]).
    pub saved: [u64; SAVED_WORDS],
}

/// Indices of the per-CPU counters in `ENGINE_STATS`.
pub mod stat {
    /// Unused: events aggregated are the sum of the aggregates' counts (one map update
    /// less per event).
    pub const COUNTED: u32 = 0;
    /// Events the filter rejected.
    pub const FILTERED: u32 = 1;
    /// Events dropped because the group hash map was full.
    pub const MAP_FULL: u32 = 2;
    /// Main events without a start (in flight when tracing began, or start map full).
    pub const NO_START: u32 = 3;
    /// Starts dropped because the start map was full.
    pub const START_MAP_FULL: u32 = 4;
    /// Events dropped because an operand could not be read (a NULL pointer on a path's
    /// way), counted once the filter has kept the event: an event the filter drops is
    /// [`FILTERED`], whatever it could read.
    pub const READ_ERRORS: u32 = 5;
    /// Starts recorded.
    pub const STARTS: u32 = 6;
    /// Trace records dropped: the ring buffer was full (userspace fell behind).
    pub const TRACE_LOST: u32 = 7;
    /// Stacks dropped: `ENGINE_STACKS` was full.
    pub const STACK_MAP_FULL: u32 = 8;
    /// Stacks the kernel could not walk.
    pub const STACK_ERRORS: u32 = 9;
    /// New-process announcements dropped (retried at the process's next event).
    pub const ANNOUNCE_LOST: u32 = 10;
    /// Starts found by their end event.
    pub const STARTS_ENDED: u32 = 11;
    /// Starts dropped because their thread exited before the end event.
    pub const STARTS_EXITED: u32 = 12;
    /// Thread names ([`super::operand::TASK`]) not recorded at a rename or an exit: a
    /// name map was full. The thread's events before that moment show under `tid N`.
    pub const NAMES_LOST: u32 = 13;
    /// Allocations not recorded: `ENGINE_OUTSTANDING` was full ([`super::agg::OUTSTANDING`]).
    pub const OUTSTANDING_FULL: u32 = 14;
    /// Releases of an address the outstanding map did not hold (allocated before tracing
    /// began, or not recorded).
    pub const RELEASE_UNKNOWN: u32 = 15;
}
/// Number of counters in `ENGINE_STATS`.
pub const STAT_COUNT: u32 = 16;

/// Default entries of the stack map (~1 KiB each).
pub const DEFAULT_STACK_ENTRIES: u32 = 16384;
/// Default size of the trace ring buffer, in bytes.
pub const TRACE_RING_BYTES: u32 = 4 << 20;
/// The part of the trace ring (1/N of its bytes) past which each record wakes its reader.
/// Below it a record is committed with `BPF_RB_NO_WAKEUP` and waits for the reader's next
/// poll ([`TRACE_POLL_MS`]), as libbpf-tools batch their wakeups: a reader that keeps up is
/// otherwise woken once per event (an irq_work on the traced CPU and a context switch).
pub const TRACE_WAKEUP_FRACTION: u64 = 4;
/// How often the reader of the trace ring reads it without being woken, in ms.
pub const TRACE_POLL_MS: u64 = 10;

crate::impl_pod!(
    Plan,
    DentryWalk,
    AggKey,
    AggValue,
    CacheCell,
    CorrKey,
    StartValue,
    TraceRecord
);

#[cfg(test)]
mod tests;
