//! What can be traced and how a user names it: probe specs, tracepoints and their format
//! files, the fields each event offers, kernel and user functions, and the filter language.
//! Nothing here loads BPF; the engine builds on it.
//!
//! - [`tracefs`]: mounting tracefs, tracepoint format files;
//! - [`fields`]: the names an event offers to `--value`, `--by`, `--filter`, `--print`;
//! - [`functions`]: kernel functions (traceable list, BTF prototypes), user functions
//!   (binary resolution, symbol offsets);
//! - [`filter`]: the perf/ftrace filter language, parsed;
//! - [`usdt`]: USDT probe sites and their argument specs, from ELF notes.
//!
//! Probe specs: `KIND:TARGET`, where KIND is one of [`KINDS`] (bpftrace's names and aliases), or perf's
//! `SYSTEM:EVENT` for a tracepoint. Tracepoint names may hold `*` and `?` wildcards, expanded
//! against the kernel's tracepoints. The kind table is data; kinds this version cannot attach
//! yet parse and then say so. A spec is at most [`MAX_PROBE_BYTES`] long; errors quote at
//! most 80 characters of it ([`crate::error::quote`]).

use std::{fs, path::Path};

pub mod fields;
pub mod filter;
pub mod functions;
pub mod tracefs;
pub mod usdt;

use crate::{Error, Result, error::quote};

/// The longest probe spec, in bytes: room for a binary's path of `PATH_MAX` (4096) bytes
/// and a long C++ symbol.
pub const MAX_PROBE_BYTES: usize = 8192;

/// A kind of probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProbeKind {
    /// A static tracepoint (`include/trace/events/`), record fields from its format file.
    Tracepoint,
    /// A raw tracepoint: the tracepoint's `TP_PROTO` arguments, no record built.
    RawTracepoint,
    /// Kernel function entry, through kprobes.
    Kprobe,
    /// Kernel function return, through kretprobes.
    Kretprobe,
    /// Kernel function entry, through BPF trampolines.
    Fentry,
    /// Kernel function return, through BPF trampolines.
    Fexit,
    /// User function entry.
    Uprobe,
    /// User function return.
    Uretprobe,
    /// A USDT probe site (`<sys/sdt.h>`), a uprobe whose arguments the ELF note describes.
    Usdt,
    /// A software perf event (`page-faults`, `context-switches`, ...).
    Software,
    /// A hardware perf event (`cycles`, `instructions`, ...).
    Hardware,
}

/// Every probe kind with its names, the canonical one first (bpftrace's `probe_types.h`).
pub const KINDS: &[(ProbeKind, &[&str])] = &[
    (ProbeKind::Tracepoint, &["tracepoint", "t"]),
    (ProbeKind::RawTracepoint, &["rawtracepoint", "rt"]),
    (ProbeKind::Kprobe, &["kprobe", "k"]),
    (ProbeKind::Kretprobe, &["kretprobe", "kr"]),
    (ProbeKind::Fentry, &["fentry", "f", "kfunc"]),
    (ProbeKind::Fexit, &["fexit", "fr", "kretfunc"]),
    (ProbeKind::Uprobe, &["uprobe", "u"]),
    (ProbeKind::Uretprobe, &["uretprobe", "ur"]),
    (ProbeKind::Usdt, &["usdt", "U"]),
    (ProbeKind::Software, &["software", "s"]),
    (ProbeKind::Hardware, &["hardware", "h"]),
];

impl ProbeKind {
    /// The canonical name (`tracepoint`).
    pub fn name(self) -> &'static str {
        KINDS
            .iter()
            .find(|(kind, _)| *kind == self)
            .map(|(_, names)| names[0])
            .expect("every kind is in KINDS")
    }
}

/// A parsed probe spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeSpec {
    /// The kind.
    pub kind: ProbeKind,
    /// What follows the kind (`block:block_rq_issue`, `vfs_read`, `/bin/bash:readline`).
    pub target: String,
    /// The spec as written, for messages.
    pub text: String,
}

impl ProbeSpec {
    /// Parses `KIND:TARGET` or perf's `SYSTEM:EVENT`.
    ///
    /// ```
    /// use tracekit::probe::{ProbeKind, ProbeSpec};
    /// let spec = ProbeSpec::parse("t:block:block_rq_issue").unwrap();
    /// assert_eq!((spec.kind, spec.target.as_str()), (ProbeKind::Tracepoint, "block:block_rq_issue"));
    /// assert_eq!(ProbeSpec::parse("block:block_rq_issue").unwrap(), ProbeSpec {
    ///     kind: ProbeKind::Tracepoint,
    ///     target: "block:block_rq_issue".into(),
    ///     text: "block:block_rq_issue".into(),
    /// });
    /// ```
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
        let kind = KINDS
            .iter()
            .find(|(_, names)| names.contains(&head))
            .map(|(kind, _)| *kind);
        let (kind, target) = match kind {
            Some(kind) => (kind, rest),
            // perf's SYSTEM:EVENT: exactly two parts.
            None if !rest.contains(':') => (ProbeKind::Tracepoint, text),
            None => {
                let valid: Vec<String> = KINDS
                    .iter()
                    .map(|(_, names)| format!("{} ({})", names[0], names[1..].join(", ")))
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
        if kind == ProbeKind::Tracepoint {
            let parts: Vec<&str> = target.split(':').collect();
            if parts.len() != 2 || parts.iter().any(|p| p.is_empty()) {
                return Err(Error::usage(format!(
                    "probe `{}`: a tracepoint is SYSTEM:EVENT, e.g. tracepoint:block:block_rq_issue",
                    quote(text)
                )));
            }
        }
        Ok(Self {
            kind,
            target: target.to_string(),
            text: text.to_string(),
        })
    }
}

/// The probe spec for a function pattern, as bcc's `funccount`/`funclatency` take them:
/// explicit specs (`k:FUNC`, `u:BIN:FUNC`) as they are; `BINARY:FUNC` a user function;
/// anything else a kernel function. `ret` asks for the return probe.
///
/// ```
/// use tracekit::probe::function_probe;
/// assert_eq!(function_probe("vfs_*", false).unwrap(), "kprobe:vfs_*");
/// assert_eq!(function_probe("libc:malloc", true).unwrap(), "uretprobe:libc:malloc");
/// ```
pub fn function_probe(pattern: &str, ret: bool) -> Result<String> {
    let explicit = pattern
        .split_once(':')
        .is_some_and(|(head, _)| KINDS.iter().any(|(_, n)| n.contains(&head)));
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

/// A tracepoint, `system:event`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tracepoint {
    /// The subsystem (`block`).
    pub system: String,
    /// The event (`block_rq_issue`).
    pub event: String,
}

impl std::fmt::Display for Tracepoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.system, self.event)
    }
}

/// Every tracepoint under the tracefs root, sorted.
pub fn all_tracepoints(tracefs: &Path) -> Result<Vec<Tracepoint>> {
    let events = tracefs.join("events");
    let read = |dir: &Path| {
        fs::read_dir(dir).map_err(|err| Error::runtime(format!("listing {}: {err}", dir.display())))
    };
    let mut all = Vec::new();
    for system in read(&events)? {
        let system = system.map_err(|err| Error::runtime(format!("listing tracepoints: {err}")))?;
        if !system.path().is_dir() {
            continue;
        }
        let system_name = system.file_name().to_string_lossy().into_owned();
        for event in read(&system.path())?.flatten() {
            if event.path().join("format").is_file() {
                all.push(Tracepoint {
                    system: system_name.clone(),
                    event: event.file_name().to_string_lossy().into_owned(),
                });
            }
        }
    }
    all.sort();
    Ok(all)
}

/// The tracepoints `pattern` (`system:event`, wildcards allowed) names. Unknown names and
/// wildcards matching nothing are usage errors that suggest near names.
pub fn expand_tracepoints(pattern: &str, all: &[Tracepoint]) -> Result<Vec<Tracepoint>> {
    let (system, event) = pattern.split_once(':').unwrap_or((pattern, ""));
    let matched: Vec<Tracepoint> = all
        .iter()
        .filter(|tp| glob_match(system, &tp.system) && glob_match(event, &tp.event))
        .cloned()
        .collect();
    if !matched.is_empty() {
        return Ok(matched);
    }
    let names: Vec<String> = all.iter().map(ToString::to_string).collect();
    let near = nearest(&pattern.replace(['*', '?'], ""), &names, 3);
    let what = if pattern.contains(['*', '?']) {
        format!(
            "tracepoint pattern `{}` matches no tracepoint",
            quote(pattern)
        )
    } else {
        format!("unknown tracepoint `{}`", quote(pattern))
    };
    Err(Error::usage(if near.is_empty() {
        format!("{what} (`tracekit list` shows them)")
    } else {
        format!("{what}; did you mean {}?", near.join(", "))
    }))
}

/// Shell-style match of `*` (any run) and `?` (any one character).
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Up to `limit` of `candidates` nearest to `wanted`: names containing it first, then by
/// edit distance (at most a third of the name's length).
pub fn nearest(wanted: &str, candidates: &[String], limit: usize) -> Vec<String> {
    let most = wanted.len().max(3) / 3;
    let wanted_chars = wanted.chars().count();
    let mut scored: Vec<(usize, &String)> = candidates
        .iter()
        .filter_map(|candidate| {
            if !wanted.is_empty() && candidate.contains(wanted) {
                return Some((0, candidate));
            }
            // The distance is at least the difference in length: a long input costs no
            // edit distances (a 100 KiB name against 60,000 kernel functions would take
            // minutes).
            if wanted_chars.abs_diff(candidate.chars().count()) > most {
                return None;
            }
            let distance = edit_distance(wanted, candidate);
            (distance <= most).then_some((distance, candidate))
        })
        .collect();
    scored.sort();
    scored
        .into_iter()
        .take(limit)
        .map(|(_, c)| format!("`{c}`"))
        .collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let current = row[j + 1];
            row[j + 1] = (previous + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(current + 1);
            previous = current;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_to_probes() {
        assert_eq!(function_probe("vfs_*", false).unwrap(), "kprobe:vfs_*");
        assert_eq!(
            function_probe("vfs_read", true).unwrap(),
            "kretprobe:vfs_read"
        );
        assert_eq!(
            function_probe("libc:malloc", false).unwrap(),
            "uprobe:libc:malloc"
        );
        assert_eq!(
            function_probe("/bin/app:f", true).unwrap(),
            "uretprobe:/bin/app:f"
        );
        assert_eq!(function_probe("f:vfs_read", false).unwrap(), "f:vfs_read");
        assert_eq!(function_probe("u:libc:free", false).unwrap(), "u:libc:free");
    }

    fn tp(system: &str, event: &str) -> Tracepoint {
        Tracepoint {
            system: system.into(),
            event: event.into(),
        }
    }

    #[test]
    fn parses_kinds_aliases_and_perf_form() {
        for (text, kind, target) in [
            (
                "tracepoint:block:block_rq_issue",
                ProbeKind::Tracepoint,
                "block:block_rq_issue",
            ),
            (
                "t:syscalls:sys_enter_*",
                ProbeKind::Tracepoint,
                "syscalls:sys_enter_*",
            ),
            (
                "block:block_rq_complete",
                ProbeKind::Tracepoint,
                "block:block_rq_complete",
            ),
            ("k:vfs_read", ProbeKind::Kprobe, "vfs_read"),
            ("kr:vfs_read", ProbeKind::Kretprobe, "vfs_read"),
            (
                "uprobe:/bin/bash:readline",
                ProbeKind::Uprobe,
                "/bin/bash:readline",
            ),
            ("rt:sys_enter", ProbeKind::RawTracepoint, "sys_enter"),
            (
                "usdt:postgres:transaction__commit",
                ProbeKind::Usdt,
                "postgres:transaction__commit",
            ),
            ("U:libc:libc:setjmp", ProbeKind::Usdt, "libc:libc:setjmp"),
        ] {
            let spec = ProbeSpec::parse(text).unwrap();
            assert_eq!((spec.kind, spec.target.as_str()), (kind, target), "{text}");
        }
    }

    #[test]
    fn refuses_malformed_specs() {
        assert_eq!(
            ProbeSpec::parse("block").unwrap_err().to_string(),
            "probe `block`: expected KIND:TARGET (e.g. tracepoint:block:block_rq_issue) \
             or SYSTEM:EVENT (e.g. block:block_rq_issue)"
        );
        assert!(
            ProbeSpec::parse("foo:bar:baz")
                .unwrap_err()
                .to_string()
                .starts_with(
                    "probe `foo:bar:baz`: unknown probe type `foo`; valid: tracepoint (t), "
                )
        );
        assert_eq!(
            ProbeSpec::parse("t:block").unwrap_err().to_string(),
            "probe `t:block`: a tracepoint is SYSTEM:EVENT, e.g. tracepoint:block:block_rq_issue"
        );
    }

    #[test]
    fn expands_wildcards_and_suggests() {
        let all = [
            tp("block", "block_rq_complete"),
            tp("block", "block_rq_issue"),
            tp("syscalls", "sys_enter_read"),
            tp("syscalls", "sys_exit_read"),
        ];
        assert_eq!(
            expand_tracepoints("block:block_rq_*", &all).unwrap(),
            [
                tp("block", "block_rq_complete"),
                tp("block", "block_rq_issue")
            ]
        );
        assert_eq!(
            expand_tracepoints("block:block_rq_isue", &all)
                .unwrap_err()
                .to_string(),
            "unknown tracepoint `block:block_rq_isue`; did you mean `block:block_rq_issue`?"
        );
        assert_eq!(
            expand_tracepoints("net:*", &all).unwrap_err().to_string(),
            "tracepoint pattern `net:*` matches no tracepoint (`tracekit list` shows them)"
        );
    }

    #[test]
    fn globs() {
        assert!(glob_match("sys_enter_*", "sys_enter_read"));
        assert!(glob_match("*W*", "WS"));
        assert!(glob_match("b?ock", "block"));
        assert!(!glob_match("sys_enter_*", "sys_exit_read"));
        assert!(glob_match("*", ""));
    }
}
