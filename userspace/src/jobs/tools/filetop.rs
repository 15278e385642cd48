//! `tracekit filetop`: reads and writes by thread and file, busiest first, per interval
//! (`-i`, cleared each interval as `top` does) or for the whole run (bcc's and
//! libbpf-tools' `filetop`): the kernel functions `vfs_read` and `vfs_write`, counted and
//! their requested bytes (`count`, arg2) summed in the kernel, keyed by function, thread,
//! comm, the file's type (`ftype(file->f_inode->i_mode)`: R regular, S
//! socket, O other) and the file's name read through BTF (`str((struct file *)arg0->
//! f_path.dentry->d_name.name)`): 8 key words.

use super::{Flag, Group, NAME, Plan, Tool};
use crate::{
    engine::request::{KeyField, Request},
    jobs::aggregate::AggregateJob,
    output::aggregates::{Report, split::Split},
};

/// The functions: reads, then writes (their `buf` parameters differ in `const`, so the
/// fields are cast from `arg0`).
const PROBE: &str = "kprobe:vfs_read,vfs_write";

/// The file's inode's mode (type and permissions), for the T column and `--regular`.
const MODE: &str = "file->f_inode->i_mode";

/// `tracekit filetop`.
pub const TOOL: Tool = Tool {
    name: "filetop",
    summary: "File reads and writes by thread and file: counts and KiB, busiest first (libbpf-tools filetop)",
    examples: "  tracekit filetop -i 1               # each second, the busiest files
  tracekit filetop -p 1234 -d 10       # one process's files, for 10 s
  tracekit filetop --json -- ./app     # reads and writes per file while ./app runs

Columns TID COMM READS WRITES R_KB W_KB T FILE (libbpf-tools' order): the calls of
vfs_read and vfs_write and the bytes they were asked for (their count argument, rounded
down to KiB; --json has the bytes). T is the file's type: R regular, S socket, O other
(pipes, devices, ...). Every type is counted, as libbpf-tools' -a does (-a is --all-cpus
here); --regular counts regular files only, libbpf-tools' default. FILE is the file's
name, not its path (32 bytes at most). Needs kernel functions (kprobes or fentry).",
    flags: &[
        Flag::number("top", "N", Some("20"), "Show the N busiest rows (bcc filetop -r)").short('r'),
        Flag::switch(
            "regular",
            "Only regular files (libbpf-tools' default; its -a counts every type)",
        ),
        NAME,
    ],
    groups: &[Group::Probing],
    plan: |values| {
        let mut filters = values.comm_filter()?.into_iter().collect::<Vec<_>>();
        if values.switch("regular") {
            // S_IFREG: 0o100000 set, and none of the other S_IFMT bits (0o070000).
            filters.push(format!("({MODE} & 0x8000) && !({MODE} & 0x7000)"));
        }
        let filter = (!filters.is_empty()).then(|| filters.join(" && "));
        Ok(Plan::Aggregate(AggregateJob {
            command: "filetop",
            what: Some("file reads and writes".into()),
            request: Request {
                value: Some("arg2".into()),
                by: vec![
                    KeyField::labeled("TID", "tid"),
                    KeyField::labeled("COMM", "comm"),
                    KeyField::labeled("T", format!("ftype({MODE})")),
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
                after: vec!["T".into(), "FILE".into()],
                sort: Vec::new(),
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

    /// The key: function, thread, comm, the file's type from its inode's mode, the file's
    /// name (8 words); `--regular` filters on the mode's S_IFMT bits.
    #[test]
    fn filetop_keys_by_function_thread_comm_type_and_file_name() {
        let mut values = FlagValues::defaults(&TOOL);
        for regular in [false, true] {
            values.set("regular", crate::jobs::tools::Value::Switch(regular));
            let Ok(Plan::Aggregate(job)) = (TOOL.plan)(&values) else {
                panic!("aggregate");
            };
            let Ok(compiled) = crate::engine::compile::compile_in(
                &job.request,
                &crate::engine::compile::Events::test_6_18(),
            ) else {
                assert!(!regular, "only a kernel without vfs_read/vfs_write skips");
                eprintln!("skipped: this kernel has no vfs_read/vfs_write");
                return;
            };
            let listing = compiled.listing();
            assert!(
                listing.contains(
                    "operands: #0 func_ip #1 tid #2 comm #3 arg_path0[2]:2 \
                     #4 path_str(arg0)[2]:32 #5 arg2:8"
                ),
                "{listing}"
            );
            assert_eq!(listing.contains("bitand"), regular, "{listing}");
        }
    }
}
