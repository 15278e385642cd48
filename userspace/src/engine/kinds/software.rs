//! Software perf events (`page-faults`, `context-switches`, ...; `PERF_COUNT_SW_*`,
//! include/uapi/linux/perf_event.h): the kind, and its attach point, [`SoftwareEvent`], the
//! engine's perf event program on every CPU, run every `period` events, or at a frequency:
//! `software:page-faults` runs at each fault, `software:page-faults:100` at every 100th
//! (bpftrace's count), `software:cpu-clock:99hz` 99 times a second per CPU (perf's `-F`).

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
        compile::{body::*, start::*, *},
        kinds::{Kind, ProbeSpec},
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

    fn compile(&self, specs: &[ProbeSpec], request: &Request, events: &Events) -> Result<Compiled> {
        software_specs(&specs[0], request, events)
    }
}

/// Splits `NAME[:N|:Nhz]` into the event's name and how often the program runs.
fn rate_of(spec: &ProbeSpec) -> Result<(&str, Sampling)> {
    let Some((name, rate)) = spec.target.split_once(':') else {
        return Ok((&spec.target, Sampling::Period(1)));
    };
    let (digits, hz) = match rate.strip_suffix("hz") {
        Some(digits) => (digits, true),
        None => (rate, false),
    };
    match digits.parse::<u64>() {
        Ok(n) if n > 0 && (!hz || n <= 100_000) => Ok((
            name,
            if hz {
                Sampling::Frequency(n)
            } else {
                Sampling::Period(n)
            },
        )),
        _ => Err(Error::usage(format!(
            "probe `{}`: rate `{}` is not valid; after the event give every N events \
             (1 or more) or Nhz (1 to 100000 per second per CPU)",
            quote(&spec.text),
            quote(rate)
        ))),
    }
}

fn software_specs(spec: &ProbeSpec, request: &Request, events: &Events) -> Result<Compiled> {
    let (name, sampling) = rate_of(spec)?;
    let config = counters::named_event(name)
        .filter(|event| event.kind == counters::CounterKind::Software)
        .map(|event| event.config)
        .ok_or_else(|| {
            Error::usage(format!(
                "probe `{}`: unknown software event; valid: {}",
                quote(&spec.text),
                counters::software_names().join(", ")
            ))
        })?;
    let fields = BuiltinFields(spec.text.clone());
    // A start stage (`--last`: a CPU's last frequency read at each sample, `cpufreq`).
    let start = compile_request_start(request, events)?;
    let (mut builder, (columns, prints)) =
        main_plan(&fields, start.as_ref(), request, |builder, fields| {
            compile_body(builder, fields, request)
        })?;
    finish_layout(&mut builder, &columns);
    let attach = SoftwareEvent { config, sampling };
    Ok(Compiled {
        specs: vec![spec_of(
            builder.plan(),
            Arc::new(attach),
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

/// A stage on a software perf event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SoftwareEvent {
    /// `PERF_COUNT_SW_*`, from [`crate::counters::SOFTWARE`].
    pub config: u64,
    /// How often the program runs.
    pub sampling: Sampling,
}

/// How often a software event runs the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampling {
    /// Every N events (1: each one).
    Period(u64),
    /// N times a second on each CPU (the kernel adjusts the period; `cpu-clock` is exact).
    Frequency(u64),
}

impl AttachPoint for SoftwareEvent {
    fn attach(&self, engine: &mut Engine, role: Role) -> Result<()> {
        let program: &mut PerfEvent = engine
            .ebpf()?
            .program_mut(crate::bpf::names::engine::PERF_EVENT)
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
                    match self.sampling {
                        Sampling::Period(n) => SamplePolicy::Period(n),
                        Sampling::Frequency(hz) => SamplePolicy::Frequency(hz),
                    },
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
