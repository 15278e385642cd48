//! Which Linux capabilities this process holds, and the one-line error when one is missing.
//!
//! Loading BPF programs needs `CAP_BPF` and attaching them to perf events and tracepoints
//! needs `CAP_PERFMON` (kernel 5.8+; `CAP_SYS_ADMIN` implies both, as it did alone before
//! 5.8). Checking up front turns the kernel's bare `EPERM` into a message that names the
//! missing privilege.

use std::fs;

use crate::{Error, Result};

/// A capability number from `include/uapi/linux/capability.h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capability {
    /// `CAP_SYS_ADMIN` (21).
    SysAdmin = 21,
    /// `CAP_PERFMON` (38).
    Perfmon = 38,
    /// `CAP_BPF` (39).
    Bpf = 39,
}

impl Capability {
    /// The capability's name as `capabilities(7)` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::SysAdmin => "CAP_SYS_ADMIN",
            Self::Perfmon => "CAP_PERFMON",
            Self::Bpf => "CAP_BPF",
        }
    }
}

/// The effective capability set (`CapEff` in `/proc/self/status`) as a bit mask.
pub fn effective() -> Result<u64> {
    let status = fs::read_to_string("/proc/self/status")
        .map_err(|err| Error::runtime(format!("reading /proc/self/status: {err}")))?;
    parse_cap_eff(&status).ok_or_else(|| Error::runtime("no CapEff line in /proc/self/status"))
}

fn parse_cap_eff(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
}

/// The capabilities among `CAP_BPF` and `CAP_PERFMON` that a capability mask lacks
/// (`CAP_SYS_ADMIN` stands in for both).
pub fn missing_for_tracing(mask: u64) -> Vec<Capability> {
    let has = |cap: Capability| mask & (1 << cap as u64) != 0;
    if has(Capability::SysAdmin) {
        return Vec::new();
    }
    [Capability::Bpf, Capability::Perfmon]
        .into_iter()
        .filter(|&cap| !has(cap))
        .collect()
}

/// Fails with [`Error::Privilege`] naming what is missing when this process cannot load and
/// attach BPF tracing programs. `command` names the subcommand in the message.
pub fn require_tracing(command: &str) -> Result<()> {
    let missing = missing_for_tracing(effective()?);
    if missing.is_empty() {
        return Ok(());
    }
    let names: Vec<_> = missing.iter().map(|cap| cap.name()).collect();
    Err(Error::Privilege(format!(
        "tracekit {command} needs {} to load and attach BPF programs; \
         run it as root or grant them (setcap cap_bpf,cap_perfmon+ep)",
        names.join(" and ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cap_eff() {
        let status = "Name:\tcat\nCapInh:\t0000000000000000\nCapEff:\t000001fffeffffff\n";
        assert_eq!(parse_cap_eff(status), Some(0x1fffeffffff));
    }

    #[test]
    fn root_misses_nothing_and_nobody_misses_both() {
        assert!(missing_for_tracing(0x1fffeffffff).is_empty());
        assert_eq!(
            missing_for_tracing(0),
            vec![Capability::Bpf, Capability::Perfmon]
        );
        assert_eq!(
            missing_for_tracing(1 << 39),
            vec![Capability::Perfmon],
            "CAP_BPF alone"
        );
        assert!(
            missing_for_tracing(1 << 21).is_empty(),
            "CAP_SYS_ADMIN alone"
        );
    }
}
