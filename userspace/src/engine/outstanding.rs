//! The outstanding-allocation stage kind (`agg::OUTSTANDING`), behind `memleak`: allocation
//! events store `address -> (size, stack, time, pid)` in the engine object's
//! `ENGINE_OUTSTANDING` map, release events delete their address, and what is left when the
//! map is read ([`Engine::outstanding`](super::Engine::outstanding)) was never freed.
//!
//! - User allocators ([`user_spec`]): a start stage on the allocators' entries (uprobes)
//!   saves their first three arguments per thread; the main stage on their returns
//!   (uretprobes) stores the returned address with the size its [`size_rule`] computes from
//!   those arguments and the user stack; the release functions' entries (uprobes, `free`'s
//!   and `realloc`'s argument 0) delete it.
//! - Kernel allocators ([`kernel_spec`]): tracepoints give the address and the size
//!   (`kmem:kmalloc`'s `ptr` and `bytes_alloc`) with the kernel stack; others (`kmem:kfree`)
//!   release their `ptr`. No start stage.

use std::{path::PathBuf, sync::Arc};

use tracekit_common::engine::{
    MAX_ALLOC_EVENTS, Operand, RELEASE_SAME_PROCESS, operand, size_rule,
};

use super::{
    Engine, EngineSpec, PlanBuilder, Stage,
    attach::{AttachPoint, Role},
    kinds::tracepoint::attach::Tracepoints,
    plan::{arg_operand, simple_operand},
};
use crate::{
    Error, Result,
    bpf::names::engine as names,
    error::Context as _,
    probe::{Tracepoint, tracefs::EventFormat},
};

/// One user allocator function: where it is and how its size is computed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserAllocator {
    /// Its name (`calloc`), for messages.
    pub name: String,
    /// Its file offset in the binary.
    pub offset: u64,
    /// Its size rule ([`size_rule`]) over its first three arguments (saved slots 0-2).
    pub rule: u32,
}

/// Where the user allocators and release functions are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserAllocators {
    /// The binary or library (libc).
    pub binary: PathBuf,
    /// Allocators, at most [`MAX_ALLOC_EVENTS`].
    pub allocs: Vec<UserAllocator>,
    /// File offsets of the functions that release their argument 0 (`free`, `realloc`).
    pub releases: Vec<(String, u64)>,
    /// `-p PID`: only its calls are probed.
    pub pid: Option<u32>,
}

/// The engine spec of `allocators`, keeping at most `entries` allocations outstanding.
///
/// # Errors
/// A usage error when there are no allocators, or more than [`MAX_ALLOC_EVENTS`], or more
/// than 64 events.
pub fn user_spec(allocators: &UserAllocators, entries: u32) -> Result<EngineSpec> {
    let n = allocators.allocs.len();
    if n == 0 || n > MAX_ALLOC_EVENTS || n + allocators.releases.len() > 64 {
        return Err(Error::usage(format!(
            "an outstanding-allocation stage has 1 to {MAX_ALLOC_EVENTS} allocators and at most \
             64 functions"
        )));
    }
    // The entry saves the first three arguments under the thread id.
    let mut start = PlanBuilder::new();
    let tid = simple_operand(operand::TID);
    let tid_start = start.operand(tid)?;
    start.corr_part(tid_start);
    for arg in 0..3 {
        let index = start.operand(arg_operand(arg, 8, false))?;
        start.save(index)?;
    }
    start.by_thread();
    start.layout(None);
    // The return stores the address with the user stack; release entries delete.
    let mut main = PlanBuilder::new();
    let address = main.operand(simple_operand(operand::RETVAL))?;
    main.key_part(address)?;
    let stack = main.operand(simple_operand(operand::USER_STACK))?;
    main.key_part(stack)?;
    let tid_main = main.operand(tid)?;
    main.corr_part(tid_main);
    main.needs_start();
    main.announce();
    let mut rules = [size_rule::SIZE_VALUE; MAX_ALLOC_EVENTS];
    for (i, alloc) in allocators.allocs.iter().enumerate() {
        rules[i] = alloc.rule;
    }
    let releases = (n..n + allocators.releases.len()).fold(0u64, |bits, e| bits | 1 << e);
    // A free deletes only its own process's block (other processes' uprobes fire too
    // with `-- CMD`, at the same addresses).
    let release = Operand {
        aux: RELEASE_SAME_PROCESS,
        ..arg_operand(0, 8, false)
    };
    main.outstanding(releases, release, rules);
    let attach = |ret| {
        Arc::new(AllocUprobes {
            allocators: allocators.clone(),
            ret,
        })
    };
    let mut spec = EngineSpec::new(
        Stage {
            plan: main.plan(),
            attach: attach(true),
        },
        Some(Stage {
            plan: start.plan(),
            attach: attach(false),
        }),
    );
    spec.hash_entries = entries;
    Ok(spec)
}

/// The engine spec of kernel allocator tracepoints and their release tracepoints (read from
/// the format files under `tracefs`): each allocator is `(tracepoint, address field, size
/// field)`, each release `(tracepoint, address field)`; kernel stacks. One map holds them
/// all, so an object of one allocator freed through another's release (`kfree` of a
/// `kmem_cache_alloc` object) is seen.
///
/// # Errors
/// A runtime error naming a tracepoint or field this kernel lacks, or address fields that
/// are not at one offset in every event (the plan reads one).
pub fn kernel_spec(
    tracefs: &std::path::Path,
    allocs: &[(Tracepoint, &str, &str)],
    releases: &[(Tracepoint, &str)],
    entries: u32,
) -> Result<EngineSpec> {
    if allocs.is_empty() || allocs.len() > MAX_ALLOC_EVENTS || allocs.len() + releases.len() > 64 {
        return Err(Error::usage(format!(
            "an outstanding-allocation stage has 1 to {MAX_ALLOC_EVENTS} allocators and at most \
             64 events"
        )));
    }
    let field = |tp: &Tracepoint, name: &str| -> Result<Operand> {
        let format = EventFormat::read(tracefs, &tp.system, &tp.event)?;
        let field = format.field(name).ok_or_else(|| {
            Error::runtime(format!("{}:{} has no field `{name}`", tp.system, tp.event))
        })?;
        Ok(Operand {
            kind: operand::FIELD,
            offset: field.offset,
            size: field.size,
            ..Operand::NONE
        })
    };
    let same = |operands: Vec<Operand>, what: &str| -> Result<Operand> {
        match operands.split_first() {
            Some((first, rest)) if rest.iter().all(|o| o == first) => Ok(*first),
            _ => Err(Error::runtime(format!(
                "the {what} fields are not at one offset on this kernel"
            ))),
        }
    };
    let address = same(
        allocs
            .iter()
            .map(|(tp, address, _)| field(tp, address))
            .collect::<Result<_>>()?,
        "allocation address",
    )?;
    let release = same(
        releases
            .iter()
            .map(|(tp, address)| field(tp, address))
            .collect::<Result<_>>()?,
        "release address",
    )?;
    let mut rules = [size_rule::SIZE_VALUE; MAX_ALLOC_EVENTS];
    for (i, (tp, _, size)) in allocs.iter().enumerate() {
        let size = field(tp, size)?;
        if size.size != 8 {
            return Err(Error::runtime(format!(
                "{}:{}'s size field is not 8 bytes",
                tp.system, tp.event
            )));
        }
        rules[i] = size_rule::field(size.offset);
    }
    let mut main = PlanBuilder::new();
    let address = main.operand(address)?;
    main.key_part(address)?;
    let stack = main.operand(simple_operand(operand::KERNEL_STACK))?;
    main.key_part(stack)?;
    let n = allocs.len();
    let release_bits = (n..n + releases.len()).fold(0u64, |bits, e| bits | 1 << e);
    main.outstanding(release_bits, release, rules);
    let tracepoints = allocs
        .iter()
        .map(|(tp, ..)| tp.clone())
        .chain(releases.iter().map(|(tp, _)| tp.clone()))
        .collect();
    let mut spec = EngineSpec::new(
        Stage {
            plan: main.plan(),
            attach: Arc::new(Tracepoints(tracepoints)),
        },
        None,
    );
    spec.hash_entries = entries;
    Ok(spec)
}

/// The user allocators' probes: entries for the start stage; returns and the release
/// functions' entries for the main stage (event `allocs.len() + i` for release `i`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct AllocUprobes {
    allocators: UserAllocators,
    /// The main stage (returns and releases); false: the start stage (entries).
    ret: bool,
}

impl AllocUprobes {
    /// Attaches `program` at each `(cookie, offset)`.
    fn attach_at(
        &self,
        engine: &mut Engine,
        role: Role,
        program: &str,
        at: &[(u64, u64)],
    ) -> Result<()> {
        use aya::programs::{
            UProbe,
            uprobe::{UProbeAttachLocation, UProbeAttachPoint, UProbeScope},
        };
        let binary = &self.allocators.binary;
        let probe: &mut UProbe = engine
            .ebpf()?
            .program_mut(program)
            .expect("program in object")
            .try_into()
            .context("uprobe program type")?;
        probe.load().context("loading the engine's uprobe")?;
        let scope = match self.allocators.pid.and_then(std::num::NonZeroU32::new) {
            Some(pid) => UProbeScope::OneProcess(pid),
            None => UProbeScope::AllProcesses,
        };
        let mut links = Vec::with_capacity(at.len());
        for &(cookie, offset) in at {
            let point = UProbeAttachPoint {
                location: UProbeAttachLocation::AbsoluteOffset(offset),
                cookie: Some(cookie),
            };
            let link = probe.attach(point, binary, scope).with_context(|| {
                format!("attaching a uprobe to {} at {offset:#x}", binary.display())
            })?;
            links.push(probe.take_link(link).context("owning a uprobe's link")?);
        }
        for link in links {
            engine.keep_link(role, link);
        }
        Ok(())
    }
}

impl AttachPoint for AllocUprobes {
    fn attach(&self, engine: &mut Engine, role: Role) -> Result<()> {
        let allocs: Vec<(u64, u64)> = self
            .allocators
            .allocs
            .iter()
            .enumerate()
            .map(|(i, a)| (i as u64, a.offset))
            .collect();
        if !self.ret {
            return self.attach_at(engine, role, names::UPROBE_START, &allocs);
        }
        self.attach_at(engine, role, names::URETPROBE, &allocs)?;
        let base = allocs.len() as u64;
        let releases: Vec<(u64, u64)> = self
            .allocators
            .releases
            .iter()
            .enumerate()
            .map(|(i, (_, offset))| (base + i as u64, *offset))
            .collect();
        self.attach_at(engine, role, names::UPROBE, &releases)
    }

    fn events(&self) -> usize {
        self.allocators.allocs.len()
            + if self.ret {
                self.allocators.releases.len()
            } else {
                0
            }
    }
}
