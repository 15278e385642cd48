//! Software perf events (`page-faults`, `context-switches`, ...; `PERF_COUNT_SW_*`,
//! include/uapi/linux/perf_event.h): the kind, and its attach point, [`SoftwareEvent`], the
//! engine's perf event program on every CPU, run every `period` events.

use std::{collections::BTreeMap, sync::Arc};

use aya::programs::{
    PerfEvent,
    perf_event::{PerfEventConfig, PerfEventScope, SamplePolicy, SoftwareEvent as AyaSoftware},
};

use crate::{
    Error, Result,
    engine::{
        Engine,
        attach::{AttachPoint, Role},
        compile::{body::*, *},
        kinds::{Kind, ProbeSpec},
        plan::PlanBuilder,
        request::Request,
    },
    error::{Context as _, quote},
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

/// A stage on a software perf event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SoftwareEvent {
    /// `PERF_COUNT_SW_*`.
    pub config: u64,
    /// Run every `period` events.
    pub period: u64,
}

impl AttachPoint for SoftwareEvent {
    fn attach(&self, engine: &mut Engine, _role: Role) -> Result<()> {
        let program: &mut PerfEvent = engine
            .ebpf()?
            .program_mut("engine_perf_event")
            .expect("program in object")
            .try_into()
            .context("perf event program type")?;
        program
            .load()
            .context("loading the engine's perf event program")?;
        let event = software_event(self.config)?;
        let cpus = aya::util::online_cpus().map_err(|(path, err)| {
            Error::runtime(format!("reading the online CPUs from {path}: {err}"))
        })?;
        for cpu in cpus {
            program
                .attach(
                    PerfEventConfig::Software(event),
                    PerfEventScope::AllProcessesOneCpu { cpu },
                    SamplePolicy::Period(self.period),
                    false,
                )
                .with_context(|| format!("attaching to a software event on cpu {cpu}"))?;
        }
        Ok(())
    }
}

/// The aya software event for `PERF_COUNT_SW_*` number `config`.
fn software_event(config: u64) -> Result<AyaSoftware> {
    Ok(match config {
        0 => AyaSoftware::CpuClock,
        1 => AyaSoftware::TaskClock,
        2 => AyaSoftware::PageFaults,
        3 => AyaSoftware::ContextSwitches,
        4 => AyaSoftware::CpuMigrations,
        5 => AyaSoftware::PageFaultsMin,
        6 => AyaSoftware::PageFaultsMaj,
        7 => AyaSoftware::AlignmentFaults,
        8 => AyaSoftware::EmulationFaults,
        other => {
            return Err(Error::usage(format!(
                "unknown software event number {other}"
            )));
        }
    })
}
