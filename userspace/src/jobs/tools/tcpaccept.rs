//! `tracekit tcpaccept`: each TCP connection a process accepted (bcc/libbpf-tools
//! `tcpaccept`), seen at the return of `accept()` and `accept4()`
//! (`syscalls:sys_exit_accept`, `syscalls:sys_exit_accept4`), in the accepting process's
//! context: its PID and COMM, and the new socket's addresses and ports read through BTF
//! from the descriptor the call returned (`sock(ret)->__sk_common...`: the current task's
//! `files->fdt->fd[ret]->private_data->sk`).
//!
//! libbpf-tools reads the same socket at the return of `inet_csk_accept`, a kernel function
//! (kretprobe/fexit); the syscall tracepoints need neither. An IPv4 socket's 16-byte
//! addresses hold the IPv4-mapped address (`sk_daddr_set`), shown as IPv4, as an IPv6
//! socket's IPv4-mapped peer is.

use super::{Column, EventsJob, Flag, Group, NAME, Plan, Tool};
use crate::Error;

/// The accepted socket's `struct sock_common` member `member`.
fn sk(member: &str) -> String {
    format!("sock(ret)->__sk_common.{member}")
}

/// `tracekit tcpaccept`.
pub const TOOL: Tool = Tool {
    name: "tcpaccept",
    summary: "Print each TCP connection accepted, with the accepting process, addresses and ports (libbpf-tools tcpaccept)",
    examples: "  tracekit tcpaccept                  # every accepted TCP connection until Ctrl-C
  tracekit tcpaccept --lport 8080     # connections accepted on local port 8080
  tracekit tcpaccept -p 1234 -t       # the connections process 1234 accepts, timed
  tracekit tcpaccept --json -- ./server

A connection is shown when accept() or accept4() returns it (syscalls:sys_exit_accept*):
PID and COMM are the accepting process's, the addresses and ports are read from the
returned socket through BTF (sock(ret)->__sk_common.skc_*). IP is 4 or 6 (the socket's
family: an IPv6 socket's IPv4-mapped peer is 6, shown as IPv4).",
    flags: &[
        Flag::number(
            "lport",
            "PORT",
            None,
            "Only connections accepted on this local port (bcc -P)",
        ),
        NAME,
    ],
    groups: &[Group::Common],
    plan: |values| {
        // AF_INET, AF_INET6 with SOCK_STREAM: TCP (no other stream protocol of these
        // families is accepted); a failed accept returns no descriptor.
        let mut filter = vec![format!(
            "ret >= 0 && ({family} == 2 || {family} == 10)",
            family = sk("skc_family")
        )];
        if let Some(port) = values.number("lport") {
            if port > 65535 {
                return Err(Error::usage(format!(
                    "--lport {port}: a port is 0 to 65535"
                )));
            }
            filter.push(format!("{} == {port}", sk("skc_num")));
        }
        filter.extend(values.comm_filter()?);
        let columns = [
            Column {
                header: "PID",
                field: "pid",
            },
            Column {
                header: "COMM",
                field: "comm",
            },
            Column {
                header: "IP",
                field: "ipver(sock(ret)->__sk_common.skc_family)",
            },
            Column {
                header: "RADDR",
                field: "sock(ret)->__sk_common.skc_v6_daddr",
            },
            Column {
                header: "RPORT",
                field: "sock(ret)->__sk_common.skc_dport",
            },
            Column {
                header: "LADDR",
                field: "sock(ret)->__sk_common.skc_v6_rcv_saddr",
            },
            Column {
                header: "LPORT",
                field: "sock(ret)->__sk_common.skc_num",
            },
        ];
        let mut job = EventsJob::of_events(
            vec![
                "syscalls:sys_exit_accept".into(),
                "syscalls:sys_exit_accept4".into(),
            ],
            &columns,
        );
        job.request.filter = Some(filter.join(" && "));
        Ok(Plan::Events(job))
    },
    metric: None,
};
