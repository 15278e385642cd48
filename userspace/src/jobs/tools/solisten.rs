//! `tracekit solisten`: each TCP socket that starts listening (bcc/libbpf-tools
//! `solisten`), seen as its change to LISTEN on `sock:inet_sock_set_state`, in the process
//! calling `listen()`: its pid and comm, the address and port, and the backlog read from the
//! socket through BTF (`struct sock`'s `sk_max_ack_backlog`, set before the change).

use super::{
    Column, EventsJob, Group, NAME, ToolPlan, Tool,
    tcpstates::{IPPROTO_TCP, LISTEN},
};

/// `tracekit solisten`.
pub const TOOL: Tool = Tool {
    name: "solisten",
    summary: "Print each TCP listen() with its process, address, port and backlog (libbpf-tools solisten)",
    examples: "  tracekit solisten                   # every TCP listen() until Ctrl-C
  tracekit solisten -n nginx
  tracekit solisten --json -- ./server

Needs the kernel's BTF (the backlog is read from the socket). A listen() that fails before
the socket listens is not shown.",
    flags: &[NAME],
    groups: &[Group::Common],
    plan: |values| {
        let mut filter = vec![format!(
            "protocol == {IPPROTO_TCP} && newstate == {LISTEN} && oldstate != {LISTEN}"
        )];
        filter.extend(values.comm_filter()?);
        let mut job = EventsJob::new(
            "sock:inet_sock_set_state",
            &[
                Column {
                    header: "PID",
                    field: "pid",
                },
                Column {
                    header: "COMM",
                    field: "comm",
                },
                Column {
                    header: "BACKLOG",
                    field: "(struct sock *)skaddr->sk_max_ack_backlog",
                },
                Column {
                    header: "PORT",
                    field: "sport",
                },
                Column {
                    header: "ADDR",
                    field: "saddr_v6",
                },
            ],
        );
        job.request.filter = Some(filter.join(" && "));
        Ok(ToolPlan::Events(job))
    },
    metric: None,
};
