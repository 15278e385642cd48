//! `tracekit hist` and `tracekit count`: a field as a histogram, or events counted, per
//! group, with a filter, all in the kernel engine, for any probe kind.

use tracekit::{Error, Result};

use crate::{
    cli::{CountArgs, HistArgs},
    cmd::{
        agg::{self, Job, Report},
        compile::{self, Request, Shape},
    },
};

/// Parses `--linear MIN,MAX,STEP`.
fn parse_linear(text: &str) -> Result<Shape> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let bad = || {
        Error::usage(format!(
            "--linear {text}: expected MIN,MAX,STEP as integers, e.g. --linear 0,1000,100"
        ))
    };
    let [min, max, step] = parts.as_slice() else {
        return Err(bad());
    };
    Ok(Shape::Linear {
        min: min.parse().map_err(|_| bad())?,
        max: max.parse().map_err(|_| bad())?,
        step: step.parse().map_err(|_| bad())?,
    })
}

/// Runs `tracekit hist`.
pub fn run_hist(args: HistArgs, verbose: u8) -> Result<()> {
    let shape = match (&args.value, &args.linear) {
        (None, Some(_)) => {
            return Err(Error::usage(
                "--linear needs --value FIELD (the value to histogram)",
            ));
        }
        (None, None) => Shape::Count,
        (Some(_), None) => Shape::Log2,
        (Some(_), Some(linear)) => parse_linear(linear)?,
    };
    let request = Request {
        value: args.value.as_deref(),
        by: &args.by,
        filter: args.filter.as_deref(),
        shape,
        ..Request::count(&[], None)
    };
    let compiled = compile::compile(
        std::slice::from_ref(&args.probe),
        &request,
        false,
        &args.maps,
        args.target.target(&args.scope)?,
    )?;
    let unit = args.value.clone().unwrap_or_default();
    let report = match shape {
        Shape::Count | Shape::Trace => Report::Counts {
            sum: None,
            top: None,
        },
        Shape::Log2 => Report::Log2 { unit },
        Shape::Linear { min, step, .. } => Report::Linear { min, step, unit },
    };
    let job = Job {
        tool_filter: false,
        command: "hist",
        what: compiled.what,
        specs: compiled.specs,
        columns: compiled.columns,
        report,
    };
    agg::run(job, &args.scope, &args.timing, &args.output, verbose)
}

/// Runs `tracekit count`.
pub fn run_count(args: CountArgs, verbose: u8) -> Result<()> {
    let request = Request::count(&args.by, args.filter.as_deref());
    let compiled = compile::compile(
        &args.probes,
        &request,
        true,
        &args.maps,
        args.target.target(&args.scope)?,
    )?;
    let job = Job {
        tool_filter: false,
        command: "count",
        what: compiled.what,
        specs: compiled.specs,
        columns: compiled.columns,
        report: Report::Counts {
            sum: None,
            top: args.top,
        },
    };
    agg::run(job, &args.scope, &args.timing, &args.output, verbose)
}
