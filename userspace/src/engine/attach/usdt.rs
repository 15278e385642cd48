//! USDT probe sites: uprobes at the sites' file offsets, created with the semaphore's file
//! offset as `ref_ctr_offset` so the kernel counts the semaphore while they are attached
//! ([`crate::usdt::attach`]; aya 0.14's uprobe attach has no such parameter). Site `i` gets
//! attach cookie `i`, which the program reads as its event index.

use std::os::fd::AsFd as _;

use aya::programs::UProbe;

use super::{AttachPoint, Role};
use crate::{Result, engine::Engine, error::Context as _, usdt::ProbeSite};

/// A stage on USDT probe sites (of one or several binaries).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Usdt {
    /// The sites, from [`crate::usdt::probes`].
    pub sites: Vec<ProbeSite>,
    /// Limit the probes (and the semaphores) to this process (`-p PID`); `None`: every
    /// process that maps the binary, now or later.
    pub pid: Option<u32>,
}

impl AttachPoint for Usdt {
    fn attach(&self, engine: &mut Engine, role: Role) -> Result<()> {
        let name = match role {
            Role::Start => "engine_uprobe_start",
            Role::Main => "engine_uprobe",
        };
        let program: &mut UProbe = engine
            .ebpf()?
            .program_mut(name)
            .expect("program in object")
            .try_into()
            .context("uprobe program type")?;
        program.load().context("loading the engine's uprobe")?;
        let fd = program.fd().context("the engine's uprobe")?.as_fd();
        let mut links = Vec::with_capacity(self.sites.len());
        for (index, site) in self.sites.iter().enumerate() {
            links.push((role, crate::usdt::attach(fd, site, self.pid, index as u64)?));
        }
        engine.usdt_links.extend(links);
        Ok(())
    }

    fn events(&self) -> usize {
        self.sites.len()
    }
}
