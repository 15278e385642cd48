//! `tracekit hist`: a field of any event as a log2 or linear histogram, or events counted,
//! per group, with a filter, all in the kernel (bpftrace `hist()`, bcc `argdist`).

use clap::Args as ClapArgs;
use tracekit::{
    Error, Result,
    engine::request::{KeyField, Request, Shape},
    jobs::aggregate::{self, AggregateJob},
    output::aggregates::Report,
};

use crate::cli::{LastArgs, PercentileArgs, ProbeArgs};

const EXAMPLES: &str = "\
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
  tracekit hist rawtracepoint:sys_enter --by id               # syscalls by number, no record
  tracekit hist software:cpu-clock:99hz --value 'task->se.cfs_rq->nr_queued' --by cpu --linear 0,16,1
                                     # run queue length sampled 99 times a second per CPU
  tracekit hist sock:inet_sock_set_state --by daddr_v6 --filter 'newstate == SYN_SENT'
                                     # connects by destination address (IPv4 or IPv6)
  tracekit hist usdt:postgres:query__done --value arg0 -p 1234 # USDT arguments (arg0..argN)
  tracekit hist kretprobe:ext4_file_read_iter --value latency --by 'start.str(iocb->ki_filp->f_path.dentry->d_name.name)'
                                     # latency per file name: a string through BTF from a
                                     # parameter (str(PATH) or str(PATH,N)), saved at entry
  tracekit hist uretprobe:./app:handle --value latency --percentiles -- ./app  # p50..p99.9, ns
  tracekit hist software:cpu-clock:99hz --last power:cpu_frequency --last-key cpu_id=cpu --value start.state --by comm
                                     # each sample at its CPU's last frequency (kHz), per
                                     # process: a last value per key, kept, not used up
  tracekit hist block:block_rq_issue --value bytes -i 1 -o sizes.svg  # heat map over time
  tracekit hist block:block_rq_issue --value bytes -i 1 -o s.json -o s.svg
                                     # and the JSON `tracekit report s.json -o s.svg` redraws

Fields are the tracepoint's own (`tracekit list --fields PROBE` shows them), arg0..arg5,
retval and latency on function probes, BTF parameter names on kernel functions, arg0..argN
of USDT probes (from their notes), plus pid, tid, cpu, comm, cgroup, and kernel structs
through BTF: task->A->B, (struct S *)FIELD->A, sock(FD)->A and file(FD)->A (the socket or
file at descriptor field FD: sock(ret)->__sk_common.skc_num at sys_exit_accept4). --filter takes
perf/ftrace syntax: == != < <= > >= & ~ !~ && || ! ( ).";

/// `tracekit hist`.
#[derive(Debug, ClapArgs)]
#[command(
    about = "Histogram (log2 or linear) or counts of an event's field, per group, in the kernel",
    after_help = EXAMPLES
)]
pub struct Args {
    /// The probe: a tracepoint (block:block_rq_issue, t:SYSTEM:EVENT), kprobe:FUNC,
    /// kretprobe:FUNC, fentry:FUNC, fexit:FUNC, uprobe:BINARY:FUNC, uretprobe:BINARY:FUNC,
    /// usdt:BINARY[:PROVIDER]:NAME, rawtracepoint:NAME, software:EVENT (each event),
    /// software:EVENT:N (every Nth), software:EVENT:HZhz (HZ times a second per CPU);
    /// wildcards allowed
    pub probe: String,
    /// The field to histogram; without it, events are counted per group
    #[arg(long, value_name = "FIELD")]
    pub value: Option<String>,
    /// Group by these fields or pid, tid, cpu, comm, cgroup (one histogram per group);
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
    /// A linear histogram from MIN to MAX in buckets of STEP instead of log2
    #[arg(long, value_name = "MIN,MAX,STEP")]
    pub linear: Option<String>,
    #[command(flatten)]
    pub percentiles: PercentileArgs,
    #[command(flatten)]
    pub last: LastArgs,
    #[command(flatten)]
    pub probing: ProbeArgs,
}

/// Parses `--linear MIN,MAX,STEP`.
fn parse_linear(text: &str) -> Result<Shape> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let bad = || {
        Error::usage(format!(
            "--linear {}: expected MIN,MAX,STEP as integers (MIN and MAX 64-bit signed, STEP \
             unsigned), e.g. --linear 0,1000,100",
            tracekit::error::quote(text)
        ))
    };
    let [min, max, step] = parts.as_slice() else {
        return Err(bad());
    };
    Ok(Shape::Linear {
        min: min.parse().map_err(|_| bad())?,
        max: max.parse().map_err(|_| bad())?,
        step: step.parse().map_err(|_| bad())?,
    })
}

/// Runs `tracekit hist`.
pub fn run(args: Args, verbose: u8) -> Result<()> {
    let shape = match (&args.value, &args.linear) {
        (None, Some(_)) => {
            return Err(Error::usage(
                "--linear needs --value FIELD (the value to histogram)",
            ));
        }
        (None, None) => Shape::Count,
        (Some(_), None) => Shape::Log2,
        (Some(_), Some(linear)) => parse_linear(linear)?,
    };
    let unit = args.value.clone().unwrap_or_default();
    let report = match shape {
        Shape::Count | Shape::Trace => Report::Counts {
            clear: false,
            sum: None,
            top: None,
        },
        Shape::Log2 | Shape::LogLinear { .. } => Report::Log2 { unit },
        Shape::Linear { min, step, .. } => Report::Linear { min, step, unit },
    };
    let request = Request {
        value: args.value.clone(),
        shape,
        by: KeyField::all(&args.by),
        filter: args.filter.clone(),
        ..args.last.apply(args.probing.request(vec![args.probe.clone()]))
    };
    let job = AggregateJob {
        command: "hist",
        what: None,
        request,
        report,
        tool_filter: false,
    }
    .percentiles(args.percentiles.precision(), "")?;
    aggregate::run(job, &args.probing.run_options(verbose)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_takes_three_integers() {
        assert_eq!(
            parse_linear("0, 1500,100").unwrap(),
            Shape::Linear {
                min: 0,
                max: 1500,
                step: 100
            }
        );
        assert_eq!(
            parse_linear("0,1500").unwrap_err().to_string(),
            "--linear 0,1500: expected MIN,MAX,STEP as integers (MIN and MAX 64-bit signed, \
             STEP unsigned), e.g. --linear 0,1000,100"
        );
    }
}
