//! `tracekit hist` and `tracekit count`: a tracepoint's field as a histogram, or events
//! counted, per group, with a filter, all in the kernel engine.

use std::collections::BTreeMap;

use tracekit::{
    Error, Result,
    engine::{
        Attach, EngineSpec, FieldRef, Fields, KeyColumn, KeyKind, PlanBuilder, Stage,
        TracepointFields, ValueType, arg_operand, simple_operand,
    },
    filter,
    probe::{self, ProbeKind, ProbeSpec, Tracepoint},
    tracefs,
};
use tracekit_common::engine::{MAX_TRACEPOINTS, Operand, Plan, operand};

use crate::{
    cli::{CountArgs, HistArgs, MapArgs},
    cmd::agg::{self, Job, Report},
};

/// The aggregation `hist` asked for.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// Count events.
    Count,
    /// Log2 histogram of the value.
    Log2,
    /// Linear histogram of the value.
    Linear { min: i64, max: i64, step: u64 },
}

/// What to compile for each tracepoint.
pub struct Request<'a> {
    pub value: Option<&'a str>,
    pub by: &'a [String],
    pub filter: Option<&'a str>,
    pub shape: Shape,
}

/// Expands probe specs to tracepoints (this version attaches tracepoints only).
pub fn tracepoints(specs: &[String]) -> Result<Vec<Tracepoint>> {
    let tracefs = tracefs::root()?;
    let all = probe::all_tracepoints(&tracefs)?;
    let mut out = Vec::new();
    for text in specs {
        let spec = ProbeSpec::parse(text)?;
        if spec.kind != ProbeKind::Tracepoint {
            return Err(Error::usage(format!(
                "probe `{text}`: {} probes are not supported yet; use a tracepoint \
                 (SYSTEM:EVENT, `tracekit list` shows them)",
                spec.kind.name()
            )));
        }
        for tp in probe::expand_tracepoints(&spec.target, &all)? {
            if !out.contains(&tp) {
                out.push(tp);
            }
        }
    }
    Ok(out)
}

/// Resolves a `--value`/`--by` name, or a usage error listing what the event has.
fn resolve(fields: &dyn Fields, flag: &str, name: &str) -> Result<FieldRef> {
    fields.lookup(name).ok_or_else(|| {
        let near = probe::nearest(name, &fields.names(), 1);
        Error::usage(format!(
            "{flag} {name}: {} has no field `{name}`{}; it has {}",
            fields.event_name(),
            near.first()
                .map(|n| format!(" (did you mean {n}?)"))
                .unwrap_or_default(),
            fields.describe()
        ))
    })
}

/// How a `--by` field is shown.
fn key_kind(fields: &TracepointFields, name: &str, ty: ValueType) -> KeyKind {
    let field = fields.format.field(name);
    match (ty, field) {
        (ValueType::Str, _) => KeyKind::Str,
        (_, Some(f)) if f.c_type == "dev_t" => KeyKind::Disk,
        (_, Some(f))
            if f.name == "__syscall_nr"
                || (fields.tracepoint.system == "raw_syscalls" && f.name == "id") =>
        {
            KeyKind::Syscall
        }
        (ValueType::Int { signed }, _) => KeyKind::Int { signed },
    }
}

/// Adds `--by`, `--value`, the aggregation and `--filter` of `request` to `builder`,
/// resolving names in `fields`; returns the key columns after the event column.
fn compile_request(
    builder: &mut PlanBuilder,
    fields: &dyn Fields,
    kind_of: &dyn Fn(&str, ValueType) -> KeyKind,
    request: &Request<'_>,
) -> Result<Vec<KeyColumn>> {
    let mut columns = Vec::new();
    for name in request.by {
        let field = resolve(fields, "--by", name)?;
        let index = builder.operand(field.operand)?;
        builder.key_part(index)?;
        columns.push(KeyColumn {
            name: name.clone(),
            kind: kind_of(name, field.ty),
        });
    }
    if let Some(name) = request.value {
        let field = resolve(fields, "--value", name)?;
        if field.ty == ValueType::Str {
            return Err(Error::usage(format!(
                "--value {name}: `{name}` is a string; --value needs a number (use --by {name} to group by it)"
            )));
        }
        let index = builder.operand(field.operand)?;
        builder.value(index);
    }
    match request.shape {
        Shape::Count => {}
        Shape::Log2 => builder.log2(),
        Shape::Linear { min, max, step } => builder.linear(min, max, step)?,
    }
    if let Some(text) = request.filter {
        filter::compile(text, fields, builder)?;
    }
    Ok(columns)
}

/// Compiles the plan for one tracepoint; `by_event` adds the event index as the first key.
fn compile(
    fields: &TracepointFields,
    request: &Request<'_>,
    by_event: bool,
) -> Result<(Plan, Vec<KeyColumn>)> {
    let mut builder = PlanBuilder::new();
    let mut columns = Vec::new();
    if by_event {
        let id = builder.operand(simple_operand(operand::EVENT_INDEX))?;
        builder.key_part(id)?;
        columns.push(KeyColumn {
            name: "event".into(),
            kind: KeyKind::Event(BTreeMap::new()),
        });
    }
    columns.extend(compile_request(
        &mut builder,
        fields,
        &|name, ty| key_kind(fields, name, ty),
        request,
    )?);
    // An event index alone is a small integer: an array serves, no hashing.
    builder.layout(by_event.then_some(MAX_TRACEPOINTS as u32));
    Ok((builder.plan(), columns))
}

/// The built-in names only (`pid`, `tid`, `cpu`, `comm`), for raw tracepoint presets.
struct BuiltinFields(String);

impl Fields for BuiltinFields {
    fn lookup(&self, name: &str) -> Option<FieldRef> {
        tracekit::engine::builtin(name)
    }
    fn names(&self) -> Vec<String> {
        tracekit::engine::BUILTINS
            .iter()
            .map(|b| b.to_string())
            .collect()
    }
    fn describe(&self) -> String {
        tracekit::engine::BUILTINS.join(", ")
    }
    fn event_name(&self) -> String {
        self.0.clone()
    }
}

/// Names the request reads besides the event's own (`--by`, `--value`, filter fields).
fn names_used(request: &Request<'_>) -> Result<Vec<String>> {
    let mut names: Vec<String> = request.by.to_vec();
    names.extend(request.value.map(str::to_string));
    if let Some(text) = request.filter {
        names.extend(filter::fields(&filter::parse(text)?));
    }
    Ok(names)
}

/// `syscalls:sys_enter_*` (or `sys_exit_*`) sets that read no record field are counted
/// with one `raw_syscalls` attach keyed by syscall number instead of one attach per
/// syscall. Returns None when the set does not qualify.
fn syscall_set_spec(
    tracepoints: &[Tracepoint],
    request: &Request<'_>,
    maps: &MapArgs,
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
    let uses_fields = names_used(request)?
        .iter()
        .any(|name| tracekit::engine::builtin(name).is_none());
    if !(enter || exit) || uses_fields || (exit && super::syscount::ORIG_AX_OFFSET.is_none()) {
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
            aux: super::syscount::ORIG_AX_OFFSET.unwrap_or(0),
            ..Operand::NONE
        })?
    };
    builder.key_part(nr)?;
    let prefix = if enter { "sys_enter_" } else { "sys_exit_" };
    let names: BTreeMap<u64, String> = tracepoints
        .iter()
        .filter_map(|tp| {
            let name = tp.event.strip_prefix(prefix)?;
            let sysno: syscalls::Sysno = name.parse().ok()?;
            Some((sysno.id() as u64, tp.to_string()))
        })
        .collect();
    let mut columns = vec![KeyColumn {
        name: "event".into(),
        kind: KeyKind::Event(names),
    }];
    let fields = BuiltinFields(format!("syscalls:{prefix}*"));
    columns.extend(compile_request(
        &mut builder,
        &fields,
        &|_, ty| match ty {
            ValueType::Str => KeyKind::Str,
            ValueType::Int { signed } => KeyKind::Int { signed },
        },
        request,
    )?);
    builder.layout(Some(super::syscount::SYSCALL_BOUND));
    let spec = EngineSpec {
        main: Stage {
            plan: builder.plan(),
            attach: Attach::RawTracepoint(if enter { "sys_enter" } else { "sys_exit" }.into()),
        },
        start: None,
        hash_entries: maps.max_groups,
        start_entries: maps.max_in_flight,
        event_base: 0,
    };
    Ok(Some((spec, columns)))
}

/// Compiles `request` for each tracepoint and groups tracepoints whose plans are equal into
/// engines of at most [`MAX_TRACEPOINTS`] tracepoints each. Returns the specs and the key
/// columns (event names filled in).
pub fn specs(
    tracepoints: &[Tracepoint],
    request: &Request<'_>,
    by_event: bool,
    maps: &MapArgs,
) -> Result<(Vec<EngineSpec>, Vec<KeyColumn>)> {
    if by_event && let Some((spec, columns)) = syscall_set_spec(tracepoints, request, maps)? {
        return Ok((vec![spec], columns));
    }
    let tracefs = tracefs::root()?;
    let mut groups: Vec<(Plan, Vec<Tracepoint>)> = Vec::new();
    let mut columns = Vec::new();
    for tp in tracepoints {
        let fields = TracepointFields::read(&tracefs, tp)?;
        let (plan, tp_columns) = compile(&fields, request, by_event)?;
        if columns.is_empty() {
            columns = tp_columns;
        }
        match groups
            .iter_mut()
            .find(|(p, members)| *p == plan && members.len() < MAX_TRACEPOINTS)
        {
            Some((_, members)) => members.push(tp.clone()),
            None => groups.push((plan, vec![tp.clone()])),
        }
    }
    let mut names = BTreeMap::new();
    let mut specs = Vec::new();
    for (plan, members) in groups {
        let event_base = names.len() as u32;
        for (index, tp) in members.iter().enumerate() {
            names.insert(u64::from(event_base) + index as u64, tp.to_string());
        }
        specs.push(EngineSpec {
            main: Stage {
                plan,
                attach: Attach::Tracepoints(members),
            },
            start: None,
            hash_entries: maps.max_groups,
            start_entries: maps.max_in_flight,
            event_base,
        });
    }
    if let Some(column) = columns.first_mut()
        && let KeyKind::Event(event_names) = &mut column.kind
    {
        *event_names = names;
    }
    Ok((specs, columns))
}

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
    let tracepoints = tracepoints(std::slice::from_ref(&args.probe))?;
    let request = Request {
        value: args.value.as_deref(),
        by: &args.by,
        filter: args.filter.as_deref(),
        shape,
    };
    let (specs, columns) = specs(&tracepoints, &request, tracepoints.len() > 1, &args.maps)?;
    let unit = args.value.clone().unwrap_or_default();
    let report = match shape {
        Shape::Count => Report::Counts {
            sum: None,
            top: None,
        },
        Shape::Log2 => Report::Log2 { unit },
        Shape::Linear { min, step, .. } => Report::Linear { min, step, unit },
    };
    let job = Job {
        command: "hist",
        what: describe(&tracepoints),
        specs,
        columns,
        report,
    };
    agg::run(job, &args.scope, &args.timing, &args.output, verbose)
}

/// Runs `tracekit count`.
pub fn run_count(args: CountArgs, verbose: u8) -> Result<()> {
    let tracepoints = tracepoints(&args.probes)?;
    let request = Request {
        value: None,
        by: &args.by,
        filter: args.filter.as_deref(),
        shape: Shape::Count,
    };
    let (specs, columns) = specs(&tracepoints, &request, true, &args.maps)?;
    let job = Job {
        command: "count",
        what: describe(&tracepoints),
        specs,
        columns,
        report: Report::Counts {
            sum: None,
            top: args.top,
        },
    };
    agg::run(job, &args.scope, &args.timing, &args.output, verbose)
}

/// "block:block_rq_issue", or "312 tracepoints (syscalls:sys_enter_accept, ...)".
pub fn describe(tracepoints: &[Tracepoint]) -> String {
    match tracepoints {
        [one] => one.to_string(),
        many => format!("{} tracepoints ({}, ...)", many.len(), many[0]),
    }
}
