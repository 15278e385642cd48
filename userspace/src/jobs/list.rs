//! What can be traced here, as `perf list` shows it: hardware events (with whether this
//! machine counts them), software events, tracepoints, kernel functions, the USDT probes of a
//! binary or process (`bpftrace -l 'usdt:...'`); and the fields of a probe with their types.

use crate::{
    Error, Result,
    counters::{self, HARDWARE, PerfName, SOFTWARE},
    engine::kinds::ProbeSpec,
    probe::{
        self, functions, glob_match, tracefs,
        usdt::{self, ProbeSite, UsdtTarget},
    },
    procmaps,
};

/// What `list` reads of the machine: tracefs and the PMU ([`System`]); tests give it a
/// recorded tracefs tree.
pub trait ListSource {
    /// The tracefs mount (`events/SYSTEM/EVENT/format` below it).
    ///
    /// # Errors
    /// Why tracefs is not there.
    fn tracefs(&self) -> Result<std::path::PathBuf>;

    /// Whether this machine counts the hardware event `config` (`PERF_COUNT_HW_*`).
    fn hardware_supported(&self, config: u64) -> bool;

    /// The kernel functions tracefs lets kprobes attach to; `None` when it does not show
    /// them.
    fn kernel_functions(&self) -> Option<Vec<String>>;
}

/// This machine.
#[derive(Clone, Copy, Debug)]
pub struct System;

impl ListSource for System {
    fn tracefs(&self) -> Result<std::path::PathBuf> {
        tracefs::root()
    }

    fn hardware_supported(&self, config: u64) -> bool {
        counters::hardware_supported(config)
    }

    fn kernel_functions(&self) -> Option<Vec<String>> {
        functions::traceable_kernel_functions()
    }
}

fn line(out: &mut String, name: &str, kind: &str) {
    out.push_str(&format!("  {name:<50} [{kind}]\n"));
}

/// Which kinds of event to list: perf list's class words, or everything a glob matches.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    All,
    Hardware,
    Software,
    Tracepoint,
}

/// `perf list`: every event whose name matches `glob` (hardware, with whether this machine
/// counts it; software; tracepoints; kernel functions, where tracefs shows them), or one
/// class (`hw`/`hardware`, `sw`/`software`, `tracepoint`).
pub fn events(glob: Option<&str>) -> Result<String> {
    events_from(&System, glob)
}

/// [`events`] as `source` shows them.
pub fn events_from(source: &dyn ListSource, glob: Option<&str>) -> Result<String> {
    let (class, glob) = match glob {
        Some("hw" | "hardware") => (Class::Hardware, None),
        Some("sw" | "software") => (Class::Software, None),
        Some("tracepoint" | "tracepoints") => (Class::Tracepoint, None),
        other => (Class::All, other),
    };
    let listed = |c: Class| class == Class::All || class == c;
    let wanted = |name: &str| glob.is_none_or(|g| glob_match(g, name));
    let mut out =
        String::from("\nList of events (-e of stat, probes of the tracing commands):\n\n");
    for &PerfName { name, config, .. } in HARDWARE {
        if listed(Class::Hardware) && wanted(name) {
            let kind = if source.hardware_supported(config) {
                "Hardware event"
            } else {
                "Hardware event, not supported here"
            };
            line(&mut out, name, kind);
        }
    }
    for &PerfName { name, .. } in SOFTWARE {
        if listed(Class::Software) && wanted(name) {
            line(&mut out, name, "Software event");
        }
    }
    if listed(Class::Tracepoint) {
        match source
            .tracefs()
            .and_then(|root| probe::all_tracepoints(&root))
        {
            Ok(tracepoints) => {
                for tp in tracepoints
                    .iter()
                    .map(ToString::to_string)
                    .filter(|n| wanted(n))
                {
                    line(&mut out, &tp, "Tracepoint event");
                }
            }
            // Asked for tracepoints: say why there are none, as an error.
            Err(err) if class == Class::Tracepoint || glob.is_some_and(|g| g.contains(':')) => {
                return Err(err);
            }
            Err(err) => out.push_str(&format!("\n  (tracepoints are not listed: {err})\n")),
        }
    }
    // Kernel function names have no `:`; a `system:event` glob is about tracepoints.
    if class == Class::All && glob.is_none_or(|g| !g.contains(':')) {
        match source.kernel_functions() {
            Some(names) => match glob {
                Some(_) => {
                    for name in names.iter().filter(|n| wanted(n)) {
                        line(&mut out, name, "Kernel function");
                    }
                }
                None => out.push_str(&format!(
                    "\n  ({} traceable kernel functions; give a GLOB to list them, e.g. tracekit list 'vfs_*')\n",
                    names.len()
                )),
            },
            None => out.push_str(
                "\n  (kernel functions are not listed: this kernel does not let tracefs show \
                 available_filter_functions)\n",
            ),
        }
    }
    out.push('\n');
    Ok(out)
}

/// The fields of `probe` with their types (tracepoints: offsets and sizes too), as
/// `--value`, `--by`, `--filter` and `--print` take them.
///
/// # Errors
/// A usage error for a bad spec, or a probe kind without fields.
pub fn fields(text: &str, pid: Option<u32>) -> Result<String> {
    fields_from(&System, text, pid)
}

/// [`fields`] as `source` shows them.
pub fn fields_from(source: &dyn ListSource, text: &str, pid: Option<u32>) -> Result<String> {
    let spec = ProbeSpec::parse(text)?;
    spec.kind.fields(&spec, pid, &|| source.tracefs())
}

/// Whether a `list` argument asks for USDT probes (`usdt`, `usdt:BINARY...`, `U:...`).
pub fn is_usdt(glob: &str) -> bool {
    glob == "usdt" || glob.starts_with("usdt:") || glob.starts_with("U:")
}

/// The USDT probes `glob` names, with their argument specs (`bpftrace -l 'usdt:...'`):
/// `usdt:BINARY` (every probe of it), `usdt:BINARY[:PROVIDER]:NAME` (wildcards allowed), or
/// `usdt` with `pid`: the probes of every file the process maps. BINARY resolves as uprobes
/// resolve it (in `pid`'s maps first).
///
/// # Errors
/// Usage errors for a bad spec, a binary not found, or `usdt` without a pid; runtime errors
/// when a file cannot be read.
pub fn usdt_probes(glob: &str, pid: Option<u32>) -> Result<String> {
    let rest = glob
        .strip_prefix("usdt")
        .or_else(|| glob.strip_prefix('U'))
        .unwrap_or(glob);
    let rest = rest.strip_prefix(':').unwrap_or(rest);
    let mut out = String::new();
    if rest.is_empty() {
        let Some(pid) = pid else {
            return Err(Error::usage(
                "list usdt: name a binary (usdt:BINARY, e.g. usdt:postgres) or a process (-p PID)",
            ));
        };
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))
            .map_err(|err| Error::usage(format!("list usdt -p {pid}: no such process ({err})")))?;
        let mut files: Vec<std::path::PathBuf> = Vec::new();
        for vma in procmaps::parse_maps(&maps) {
            if let Some(path) = vma.path
                && !vma.deleted
                && !files.contains(&path)
            {
                files.push(path);
            }
        }
        for path in files {
            let readable = std::path::PathBuf::from(format!("/proc/{pid}/root{}", path.display()));
            // Data files mapped by the process are not ELF: they have no probes.
            let Ok(sites) = usdt::probes(&readable, None, None) else {
                continue;
            };
            write_sites(&mut out, &path.display().to_string(), &sites);
        }
        if out.is_empty() {
            out.push_str(&format!(
                "(no USDT probes in the files process {pid} maps)\n"
            ));
        }
        return Ok(out);
    }
    let (binary, sites) = match rest.split_once(':') {
        None => {
            let binary = functions::resolve_binary_for("USDT", rest, pid)?;
            let sites = usdt::probes(&binary, None, None)?;
            if sites.is_empty() {
                return Err(Error::usage(format!(
                    "{} has no USDT probes (no .note.stapsdt notes)",
                    binary.display()
                )));
            }
            (binary, sites)
        }
        Some(_) => {
            let target = UsdtTarget::parse(glob, rest)?;
            let binary = functions::resolve_binary_for("USDT", target.binary, pid)?;
            let sites = usdt::find(&binary, &target)?;
            (binary, sites)
        }
    };
    write_sites(&mut out, &binary.display().to_string(), &sites);
    Ok(out)
}

/// One line per probe of `sites` (all of one file, named `shown`): its spec, then how many
/// sites and whether it has a semaphore, then its argument specs (each distinct set, when
/// the sites differ).
fn write_sites(out: &mut String, shown: &str, sites: &[ProbeSite]) {
    let mut probes: Vec<(String, Vec<&ProbeSite>)> = Vec::new();
    for site in sites {
        let name = site.qualified_name();
        match probes.iter_mut().find(|(n, _)| *n == name) {
            Some((_, members)) => members.push(site),
            None => probes.push((name, vec![site])),
        }
    }
    for (name, members) in probes {
        let mut kind = String::from("USDT probe");
        if members.len() > 1 {
            kind.push_str(&format!(", {} sites", members.len()));
        }
        if members.iter().any(|s| s.semaphore.is_some()) {
            kind.push_str(", semaphore");
        }
        let mut specs: Vec<&str> = Vec::new();
        for site in &members {
            if !specs.contains(&site.arg_specs.as_str()) {
                specs.push(&site.arg_specs);
            }
        }
        let args = specs
            .iter()
            .map(|s| if s.is_empty() { "(no arguments)" } else { s })
            .collect::<Vec<_>>()
            .join(" | ");
        out.push_str(&format!(
            "  {:<50} [{kind}] {args}\n",
            format!("usdt:{shown}:{name}")
        ));
    }
}

#[cfg(test)]
mod tests;
