//! Compiles a [`Request`] into engine specs: parses its probe specs and hands them to their
//! kind ([`super::kinds`], one module per kind). What every kind shares is here: the
//! [`Compiled`] result, `body` (names resolved, group key, value, aggregation, printed
//! fields, filter, map layout) and [`start`] (start stages).
//!
//! A request with a [`Start`](super::request::Start) compiles to two stages of one engine:
//! the start plan stores the time and the `start.NAME` values under the pairing key, the main
//! plan finds them. A function probe's `latency` pairs entry and return by thread without
//! one.

pub(crate) mod body;
pub mod start;

use std::{collections::BTreeMap, path::PathBuf};

use super::{EngineSpec, keys::KeyColumn, kinds::ProbeSpec, request::Request};
use crate::{
    Error, Result,
    probe::{self, Tracepoint, fields::ValueType, tracefs},
};

/// A field `trace` prints: where the record holds it.
#[derive(Clone, Debug)]
pub struct Printed {
    /// The name asked for.
    pub name: String,
    /// Operand index (integers: `TraceRecord::ints`); `NO_OPERAND` for the record's own
    /// pid, tid or comm, named by `string_slot` (`operand::PID`, `TID`, `COMM`).
    pub operand: u32,
    /// String slot (strings: `TraceRecord::strings`).
    pub string_slot: u32,
    /// Its type.
    pub ty: ValueType,
    /// What it means, for display (addresses).
    pub hint: crate::probe::fields::Hint,
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

    pub(crate) fn root(&self) -> Result<PathBuf> {
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
    // One kind per request; several specs only of a kind that takes several.
    let kind = specs[0].kind;
    if specs.len() > 1 && !(kind.several() && specs.iter().all(|s| s.kind == kind)) {
        return Err(Error::usage(
            "function and software-event probes are traced one spec at a time; \
             use a wildcard for several functions",
        ));
    }
    kind.compile(&specs, request, events)
}

/// Compiles several requests into one set of engines, in order (a `trace` or event tool
/// whose probe groups read their fields differently: each group is a request of its own);
/// with, by engine, the index of the request it came from. Their key columns are the
/// first request's; `what` names every request's probes.
///
/// # Errors
/// As [`compile`], for the first request that fails.
pub fn compile_each(requests: &[&Request]) -> Result<(Compiled, Vec<usize>)> {
    let mut all: Option<Compiled> = None;
    let mut origin = Vec::new();
    for (index, request) in requests.iter().enumerate() {
        let compiled = compile(request)?;
        origin.extend(std::iter::repeat_n(index, compiled.specs.len()));
        match all.as_mut() {
            None => all = Some(compiled),
            Some(all) => {
                all.specs.extend(compiled.specs);
                all.prints.extend(compiled.prints);
                all.events.extend(compiled.events);
                all.what = format!("{}, {}", all.what, compiled.what);
            }
        }
    }
    let compiled = all.ok_or_else(|| Error::usage("no probe given"))?;
    Ok((compiled, origin))
}

/// "block:block_rq_issue", or "312 tracepoints (syscalls:sys_enter_accept, ...)".
pub fn describe(tracepoints: &[Tracepoint]) -> String {
    match tracepoints {
        [one] => one.to_string(),
        many => format!("{} tracepoints ({}, ...)", many.len(), many[0]),
    }
}

#[cfg(test)]
mod tests;
