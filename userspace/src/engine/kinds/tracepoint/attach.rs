//! Classic tracepoints (`include/trace/events/`): the program reads the record the kernel
//! builds, whose layout comes from the tracepoint's format file. One engine program per
//! tracepoint of a stage (`engine_tp_N`, `engine_tp_start[_N]`), so each knows its event index.

use aya::programs::TracePoint;
use tracekit_common::engine::{MAX_START_TRACEPOINTS, MAX_TRACEPOINTS, SIMPLE_TRACEPOINTS};

use crate::{
    Error, Result,
    bpf::names::engine as names,
    engine::{
        Engine,
        attach::{AttachPoint, Role},
    },
    error::Context as _,
    probe::{Tracepoint, tracefs},
};

/// A stage on classic tracepoints; the `i`th has event index `i`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tracepoints(pub Vec<Tracepoint>);

/// The engine program for a stage's `index`th tracepoint of `count`: a simple plan's main
/// stage on at most [`SIMPLE_TRACEPOINTS`] gets the programs with the simple path inlined.
fn program_name(role: Role, index: usize, count: usize, simple: bool) -> String {
    match role {
        Role::Start => names::start_tracepoint(index),
        Role::Main if simple && count <= SIMPLE_TRACEPOINTS => names::simple_tracepoint(index),
        Role::Main => names::tracepoint(index),
    }
}

impl AttachPoint for Tracepoints {
    fn prepare(&self, engine: &mut Engine, role: Role) -> Result<()> {
        let limit = match role {
            Role::Start => MAX_START_TRACEPOINTS,
            Role::Main => MAX_TRACEPOINTS,
        };
        if self.0.len() > limit {
            return Err(Error::runtime(format!(
                "an engine attaches at most {MAX_TRACEPOINTS} tracepoints \
                 ({MAX_START_TRACEPOINTS} to start)"
            )));
        }
        let simple = engine.plan.simple != 0;
        for (index, tp) in self.0.iter().enumerate() {
            load(engine, &program_name(role, index, self.0.len(), simple), tp)?;
        }
        Ok(())
    }

    fn attach(&self, engine: &mut Engine, role: Role) -> Result<()> {
        let simple = engine.plan.simple != 0;
        for (index, tp) in self.0.iter().enumerate() {
            attach(engine, &program_name(role, index, self.0.len(), simple), tp)?;
        }
        Ok(())
    }

    fn events(&self) -> usize {
        self.0.len()
    }

    fn programs(&self, role: Role, simple: bool) -> Option<Vec<String>> {
        let count = self.0.len();
        Some(
            (0..count)
                .map(|index| program_name(role, index, count, simple))
                .collect(),
        )
    }
}

/// Tracepoint program `name`, loaded for `tp` unless it was.
fn load<'a>(engine: &'a mut Engine, name: &str, tp: &Tracepoint) -> Result<&'a mut TracePoint> {
    let program: &mut TracePoint = engine
        .ebpf()?
        .program_mut(name)
        .expect("program in object")
        .try_into()
        .context("tracepoint program type")?;
    if program.fd().is_err() {
        program
            .load()
            .with_context(|| format!("loading the engine for tracepoint {tp}"))?;
    }
    Ok(program)
}

/// Loads (unless loaded) and attaches program `name` to `tp`; also used for the engine's
/// own process-tracking tracepoints (exec, mmap, fork).
pub(crate) fn attach(engine: &mut Engine, name: &str, tp: &Tracepoint) -> Result<()> {
    tracefs::root()?;
    let program = load(engine, name, tp)?;
    let link = program
        .attach(&tp.system, &tp.event)
        .with_context(|| format!("attaching to tracepoint {tp}"))?;
    let link = program
        .take_link(link)
        .with_context(|| format!("owning the link of tracepoint {tp}"))?;
    // The engine's own tracepoints detach with the stage of their name.
    let role = if name.contains("_start") {
        Role::Start
    } else {
        Role::Main
    };
    engine.keep_link(role, link);
    Ok(())
}

/// A stage on one classic tracepoint that a raw tracepoint cannot serve, and why (`-v`).
/// Listed as the [`Tracepoints`] stage it is (plan listings in tests).
#[derive(Clone, PartialEq, Eq)]
pub struct Classic {
    /// The tracepoint.
    pub tracepoint: Tracepoint,
    /// Why it stays classic ("the plan reads fields of its record").
    pub why: String,
}

impl AttachPoint for Classic {
    fn programs(&self, role: Role, simple: bool) -> Option<Vec<String>> {
        Tracepoints(vec![self.tracepoint.clone()]).programs(role, simple)
    }

    fn attach(&self, engine: &mut Engine, role: Role) -> Result<()> {
        let stage = Tracepoints(vec![self.tracepoint.clone()]);
        stage.prepare(engine, role)?;
        stage.attach(engine, role)?;
        engine.notes.push(format!(
            "tracepoint {} (classic): {}",
            self.tracepoint, self.why
        ));
        Ok(())
    }
}

impl std::fmt::Debug for Classic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Tracepoints")
            .field(&[&self.tracepoint])
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_plans_on_few_tracepoints_get_the_inlined_programs() {
        assert_eq!(program_name(Role::Main, 0, 1, true), "engine_tp_simple_0");
        assert_eq!(program_name(Role::Main, 3, 4, true), "engine_tp_simple_3");
        // More tracepoints than inlined programs: all on the shared ones, one event index each.
        assert_eq!(program_name(Role::Main, 0, 5, true), "engine_tp_0");
        assert_eq!(program_name(Role::Main, 2, 3, false), "engine_tp_2");
        assert_eq!(program_name(Role::Start, 0, 1, true), "engine_tp_start");
        assert_eq!(program_name(Role::Start, 1, 2, true), "engine_tp_start_1");
    }
}
