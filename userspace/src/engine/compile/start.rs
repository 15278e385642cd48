//! Start stages: begin events (tracepoints or one raw tracepoint) that store a start under
//! the pairing key for the main stage to find. Each kind says how its events begin a stage
//! ([`Kind::begin_event`](crate::engine::kinds::Kind::begin_event)).

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Arc,
};

use tracekit_common::engine::{Insn, Operand, op, operand};

use crate::{
    Error, Result,
    engine::{
        Stage,
        attach::Attach,
        compile::{body::*, *},
        filter,
        kinds::ProbeSpec,
        kinds::{
            function::kernel_function::KernelFunctions, raw_tracepoint::attach::RawTracepoint,
            tracepoint::attach::Tracepoints,
        },
        plan::{PlanBuilder, saved_operand, saved_string_operand, simple_operand},
        request::{Request, Start},
    },
    error::quote,
    probe::{
        Tracepoint,
        fields::{FieldRef, Fields, ValueType},
    },
};

/// A compiled start stage, and the `start.NAME` values the main stage can read.
pub(crate) struct StartStage {
    pub(crate) stage: Stage,
    pub(crate) saved: BTreeMap<String, FieldRef>,
}

/// Where a start or end event attaches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventAttach {
    /// A tracepoint.
    Tracepoint(Tracepoint),
    /// A raw tracepoint, by name.
    Raw(String),
    /// Kernel functions' entries (`kprobe:`, `fentry:` when `trampoline`), by name.
    Function {
        /// The functions.
        functions: Vec<String>,
        /// Through BPF trampolines, not kprobes (else as the request's target says).
        trampoline: bool,
    },
}

/// Compiles the start stage of `request`.
pub(crate) fn compile_start(
    start: &Start,
    request: &Request,
    tracefs: &Path,
) -> Result<StartStage> {
    if start.probes.is_empty() || start.probes.len() > 4 {
        return Err(Error::usage("a start stage has 1 to 4 begin events"));
    }
    if start.end_pair.is_empty() || start.end_pair.len() > 2 {
        return Err(Error::usage(
            "a start stage pairs begin and end events by 1 or 2 fields",
        ));
    }
    // Begin events whose pairing fields are read the same way share the one start plan.
    let mut kept: Vec<(Box<dyn Fields>, EventAttach, Option<String>)> = Vec::new();
    let mut pair: Vec<Operand> = Vec::new();
    for begin in &start.probes {
        if begin.pair.len() != start.end_pair.len() {
            return Err(Error::usage(format!(
                "start probe `{}` pairs by {} fields, the end event by {}",
                quote(&begin.probe),
                begin.pair.len(),
                start.end_pair.len()
            )));
        }
        let spec = ProbeSpec::parse(&begin.probe)?;
        let (fields, attach) = spec.kind.begin_event(&spec, tracefs)?;
        let operands = begin
            .pair
            .iter()
            .map(|name| resolve(fields.as_ref(), "start", name).map(|f| f.operand))
            .collect::<Result<Vec<_>>>()?;
        if kept.is_empty() {
            pair = operands;
        } else if operands != pair {
            log::warn!(
                "{}'s {} is not where {}'s is on this kernel; its starts are not recorded",
                fields.event_name(),
                begin.pair.join(", "),
                kept[0].0.event_name()
            );
            continue;
        }
        kept.push((fields, attach, begin.filter.clone()));
    }
    let mut builder = PlanBuilder::new();
    if start.all_tasks {
        builder.all_tasks();
    }
    if start.per_thread && pair.len() == 1 {
        builder.by_thread();
    }
    for operand in &pair {
        let index = builder.operand(*operand)?;
        builder.corr_part(index);
    }
    // One filter for every begin event when it reads the same in each, else each begin
    // event's own behind its event index.
    let compiled_alone = kept
        .iter()
        .map(|(fields, _, text)| {
            let mut alone = builder.clone();
            if let Some(text) = text {
                filter::compile(text, fields.as_ref(), &mut alone)?;
            }
            Ok(alone)
        })
        .collect::<Result<Vec<_>>>()?;
    if compiled_alone
        .iter()
        .all(|alone| alone.plan() == compiled_alone[0].plan())
    {
        builder = compiled_alone.into_iter().next().expect("begin events");
    } else {
        let event = builder.operand(simple_operand(operand::EVENT_INDEX))?;
        for (index, (fields, _, text)) in kept.iter().enumerate() {
            builder.push_insn(Insn {
                op: op::EQ,
                operand: event,
                arg: index as u64,
            })?;
            if let Some(text) = text {
                filter::compile(text, fields.as_ref(), &mut builder)?;
                builder.push_op(op::AND)?;
            }
            if index > 0 {
                builder.push_op(op::OR)?;
            }
        }
    }
    // `start.NAME` values the request reads, saved with the start.
    let mut saved = BTreeMap::new();
    for name in request.names() {
        let Some(own) = name.strip_prefix("start.") else {
            continue;
        };
        if saved.contains_key(&name) {
            continue;
        }
        let mut field = None;
        for (fields, ..) in &kept {
            let found = resolve(fields.as_ref(), "start", own)?;
            match field {
                None => field = Some(found),
                Some(first) if first == found => {}
                Some(_) => {
                    return Err(Error::usage(format!(
                        "{name}: `{own}` is read differently by the begin events; \
                         save a field all of them have alike"
                    )));
                }
            }
        }
        let field = field.expect("a start stage has begin events");
        // A trace saves a user string's pointer, read whole at the end event: the syscall
        // has faulted its page in by then.
        if request.shape == crate::engine::request::Shape::Trace
            && let Some(pointer) = user_string_pointer(&field.operand)
        {
            let index = builder.operand(pointer)?;
            let slot = builder.save(index)?;
            let operand = Operand {
                kind: operand::SAVED_USER_STR,
                offset: slot,
                size: tracekit_common::engine::STR_BYTES as u32,
                ..Operand::NONE
            };
            saved.insert(name, FieldRef { operand, ..field });
            continue;
        }
        let index = builder.operand(field.operand)?;
        let slot = builder.save(index)?;
        let operand = if field.ty == ValueType::Str {
            saved_string_operand(&field.operand)
        } else {
            saved_operand(slot)
        };
        saved.insert(name, FieldRef { operand, ..field });
    }
    if builder.uses(operand::USER_STACK) {
        builder.announce();
    }
    builder.layout(None);
    let attach: Attach = match kept.iter().map(|(_, a, _)| a.clone()).collect::<Vec<_>>()[..] {
        [EventAttach::Raw(ref name)] => Arc::new(RawTracepoint(name.clone())),
        [
            EventAttach::Function {
                ref functions,
                trampoline,
            },
        ] => Arc::new(KernelFunctions {
            functions: functions.clone(),
            ret: false,
            how: if trampoline {
                crate::engine::spec::KernelAttach::Fentry
            } else {
                request.target.how
            },
            param_words: 0,
        }),
        ref events => {
            let mut tracepoints = Vec::new();
            for event in events {
                let EventAttach::Tracepoint(tp) = event else {
                    return Err(Error::usage(
                        "a start stage is one raw tracepoint, one kernel function probe, or \
                         tracepoints only",
                    ));
                };
                tracepoints.push(tp.clone());
            }
            Arc::new(Tracepoints(tracepoints))
        }
    };
    Ok(StartStage {
        stage: Stage {
            plan: builder.plan(),
            attach,
        },
        saved,
    })
}

/// The pointer a user string operand reads through, as a number to save: a record field
/// (`filename` of `syscalls:sys_enter_openat`) or a probe argument (`str(arg0)`); `None`
/// for other strings.
fn user_string_pointer(o: &Operand) -> Option<Operand> {
    use tracekit_common::engine::{PTR_ARRAY, PTR_FROM_ARG};
    if o.kind != operand::USER_STR || o.flags & PTR_ARRAY != 0 {
        return None;
    }
    Some(if o.flags & PTR_FROM_ARG != 0 {
        crate::engine::plan::arg_operand(o.offset, 8, false)
    } else {
        Operand {
            kind: operand::FIELD,
            offset: o.offset,
            size: 8,
            ..Operand::NONE
        }
    })
}

/// The start stage of `request`, compiled, for a main event that needs no tracefs of its own
/// (a raw tracepoint, a software event): tracefs is read only when a begin event needs it.
/// `None` when the request has no start stage.
pub(crate) fn compile_request_start(
    request: &Request,
    events: &Events,
) -> Result<Option<StartStage>> {
    request
        .start
        .as_ref()
        .map(|start| compile_start(start, request, &tracefs_if_needed(start, events)?))
        .transpose()
}

/// tracefs, when a start stage has tracepoints (raw tracepoints need none).
fn tracefs_if_needed(start: &Start, events: &Events) -> Result<PathBuf> {
    let raw_only = start
        .probes
        .iter()
        .all(|p| ProbeSpec::parse(&p.probe).is_ok_and(|spec| !spec.kind.needs_tracefs()));
    if raw_only {
        Ok(PathBuf::new())
    } else {
        events.root()
    }
}
