//! Classic tracepoints (`include/trace/events/`): the program reads the record the kernel
//! builds, whose layout comes from the tracepoint's format file. One engine program per
//! tracepoint of a stage (`engine_tp_N`, `engine_tp_start[_N]`), so each knows its event index.

use aya::programs::TracePoint;
use tracekit_common::engine::{MAX_START_TRACEPOINTS, MAX_TRACEPOINTS};

use crate::{
    Error, Result,
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

/// The engine program for a stage's `index`th tracepoint.
fn program_name(role: Role, index: usize) -> String {
    match (role, index) {
        (Role::Start, 0) => "engine_tp_start".to_string(),
        (Role::Start, _) => format!("engine_tp_start_{index}"),
        (Role::Main, _) => format!("engine_tp_{index}"),
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
        for (index, tp) in self.0.iter().enumerate() {
            load(engine, &program_name(role, index), tp)?;
        }
        Ok(())
    }

    fn attach(&self, engine: &mut Engine, role: Role) -> Result<()> {
        for (index, tp) in self.0.iter().enumerate() {
            attach(engine, &program_name(role, index), tp)?;
        }
        Ok(())
    }

    fn events(&self) -> usize {
        self.0.len()
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
