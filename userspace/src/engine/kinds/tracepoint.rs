//! Tracepoints, by their record fields (from their format files); `syscalls:*` sets that
//! read no field through one raw tracepoint.

pub mod attach;

use std::{collections::BTreeMap, path::Path, sync::Arc};

use tracekit_common::engine::{MAX_TRACEPOINTS, Operand, Plan, operand};

use crate::{
    Error, Result,
    engine::{
        EngineSpec,
        attach::Attach,
        compile::{body::*, start::*, *},
        keys::{KeyColumn, KeyKind},
        kinds::{
            Kind, ProbeSpec,
            raw_tracepoint::attach::{CLASSIC_ONLY, RawInPlaceOf, RawOrClassic, RawTracepoint},
            tracepoint::attach::{Classic, Tracepoints},
        },
        plan::{PlanBuilder, arg_operand, simple_operand},
        request::{Request, Shape},
        syscalls::{ORIG_AX_OFFSET, SYSCALL_BOUND, tracepoint_syscall},
    },
    error::quote,
    probe::{
        self, Tracepoint,
        fields::{BUILTINS, Fields, TracepointFields, builtin},
        tracefs::EventFormat,
    },
};

/// `tracepoint:`/`t:`, or perf's `SYSTEM:EVENT`: static tracepoints, wildcards allowed.
#[derive(Debug)]
pub struct TracepointKind;

/// The kind's table entry.
pub static TRACEPOINT: TracepointKind = TracepointKind;

impl Kind for TracepointKind {
    fn names(&self) -> &'static [&'static str] {
        &["tracepoint", "t"]
    }

    fn check(&self, spec: &ProbeSpec) -> Result<()> {
        let parts: Vec<&str> = spec.target.split(':').collect();
        if parts.len() != 2 || parts.iter().any(|p| p.is_empty()) {
            return Err(Error::usage(format!(
                "probe `{}`: a tracepoint is SYSTEM:EVENT, e.g. tracepoint:block:block_rq_issue",
                quote(&spec.text)
            )));
        }
        Ok(())
    }

    fn several(&self) -> bool {
        true
    }

    fn compile(&self, specs: &[ProbeSpec], request: &Request, events: &Events) -> Result<Compiled> {
        let tracepoints = tracepoints_of(specs, events)?;
        tracepoint_specs(&tracepoints, request, events)
    }

    fn fields(
        &self,
        spec: &ProbeSpec,
        _pid: Option<u32>,
        tracefs: &dyn Fn() -> Result<std::path::PathBuf>,
    ) -> Result<String> {
        let mut out = String::new();
        let root = tracefs()?;
        for tp in probe::find_tracepoints(&root, &spec.target, &mut None)? {
            let format = EventFormat::read(&root, &tp.system, &tp.event)?;
            out.push_str(&format!("{tp} (id {}):\n", format.id));
            for field in format.fields.iter().filter(|f| !f.is_common()) {
                let ty = if field.is_dynamic() {
                    "string (__data_loc)".to_string()
                } else {
                    match field.array_len {
                        Some(n) => format!("{}[{n}]", field.c_type),
                        None => field.c_type.clone(),
                    }
                };
                out.push_str(&format!(
                    "  {:<24} {:<24} offset {:<4} size {}{}\n",
                    field.name,
                    ty,
                    field.offset,
                    field.size,
                    if field.signed { ", signed" } else { "" }
                ));
            }
            let builtins: Vec<&str> = BUILTINS
                .iter()
                .copied()
                .filter(|b| format.field(b).is_none())
                .collect();
            out.push_str(&format!("  built-in: {}\n\n", builtins.join(", ")));
        }
        Ok(out)
    }

    fn begin_event(
        &self,
        spec: &ProbeSpec,
        tracefs: &Path,
    ) -> Result<(Box<dyn Fields>, EventAttach)> {
        let [tp] = &probe::find_tracepoints(tracefs, &spec.target, &mut None)?[..] else {
            return Err(Error::usage(format!(
                "probe `{}`: a start or end event is one tracepoint, not a wildcard",
                quote(&spec.text)
            )));
        };
        let tp = tp.clone();
        let fields = TracepointFields::read(tracefs, &tp)?;
        Ok((Box::new(fields), EventAttach::Tracepoint(tp)))
    }
}

/// Expands tracepoint specs (wildcards included), without duplicates.
fn tracepoints_of(specs: &[ProbeSpec], events: &Events) -> Result<Vec<Tracepoint>> {
    let tracefs = events.root()?;
    let mut all = None;
    let mut out = Vec::new();
    for spec in specs {
        for tp in probe::find_tracepoints(&tracefs, &spec.target, &mut all)? {
            if !out.contains(&tp) {
                out.push(tp);
            }
        }
    }
    Ok(out)
}

/// `syscalls:sys_enter_*` (or `sys_exit_*`) sets that read no record field are counted
/// with one `raw_syscalls` attach keyed by syscall number instead of one attach per
/// syscall. Returns None when the set does not qualify.
fn syscall_set_spec(
    tracepoints: &[Tracepoint],
    request: &Request,
) -> Result<Option<(EngineSpec, Vec<KeyColumn>)>> {
    if tracepoints.len() < 2 || tracepoints.iter().any(|tp| tp.system != "syscalls") {
        return Ok(None);
    }
    let enter = tracepoints
        .iter()
        .all(|tp| tp.event.starts_with("sys_enter_"));
    let exit = tracepoints
        .iter()
        .all(|tp| tp.event.starts_with("sys_exit_"));
    let uses_fields = request.names().iter().any(|name| builtin(name).is_none());
    if !(enter || exit) || uses_fields || (exit && ORIG_AX_OFFSET.is_none()) {
        return Ok(None);
    }
    let mut builder = PlanBuilder::new();
    let nr = if enter {
        builder.operand(arg_operand(1, 8, false))?
    } else {
        builder.operand(Operand {
            kind: operand::ARG_DEREF,
            offset: 0,
            size: 8,
            aux: ORIG_AX_OFFSET.unwrap_or(0),
            ..Operand::NONE
        })?
    };
    builder.key_part(nr)?;
    let prefix = if enter { "sys_enter_" } else { "sys_exit_" };
    let names: BTreeMap<u64, String> = tracepoints
        .iter()
        .filter_map(|tp| {
            let name = tp.event.strip_prefix(prefix)?;
            Some((tracepoint_syscall(name)?, tp.to_string()))
        })
        .collect();
    // The program sees every syscall; only the named ones count, as with one attach each.
    builder.key_set(names.keys().copied());
    let mut columns = vec![Column {
        column: KeyColumn {
            name: "event".into(),
            kind: KeyKind::Event(names),
        },
        bound: Some(SYSCALL_BOUND),
    }];
    let fields = BuiltinFields(format!("syscalls:{prefix}*"));
    columns.extend(compile_body(&mut builder, &fields, request)?.0);
    finish_layout(&mut builder, &columns);
    let attach = RawTracepoint(if enter { "sys_enter" } else { "sys_exit" }.into());
    let spec = spec_of(builder.plan(), Arc::new(attach), None, request);
    Ok(Some((spec, columns_of(columns))))
}

/// Compiles the request for each tracepoint and groups tracepoints whose plans are equal into
/// engines of at most [`MAX_TRACEPOINTS`] tracepoints each.
fn tracepoint_specs(
    tracepoints: &[Tracepoint],
    request: &Request,
    events: &Events,
) -> Result<Compiled> {
    let by_event = request.by_event || (tracepoints.len() > 1 && request.shape != Shape::Trace);
    if by_event
        && request.shape != Shape::Trace
        && request.start.is_none()
        && let Some((spec, columns)) = syscall_set_spec(tracepoints, request)?
    {
        return Ok(Compiled {
            specs: vec![spec],
            columns,
            what: describe(tracepoints),
            prints: vec![Vec::new()],
            events: vec![EventNames::ByIndex(BTreeMap::new())],
        });
    }
    let tracefs = events.root()?;
    let start = match &request.start {
        Some(start) => Some(compile_start(start, request, &tracefs)?),
        None => None,
    };
    let mut groups: Vec<(Plan, Vec<Tracepoint>, Vec<Printed>)> = Vec::new();
    let mut columns = Vec::new();
    // One tracepoint's plan that reads its record only where the raw arguments hold the
    // same (raw_syscalls), rewritten to read them.
    let mut raw_plan = None;
    for tp in tracepoints {
        let own = TracepointFields::read(&tracefs, tp)?;
        let (mut builder, (tp_columns, prints)) =
            main_plan(&own, start.as_ref(), request, |builder, fields| {
                let mut tp_columns = Vec::new();
                if by_event {
                    let id = builder.operand(simple_operand(operand::EVENT_INDEX))?;
                    builder.key_part(id)?;
                    tp_columns.push(Column {
                        column: KeyColumn {
                            name: "event".into(),
                            kind: KeyKind::Event(BTreeMap::new()),
                        },
                        bound: Some(MAX_TRACEPOINTS as u32),
                    });
                }
                let (more, prints) = compile_body(builder, fields, request)?;
                tp_columns.extend(more);
                Ok((tp_columns, prints))
            })?;
        finish_layout(&mut builder, &tp_columns);
        let plan = builder.plan();
        if tracepoints.len() == 1 && start.is_none() {
            raw_plan = raw_syscalls_plan(&own, &plan);
        }
        if columns.is_empty() {
            columns = columns_of(tp_columns);
        }
        match groups
            .iter_mut()
            .find(|(p, members, _)| *p == plan && members.len() < MAX_TRACEPOINTS)
        {
            Some((_, members, _)) => members.push(tp.clone()),
            None => groups.push((plan, vec![tp.clone()], prints)),
        }
    }
    // A start stage has one start map: several end events share it in one engine, so
    // they must compile to one plan (statsnoop's sys_exit_statx and sys_exit_newfstatat).
    if start.is_some()
        && let [(_, first, _), (_, second, _), ..] = &groups[..]
    {
        return Err(Error::usage(format!(
            "a start stage pairs with end events whose fields are read alike; {} and {} \
             differ",
            first[0], second[0]
        )));
    }
    let mut names = BTreeMap::new();
    let mut specs = Vec::new();
    let mut all_prints = Vec::new();
    let mut events = Vec::new();
    let start_stage = start.map(|s| s.stage);
    for (plan, members, prints) in groups {
        let event_base = names.len() as u32;
        for (index, tp) in members.iter().enumerate() {
            names.insert(u64::from(event_base) + index as u64, tp.to_string());
        }
        all_prints.push(prints);
        events.push(EventNames::ByIndex(
            members
                .iter()
                .enumerate()
                .map(|(i, tp)| (i as u32, tp.to_string()))
                .collect(),
        ));
        let (plan, attach) = hook(plan, members, start_stage.is_some(), raw_plan.take());
        let mut spec = spec_of(plan, attach, start_stage.clone(), request);
        spec.event_base = event_base;
        specs.push(spec);
    }
    if let Some(column) = columns.first_mut()
        && let KeyKind::Event(event_names) = &mut column.kind
    {
        *event_names = names;
    }
    Ok(Compiled {
        specs,
        columns,
        what: describe(tracepoints),
        prints: all_prints,
        events,
    })
}

/// Where a stage of `members` attaches, and its plan there: one tracepoint whose plan reads
/// nothing of its record attaches as its raw tracepoint (no record built; the classic one
/// where that fails, [`RawOrClassic`]); `raw` is the plan of a `raw_syscalls` tracepoint
/// rewritten to read its raw arguments ([`raw_syscalls_plan`]); every other stage stays
/// on its classic tracepoints. [`CLASSIC_ONLY`] keeps them all classic.
fn hook(plan: Plan, members: Vec<Tracepoint>, start: bool, raw: Option<Plan>) -> (Plan, Attach) {
    let classic = std::env::var_os(CLASSIC_ONLY).is_some();
    match &members[..] {
        [tp] if !start && !classic && raw.is_some() => (
            raw.unwrap_or(plan),
            Arc::new(RawInPlaceOf {
                name: tp.event.clone(),
                of: tp.clone(),
            }),
        ),
        [tp] if !start && reads_no_record(&plan) => (plan, Arc::new(RawOrClassic(tp.clone()))),
        [tp] if !start => {
            let why = if classic {
                format!("{CLASSIC_ONLY} is set")
            } else {
                "the plan reads fields of its record".into()
            };
            let tracepoint = tp.clone();
            (plan, Arc::new(Classic { tracepoint, why }))
        }
        _ => (plan, Arc::new(Tracepoints(members))),
    }
}

/// Whether `plan` reads nothing but what every hook of the event offers alike: task ids,
/// cpu, comm, cgroup, the user stack, constants, the event index. A record field, or a
/// kernel stack (a raw tracepoint's has the BPF trampoline's frames on top where the classic
/// one has perf's), keeps it on the classic tracepoint; so does any operand added later
/// until it is listed here.
pub(crate) fn reads_no_record(plan: &Plan) -> bool {
    plan.operands[..(plan.n_operands as usize).min(plan.operands.len())]
        .iter()
        .all(same_on_every_hook)
}

/// Whether operand `o` reads the same on a raw and on a classic tracepoint (see
/// [`reads_no_record`]).
fn same_on_every_hook(o: &Operand) -> bool {
    matches!(
        o.kind,
        operand::NONE
            | operand::PID
            | operand::TID
            | operand::CPU
            | operand::COMM
            | operand::CGROUP
            | operand::USER_STACK
            | operand::CONST
            | operand::EVENT_INDEX
    )
}

/// `plan` for `raw_syscalls:sys_enter`/`sys_exit` rewritten to read the raw tracepoint's
/// arguments (include/trace/events/syscalls.h: `sys_enter(regs, id)`, `sys_exit(regs,
/// ret)`, the exit's `id` from `regs->orig_ax`) where it read the record's `id` or `ret`;
/// None for other tracepoints, for plans that read nothing of the record (they take
/// [`RawOrClassic`]) and for plans that read other fields (`args`).
fn raw_syscalls_plan(fields: &TracepointFields, plan: &Plan) -> Option<Plan> {
    if fields.tracepoint.system != "raw_syscalls" || reads_no_record(plan) {
        return None;
    }
    let enter = match fields.tracepoint.event.as_str() {
        "sys_enter" => true,
        "sys_exit" => false,
        _ => return None,
    };
    let offset = |name: &str| fields.format.field(name).map(|f| f.offset);
    let mut raw = *plan;
    let n = (raw.n_operands as usize).min(raw.operands.len());
    for o in &mut raw.operands[..n] {
        if same_on_every_hook(o) {
            continue;
        }
        if o.kind != operand::FIELD {
            return None;
        }
        let at = Some(o.offset);
        // sys_enter(regs, id) and sys_exit(regs, ret): the record field is argument 1.
        let in_arg1 = if enter { offset("id") } else { offset("ret") };
        *o = if at == in_arg1 {
            Operand {
                kind: operand::ARG,
                offset: 1,
                ..*o
            }
        } else if at == offset("id") && !enter {
            Operand {
                kind: operand::ARG_DEREF,
                offset: 0,
                aux: ORIG_AX_OFFSET?,
                ..*o
            }
        } else {
            return None;
        };
    }
    raw.raw_args = 2;
    Some(raw)
}

#[cfg(test)]
mod exact_tests {
    use super::*;

    /// An exact name is found with one stat, as the full listing would find it; wildcards,
    /// missing names and bad names go to the listing (which suggests near names).
    #[test]
    fn exact_names_skip_the_listing() {
        let root = Events::test_6_18().root().unwrap();
        let all = probe::all_tracepoints(&root).unwrap();
        let mut listed = None;
        let execve =
            probe::find_tracepoints(&root, "syscalls:sys_enter_execve", &mut listed).unwrap();
        assert_eq!(
            probe::expand_tracepoints("syscalls:sys_enter_execve", &all).unwrap(),
            execve
        );
        assert_eq!(execve[0].to_string(), "syscalls:sys_enter_execve");
        assert!(listed.is_none(), "an exact name listed every tracepoint");
        for pattern in [
            "syscalls:sys_enter_*",
            "syscalls:sys_enter_nope",
            "syscalls",
            "syscalls:",
            "../syscalls:sys_enter_execve",
        ] {
            let mut listed = None;
            assert_eq!(
                probe::find_tracepoints(&root, pattern, &mut listed).ok(),
                probe::expand_tracepoints(pattern, &all).ok(),
                "{pattern}"
            );
            assert!(
                listed.is_some(),
                "{pattern} was not looked up in the listing"
            );
        }
        let specs = [ProbeSpec::parse("syscalls:sys_enter_execve").unwrap()];
        assert_eq!(
            tracepoints_of(&specs, &Events::test_6_18()).unwrap(),
            execve
        );
    }
}
