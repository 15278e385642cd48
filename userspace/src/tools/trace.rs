//! `tracekit trace`: one line per event, with the fields asked for, as it happens (`perf
//! trace`, bcc `trace`); the one command that sends events to userspace.

use clap::Args as ClapArgs;
use tracekit::{
    Result,
    engine::request::{Request, Shape},
    jobs::trace,
    probe::fields::STACKS,
};

use crate::cli::{LastArgs, ProbeArgs, SymbolArgs, UnwindArgs};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit trace 'uprobe:libc:malloc' --print arg0 -p 1234
  tracekit trace 'kretprobe:vfs_read' --print retval --filter 'retval < 0'
  tracekit trace block:block_rq_issue --print bytes,rwbs,comm -K
  tracekit trace syscalls:sys_enter_openat --print filename -- ls  # each path opened
  tracekit trace syscalls:sys_enter_execve --print 'argv[0],argv[1],argv[2]'
  tracekit trace 'ur:/bin/bash:readline' --print 'str(retval)'  # the line bash read
  tracekit trace t:syscalls:sys_enter_write -U -p 1234  # each write's whole user stack
  tracekit trace sched:sched_process_exec --print 'task->real_parent->tgid'  # BTF: parent pid
  tracekit trace sock:inet_sock_set_state --print 'daddr_v6,dport,newstate'  # IPv4/IPv6, TCP states
  tracekit trace sock:inet_sock_set_state --print '(struct tcp_sock *)skaddr->bytes_acked'
  tracekit trace kretprobe:vfs_fsync_range --print 'latency,start.str(file->f_path.dentry->d_name.name)'
                                     # a string through BTF from a parameter, saved at entry";

/// `tracekit trace`.
#[derive(Debug, ClapArgs)]
#[command(about = "Print each event with its fields, as it happens (perf trace, bcc trace)", after_help = EXAMPLES)]
pub struct Args {
    /// Probes: tracepoints, or one function probe (k:, kr:, f:, fr:, u:, ur:)
    #[arg(required = true, value_name = "PROBE")]
    pub probes: Vec<String>,
    /// Only events for which EXPR holds (perf/ftrace filter syntax), evaluated in the kernel
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// Fields to print with each event (kstack, ustack: its stacks; str(FIELD), str(argN),
    /// str(retval), argv[I]: the string a pointer points to, 32 bytes at most; task->A->B,
    /// (struct S *)FIELD->A, PARAM->A->B, sock(FD)->A and file(FD)->A (the socket or file at
    /// descriptor field FD, e.g. sock(ret) of sys_exit_accept4): kernel structs through BTF
    /// (a struct of up to 32 bytes as raw bytes, e.g. skc_v6_daddr); str(PATH), str(PATH,N):
    /// the string a path's last char * points to, N bytes at most; latency and start.X,
    /// e.g. start.str(arg0), at a return probe: the time since its entry and the entry's X
    /// (a string of 16 bytes at most leaves room for two numbers))
    #[arg(long, value_name = "FIELD[,FIELD...]", value_delimiter = ',')]
    pub print: Vec<String>,
    /// Print the kernel stack of each event
    #[arg(short = 'K', long)]
    pub kernel_stack: bool,
    /// Print the user stack of each event
    #[arg(short = 'U', long)]
    pub user_stack: bool,
    #[command(flatten)]
    pub unwind: UnwindArgs,
    #[command(flatten)]
    pub last: LastArgs,
    #[command(flatten)]
    pub probing: ProbeArgs,
    #[command(flatten)]
    pub symbols: SymbolArgs,
}

/// Runs `tracekit trace`.
pub fn run(args: Args, verbose: u8) -> Result<()> {
    let mut print: Vec<String> = args
        .print
        .iter()
        .filter(|name| !STACKS.contains(&name.as_str()))
        .cloned()
        .collect();
    for (index, wanted) in [args.kernel_stack, args.user_stack].into_iter().enumerate() {
        if wanted || args.print.iter().any(|p| p == STACKS[index]) {
            print.push(STACKS[index].to_string());
        }
    }
    let request = Request {
        shape: Shape::Trace,
        print,
        filter: args.filter.clone(),
        ..args.last.apply(args.probing.request(args.probes.clone()))
    };
    trace::run(
        &request,
        args.unwind.call_graph(),
        args.unwind.budget_bytes(),
        &args.symbols.apply(args.probing.run_options(verbose)?),
    )
}
