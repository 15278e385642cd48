//! `tracekit filelife`: each file deleted with how long it lived (bcc's and libbpf-tools'
//! `filelife`): a start stage at `security_inode_create` (every file created: `open` with
//! `O_CREAT`, `mknod`, through any path into the filesystem) saves the time under the new
//! file's `struct dentry *`; `vfs_unlink` with the same dentry ends it and prints the age
//! and the file's name (`str(dentry->d_name.name)`, through BTF). Files created before
//! tracing began are not shown. Kernel functions: kprobes or fentry.

use super::{Column, EventsJob, Group, NAME, ToolPlan, Tool};
use crate::{
    Result,
    engine::request::{Start, StartProbe},
};

/// The begin event: every file's creation, in the creating task.
pub const CREATE: &str = "kprobe:security_inode_create";
/// The end event: an unlink, in the unlinking task.
pub const UNLINK: &str = "kprobe:vfs_unlink";

/// The columns: libbpf-tools' `TIME PID COMM AGE(s) FILE` (TIME always shown).
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
        header: "AGE(s)",
        field: "sec(latency)",
    },
    Column {
        header: "FILE",
        field: "str(dentry->d_name.name)",
    },
];

/// `tracekit filelife`.
pub const TOOL: Tool = Tool {
    name: "filelife",
    summary: "Print each file deleted with its age since it was created (bcc filelife)",
    examples: "  tracekit filelife                   # every short-lived file until Ctrl-C
  tracekit filelife -p 1234           # files this process deletes
  tracekit filelife --json -- make    # while make runs

AGE(s) runs from the file's creation (security_inode_create: open with O_CREAT, mknod,
mkfifo) to its unlink (vfs_unlink), by the file's dentry; files created before tracing
began are not shown. PID and COMM are the deleting task's. FILE is the file's name (whole, up to
NAME_MAX; --max-string N cuts it), not its path. Needs kernel functions (kprobes or fentry).",
    flags: &[NAME],
    groups: &[Group::Probing],
    plan: |values| filelife(values).map(ToolPlan::Events),
    metric: None,
};

fn filelife(values: &super::FlagValues) -> Result<EventsJob> {
    let mut job = EventsJob::new(UNLINK, &COLUMNS).with_flags(Vec::new(), values)?;
    job.request.start = Some(Start {
        probes: vec![StartProbe::new(CREATE, &["dentry"])],
        end_pair: vec!["dentry".into()],
        // A file may be created by one task and deleted by another of the same run.
        all_tasks: false,
        per_thread: false,
        keep: false,
    });
    job.request.target = values.target;
    job.time = super::EventTime::Clock;
    Ok(job)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::tools::FlagValues;

    #[test]
    fn filelife_pairs_creation_and_unlink_by_dentry() {
        let job = filelife(&FlagValues::defaults(&TOOL)).unwrap();
        assert_eq!(job.request.probes, [UNLINK]);
        assert_eq!(job.request.print, ["latency", "str(dentry->d_name.name)"]);
        let Ok(compiled) = crate::engine::compile::compile_in(
            &job.request,
            &crate::engine::compile::Events::test_6_18(),
        ) else {
            eprintln!("skipped: this kernel has no security_inode_create/vfs_unlink BTF");
            return;
        };
        let listing = compiled.listing();
        for line in [
            "Start KernelFunctions { functions: [\"security_inode_create\"], ret: false",
            "operands: #0 arg1:8\ncorr: #0 | key: - | saves: -",
            "Main KernelFunctions { functions: [\"vfs_unlink\"], ret: false",
            "operands: #0 arg2:8 #1 latency #2 path_str(arg2)[1]:4096 whole:4096\ncorr: #0 |",
            "flags: needs_start",
        ] {
            assert!(listing.contains(line), "{line}\n{listing}");
        }
    }
}
