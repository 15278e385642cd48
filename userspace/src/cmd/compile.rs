//! Compiles probe specs and a request (`--value`, `--by`, `--filter`, the aggregation, the
//! fields to print, stacks) into engine specs, for every probe kind: tracepoints (their
//! record fields), `syscalls:*` sets (one raw tracepoint), kernel functions (fentry/fexit or
//! kprobes) and user functions (uprobes). Shared by `hist`, `count`, `funccount`,
//! `funclatency`, `trace` and `stackcount`.

use std::collections::BTreeMap;

use tracekit::{
    Error, Result,
    engine::{
        Attach, EngineSpec, FieldRef, Fields, KernelAttach, KeyColumn, KeyKind, PlanBuilder, Stage,
        TracepointFields, ValueType, arg_operand, builtin, simple_operand,
    },
    filter,
    functions::{self, KernelBtf},
    probe::{self, ProbeKind, ProbeSpec, Tracepoint},
    probes::FunctionFields,
    tracefs,
};
use tracekit_common::engine::{MAX_TRACEPOINTS, Operand, Plan, operand};

use crate::cli::MapArgs;

/// The aggregation asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Count events.
    Count,
    /// Log2 histogram of the value.
    Log2,
    /// Linear histogram of the value.
    Linear { min: i64, max: i64, step: u64 },
    /// No aggregation: each event goes to userspace (`trace`).
    Trace,
}

/// Which stacks to record.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stacks {
    pub kernel: bool,
    pub user: bool,
}

impl From<&crate::cli::StackArgs> for Stacks {
    fn from(args: &crate::cli::StackArgs) -> Self {
        Self {
            kernel: !args.user_only,
            user: !args.kernel_only,
        }
    }
}

/// What to compile for each probe.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    /// `--value`: the field aggregated.
    pub value: Option<&'a str>,
    /// `--by`: the group key.
    pub by: &'a [String],
    /// `--filter`.
    pub filter: Option<&'a str>,
    /// The aggregation.
    pub shape: Shape,
    /// `--print` (trace): fields each event carries.
    pub print: &'a [String],
    /// Stacks: key parts when aggregating (stackcount), values when tracing (-K, -U).
    pub stacks: Stacks,
    /// The value is divided by this before it picks a histogram slot (ns to us).
    pub value_div: u64,
}

impl<'a> Request<'a> {
    /// A request that counts events.
    pub fn count(by: &'a [String], filter: Option<&'a str>) -> Self {
        Self {
            value: None,
            by,
            filter,
            shape: Shape::Count,
            print: &[],
            stacks: Stacks::default(),
            value_div: 1,
        }
    }
}

/// Expands probe specs to tracepoints (this version attaches tracepoints only).
pub fn tracepoints_of(specs: &[String]) -> Result<Vec<Tracepoint>> {
    let tracefs = tracefs::root()?;
    let all = probe::all_tracepoints(&tracefs)?;
    let mut out = Vec::new();
    for text in specs {
        let spec = ProbeSpec::parse(text)?;
        if spec.kind != ProbeKind::Tracepoint {
            return Err(Error::usage(format!(
                "probe `{text}`: mix a {} probe with tracepoints in separate commands",
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
) -> Result<(Vec<KeyColumn>, Vec<Printed>)> {
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
        Shape::Trace => builder.trace(),
    }
    builder.value_div(request.value_div);
    let mut prints = Vec::new();
    for name in request.print {
        let field = resolve(fields, "--print", name)?;
        let operand = builder.operand(field.operand)?;
        prints.push(Printed {
            name: name.clone(),
            operand,
            string_slot: builder.plan().operands[operand as usize].string_slot,
            ty: field.ty,
        });
    }
    for (wanted, kind) in [
        (request.stacks.kernel, operand::KERNEL_STACK),
        (request.stacks.user, operand::USER_STACK),
    ] {
        if wanted {
            let index = builder.operand(simple_operand(kind))?;
            if request.shape != Shape::Trace {
                builder.key_part(index)?;
            }
            if kind == operand::USER_STACK {
                builder.announce();
            }
        }
    }
    if let Some(text) = request.filter {
        filter::compile(text, fields, builder)?;
    }
    Ok((columns, prints))
}

/// A field `trace` prints: where the record holds it.
#[derive(Clone, Debug)]
pub struct Printed {
    pub name: String,
    /// Operand index (integers: `TraceRecord::ints`).
    pub operand: u32,
    /// String slot (strings: `TraceRecord::strings`).
    pub string_slot: u32,
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

/// Compiles the plan for one tracepoint; `by_event` adds the event index as the first key.
fn compile_tracepoint(
    fields: &TracepointFields,
    request: &Request<'_>,
    by_event: bool,
) -> Result<(Plan, Vec<KeyColumn>, Vec<Printed>)> {
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
    let (more, prints) = compile_request(
        &mut builder,
        fields,
        &|name, ty| key_kind(fields, name, ty),
        request,
    )?;
    columns.extend(more);
    // An event index alone is a small integer: an array serves, no hashing.
    builder.layout(by_event.then_some(MAX_TRACEPOINTS as u32));
    if request.shape == Shape::Trace {
        builder.layout(None);
    }
    Ok((builder.plan(), columns, prints))
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
    columns.extend(compile_request(&mut builder, &fields, &plain_kind, request)?.0);
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
    let compiled = tracepoint_specs(tracepoints, request, by_event, maps)?;
    Ok((compiled.specs, compiled.columns))
}

/// [`specs`], with what `trace` needs to print records.
fn tracepoint_specs(
    tracepoints: &[Tracepoint],
    request: &Request<'_>,
    by_event: bool,
    maps: &MapArgs,
) -> Result<Compiled> {
    if by_event
        && request.shape != Shape::Trace
        && let Some((spec, columns)) = syscall_set_spec(tracepoints, request, maps)?
    {
        return Ok(Compiled {
            specs: vec![spec],
            columns,
            what: describe(tracepoints),
            prints: vec![Vec::new()],
            events: vec![EventNames::ByIndex(BTreeMap::new())],
        });
    }
    let tracefs = tracefs::root()?;
    let mut groups: Vec<(Plan, Vec<Tracepoint>, Vec<Printed>)> = Vec::new();
    let mut columns = Vec::new();
    for tp in tracepoints {
        let fields = TracepointFields::read(&tracefs, tp)?;
        let (plan, tp_columns, prints) = compile_tracepoint(&fields, request, by_event)?;
        if columns.is_empty() {
            columns = tp_columns;
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
    Ok(Compiled {
        specs,
        columns,
        what: describe(tracepoints),
        prints: all_prints,
        events,
    })
}

/// What a command compiled to.
pub struct Compiled {
    /// The engines to load.
    pub specs: Vec<EngineSpec>,
    /// The group key's columns.
    pub columns: Vec<KeyColumn>,
    /// What is traced, for "Tracing ...".
    pub what: String,
    /// Per engine: where each `--print` field is in its records.
    pub prints: Vec<Vec<Printed>>,
    /// Per engine: how its records name their event.
    pub events: Vec<EventNames>,
}

/// How function probes attach.
#[derive(Clone, Copy, Debug, Default)]
pub struct Target {
    /// `-p PID`: uprobes are limited to it, short library names resolve in its maps.
    pub pid: Option<u32>,
    /// `--kprobe` / `--fentry`.
    pub how: KernelAttach,
}

/// Compiles `probes` (specs of one kind: tracepoints, or one function or software probe)
/// for `request`. `by_event` keys by event or function first.
pub fn compile(
    probes: &[String],
    request: &Request<'_>,
    by_event: bool,
    maps: &MapArgs,
    target: Target,
) -> Result<Compiled> {
    let specs: Vec<ProbeSpec> = probes
        .iter()
        .map(|p| ProbeSpec::parse(p))
        .collect::<Result<_>>()?;
    if specs.iter().all(|s| s.kind == ProbeKind::Tracepoint) {
        let tracepoints = tracepoints_of(probes)?;
        let by_event = by_event || (tracepoints.len() > 1 && request.shape != Shape::Trace);
        return tracepoint_specs(&tracepoints, request, by_event, maps);
    }
    let [spec] = specs.as_slice() else {
        return Err(Error::usage(
            "function and software-event probes are traced one spec at a time; \
             use a wildcard for several functions",
        ));
    };
    match spec.kind {
        ProbeKind::Software => software_specs(spec, request, maps),
        ProbeKind::Hardware => Err(Error::usage(format!(
            "probe `{}`: hardware events are not supported by this command yet",
            spec.text
        ))),
        ProbeKind::RawTracepoint => Err(Error::usage(format!(
            "probe `{}`: raw tracepoints carry no named fields; use the tracepoint ({})",
            spec.text, spec.target
        ))),
        _ => function_specs(spec, request, by_event, maps, target),
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

fn software_specs(spec: &ProbeSpec, request: &Request<'_>, maps: &MapArgs) -> Result<Compiled> {
    let config = SOFTWARE_EVENTS
        .iter()
        .find(|(name, _)| *name == spec.target)
        .map(|(_, config)| *config)
        .ok_or_else(|| {
            let names: Vec<&str> = SOFTWARE_EVENTS.iter().map(|(n, _)| *n).collect();
            Error::usage(format!(
                "probe `{}`: unknown software event; valid: {}",
                spec.text,
                names.join(", ")
            ))
        })?;
    let fields = BuiltinFields(spec.text.clone());
    let mut builder = PlanBuilder::new();
    let (columns, prints) = compile_request(&mut builder, &fields, &plain_kind, request)?;
    builder.layout(None);
    Ok(Compiled {
        specs: vec![spec_of(
            builder.plan(),
            Attach::SoftwareEvent { config, period: 1 },
            None,
            maps,
        )],
        columns,
        what: spec.text.clone(),
        prints: vec![prints],
        events: vec![EventNames::ByIndex(BTreeMap::from([(
            0,
            spec.text.clone(),
        )]))],
    })
}

fn plain_kind(_: &str, ty: ValueType) -> KeyKind {
    match ty {
        ValueType::Str => KeyKind::Str,
        ValueType::Int { signed } => KeyKind::Int { signed },
    }
}

fn spec_of(plan: Plan, attach: Attach, start: Option<Stage>, maps: &MapArgs) -> EngineSpec {
    EngineSpec {
        main: Stage { plan, attach },
        start,
        hash_entries: maps.max_groups,
        start_entries: maps.max_in_flight,
        event_base: 0,
    }
}

/// Kernel (kprobe, kretprobe, fentry, fexit) and user (uprobe, uretprobe) functions.
fn function_specs(
    spec: &ProbeSpec,
    request: &Request<'_>,
    by_event: bool,
    maps: &MapArgs,
    target: Target,
) -> Result<Compiled> {
    use ProbeKind::*;
    let is_return = matches!(spec.kind, Kretprobe | Fexit | Uretprobe);
    let uses_latency = names_used(request)?.iter().any(|n| n == "latency");
    if uses_latency && !is_return {
        return Err(Error::usage(format!(
            "probe `{}`: latency is known at the function's return; use kretprobe:, fexit: \
             or uretprobe:",
            spec.text
        )));
    }
    let user = matches!(spec.kind, Uprobe | Uretprobe);
    let (names, params, entry_attach, main_attach, what) = if user {
        let (path, pattern) = spec.target.rsplit_once(':').ok_or_else(|| {
            Error::usage(format!(
                "probe `{}`: a user probe is {}:BINARY:FUNCTION (e.g. uprobe:libc:malloc)",
                spec.text,
                spec.kind.name()
            ))
        })?;
        let binary = functions::resolve_binary(path, target.pid)?;
        let found = functions::user_functions(&binary, pattern)?;
        let offsets: Vec<u64> = found.iter().map(|f| f.file_offset).collect();
        let names: Vec<String> = found.into_iter().map(|f| f.name).collect();
        let attach = |ret| Attach::Uprobes {
            binary: binary.clone(),
            offsets: offsets.clone(),
            pid: target.pid,
            ret,
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
        let attach = |ret| Attach::KernelFunctions {
            functions: found.clone(),
            ret,
            how,
        };
        let what = if found.len() == 1 {
            spec.text.clone()
        } else {
            format!("{} ({} functions)", spec.text, found.len())
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
    if by_event || several {
        let index = main.operand(function_key)?;
        main.key_part(index)?;
        columns.push(KeyColumn {
            name: "function".into(),
            kind: if function_key.kind == operand::FUNC_IP {
                KeyKind::KernelFunction
            } else {
                KeyKind::Event(
                    names
                        .iter()
                        .cloned()
                        .enumerate()
                        .map(|(i, n)| (i as u64, n))
                        .collect(),
                )
            },
        });
    }
    let key_operand = if by_event || several {
        main.plan().key_parts[0]
    } else {
        0
    };
    let (more, prints) = compile_request(&mut main, &fields, &plain_kind, request)?;
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
    let bound = (by_event || several).then_some(if function_key.kind == operand::FUNC_IP {
        u32::MAX
    } else {
        names.len() as u32
    });
    main.layout(
        bound.filter(|&b| b != u32::MAX && request.by.is_empty() && !request_has_stacks(request)),
    );
    Ok(Compiled {
        specs: vec![spec_of(main.plan(), main_attach, start, maps)],
        columns,
        what,
        prints: vec![prints],
        events: vec![events],
    })
}

fn request_has_stacks(request: &Request<'_>) -> bool {
    request.stacks.kernel || request.stacks.user
}

/// "block:block_rq_issue", or "312 tracepoints (syscalls:sys_enter_accept, ...)".
pub fn describe(tracepoints: &[Tracepoint]) -> String {
    match tracepoints {
        [one] => one.to_string(),
        many => format!("{} tracepoints ({}, ...)", many.len(), many[0]),
    }
}
