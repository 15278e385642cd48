//! Where a stage's program attaches: one file per attach kind, each an [`AttachPoint`].
//!
//! - [`tracepoint`]: classic tracepoints (record fields from the format file);
//! - [`raw_tracepoint`]: raw tracepoints (the `TP_PROTO` arguments, no record built);
//! - [`kernel_function`]: kernel functions, through [`fentry`] trampolines or [`kprobe`]s
//!   (several through one [`kprobe_multi`] link where the kernel has them);
//! - [`uprobe`]: user functions, uprobes and uretprobes;
//! - [`usdt`]: USDT probe sites, uprobes whose semaphores the kernel counts;
//! - [`perf_event`]: software perf events on every CPU.
//!
//! Adding a kind is one file here: a type implementing [`AttachPoint`] that loads and
//! attaches the engine object's program for it (`ebpf/src/bin/engine.rs` has one program per
//! kind and stage).

pub mod fentry;
pub mod kernel_function;
pub mod kprobe;
pub mod kprobe_multi;
pub mod perf_event;
pub mod raw_tracepoint;
pub mod tracepoint;
pub mod uprobe;
pub mod usdt;

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
    /// outside aya that shares them ([`kprobe_multi`]).
    fn shares_maps(&self) -> bool {
        false
    }

    /// How many events the stage attaches to (tracepoints, functions), for limits.
    fn events(&self) -> usize {
        1
    }
}

/// An attach point, shared by the specs that use it.
pub type Attach = Arc<dyn AttachPoint>;
