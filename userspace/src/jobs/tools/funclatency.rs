//! `tracekit funclatency`: a log2 histogram of a function's latency, entry to return, per
//! thread (bcc's `funclatency`): the return probe's `latency`. A recursive call overwrites
//! its caller's start: only the innermost call is timed.

use super::{Flag, Group, LatencyUnit, ToolPlan, Tool, UNIT};
use crate::{
    Result,
    engine::request::{MapSizes, Request, Shape, Target},
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
    engine::kinds::function_probe,
};

/// `tracekit funclatency`.
pub const TOOL: Tool = Tool {
    name: "funclatency",
    summary: "Histogram of a function's latency, entry to return (bcc funclatency)",
    examples: "  tracekit funclatency vfs_read -d 5           # kernel function, in us
  tracekit funclatency --unit ms libc:nanosleep -p 1234
  tracekit funclatency ./app:handle -- ./app
  tracekit funclatency --percentiles vfs_read -d 5   # p50, p90, p99, p99.9, max
  tracekit funclatency vfs_read -i 1 -d 60 -o heat.svg  # heat map, a column per second",
    flags: &[
        Flag::positional(
            "function",
            "FUNCTION",
            false,
            "The function: kernel (`vfs_read`) or user (`libc:nanosleep`, `/path/app:fn`)",
        ),
        UNIT,
    ],
    groups: &[Group::Percentiles, Group::Probing],
    plan: |values| {
        let Some(function) = values.text("function") else {
            return Err(crate::Error::usage(
                "funclatency times one function pattern",
            ));
        };
        funclatency(&FunctionOptions {
            function: function.into(),
            unit: values.unit(),
            maps: values.maps,
            target: values.target,
        })?
        .percentiles(values.percentiles, "")
        .map(ToolPlan::Aggregate)
    },
    metric: None,
};

/// Options of [`funclatency`].
#[derive(Clone, Debug, Default)]
pub struct FunctionOptions {
    /// The function pattern (`vfs_read`, `libc:malloc`, `k:FUNC`).
    pub function: String,
    /// The histogram's unit.
    pub unit: LatencyUnit,
    /// Kernel map sizes.
    pub maps: MapSizes,
    /// How kernel functions attach, and the pid uprobes are limited to.
    pub target: Target,
}

/// The job.
///
/// # Errors
/// A usage error for a bad pattern.
pub fn funclatency(options: &FunctionOptions) -> Result<AggregateJob> {
    let probe = function_probe(&options.function, true)?;
    Ok(AggregateJob {
        command: "funclatency",
        what: Some("latency of {probes}".into()),
        request: Request {
            shape: Shape::Log2,
            value: Some("latency".into()),
            value_div: options.unit.ns,
            maps: options.maps,
            target: options.target,
            ..Request::probe(probe)
        },
        report: Report::Log2 {
            unit: options.unit.header.into(),
        },
        tool_filter: false,
    })
}
