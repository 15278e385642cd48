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
//! Probe specs (`KIND:TARGET`) are parsed by `engine::kinds`, whose table names every kind.
//! Tracepoint names may hold `*` and `?` wildcards, expanded here against the kernel's
//! tracepoints.

use std::{fs, path::Path};

pub mod btf_path;
pub mod fields;
pub mod filter;
pub mod functions;
pub mod pointers;
pub mod raw_btf;
pub mod tracefs;
pub mod usdt;

use crate::{Error, Result, error::quote};

/// The longest probe spec, in bytes: room for a binary's path of `PATH_MAX` (4096) bytes
/// and a long C++ symbol.
pub const MAX_PROBE_BYTES: usize = 8192;

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

/// The tracepoints `pattern` names, as [`expand_tracepoints`] over [`all_tracepoints`]
/// finds them, listing every tracepoint (a stat of each of ~2,000 format files) only when
/// `pattern` is not one existing name: for wildcards and to suggest near names. `all`
/// keeps that listing for the caller's next pattern.
///
/// # Errors
/// As [`expand_tracepoints`] and [`all_tracepoints`].
pub fn find_tracepoints(
    tracefs: &Path,
    pattern: &str,
    all: &mut Option<Vec<Tracepoint>>,
) -> Result<Vec<Tracepoint>> {
    if let Some(tp) = exact_tracepoint(tracefs, pattern) {
        return Ok(vec![tp]);
    }
    let all = match all {
        Some(all) => all,
        None => all.insert(all_tracepoints(tracefs)?),
    };
    expand_tracepoints(pattern, all)
}

/// `pattern` as the one tracepoint it names, when it has no wildcard and its format file
/// is under `tracefs` (as [`all_tracepoints`] would list it).
fn exact_tracepoint(tracefs: &Path, pattern: &str) -> Option<Tracepoint> {
    let (system, event) = pattern.split_once(':')?;
    let plain = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    (plain(system)
        && plain(event)
        && tracefs
            .join("events")
            .join(system)
            .join(event)
            .join("format")
            .is_file())
    .then(|| Tracepoint {
        system: system.to_string(),
        event: event.to_string(),
    })
}

/// The tracepoints `pattern` (`system:event`, wildcards allowed) names. Unknown names and
/// wildcards matching nothing are usage errors that suggest near names.
pub fn expand_tracepoints(pattern: &str, all: &[Tracepoint]) -> Result<Vec<Tracepoint>> {
    let (system, event) = pattern.split_once(':').unwrap_or((pattern, ""));
    // A name without wildcards needs no glob walk (which allocates): `stat` passes each of
    // the 360 `syscalls:sys_enter_*` it expanded to the engine by name.
    let literal = !pattern.contains(['*', '?']);
    let matched: Vec<Tracepoint> = all
        .iter()
        .filter(|tp| {
            if literal {
                tp.system == system && tp.event == event
            } else {
                glob_match(system, &tp.system) && glob_match(event, &tp.event)
            }
        })
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

    fn tp(system: &str, event: &str) -> Tracepoint {
        Tracepoint {
            system: system.into(),
            event: event.into(),
        }
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
