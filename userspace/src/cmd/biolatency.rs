//! `tracekit biolatency`: block I/O latency from issue (or queue insertion) to completion,
//! as a log2 histogram, as bcc's `biolatency`. Two engine stages: `block:block_rq_issue`
//! (or `block_rq_insert`) stores a timestamp under (dev, sector); `block:block_rq_complete`
//! finds it and aggregates the difference (include/trace/events/block.h).

use tracekit::{
    Result,
    engine::{
        Attach, EngineSpec, KeyColumn, KeyKind, PlanBuilder, Stage, TracepointFields,
        simple_operand,
    },
    tracefs,
};
use tracekit_common::engine::{Insn, op, operand};

use crate::{
    cli::BiolatencyArgs,
    cmd::{
        agg::{self, Job, Report},
        bitesize::{block_rq, disk_dev},
    },
};

/// Adds `dev` and `sector` as the correlation key, and the `--disk` filter.
fn correlate(
    builder: &mut PlanBuilder,
    fields: &TracepointFields,
    disk: Option<u64>,
) -> Result<u32> {
    let dev = builder.operand(fields.operand("dev")?)?;
    let sector = builder.operand(fields.operand("sector")?)?;
    builder.corr_part(dev);
    builder.corr_part(sector);
    if let Some(disk) = disk {
        builder.push_insn(Insn {
            op: op::EQ,
            operand: dev,
            arg: disk,
        })?;
    }
    Ok(dev)
}

/// Runs `tracekit biolatency`.
pub fn run(args: BiolatencyArgs, verbose: u8) -> Result<()> {
    let tracefs = tracefs::root()?;
    let disk = args.disk.as_deref().map(disk_dev).transpose()?;
    let start_tp = block_rq(if args.queued {
        "block_rq_insert"
    } else {
        "block_rq_issue"
    });
    let end_tp = block_rq("block_rq_complete");

    let start_fields = TracepointFields::read(&tracefs, &start_tp)?;
    let mut start = PlanBuilder::new();
    correlate(&mut start, &start_fields, disk)?;

    let end_fields = TracepointFields::read(&tracefs, &end_tp)?;
    let mut main = PlanBuilder::new();
    let dev = correlate(&mut main, &end_fields, disk)?;
    main.needs_start();
    // Completions run in interrupt context or another task's: with -p or -- CMD, the
    // issue stage selects the I/O and its completion counts whoever runs it.
    main.all_tasks();
    let latency = main.operand(simple_operand(operand::LATENCY))?;
    main.value(latency);
    main.value_div(args.unit.ns());
    main.log2();
    let mut columns = Vec::new();
    if args.per_disk {
        main.key_part(dev)?;
        columns.push(KeyColumn {
            name: "disk".into(),
            kind: KeyKind::Disk,
        });
    }
    main.layout(None);

    let spec = EngineSpec {
        main: Stage {
            plan: main.plan(),
            attach: Attach::Tracepoints(vec![end_tp]),
        },
        start: Some(Stage {
            plan: start.plan(),
            attach: Attach::Tracepoints(vec![start_tp]),
        }),
        hash_entries: args.maps.max_groups,
        start_entries: args.maps.max_in_flight,
        event_base: 0,
    };
    let job = Job {
        tool_filter: false,
        command: "biolatency",
        what: format!(
            "block I/O latency ({} to completion)",
            if args.queued {
                "queue insertion"
            } else {
                "issue"
            }
        ),
        specs: vec![spec],
        columns,
        report: Report::Log2 {
            unit: args.unit.header().into(),
        },
    };
    agg::run(job, &args.scope, &args.timing, &args.output, verbose)
}
