//! `tracekit fsdist`: latency of a filesystem's read, write, open, fsync and getattr, one
//! log2 histogram per operation (libbpf-tools' `fsdist -t FS`, bcc's `ext4dist` and
//! `xfsdist`): each operation is the filesystem's own `file_operations` (or
//! `inode_operations`) function, timed from its entry to its return per thread
//! (`ext4_file_read_iter`, `ext4_file_write_iter`, `ext4_file_open`, `ext4_sync_file`,
//! `ext4_file_getattr`), as libbpf-tools' `fsdist.bpf.c` times them. Kernel functions:
//! kprobes/kretprobes or fentry/fexit, whichever the kernel has; a filesystem built as a
//! module has them only once it is loaded.
//!
//! The aliases `ext4dist`, `xfsdist`, `btrfsdist` and `nfsdist` are this tool with `--fs`
//! fixed ([`alias`]).

use super::{Flag, FlagValues, Group, Metric, ToolPlan, Tool, UNIT, ValueUnit};
use crate::{
    Error, Result,
    engine::request::{Request, Shape},
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
};

/// One filesystem fsdist and fsslower know: its functions per operation, as libbpf-tools'
/// `fsdist.c` and `fsslower.c` name them (`fs_configs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Filesystem {
    /// `--fs`'s name (`ext4`), also its kernel module's.
    pub name: &'static str,
    /// read, write, open, fsync, getattr: the kernel function of each, in that order.
    pub functions: [&'static str; 5],
}

/// The operations of [`Filesystem::functions`], in order.
pub const OPERATIONS: [&str; 5] = ["read", "write", "open", "fsync", "getattr"];

/// The filesystems, as libbpf-tools lists them.
pub const FILESYSTEMS: [Filesystem; 4] = [
    Filesystem {
        name: "ext4",
        functions: [
            "ext4_file_read_iter",
            "ext4_file_write_iter",
            "ext4_file_open",
            "ext4_sync_file",
            "ext4_file_getattr",
        ],
    },
    Filesystem {
        name: "xfs",
        functions: [
            "xfs_file_read_iter",
            "xfs_file_write_iter",
            "xfs_file_open",
            "xfs_file_fsync",
            "xfs_vn_getattr",
        ],
    },
    Filesystem {
        name: "btrfs",
        functions: [
            "btrfs_file_read_iter",
            "btrfs_file_write_iter",
            "btrfs_file_open",
            "btrfs_sync_file",
            "btrfs_getattr",
        ],
    },
    Filesystem {
        name: "nfs",
        functions: [
            "nfs_file_read",
            "nfs_file_write",
            "nfs_file_open",
            "nfs_file_fsync",
            "nfs_getattr",
        ],
    },
];

/// The letter fsslower's `T` column shows for `function` (a kernel function's name, or a
/// probe's, `kretprobe:ext4_file_read_iter`): `R`, `W`, `O`, `F` or `G` for the read,
/// write, open, fsync or getattr function of a filesystem in [`FILESYSTEMS`], else `?`.
pub fn operation_letter(function: &str) -> &'static str {
    let name = function.rsplit(':').next().unwrap_or(function);
    let name = name.split('+').next().unwrap_or(name);
    FILESYSTEMS
        .iter()
        .find_map(|fs| fs.functions.iter().position(|f| *f == name))
        .map_or("?", |i| ["R", "W", "O", "F", "G"][i])
}

/// `--fs NAME` (ext4 when not given).
pub const FS: Flag = Flag::text(
    "fs",
    "FS",
    "The filesystem: ext4 (the default), xfs, btrfs or nfs (libbpf-tools -t)",
);

/// `tracekit fsdist`.
pub const TOOL: Tool = Tool {
    name: "fsdist",
    summary: "Filesystem operation latency histograms: read, write, open, fsync, getattr (libbpf-tools fsdist)",
    examples: "  tracekit fsdist --fs ext4 -d 10     # ext4 latency per operation, in us
  tracekit fsdist --fs xfs --unit ms -i 1
  tracekit fsdist --fs btrfs -p 1234
  tracekit fsdist --fs ext4 -- tar xf big.tar

One histogram per operation, named by the filesystem's function: ext4_file_read_iter
(read), ext4_file_write_iter (write), ext4_file_open (open), ext4_sync_file (fsync),
ext4_file_getattr (getattr). An operation never called has none. The filesystem's
functions exist once its module is loaded; an unknown --fs lists the ones this kernel has.",
    flags: &[FS, UNIT],
    groups: &[Group::Percentiles, Group::Probing],
    plan: |values| plan(values, values.text(FS.long).unwrap_or("ext4"), "fsdist"),
    metric: Some(METRIC),
};

/// The metric of fsdist and its aliases.
pub const METRIC: Metric = Metric {
    name: "fs_operation_latency",
    help: "Latency of a filesystem's read, write, open, fsync and getattr functions.",
    labels: &[],
    by: &["function"],
    unit: Some(ValueUnit::Nanoseconds),
    // 1 us (slot 10: 1024-2047 ns) to 68 s.
    buckets: Some((10, 35)),
};

/// `tracekit FSdist` (`ext4dist`): fsdist of one filesystem, as bcc names them, served by
/// the exporter as `metric` (`ext4_operation_latency`: each alias a metric of its own, so
/// that one config may serve several).
pub const fn alias(
    name: &'static str,
    metric: &'static str,
    summary: &'static str,
    examples: &'static str,
    plan: fn(&FlagValues) -> Result<ToolPlan>,
) -> Tool {
    Tool {
        name,
        summary,
        examples,
        flags: &[UNIT],
        groups: &[Group::Percentiles, Group::Probing],
        plan,
        metric: Some(Metric {
            name: metric,
            ..METRIC
        }),
    }
}

/// The plan of fsdist for filesystem `fs`, run as `command`.
///
/// # Errors
/// A usage error for an unknown filesystem (naming those this kernel has); a runtime error
/// when this kernel lacks the filesystem's functions (its module is not loaded).
pub fn plan(values: &FlagValues, fs: &str, command: &'static str) -> Result<ToolPlan> {
    let fs = filesystem(fs)?;
    let unit = values.unit();
    let job = AggregateJob {
        command,
        what: Some(format!("{} operation latency ({{probes}})", fs.name)),
        request: Request {
            shape: Shape::Log2,
            value: Some("latency".into()),
            value_div: unit.ns,
            maps: values.maps,
            target: values.target,
            ..Request::probe(format!("kretprobe:{}", fs.functions.join(",")))
        },
        report: Report::Log2 {
            unit: unit.header.into(),
        },
        tool_filter: false,
    };
    job.percentiles(values.percentiles, "").map(ToolPlan::Aggregate)
}

/// The filesystem named `name`, checked against this kernel's symbols (`/proc/kallsyms`,
/// where a loaded module's functions are too; not checked when it cannot be read).
///
/// # Errors
/// A usage error for a name not in [`FILESYSTEMS`], listing those whose functions this
/// kernel has; a runtime error when the filesystem's functions are missing.
pub fn filesystem(name: &str) -> Result<&'static Filesystem> {
    let symbols = kernel_symbols();
    let has = |fs: &Filesystem| -> Option<bool> {
        symbols
            .as_ref()
            .map(|symbols| fs.functions.iter().all(|f| symbols.contains(*f)))
    };
    let Some(fs) = FILESYSTEMS.iter().find(|fs| fs.name == name) else {
        let (here, not): (Vec<&Filesystem>, Vec<&Filesystem>) =
            FILESYSTEMS.iter().partition(|fs| has(fs) != Some(false));
        let names = |list: &[&Filesystem]| {
            list.iter()
                .map(|fs| fs.name)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let here = if here.is_empty() {
            "none of ext4, xfs, btrfs, nfs is loaded in this kernel".to_string()
        } else {
            format!("this kernel has {}", names(&here))
        };
        let not = if not.is_empty() {
            String::new()
        } else {
            format!(" ({}: not loaded)", names(&not))
        };
        return Err(Error::usage(format!(
            "--fs {}: unknown filesystem; {here}{not}",
            crate::error::quote(name)
        )));
    };
    if has(fs) == Some(false) {
        let symbols = symbols.unwrap_or_default();
        let missing: Vec<&str> = fs
            .functions
            .iter()
            .copied()
            .filter(|f| !symbols.contains(*f))
            .collect();
        return Err(Error::runtime(format!(
            "--fs {}: this kernel has no {} (is the {} module loaded? modprobe {})",
            fs.name,
            missing.join(", "),
            fs.name,
            fs.name
        )));
    }
    Ok(fs)
}

/// The names of `/proc/kallsyms` (module symbols included); `None` when unreadable.
pub(super) fn kernel_symbols() -> Option<std::collections::HashSet<String>> {
    let text = std::fs::read_to_string("/proc/kallsyms").ok()?;
    Some(
        text.lines()
            .filter_map(|line| line.split_whitespace().nth(2))
            .map(str::to_string)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_filesystems_are_usage_errors_naming_the_known_ones() {
        let err = filesystem("zfs").unwrap_err();
        assert!(matches!(err, Error::Usage(_)), "{err}");
        let text = err.to_string();
        assert!(text.starts_with("--fs zfs: unknown filesystem; "), "{text}");
        for fs in FILESYSTEMS {
            assert!(text.contains(fs.name), "{text}");
        }
    }

    #[test]
    fn fsdist_times_the_five_functions_by_function() {
        let mut values = FlagValues::defaults(&TOOL);
        values.set(FS.long, super::super::Value::Text("xfs".into()));
        // The probe spec, whether or not this kernel has xfs loaded.
        let fs = FILESYSTEMS.iter().find(|fs| fs.name == "xfs").unwrap();
        assert_eq!(
            format!("kretprobe:{}", fs.functions.join(",")),
            "kretprobe:xfs_file_read_iter,xfs_file_write_iter,xfs_file_open,xfs_file_fsync,\
             xfs_vn_getattr"
        );
        if let Ok(ToolPlan::Aggregate(job)) = (TOOL.plan)(&values) {
            assert_eq!(job.request.probes, [format!("kretprobe:{}", fs.functions.join(","))]);
            assert_eq!((job.request.shape, job.request.value_div), (Shape::Log2, 1000));
        }
    }
}
