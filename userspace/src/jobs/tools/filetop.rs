//! `tracekit filetop`: reads and writes by thread and file, busiest first, per interval
//! (`-i`, cleared each interval as `top` does) or for the whole run (bcc's and
//! libbpf-tools' `filetop -a`): the kernel functions `vfs_read` and `vfs_write`, counted and
//! their requested bytes (`count`, arg2) summed in the kernel, keyed by function, thread,
//! comm and the file's name read through BTF (`str((struct file *)arg0->f_path.dentry->
//! d_name.name)`).

use super::{Flag, Group, NAME, Plan, Tool};
use crate::{
    engine::request::{KeyField, Request},
    jobs::aggregate::AggregateJob,
    output::aggregates::{Report, split::Split},
};

/// The functions: reads, then writes (their `buf` parameters differ in `const`, so the
/// fields are cast from `arg0`).
const PROBE: &str = "kprobe:vfs_read,vfs_write";

/// `tracekit filetop`.
pub const TOOL: Tool = Tool {
    name: "filetop",
    summary: "File reads and writes by thread and file: counts and KiB, busiest first (libbpf-tools filetop)",
    examples: "  tracekit filetop -i 1               # each second, the busiest files
  tracekit filetop -p 1234 -d 10       # one process's files, for 10 s
  tracekit filetop --json -- ./app     # reads and writes per file while ./app runs

Columns TID COMM FILE READS WRITES R_KB W_KB: the calls of vfs_read and vfs_write and the
bytes they were asked for (their count argument, rounded down to KiB; --json has the
bytes), of every file type (libbpf-tools -a; sockets and pipes too). FILE is the file's
name, not its path (32 bytes at most). libbpf-tools' T (file type) column is not shown.
Needs kernel functions (kprobes or fentry).",
    flags: &[
        Flag::number("top", "N", Some("20"), "Show the N busiest rows (bcc filetop -r)").short('r'),
        NAME,
    ],
    groups: &[Group::Probing],
    plan: |values| {
        let filter = values.comm_filter()?;
        Ok(Plan::Aggregate(AggregateJob {
            command: "filetop",
            what: Some("file reads and writes".into()),
            request: Request {
                value: Some("arg2".into()),
                by: vec![
                    KeyField::labeled("TID", "tid"),
                    KeyField::labeled("COMM", "comm"),
                    KeyField::labeled(
                        "FILE",
                        "str((struct file *)arg0->f_path.dentry->d_name.name)",
                    ),
                ],
                by_event: true,
                filter,
                maps: values.maps,
                target: values.target,
                ..Request::probe(PROBE)
            },
            report: Report::Split(Split {
                probes: vec![
                    ("vfs_read".into(), "R_KB".into()),
                    ("vfs_write".into(), "W_KB".into()),
                ],
                div: 1024,
                top: Some(values.number("top").unwrap_or(20) as usize),
                joined: Vec::new(),
                counts: vec!["READS".into(), "WRITES".into()],
            }),
            tool_filter: true,
        }))
    },
    metric: Some(super::Metric {
        name: "file_io",
        help: "Bytes asked of vfs_read and vfs_write, by function and command.",
        labels: &[],
        by: &["comm"],
        unit: Some(super::ValueUnit::Bytes),
        buckets: None,
    }),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::tools::FlagValues;

    #[test]
    fn filetop_keys_by_function_thread_comm_and_file_name() {
        let Ok(Plan::Aggregate(job)) = (TOOL.plan)(&FlagValues::defaults(&TOOL)) else {
            panic!("aggregate");
        };
        let Ok(compiled) = crate::engine::compile::compile_in(
            &job.request,
            &crate::engine::compile::Events::test_6_18(),
        ) else {
            eprintln!("skipped: this kernel has no vfs_read/vfs_write");
            return;
        };
        let listing = compiled.listing();
        assert!(
            listing.contains("operands: #0 func_ip #1 tid #2 comm #3 path_str(arg0)[2]:32 #4 arg2:8"),
            "{listing}"
        );
    }
}
