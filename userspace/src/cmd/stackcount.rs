//! `tracekit stackcount`: how often each stack led to an event (bcc `stackcount`), for any
//! probe kind: tracepoints, kernel and user functions, software events. Counting happens in
//! the kernel, keyed by (pid, comm, kernel stack, user stack); the output is the profile's:
//! a report of the hottest functions, folded stacks, a flame graph, or JSON.

use std::{cell::RefCell, collections::HashMap};

use tracekit::{
    Result,
    engine::{KeyColumn, KeyKind},
    profile::{self, RawProfile},
    symbolize::Symbolizer,
};
use tracekit_common::{
    engine::STR_BYTES,
    profile::{STACK_NONE, SampleKey},
};

use crate::{
    cli::StackcountArgs,
    cmd::{
        agg::{self, Setup},
        compile::{self, Request, Stacks},
        profile::{Header, emit_profile, options_cpus, print_written},
    },
};

/// Runs `tracekit stackcount`.
pub fn run(args: StackcountArgs, verbose: u8) -> Result<()> {
    let file_format = agg::check_output(&args.output, "stackcount", true)?;
    let stacks = Stacks::from(&args.stacks);
    let by = ["pid".to_string(), "comm".to_string()];
    let request = Request {
        stacks,
        ..Request::count(&by, args.filter.as_deref())
    };
    let compiled = compile::compile(
        std::slice::from_ref(&args.probe),
        &request,
        false,
        &args.maps,
        args.target.target(&args.scope)?,
    )?;
    let symbolizer = RefCell::new(Symbolizer::default());
    let symbolizer = &symbolizer;
    let finished = agg::run_engines(
        Setup {
            command: "stackcount",
            what: &format!("stacks of {}", compiled.what),
            specs: &compiled.specs,
            scope: &args.scope,
            timing: &args.timing,
            exclude_self: false,
            verbose,
        },
        |engines| agg::announce_handlers(engines, symbolizer, stacks.user),
        |_, _| Ok(()),
    )?;

    let leading = compiled
        .columns
        .iter()
        .take_while(|c| !matches!(c.name.as_str(), "pid"))
        .map(words_of)
        .sum::<usize>();
    let raw = collect_profile(&finished.engines, leading, stacks, Weight::Count)?;
    let profile = profile::symbolize(&raw, &symbolizer.borrow());
    let header = Header {
        tool: "stackcount",
        event: &compiled.what,
        unit: "events",
        scope: &finished.scope_text,
        hz: None,
        elapsed: finished.elapsed,
        cpus: options_cpus(),
    };
    emit_profile(
        &args.output,
        file_format,
        &profile,
        &header,
        args.stacks.top,
        true,
    )?;
    let stats = agg::read_all(&finished.engines)?.stats;
    finished.print_summary(&stats, false);
    print_written(&args.output, file_format);
    agg::print_usage(verbose, finished.attached_after);
    Ok(())
}

/// What a stack's count is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weight {
    /// Events.
    Count,
    /// The summed value, in microseconds (the value being nanoseconds).
    SumMicros,
}

/// Reads engines whose group keys are `[leading words] pid comm kernel? user?` into a raw
/// profile (stacks and their counts), for the profile's symbolization and output.
pub fn collect_profile(
    engines: &[tracekit::engine::Engine],
    leading: usize,
    stacks: Stacks,
    weight: Weight,
) -> Result<RawProfile> {
    let mut raw = RawProfile::default();
    for engine in engines {
        let aggregates = engine.read()?;
        let mut hashes = Vec::new();
        for ((words, _), value) in &aggregates.cells {
            let at = |i: usize| words.get(leading + i).copied().unwrap_or(0);
            let mut comm = [0u8; 16];
            for (w, chunk) in comm.chunks_mut(8).enumerate() {
                chunk.copy_from_slice(&at(1 + w).to_ne_bytes());
            }
            let after = 1 + STR_BYTES / 8;
            let kernel_stack = if stacks.kernel { at(after) } else { STACK_NONE };
            let user_stack = if stacks.user {
                at(after + usize::from(stacks.kernel))
            } else {
                STACK_NONE
            };
            hashes.extend([kernel_stack, user_stack]);
            let key = SampleKey {
                pid: at(0) as u32,
                _pad: 0,
                kernel_stack,
                user_stack,
                comm,
            };
            *raw.counts.entry(key).or_default() += match weight {
                Weight::Count => value.count,
                Weight::SumMicros => value.sum / 1000,
            };
        }
        raw.stacks.extend(
            engine
                .stacks(hashes)?
                .into_iter()
                .collect::<HashMap<_, _>>(),
        );
        let stats = aggregates.stats;
        raw.stats.samples += stats.counted;
        raw.stats.count_map_full += stats.map_full;
        raw.stats.stack_map_full += stats.stack_map_full;
        raw.stats.kernel_stack_errors += stats.stack_errors;
        raw.stats.events_lost += stats.announce_lost;
    }
    Ok(raw)
}

/// Key words a column takes.
pub fn words_of(column: &KeyColumn) -> usize {
    match column.kind {
        KeyKind::Str => STR_BYTES / 8,
        _ => 1,
    }
}
