//! User functions: uprobes and uretprobes at file offsets of one binary. Function `i` gets
//! attach cookie `i`, which the program reads as its event index.

use std::path::PathBuf;

use aya::programs::{
    UProbe,
    uprobe::{UProbeAttachLocation, UProbeAttachPoint, UProbeScope},
};

use crate::{
    Result,
    bpf::names::engine as names,
    engine::{
        Engine,
        attach::{AttachPoint, Role},
    },
    error::Context as _,
};

/// A stage on user functions of one binary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Uprobes {
    /// The binary (or shared library).
    pub binary: PathBuf,
    /// Each function's file offset.
    pub offsets: Vec<u64>,
    /// Limit the probes to this process (`-p PID`); `None`: every process.
    pub pid: Option<u32>,
    /// Probe returns (uretprobes) instead of entries.
    pub ret: bool,
}

impl AttachPoint for Uprobes {
    fn attach(&self, engine: &mut Engine, role: Role) -> Result<()> {
        let name = match (role, self.ret) {
            (Role::Start, _) => names::UPROBE_START,
            (Role::Main, false) => names::UPROBE,
            (Role::Main, true) => names::URETPROBE,
        };
        let program: &mut UProbe = engine
            .ebpf()?
            .program_mut(name)
            .expect("program in object")
            .try_into()
            .context("uprobe program type")?;
        program.load().context("loading the engine's uprobe")?;
        let scope = match self.pid.and_then(std::num::NonZeroU32::new) {
            Some(pid) => UProbeScope::OneProcess(pid),
            None => UProbeScope::AllProcesses,
        };
        // Kernels before 5.15 take no attach cookie (the program reads none there, and
        // several functions at once are refused at compile time).
        let cookies = crate::bpf::features::probes().attach_cookie;
        let mut links = Vec::with_capacity(self.offsets.len());
        for (index, &offset) in self.offsets.iter().enumerate() {
            let point = UProbeAttachPoint {
                location: UProbeAttachLocation::AbsoluteOffset(offset),
                cookie: cookies.then_some(index as u64),
            };
            let link = program
                .attach(point, &self.binary, scope)
                .with_context(|| {
                    format!(
                        "attaching a uprobe to {} at {offset:#x}",
                        self.binary.display()
                    )
                })?;
            links.push(program.take_link(link).context("owning a uprobe's link")?);
        }
        for link in links {
            engine.keep_link(role, link);
        }
        Ok(())
    }

    fn events(&self) -> usize {
        self.offsets.len()
    }
}
