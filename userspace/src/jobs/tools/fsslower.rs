//! `tracekit fsslower`: each read and write of a filesystem slower than a threshold, with
//! the file's name, bytes, offset and latency (libbpf-tools' `fsslower -t FS`, bcc's
//! `ext4slower`, `xfsslower`, `btrfsslower`, `nfsslower`). A return probe on the
//! filesystem's `read_iter` and `write_iter` functions (fsdist's [`FILESYSTEMS`]), paired
//! with its entry per thread; the entry saves the file's name, 16 bytes at most, read
//! through BTF from the `struct kiocb *` (`iocb->ki_filp->f_path.dentry->d_name.name`) and
//! the offset (`iocb->ki_pos`), the return adds the bytes (its return value) and the
//! latency, and only calls at least `MIN_MS` long reach userspace.
//!
//! The aliases `ext4slower`, `xfsslower`, `btrfsslower` and `nfsslower` are this tool with
//! `--fs` fixed ([`alias`]).

use super::{
    Column, EventsJob, Flag, FlagValues, Group, Plan, Tool,
    fsdist::{FILESYSTEMS, FS, filesystem},
};
use crate::Result;

// The read and write functions' first parameter is a `struct kiocb *` under different
// names (`iocb` in ext4, `iocb`/`to`... elsewhere), so the paths cast `arg0`.

/// `MIN_MS`: the threshold, libbpf-tools' positional (10 ms when not given, 0: every call).
pub const MIN_MS: Flag = Flag::number_arg(
    "min_ms",
    "MIN_MS",
    "10",
    "Only calls that took at least MIN_MS milliseconds (0: every call)",
);

/// The columns: libbpf-tools' `TIME COMM PID T BYTES OFF_KB LAT(ms) FILENAME` (TIME is
/// always shown, as `-T` shows it).
pub const COLUMNS: [Column; 7] = [
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
        field: "retval",
    },
    Column {
        header: "OFF_KB",
        field: "kb(start.(struct kiocb *)arg0->ki_pos)",
    },
    Column {
        header: "LAT(ms)",
        field: "ms(latency)",
    },
    Column {
        header: "FILENAME",
        field: "start.str((struct kiocb *)arg0->ki_filp->f_path.dentry->d_name.name, 16)",
    },
];

/// `tracekit fsslower`.
pub const TOOL: Tool = Tool {
    name: "fsslower",
    summary: "Print each filesystem read and write slower than a threshold, with the file (libbpf-tools fsslower)",
    examples: "  tracekit fsslower --fs ext4         # ext4 reads and writes over 10 ms
  tracekit fsslower --fs xfs 1         # xfs, over 1 ms
  tracekit fsslower --fs ext4 0 -p 1234 --json  # every call of one process, as JSON

T is R (read) or W (write): the filesystem's read_iter and write_iter functions, timed from
entry to return in the same thread. BYTES is what the call returned (negative: an errno),
OFF_KB the file offset it started at. FILENAME is the file's name (not its path), cut at
15 bytes. libbpf-tools also shows opens (O) and fsyncs (F): not traced yet. The
filesystem's functions exist once its module is loaded; an unknown --fs lists the ones this
kernel has.",
    flags: &[MIN_MS, FS],
    groups: &[Group::Probing],
    plan: |values| plan(values, values.text(FS.long).unwrap_or("ext4")).map(Plan::Events),
    metric: None,
};

/// `tracekit FSslower` (`ext4slower`): fsslower of one filesystem, as bcc names them.
pub const fn alias(
    name: &'static str,
    summary: &'static str,
    examples: &'static str,
    plan: fn(&FlagValues) -> Result<Plan>,
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
    Ok(job)
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
                "start.str((struct kiocb *)arg0->ki_filp->f_path.dentry->d_name.name, 16)"
            ]
        );
        assert_eq!(job.time, crate::jobs::tools::EventTime::Clock);
        // The entry saves the name (16 bytes: two words) and the offset; the return reads
        // them back with its return value and the latency.
        let listing = crate::engine::compile::compile_in(
            &job.request,
            &crate::engine::compile::Events::test_6_18(),
        )
        .unwrap()
        .listing();
        for line in [
            "operands: #0 tid #1 func_ip #2 path_str(arg0)[3]:16 #3 arg_deref0+",
            "corr: #0 #1 | key: - | saves: #2->0 #2->1 #3->2",
            "operands: #0 func_ip #1 retval #2 saved2 #3 latency #4 saved_str #5 tid",
            "filter: ge #3 3000000",
        ] {
            assert!(listing.contains(line), "{line}\n{listing}");
        }
        values.set(MIN_MS.long, Value::Number(0));
        assert_eq!(plan(&values, "ext4").unwrap().request.filter, None);
    }

    #[test]
    fn unknown_filesystems_are_usage_errors() {
        let err = plan(&FlagValues::defaults(&TOOL), "zfs").unwrap_err();
        assert!(matches!(err, crate::Error::Usage(_)), "{err}");
    }
}
