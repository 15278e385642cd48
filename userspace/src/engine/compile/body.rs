//! What every probe kind's plan shares: resolving names, the group key, value,
//! aggregation, printed fields and filter of a request, the map layout, the end event of a
//! start stage.

use std::collections::BTreeMap;

use tracekit_common::engine::{Plan, operand};

use crate::{
    Error, Result,
    engine::{
        EngineSpec, Stage,
        attach::Attach,
        compile::{start::*, *},
        filter,
        keys::{KeyColumn, KeyKind},
        kinds::ProbeSpec,
        plan::PlanBuilder,
        request::{KeyField, Request, Shape},
    },
    error::quote,
    probe::{
        self,
        fields::{BUILTINS, FieldRef, Fields, Hint, ValueType, builtin, int},
    },
};

/// The built-in names only (`pid`, `tid`, `cpu`, `comm`), for events without fields.
pub(crate) struct BuiltinFields(pub(crate) String);

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

/// The end event's names when a start stage runs: `latency` and the saved `start.NAME`
/// values, then the event's own.
pub(crate) struct EndFields<'a> {
    pub(crate) fields: &'a dyn Fields,
    pub(crate) saved: &'a BTreeMap<String, FieldRef>,
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
    fn why_not(&self, name: &str) -> Option<String> {
        self.fields.why_not(name)
    }
}

/// Resolves a name, or a usage error listing what the event has.
pub(crate) fn resolve(fields: &dyn Fields, flag: &str, name: &str) -> Result<FieldRef> {
    fields.lookup(name).ok_or_else(|| {
        if let Some(why) = fields.why_not(name) {
            let message = format!("{flag} {}: {why}", quote(name));
            // A kernel without BTF lacks a feature; the command line is not wrong.
            return if why == crate::probe::fields::NO_BTF {
                Error::runtime(message)
            } else {
                Error::usage(message)
            };
        }
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

/// The operand of `name` in `builder`'s plan (added if new) and what it is: a field of the
/// event, `ftype(MODE)` (an inode's `i_mode` shown as `R` regular, `S` socket, `O` other),
/// or `follows(STREAM,POS,LEN)` ([`operand::FOLLOWS`]: 1 when the event's POS is where
/// the previous event of the same STREAM ended, POS + LEN; 0 when not; 2 for a stream's
/// first event), for `--by` and `--value`. `flag` names the flag in errors.
///
/// # Errors
/// A usage error for an unknown field, a string in `follows`, or a `follows` without three
/// fields.
pub(crate) fn operand_of(
    builder: &mut PlanBuilder,
    fields: &dyn Fields,
    flag: &str,
    name: &str,
) -> Result<(u32, FieldRef)> {
    if let Some(mode) = name
        .strip_prefix("ftype(")
        .and_then(|rest| rest.strip_suffix(')'))
    {
        let field = resolve(fields, flag, mode)?;
        if field.ty == ValueType::Str {
            return Err(Error::usage(format!(
                "{flag} {}: `{}` is a string; ftype reads an inode's i_mode (e.g. \
                 ftype(file->f_inode->i_mode) of vfs_read)",
                quote(name),
                quote(mode)
            )));
        }
        let field = field.hinted(Hint::FileType);
        return Ok((builder.operand(field.operand)?, field));
    }
    let Some(inner) = name
        .strip_prefix("follows(")
        .and_then(|rest| rest.strip_suffix(')'))
    else {
        let field = resolve(fields, flag, name)?;
        return Ok((builder.operand(field.operand)?, field));
    };
    let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    let [stream, position, length] = parts[..] else {
        return Err(Error::usage(format!(
            "{flag} {}: follows takes three fields, follows(STREAM,POS,LEN) (e.g. \
             follows(dev,sector,nr_sector))",
            quote(name)
        )));
    };
    let mut indices = [0u32; 3];
    for (index, part) in indices.iter_mut().zip([stream, position, length]) {
        let field = resolve(fields, flag, part)?;
        if field.ty == ValueType::Str {
            return Err(Error::usage(format!(
                "{flag} {}: `{}` is a string; follows reads numbers",
                quote(name),
                quote(part)
            )));
        }
        *index = builder.operand(field.operand)?;
    }
    let follows = tracekit_common::engine::Operand {
        kind: operand::FOLLOWS,
        offset: indices[0],
        aux: indices[1],
        index_offset: indices[2],
        size: 8,
        ..tracekit_common::engine::Operand::NONE
    };
    let field = FieldRef {
        bound: Some(3),
        ..FieldRef::new(follows, ValueType::Int { signed: false })
    };
    Ok((builder.operand(follows)?, field))
}

/// How a group-key field is shown.
pub(crate) fn key_kind(field: &FieldRef) -> KeyKind {
    match (field.hint, field.ty) {
        (Hint::Ip, _) => KeyKind::Ip,
        _ if field.operand.is_raw_bytes() => KeyKind::Bytes(field.operand.size as usize),
        (Hint::Ipv4, _) => KeyKind::Ipv4,
        (Hint::TcpState, _) => KeyKind::TcpState,
        (Hint::NetPort, _) => KeyKind::NetPort,
        (Hint::PortPair, _) => KeyKind::LocalPort,
        (Hint::FileType, _) => KeyKind::FileType,
        (_, ValueType::Str) => KeyKind::Str,
        (Hint::Disk, _) => KeyKind::Disk,
        (Hint::Syscall, _) => KeyKind::Syscall,
        (Hint::Stack, _) => KeyKind::Int { signed: false },
        (Hint::KernelStack, _) => KeyKind::KernelStack,
        (Hint::Cgroup, _) => KeyKind::Cgroup,
        (Hint::Softirq, _) => KeyKind::Softirq,
        (Hint::Irq, _) => KeyKind::Irq,
        (Hint::Address, _) => KeyKind::Address,
        (Hint::Plain, ValueType::Int { signed }) => KeyKind::Int { signed },
    }
}

/// A key column of the plan being built, with the bound of its values if known.
pub(crate) struct Column {
    pub(crate) column: KeyColumn,
    pub(crate) bound: Option<u32>,
}

/// Adds the request's group key, value, aggregation, printed fields and filter to `builder`,
/// resolving names in `fields`. Returns the key columns and the printed fields.
pub(crate) fn compile_body(
    builder: &mut PlanBuilder,
    fields: &dyn Fields,
    request: &Request,
) -> Result<(Vec<Column>, Vec<Printed>)> {
    let mut columns = Vec::new();
    for KeyField { field: name, label } in &request.by {
        let (index, field) = operand_of(builder, fields, "--by", name)?;
        builder.key_part(index)?;
        if field.hint == Hint::PortPair {
            // One word, two columns: `LPORT/RPORT` names both, else `lport` and `rport`.
            let (local, remote) = label.split_once('/').unwrap_or(("lport", "rport"));
            for (name, kind) in [(local, KeyKind::LocalPort), (remote, KeyKind::RemotePort)] {
                columns.push(Column {
                    column: KeyColumn {
                        name: name.into(),
                        kind,
                    },
                    bound: None,
                });
            }
            continue;
        }
        columns.push(Column {
            column: KeyColumn {
                name: label.clone(),
                kind: key_kind(&field),
            },
            bound: field.bound,
        });
    }
    if let Some(name) = &request.value {
        let (index, field) = operand_of(builder, fields, "--value", name)?;
        if field.ty == ValueType::Str {
            let name = quote(name);
            return Err(Error::usage(format!(
                "--value {name}: `{name}` is a string; --value needs a number (use --by {name} to \
                 group by it)"
            )));
        }
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
        if let Some(fd) = dir_of(name) {
            prints.push(dir_print(builder, fields, name, fd)?);
            continue;
        }
        let field = resolve(fields, "--print", name)?;
        // The pid, tid and comm come with every record: printing them reads nothing more.
        if matches!(
            field.operand.kind,
            operand::PID | operand::TID | operand::COMM
        ) {
            prints.push(Printed {
                name: name.clone(),
                operand: tracekit_common::engine::NO_OPERAND,
                string_slot: field.operand.kind,
                ty: field.ty,
                hint: field.hint,
            });
            continue;
        }
        let operand = builder.operand(field.operand)?;
        prints.push(Printed {
            name: name.clone(),
            operand,
            string_slot: builder.plan().operands[operand as usize].string_slot,
            ty: field.ty,
            hint: field.hint,
        });
    }
    if let Some(text) = &request.filter {
        filter::compile(text, fields, builder)?;
    }
    let plan = builder.plan();
    let insns = &plan.insns[..plan.n_insns as usize];
    if request.shape == Shape::Trace {
        crate::engine::strings::whole_strings(
            builder.operands_mut(),
            insns,
            request.maps.max_string,
        );
    } else {
        crate::engine::strings::compared_strings(
            builder.operands_mut(),
            insns,
            &plan.key_parts[..plan.n_key_parts as usize],
            request.maps.max_string,
        );
    }
    Ok((columns, prints))
}

/// The descriptor name of a `dir(FD)` print: the directory at descriptor FD (`AT_FDCWD`:
/// the cwd), by the kernel's dentries ([`operand::DIR_PATH`]).
pub(crate) fn dir_of(name: &str) -> Option<&str> {
    name.strip_prefix("dir(")?.strip_suffix(')').map(str::trim)
}

/// The printed `dir(FD)` `name`: its descriptor's operand, then the walk from it.
fn dir_print(
    builder: &mut PlanBuilder,
    fields: &dyn Fields,
    name: &str,
    fd: &str,
) -> Result<Printed> {
    use tracekit_common::engine::{AFTER_START, Operand};
    let field = resolve(fields, "--print", fd)?;
    if field.ty == ValueType::Str {
        return Err(Error::usage(format!(
            "--print {}: `{}` is a string; dir(FD) takes a descriptor (`dfd` of \
             syscalls:sys_enter_openat)",
            quote(name),
            quote(fd)
        )));
    }
    let from = builder.operand(field.operand)?;
    let after_start = crate::engine::strings::reads_start(field.operand.kind);
    let operand = builder.operand(Operand {
        kind: operand::DIR_PATH,
        aux: from,
        flags: if after_start { AFTER_START } else { 0 },
        ..Operand::NONE
    })?;
    Ok(Printed {
        name: name.to_string(),
        operand,
        string_slot: builder.plan().operands[operand as usize].string_slot,
        ty: ValueType::Str,
        hint: Hint::Plain,
    })
}

/// Picks the map layout once the key is complete: a per-CPU array indexed by the key when
/// it is one value below a known bound (or absent), a hash otherwise.
pub(crate) fn finish_layout(builder: &mut PlanBuilder, columns: &[Column]) {
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

/// A main plan for `request` on an event with `fields`: with a start stage, the pairing key
/// of the end event and the start lookup, and the end event's names (`latency`,
/// `start.NAME`) resolved through [`EndFields`]. Calls `body` with the builder and the
/// names.
pub(crate) fn main_plan<T>(
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
            if start.keep {
                builder.keep_start();
            }
            body(&mut builder, &fields)?
        }
        _ => body(&mut builder, own)?,
    };
    Ok((builder, out))
}

pub(crate) fn spec_of(
    plan: Plan,
    attach: Attach,
    start: Option<Stage>,
    request: &Request,
) -> EngineSpec {
    EngineSpec {
        main: Stage { plan, attach },
        start,
        hash_entries: request.maps.max_groups,
        start_entries: request.maps.max_in_flight,
        event_base: 0,
        user_unwind: false,
        names_by_task: true,
        group_cache: true,
    }
}

pub(crate) fn columns_of(columns: Vec<Column>) -> Vec<KeyColumn> {
    columns.into_iter().map(|c| c.column).collect()
}

pub(crate) fn no_start(spec: &ProbeSpec, request: &Request) -> Result<()> {
    if request.start.is_some() {
        return Err(Error::usage(format!(
            "probe `{}`: start stages pair tracepoints and raw tracepoints",
            quote(&spec.text)
        )));
    }
    Ok(())
}
