//! `tracekit vfsstat`: calls of the five main VFS operations, `vfs_read`, `vfs_write`,
//! `vfs_fsync`, `vfs_open` and `vfs_create`, counted per function in the kernel (bcc's and
//! libbpf-tools' `vfsstat`, whose columns are READ, WRITE, FSYNC, OPEN, CREATE). Kernel
//! functions: kprobes (one `kprobe.multi` link where the kernel has `CONFIG_FPROBE`) or
//! fentry, whichever the kernel has.

use super::{
    BY_PROCESS, Group, Metric, ToolPlan, Tool,
    funccount::{FunctionOptions, funccount},
};

/// The functions vfsstat counts, in bcc's column order.
pub const FUNCTIONS: [&str; 5] = ["vfs_read", "vfs_write", "vfs_fsync", "vfs_open", "vfs_create"];

/// `tracekit vfsstat`.
pub const TOOL: Tool = Tool {
    name: "vfsstat",
    summary: "Count VFS reads, writes, fsyncs, opens and creates (bcc vfsstat)",
    examples: "  tracekit vfsstat -i 1              # counts per function, each second
  tracekit vfsstat -d 10 --by comm    # who reads, writes, opens
  tracekit vfsstat --json -- ./app    # one command's VFS operations

Rows are vfs_read, vfs_write, vfs_fsync, vfs_open and vfs_create (bcc's READ, WRITE, FSYNC,
OPEN and CREATE columns); a function never called has no row.",
    flags: &[BY_PROCESS],
    groups: &[Group::Probing],
    plan: |values| {
        let mut job = funccount(&FunctionOptions {
            patterns: FUNCTIONS.iter().map(|f| (*f).to_owned()).collect(),
            by: values.text("by").map(Into::into),
            top: None,
            maps: values.maps,
            target: values.target,
        })?;
        job.command = "vfsstat";
        Ok(ToolPlan::Aggregate(job))
    },
    metric: Some(Metric {
        name: "vfs_operations",
        help: "VFS reads, writes, fsyncs, opens and creates (vfs_read ... vfs_create calls).",
        labels: &[],
        by: &["function"],
        unit: None,
        buckets: None,
    }),
};
