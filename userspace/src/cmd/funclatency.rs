//! `tracekit funclatency`: a log2 histogram of a function's latency, entry to return, per
//! thread (bcc `funclatency`): a start stage at the entry stores the time under the thread
//! (and the function, when a pattern matches several), the return aggregates the difference.
//! A recursive call overwrites its caller's start: only the innermost call is timed.

use tracekit::Result;

use crate::{
    cli::FunclatencyArgs,
    cmd::{
        agg::{self, Job, Report},
        compile::{self, Request, Shape},
        funccount::function_probe,
    },
};

/// Runs `tracekit funclatency`.
pub fn run(args: FunclatencyArgs, verbose: u8) -> Result<()> {
    let probe = function_probe(&args.function, true)?;
    let request = Request {
        value: Some("latency"),
        shape: Shape::Log2,
        value_div: args.unit.ns(),
        ..Request::count(&[], None)
    };
    let compiled = compile::compile(
        &[probe],
        &request,
        false,
        &args.maps,
        args.target.target(&args.scope)?,
    )?;
    let job = Job {
        tool_filter: false,
        command: "funclatency",
        what: format!("latency of {}", compiled.what),
        specs: compiled.specs,
        columns: compiled.columns,
        report: Report::Log2 {
            unit: args.unit.header().into(),
        },
    };
    agg::run(job, &args.scope, &args.timing, &args.output, verbose)
}
