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
  tracekit trace io_uring:io_uring_complete --filter '(struct io_kiocb *)req->opcode == 13' \
      --print 'res,sock(res)->__sk_common.skc_num'  # io_uring accepts: the local port
  tracekit trace kretprobe:vfs_fsync_range --print 'latency,start.str(file->f_path.dentry->d_name.name)'
                                     # a string through BTF from a parameter, saved at entry
  tracekit trace 'kr:ext4_file_write_iter{retval,start.str((struct kiocb *)arg0->ki_filp->f_path.dentry->d_name.name)}' \
      'kr:ext4_sync_file{retval,start.str(file->f_path.dentry->d_name.name)}'
                                     # writes and fsyncs, one stream, the file's name from each";

/// `tracekit trace`.
#[derive(Debug, ClapArgs)]
#[command(about = "Print each event with its fields, as it happens (perf trace, bcc trace)", after_help = EXAMPLES)]
pub struct Args {
    /// Probes: tracepoints, or one function probe (k:, kr:, f:, fr:, u:, ur:). PROBE{FIELD,...}
    /// prints its own fields instead of --print's: each such probe is traced apart (its own
    /// kernel program, so one more function probe each) and every event prints in one
    /// stream, in time order (probes whose parameters differ, e.g. a file's name from a
    /// struct kiocb * and from a struct file *)
    #[arg(required = true, value_name = "PROBE")]
    pub probes: Vec<String>,
    /// Only events for which EXPR holds (perf/ftrace filter syntax), evaluated in the kernel;
    /// a field may be a BTF path, with or without a cast: '(struct io_kiocb *)req->opcode ==
    /// 13'
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// Fields to print with each event (kstack, ustack: its stacks; str(FIELD), str(argN),
    /// str(retval), argv[I]: the string a pointer points to, whole (--max-string); dir(FD):
    /// the directory at descriptor FD (AT_FDCWD: the cwd) by the kernel's dentries; task->A->B,
    /// (struct S *)FIELD->A, PARAM->A->B, sock(FD)->A and file(FD)->A (the socket or file at
    /// descriptor field FD, e.g. sock(ret) of sys_exit_accept4): kernel structs through BTF
    /// (a struct of up to 32 bytes as raw bytes, e.g. skc_v6_daddr); str(PATH), str(PATH,N):
    /// the string a path's last char * points to, N bytes at most; latency and start.X,
    /// e.g. start.str(arg0), at a return probe: the time since its entry and the entry's X
    /// (a string leaves room for two numbers, one of 16 bytes at most for four))
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
    let with_stacks = |fields: &[String]| {
        let mut print: Vec<String> = fields
            .iter()
            .filter(|name| !STACKS.contains(&name.as_str()))
            .cloned()
            .collect();
        for (index, wanted) in [args.kernel_stack, args.user_stack].into_iter().enumerate() {
            if wanted || fields.iter().any(|p| p == STACKS[index]) {
                print.push(STACKS[index].to_string());
            }
        }
        print
    };
    let requests: Vec<Request> = probe_groups(&args.probes)?
        .into_iter()
        .map(|(probes, fields)| Request {
            shape: Shape::Trace,
            print: with_stacks(fields.as_deref().unwrap_or(&args.print)),
            filter: args.filter.clone(),
            ..args.last.apply(args.probing.request(probes))
        })
        .collect();
    trace::run_each(
        &requests,
        args.unwind.call_graph(),
        args.unwind.budget_bytes(),
        &args.symbols.apply(args.probing.run_options(verbose)?),
    )
}

/// Probes, and the fields they print instead of `--print`'s.
type ProbeGroup = (Vec<String>, Option<Vec<String>>);

/// The probe groups of `trace`'s PROBE arguments: those written without fields, together,
/// printing `--print` (`None`), first; then each `PROBE{FIELD,...}` alone with its own
/// fields (commas inside parentheses belong to a field: `str(PATH, 16)`).
///
/// # Errors
/// A usage error for unbalanced braces or an empty field list.
fn probe_groups(probes: &[String]) -> Result<Vec<ProbeGroup>> {
    let mut plain = Vec::new();
    let mut own = Vec::new();
    for probe in probes {
        let Some(open) = probe.find('{') else {
            if probe.contains('}') {
                return Err(tracekit::Error::usage(format!(
                    "{probe}: a '}}' without its '{{' (PROBE{{FIELD,...}})"
                )));
            }
            plain.push(probe.clone());
            continue;
        };
        let (name, rest) = probe.split_at(open);
        let inner = rest[1..].strip_suffix('}').ok_or_else(|| {
            tracekit::Error::usage(format!(
                "{probe}: its fields end with '}}' (PROBE{{FIELD,...}})"
            ))
        })?;
        let mut fields = Vec::new();
        let (mut depth, mut from) = (0i32, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                ',' if depth == 0 => {
                    fields.push(inner[from..i].trim().to_string());
                    from = i + 1;
                }
                _ => {}
            }
        }
        fields.push(inner[from..].trim().to_string());
        if name.is_empty() || fields.iter().any(String::is_empty) {
            return Err(tracekit::Error::usage(format!(
                "{probe}: expected PROBE{{FIELD,...}} with a probe and no empty field"
            )));
        }
        own.push((vec![name.to_string()], Some(fields)));
    }
    let mut groups = Vec::new();
    if !plain.is_empty() {
        groups.push((plain, None));
    }
    groups.extend(own);
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_with_fields_of_their_own_are_groups_of_their_own() {
        let probes: Vec<String> = [
            "kr:ext4_file_open{latency,start.str((struct file *)arg1->f_path.dentry->d_name.name, 32)}",
            "syscalls:sys_enter_read",
            "kr:ext4_sync_file{latency, start.str(file->f_path.dentry->d_name.name)}",
            "syscalls:sys_enter_write",
        ]
        .map(String::from)
        .to_vec();
        let groups = probe_groups(&probes).unwrap();
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            groups,
            [
                (
                    strings(&["syscalls:sys_enter_read", "syscalls:sys_enter_write"]),
                    None
                ),
                (
                    strings(&["kr:ext4_file_open"]),
                    Some(strings(&[
                        "latency",
                        "start.str((struct file *)arg1->f_path.dentry->d_name.name, 32)"
                    ]))
                ),
                (
                    strings(&["kr:ext4_sync_file"]),
                    Some(strings(&[
                        "latency",
                        "start.str(file->f_path.dentry->d_name.name)"
                    ]))
                ),
            ]
        );
        for bad in ["kr:f{latency", "kr:f}", "{latency}", "kr:f{latency,}", "kr:f{}"] {
            let err = probe_groups(&[bad.to_string()]).unwrap_err();
            assert!(matches!(err, tracekit::Error::Usage(_)), "{bad}: {err}");
        }
    }
}
