//! `tracekit softirqs`: time spent in softirq handlers (bcc/libbpf-tools' `softirqs`), per
//! vector (`TIMER`, `NET_RX`, ... as `/proc/softirqs` names them), from `irq:softirq_entry`
//! to `irq:softirq_exit` on one CPU; `hardirqs`' job on the softirq tracepoints
//! ([`super::hardirqs::irq_job`]). The vector indexes a per-CPU array: no hashing.

use super::{
    Flag, Group, Metric, Tool, UNIT, ValueUnit,
    hardirqs::{IrqKind, irq_plan},
};

/// `tracekit softirqs`.
pub const TOOL: Tool = Tool {
    name: "softirqs",
    summary: "Time in softirq handlers, per vector (bcc softirqs)",
    examples: "  tracekit softirqs -d 10            # total time per softirq vector, in us
  tracekit softirqs --count -i 1     # softirqs run per second (as /proc/softirqs counts)
  tracekit softirqs --dist           # a handler-time histogram per vector
  tracekit softirqs -- iperf3 -c ::1

Measured from irq:softirq_entry to irq:softirq_exit on the same CPU.",
    flags: &[
        UNIT,
        Flag::switch("count", "Count softirqs instead of timing them (bcc softirqs -C)").short('C'),
        Flag::switch(
            "dist",
            "A histogram of handler time per vector (bcc softirqs -d; tracekit's -d is the duration)",
        ),
    ],
    groups: &[Group::Common, Group::Maps],
    plan: |values| irq_plan(SOFTIRQ, values),
    metric: Some(Metric {
        name: "softirq_time",
        help: "Time in softirq handlers, per vector.",
        labels: &[("vector", "vec")],
        by: &["vector"],
        unit: Some(ValueUnit::Nanoseconds),
        // 256 ns (slot 8) to 1 s.
        buckets: Some((8, 30)),
    }),
};

/// Softirqs.
pub const SOFTIRQ: IrqKind = IrqKind {
    command: "softirqs",
    entry: "irq:softirq_entry",
    exit: "irq:softirq_exit",
    field: "vec",
    header: "SOFTIRQ",
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        engine::compile::{Events, compile_in},
        jobs::tools::hardirqs::{IrqOptions, IrqShow, irq_job},
    };

    #[test]
    fn softirqs_index_an_array_by_vector() {
        let listing = |show| {
            let options = IrqOptions {
                show,
                ..Default::default()
            };
            compile_in(&irq_job(SOFTIRQ, &options).request, &Events::test_6_18())
                .unwrap()
                .listing()
        };
        assert_eq!(listing(IrqShow::Time), r#"Start Tracepoints([Tracepoint { system: "irq", event: "softirq_entry" }])
operands: #0 cpu #1 field@8:4
corr: #0 #1 | key: - | saves: -
value: - | agg: count | layout: array bound 0
filter: -
flags: all_tasks
Main Tracepoints([Tracepoint { system: "irq", event: "softirq_exit" }])
operands: #0 cpu #1 field@8:4 #2 latency
corr: #0 #1 | key: #1 | saves: -
value: #2 | agg: count | layout: array bound 16
filter: -
flags: needs_start all_tasks
columns: SOFTIRQ Softirq
"#);
        let count = listing(IrqShow::Count);
        assert!(count.contains("key: #0 | saves: -\nvalue: - | agg: count | layout: array bound 16"), "{count}");
    }
}
