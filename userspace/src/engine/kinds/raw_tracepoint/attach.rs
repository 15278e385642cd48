//! Raw tracepoints: the program gets the tracepoint's `TP_PROTO` arguments, and the kernel
//! builds no record (cheaper than a classic tracepoint: `raw_syscalls:sys_enter` costs half).

use aya::programs::RawTracePoint as AyaRawTracePoint;

use crate::{
    Result,
    bpf::names::engine,
    engine::{
        Engine,
        attach::{AttachPoint, Role},
        kinds::tracepoint::attach::Tracepoints,
        plan::{fast_count_arg1, interpreter_only},
    },
    error::Context as _,
    probe::Tracepoint,
};

/// A stage on one raw tracepoint, by its name (`sys_enter`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawTracepoint(pub String);

impl AttachPoint for RawTracepoint {
    fn attach(&self, engine: &mut Engine, role: Role) -> Result<()> {
        attach_raw(engine, role, &self.0)
    }

    fn programs(&self, role: Role, _simple: bool) -> Option<Vec<String>> {
        Some(raw_programs(role))
    }
}

/// The programs [`attach_raw`] may pick for `role` (which one depends on the plan).
fn raw_programs(role: Role) -> Vec<String> {
    let names: &[&str] = match role {
        Role::Start => &[engine::RAW_TP_START],
        Role::Main => &[
            engine::RAW_TP_COUNT_ARG1,
            engine::RAW_TP_SIMPLE,
            engine::RAW_TP,
        ],
    };
    names.iter().map(|name| name.to_string()).collect()
}

/// Loads the stage's raw tracepoint program and attaches it to raw tracepoint `name`.
fn attach_raw(engine: &mut Engine, role: Role, name: &str) -> Result<()> {
    let program = match role {
        Role::Start => engine::RAW_TP_START,
        // Counting by argument 1 into the array needs no interpreter (syscount).
        Role::Main if fast_count_arg1(&engine.plan) && !interpreter_only() => {
            engine::RAW_TP_COUNT_ARG1
        }
        // A simple plan without the interpreter in the program: no BPF-to-BPF calls.
        Role::Main if engine.plan.simple != 0 => engine::RAW_TP_SIMPLE,
        Role::Main => engine::RAW_TP,
    };
    let program: &mut AyaRawTracePoint = engine
        .ebpf()?
        .program_mut(program)
        .expect("program in object")
        .try_into()
        .context("raw tracepoint program type")?;
    if program.fd().is_err() {
        program.load().with_context(|| {
            format!(
                "loading the engine for raw tracepoint {}",
                crate::error::quote(name)
            )
        })?;
    }
    let link = program
        .attach(name)
        .with_context(|| format!("attaching to raw tracepoint {}", crate::error::quote(name)))?;
    let link = program
        .take_link(link)
        .context("owning the raw tracepoint's link")?;
    engine.keep_link(role, link);
    Ok(())
}

/// A stage on one classic tracepoint whose plan reads nothing of its record (counts, `--by
/// pid/tid/cpu/comm/cgroup`, user stacks): attached as the raw tracepoint of the same name,
/// where the kernel builds no record (the raw `sys_enter` costs about half of the classic
/// one), else, where that does not attach (a kernel without it, an event that is no
/// tracepoint of its own, such as `syscalls:*`), as the classic tracepoint. Both run the same
/// plan, so both give the same answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawOrClassic(pub Tracepoint);

impl AttachPoint for RawOrClassic {
    fn programs(&self, role: Role, simple: bool) -> Option<Vec<String>> {
        let mut names = raw_programs(role);
        names.extend(Tracepoints(vec![self.0.clone()]).programs(role, simple)?);
        Some(names)
    }

    fn attach(&self, engine: &mut Engine, role: Role) -> Result<()> {
        let tp = &self.0;
        // Systems of events that are no tracepoint of their own (syscalls:* are made from
        // raw_syscalls; the others are dynamic or ftrace's own).
        let no_raw = [
            "syscalls",
            "kprobes",
            "uprobes",
            "synthetic",
            "ftrace",
            "eprobes",
        ];
        if no_raw.contains(&tp.system.as_str()) {
            engine.notes.push(format!(
                "tracepoint {tp} (classic): {} events have no raw tracepoint",
                tp.system
            ));
        } else if std::env::var_os(CLASSIC_ONLY).is_none() {
            match attach_raw(engine, role, &tp.event) {
                Ok(()) => {
                    engine.notes.push(format!(
                        "raw tracepoint {} for {tp}: the plan reads no field of its record",
                        tp.event
                    ));
                    return Ok(());
                }
                Err(error) => engine.notes.push(format!(
                    "tracepoint {tp} (classic): its raw tracepoint did not attach ({error})"
                )),
            }
        } else {
            engine
                .notes
                .push(format!("tracepoint {tp} (classic): {CLASSIC_ONLY} is set"));
        }
        let classic = Tracepoints(vec![tp.clone()]);
        classic.prepare(engine, role)?;
        classic.attach(engine, role)
    }
}

/// A stage on raw tracepoint `name` in place of the classic tracepoint `of`, whose record
/// fields the plan reads from the raw arguments instead (`raw_syscalls`' `id` and `ret`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawInPlaceOf {
    /// The raw tracepoint (`sys_enter`).
    pub name: String,
    /// The classic tracepoint it serves (`raw_syscalls:sys_enter`).
    pub of: Tracepoint,
}

impl AttachPoint for RawInPlaceOf {
    fn programs(&self, role: Role, _simple: bool) -> Option<Vec<String>> {
        Some(raw_programs(role))
    }

    fn attach(&self, engine: &mut Engine, role: Role) -> Result<()> {
        attach_raw(engine, role, &self.name)?;
        engine.notes.push(format!(
            "raw tracepoint {} for {}: the fields the plan reads are its arguments",
            self.name, self.of
        ));
        Ok(())
    }
}

/// Set (to anything), tracepoints attach as classic tracepoints even where a raw one would
/// serve: the general path, for comparing answers (the integration tests) and costs.
pub const CLASSIC_ONLY: &str = "TRACEKIT_CLASSIC_TRACEPOINTS";

#[cfg(test)]
mod tests {
    use super::*;

    /// Every program a raw or classic tracepoint stage names is in the engine object, so
    /// the loader that keeps only those keeps what the attach takes.
    #[test]
    fn stages_name_programs_of_the_engine_object() {
        let Ok(object) = crate::bpf::object(crate::bpf::Object::Engine) else {
            eprintln!("skipped: this build has no kernel programs");
            return;
        };
        let parsed = aya_obj::Object::parse(object).unwrap();
        let tp = |event: &str| Tracepoint {
            system: "sched".into(),
            event: event.into(),
        };
        let most = |role| {
            let limit = match role {
                Role::Main => tracekit_common::engine::MAX_TRACEPOINTS,
                Role::Start => tracekit_common::engine::MAX_START_TRACEPOINTS,
            };
            Tracepoints((0..limit).map(|i| tp(&i.to_string())).collect())
        };
        for role in [Role::Main, Role::Start] {
            let stages: [&dyn AttachPoint; 4] = [
                &RawTracepoint("sys_enter".into()),
                &RawOrClassic(tp("sched_switch")),
                &RawInPlaceOf {
                    name: "sys_enter".into(),
                    of: tp("x"),
                },
                &most(role),
            ];
            for stage in stages {
                for simple in [false, true] {
                    let names = stage.programs(role, simple).unwrap();
                    assert!(!names.is_empty());
                    for name in names {
                        assert!(parsed.programs.contains_key(&name), "{role:?}: {name}");
                    }
                }
            }
        }
    }
}
