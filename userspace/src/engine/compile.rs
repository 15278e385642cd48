//! Compiles a [`Request`] into engine specs, for every probe kind: tracepoints (their record
//! fields), `syscalls:*` sets (one raw tracepoint), raw tracepoints (their arguments), kernel
//! functions (fentry/fexit or kprobes), user functions (uprobes), USDT probes (uprobes at
//! their sites, arguments from their ELF notes) and software perf events.
//!
//! A request with a [`Start`] compiles to two stages of one engine:
//! the start plan stores the time and the `start.NAME` values under the pairing key, the main
//! plan finds them. A function probe's `latency` pairs entry and return by thread without
//! one.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Arc,
};

use tracekit_common::engine::{Insn, MAX_TRACEPOINTS, Operand, Plan, op, operand};

use super::{
    EngineSpec, Stage,
    attach::{
        Attach, kernel_function::KernelFunctions, perf_event::SoftwareEvent,
        raw_tracepoint::RawTracepoint, tracepoint::Tracepoints, uprobe::Uprobes, usdt::Usdt,
    },
    filter,
    keys::{KeyColumn, KeyKind},
    plan::{PlanBuilder, arg_operand, saved_operand, simple_operand},
    request::{KeyField, Request, Shape, Start},
    spec::KernelAttach,
    syscalls::{ORIG_AX_OFFSET, SYSCALL_BOUND, tracepoint_syscall},
};
use crate::{
    Error, Result,
    error::quote,
    probe::{
        self, ProbeKind, ProbeSpec, Tracepoint,
        fields::{
            BUILTINS, FieldRef, Fields, FunctionFields, Hint, TracepointFields, UsdtFields,
            ValueType, builtin, int,
        },
        functions::{self, KernelBtf},
        tracefs,
        usdt::{self, UsdtTarget},
    },
};

/// A field `trace` prints: where the record holds it.
#[derive(Clone, Debug)]
pub struct Printed {
    /// The name asked for.
    pub name: String,
    /// Operand index (integers: `TraceRecord::ints`).
    pub operand: u32,
    /// String slot (strings: `TraceRecord::strings`).
    pub string_slot: u32,
    /// Its type.
    pub ty: ValueType,
}

/// How `trace` names the event of a record of one engine.
#[derive(Clone, Debug)]
pub enum EventNames {
    /// By the record's event index (tracepoints, uprobes).
    ByIndex(BTreeMap<u32, String>),
    /// By the kernel function address in this operand (several kprobes).
    ByFunctionIp(u32),
}

/// What a request compiled to.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The engines to load (several when events need different plans).
    pub specs: Vec<EngineSpec>,
    /// The group key's columns.
    pub columns: Vec<KeyColumn>,
    /// What is traced, for "Tracing ..." (`block:block_rq_issue`, `uprobe:...:malloc (1
    /// function)`).
    pub what: String,
    /// Per engine: where each printed field is in its records.
    pub prints: Vec<Vec<Printed>>,
    /// Per engine: how its records name their event.
    pub events: Vec<EventNames>,
}

impl Compiled {
    /// Every stage of every spec as text (attach point, plan disassembly), then the key
    /// columns: for tests and `-vv` logs.
    pub fn listing(&self) -> String {
        let mut out = String::new();
        for spec in &self.specs {
            for (stage, role) in spec.stages() {
                out.push_str(&format!("{role:?} {:?}\n", stage.attach));
                out.push_str(&super::plan::disassemble(&stage.plan));
            }
        }
        let columns: Vec<String> = self
            .columns
            .iter()
            .map(|c| format!("{} {:?}", c.name, c.kind))
            .collect();
        out.push_str(&format!("columns: {}\n", columns.join(", ")));
        out
    }
}

/// Where tracepoints and their format files are read from.
#[derive(Clone, Debug, Default)]
pub struct Events {
    root: Option<PathBuf>,
}

impl Events {
    /// This machine's tracefs, mounted when first needed.
    pub fn system() -> Self {
        Self { root: None }
    }

    /// A directory laid out as tracefs is (`events/SYSTEM/EVENT/format`): for tests, and
    /// for compiling against another kernel's formats.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self {
            root: Some(root.into()),
        }
    }

    /// The tracefs tree of kernel 6.18 checked into the tests.
    #[cfg(test)]
    pub(crate) fn test_6_18() -> Self {
        Self::at(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/tracefs-6.18"
        ))
    }

    fn root(&self) -> Result<PathBuf> {
        match &self.root {
            Some(root) => Ok(root.clone()),
            None => tracefs::root(),
        }
    }
}

/// Compiles `request` against this machine's tracepoints.
///
/// # Errors
/// Usage errors naming the bad probe, field or filter part and what would be valid; runtime
/// errors when tracefs or a binary cannot be read.
pub fn compile(request: &Request) -> Result<Compiled> {
    compile_in(request, &Events::system())
}

/// Compiles `request` against the tracepoints of `events`.
///
/// # Errors
/// As [`compile`].
pub fn compile_in(request: &Request, events: &Events) -> Result<Compiled> {
    crate::bpf::hash_entries("--max-groups", request.maps.max_groups)?;
    crate::bpf::hash_entries("--max-in-flight", request.maps.max_in_flight)?;
    if let Some(text) = request.filter.as_deref() {
        probe::filter::parse(text)?;
    }
    let specs: Vec<ProbeSpec> = request
        .probes
        .iter()
        .map(|p| ProbeSpec::parse(p))
        .collect::<Result<_>>()?;
    if specs.is_empty() {
        return Err(Error::usage("no probe given"));
    }
    if specs.iter().all(|s| s.kind == ProbeKind::Tracepoint) {
        let tracepoints = tracepoints_of(&specs, events)?;
        return tracepoint_specs(&tracepoints, request, events);
    }
    let [spec] = specs.as_slice() else {
        return Err(Error::usage(
            "function and software-event probes are traced one spec at a time; \
             use a wildcard for several functions",
        ));
    };
    match spec.kind {
        ProbeKind::Software => software_specs(spec, request),
        ProbeKind::Hardware => Err(Error::usage(format!(
            "probe `{}`: hardware events are not supported by this command yet",
            quote(&spec.text)
        ))),
        ProbeKind::RawTracepoint => raw_tracepoint_specs(spec, request, events),
        ProbeKind::Usdt => usdt_specs(spec, request),
        _ => function_specs(spec, request),
    }
}

/// Expands tracepoint specs (wildcards included), without duplicates.
fn tracepoints_of(specs: &[ProbeSpec], events: &Events) -> Result<Vec<Tracepoint>> {
    let tracefs = events.root()?;
    let all = probe::all_tracepoints(&tracefs)?;
    let mut out = Vec::new();
    for spec in specs {
        for tp in probe::expand_tracepoints(&spec.target, &all)? {
            if !out.contains(&tp) {
                out.push(tp);
            }
        }
    }
    Ok(out)
}

/// The built-in names only (`pid`, `tid`, `cpu`, `comm`), for events without fields.
struct BuiltinFields(String);

impl Fields for BuiltinFields {
    fn lookup(&self, name: &str) -> Option<FieldRef> {
        builtin(name)
    }
    fn names(&self) -> Vec<String> {
        BUILTINS.iter().map(|b| b.to_string()).collect()
    }
    fn describe(&self) -> String {
        BUILTINS.join(", ")
    }
    fn event_name(&self) -> String {
        self.0.clone()
    }
}

/// The arguments of a raw tracepoint (its `TP_PROTO`, after the hidden `void *__data`):
/// `arg0`..`arg5`, and by name for the syscall raw tracepoints (include/trace/events/
/// syscalls.h): `sys_enter(regs, id)`, `sys_exit(regs, ret)`, plus `id` at `sys_exit`, read
/// from `regs->orig_ax` where the architecture says where that is.
struct RawTracepointFields {
    name: String,
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

/// The end event's names when a start stage runs: `latency` and the saved `start.NAME`
/// values, then the event's own.
struct EndFields<'a> {
    fields: &'a dyn Fields,
    saved: &'a BTreeMap<String, FieldRef>,
}

impl Fields for EndFields<'_> {
    fn lookup(&self, name: &str) -> Option<FieldRef> {
        if name == "latency" {
            return Some(int(operand::LATENCY, 0, 8, false));
        }
        if name.starts_with("start.") {
            return self.saved.get(name).copied();
        }
        self.fields.lookup(name)
    }
    fn names(&self) -> Vec<String> {
        let mut names = vec!["latency".to_string()];
        names.extend(self.saved.keys().cloned());
        names.extend(self.fields.names());
        names
    }
    fn describe(&self) -> String {
        format!("latency (ns since the start), {}", self.fields.describe())
    }
    fn event_name(&self) -> String {
        self.fields.event_name()
    }
}

/// Resolves a name, or a usage error listing what the event has.
fn resolve(fields: &dyn Fields, flag: &str, name: &str) -> Result<FieldRef> {
    fields.lookup(name).ok_or_else(|| {
        let near = probe::nearest(name, &fields.names(), 1);
        let name = quote(name);
        Error::usage(format!(
            "{flag} {name}: {} has no field `{name}`{}; it has {}",
            quote(&fields.event_name()),
            near.first()
                .map(|n| format!(" (did you mean {n}?)"))
                .unwrap_or_default(),
            fields.describe()
        ))
    })
}

/// How a group-key field is shown.
fn key_kind(field: &FieldRef) -> KeyKind {
    match (field.hint, field.ty) {
        (_, ValueType::Str) => KeyKind::Str,
        (Hint::Disk, _) => KeyKind::Disk,
        (Hint::Syscall, _) => KeyKind::Syscall,
        (Hint::Stack, _) => KeyKind::Int { signed: false },
        (Hint::Cgroup, _) => KeyKind::Cgroup,
        (Hint::Plain, ValueType::Int { signed }) => KeyKind::Int { signed },
    }
}

/// A key column of the plan being built, with the bound of its values if known.
struct Column {
    column: KeyColumn,
    bound: Option<u32>,
}

/// Adds the request's group key, value, aggregation, printed fields and filter to `builder`,
/// resolving names in `fields`. Returns the key columns and the printed fields.
fn compile_body(
    builder: &mut PlanBuilder,
    fields: &dyn Fields,
    request: &Request,
) -> Result<(Vec<Column>, Vec<Printed>)> {
    let mut columns = Vec::new();
    for KeyField { field: name, label } in &request.by {
        let field = resolve(fields, "--by", name)?;
        let index = builder.operand(field.operand)?;
        builder.key_part(index)?;
        columns.push(Column {
            column: KeyColumn {
                name: label.clone(),
                kind: key_kind(&field),
            },
            bound: field.bound,
        });
    }
    if let Some(name) = &request.value {
        let field = resolve(fields, "--value", name)?;
        if field.ty == ValueType::Str {
            let name = quote(name);
            return Err(Error::usage(format!(
                "--value {name}: `{name}` is a string; --value needs a number (use --by {name} to \
                 group by it)"
            )));
        }
        let index = builder.operand(field.operand)?;
        builder.value(index);
    }
    match request.shape {
        Shape::Count => {}
        Shape::Log2 => builder.log2(),
        Shape::LogLinear { precision } => builder.log_linear(precision)?,
        Shape::Linear { min, max, step } => builder.linear(min, max, step)?,
        Shape::Trace => builder.trace(),
    }
    builder.value_div(request.value_div);
    let mut prints = Vec::new();
    for name in &request.print {
        let field = resolve(fields, "--print", name)?;
        let operand = builder.operand(field.operand)?;
        prints.push(Printed {
            name: name.clone(),
            operand,
            string_slot: builder.plan().operands[operand as usize].string_slot,
            ty: field.ty,
        });
    }
    if let Some(text) = &request.filter {
        filter::compile(text, fields, builder)?;
    }
    Ok((columns, prints))
}

/// Picks the map layout once the key is complete: a per-CPU array indexed by the key when
/// it is one value below a known bound (or absent), a hash otherwise.
fn finish_layout(builder: &mut PlanBuilder, columns: &[Column]) {
    if builder.uses(operand::USER_STACK) {
        builder.announce();
    }
    match columns {
        [one] if one.bound.is_some() && builder.plan().n_key_parts == 1 => {
            builder.layout(one.bound)
        }
        _ => builder.layout(None),
    }
}

/// A compiled start stage, and the `start.NAME` values the main stage can read.
struct StartStage {
    stage: Stage,
    saved: BTreeMap<String, FieldRef>,
}

/// The fields of a start or end event: a tracepoint's or a raw tracepoint's.
fn event_fields(spec: &ProbeSpec, tracefs: &Path) -> Result<(Box<dyn Fields>, EventAttach)> {
    match spec.kind {
        ProbeKind::Tracepoint => {
            let all = probe::all_tracepoints(tracefs)?;
            let [tp] = &probe::expand_tracepoints(&spec.target, &all)?[..] else {
                return Err(Error::usage(format!(
                    "probe `{}`: a start or end event is one tracepoint, not a wildcard",
                    quote(&spec.text)
                )));
            };
            let tp = tp.clone();
            let fields = TracepointFields::read(tracefs, &tp)?;
            Ok((Box::new(fields), EventAttach::Tracepoint(tp)))
        }
        ProbeKind::RawTracepoint => Ok((
            Box::new(RawTracepointFields {
                name: spec.target.clone(),
            }),
            EventAttach::Raw(spec.target.clone()),
        )),
        _ => Err(Error::usage(format!(
            "probe `{}`: start stages pair tracepoints and raw tracepoints; for a function's \
             latency, use its return probe's `latency`",
            quote(&spec.text)
        ))),
    }
}

/// Where a start or end event attaches.
#[derive(Clone, Debug, PartialEq, Eq)]
enum EventAttach {
    Tracepoint(Tracepoint),
    Raw(String),
}

/// Compiles the start stage of `request`.
fn compile_start(start: &Start, request: &Request, tracefs: &Path) -> Result<StartStage> {
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
        let (fields, attach) = event_fields(&spec, tracefs)?;
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
        let index = builder.operand(field.operand)?;
        let slot = builder.save(index)?;
        saved.insert(
            name,
            FieldRef {
                operand: saved_operand(slot),
                ..field
            },
        );
    }
    if builder.uses(operand::USER_STACK) {
        builder.announce();
    }
    builder.layout(None);
    let attach: Attach = match kept.iter().map(|(_, a, _)| a.clone()).collect::<Vec<_>>()[..] {
        [EventAttach::Raw(ref name)] => Arc::new(RawTracepoint(name.clone())),
        ref events => {
            let mut tracepoints = Vec::new();
            for event in events {
                let EventAttach::Tracepoint(tp) = event else {
                    return Err(Error::usage(
                        "a start stage is one raw tracepoint, or tracepoints only",
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

/// A main plan for `request` on an event with `fields`: with a start stage, the pairing key
/// of the end event and the start lookup, and the end event's names (`latency`,
/// `start.NAME`) resolved through [`EndFields`]. Calls `body` with the builder and the
/// names.
fn main_plan<T>(
    own: &dyn Fields,
    start: Option<&StartStage>,
    request: &Request,
    body: impl FnOnce(&mut PlanBuilder, &dyn Fields) -> Result<T>,
) -> Result<(PlanBuilder, T)> {
    let mut builder = PlanBuilder::new();
    if request.all_tasks {
        builder.all_tasks();
    }
    let out = match (start, &request.start) {
        (Some(stage), Some(start)) => {
            let fields = EndFields {
                fields: own,
                saved: &stage.saved,
            };
            for name in &start.end_pair {
                let field = resolve(&fields, "end", name)?;
                let index = builder.operand(field.operand)?;
                builder.corr_part(index);
            }
            builder.needs_start();
            body(&mut builder, &fields)?
        }
        _ => body(&mut builder, own)?,
    };
    Ok((builder, out))
}

fn spec_of(plan: Plan, attach: Attach, start: Option<Stage>, request: &Request) -> EngineSpec {
    EngineSpec {
        main: Stage { plan, attach },
        start,
        hash_entries: request.maps.max_groups,
        start_entries: request.maps.max_in_flight,
        event_base: 0,
        user_unwind: false,
    }
}

fn columns_of(columns: Vec<Column>) -> Vec<KeyColumn> {
    columns.into_iter().map(|c| c.column).collect()
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
        Some(start) => {
            if tracepoints.len() != 1 {
                return Err(Error::usage(
                    "a start stage pairs with one end event, not a set of tracepoints",
                ));
            }
            Some(compile_start(start, request, &tracefs)?)
        }
        None => None,
    };
    let mut groups: Vec<(Plan, Vec<Tracepoint>, Vec<Printed>)> = Vec::new();
    let mut columns = Vec::new();
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
        let mut spec = spec_of(
            plan,
            Arc::new(Tracepoints(members)),
            start_stage.clone(),
            request,
        );
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

/// One raw tracepoint, by its arguments.
fn raw_tracepoint_specs(spec: &ProbeSpec, request: &Request, events: &Events) -> Result<Compiled> {
    let own = RawTracepointFields {
        name: spec.target.clone(),
    };
    let start = match &request.start {
        Some(start) => Some(compile_start(
            start,
            request,
            &tracefs_if_needed(start, events)?,
        )?),
        None => None,
    };
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

/// tracefs, when a start stage has tracepoints (raw tracepoints need none).
fn tracefs_if_needed(start: &Start, events: &Events) -> Result<PathBuf> {
    let raw_only = start.probes.iter().all(|p| {
        ProbeSpec::parse(&p.probe).is_ok_and(|spec| spec.kind == ProbeKind::RawTracepoint)
    });
    if raw_only {
        Ok(PathBuf::new())
    } else {
        events.root()
    }
}

/// `PERF_COUNT_SW_*` by perf's names.
pub const SOFTWARE_EVENTS: &[(&str, u64)] = &[
    ("cpu-clock", 0),
    ("task-clock", 1),
    ("page-faults", 2),
    ("faults", 2),
    ("context-switches", 3),
    ("cs", 3),
    ("cpu-migrations", 4),
    ("migrations", 4),
    ("minor-faults", 5),
    ("major-faults", 6),
    ("alignment-faults", 7),
    ("emulation-faults", 8),
];

fn software_specs(spec: &ProbeSpec, request: &Request) -> Result<Compiled> {
    let config = SOFTWARE_EVENTS
        .iter()
        .find(|(name, _)| *name == spec.target)
        .map(|(_, config)| *config)
        .ok_or_else(|| {
            let names: Vec<&str> = SOFTWARE_EVENTS.iter().map(|(n, _)| *n).collect();
            Error::usage(format!(
                "probe `{}`: unknown software event; valid: {}",
                quote(&spec.text),
                names.join(", ")
            ))
        })?;
    no_start(spec, request)?;
    let fields = BuiltinFields(spec.text.clone());
    let mut builder = PlanBuilder::new();
    let (columns, prints) = compile_body(&mut builder, &fields, request)?;
    finish_layout(&mut builder, &columns);
    let attach = SoftwareEvent { config, period: 1 };
    Ok(Compiled {
        specs: vec![spec_of(builder.plan(), Arc::new(attach), None, request)],
        columns: columns_of(columns),
        what: spec.text.clone(),
        prints: vec![prints],
        events: vec![EventNames::ByIndex(BTreeMap::from([(
            0,
            spec.text.clone(),
        )]))],
    })
}

fn no_start(spec: &ProbeSpec, request: &Request) -> Result<()> {
    if request.start.is_some() {
        return Err(Error::usage(format!(
            "probe `{}`: start stages pair tracepoints and raw tracepoints",
            quote(&spec.text)
        )));
    }
    Ok(())
}

/// Kernel (kprobe, kretprobe, fentry, fexit) and user (uprobe, uretprobe) functions.
fn function_specs(spec: &ProbeSpec, request: &Request) -> Result<Compiled> {
    use ProbeKind::*;
    no_start(spec, request)?;
    let is_return = matches!(spec.kind, Kretprobe | Fexit | Uretprobe);
    let uses_latency = request.names().iter().any(|n| n == "latency");
    if uses_latency && !is_return {
        return Err(Error::usage(format!(
            "probe `{}`: latency is known at the function's return; use kretprobe:, fexit: \
             or uretprobe:",
            quote(&spec.text)
        )));
    }
    let target = request.target;
    let user = matches!(spec.kind, Uprobe | Uretprobe);
    let (names, params, entry_attach, main_attach, what): (_, _, Attach, Attach, _) = if user {
        let (path, pattern) = spec.target.rsplit_once(':').ok_or_else(|| {
            Error::usage(format!(
                "probe `{}`: a user probe is {}:BINARY:FUNCTION (e.g. uprobe:libc:malloc)",
                quote(&spec.text),
                spec.kind.name()
            ))
        })?;
        let binary = functions::resolve_binary(path, target.pid)?;
        let found = functions::user_functions(&binary, pattern)?;
        let offsets: Vec<u64> = found.iter().map(|f| f.file_offset).collect();
        let names: Vec<String> = found.into_iter().map(|f| f.name).collect();
        let attach = |ret| -> Attach {
            Arc::new(Uprobes {
                binary: binary.clone(),
                offsets: offsets.clone(),
                pid: target.pid,
                ret,
            })
        };
        let what = format!(
            "{}:{}:{pattern} ({} function{})",
            spec.kind.name(),
            binary.display(),
            names.len(),
            if names.len() == 1 { "" } else { "s" }
        );
        (names, Vec::new(), attach(false), attach(is_return), what)
    } else {
        let btf = KernelBtf::open();
        let found = functions::kernel_functions(&spec.target, btf.as_ref())?;
        let params = match (&btf, found.as_slice()) {
            (Some(btf), [one]) => btf.params(one).unwrap_or_default(),
            _ => Vec::new(),
        };
        let how = if matches!(spec.kind, Fentry | Fexit) {
            KernelAttach::Fentry
        } else {
            target.how
        };
        let attach = |ret| -> Attach {
            Arc::new(KernelFunctions {
                functions: found.clone(),
                ret,
                how,
            })
        };
        let what = if found.len() == 1 {
            spec.text.clone()
        } else {
            format!(
                "{} ({})",
                spec.text,
                crate::error::plural(found.len(), "function", "functions")
            )
        };
        (
            found.clone(),
            params,
            attach(false),
            attach(is_return),
            what,
        )
    };
    let fields = FunctionFields {
        event: spec.text.clone(),
        is_return,
        params,
    };
    // Which function fired: the attach cookie (uprobes) or the function's address (kernel).
    let several = names.len() > 1;
    let function_key = if user || !several {
        simple_operand(operand::EVENT_INDEX)
    } else {
        simple_operand(operand::FUNC_IP)
    };
    let mut main = PlanBuilder::new();
    let mut columns = Vec::new();
    if request.by_event || several {
        let index = main.operand(function_key)?;
        main.key_part(index)?;
        let by_index = function_key.kind == operand::EVENT_INDEX;
        columns.push(Column {
            column: KeyColumn {
                name: "function".into(),
                kind: if by_index {
                    KeyKind::Event(
                        names
                            .iter()
                            .cloned()
                            .enumerate()
                            .map(|(i, n)| (i as u64, n))
                            .collect(),
                    )
                } else {
                    KeyKind::KernelFunction
                },
            },
            bound: by_index.then_some(names.len() as u32),
        });
    }
    let key_operand = if request.by_event || several {
        main.plan().key_parts[0]
    } else {
        0
    };
    let (more, prints) = compile_body(&mut main, &fields, request)?;
    columns.extend(more);
    let events = if function_key.kind == operand::FUNC_IP {
        EventNames::ByFunctionIp(key_operand)
    } else {
        EventNames::ByIndex(
            names
                .iter()
                .enumerate()
                .map(|(i, n)| (i as u32, format!("{}:{n}", spec.kind.name())))
                .collect(),
        )
    };
    let start = if uses_latency {
        // Entry and return meet per thread (and per function when there are several).
        let mut start = PlanBuilder::new();
        let tid = builtin("tid").expect("builtin").operand;
        let tid_start = start.operand(tid)?;
        start.corr_part(tid_start);
        if !several {
            start.by_thread();
        }
        let tid_main = main.operand(tid)?;
        main.corr_part(tid_main);
        if several {
            let key_start = start.operand(function_key)?;
            start.corr_part(key_start);
            let key_main = main.operand(function_key)?;
            main.corr_part(key_main);
        }
        start.layout(None);
        main.needs_start();
        Some(Stage {
            plan: start.plan(),
            attach: entry_attach,
        })
    } else {
        None
    };
    finish_layout(&mut main, &columns);
    Ok(Compiled {
        specs: vec![spec_of(main.plan(), main_attach, start, request)],
        columns: columns_of(columns),
        what,
        prints: vec![prints],
        events: vec![events],
    })
}

/// USDT probes of one binary (`usdt:BINARY[:PROVIDER]:NAME`, wildcards allowed): a uprobe
/// at each site, `arg0..argN` read as each site's note says. Sites whose arguments are read
/// alike share an engine; sites whose argument specs differ (a probe the compiler inlined
/// with its arguments in other registers, or RIP-relative arguments, read at a distance
/// from each site's own address) get an engine each. Every site reports its
/// probe's index as the event, so the sites of one probe count as one event.
fn usdt_specs(spec: &ProbeSpec, request: &Request) -> Result<Compiled> {
    no_start(spec, request)?;
    let target = UsdtTarget::parse(&spec.text, &spec.target)?;
    for name in request.names() {
        if matches!(name.as_str(), "latency" | "retval") {
            return Err(Error::usage(format!(
                "probe `{}`: USDT probes have arguments (arg0..argN), not `{name}`",
                spec.text
            )));
        }
    }
    let binary = functions::resolve_binary_for("USDT", target.binary, request.target.pid)?;
    let sites = usdt::find(&binary, &target)?;
    let mut names: Vec<String> = Vec::new();
    let mut events = Vec::with_capacity(sites.len());
    for site in &sites {
        let name = site.qualified_name();
        let index = match names.iter().position(|n| *n == name) {
            Some(index) => index,
            None => {
                names.push(name);
                names.len() - 1
            }
        };
        events.push(index as u32);
    }
    // Arguments the request reads must be readable at every site.
    let used: Vec<String> = request
        .names()
        .into_iter()
        .filter(|n| probe::fields::parse_arg(n).is_some())
        .collect();
    for site in &sites {
        let fields = UsdtFields::of(format!("usdt:{}", site.qualified_name()), site);
        for name in &used {
            if fields.arg(name)?.is_none() {
                return Err(Error::usage(format!(
                    "{name}: USDT probe {} has {} argument{} ({})",
                    site.qualified_name(),
                    site.args.len(),
                    if site.args.len() == 1 { "" } else { "s" },
                    fields.describe()
                )));
            }
        }
    }
    let keyed = request.by_event || names.len() > 1;
    let mut groups: Vec<(Plan, Vec<usize>, Vec<Printed>)> = Vec::new();
    let mut columns = Vec::new();
    for (index, site) in sites.iter().enumerate() {
        let fields = UsdtFields::of(format!("usdt:{}", site.qualified_name()), site);
        let mut builder = PlanBuilder::new();
        let mut site_columns = Vec::new();
        if keyed {
            let event = builder.operand(simple_operand(operand::EVENT_INDEX))?;
            builder.key_part(event)?;
            site_columns.push(Column {
                column: KeyColumn {
                    name: "probe".into(),
                    kind: KeyKind::Event(
                        names
                            .iter()
                            .enumerate()
                            .map(|(i, n)| (i as u64, n.clone()))
                            .collect(),
                    ),
                },
                bound: Some(names.len() as u32),
            });
        }
        let (more, prints) = compile_body(&mut builder, &fields, request)?;
        site_columns.extend(more);
        finish_layout(&mut builder, &site_columns);
        let plan = builder.plan();
        if columns.is_empty() {
            columns = columns_of(site_columns);
        }
        match groups.iter_mut().find(|(p, ..)| *p == plan) {
            Some((_, members, _)) => members.push(index),
            None => groups.push((plan, vec![index], prints)),
        }
    }
    let event_names: BTreeMap<u32, String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (i as u32, format!("usdt:{n}")))
        .collect();
    let mut specs = Vec::new();
    let mut all_prints = Vec::new();
    for (plan, members, prints) in groups {
        let attach = Usdt {
            sites: members.iter().map(|&i| sites[i].clone()).collect(),
            events: members.iter().map(|&i| events[i]).collect(),
            pid: request.target.pid,
        };
        specs.push(spec_of(plan, Arc::new(attach), None, request));
        all_prints.push(prints);
    }
    let what = format!(
        "usdt:{}:{} ({} probe{}, {} site{})",
        binary.display(),
        target.pattern(),
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        sites.len(),
        if sites.len() == 1 { "" } else { "s" }
    );
    Ok(Compiled {
        events: vec![EventNames::ByIndex(event_names); specs.len()],
        specs,
        columns,
        what,
        prints: all_prints,
    })
}

/// "block:block_rq_issue", or "312 tracepoints (syscalls:sys_enter_accept, ...)".
pub fn describe(tracepoints: &[Tracepoint]) -> String {
    match tracepoints {
        [one] => one.to_string(),
        many => format!("{} tracepoints ({}, ...)", many.len(), many[0]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::request::StartProbe;

    fn events() -> Events {
        Events::test_6_18()
    }

    fn compiled(request: &Request) -> String {
        compile_in(request, &events()).unwrap().listing()
    }

    #[test]
    fn stackcount_keys_by_process_and_stacks() {
        let request = Request {
            by: KeyField::all(&[
                "pid".into(),
                "comm".into(),
                "kstack".into(),
                "ustack".into(),
            ]),
            ..Request::probe("syscalls:sys_enter_getppid")
        };
        assert_eq!(
            compiled(&request),
            r#"Main Tracepoints([Tracepoint { system: "syscalls", event: "sys_enter_getppid" }])
operands: #0 pid #1 comm #2 kstack #3 ustack
corr: - | key: #0 #1 #2 #3 | saves: -
value: - | agg: count | layout: hash
filter: -
flags: announce needs_ids
columns: pid Int { signed: false }, comm Str, kstack Int { signed: false }, ustack Int { signed: false }
"#
        );
    }

    /// Tracepoints whose plans are equal share an engine; event indices run across engines.
    #[test]
    fn count_groups_tracepoints_by_plan() {
        let request = Request {
            by_event: true,
            by: vec![KeyField::new("comm")],
            ..Request::count(vec!["sched:sched_wakeup*".into(), "block:*".into()])
        };
        assert_eq!(
            compiled(&request),
            r#"Main Tracepoints([Tracepoint { system: "sched", event: "sched_wakeup" }, Tracepoint { system: "sched", event: "sched_wakeup_new" }])
operands: #0 event #1 field_string@8:16
corr: - | key: #0 #1 | saves: -
value: - | agg: count | layout: hash
filter: -
flags: -
Main Tracepoints([Tracepoint { system: "block", event: "block_rq_complete" }])
operands: #0 event #1 comm
corr: - | key: #0 #1 | saves: -
value: - | agg: count | layout: hash
filter: -
flags: -
Main Tracepoints([Tracepoint { system: "block", event: "block_rq_insert" }, Tracepoint { system: "block", event: "block_rq_issue" }])
operands: #0 event #1 field_string@44:16
corr: - | key: #0 #1 | saves: -
value: - | agg: count | layout: hash
filter: -
flags: -
columns: event Event({0: "sched:sched_wakeup", 1: "sched:sched_wakeup_new", 2: "block:block_rq_complete", 3: "block:block_rq_insert", 4: "block:block_rq_issue"}), comm Str
"#
        );
        let syscalls = Request {
            by_event: true,
            ..Request::count(vec!["syscalls:sys_enter_*".into()])
        };
        assert_eq!(
            compiled(&syscalls),
            r#"Main RawTracepoint("sys_enter")
operands: #0 arg1:8
corr: - | key: #0 in {110,257} | saves: -
value: - | agg: count | layout: array bound 1024
filter: -
flags: raw_args=2
columns: event Event({110: "syscalls:sys_enter_getppid", 257: "syscalls:sys_enter_openat"})
"#
        );
    }

    #[test]
    fn hist_with_a_linear_shape_and_a_filter() {
        let request = Request {
            shape: Shape::Linear {
                min: 0,
                max: 1000,
                step: 100,
            },
            value: Some("bytes".into()),
            filter: Some("rwbs ~ \"*W*\" && bytes > 4096".into()),
            ..Request::probe("t:block:block_rq_issue")
        };
        assert_eq!(
            compiled(&request),
            r#"Main Tracepoints([Tracepoint { system: "block", event: "block_rq_issue" }])
operands: #0 field@28:4 #1 field_string@34:10
corr: - | key: - | saves: -
value: #0 | agg: linear 12 slots from 0 step 100 | layout: array bound 0
filter: str_contains #1 0 gt #0 4096 and
flags: -
columns: 
"#
        );
    }

    #[test]
    fn trace_carries_printed_fields_and_stacks() {
        let request = Request {
            shape: Shape::Trace,
            print: vec!["filename".into(), "flags".into(), "ustack".into()],
            ..Request::probe("syscalls:sys_enter_openat")
        };
        assert_eq!(
            compiled(&request),
            r#"Main Tracepoints([Tracepoint { system: "syscalls", event: "sys_enter_openat" }])
operands: #0 field@24:8 #1 field@32:8 #2 ustack
corr: - | key: - | saves: -
value: - | agg: trace | layout: array bound 0
filter: -
flags: announce
columns: 
"#
        );
    }

    #[test]
    fn bad_requests_name_the_bad_part() {
        let error = |request: Request| compile_in(&request, &events()).unwrap_err().to_string();
        assert_eq!(
            error(Request::probe("block:block_rq_issue").log2("bytse")),
            "--value bytse: block:block_rq_issue has no field `bytse`; it \
             has dev (dev_t), sector (sector_t), nr_sector (unsigned int), bytes (unsigned int), \
             ioprio (unsigned short), rwbs (char[10]), comm (char[16]), cmd (string); and pid, \
             tid, cpu, cgroup"
        );
        // `--by` lists every key it takes, `cgroup` included.
        assert_eq!(
            error(Request::probe("block:block_rq_issue").by(vec![KeyField::new("cgrop")])),
            "--by cgrop: block:block_rq_issue has no field `cgrop` (did you mean `cgroup`?); it \
             has dev (dev_t), sector (sector_t), nr_sector (unsigned int), bytes (unsigned int), \
             ioprio (unsigned short), rwbs (char[10]), comm (char[16]), cmd (string); and pid, \
             tid, cpu, cgroup"
        );
        assert_eq!(
            error(Request::probe("block:block_rq_issue").log2("rwbs")),
            "--value rwbs: `rwbs` is a string; --value needs a number (use --by rwbs to group by it)"
        );
        let paired = Request {
            start: Some(Start {
                probes: vec![StartProbe::new("block:block_rq_issue", &["dev", "sector"])],
                end_pair: vec!["dev".into(), "sectr".into()],
                all_tasks: false,
                per_thread: false,
            }),
            ..Request::probe("block:block_rq_complete").log2("latency")
        };
        assert!(
            error(paired).starts_with("end sectr: block:block_rq_complete has no field `sectr`")
        );
        let start = Start {
            probes: vec![StartProbe::new("sched:sched_switch", &["prev_pid"])],
            end_pair: vec!["next_pid".into()],
            all_tasks: false,
            per_thread: true,
        };
        assert_eq!(
            error(Request {
                start: Some(start),
                ..Request::count(vec!["sched:*".into()])
            }),
            "a start stage pairs with one end event, not a set of tracepoints"
        );
    }
}
