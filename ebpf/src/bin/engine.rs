//! `engine`: the entry points of the generic in-kernel aggregation engine behind `hist`,
//! `count`, `trace`, `funccount`, `funclatency`, `stackcount` and the presets (`bitesize`,
//! `biolatency`, `syscount`). The interpreter and the aggregation live in
//! `tracekit_ebpf::engine`; this object defines the maps and globals the loader fills
//! ([`engine_maps!`]) and one thin program per attach kind.
//!
//! Every entry point (tracepoint, raw tracepoint, kprobe, kretprobe, uprobe, uretprobe,
//! fentry, fexit, perf event) loads its context's arguments into the per-CPU scratch, then
//! runs the shared start or main logic.
#![no_std]
#![no_main]

use aya_ebpf::{
    EbpfContext, Global,
    helpers::generated::bpf_get_attach_cookie,
    macros::{
        fentry, fexit, kprobe, kretprobe, perf_event, raw_tracepoint, tracepoint, uprobe, uretprobe,
    },
    programs::{
        FEntryContext, FExitContext, PerfEventContext, ProbeContext, RawTracePointContext,
        RetProbeContext, TracePointContext,
    },
};
use tracekit_ebpf::{
    engine::{
        EngineMaps as _,
        args::RET,
        count_arg1,
        names::{task_exited, task_renamed},
        process_exec, run, run_simple, thread_exit, thread_fork, tracepoint_main,
        tracepoint_simple, tracepoint_start,
    },
    engine_maps, follow_fork, forget_on_exec_mmap, load_args, unwind_maps,
};

/// 1: the kernel has `bpf_get_attach_cookie` (5.15+), which names a uprobe's function;
/// 0: every uprobe is function 0 (the loader attaches one user function at a time there).
#[unsafe(no_mangle)]
static KERNEL_ATTACH_COOKIE: Global<u8> = Global::new(1);

/// The user function a uprobe fired for: its attach cookie where the kernel has them.
#[inline(always)]
fn uprobe_event(ctx: *mut core::ffi::c_void) -> u32 {
    if KERNEL_ATTACH_COOKIE.load() == 0 {
        return 0;
    }
    // SAFETY: plain helper call.
    (unsafe { bpf_get_attach_cookie(ctx) }) as u32
}

// The DWARF unwinder's tables; the loader shrinks them when user stacks are not unwound.
unwind_maps!(EngineUnwind);
engine_maps!(Engine, EngineUnwind);

/// Start-stage entry points, one per tracepoint (`runqlat` starts at wakeups and at
/// preemption); the start plan sees which one fired as the event index.
#[tracepoint]
pub fn engine_tp_start(ctx: TracePointContext) -> u32 {
    tracepoint_start::<Engine>(&ctx, 0)
}

#[tracepoint]
pub fn engine_tp_start_1(ctx: TracePointContext) -> u32 {
    tracepoint_start::<Engine>(&ctx, 1)
}

#[tracepoint]
pub fn engine_tp_start_2(ctx: TracePointContext) -> u32 {
    tracepoint_start::<Engine>(&ctx, 2)
}

#[tracepoint]
pub fn engine_tp_start_3(ctx: TracePointContext) -> u32 {
    tracepoint_start::<Engine>(&ctx, 3)
}

/// One entry point per tracepoint of the stage, so the program knows which one fired.
macro_rules! tracepoint_programs {
    ($($name:ident = $index:literal),* $(,)?) => {
        $(
            #[tracepoint]
            pub fn $name(ctx: TracePointContext) -> u32 {
                tracepoint_main::<Engine>(&ctx, $index)
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

/// The first tracepoints of a [`Plan::simple`](tracekit_common::engine::Plan) plan's main
/// stage, with [`tracepoint_simple`] inlined in each: no BPF-to-BPF call per event. The loader
/// picks them for simple plans of at most `SIMPLE_TRACEPOINTS` tracepoints.
macro_rules! simple_tracepoint_programs {
    ($($name:ident = $index:literal),* $(,)?) => {
        $(
            #[tracepoint]
            pub fn $name(ctx: TracePointContext) -> u32 {
                tracepoint_simple::<Engine>(&ctx, $index)
            }
        )*
    };
}

simple_tracepoint_programs!(
    engine_tp_simple_0 = 0,
    engine_tp_simple_1 = 1,
    engine_tp_simple_2 = 2,
    engine_tp_simple_3 = 3,
);

#[raw_tracepoint]
pub fn engine_raw_tp(ctx: RawTracePointContext) -> i32 {
    run::<Engine>(ctx.as_ptr(), false, 0, |s, n| {
        load_args!(s, n, |i| ctx.arg::<u64>(i))
    });
    0
}

/// A [`Plan::simple`](tracekit_common::engine::Plan) plan's main stage, with no interpreter
/// (`count`, `--by pid`, a log2 histogram of an argument behind one comparison): every call
/// inlined ([`run_simple`]). The loader picks it whenever the plan is simple.
#[raw_tracepoint]
pub fn engine_raw_tp_simple(ctx: RawTracePointContext) -> i32 {
    run_simple::<Engine>(ctx.as_ptr(), 0, |s, n| {
        load_args!(s, n, |i| ctx.arg::<u64>(i))
    });
    0
}

/// The interpreter's fast path for the plainest plan, `syscount` without options: count by
/// raw tracepoint argument 1 (the syscall number of `sys_enter`) in the per-CPU array, no
/// filter, no value ([`count_arg1`]). Same cells as [`engine_raw_tp`] writes; the loader picks this program
/// only for plans where the two agree (`fast_count_arg1` in userspace/src/engine/plan.rs).
#[raw_tracepoint]
pub fn engine_raw_tp_count_arg1(ctx: RawTracePointContext) -> i32 {
    count_arg1::<Engine>(&ctx);
    0
}

#[raw_tracepoint]
pub fn engine_raw_tp_start(ctx: RawTracePointContext) -> i32 {
    run::<Engine>(ctx.as_ptr(), true, 0, |s, n| {
        load_args!(s, n, |i| ctx.arg::<u64>(i))
    });
    0
}

/// Kernel function entry (kprobe): arguments from the registers.
#[kprobe]
pub fn engine_kprobe(ctx: ProbeContext) -> u32 {
    run::<Engine>(ctx.as_ptr(), false, 0, |s, n| {
        load_args!(s, n, |i| ctx.arg::<u64>(i).unwrap_or(0))
    });
    0
}

#[kprobe]
pub fn engine_kprobe_start(ctx: ProbeContext) -> u32 {
    run::<Engine>(ctx.as_ptr(), true, 0, |s, n| {
        load_args!(s, n, |i| ctx.arg::<u64>(i).unwrap_or(0))
    });
    0
}

/// Kernel function return (kretprobe): the return value.
#[kretprobe]
pub fn engine_kretprobe(ctx: RetProbeContext) -> u32 {
    run::<Engine>(ctx.as_ptr(), false, 0, |s, _| {
        // SAFETY: this CPU's scratch.
        unsafe { (*s).args[RET] = ctx.ret::<u64>() }
    });
    0
}

/// User function entry (uprobe); the attach cookie says which function.
#[uprobe]
pub fn engine_uprobe(ctx: ProbeContext) -> u32 {
    let event = uprobe_event(ctx.as_ptr());
    run::<Engine>(ctx.as_ptr(), false, event, |s, n| {
        load_args!(s, n, |i| ctx.arg::<u64>(i).unwrap_or(0))
    });
    0
}

#[uprobe]
pub fn engine_uprobe_start(ctx: ProbeContext) -> u32 {
    let event = uprobe_event(ctx.as_ptr());
    run::<Engine>(ctx.as_ptr(), true, event, |s, n| {
        load_args!(s, n, |i| ctx.arg::<u64>(i).unwrap_or(0))
    });
    0
}

/// User function return (uretprobe).
#[uretprobe]
pub fn engine_uretprobe(ctx: RetProbeContext) -> u32 {
    let event = uprobe_event(ctx.as_ptr());
    run::<Engine>(ctx.as_ptr(), false, event, |s, _| {
        // SAFETY: this CPU's scratch.
        unsafe { (*s).args[RET] = ctx.ret::<u64>() }
    });
    0
}

/// Kernel function entry through a BPF trampoline (fentry).
#[fentry]
pub fn engine_fentry(ctx: FEntryContext) -> u32 {
    run::<Engine>(ctx.as_ptr(), false, 0, |s, n| {
        load_args!(s, n, |i| ctx.arg::<u64>(i))
    });
    0
}

#[fentry]
pub fn engine_fentry_start(ctx: FEntryContext) -> u32 {
    run::<Engine>(ctx.as_ptr(), true, 0, |s, n| {
        load_args!(s, n, |i| ctx.arg::<u64>(i))
    });
    0
}

/// Kernel function return through a BPF trampoline (fexit), for a function whose parameters
/// take `$words` 8-byte words: the return value is the context's next word. Read at a literal
/// offset (the verifier refuses any other context load), this needs no `bpf_get_func_ret`
/// (5.17), so fexit serves 5.5+ kernels; [`engine_fexit`] serves wider parameter lists.
macro_rules! fexit_programs {
    ($($name:ident = $words:literal),* $(,)?) => {
        $(
            #[fexit]
            pub fn $name(ctx: FExitContext) -> u32 {
                run::<Engine>(ctx.as_ptr(), false, 0, |s, n| {
                    load_args!(s, n, |i| ctx.arg::<u64>(i));
                    // SAFETY: the trampoline's context holds the parameters' words, then
                    // the return value; this CPU's scratch.
                    unsafe { (*s).args[RET] = *(ctx.as_ptr() as *const u64).add($words) }
                });
                0
            }
        )*
    };
}

fexit_programs!(
    engine_fexit_0 = 0,
    engine_fexit_1 = 1,
    engine_fexit_2 = 2,
    engine_fexit_3 = 3,
    engine_fexit_4 = 4,
    engine_fexit_5 = 5,
    engine_fexit_6 = 6,
);

/// Kernel function return through a BPF trampoline (fexit): arguments and return value,
/// through `bpf_get_func_ret` (5.17+) for functions whose parameters take more than six words.
#[fexit]
pub fn engine_fexit(ctx: FExitContext) -> u32 {
    run::<Engine>(ctx.as_ptr(), false, 0, |s, n| {
        load_args!(s, n, |i| ctx.arg::<u64>(i));
        // SAFETY: this CPU's scratch.
        unsafe { (*s).args[RET] = ctx.ret::<u64>().unwrap_or(0) }
    });
    0
}

/// A perf event (software events: page faults, context switches, ...).
#[perf_event]
pub fn engine_perf_event(ctx: PerfEventContext) -> u32 {
    run::<Engine>(ctx.as_ptr(), false, 0, |_, _| {});
    0
}

/// `sched:sched_process_exec`: the process's memory map is replaced, so it is announced
/// again at its next event. With `-p` / `-- CMD`, a selected process is announced right
/// away, so its memory map is read (and its unwind tables loading) before its first events:
/// a command that makes its events and exits at once would be gone before an announcement
/// made by its first event were read (as `profile_sched_exec` does).
#[tracepoint]
pub fn engine_sched_exec(_ctx: TracePointContext) -> u32 {
    process_exec::<Engine>();
    0
}

/// `syscalls:sys_enter_mmap`: new executable code means a new memory map to read.
#[tracepoint]
pub fn engine_mmap_exec(ctx: TracePointContext) -> u32 {
    forget_on_exec_mmap(&ctx, Engine::mmap_prot_offset(), Engine::known());
    0
}

/// `sched:sched_process_fork`, for `-- CMD`: children of a traced process are traced.
#[tracepoint]
pub fn engine_sched_fork(ctx: TracePointContext) -> u32 {
    follow_fork(&ctx, Engine::fork_child_pid_offset(), Engine::targets());
    0
}

/// `sched:sched_process_exit` (include/trace/events/sched.h), attached when starts are kept
/// per thread (`Plan::by_thread`): a thread that exits never ends what it started (the
/// `exit_group` of `syscount --latency`), so its start goes now instead of filling the map.
#[tracepoint]
pub fn engine_start_exit(_ctx: TracePointContext) -> u32 {
    thread_exit::<Engine>();
    0
}

/// `sched:sched_process_fork`, attached when starts are kept per thread: a new thread that
/// reuses a dead thread's id must not find that thread's start.
#[tracepoint]
pub fn engine_start_fork(ctx: TracePointContext) -> u32 {
    thread_fork::<Engine>(&ctx);
    0
}

/// `task:task_rename`, attached when a plan keys by thread name (`operand::TASK`): the
/// renamed thread's name generation ends under its old name.
#[tracepoint]
pub fn engine_task_rename(ctx: TracePointContext) -> u32 {
    task_renamed::<Engine>(&ctx);
    0
}

/// `sched:sched_process_exit`, attached when a plan keys by thread name: the exiting
/// thread's name generation ends under the name it exits with.
#[tracepoint]
pub fn engine_task_exit(_ctx: TracePointContext) -> u32 {
    task_exited::<Engine>();
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
