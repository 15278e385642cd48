//! `tracekit count`: events counted per event and group (`perf stat -e`, bpftrace
//! `count()`), for tracepoints (wildcards included) or one function probe.

use clap::Args as ClapArgs;
use tracekit::{
    Result,
    engine::request::{KeyField, Request},
    jobs::aggregate::{self, AggregateJob},
    output::aggregates::Report,
};

use crate::cli::{LastArgs, ProbeArgs};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit count 'syscalls:sys_enter_*' -d 5                 # like perf stat -e 'syscalls:sys_enter_*' -a
  tracekit count block:block_rq_issue block:block_rq_complete
  tracekit count sched:sched_switch --by comm --top 10
  tracekit count syscalls:sys_enter_getppid -- ./app          # run ./app, count its calls
  tracekit count block:block_rq_issue --filter 'bytes >= 65536' --by comm
  tracekit count 'k:vfs_*' --by comm -d 5                     # kernel functions too
  tracekit count uprobe:libc:malloc --filter 'arg0 >= 4096' -p 1234
  tracekit count syscalls:sys_enter_write --by cgroup -d 5    # per container / service
  tracekit count usdt:postgres:transaction__commit -p 1234    # USDT probes (U: for short)
  tracekit count syscalls:sys_exit_accept4 --filter 'ret >= 0' --by 'comm,sock(ret)->__sk_common.skc_num'
                                     # accepts by process and local port (BTF, from the descriptor)
  tracekit count kprobe:vfs_unlink --by 'str(dentry->d_name.name)'  # BTF path to a string
  tracekit count syscalls:sys_enter_getppid --last syscalls:sys_enter_prctl --by start.option -- ./app
                                     # calls by the option of the last prctl on their CPU";

/// `tracekit count`.
#[derive(Debug, ClapArgs)]
#[command(
    about = "Count events, per event and group (perf stat -e, bpftrace count())",
    after_help = EXAMPLES
)]
pub struct Args {
    /// Tracepoints (SYSTEM:EVENT, t:SYSTEM:EVENT), or one function probe (k:FUNC, kr:FUNC,
    /// f:FUNC, fr:FUNC, u:BINARY:FUNC, ur:BINARY:FUNC) or USDT probe
    /// (usdt:BINARY[:PROVIDER]:NAME, U:...); wildcards allowed
    #[arg(required = true, value_name = "PROBE")]
    pub probes: Vec<String>,
    /// Also group by these fields or pid, tid, cpu, comm, cgroup (the cgroup v2 path);
    /// str(FIELD), argv[I]: the string a pointer points to, its first 31 bytes (`...` when
    /// longer); up to 8 keys,
    /// a string taking the room of 4, a 16-byte address 2 (a socket's skc_portpair is one
    /// key shown as two columns, lport and rport);
    /// ftype(MODE): an inode's i_mode shown as R (regular file), S (socket) or O (other);
    /// follows(STREAM,POS,LEN): 1 when POS is where the previous event of the same STREAM
    /// ended (its POS + LEN), 0 when not, 2 for a stream's first event (biopattern's
    /// follows(dev,sector,nr_sector))
    #[arg(long, value_name = "KEY[,KEY...]", value_delimiter = ',')]
    pub by: Vec<String>,
    /// Only events for which EXPR holds (perf/ftrace filter syntax), evaluated in the kernel;
    /// a field may be a BTF path, with or without a cast: '(struct io_kiocb *)req->opcode ==
    /// 13'
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// Show only the N largest counts
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    #[command(flatten)]
    pub last: LastArgs,
    #[command(flatten)]
    pub probing: ProbeArgs,
}

/// Runs `tracekit count`.
pub fn run(args: Args, verbose: u8) -> Result<()> {
    let request = Request {
        by: KeyField::all(&args.by),
        filter: args.filter.clone(),
        by_event: true,
        ..args.last.apply(args.probing.request(args.probes.clone()))
    };
    let job = AggregateJob {
        command: "count",
        what: None,
        request,
        report: Report::Counts {
            clear: false,
            sum: None,
            top: args.top,
        },
        tool_filter: false,
    };
    aggregate::run(job, &args.probing.run_options(verbose)?)
}
