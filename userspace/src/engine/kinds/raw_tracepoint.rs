//! Raw tracepoints, by their `TP_PROTO` arguments.

pub mod attach;

use std::{collections::BTreeMap, path::Path, sync::Arc};

use tracekit_common::engine::{Operand, operand};

use crate::{
    Result,
    engine::{
        compile::{body::*, start::*, *},
        kinds::{Kind, ProbeSpec, raw_tracepoint::attach::RawTracepoint},
        request::Request,
        syscalls::{ORIG_AX_OFFSET, SYSCALL_BOUND},
    },
    probe::{
        self,
        fields::{BUILTINS, FieldRef, Fields, Hint, ValueType, builtin, int},
    },
};

/// The arguments of a raw tracepoint (its `TP_PROTO`, after the hidden `void *__data`):
/// `arg0`..`arg5`, and by name for the syscall raw tracepoints (include/trace/events/
/// syscalls.h): `sys_enter(regs, id)`, `sys_exit(regs, ret)`, plus `id` at `sys_exit`, read
/// from `regs->orig_ax` where the architecture says where that is.
struct RawTracepointFields {
    name: String,
}

/// `rawtracepoint:`/`rt:`: a raw tracepoint, by its arguments.
#[derive(Debug)]
pub struct RawTracepointKind;

/// The kind's table entry.
pub static RAW_TRACEPOINT: RawTracepointKind = RawTracepointKind;

impl Kind for RawTracepointKind {
    fn names(&self) -> &'static [&'static str] {
        &["rawtracepoint", "rt"]
    }

    fn compile(&self, specs: &[ProbeSpec], request: &Request, events: &Events) -> Result<Compiled> {
        raw_tracepoint_specs(&specs[0], request, events)
    }

    fn fields(
        &self,
        spec: &ProbeSpec,
        _pid: Option<u32>,
        _tracefs: &dyn Fn() -> Result<std::path::PathBuf>,
    ) -> Result<String> {
        let fields = RawTracepointFields {
            name: spec.target.clone(),
        };
        Ok(format!("{}: {}\n", fields.event_name(), fields.describe()))
    }

    fn begin_event(
        &self,
        spec: &ProbeSpec,
        _tracefs: &Path,
    ) -> Result<(Box<dyn Fields>, EventAttach)> {
        Ok((
            Box::new(RawTracepointFields {
                name: spec.target.clone(),
            }),
            EventAttach::Raw(spec.target.clone()),
        ))
    }

    fn needs_tracefs(&self) -> bool {
        false
    }
}

impl RawTracepointFields {
    fn named(&self) -> Vec<(&'static str, FieldRef)> {
        let syscall = |field: FieldRef| field.hinted(Hint::Syscall).bounded(SYSCALL_BOUND);
        match self.name.as_str() {
            "sys_enter" => vec![
                ("regs", int(operand::ARG, 0, 8, false)),
                ("id", syscall(int(operand::ARG, 1, 8, false))),
            ],
            "sys_exit" => {
                let mut named = vec![
                    ("regs", int(operand::ARG, 0, 8, false)),
                    ("ret", int(operand::ARG, 1, 8, true)),
                ];
                if let Some(orig_ax) = ORIG_AX_OFFSET {
                    let id = FieldRef::new(
                        Operand {
                            kind: operand::ARG_DEREF,
                            offset: 0,
                            size: 8,
                            aux: orig_ax,
                            ..Operand::NONE
                        },
                        ValueType::Int { signed: false },
                    );
                    named.push(("id", syscall(id)));
                }
                named
            }
            _ => Vec::new(),
        }
    }
}

impl Fields for RawTracepointFields {
    fn lookup(&self, name: &str) -> Option<FieldRef> {
        if let Some((_, field)) = self.named().into_iter().find(|(n, _)| *n == name) {
            return Some(field);
        }
        if let Some((index, size, signed)) = probe::fields::parse_arg(name) {
            return (index < 6).then(|| int(operand::ARG, index, size, signed));
        }
        builtin(name)
    }
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.named().iter().map(|(n, _)| n.to_string()).collect();
        names.extend((0..6).map(|i| format!("arg{i}")));
        names.extend(BUILTINS.iter().map(|b| b.to_string()));
        names
    }
    fn describe(&self) -> String {
        let named: Vec<String> = self
            .named()
            .iter()
            .map(|(n, f)| {
                format!(
                    "{n} ({})",
                    if f.operand.kind == operand::ARG {
                        format!("arg{}", f.operand.offset)
                    } else {
                        "regs->orig_ax".to_string()
                    }
                )
            })
            .collect();
        let mut own = named.join(", ");
        if !own.is_empty() {
            own.push_str(", ");
        }
        format!("{own}arg0..arg5; and {}", BUILTINS.join(", "))
    }
    fn event_name(&self) -> String {
        format!("rawtracepoint:{}", self.name)
    }
}

/// One raw tracepoint, by its arguments.
fn raw_tracepoint_specs(spec: &ProbeSpec, request: &Request, events: &Events) -> Result<Compiled> {
    let own = RawTracepointFields {
        name: spec.target.clone(),
    };
    let start = compile_request_start(request, events)?;
    let (mut builder, (columns, prints)) =
        main_plan(&own, start.as_ref(), request, |builder, fields| {
            compile_body(builder, fields, request)
        })?;
    finish_layout(&mut builder, &columns);
    Ok(Compiled {
        specs: vec![spec_of(
            builder.plan(),
            Arc::new(RawTracepoint(spec.target.clone())),
            start.map(|s| s.stage),
            request,
        )],
        columns: columns_of(columns),
        what: spec.text.clone(),
        prints: vec![prints],
        events: vec![EventNames::ByIndex(BTreeMap::from([(
            0,
            spec.text.clone(),
        )]))],
    })
}
