//! Software perf events (`page-faults`, `context-switches`, ...).

use std::{collections::BTreeMap, sync::Arc};

use crate::{
    Error, Result,
    engine::{
        attach::perf_event::SoftwareEvent,
        compile::{body::*, *},
        kinds::{Kind, ProbeSpec},
        plan::PlanBuilder,
        request::Request,
    },
    error::quote,
};

/// `software:`/`s:`: a software perf event on every CPU, counted each time it happens.
#[derive(Debug)]
pub struct SoftwareKind;

/// The kind's table entry.
pub static SOFTWARE: SoftwareKind = SoftwareKind;

impl Kind for SoftwareKind {
    fn names(&self) -> &'static [&'static str] {
        &["software", "s"]
    }

    fn compile(&self, specs: &[ProbeSpec], request: &Request, _: &Events) -> Result<Compiled> {
        software_specs(&specs[0], request)
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
