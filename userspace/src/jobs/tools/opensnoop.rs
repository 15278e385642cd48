//! `tracekit opensnoop`: each `openat(2)` with its path, fd or errno (bcc's and
//! libbpf-tools' `opensnoop`): `syscalls:sys_enter_openat` saves the path's pointer under
//! the thread id, and `syscalls:sys_exit_openat` reads the whole path
//! ([`operand::SAVED_USER_STR`](tracekit_common::engine::operand::SAVED_USER_STR)) and
//! prints it with the return value.

use super::{
    CLOCK, Column, EventsJob, FAILURES, Flag, Group, NAME, ToolPlan, TIMESTAMP, Tool,
};
use crate::Result;

/// `tracekit opensnoop`.
pub const TOOL: Tool = Tool {
    name: "opensnoop",
    summary: "Print each file open with its path and fd or errno (bcc opensnoop)",
    examples: "  tracekit opensnoop                # every openat(2) of the machine until Ctrl-C
  tracekit opensnoop -x             # only the opens that failed
  tracekit opensnoop -p 1234 -T     # one process, with the wall clock
  tracekit opensnoop -n nginx --json

Paths are shown whole (--max-string N cuts them at N bytes, with `...`), as the process
passed them: read at the syscall's exit, so a path in a page not faulted in at entry still
shows; `<unreadable>` when it cannot be read. With --full-path a relative path is joined
to its directory (the dirfd's, or the cwd) as the kernel's dentries name it at the open's
return, up to the process's root (64 levels at most: deeper shows `.../` first); on a kernel
without BTF, as /proc/PID shows it when the line is printed (-v says which).
open(2) and openat2(2) are not traced: glibc's open() calls openat.",
    flags: &[
        FAILURES.help("Only opens that failed"),
        NAME,
        TIMESTAMP,
        CLOCK,
        Flag::switch(
            "full-path",
            "Print absolute paths: a relative one joined to its directory fd's or the cwd's \
             path, from the kernel's dentries (libbpf-tools opensnoop -F)",
        ),
    ],
    groups: &[Group::Common, Group::Maps],
    plan: |values| opensnoop(values).map(ToolPlan::Events),
    metric: None,
};

/// The columns: libbpf-tools' `PID COMM FD ERR PATH`.
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
        header: "FD",
        field: "fd(ret)",
    },
    Column {
        header: "ERR",
        field: "errno(ret)",
    },
    Column {
        header: "PATH",
        field: "start.filename",
    },
];

fn opensnoop(values: &super::FlagValues) -> Result<EventsJob> {
    let mut columns = COLUMNS;
    if values.switch("full-path") {
        // By the kernel's dentries, right once the process is gone; /proc at print time
        // only where the kernel cannot walk them (`-v` says which).
        columns[4].field = if crate::jobs::events::no_dentry_walk().is_none() {
            "full_path(dir(start.dfd), start.filename)"
        } else {
            "full_path(start.dfd, start.filename)"
        };
    }
    EventsJob::syscall_returns(&["openat"], &columns, values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        engine::compile::{Events, compile_in},
        jobs::tools::{FlagValues, Value},
    };

    #[test]
    fn opensnoop_saves_the_path_at_entry_and_prints_it_at_exit() {
        let mut values = FlagValues::defaults(&TOOL);
        values.set("failures", Value::Switch(true));
        let ToolPlan::Events(job) = (TOOL.plan)(&values).unwrap() else {
            panic!("events");
        };
        assert_eq!(job.request.print, ["ret", "start.filename"]);
        assert_eq!(
            compile_in(&job.request, &Events::test_6_18())
                .unwrap()
                .listing(),
            r#"Start Tracepoints([Tracepoint { system: "syscalls", event: "sys_enter_openat" }])
operands: #0 tid #1 field@24:8
corr: #0 | key: - | saves: #1->0
value: - | agg: count | layout: array bound 0
filter: -
flags: needs_ids by_thread
Main Tracepoints([Tracepoint { system: "syscalls", event: "sys_exit_openat" }])
operands: #0 tid #1 field@16:s8 #2 saved_user_str0 whole:4096
corr: #0 | key: - | saves: -
value: - | agg: trace | layout: array bound 0
filter: slt #1 0
flags: needs_start filter_first needs_ids
columns: 
"#
        );
    }

    #[test]
    fn full_paths_walk_the_saved_descriptor_once_the_start_is_found() {
        let values = FlagValues::defaults(&TOOL);
        let mut columns = COLUMNS;
        columns[4].field = "full_path(dir(start.dfd), start.filename)";
        let job = EventsJob::syscall_returns(&["openat"], &columns, &values).unwrap();
        assert_eq!(job.request.print, ["ret", "dir(start.dfd)", "start.filename"]);
        let listing = compile_in(&job.request, &Events::test_6_18())
            .unwrap()
            .listing();
        assert!(
            listing.contains(
                "operands: #0 tid #1 field@16:8 #2 field@24:8\ncorr: #0 | key: - | saves: #1->0 #2->1"
            ),
            "{listing}"
        );
        assert!(
            listing.contains(
                "operands: #0 tid #1 field@16:s8 #2 saved0 #3 dir_path(#2, after start) \
                 #4 saved_user_str1 whole:4096"
            ),
            "{listing}"
        );
    }
}
