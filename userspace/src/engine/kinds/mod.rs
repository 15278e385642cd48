//! One module per probe kind, and [`KINDS`], the one table of them that the spec parser
//! ([`ProbeSpec::parse`]), the compiler ([`crate::engine::compile`]), `list --fields` and the
//! shell completions read.
//!
//! A kind's module holds what that kind knows: its names in specs (bpftrace's, canonical
//! first), how its fields are found (`--value`, `--by`, `--filter`, `--print` and `list
//! --fields`), its compile step, which builds the plans and the attach point that the
//! engine attaches, and that attach point: a type implementing
//! [`AttachPoint`](super::attach::AttachPoint) that loads and attaches the kind's engine
//! program (in the kind's file, or in a submodule beside it: `tracepoint/attach.rs`). A kind
//! may attach through another's point when they attach alike: a `syscalls:*` tracepoint set
//! that reads no field attaches [`raw_tracepoint::attach::RawTracepoint`].
//!
//! - [`tracepoint`] for `tracepoint:`/`t:`, and perf's `SYSTEM:EVENT` (attach:
//!   [`tracepoint::attach`], classic tracepoints);
//! - [`raw_tracepoint`] for `rawtracepoint:`/`rt:` ([`raw_tracepoint::attach`]);
//! - [`function`] for kernel functions (`kprobe:`, `kretprobe:`, `fentry:`, `fexit:`) and
//!   user functions (`uprobe:`, `uretprobe:`), one compile step for all six (attach:
//!   [`function::kernel_function`] through [`function::fentry`] or [`function::kprobe`] and
//!   [`function::kprobe_multi`]; [`function::uprobe`]);
//! - [`usdt`] for `usdt:`/`U:` ([`usdt::attach`]);
//! - [`software`] (attach: [`software::SoftwareEvent`]), [`hardware`]: perf events.
//!
//! Adding a kind is one file here with a type implementing [`Kind`] (and one implementing
//! [`AttachPoint`](super::attach::AttachPoint) if it attaches in a way no kind does yet), and
//! its line in [`KINDS`].

pub mod function;
pub mod hardware;
pub mod raw_tracepoint;
pub mod software;
pub mod tracepoint;
pub mod usdt;

use std::{fmt, path::Path};

use super::{
    compile::{Compiled, Events, start::EventAttach},
    request::Request,
};
use crate::{
    Error, Result,
    error::quote,
    probe::{MAX_PROBE_BYTES, fields::BUILTINS, fields::Fields},
};

/// Every probe kind, in the order `--help` and errors name them.
pub static KINDS: &[&dyn Kind] = &[
    &tracepoint::TRACEPOINT,
    &raw_tracepoint::RAW_TRACEPOINT,
    &function::KPROBE,
    &function::KRETPROBE,
    &function::FENTRY,
    &function::FEXIT,
    &function::UPROBE,
    &function::URETPROBE,
    &usdt::USDT,
    &software::SOFTWARE,
    &hardware::HARDWARE,
];

/// A kind of probe: what a spec `NAME:TARGET` of it means.
pub trait Kind: fmt::Debug + Sync {
    /// Its names in specs, the canonical one first (`["tracepoint", "t"]`).
    fn names(&self) -> &'static [&'static str];

    /// The canonical name (`tracepoint`).
    fn name(&self) -> &'static str {
        self.names()[0]
    }

    /// Checks the target's shape when the spec is parsed; usage errors quote the spec.
    fn check(&self, _spec: &ProbeSpec) -> Result<()> {
        Ok(())
    }

    /// Whether one request may hold several specs of this kind (tracepoints); other kinds
    /// take one spec, with a wildcard for several targets.
    fn several(&self) -> bool {
        false
    }

    /// Compiles `request` for `specs`, all of this kind (one unless [`Kind::several`]).
    ///
    /// # Errors
    /// Usage errors naming the bad probe, field or filter part; runtime errors when tracefs
    /// or a binary cannot be read.
    fn compile(&self, specs: &[ProbeSpec], request: &Request, events: &Events) -> Result<Compiled>;

    /// The fields of the events `spec` names, one event a line or a tracepoint a block, as
    /// `list --fields` prints them. `pid` resolves binaries as `-p` does; `tracefs` gives
    /// the tracefs mount (the machine's, or a recorded tree in tests).
    ///
    /// # Errors
    /// By default a usage error: the kind's events carry only the built-in names.
    fn fields(
        &self,
        spec: &ProbeSpec,
        _pid: Option<u32>,
        _tracefs: &dyn Fn() -> Result<std::path::PathBuf>,
    ) -> Result<String> {
        Err(Error::usage(format!(
            "--fields {}: {} events carry no fields beyond {}",
            spec.text,
            self.name(),
            BUILTINS.join(", ")
        )))
    }

    /// A start stage's begin (or paired end) event of this kind: its fields and where it
    /// attaches. `tracefs` is empty when [`Kind::needs_tracefs`] says no.
    ///
    /// # Errors
    /// By default a usage error: start stages pair tracepoints and raw tracepoints.
    fn begin_event(
        &self,
        spec: &ProbeSpec,
        _tracefs: &Path,
    ) -> Result<(Box<dyn Fields>, EventAttach)> {
        Err(Error::usage(format!(
            "probe `{}`: start stages pair tracepoints and raw tracepoints; for a function's \
             latency, use its return probe's `latency`",
            quote(&spec.text)
        )))
    }

    /// Whether a begin event of this kind reads tracefs.
    fn needs_tracefs(&self) -> bool {
        true
    }
}

impl dyn Kind {
    /// Whether `self` is `other` (kinds are told apart by their canonical name).
    pub fn is(&self, other: &dyn Kind) -> bool {
        self.name() == other.name()
    }

    /// The kind one of whose names is `name`.
    pub fn named(name: &str) -> Option<&'static dyn Kind> {
        KINDS
            .iter()
            .copied()
            .find(|kind| kind.names().contains(&name))
    }
}

impl PartialEq for dyn Kind {
    fn eq(&self, other: &Self) -> bool {
        self.is(other)
    }
}

impl Eq for dyn Kind {}

/// A parsed probe spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeSpec {
    /// The kind.
    pub kind: &'static dyn Kind,
    /// What follows the kind (`block:block_rq_issue`, `vfs_read`, `/bin/bash:readline`).
    pub target: String,
    /// The spec as written, for messages.
    pub text: String,
}

impl ProbeSpec {
    /// Parses `KIND:TARGET`, KIND one of the names in [`KINDS`], or perf's `SYSTEM:EVENT`
    /// for a tracepoint. A spec is at most [`MAX_PROBE_BYTES`] long; errors quote at most
    /// 80 characters of it ([`crate::error::quote`]).
    ///
    /// ```
    /// use tracekit::engine::kinds::ProbeSpec;
    /// let spec = ProbeSpec::parse("t:block:block_rq_issue").unwrap();
    /// assert_eq!((spec.kind.name(), spec.target.as_str()), ("tracepoint", "block:block_rq_issue"));
    /// let perf = ProbeSpec::parse("block:block_rq_issue").unwrap();
    /// assert_eq!(perf, ProbeSpec { text: "block:block_rq_issue".into(), ..spec });
    /// ```
    ///
    /// # Errors
    /// Usage errors: too long, no `:`, an unknown kind (naming the valid ones), nothing
    /// after the kind, or a target of the wrong shape for its kind.
    pub fn parse(text: &str) -> Result<Self> {
        if text.len() > MAX_PROBE_BYTES {
            return Err(Error::usage(format!(
                "probe `{}`: {} bytes long; a probe is at most {MAX_PROBE_BYTES} bytes",
                quote(text),
                text.len()
            )));
        }
        let (head, rest) = text.split_once(':').ok_or_else(|| {
            Error::usage(format!(
                "probe `{}`: expected KIND:TARGET (e.g. tracepoint:block:block_rq_issue) \
                 or SYSTEM:EVENT (e.g. block:block_rq_issue)",
                quote(text)
            ))
        })?;
        let (kind, target) = match <dyn Kind>::named(head) {
            Some(kind) => (kind, rest),
            // perf's SYSTEM:EVENT: exactly two parts.
            None if !rest.contains(':') => (&tracepoint::TRACEPOINT as &dyn Kind, text),
            None => {
                let valid: Vec<String> = KINDS
                    .iter()
                    .map(|kind| format!("{} ({})", kind.name(), kind.names()[1..].join(", ")))
                    .collect();
                return Err(Error::usage(format!(
                    "probe `{}`: unknown probe type `{}`; valid: {}",
                    quote(text),
                    quote(head),
                    valid.join(", ")
                )));
            }
        };
        if target.is_empty() {
            return Err(Error::usage(format!(
                "probe `{}`: nothing after `{head}:`",
                quote(text)
            )));
        }
        let spec = Self {
            kind,
            target: target.to_string(),
            text: text.to_string(),
        };
        kind.check(&spec)?;
        Ok(spec)
    }
}

/// The probe spec for a function pattern, as bcc's `funccount`/`funclatency` take them:
/// explicit specs (`k:FUNC`, `u:BIN:FUNC`) as they are; `BINARY:FUNC` a user function;
/// anything else a kernel function. `ret` asks for the return probe.
///
/// ```
/// use tracekit::engine::kinds::function_probe;
/// assert_eq!(function_probe("vfs_*", false).unwrap(), "kprobe:vfs_*");
/// assert_eq!(function_probe("libc:malloc", true).unwrap(), "uretprobe:libc:malloc");
/// ```
///
/// # Errors
/// An explicit spec that does not parse.
pub fn function_probe(pattern: &str, ret: bool) -> Result<String> {
    let explicit = pattern
        .split_once(':')
        .is_some_and(|(head, _)| <dyn Kind>::named(head).is_some());
    if explicit {
        ProbeSpec::parse(pattern)?;
        return Ok(pattern.to_string());
    }
    Ok(match (pattern.contains(':'), ret) {
        (true, false) => format!("uprobe:{pattern}"),
        (true, true) => format!("uretprobe:{pattern}"),
        (false, false) => format!("kprobe:{pattern}"),
        (false, true) => format!("kretprobe:{pattern}"),
    })
}

#[cfg(test)]
mod tests;
