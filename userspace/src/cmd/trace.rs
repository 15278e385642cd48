//! `tracekit trace`: one line per event, with the fields asked for, streamed from the kernel
//! through a ring buffer (`perf trace`, bcc `trace`). Events the ring buffer could not hold
//! are counted and reported. `-K`/`-U` print each event's kernel/user stack.

use std::{cell::RefCell, io::Write as _};

use tracekit::{
    Error, Result,
    engine::{StackReader, ValueType},
    output::{self, Format},
    profile::comm_string,
    stacks::{Frame, UNKNOWN_SYMBOL},
    symbolize::{Symbolizer, kernel_function},
};
use tracekit_common::engine::{STR_BYTES, TraceRecord};

use crate::{
    cli::TraceArgs,
    cmd::{
        agg::{self, RingHandler, Setup},
        compile::{self, EventNames, Printed, Request, Shape, Stacks},
    },
};

/// CLOCK_MONOTONIC now, in ns (the clock of `bpf_ktime_get_ns`).
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime(2) with a live out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One printed field.
fn field_text(record: &TraceRecord, printed: &Printed) -> (String, serde_json::Value) {
    match printed.ty {
        ValueType::Str => {
            let bytes = &record.strings[printed.string_slot as usize % record.strings.len()];
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(STR_BYTES);
            let text = String::from_utf8_lossy(&bytes[..end]).into_owned();
            (format!("{:?}", text), serde_json::Value::String(text))
        }
        ValueType::Int { signed } => {
            let raw = record.ints[printed.operand as usize % record.ints.len()];
            if signed {
                ((raw as i64).to_string(), (raw as i64).into())
            } else {
                (raw.to_string(), raw.into())
            }
        }
    }
}

/// Runs `tracekit trace`.
pub fn run(args: TraceArgs, verbose: u8) -> Result<()> {
    let file_format = agg::check_output(&args.output, "trace", false)?;
    let stacks = Stacks {
        kernel: args.kernel_stack,
        user: args.user_stack,
    };
    let mut print = args.print.clone();
    for (wanted, name) in [(stacks.kernel, "kstack"), (stacks.user, "ustack")] {
        if wanted {
            print.retain(|p| p != name);
        }
    }
    let request = Request {
        shape: Shape::Trace,
        print: &print,
        stacks,
        ..Request::count(&[], args.filter.as_deref())
    };
    let compiled = compile::compile(
        &args.probes,
        &request,
        false,
        &args.maps,
        args.target.target(&args.scope)?,
    )?;
    let json = args.output.json || file_format == Some(Format::Json);
    let out: RefCell<Box<dyn std::io::Write>> = RefCell::new(match args.output.output.as_deref() {
        Some(path) => Box::new(output::create(path)?),
        None => Box::new(std::io::stdout()),
    });
    let symbolizer = RefCell::new(Symbolizer::new(false));
    let start_ns = RefCell::new(0u64);
    let printed = RefCell::new(0u64);
    let write_error = RefCell::new(None::<std::io::Error>);
    let (out, symbolizer, start_ns, printed, write_error) =
        (&out, &symbolizer, &start_ns, &printed, &write_error);
    if !json {
        let mut header = format!(
            "{:<12} {:<16} {:>7} {:>7} {:<28}",
            "TIME(s)", "COMM", "PID", "TID", "EVENT"
        );
        for name in &print {
            header.push(' ');
            header.push_str(name);
        }
        let _ = writeln!(out.borrow_mut(), "{}", header.trim_end());
    }

    let finished = agg::run_engines(
        Setup {
            command: "trace",
            what: &compiled.what,
            specs: &compiled.specs,
            scope: &args.scope,
            timing: &args.timing,
            exclude_self: true,
            verbose,
        },
        |engines| {
            *start_ns.borrow_mut() = monotonic_ns();
            let mut handlers: Vec<RingHandler<'_>> = Vec::new();
            for (index, engine) in engines.iter_mut().enumerate() {
                let prints = compiled.prints[index].clone();
                let events = compiled.events[index].clone();
                let reader = if stacks.kernel || stacks.user {
                    Some(engine.stack_reader()?)
                } else {
                    None
                };
                let stack_operands = stack_operand_indices(&compiled.specs[index].main.plan);
                handlers.push((
                    engine.take_trace()?,
                    Box::new(move |bytes: &[u8]| {
                        if bytes.len() < size_of::<TraceRecord>() {
                            return;
                        }
                        // SAFETY: the kernel wrote a TraceRecord; read_unaligned copes with any alignment.
                        let record: TraceRecord =
                            unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast()) };
                        let line = render(
                            &record,
                            &prints,
                            &events,
                            *start_ns.borrow(),
                            json,
                            reader.as_ref(),
                            stack_operands,
                            &symbolizer.borrow(),
                        );
                        if let Err(err) = out.borrow_mut().write_all(line.as_bytes()) {
                            write_error.borrow_mut().get_or_insert(err);
                        }
                        *printed.borrow_mut() += 1;
                    }),
                ));
                if stacks.user {
                    handlers.push(agg::announce_handler(engine, symbolizer)?);
                }
            }
            Ok(handlers)
        },
        |_, _| Ok(()),
    )?;
    out.borrow_mut().flush().map_err(|err| Error::Runtime {
        what: "writing the trace".into(),
        source: Some(Box::new(err)),
    })?;
    if let Some(err) = write_error.take()
        && err.kind() != std::io::ErrorKind::BrokenPipe
    {
        return Err(Error::Runtime {
            what: "writing the trace".into(),
            source: Some(Box::new(err)),
        });
    }
    let stats = agg::read_all(&finished.engines)?.stats;
    eprintln!(
        "Printed {} events in {:.2} s{}.",
        printed.take(),
        finished.elapsed.as_secs_f64(),
        if stats.filtered > 0 {
            format!(" ({} more did not pass the filter)", stats.filtered)
        } else {
            String::new()
        }
    );
    let mut lost = Vec::new();
    if stats.trace_lost > 0 {
        lost.push(format!("{} events to a full ring buffer", stats.trace_lost));
    }
    if stats.stack_map_full + stats.stack_errors > 0 {
        lost.push(format!(
            "{} stacks",
            stats.stack_map_full + stats.stack_errors
        ));
    }
    if stats.read_errors > 0 {
        lost.push(format!(
            "{} events whose fields could not be read",
            stats.read_errors
        ));
    }
    eprintln!(
        "Lost: {}.",
        if lost.is_empty() {
            "nothing".to_string()
        } else {
            lost.join("; ")
        }
    );
    agg::print_usage(verbose, finished.attached_after);
    Ok(())
}

/// Operand indices of the kernel and user stacks in a plan.
fn stack_operand_indices(plan: &tracekit_common::engine::Plan) -> (Option<u32>, Option<u32>) {
    use tracekit_common::engine::operand;
    let find = |kind| {
        plan.operands[..plan.n_operands as usize]
            .iter()
            .position(|o| o.kind == kind)
            .map(|i| i as u32)
    };
    (find(operand::KERNEL_STACK), find(operand::USER_STACK))
}

#[allow(clippy::too_many_arguments)]
fn render(
    record: &TraceRecord,
    prints: &[Printed],
    events: &EventNames,
    start_ns: u64,
    json: bool,
    reader: Option<&StackReader>,
    (kernel, user): (Option<u32>, Option<u32>),
    symbolizer: &Symbolizer,
) -> String {
    let event = match events {
        EventNames::ByIndex(names) => names
            .get(&record.event)
            .cloned()
            .unwrap_or_else(|| format!("event {}", record.event)),
        EventNames::ByFunctionIp(operand) => {
            kernel_function(record.ints[*operand as usize % record.ints.len()])
        }
    };
    let time = record.ts_ns.saturating_sub(start_ns) as f64 / 1e9;
    let comm = comm_string(&record.comm);
    let stack = |operand: Option<u32>, user: bool| -> Vec<Frame> {
        let (Some(operand), Some(reader)) = (operand, reader) else {
            return Vec::new();
        };
        let hash = record.ints[operand as usize % record.ints.len()];
        match reader.frames(hash) {
            Some(ips) if user => symbolizer.user_stack(record.pid, &ips),
            Some(ips) => symbolizer.kernel_stack(&ips),
            None => Vec::new(),
        }
    };
    let kernel_frames = stack(kernel, false);
    let user_frames = stack(user, true);
    if json {
        let mut object = serde_json::Map::new();
        object.insert("time_s".into(), time.into());
        object.insert("comm".into(), comm.into());
        object.insert("pid".into(), record.pid.into());
        object.insert("tid".into(), record.tid.into());
        object.insert("cpu".into(), record.cpu.into());
        object.insert("event".into(), event.into());
        for printed in prints {
            object.insert(printed.name.clone(), field_text(record, printed).1);
        }
        for (name, frames, wanted) in [
            ("kernel_stack", &kernel_frames, kernel.is_some()),
            ("user_stack", &user_frames, user.is_some()),
        ] {
            if wanted {
                let names: Vec<&str> = frames.iter().rev().map(|f| f.symbol.as_str()).collect();
                object.insert(name.into(), names.into());
            }
        }
        return format!("{}\n", serde_json::Value::Object(object));
    }
    let mut line = format!(
        "{time:<12.6} {comm:<16} {:>7} {:>7} {event:<28}",
        record.pid, record.tid
    );
    for printed in prints {
        line.push(' ');
        line.push_str(&field_text(record, printed).0);
    }
    let mut text = format!("{}\n", line.trim_end());
    // Leaf first, as bcc's trace prints stacks.
    for frame in kernel_frames.iter().rev().chain(user_frames.iter().rev()) {
        let name = if frame.symbol == UNKNOWN_SYMBOL {
            "[unknown]"
        } else {
            frame.symbol.as_str()
        };
        text.push_str(&format!("        {name} ({})\n", frame.module_name()));
    }
    text
}
