//! `tracekit funccount`: calls of kernel or user functions counted per function (bcc's
//! `funccount`), through kprobes/fentry or uprobes. Several kernel patterns share one probe
//! spec: one engine.

use super::{BY_PROCESS, Flag, Group, ToolPlan, Tool};
use crate::{
    Result,
    engine::request::{KeyField, MapSizes, Request, Target},
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
    engine::kinds::function_probe,
};

/// `tracekit funccount`: a kernel or user function pattern (`vfs_read`, `vfs_*`,
/// `libc:malloc`, `/path/app:fn`), or an explicit probe spec (`k:FUNC`, `u:BINARY:FUNC`).
pub const TOOL: Tool = Tool {
    name: "funccount",
    summary: "Count calls of kernel or user functions (bcc funccount)",
    examples: "  tracekit funccount 'vfs_*' -d 5              # kernel functions matching vfs_*
  tracekit funccount 'libc:str*' -p 1234       # libc's str* functions in pid 1234
  tracekit funccount tcp_sendmsg --by comm
  tracekit funccount ./app:parse -- ./app in.txt",
    flags: &[
        Flag::positional("patterns", "PATTERN", true, "Functions to count"),
        BY_PROCESS,
        Flag::number("top", "N", None, "Show the N most called"),
    ],
    groups: &[Group::Probing],
    plan: |values| {
        funccount(&FunctionOptions {
            patterns: values.list("patterns"),
            by: values.text("by").map(Into::into),
            top: values.number("top").map(|n| n as usize),
            maps: values.maps,
            target: values.target,
        })
        .map(ToolPlan::Aggregate)
    },
    metric: None,
};

/// Options of [`funccount`].
#[derive(Clone, Debug, Default)]
pub struct FunctionOptions {
    /// Function patterns (`vfs_*`, `libc:malloc`, `k:FUNC`).
    pub patterns: Vec<String>,
    /// Also group by this field (`comm`, `pid`).
    pub by: Option<String>,
    /// The N largest counts.
    pub top: Option<usize>,
    /// Kernel map sizes.
    pub maps: MapSizes,
    /// How kernel functions attach, and the pid uprobes are limited to.
    pub target: Target,
}

/// The job.
///
/// # Errors
/// A usage error for no pattern, a bad one, or several that are not all kernel functions.
pub fn funccount(options: &FunctionOptions) -> Result<AggregateJob> {
    let probes = options
        .patterns
        .iter()
        .map(|p| function_probe(p, false))
        .collect::<Result<Vec<_>>>()?;
    let probe = match probes.as_slice() {
        [one] => one.clone(),
        many if !many.is_empty() && many.iter().all(|p| p.starts_with("kprobe:")) => format!(
            "kprobe:{}",
            many.iter()
                .map(|p| p.trim_start_matches("kprobe:"))
                .collect::<Vec<_>>()
                .join(",")
        ),
        _ => {
            return Err(crate::Error::usage(
                "funccount: give several kernel patterns, or one user pattern (BINARY:FUNC*)",
            ));
        }
    };
    Ok(AggregateJob {
        command: "funccount",
        what: None,
        request: Request {
            by: options
                .by
                .as_deref()
                .map(KeyField::new)
                .into_iter()
                .collect(),
            by_event: true,
            maps: options.maps,
            target: options.target,
            ..Request::probe(probe)
        },
        report: Report::Counts {
            clear: false,
            sum: None,
            top: options.top,
        },
        tool_filter: false,
    })
}
