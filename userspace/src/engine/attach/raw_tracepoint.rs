//! Raw tracepoints: the program gets the tracepoint's `TP_PROTO` arguments, and the kernel
//! builds no record (cheaper than a classic tracepoint: `raw_syscalls:sys_enter` costs half).

use aya::programs::RawTracePoint as AyaRawTracePoint;

use super::{AttachPoint, Role};
use crate::{Result, engine::Engine, engine::plan::fast_count_arg1, error::Context as _};

/// A stage on one raw tracepoint, by its name (`sys_enter`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawTracepoint(pub String);

impl AttachPoint for RawTracepoint {
    fn attach(&self, engine: &mut Engine, role: Role) -> Result<()> {
        let name = &self.0;
        let program = match role {
            Role::Start => "engine_raw_tp_start",
            // Counting by argument 1 into the array needs no interpreter (syscount).
            Role::Main if fast_count_arg1(&engine.plan) => "engine_raw_tp_count_arg1",
            Role::Main => "engine_raw_tp",
        };
        let program: &mut AyaRawTracePoint = engine
            .ebpf()?
            .program_mut(program)
            .expect("program in object")
            .try_into()
            .context("raw tracepoint program type")?;
        program.load().with_context(|| {
            format!(
                "loading the engine for raw tracepoint {}",
                crate::error::quote(name)
            )
        })?;
        program.attach(name).with_context(|| {
            format!("attaching to raw tracepoint {}", crate::error::quote(name))
        })?;
        Ok(())
    }
}
