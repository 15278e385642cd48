//! Hardware perf events (`cycles`, `instructions`, ...): named in specs, counted by `stat`,
//! not yet traced by the engine.

use crate::{
    Error, Result,
    engine::{
        compile::{Compiled, Events},
        kinds::{Kind, ProbeSpec},
        request::Request,
    },
    error::quote,
};

/// `hardware:`/`h:`: a hardware perf event.
#[derive(Debug)]
pub struct HardwareKind;

/// The kind's table entry.
pub static HARDWARE: HardwareKind = HardwareKind;

impl Kind for HardwareKind {
    fn names(&self) -> &'static [&'static str] {
        &["hardware", "h"]
    }

    fn compile(&self, specs: &[ProbeSpec], _: &Request, _: &Events) -> Result<Compiled> {
        Err(Error::usage(format!(
            "probe `{}`: hardware events are not supported by this command yet",
            quote(&specs[0].text)
        )))
    }
}
