//! `tracekit hardirqs`: time spent in hardware interrupt handlers (bcc/libbpf-tools'
//! `hardirqs`), per interrupt, from `irq:irq_handler_entry` to `irq:irq_handler_exit`
//! (include/trace/events/irq.h), paired by CPU and irq number: handlers do not nest on one
//! CPU. Totals by default, event counts with `--count`, log2 histograms with `--dist`
//! (bcc's `-d`: tracekit's `-d` is the duration). Interrupts are shown by their handlers'
//! names (`/sys/kernel/irq/N/actions`), as bcc names them. `softirqs` is the same tool on
//! the softirq tracepoints; both share [`irq_job`].

use super::{Flag, Group, LatencyUnit, Metric, ToolPlan, Tool, UNIT, ValueUnit};
use crate::{
    Error, Result,
    engine::request::{KeyField, MapSizes, Request, Start, StartProbe},
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
};

/// `tracekit hardirqs`.
pub const TOOL: Tool = Tool {
    name: "hardirqs",
    summary: "Time in hardware interrupt handlers, per interrupt (bcc hardirqs)",
    examples: "  tracekit hardirqs -d 10            # total time per interrupt, in us
  tracekit hardirqs --count -i 1     # interrupts handled per second, per interrupt
  tracekit hardirqs --dist --unit ns # a handler-time histogram per interrupt
  tracekit hardirqs -- ping -c 100 -f ::1

Measured from irq:irq_handler_entry to irq:irq_handler_exit on the same CPU; interrupts are
named by their handlers (/sys/kernel/irq/N/actions).",
    flags: &[
        UNIT,
        Flag::switch("count", "Count interrupts instead of timing them (bcc hardirqs -C)").short('C'),
        Flag::switch(
            "dist",
            "A histogram of handler time per interrupt (bcc hardirqs -d; tracekit's -d is the duration)",
        ),
    ],
    groups: &[Group::Common, Group::Maps],
    plan: |values| irq_plan(HARDIRQ, values),
    metric: Some(Metric {
        name: "hardirq_time",
        help: "Time in hardware interrupt handlers, per interrupt.",
        labels: &[],
        by: &["irq"],
        unit: Some(ValueUnit::Nanoseconds),
        // 256 ns (slot 8) to 1 s.
        buckets: Some((8, 30)),
    }),
};

/// Which interrupts an [`irq_job`] measures: the tracepoints and the field naming one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IrqKind {
    /// The command (`hardirqs`).
    pub command: &'static str,
    /// The entry tracepoint.
    pub entry: &'static str,
    /// The exit tracepoint.
    pub exit: &'static str,
    /// The field naming the interrupt in both (`irq`, `vec`), shown by name.
    pub field: &'static str,
    /// The key column's header (bcc's `HARDIRQ`, `SOFTIRQ`).
    pub header: &'static str,
}

/// Hardware interrupts.
pub const HARDIRQ: IrqKind = IrqKind {
    command: "hardirqs",
    entry: "irq:irq_handler_entry",
    exit: "irq:irq_handler_exit",
    field: "irq",
    header: "HARDIRQ",
};

/// What an [`irq_job`] shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IrqShow {
    /// Total and average time per interrupt.
    #[default]
    Time,
    /// Events per interrupt.
    Count,
    /// A log2 histogram of time per interrupt.
    Dist,
}

/// Options of [`irq_job`].
#[derive(Clone, Copy, Debug, Default)]
pub struct IrqOptions {
    /// What to show.
    pub show: IrqShow,
    /// The time unit.
    pub unit: LatencyUnit,
    /// Kernel map sizes.
    pub maps: MapSizes,
}

/// The plan of `hardirqs` and `softirqs` from their flags.
pub(super) fn irq_plan(kind: IrqKind, values: &super::FlagValues) -> Result<ToolPlan> {
    if let Some(flag) = values.task_flag() {
        return Err(Error::usage(format!(
            "{} {flag}: interrupts run in whatever task they interrupt; they are measured for the \
             whole machine (use -a, or -- CMD to measure while CMD runs)",
            kind.command
        )));
    }
    let show = match (values.switch("count"), values.switch("dist")) {
        (true, true) => {
            return Err(Error::usage(format!(
                "{}: --count and --dist exclude each other (--dist counts too)",
                kind.command
            )));
        }
        (true, false) => IrqShow::Count,
        (false, true) => IrqShow::Dist,
        (false, false) => IrqShow::Time,
    };
    Ok(ToolPlan::Aggregate(irq_job(
        kind,
        &IrqOptions {
            show,
            unit: values.unit(),
            maps: values.maps,
        },
    )))
}

/// The job: counts at the entry tracepoint, or time from entry to exit on one CPU (the
/// start stage pairs by `cpu` and the interrupt, its begin and end events of every task).
pub fn irq_job(kind: IrqKind, options: &IrqOptions) -> AggregateJob {
    let by = vec![KeyField::labeled(kind.header, kind.field)];
    if options.show == IrqShow::Count {
        return AggregateJob {
            command: kind.command,
            what: Some(format!("{} handled", kind.command)),
            request: Request {
                all_tasks: true,
                by,
                maps: options.maps,
                ..Request::probe(kind.entry)
            },
            report: Report::Counts {
                clear: false,
                sum: None,
                top: None,
            },
            tool_filter: false,
        };
    }
    let request = Request {
        start: Some(Start {
            probes: vec![StartProbe::new(kind.entry, &["cpu", kind.field])],
            end_pair: vec!["cpu".into(), kind.field.into()],
            all_tasks: true,
            per_thread: false,
            keep: false,
        }),
        all_tasks: true,
        by,
        maps: options.maps,
        ..Request::probe(kind.exit)
    };
    let (request, report) = if options.show == IrqShow::Dist {
        (
            Request {
                value_div: options.unit.ns,
                ..request.log2("latency")
            },
            Report::Log2 {
                unit: options.unit.header.into(),
            },
        )
    } else {
        (
            Request {
                value: Some("latency".into()),
                ..request
            },
            Report::Counts {
                clear: false,
                sum: Some((
                    format!(
                        "TIME({})",
                        match options.unit.ns {
                            1 => "ns",
                            1_000 => "us",
                            _ => "ms",
                        }
                    ),
                    options.unit.ns as f64,
                )),
                top: None,
            },
        )
    };
    AggregateJob {
        command: kind.command,
        what: Some(format!("time in {}", kind.command)),
        request,
        report,
        tool_filter: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::compile::{Events, compile_in};

    fn listing(show: IrqShow) -> String {
        let options = IrqOptions {
            show,
            ..Default::default()
        };
        compile_in(&irq_job(HARDIRQ, &options).request, &Events::test_6_18())
            .unwrap()
            .listing()
    }

    #[test]
    fn hardirqs_pair_entry_and_exit_by_cpu_and_irq() {
        assert_eq!(listing(IrqShow::Time), r#"Start Tracepoints([Tracepoint { system: "irq", event: "irq_handler_entry" }])
operands: #0 cpu #1 field@8:s4
corr: #0 #1 | key: - | saves: -
value: - | agg: count | layout: array bound 0
filter: -
flags: all_tasks
Main Tracepoints([Tracepoint { system: "irq", event: "irq_handler_exit" }])
operands: #0 cpu #1 field@8:s4 #2 latency
corr: #0 #1 | key: #1 | saves: -
value: #2 | agg: count | layout: hash
filter: -
flags: needs_start all_tasks
columns: HARDIRQ Irq
"#);
        assert_eq!(
            listing(IrqShow::Count),
            "Main Tracepoints([Tracepoint { system: \"irq\", event: \"irq_handler_entry\" }])\noperands: #0 field@8:s4\ncorr: - | key: #0 | saves: -\nvalue: - | agg: count | layout: hash\nfilter: -\nflags: all_tasks\ncolumns: HARDIRQ Irq\n"
        );
        let dist = listing(IrqShow::Dist);
        assert!(dist.contains("value: #2 /1000 | agg: log2 64 slots | layout: hash"), "{dist}");
    }

    #[test]
    fn hardirqs_refuses_pids_and_both_shows() {
        let mut values = crate::jobs::tools::FlagValues::defaults(&TOOL);
        values.scope = crate::session::Scope::Pids(vec![1]);
        let err = (TOOL.plan)(&values).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().starts_with("hardirqs -p: "), "{err}");
        let mut values = crate::jobs::tools::FlagValues::defaults(&TOOL);
        values.set("count", crate::jobs::tools::Value::Switch(true));
        values.set("dist", crate::jobs::tools::Value::Switch(true));
        let err = (TOOL.plan)(&values).unwrap_err();
        assert_eq!(
            err.to_string(),
            "hardirqs: --count and --dist exclude each other (--dist counts too)"
        );
    }
}
