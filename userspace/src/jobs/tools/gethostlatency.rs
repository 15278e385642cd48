//! `tracekit gethostlatency`: each host name lookup with its latency (bcc's, bpftrace's and
//! libbpf-tools' `gethostlatency`): a uprobe and uretprobe on libc's `getaddrinfo()`, paired
//! per thread, the host name (`str(arg0)`: its pointer saved at the entry, the string read
//! whole and printed with the latency at the return).

use super::{CLOCK, Column, EventsJob, Flag, Group, NAME, ToolPlan, TIMESTAMP, Tool};
use crate::Result;

/// `tracekit gethostlatency`.
pub const TOOL: Tool = Tool {
    name: "gethostlatency",
    summary: "Print each getaddrinfo() host lookup with its latency (bcc gethostlatency)",
    examples: "  tracekit gethostlatency -T         # every lookup until Ctrl-C, with the time
  tracekit gethostlatency -p 1234
  tracekit gethostlatency --libc /usr/lib/musl/lib/libc.so -- ./app

LAT(ns) runs from getaddrinfo()'s entry to its return in the same thread. Host names are
shown whole (read at the return, from the pointer saved at the entry). bcc also probes gethostbyname() and
gethostbyname2(), which glibc keeps only for old programs; they are not traced here.",
    flags: &[
        Flag::text(
            "libc",
            "PATH",
            "The C library whose getaddrinfo() is probed (default libc, as the process maps it)",
        ),
        NAME,
        TIMESTAMP,
        CLOCK,
    ],
    groups: &[Group::Common, Group::Maps],
    plan: |values| gethostlatency(values).map(ToolPlan::Events),
    metric: None,
};

/// The columns: libbpf-tools' `PID COMM LATms HOST` (the latency in ns, as the other
/// tools print it).
pub const COLUMNS: [Column; 4] = [
    Column {
        header: "PID",
        field: "pid",
    },
    Column {
        header: "COMM",
        field: "comm",
    },
    Column {
        header: "LAT(ns)",
        field: "latency",
    },
    Column {
        header: "HOST",
        field: "start.str(arg0)",
    },
];

fn gethostlatency(values: &super::FlagValues) -> Result<EventsJob> {
    let library = values.text("libc").unwrap_or("libc");
    let mut job = EventsJob::new(&format!("uretprobe:{library}:getaddrinfo"), &COLUMNS)
        .with_flags(Vec::new(), values)?;
    job.request.target = values.target;
    Ok(job)
}
