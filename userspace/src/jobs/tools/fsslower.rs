//! `tracekit fsslower`: each read, write, open and fsync of a filesystem slower than a
//! threshold, with the file's name, bytes, offset and latency (libbpf-tools' `fsslower -t
//! FS`, bcc's `ext4slower`, `xfsslower`, `btrfsslower`, `nfsslower`). Return probes on the
//! filesystem's `read_iter`, `write_iter`, `open` and `fsync` functions (fsdist's
//! [`FILESYSTEMS`]), each paired with its entry per thread; the entry saves the file's
//! name (32 bytes at most, libbpf-tools' `DNAME_INLINE_LEN`), read through BTF, and the
//! offset, the return adds the bytes (its return value) and the latency, and only calls at
//! least `MIN_MS` long reach userspace.
//!
//! Reads and writes have the file in a `struct kiocb *` (`iocb->ki_filp`, the offset
//! `iocb->ki_pos`), opens and fsyncs a `struct file *` of their own (the second and the
//! first parameter): three probe groups of one events job ([`EventsJob::also`]), printed as
//! one stream. Opens and fsyncs show 0 bytes at offset 0, as libbpf-tools prints them.
//!
//! The aliases `ext4slower`, `xfsslower`, `btrfsslower` and `nfsslower` are this tool with
//! `--fs` fixed ([`alias`]).

use super::{
    Column, EventsJob, Flag, FlagValues, Group, ToolPlan, Tool,
    fsdist::{FILESYSTEMS, FS, filesystem},
};
use crate::Result;

// The functions' parameters have different names from one filesystem to the next (`iocb`,
// `filp`, `file`), so the paths cast the argument.

/// `MIN_MS`: the threshold, libbpf-tools' positional (10 ms when not given, 0: every call).
pub const MIN_MS: Flag = Flag::number_arg(
    "min_ms",
    "MIN_MS",
    "10",
    "Only calls that took at least MIN_MS milliseconds (0: every call)",
);

/// The columns of `FILENAME`'s field: libbpf-tools' `TIME COMM PID T BYTES OFF_KB LAT(ms)
/// FILENAME` (TIME is always shown, as `-T` shows it), with `bytes`, `offset` and `file`
/// as the probe reads them.
const fn columns(bytes: &'static str, offset: &'static str, file: &'static str) -> [Column; 7] {
    [
        Column {
            header: "COMM",
            field: "comm",
        },
        Column {
            header: "PID",
            field: "pid",
        },
        Column {
            header: "T",
            field: "fsop",
        },
        Column {
            header: "BYTES",
            field: bytes,
        },
        Column {
            header: "OFF_KB",
            field: offset,
        },
        Column {
            header: "LAT(ms)",
            field: "ms(latency)",
        },
        Column {
            header: "FILENAME",
            field: file,
        },
    ]
}

/// Reads and writes (`R`, `W`): the file and offset from the `struct kiocb *`.
pub const COLUMNS: [Column; 7] = columns(
    "retval",
    "kb(start.(struct kiocb *)arg0->ki_pos)",
    "start.str((struct kiocb *)arg0->ki_filp->f_path.dentry->d_name.name)",
);

/// Opens (`O`): `open(struct inode *, struct file *)`.
pub const OPEN_COLUMNS: [Column; 7] = columns(
    "lit(0)",
    "lit(0)",
    "start.str((struct file *)arg1->f_path.dentry->d_name.name)",
);

/// Fsyncs (`F`): `fsync(struct file *, loff_t start, loff_t end, int datasync)`.
pub const FSYNC_COLUMNS: [Column; 7] = columns(
    "lit(0)",
    "lit(0)",
    "start.str((struct file *)arg0->f_path.dentry->d_name.name)",
);

/// `tracekit fsslower`.
pub const TOOL: Tool = Tool {
    name: "fsslower",
    summary: "Print each filesystem read, write, open and fsync slower than a threshold, with the file (libbpf-tools fsslower)",
    examples: "  tracekit fsslower --fs ext4         # ext4 reads, writes, opens, fsyncs over 10 ms
  tracekit fsslower --fs xfs 1         # xfs, over 1 ms
  tracekit fsslower --fs ext4 0 -p 1234 --json  # every call of one process, as JSON

T is R (read), W (write), O (open) or F (fsync): the filesystem's read_iter, write_iter,
open and fsync functions (ext4_file_read_iter, ext4_file_write_iter, ext4_file_open,
ext4_sync_file), timed from entry to return in the same thread. BYTES is what a read or
write returned (negative: an errno), OFF_KB the file offset it started at; opens and fsyncs
show 0 for both, as libbpf-tools does. FILENAME is the file's name (not its path), cut at
31 bytes (libbpf-tools' DNAME_INLINE_LEN). The filesystem's functions exist once its module
is loaded; an unknown --fs lists the ones this kernel has.",
    flags: &[MIN_MS, FS],
    groups: &[Group::Probing],
    plan: |values| plan(values, values.text(FS.long).unwrap_or("ext4")).map(ToolPlan::Events),
    metric: None,
};

/// `tracekit FSslower` (`ext4slower`): fsslower of one filesystem, as bcc names them.
pub const fn alias(
    name: &'static str,
    summary: &'static str,
    examples: &'static str,
    plan: fn(&FlagValues) -> Result<ToolPlan>,
) -> Tool {
    Tool {
        name,
        summary,
        examples,
        flags: &[MIN_MS],
        groups: &[Group::Probing],
        plan,
        metric: None,
    }
}

/// The plan of fsslower for filesystem `fs`.
///
/// # Errors
/// A usage error for an unknown filesystem (naming those this kernel has); a runtime error
/// when this kernel lacks the filesystem's functions (its module is not loaded).
pub fn plan(values: &FlagValues, fs: &str) -> Result<EventsJob> {
    let fs = filesystem(fs)?;
    debug_assert!(FILESYSTEMS.contains(fs));
    let min_ms = values.number(MIN_MS.long).unwrap_or(10);
    let probe = format!("kretprobe:{},{}", fs.functions[0], fs.functions[1]);
    let filters = if min_ms > 0 {
        vec![format!("latency >= {}", min_ms.saturating_mul(1_000_000))]
    } else {
        Vec::new()
    };
    let mut job = EventsJob::new(&probe, &COLUMNS).with_flags(filters, values)?;
    job.request.target = values.target;
    // libbpf-tools prints the wall clock first.
    job.time = super::EventTime::Clock;
    Ok(job
        .also(&format!("kretprobe:{}", fs.functions[2]), &OPEN_COLUMNS)
        .also(&format!("kretprobe:{}", fs.functions[3]), &FSYNC_COLUMNS))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::tools::Value;

    #[test]
    fn fsslower_saves_the_name_and_offset_and_filters_by_latency() {
        let mut values = FlagValues::defaults(&TOOL);
        values.set(MIN_MS.long, Value::Number(3));
        let Ok(job) = plan(&values, "ext4") else {
            eprintln!("skipped: this kernel has no ext4 functions");
            return;
        };
        assert_eq!(
            job.request.probes,
            ["kretprobe:ext4_file_read_iter,ext4_file_write_iter"]
        );
        assert_eq!(job.request.filter.as_deref(), Some("latency >= 3000000"));
        assert_eq!(
            job.request.print,
            [
                "retval",
                "start.(struct kiocb *)arg0->ki_pos",
                "latency",
                "start.str((struct kiocb *)arg0->ki_filp->f_path.dentry->d_name.name)"
            ]
        );
        assert_eq!(job.time, crate::jobs::tools::EventTime::Clock);
        // Opens and fsyncs: groups of their own, the same headers and filter, the name
        // from their `struct file *`.
        let parts: Vec<(Vec<String>, Option<String>, Vec<String>)> = job
            .parts
            .iter()
            .map(|p| {
                (
                    p.request.probes.clone(),
                    p.request.filter.clone(),
                    p.request.print.clone(),
                )
            })
            .collect();
        let filter = Some("latency >= 3000000".to_string());
        assert_eq!(
            parts,
            [
                (
                    vec!["kretprobe:ext4_file_open".to_string()],
                    filter.clone(),
                    vec![
                        "latency".to_string(),
                        "start.str((struct file *)arg1->f_path.dentry->d_name.name)".into()
                    ]
                ),
                (
                    vec!["kretprobe:ext4_sync_file".to_string()],
                    filter,
                    vec![
                        "latency".to_string(),
                        "start.str((struct file *)arg0->f_path.dentry->d_name.name)".into()
                    ]
                ),
            ]
        );
        // The entry saves the whole name (32 bytes: four words) and the offset; the return
        // reads them back with its return value and the latency.
        let listing = crate::engine::compile::compile_in(
            &job.request,
            &crate::engine::compile::Events::test_6_18(),
        )
        .unwrap()
        .listing();
        for line in [
            "operands: #0 tid #1 func_ip #2 path_str(arg0)[3]:32 #3 arg_deref0+",
            "corr: #0 #1 | key: - | saves: #2->0 #2->1 #2->2 #2->3 #3->4",
            "operands: #0 func_ip #1 retval #2 saved4 #3 latency #4 saved_str #5 tid",
            "filter: ge #3 3000000",
        ] {
            assert!(listing.contains(line), "{line}\n{listing}");
        }
        let open = crate::engine::compile::compile_in(
            &job.parts[0].request,
            &crate::engine::compile::Events::test_6_18(),
        )
        .unwrap()
        .listing();
        for line in [
            "operands: #0 tid #1 path_str(arg1)[2]:32",
            "corr: #0 | key: - | saves: #1->0 #1->1 #1->2 #1->3",
        ] {
            assert!(open.contains(line), "{line}\n{open}");
        }
        values.set(MIN_MS.long, Value::Number(0));
        let every = plan(&values, "ext4").unwrap();
        assert_eq!(every.request.filter, None);
        assert!(every.parts.iter().all(|p| p.request.filter.is_none()));
    }

    #[test]
    fn unknown_filesystems_are_usage_errors() {
        let err = plan(&FlagValues::defaults(&TOOL), "zfs").unwrap_err();
        assert!(matches!(err, crate::Error::Usage(_)), "{err}");
    }
}
