//! Software perf events (`page-faults`, `context-switches`, ...; `PERF_COUNT_SW_*`,
//! include/uapi/linux/perf_event.h): the kind, and its attach point, [`SoftwareEvent`], the
//! engine's perf event program on every CPU, run every `period` events.

use std::{collections::BTreeMap, sync::Arc};

use aya::programs::{
    PerfEvent,
    perf_event::{PerfEventConfig, PerfEventScope, SamplePolicy},
};

use crate::{
    Error, Result, counters,
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

fn software_specs(spec: &ProbeSpec, request: &Request) -> Result<Compiled> {
    let config = counters::named_event(&spec.target)
        .filter(|event| event.kind == counters::Kind::Software)
        .map(|event| event.config)
        .ok_or_else(|| {
            Error::usage(format!(
                "probe `{}`: unknown software event; valid: {}",
                quote(&spec.text),
                counters::software_names().join(", ")
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
    /// `PERF_COUNT_SW_*`, from [`crate::counters::SOFTWARE`].
    pub config: u64,
    /// Run every `period` events.
    pub period: u64,
}

impl AttachPoint for SoftwareEvent {
    fn attach(&self, engine: &mut Engine, role: Role) -> Result<()> {
        let program: &mut PerfEvent = engine
            .ebpf()?
            .program_mut("engine_perf_event")
            .expect("program in object")
            .try_into()
            .context("perf event program type")?;
        program
            .load()
            .context("loading the engine's perf event program")?;
        let cpus = aya::util::online_cpus().map_err(|(path, err)| {
            Error::runtime(format!("reading the online CPUs from {path}: {err}"))
        })?;
        let mut links = Vec::with_capacity(cpus.len());
        for cpu in cpus {
            let link = program
                .attach(
                    PerfEventConfig::Pmu {
                        pmu_type: perf_event_open_sys::bindings::PERF_TYPE_SOFTWARE,
                        config: self.config,
                    },
                    PerfEventScope::AllProcessesOneCpu { cpu },
                    SamplePolicy::Period(self.period),
                    false,
                )
                .with_context(|| format!("attaching to a software event on cpu {cpu}"))?;
            links.push(
                program
                    .take_link(link)
                    .context("owning a software event's link")?,
            );
        }
        for link in links {
            engine.keep_link(role, link);
        }
        Ok(())
    }
}
