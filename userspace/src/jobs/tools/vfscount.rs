//! `tracekit vfscount`: calls of each kernel VFS function (`vfs_*`), counted per function in
//! the kernel (bcc's `vfscount`): [`funccount`](super::funccount) with the pattern preset.
//! The functions are kernel functions: kprobes (one `kprobe.multi` link where the kernel has
//! `CONFIG_FPROBE`) or fentry, whichever the kernel has (`--kprobe`/`--fentry` choose).

use super::{
    BY_PROCESS, Flag, Group, Metric, ToolPlan, Tool,
    funccount::{FunctionOptions, funccount},
};

/// `tracekit vfscount`.
pub const TOOL: Tool = Tool {
    name: "vfscount",
    summary: "Count calls of each kernel VFS function, vfs_* (bcc vfscount)",
    examples: "  tracekit vfscount -d 10            # vfs_* calls on the whole machine, by function
  tracekit vfscount -i 1 --top 5      # the five most called, each second
  tracekit vfscount --by comm -p 1234
  tracekit vfscount --json -- ./app",
    flags: &[
        BY_PROCESS,
        Flag::number("top", "N", None, "Show the N most called"),
    ],
    groups: &[Group::Probing],
    plan: |values| {
        let mut job = funccount(&FunctionOptions {
            patterns: vec!["vfs_*".into()],
            by: values.text("by").map(Into::into),
            top: values.number("top").map(|n| n as usize),
            maps: values.maps,
            target: values.target,
        })?;
        job.command = "vfscount";
        Ok(ToolPlan::Aggregate(job))
    },
    metric: Some(Metric {
        name: "vfs_calls",
        help: "Calls of kernel VFS functions (vfs_*), by function.",
        labels: &[],
        by: &["function"],
        unit: None,
        buckets: None,
    }),
};
