//! Software perf events (`PERF_COUNT_SW_*`, include/uapi/linux/perf_event.h) on every CPU:
//! the program runs every `period` events.

use aya::programs::{
    PerfEvent,
    perf_event::{PerfEventConfig, PerfEventScope, SamplePolicy, SoftwareEvent as AyaSoftware},
};

use super::{AttachPoint, Role};
use crate::{Error, Result, engine::Engine, error::Context as _};

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
