//! `tracekit tcpaccept`: each TCP connection a process accepted (bcc/libbpf-tools
//! `tcpaccept`), seen at the return of `accept()` and `accept4()`
//! (`syscalls:sys_exit_accept`, `syscalls:sys_exit_accept4`), in the accepting process's
//! context: its PID and COMM, and the new socket's addresses and ports read through BTF
//! from the descriptor the call returned (`sock(ret)->__sk_common...`: the current task's
//! `files->fdt->fd[ret]->private_data->sk`).
//!
//! A server that accepts through io_uring (`IORING_OP_ACCEPT`) makes no accept syscall: its
//! accepts are a second probe group ([`EventsJob::also`]), the completions of
//! `io_uring:io_uring_complete` whose request (`req`, a `struct io_kiocb *`) is an accept
//! (`opcode` 13) into a plain descriptor (the `struct io_accept` at the request's start has
//! no `file_slot`: a fixed-file accept's result is no descriptor of the task), the socket
//! read from the result (`sock(res)`, an `int`). The completion runs in the submitting
//! task's context (inline, or in its task work), or in one of its io-wq workers (COMM
//! `iou-wrk-PID`), which share its descriptor table. A multishot accept
//! (`IORING_ACCEPT_MULTISHOT`) posts each connection as a completion of no request (`req`
//! NULL), which cannot be told from other requests' and is not shown. A kernel without the
//! tracepoint (built without io_uring), with one that records no `req` (older kernels'), or
//! without `struct io_kiocb` in its BTF runs without the group, saying so under `-v`.
//!
//! libbpf-tools reads the same socket at the return of `inet_csk_accept`, a kernel function
//! (kretprobe/fexit), which sees both; the tracepoints need neither. An IPv4 socket's
//! 16-byte addresses hold the IPv4-mapped address (`sk_daddr_set`), shown as IPv4, as an
//! IPv6 socket's IPv4-mapped peer is.

use super::{Column, EventsJob, Flag, FlagValues, Group, NAME, ToolPlan, Tool};
use crate::{Error, Result};

/// The syscalls' probes.
pub const PROBES: [&str; 2] = ["syscalls:sys_exit_accept", "syscalls:sys_exit_accept4"];

/// The io_uring group's probe: every io_uring completion.
pub const URING_PROBE: &str = "io_uring:io_uring_complete";

/// `IORING_OP_ACCEPT`, in `enum io_uring_op` (the UAPI: fixed since 5.5).
pub const IORING_OP_ACCEPT: u8 = 13;

/// The io_uring completions that are accepts into a descriptor, with one: the request is an
/// accept, and its `struct io_accept` (the request's command data, at its start) has no
/// fixed-file slot.
pub const URING_ACCEPTS: &str = "(struct io_kiocb *)req->opcode == 13 \
     && (struct io_accept *)req->file_slot == 0 && res >= 0";

/// The columns: libbpf-tools' `PID COMM IP RADDR RPORT LADDR LPORT`, read from the socket
/// at descriptor `fd` (`sock(ret)`, `sock(res)`).
const fn columns(
    ip: &'static str,
    raddr: &'static str,
    rport: &'static str,
    laddr: &'static str,
    lport: &'static str,
) -> [Column; 7] {
    [
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
            field: ip,
        },
        Column {
            header: "RADDR",
            field: raddr,
        },
        Column {
            header: "RPORT",
            field: rport,
        },
        Column {
            header: "LADDR",
            field: laddr,
        },
        Column {
            header: "LPORT",
            field: lport,
        },
    ]
}

/// The syscalls' columns: the socket at the descriptor `accept()` returned.
pub const COLUMNS: [Column; 7] = columns(
    "ipver(sock(ret)->__sk_common.skc_family)",
    "sock(ret)->__sk_common.skc_v6_daddr",
    "sock(ret)->__sk_common.skc_dport",
    "sock(ret)->__sk_common.skc_v6_rcv_saddr",
    "sock(ret)->__sk_common.skc_num",
);

/// The io_uring group's columns: the socket at the descriptor the accept completed with.
pub const URING_COLUMNS: [Column; 7] = columns(
    "ipver(sock(res)->__sk_common.skc_family)",
    "sock(res)->__sk_common.skc_v6_daddr",
    "sock(res)->__sk_common.skc_dport",
    "sock(res)->__sk_common.skc_v6_rcv_saddr",
    "sock(res)->__sk_common.skc_num",
);

/// `tracekit tcpaccept`.
pub const TOOL: Tool = Tool {
    name: "tcpaccept",
    summary: "Print each TCP connection accepted, with the accepting process, addresses and ports (libbpf-tools tcpaccept)",
    examples: "  tracekit tcpaccept                  # every accepted TCP connection until Ctrl-C
  tracekit tcpaccept --lport 8080     # connections accepted on local port 8080
  tracekit tcpaccept -p 1234 -t       # the connections process 1234 accepts, timed
  tracekit tcpaccept --json -- ./server

A connection is shown when accept() or accept4() returns it (syscalls:sys_exit_accept*),
or when an io_uring accept (IORING_OP_ACCEPT) completes with it (io_uring:io_uring_complete;
not a multishot accept's connections, nor accepts into fixed files): PID and COMM are the
accepting process's (an io-wq worker's COMM is iou-wrk-PID), the addresses and ports are
read from the new socket through BTF (sock(ret)->__sk_common.skc_*, sock(res)->... for
io_uring). IP is 4 or 6 (the socket's family: an IPv6 socket's IPv4-mapped peer is 6,
shown as IPv4). Without the io_uring tracepoint or struct io_kiocb in the kernel's BTF,
only the syscalls are traced (-v says why).",
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
    plan: |values| plan(values).map(ToolPlan::Events),
    metric: None,
};

/// The filter of the accepts whose new socket is at descriptor field `fd`, after `first`
/// (what makes the event an accept that returned a descriptor): TCP sockets (`--lport`,
/// `-n` as given).
fn filter(first: &str, fd: &str, values: &FlagValues) -> Result<String> {
    let sk = |member: &str| format!("sock({fd})->__sk_common.{member}");
    // AF_INET, AF_INET6 with SOCK_STREAM: TCP (no other stream protocol of these
    // families is accepted).
    let mut filter = vec![format!(
        "{first} && ({family} == 2 || {family} == 10)",
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
    Ok(filter.join(" && "))
}

/// tcpaccept's plan: the syscalls' returns, and the io_uring accepts as a group the tool
/// runs without where the kernel lacks them.
///
/// # Errors
/// A usage error for a bad `--lport` or `-n`.
pub fn plan(values: &FlagValues) -> Result<EventsJob> {
    // A failed accept returns no descriptor.
    let mut job = EventsJob::of_events(PROBES.iter().map(|p| p.to_string()).collect(), &COLUMNS);
    job.request.filter = Some(filter("ret >= 0", "ret", values)?);
    let mut job = job.also(URING_PROBE, &URING_COLUMNS);
    let uring = job.parts.last_mut().expect("the io_uring group");
    uring.request.filter = Some(filter(URING_ACCEPTS, "res", values)?);
    uring.optional = Some("io_uring accepts");
    Ok(job)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::compile::{Events, compile_in};
    use crate::jobs::tools::Value;

    /// The syscalls' group as before, the io_uring group beside it: the accept opcode, no
    /// fixed-file slot and a descriptor (`res`, an `int`) before the socket's family, port
    /// and comm; the same headers.
    #[test]
    fn tcpaccept_adds_the_io_uring_accepts() {
        let mut values = FlagValues::defaults(&TOOL);
        values.set("lport", Value::Number(8080));
        values.set("name", Value::Text("srv".into()));
        let job = plan(&values).unwrap();
        assert_eq!(job.request.probes, PROBES);
        assert_eq!(
            job.request.filter.as_deref(),
            Some(
                "ret >= 0 && (sock(ret)->__sk_common.skc_family == 2 || \
                 sock(ret)->__sk_common.skc_family == 10) && \
                 sock(ret)->__sk_common.skc_num == 8080 && comm == \"srv\""
            )
        );
        let [uring] = &job.parts[..] else {
            panic!("one more group: {:?}", job.parts);
        };
        assert_eq!(uring.request.probes, [URING_PROBE]);
        assert_eq!(uring.optional, Some("io_uring accepts"));
        assert_eq!(
            uring.request.filter.as_deref(),
            Some(
                "(struct io_kiocb *)req->opcode == 13 && (struct io_accept *)req->file_slot \
                 == 0 && res >= 0 && (sock(res)->__sk_common.skc_family == 2 || \
                 sock(res)->__sk_common.skc_family == 10) && \
                 sock(res)->__sk_common.skc_num == 8080 && comm == \"srv\""
            )
        );
        assert_eq!(
            uring.request.print,
            [
                "sock(res)->__sk_common.skc_family",
                "sock(res)->__sk_common.skc_v6_daddr",
                "sock(res)->__sk_common.skc_dport",
                "sock(res)->__sk_common.skc_v6_rcv_saddr",
                "sock(res)->__sk_common.skc_num"
            ]
        );
        let headers = |c: &[Column]| c.iter().map(|c| c.header).collect::<Vec<_>>();
        assert_eq!(headers(&uring.columns), headers(&job.columns));
        assert_eq!(job.request.target, uring.request.target);
        let mut bad = values.clone();
        bad.set("lport", Value::Number(65536));
        assert_eq!(
            plan(&bad).unwrap_err().to_string(),
            "--lport 65536: a port is 0 to 65535"
        );
        if crate::probe::btf_path::kernel_btf().is_none() {
            eprintln!("skipped: no /sys/kernel/btf/vmlinux");
            return;
        }
        // The syscalls' descriptor is 8 bytes (`long ret`), io_uring's 4 (`int res`, at 32
        // in the 6.18 format); `req` is at 16.
        let listing = |request| compile_in(request, &Events::test_6_18()).unwrap().listing();
        let syscalls = listing(&job.request);
        assert!(
            syscalls.contains(
                "operands: #0 fd_path(@16:s8)[3]:2 #1 fd_path(@16:s8)[3]:16 \
                 #2 fd_path(@16:s8)[3]:2 #3 fd_path(@16:s8)[3]:16 #4 fd_path(@16:s8)[3]:2 \
                 #5 field@16:s8 #6 comm\n"
            ),
            "{syscalls}"
        );
        let uring = listing(&uring.request);
        for line in [
            "Main Tracepoints([Tracepoint { system: \"io_uring\", event: \"io_uring_complete\" }])",
            "operands: #0 fd_path(@32:s4)[3]:2 #1 fd_path(@32:s4)[3]:16 #2 fd_path(@32:s4)[3]:2 \
             #3 fd_path(@32:s4)[3]:16 #4 fd_path(@32:s4)[3]:2 #5 field_path@16[1]:1 \
             #6 field_path@16[1]:4 #7 field@32:s4 #8 comm",
            "filter: eq #5 13 eq #6 0 and sge #7 0 and eq #0 2 eq #0 10 or and eq #4 8080 and \
             str_eq #8 0 and",
        ] {
            assert!(uring.contains(line), "{line}\n{uring}");
        }
    }
}
