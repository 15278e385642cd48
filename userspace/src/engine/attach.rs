//! What every kind's attach step shares: the [`AttachPoint`] trait a kind's attach point
//! implements, and the stage [`Role`] it attaches for. The attach points themselves live in
//! their kinds' modules ([`super::kinds`]):
//!
//! - [`tracepoint::attach`](super::kinds::tracepoint::attach): classic tracepoints (record
//!   fields from the format file);
//! - [`raw_tracepoint::attach`](super::kinds::raw_tracepoint::attach): raw tracepoints (the
//!   `TP_PROTO` arguments, no record built), which `syscalls:*` sets attach too;
//! - [`function`](super::kinds::function): kernel functions through fentry trampolines or
//!   kprobes (several through one kprobe.multi link where the kernel has them), and user
//!   functions through uprobes and uretprobes;
//! - [`usdt::attach`](super::kinds::usdt::attach): USDT probe sites, uprobes whose semaphores
//!   the kernel counts;
//! - [`software::SoftwareEvent`](super::kinds::software::SoftwareEvent): software perf
//!   events on every CPU.
//!
//! A new kind's attach point is a type implementing [`AttachPoint`] in its kind's module,
//! which loads and attaches the engine object's program for it (`ebpf/src/bin/engine.rs` has
//! one program per kind and stage).

use std::{fmt, sync::Arc};

use super::Engine;
use crate::Result;

/// Which stage a program serves: the start stage records starts, the main stage aggregates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The stage that stores a start (a timestamp and saved values) under the pairing key.
    Start,
    /// The stage that aggregates (and, with a start stage, finds its start).
    Main,
}

impl Role {
    /// Whether this is the start stage.
    pub fn is_start(self) -> bool {
        self == Role::Start
    }
}

/// One attach kind: how the engine object's program for it is loaded and attached.
pub trait AttachPoint: fmt::Debug + Send + Sync {
    /// Loads the programs ahead of attaching any stage, so the stages start within a short
    /// window (verifying a program takes milliseconds). Checks limits; a no-op by default.
    fn prepare(&self, _engine: &mut Engine, _role: Role) -> Result<()> {
        Ok(())
    }

    /// Attaches the stage's program; what it says about how it attached goes to
    /// [`Engine::notes`] (`-v`).
    fn attach(&self, engine: &mut Engine, role: Role) -> Result<()>;

    /// The object's map fds must be kept open after loading: this kind loads a program
    /// outside aya that shares them
    /// ([`kprobe_multi`](super::kinds::function::kprobe_multi)).
    fn shares_maps(&self) -> bool {
        false
    }

    /// How many events the stage attaches to (tracepoints, functions), for limits.
    fn events(&self) -> usize {
        1
    }

    /// The engine object's programs this stage loads for `role` (`simple`: the main plan
    /// is [simple](tracekit_common::engine::Plan)), so the loader parses and links those
    /// only ([`crate::bpf::keep_programs`]); `None`, the default, keeps every program.
    fn programs(&self, _role: Role, _simple: bool) -> Option<Vec<String>> {
        None
    }
}

/// An attach point, shared by the specs that use it.
pub type Attach = Arc<dyn AttachPoint>;
