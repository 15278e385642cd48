//! Command-line interface. Flags mean the same in every subcommand, as in perf and bcc:
//! `-F HZ`, `-p PID`, `-a`, `-- CMD ARGS`, `-d SECONDS`, `-i SECONDS`, `-o FILE`, `--json`.

use std::{ffi::OsString, path::PathBuf};

use clap::{ArgAction, Args, Parser, Subcommand};
use tracekit::profile::ProfileOptions;
use tracekit_common::profile::{DEFAULT_COUNT_MAP_ENTRIES, DEFAULT_STACK_MAP_ENTRIES};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit profile -a -d 10 -o profile.svg   # flame graph of the whole machine, 10 s at 99 Hz
  tracekit profile -p 1234 -d 5              # hottest functions of pid 1234 for 5 s
  tracekit profile -o out.folded -- ./app    # run ./app, fold its stacks until it exits
  tracekit hist block:block_rq_issue --value bytes --by comm   # I/O sizes per process
  tracekit count 'syscalls:sys_enter_*' -d 5 # which syscalls, how often
  tracekit syscount -p 1234 --latency        # syscalls of pid 1234 with time spent
  tracekit biolatency -d 10                  # block I/O latency histogram
  tracekit runqlat -d 10                     # how long runnable tasks wait for a CPU
  tracekit hist uprobe:libc:malloc --value arg0 -p 1234     # malloc sizes of pid 1234
  tracekit funclatency vfs_read --unit us    # kernel function latency histogram
  tracekit trace 'k:tcp_sendmsg' --filter 'size > 100' --print size
  tracekit stat -e 'syscalls:sys_enter_*' -- ./app  # perf stat, tracepoints included
  tracekit top -e raw_syscalls:sys_enter --sort comm   # syscalls per process, live
  tracekit offcpu -p 1234 -d 10 -o offcpu.svg          # where pid 1234 waits";

const HIST_EXAMPLES: &str = "\
EXAMPLES:
  tracekit hist block:block_rq_issue --value bytes            # log2 histogram of I/O sizes
  tracekit hist t:block:block_rq_issue --value bytes --by comm # one per process
  tracekit hist block:block_rq_issue --value bytes --filter 'rwbs ~ \"*W*\"'  # writes only
  tracekit hist block:block_rq_issue --value nr_sector --filter 'nr_sector > 200'
  tracekit hist sched:sched_process_exec --by comm            # counts, no --value
  tracekit hist net:net_dev_xmit --value len --linear 0,1500,100
  tracekit hist uprobe:libc:malloc --value arg0 -p 1234       # malloc sizes
  tracekit hist kretprobe:vfs_read --value retval             # bytes returned by reads
  tracekit hist fentry:tcp_sendmsg --value size --by comm     # BTF parameter names

Fields are the tracepoint's own (`tracekit list --fields PROBE` shows them), arg0..arg5,
retval and latency on function probes, BTF parameter names on kernel functions, plus pid,
tid, cpu, comm. --filter takes perf/ftrace syntax: == != < <= > >= & ~ !~ && || ! ( ).";

const COUNT_EXAMPLES: &str = "\
EXAMPLES:
  tracekit count 'syscalls:sys_enter_*' -d 5                 # like perf stat -e 'syscalls:sys_enter_*' -a
  tracekit count block:block_rq_issue block:block_rq_complete
  tracekit count sched:sched_switch --by comm --top 10
  tracekit count syscalls:sys_enter_getppid -- ./app          # run ./app, count its calls
  tracekit count block:block_rq_issue --filter 'bytes >= 65536' --by comm
  tracekit count 'k:vfs_*' --by comm -d 5                     # kernel functions too
  tracekit count uprobe:libc:malloc --filter 'arg0 >= 4096' -p 1234";

const BITESIZE_EXAMPLES: &str = "\
EXAMPLES:
  tracekit bitesize                 # block I/O size histograms per process until Ctrl-C
  tracekit bitesize --disk vda -d 10
  tracekit bitesize -- dd if=/dev/zero of=f bs=64k count=512 oflag=direct";

const BIOLATENCY_EXAMPLES: &str = "\
EXAMPLES:
  tracekit biolatency -d 10            # block I/O latency, issue to completion, in us
  tracekit biolatency --unit ms --per-disk
  tracekit biolatency --queued -i 1    # from insertion in the queue, every second";

const RUNQLAT_EXAMPLES: &str = "\
EXAMPLES:
  tracekit runqlat -d 10               # how long runnable tasks waited for a CPU, in us
  tracekit runqlat --unit ms -i 1      # a histogram every second
  tracekit runqlat --tids -d 5         # one histogram per thread
  tracekit runqlat -- make -j8         # every task's wait while make runs

Measured from wakeup (sched_wakeup, sched_wakeup_new) or preemption (sched_switch of a
runnable task) to the task's next sched_switch onto a CPU.";

const SYSCOUNT_EXAMPLES: &str = "\
EXAMPLES:
  tracekit syscount -d 5               # top 10 syscalls of the machine
  tracekit syscount -p 1234 --latency  # with total and average time per syscall
  tracekit syscount --failures --by comm
  tracekit syscount -- ./app           # run ./app and count its syscalls";

const PROFILE_EXAMPLES: &str = "\
EXAMPLES:
  tracekit profile                           # all processes until Ctrl-C; top 20 functions
  tracekit profile -a -d 10 -o profile.svg   # whole machine for 10 s; flame graph
  tracekit profile -F 999 -p 1234,1235 -d 5  # two processes at 999 Hz for 5 s
  tracekit profile -o app.folded -- ./app    # run ./app; folded stacks until it exits
  tracekit profile -d 30 -i 5                # report every 5 s for 30 s
  tracekit profile --kernel-only -d 5 --json # kernel stacks only, as JSON

Output by -o FILE's extension: .txt (report), .folded (flamegraph.pl/inferno input),
.svg (flame graph), .json. Kernel frames in folded stacks end in _[k].";

/// eBPF tracing toolkit: profiles, counts and histograms of any event, aggregated in the kernel.
#[derive(Debug, Parser)]
#[command(name = "tracekit", version, after_help = EXAMPLES, propagate_version = true)]
pub struct Cli {
    /// Say more: -v prints timings and own CPU time, -vv debug logs
    #[arg(short, long, global = true, action = ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Sample on-CPU stacks (perf record -g + flame graph, bcc profile)
    #[command(after_help = PROFILE_EXAMPLES)]
    Profile(ProfileArgs),
    /// Histogram (log2 or linear) or counts of an event's field, per group, in the kernel
    #[command(after_help = HIST_EXAMPLES)]
    Hist(HistArgs),
    /// Count events, per event and group (perf stat -e, bpftrace count())
    #[command(after_help = COUNT_EXAMPLES)]
    Count(CountArgs),
    /// Block I/O size histograms per process (perf-tools/bcc bitesize)
    #[command(after_help = BITESIZE_EXAMPLES)]
    Bitesize(BitesizeArgs),
    /// Block I/O latency histogram, issue to completion (bcc biolatency)
    #[command(after_help = BIOLATENCY_EXAMPLES)]
    Biolatency(BiolatencyArgs),
    /// Run queue latency histogram: how long runnable tasks wait for a CPU (bcc runqlat)
    #[command(after_help = RUNQLAT_EXAMPLES)]
    Runqlat(RunqlatArgs),
    /// Count syscalls by name, with latency or failures (bcc syscount)
    #[command(after_help = SYSCOUNT_EXAMPLES)]
    Syscount(SyscountArgs),
    /// Count calls of kernel or user functions (bcc funccount)
    #[command(after_help = FUNCCOUNT_EXAMPLES)]
    Funccount(FunccountArgs),
    /// Histogram of a function's latency, entry to return (bcc funclatency)
    #[command(after_help = FUNCLATENCY_EXAMPLES)]
    Funclatency(FunclatencyArgs),
    /// Print each event with its fields, as it happens (perf trace, bcc trace)
    #[command(after_help = TRACE_EXAMPLES)]
    Trace(TraceArgs),
    /// Count the stacks that led to an event (bcc stackcount)
    #[command(after_help = STACKCOUNT_EXAMPLES)]
    Stackcount(StackcountArgs),
    /// Count events with perf counters: software, hardware, tracepoints (perf stat)
    #[command(after_help = STAT_EXAMPLES)]
    Stat(StatArgs),
    /// List events and probes: hardware, software, tracepoints, kernel functions (perf list)
    #[command(after_help = LIST_EXAMPLES)]
    List(ListArgs),
    /// Live view of the hottest functions, or of any event's counts (perf top)
    #[command(after_help = TOP_EXAMPLES)]
    Top(TopArgs),
    /// Time spent blocked, by stack (bcc offcputime)
    #[command(after_help = OFFCPU_EXAMPLES)]
    Offcpu(OffcpuArgs),
}

const OFFCPU_EXAMPLES: &str = "\
EXAMPLES:
  tracekit offcpu -- ./app                        # where ./app waits, in microseconds
  tracekit offcpu -p 1234 -d 10 -o offcpu.svg     # off-CPU flame graph of pid 1234
  tracekit offcpu --state uninterruptible -a -d 5 # D-state waits (disk, locks) machine-wide
  tracekit offcpu --min-us 1000 -- ./app          # only waits of 1 ms or more";

/// Task states `offcpu --state` selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TaskState {
    /// TASK_INTERRUPTIBLE (S): waiting for an event, a timer, I/O readiness.
    Interruptible,
    /// TASK_UNINTERRUPTIBLE (D): waiting for disk I/O or a kernel lock.
    Uninterruptible,
}

/// Which stacks `offcpu` and `stackcount` take (bcc's `-K`/`-U`), and report rows.
#[derive(Debug, Args)]
pub struct StackArgs {
    /// Kernel stacks only
    #[arg(short = 'K', long, conflicts_with = "user_only")]
    pub kernel_only: bool,
    /// User stacks only
    #[arg(short = 'U', long)]
    pub user_only: bool,
    /// Rows in the text report
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub top: usize,
}

/// `tracekit offcpu`.
#[derive(Debug, Args)]
pub struct OffcpuArgs {
    /// Only blocks of at least US microseconds
    #[arg(long, value_name = "US")]
    pub min_us: Option<u64>,
    /// Only blocks of at most US microseconds
    #[arg(long, value_name = "US")]
    pub max_us: Option<u64>,
    /// Only tasks that blocked in this state (default: any, preemption included)
    #[arg(long, value_enum)]
    pub state: Option<TaskState>,
    #[command(flatten)]
    pub stacks: StackArgs,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub timing: TimingArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub maps: MapArgs,
}

const TOP_EXAMPLES: &str = "\
EXAMPLES:
  tracekit top                                    # hottest functions, refreshed every second
  tracekit top --sort comm,dso                    # by process and binary (perf top -ns comm,dso)
  tracekit top -p 1234 -F 999
  tracekit top -e raw_syscalls:sys_enter --sort comm   # system calls by process
  tracekit top -e block:block_rq_issue --sort comm     # who does disk I/O
  tracekit top -d 10 | tee top.log                # piped: one snapshot per interval";

/// `tracekit top`.
#[derive(Debug, Args)]
pub struct TopArgs {
    /// Sample at HZ samples per second per CPU
    #[arg(
        short = 'F',
        long = "frequency",
        value_name = "HZ",
        default_value_t = 99
    )]
    pub frequency: u64,
    /// Count this probe instead of sampling CPUs (a tracepoint or function probe)
    #[arg(short = 'e', long = "event", value_name = "PROBE")]
    pub event: Option<String>,
    /// Group by these keys: sym, dso, comm, pid (comm and pid with -e)
    #[arg(
        long,
        value_name = "KEY[,KEY...]",
        value_delimiter = ',',
        default_value = "dso,sym"
    )]
    pub sort: Vec<String>,
    /// Rows shown
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub top: usize,
    /// Refresh every SECONDS
    #[arg(short = 'i', long = "interval", value_name = "SECONDS", default_value_t = 1.0,
          value_parser = parse_seconds)]
    pub interval: f64,
    /// Stop after SECONDS
    #[arg(short = 'd', long = "duration", value_name = "SECONDS", value_parser = parse_seconds)]
    pub duration: Option<f64>,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub maps: MapArgs,
    #[command(flatten)]
    pub target: TargetArgs,
}

const LIST_EXAMPLES: &str = "\
EXAMPLES:
  tracekit list                                  # every event; kernel functions counted
  tracekit list 'block:*'                        # the block tracepoints
  tracekit list hw                               # hardware events (also sw, tracepoint)
  tracekit list 'vfs_*'                          # kernel functions, where tracefs lists them
  tracekit list --fields block:block_rq_issue    # a tracepoint's fields, for --filter/--value
  tracekit list --fields kprobe:vfs_read         # a kernel function's BTF parameters";

/// `tracekit list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only names matching GLOB (`block:*`, `*page*`, `vfs_*`), or one class as in perf
    /// list: `hw`/`hardware`, `sw`/`software`, `tracepoint`
    pub glob: Option<String>,
    /// Show the fields of PROBE (a tracepoint or function probe) with their types
    #[arg(long, value_name = "PROBE", conflicts_with = "glob")]
    pub fields: Option<String>,
}

const STAT_EXAMPLES: &str = "\
EXAMPLES:
  tracekit stat -- ./app                          # perf stat's default events for ./app
  tracekit stat -a -d 5                           # the whole machine for 5 s
  tracekit stat -e 'syscalls:sys_enter_*' -a -d 5 # every syscall tracepoint, sorted
  tracekit stat -e page-faults,cs -p 1234 -i 1    # per-second counts of one process
  tracekit stat -e cycles,instructions -- ./app   # IPC, where the hardware counts it";

/// `tracekit stat`.
#[derive(Debug, Args)]
pub struct StatArgs {
    /// Events: perf names (task-clock, page-faults, cycles, ...) and tracepoints
    /// (SYSTEM:EVENT, wildcards allowed); comma-separated or repeated
    #[arg(
        short = 'e',
        long = "event",
        value_name = "EVENT",
        value_delimiter = ','
    )]
    pub events: Vec<String>,
    /// Also show tracepoints that counted zero
    #[arg(long = "all")]
    pub show_zero: bool,
    /// perf's interval flag, in milliseconds (same as -i MS/1000)
    #[arg(short = 'I', value_name = "MS", conflicts_with = "interval")]
    pub interval_ms: Option<u64>,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub timing: TimingArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

const FUNCCOUNT_EXAMPLES: &str = "\
EXAMPLES:
  tracekit funccount 'vfs_*' -d 5              # kernel functions matching vfs_*
  tracekit funccount 'libc:str*' -p 1234       # libc's str* functions in pid 1234
  tracekit funccount tcp_sendmsg --by comm
  tracekit funccount ./app:parse -- ./app in.txt";

const FUNCLATENCY_EXAMPLES: &str = "\
EXAMPLES:
  tracekit funclatency vfs_read -d 5           # kernel function, in us
  tracekit funclatency --unit ms libc:nanosleep -p 1234
  tracekit funclatency ./app:handle -- ./app";

const TRACE_EXAMPLES: &str = "\
EXAMPLES:
  tracekit trace 'uprobe:libc:malloc' --print arg0 -p 1234
  tracekit trace 'kretprobe:vfs_read' --print retval --filter 'retval < 0'
  tracekit trace block:block_rq_issue --print bytes,rwbs,comm -K
  tracekit trace syscalls:sys_enter_openat --print filename -- ls";

const STACKCOUNT_EXAMPLES: &str = "\
EXAMPLES:
  tracekit stackcount software:page-faults -- ./app       # who faults memory in
  tracekit stackcount t:sched:sched_switch -d 5 -o cs.svg # context switches, flame graph
  tracekit stackcount kprobe:tcp_sendmsg -K -o send.folded
  tracekit stackcount uprobe:libc:malloc -p 1234";

/// A kernel or user function pattern: `vfs_read`, `vfs_*`, `libc:malloc`, `/path/app:fn`,
/// or an explicit probe spec (`k:FUNC`, `u:BINARY:FUNC`).
#[derive(Debug, Args)]
pub struct FunccountArgs {
    /// Functions to count
    #[arg(required = true, value_name = "PATTERN")]
    pub patterns: Vec<String>,
    /// Also group by process name or pid
    #[arg(long, value_enum)]
    pub by: Option<SyscountBy>,
    /// Show the N most called
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub timing: TimingArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub maps: MapArgs,
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `tracekit funclatency`.
#[derive(Debug, Args)]
pub struct FunclatencyArgs {
    /// The function: kernel (`vfs_read`) or user (`libc:nanosleep`, `/path/app:fn`)
    pub function: String,
    /// Unit of the histogram
    #[arg(long, value_enum, default_value_t = TimeUnit::Us)]
    pub unit: TimeUnit,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub timing: TimingArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub maps: MapArgs,
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `tracekit trace`.
#[derive(Debug, Args)]
pub struct TraceArgs {
    /// Probes: tracepoints, or one function probe (k:, kr:, f:, fr:, u:, ur:)
    #[arg(required = true, value_name = "PROBE")]
    pub probes: Vec<String>,
    /// Only events for which EXPR holds (perf/ftrace filter syntax), evaluated in the kernel
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// Fields to print with each event
    #[arg(long, value_name = "FIELD[,FIELD...]", value_delimiter = ',')]
    pub print: Vec<String>,
    /// Print the kernel stack of each event
    #[arg(short = 'K', long)]
    pub kernel_stack: bool,
    /// Print the user stack of each event
    #[arg(short = 'U', long)]
    pub user_stack: bool,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub timing: TimingArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub maps: MapArgs,
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `tracekit stackcount`.
#[derive(Debug, Args)]
pub struct StackcountArgs {
    /// The event: a tracepoint, a function probe, or software:EVENT (page-faults,
    /// context-switches, ...)
    pub probe: String,
    /// Only events for which EXPR holds
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    #[command(flatten)]
    pub stacks: StackArgs,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub timing: TimingArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub maps: MapArgs,
    #[command(flatten)]
    pub target: TargetArgs,
}

/// How kernel functions are probed.
#[derive(Debug, Args)]
pub struct TargetArgs {
    /// Probe kernel functions with kprobes, never fentry/fexit
    #[arg(long, conflicts_with = "fentry")]
    pub kprobe: bool,
    /// Probe kernel functions with fentry/fexit (BPF trampolines), never kprobes
    #[arg(long)]
    pub fentry: bool,
}

impl TargetArgs {
    /// The attach policy and the pid uprobes are limited to (a single `-p PID`).
    pub fn target(&self, scope: &ScopeArgs) -> tracekit::Result<crate::cmd::compile::Target> {
        use tracekit::engine::KernelAttach;
        let how = match (self.kprobe, self.fentry) {
            (true, _) => KernelAttach::Kprobe,
            (_, true) => KernelAttach::Fentry,
            _ => KernelAttach::Auto,
        };
        let pid = match scope.pids.as_slice() {
            [one] => Some(*one),
            _ => None,
        };
        Ok(crate::cmd::compile::Target { pid, how })
    }
}

/// Kernel map sizes of the aggregation engine.
#[derive(Debug, Args)]
pub struct MapArgs {
    /// Distinct groups (--by keys and histogram slots) the kernel keeps
    #[arg(long, value_name = "N", default_value_t = tracekit_common::engine::DEFAULT_HASH_ENTRIES)]
    pub max_groups: u32,
    /// Requests or calls in flight the kernel tracks for latencies
    #[arg(long, value_name = "N", default_value_t = tracekit_common::engine::DEFAULT_START_ENTRIES)]
    pub max_in_flight: u32,
}

/// `tracekit hist`.
#[derive(Debug, Args)]
pub struct HistArgs {
    /// The probe: a tracepoint (block:block_rq_issue, t:SYSTEM:EVENT), kprobe:FUNC,
    /// kretprobe:FUNC, fentry:FUNC, fexit:FUNC, uprobe:BINARY:FUNC, uretprobe:BINARY:FUNC;
    /// wildcards allowed
    pub probe: String,
    /// The field to histogram; without it, events are counted per group
    #[arg(long, value_name = "FIELD")]
    pub value: Option<String>,
    /// Group by these fields or pid, tid, cpu, comm (one histogram per group)
    #[arg(long, value_name = "KEY[,KEY...]", value_delimiter = ',')]
    pub by: Vec<String>,
    /// Only events for which EXPR holds (perf/ftrace filter syntax), evaluated in the kernel
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// A linear histogram from MIN to MAX in buckets of STEP instead of log2
    #[arg(long, value_name = "MIN,MAX,STEP")]
    pub linear: Option<String>,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub timing: TimingArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub maps: MapArgs,
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `tracekit count`.
#[derive(Debug, Args)]
pub struct CountArgs {
    /// Tracepoints (SYSTEM:EVENT, t:SYSTEM:EVENT), or one function probe (k:FUNC, kr:FUNC,
    /// f:FUNC, fr:FUNC, u:BINARY:FUNC, ur:BINARY:FUNC); wildcards allowed
    #[arg(required = true, value_name = "PROBE")]
    pub probes: Vec<String>,
    /// Also group by these fields or pid, tid, cpu, comm
    #[arg(long, value_name = "KEY[,KEY...]", value_delimiter = ',')]
    pub by: Vec<String>,
    /// Only events for which EXPR holds (perf/ftrace filter syntax), evaluated in the kernel
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// Show only the N largest counts
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub timing: TimingArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub maps: MapArgs,
    #[command(flatten)]
    pub target: TargetArgs,
}

/// `tracekit bitesize`.
#[derive(Debug, Args)]
pub struct BitesizeArgs {
    /// Only I/O to this disk (a name under /sys/block, e.g. vda, nvme0n1)
    #[arg(long, value_name = "NAME")]
    pub disk: Option<String>,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub timing: TimingArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub maps: MapArgs,
}

/// Time units of latency histograms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TimeUnit {
    /// Nanoseconds.
    Ns,
    /// Microseconds.
    Us,
    /// Milliseconds.
    Ms,
}

impl TimeUnit {
    /// Nanoseconds per unit.
    pub fn ns(self) -> u64 {
        match self {
            Self::Ns => 1,
            Self::Us => 1_000,
            Self::Ms => 1_000_000,
        }
    }

    /// The histogram header, as bcc writes it.
    pub fn header(self) -> &'static str {
        match self {
            Self::Ns => "nsecs",
            Self::Us => "usecs",
            Self::Ms => "msecs",
        }
    }
}

/// `tracekit biolatency`.
#[derive(Debug, Args)]
pub struct BiolatencyArgs {
    /// Unit of the histogram
    #[arg(long, value_enum, default_value_t = TimeUnit::Us)]
    pub unit: TimeUnit,
    /// One histogram per disk
    #[arg(long)]
    pub per_disk: bool,
    /// Measure from insertion in the I/O queue (block_rq_insert) instead of issue to the device
    #[arg(long)]
    pub queued: bool,
    /// Only I/O to this disk (a name under /sys/block)
    #[arg(long, value_name = "NAME")]
    pub disk: Option<String>,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub timing: TimingArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub maps: MapArgs,
}

/// `tracekit runqlat`.
#[derive(Debug, Args)]
pub struct RunqlatArgs {
    /// Unit of the histogram
    #[arg(long, value_enum, default_value_t = TimeUnit::Us)]
    pub unit: TimeUnit,
    /// One histogram per thread (bcc runqlat -L)
    #[arg(long, short = 'L')]
    pub tids: bool,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub timing: TimingArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub maps: MapArgs,
}

/// What `syscount --by` groups by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SyscountBy {
    /// The calling thread's command name.
    Comm,
    /// The calling process.
    Pid,
}

/// `tracekit syscount`.
#[derive(Debug, Args)]
pub struct SyscountArgs {
    /// Also group by process name or pid
    #[arg(long, value_enum)]
    pub by: Option<SyscountBy>,
    /// Show total and average time in each syscall (microseconds)
    #[arg(long, short = 'L')]
    pub latency: bool,
    /// Count only calls that returned an error
    #[arg(long, short = 'x')]
    pub failures: bool,
    /// Show the N most frequent
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub timing: TimingArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub maps: MapArgs,
}

/// Which processes to trace: `-a` (the default), `-p PID,...`, or `-- CMD ARGS`.
#[derive(Debug, Args)]
pub struct ScopeArgs {
    /// Trace every process on every CPU (the default)
    #[arg(short = 'a', long = "all-cpus")]
    pub all: bool,
    /// Trace only these processes (comma-separated pids); ends when they have all exited
    #[arg(
        short = 'p',
        long = "pid",
        value_name = "PID[,PID...]",
        value_delimiter = ','
    )]
    pub pids: Vec<u32>,
    /// Run CMD with ARGS, trace it and its children, and end when it exits
    #[arg(last = true, value_name = "CMD [ARGS]")]
    pub command: Vec<OsString>,
}

/// The scope, checked for contradictions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every process.
    All,
    /// These running processes.
    Pids(Vec<u32>),
    /// A command to start.
    Command(Vec<OsString>),
}

impl ScopeArgs {
    /// The one scope these flags ask for; a usage error when they contradict each other.
    pub fn scope(&self) -> tracekit::Result<Scope> {
        let chosen = [self.all, !self.pids.is_empty(), !self.command.is_empty()];
        if chosen.iter().filter(|&&c| c).count() > 1 {
            return Err(tracekit::Error::usage(
                "choose one scope: -a (every process), -p PID (running processes) \
                 or -- CMD (a command to start)",
            ));
        }
        Ok(if !self.pids.is_empty() {
            Scope::Pids(self.pids.clone())
        } else if !self.command.is_empty() {
            Scope::Command(self.command.clone())
        } else {
            Scope::All
        })
    }
}

/// How long to trace and how often to print.
#[derive(Debug, Args)]
pub struct TimingArgs {
    /// Stop after SECONDS (fractions allowed); default: until Ctrl-C or the traced command exits
    #[arg(short = 'd', long = "duration", value_name = "SECONDS", value_parser = parse_seconds)]
    pub duration: Option<f64>,
    /// Also print what was gathered in each interval of SECONDS
    #[arg(short = 'i', long = "interval", value_name = "SECONDS", value_parser = parse_seconds)]
    pub interval: Option<f64>,
}

/// Where results go.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Write the result to FILE, in the format its extension names (.txt .folded .svg .json)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Print JSON on stdout instead of text
    #[arg(long)]
    pub json: bool,
}

/// `tracekit profile`.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// Sample at HZ samples per second per CPU
    #[arg(
        short = 'F',
        long = "frequency",
        value_name = "HZ",
        default_value_t = 99
    )]
    pub frequency: u64,
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[command(flatten)]
    pub timing: TimingArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Record kernel stacks only
    #[arg(long, conflicts_with = "user_only")]
    pub kernel_only: bool,
    /// Record user stacks only
    #[arg(long)]
    pub user_only: bool,
    /// Also count samples of idle CPUs (the swapper task, pid 0)
    #[arg(long)]
    pub include_idle: bool,
    /// Do not show inlined functions as frames (skips reading DWARF line tables)
    #[arg(long)]
    pub no_inline: bool,
    /// Rows in the text report
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub top: usize,
    /// Distinct stacks the kernel keeps; each costs ~1 KiB of kernel memory, allocated up front
    #[arg(long, value_name = "N", default_value_t = DEFAULT_STACK_MAP_ENTRIES)]
    pub stack_storage_size: u32,
    /// Distinct (pid, comm, stacks) keys the kernel counts
    #[arg(long, value_name = "N", default_value_t = DEFAULT_COUNT_MAP_ENTRIES)]
    pub count_map_size: u32,
}

impl ProfileArgs {
    /// The kernel-side options for a checked frequency and the selected pids.
    pub fn options(&self, frequency_hz: u64, pids: Option<Vec<u32>>) -> ProfileOptions {
        ProfileOptions {
            frequency_hz,
            follow_children: !self.scope.command.is_empty(),
            pids,
            include_idle: self.include_idle,
            kernel_stacks: !self.user_only,
            user_stacks: !self.kernel_only,
            stack_map_entries: self.stack_storage_size,
            count_map_entries: self.count_map_size,
        }
    }
}

/// Parses a positive number of seconds, fractions allowed.
pub fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds > 0.0 && seconds < 1e9 => Ok(seconds),
        _ => Err("expected a positive number of seconds, like 10 or 0.5".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_profile_flags() {
        let cli = Cli::try_parse_from([
            "tracekit", "profile", "-F", "999", "-p", "1,2", "-d", "1.5", "-o", "x.svg",
        ])
        .unwrap();
        let Command::Profile(args) = cli.command else {
            panic!("profile parsed as another command");
        };
        assert_eq!(args.frequency, 999);
        assert_eq!(args.scope.scope().unwrap(), Scope::Pids(vec![1, 2]));
        assert_eq!(args.timing.duration, Some(1.5));
        assert_eq!(args.output.output, Some(PathBuf::from("x.svg")));
    }

    #[test]
    fn command_after_double_dash() {
        let cli = Cli::try_parse_from(["tracekit", "profile", "--", "ls", "-l"]).unwrap();
        let Command::Profile(args) = cli.command else {
            panic!("profile parsed as another command");
        };
        assert_eq!(
            args.scope.scope().unwrap(),
            Scope::Command(vec!["ls".into(), "-l".into()])
        );
    }

    #[test]
    fn contradicting_scopes_are_refused() {
        let cli = Cli::try_parse_from(["tracekit", "profile", "-p", "1", "--", "ls"]).unwrap();
        let Command::Profile(args) = cli.command else {
            panic!("profile parsed as another command");
        };
        assert_eq!(
            args.scope.scope().unwrap_err().to_string(),
            "choose one scope: -a (every process), -p PID (running processes) \
             or -- CMD (a command to start)"
        );
    }

    #[test]
    fn parses_engine_commands() {
        let cli = Cli::try_parse_from([
            "tracekit",
            "hist",
            "t:block:block_rq_issue",
            "--value",
            "bytes",
            "--by",
            "comm,pid",
            "--filter",
            "bytes > 4096",
            "-d",
            "2",
        ])
        .unwrap();
        let Command::Hist(args) = cli.command else {
            panic!("not hist");
        };
        assert_eq!(args.by, ["comm", "pid"]);
        assert_eq!(args.filter.as_deref(), Some("bytes > 4096"));
        let cli = Cli::try_parse_from(["tracekit", "syscount", "-L", "-x", "--by", "pid"]).unwrap();
        let Command::Syscount(args) = cli.command else {
            panic!("not syscount");
        };
        assert!(args.latency && args.failures && args.by == Some(SyscountBy::Pid));
        assert!(
            Cli::try_parse_from(["tracekit", "count"]).is_err(),
            "count needs a probe"
        );
    }

    #[test]
    fn seconds_must_be_positive() {
        assert_eq!(parse_seconds("0.5"), Ok(0.5));
        assert!(parse_seconds("0").is_err());
        assert!(parse_seconds("-3").is_err());
        assert!(parse_seconds("ten").is_err());
    }
}
