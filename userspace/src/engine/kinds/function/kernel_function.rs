//! Kernel functions, at entry or return: BPF trampolines ([`super::fentry`]) for one function
//! where the kernel allows them, else kprobes ([`super::kprobe`]), as libbpf-tools'
//! `fentry_can_attach` decides.

use std::path::Path;

use super::{fentry, kprobe};
use crate::{
    Error, Result,
    engine::{
        Engine,
        attach::{AttachPoint, Role},
    },
};

/// How kernel functions are probed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KernelAttach {
    /// fentry/fexit for a single function when the kernel allows it, else kprobes (as
    /// libbpf-tools' `fentry_can_attach` decides); kprobes for several functions, since a
    /// trampoline program is loaded per function.
    #[default]
    Auto,
    /// Always kprobes/kretprobes (`--kprobe`).
    Kprobe,
    /// Always fentry/fexit (`--fentry`).
    Fentry,
}

/// A stage on kernel functions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelFunctions {
    /// The functions (as `available_filter_functions` names them).
    pub functions: Vec<String>,
    /// At their return (main stage only; a start stage is always at entry).
    pub ret: bool,
    /// Trampolines or kprobes.
    pub how: KernelAttach,
    /// 8-byte words the function's parameters take (BTF), where fexit finds its return
    /// value; 0 for entries.
    pub param_words: u32,
}

impl AttachPoint for KernelFunctions {
    fn attach(&self, engine: &mut Engine, role: Role) -> Result<()> {
        let functions = &self.functions;
        let what = match functions.as_slice() {
            [one] => format!("kernel function {}", crate::error::quote(one)),
            many => format!(
                "{} kernel functions ({}, ...)",
                many.len(),
                crate::error::quote(&many[0])
            ),
        };
        let mut trampoline_error = None;
        if self.how != KernelAttach::Kprobe && functions.len() == 1 {
            match fentry::attach(
                engine,
                &functions[0],
                role,
                self.ret.then_some(self.param_words),
            ) {
                Ok(()) => {
                    let kind = if self.ret && !role.is_start() {
                        "fexit"
                    } else {
                        "fentry"
                    };
                    engine.notes.push(format!("{kind} {}", functions[0]));
                    return Ok(());
                }
                Err(err) if self.how == KernelAttach::Fentry => return Err(err),
                Err(err) => trampoline_error = Some(err),
            }
        } else if self.how == KernelAttach::Fentry {
            return Err(Error::usage(format!(
                "--fentry probes one function at a time; {what} match; use --kprobe"
            )));
        }
        if !Path::new(kprobe::KPROBE_PMU).exists() {
            let no_kprobes = "this kernel has no kprobes (CONFIG_KPROBES is not set)";
            return Err(Error::runtime(match trampoline_error {
                Some(fentry) => format!("cannot probe {what}: {no_kprobes} and {fentry}"),
                None => format!(
                    "cannot probe {what}: {no_kprobes}; fentry probes one function at a time"
                ),
            }));
        }
        let how = kprobe::attach(engine, functions, role, self.ret)?;
        engine.notes.push(how);
        Ok(())
    }

    fn shares_maps(&self) -> bool {
        self.functions.len() > 1 && self.how != KernelAttach::Fentry
    }

    fn events(&self) -> usize {
        self.functions.len()
    }
}
