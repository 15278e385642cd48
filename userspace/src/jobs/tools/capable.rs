//! `tracekit capable`: each kernel capability check (bcc's and libbpf-tools' `capable`):
//! `cap_capable(cred, target_ns, cap, opts)`, the commoncap security hook every
//! `capable()`/`ns_capable()` reaches, with the checking task's uid, pid, command, the
//! capability's number and name. A kernel function: kprobe or fentry, whichever the kernel
//! has. Checks made with `CAP_OPT_NOAUDIT` (bit 1 of `opts`: probes that do not log a denial,
//! as `has_capability_noaudit`) are left out unless `--all-checks`, as bcc leaves them out
//! unless `-v`.

use super::{CLOCK, Column, EventTime, EventsJob, Flag, Group, NAME, ToolPlan, TIMESTAMP, Tool};

/// The capabilities by number (`include/uapi/linux/capability.h`, 0 to 40 as of Linux 6.x).
pub const CAPABILITIES: [&str; 41] = [
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_MKNOD",
    "CAP_LEASE",
    "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN",
    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",
    "CAP_AUDIT_READ",
    "CAP_PERFMON",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
];

/// The name of capability `number` (`CAP_CHOWN` for 0), or the number for one this table
/// does not know.
pub fn capability_name(number: i64) -> String {
    usize::try_from(number)
        .ok()
        .and_then(|n| CAPABILITIES.get(n))
        .map_or_else(|| number.to_string(), |name| (*name).to_string())
}

/// `tracekit capable`.
pub const TOOL: Tool = Tool {
    name: "capable",
    summary: "Print each kernel capability check with its process and capability (bcc capable)",
    examples: "  tracekit capable                   # every audited capability check until Ctrl-C
  tracekit capable -p 1234 -T        # checks of process 1234, with the time
  tracekit capable --all-checks      # also the checks that do not audit (bcc -v)
  tracekit capable --json -- ./app

Columns are libbpf-tools' UID, PID, COMM, CAP and NAME; its AUDIT and VERDICT are not shown
(the verdict would need the return probe).",
    flags: &[
        Flag::switch(
            "all-checks",
            "Also checks made with CAP_OPT_NOAUDIT, which log no denial (bcc -v)",
        ),
        NAME,
        TIMESTAMP,
        CLOCK,
    ],
    groups: &[Group::Probing],
    plan: |values| {
        let mut filter = Vec::new();
        if !values.switch("all-checks") {
            // CAP_OPT_NOAUDIT is bit 1 of opts (include/linux/security.h).
            filter.push("!(opts & 2)".to_string());
        }
        filter.extend(values.comm_filter()?);
        let mut job = EventsJob::new(
            "kprobe:cap_capable",
            &[
                Column {
                    header: "UID",
                    field: "task->real_cred->uid.val",
                },
                Column {
                    header: "PID",
                    field: "pid",
                },
                Column {
                    header: "COMM",
                    field: "comm",
                },
                Column {
                    header: "CAP",
                    field: "cap",
                },
                Column {
                    header: "NAME",
                    field: "capability(cap)",
                },
            ],
        );
        if !filter.is_empty() {
            job.request.filter = Some(filter.join(" && "));
        }
        job.request.target = values.target;
        job.request.maps = values.maps;
        job.time = EventTime::of(values);
        Ok(ToolPlan::Events(job))
    },
    metric: None,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_are_named_by_number() {
        assert_eq!(capability_name(0), "CAP_CHOWN");
        assert_eq!(capability_name(21), "CAP_SYS_ADMIN");
        assert_eq!(capability_name(40), "CAP_CHECKPOINT_RESTORE");
        assert_eq!(capability_name(41), "41");
        assert_eq!(capability_name(-1), "-1");
    }
}
