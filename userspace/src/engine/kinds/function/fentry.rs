//! BPF trampolines: fentry at a kernel function's entry, fexit at its return (5.5+, needs
//! kernel BTF; the cheaper hook where the kernel allows it). One function per program.

use aya::programs::{FEntry, FExit};

use crate::{
    Error, Result, bpf::names::engine as names, engine::Engine, engine::attach::Role,
    error::Context as _,
};

/// Loads and attaches the engine's fentry (entries and start stages) or fexit (returns of
/// the main stage, `ret`: the words `function`'s parameters take) program to `function`.
/// fexit reads the return value after the parameters at a fixed offset up to six words
/// (any kernel with trampolines, 5.5+), with `bpf_get_func_ret` (5.17+) beyond.
///
/// # Errors
/// A runtime error whose text completes "cannot probe FUNCTION: this kernel ... and ___":
/// "refuses BPF trampolines (fentry load: EPERM)" where the kernel has none.
pub(super) fn attach(
    engine: &mut Engine,
    function: &str,
    role: Role,
    ret: Option<u32>,
) -> Result<()> {
    let fentry_error = |err: aya::programs::ProgramError| {
        let text = err.to_string();
        Error::runtime(if text.contains("(os error 1)") {
            "refuses BPF trampolines (fentry load: EPERM)".to_string()
        } else {
            format!("fentry/fexit failed: {}", text.lines().next().unwrap_or(""))
        })
    };
    let btf = aya::Btf::from_sys_fs()
        .map_err(|err| Error::runtime(format!("fentry needs kernel BTF: {err}")))?;
    if role.is_start() || ret.is_none() {
        let name = if role.is_start() {
            names::FENTRY_START
        } else {
            names::FENTRY
        };
        let program: &mut FEntry = engine
            .ebpf()?
            .program_mut(name)
            .expect("program in object")
            .try_into()
            .context("fentry program type")?;
        program.load(function, &btf).map_err(fentry_error)?;
        let link = program.attach().map_err(fentry_error)?;
        let link = program.take_link(link).map_err(fentry_error)?;
        engine.keep_link(role, link);
    } else {
        let words = ret.unwrap_or(u32::MAX);
        let name = if words < names::FEXIT_WORDS {
            names::fexit(words)
        } else {
            names::FEXIT.to_string()
        };
        let program: &mut FExit = engine
            .ebpf()?
            .program_mut(&name)
            .expect("program in object")
            .try_into()
            .context("fexit program type")?;
        program.load(function, &btf).map_err(fentry_error)?;
        let link = program.attach().map_err(fentry_error)?;
        let link = program.take_link(link).map_err(fentry_error)?;
        engine.keep_link(role, link);
    }
    Ok(())
}
