//! `tracekit bindsnoop`: each IPv4 socket bind (bcc's and libbpf-tools' `bindsnoop`):
//! `inet_bind(sock, uaddr, addr_len)` (net/ipv4/af_inet.c, which bind(2) reaches for an
//! `AF_INET` socket) paired with its return in the same thread: the port and address asked
//! for, read at the entry through BTF (`(struct sockaddr_in *)uaddr->sin_port`), and the
//! result. A kernel function: kprobe or fentry, whichever the kernel has.

use super::{CLOCK, Column, EventsJob, FAILURES, Group, NAME, ToolPlan, TIMESTAMP, Tool};
use crate::Result;

/// `tracekit bindsnoop`.
pub const TOOL: Tool = Tool {
    name: "bindsnoop",
    summary: "Print each IPv4 socket bind with its port, address and result (bcc bindsnoop)",
    examples: "  tracekit bindsnoop                 # every IPv4 bind until Ctrl-C
  tracekit bindsnoop -x              # only the binds that failed
  tracekit bindsnoop -p 1234 -T

PORT and ADDR are what the bind asked for (port 0: the kernel picks one). RET is
inet_bind's return value: 0, or -errno (-98: EADDRINUSE). IPv6 binds (inet6_bind) are not
shown yet, and libbpf-tools' PROTO, OPTS and IF columns are not.",
    flags: &[FAILURES.help("Only binds that failed"), NAME, TIMESTAMP, CLOCK],
    groups: &[Group::Probing],
    plan: |values| bindsnoop(values).map(ToolPlan::Events),
    metric: None,
};

/// The columns: libbpf-tools' `PID COMM RET PORT ADDR` (of its `PID COMM RET PROTO OPTS IF
/// PORT ADDR`).
pub const COLUMNS: [Column; 5] = [
    Column {
        header: "PID",
        field: "pid",
    },
    Column {
        header: "COMM",
        field: "comm",
    },
    Column {
        header: "RET",
        field: "retval:s32",
    },
    Column {
        header: "PORT",
        field: "start.(struct sockaddr_in *)uaddr->sin_port",
    },
    Column {
        header: "ADDR",
        field: "start.(struct sockaddr_in *)uaddr->sin_addr.s_addr",
    },
];

fn bindsnoop(values: &super::FlagValues) -> Result<EventsJob> {
    // inet_bind returns an int: negative when bit 31 of the return register is set (the
    // filter language reads the whole register, and has no `retval:s32`).
    let failures = values.switch(FAILURES.long);
    let mut job = EventsJob::new("kretprobe:inet_bind", &COLUMNS).with_flags(
        failures
            .then(|| "retval & 2147483648".to_string())
            .into_iter()
            .collect(),
        values,
    )?;
    job.request.target = values.target;
    Ok(job)
}
