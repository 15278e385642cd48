//! `tracekit filetop`: reads and writes by thread and file, busiest first, per interval
//! (`-i`, cleared each interval as `top` does) or for the whole run (bcc's and
//! libbpf-tools' `filetop`): the kernel functions `vfs_read` and `vfs_write`, counted and
//! their requested bytes (`count`, arg2) summed in the kernel, keyed by function, thread,
//! comm, the file's type (`ftype(file->f_inode->i_mode)`: R regular, S
//! socket, O other) and the file's name read through BTF (`str((struct file *)arg0->
//! f_path.dentry->d_name.name)`): 8 key words.

use super::{Flag, FlagKind, Group, NAME, NOCLEAR, ToolPlan, Tool};
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

/// `--sort`'s choices and the row values each adds up ([`Split::sort`]: 0 and 1 the read
/// and written bytes, 2 and 3 the read and write calls), as libbpf-tools' `sort_column`
/// orders its rows: `all` (its default) adds calls and bytes.
pub const SORTS: [(&str, &str, &[usize]); 5] = [
    ("all", "Reads, writes and their bytes, added up", &[0, 1, 2, 3]),
    ("reads", "Read calls", &[2]),
    ("writes", "Write calls", &[3]),
    ("rbytes", "Bytes read", &[0]),
    ("wbytes", "Bytes written", &[1]),
];

/// The [`Split::sort`] of a `--sort` choice (`all` for an unknown one: clap checked it).
pub fn sort_of(choice: Option<&str>) -> Vec<usize> {
    let found = SORTS.iter().find(|(name, _, _)| Some(*name) == choice);
    found.map_or(SORTS[0].2, |(_, _, sort)| sort).to_vec()
}

/// `tracekit filetop`.
pub const TOOL: Tool = Tool {
    name: "filetop",
    summary: "File reads and writes by thread and file: counts and KiB, busiest first (libbpf-tools filetop)",
    examples: "  tracekit filetop -i 1               # each second, the busiest files
  tracekit filetop -p 1234 -d 10       # one process's files, for 10 s
  tracekit filetop --json -- ./app     # reads and writes per file while ./app runs
  tracekit filetop -i 5 --sort wbytes -C  # the most written files, screens kept

Columns TID COMM READS WRITES R_KB W_KB T FILE (libbpf-tools' order): the calls of
vfs_read and vfs_write and the bytes they were asked for (their count argument, rounded
down to KiB; --json has the bytes). T is the file's type: R regular, S socket, O other
(pipes, devices, ...). Every type is counted, as libbpf-tools' -a does (-a is --all-cpus
here); --regular counts regular files only, libbpf-tools' default. FILE is the file's
name, not its path (32 bytes at most). Rows are ordered as libbpf-tools' -s orders them
(--sort; all, its default, adds calls and bytes; bcc's default is rbytes); on a terminal
each interval clears the screen first unless --noclear (bcc's -C, which is --count in
hardirqs and softirqs here). Needs kernel functions (kprobes or fentry).",
    flags: &[
        Flag::number("top", "N", Some("20"), "Show the N busiest rows (bcc filetop -r)").short('r'),
        Flag::switch(
            "regular",
            "Only regular files (libbpf-tools' default; its -a counts every type)",
        ),
        Flag {
            long: "sort",
            // Not -s: that is sigsnoop's --signal (tcptop's --sort has none either).
            short: None,
            help: "Order the rows by (libbpf-tools filetop -s)",
            kind: FlagKind::Choice {
                value_name: "SORT",
                choices: &[
                    (SORTS[0].0, SORTS[0].1),
                    (SORTS[1].0, SORTS[1].1),
                    (SORTS[2].0, SORTS[2].1),
                    (SORTS[3].0, SORTS[3].1),
                    (SORTS[4].0, SORTS[4].1),
                ],
                default: Some("all"),
            },
        },
        NOCLEAR,
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
        Ok(ToolPlan::Aggregate(AggregateJob {
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
                sort: sort_of(values.text("sort")),
                clear: !values.switch(NOCLEAR.long),
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
            let Ok(ToolPlan::Aggregate(job)) = (TOOL.plan)(&values) else {
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
                     #4 path_str(arg0)[2]:33 whole:33+head #5 arg2:8"
                ),
                "{listing}"
            );
            assert_eq!(listing.contains("bitand"), regular, "{listing}");
        }
    }

    /// Each `--sort` orders the rows as libbpf-tools' `sort_column` does, largest first:
    /// four files whose read bytes, written bytes, read calls and write calls all order
    /// them differently, and `all` by calls plus bytes.
    #[test]
    fn filetop_sorts_as_libbpf_tools() {
        use crate::engine::{Group, KeyColumn, KeyKind, KeyValue};
        let Ok(ToolPlan::Aggregate(job)) = (TOOL.plan)(&FlagValues::defaults(&TOOL)) else {
            panic!("aggregate");
        };
        let Report::Split(split) = job.report else {
            panic!("split");
        };
        assert_eq!(split.sort, [0, 1, 2, 3], "libbpf-tools' default: all");
        assert!(split.clear);
        let columns = ["function", "FILE"].map(|name| KeyColumn {
            name: name.into(),
            kind: KeyKind::Int { signed: false },
        });
        // (file, read calls, read bytes, write calls, write bytes)
        let files = [
            ("a", 1, 4096, 0, 0),
            ("b", 0, 0, 2, 8192),
            ("c", 50, 100, 0, 0),
            ("d", 0, 0, 10, 10),
        ];
        let mut groups = Vec::new();
        for (file, reads, rbytes, writes, wbytes) in files {
            for (function, count, sum) in [("vfs_read", reads, rbytes), ("vfs_write", writes, wbytes)] {
                if count > 0 {
                    groups.push(Group {
                        key: vec![KeyValue::Text(function.into()), KeyValue::Text(file.into())],
                        count,
                        sum,
                        slots: Vec::new(),
                    });
                }
            }
        }
        let refs: Vec<&Group> = groups.iter().collect();
        for (choice, order) in [
            ("all", ["b", "a", "c", "d"]),
            ("reads", ["c", "a", "b", "d"]),
            ("writes", ["d", "b", "a", "c"]),
            ("rbytes", ["a", "c", "b", "d"]),
            ("wbytes", ["b", "d", "a", "c"]),
        ] {
            let split = Split {
                sort: sort_of(Some(choice)),
                ..split.clone()
            };
            let (header, rows, _) = crate::output::aggregates::split::table(&split, &columns, &refs);
            assert_eq!(header, ["READS", "WRITES", "R_KB", "W_KB", "FILE"]);
            let shown: Vec<&str> = rows.iter().map(|row| row[4].as_str()).collect();
            assert_eq!(shown, order, "--sort {choice}: {rows:?}");
        }
        assert_eq!(
            crate::output::aggregates::split::table(&split, &columns, &refs).1[0],
            ["0", "2", "0", "8", "b"]
        );
        // -C: the screen is not cleared.
        let mut values = FlagValues::defaults(&TOOL);
        values.set("noclear", crate::jobs::tools::Value::Switch(true));
        values.set("sort", crate::jobs::tools::Value::Text("wbytes".into()));
        let Ok(ToolPlan::Aggregate(job)) = (TOOL.plan)(&values) else {
            panic!("aggregate");
        };
        let Report::Split(split) = job.report else {
            panic!("split");
        };
        assert_eq!((split.sort, split.clear), (vec![1], false));
    }
}
