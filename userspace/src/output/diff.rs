//! Two profiles compared (`tracekit diff`): each read as folded stacks from tracekit's
//! JSON, a folded file, or a pprof profile ([`read_folded`]); the functions whose share of
//! the samples grew and shrank most ([`changes`], [`render_table`]). The differential flame
//! graph itself is inferno's ([`super::flamegraph::differential_lines`]).

use std::{collections::HashMap, fmt::Write as _, path::Path};

use super::{pprof, saved};
use crate::{Error, Result, error::quote, stacks};

/// A profile as `diff` takes it: folded stacks, and their unit when the file says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Folded {
    /// `comm;outer;...;leaf` with counts, as [`crate::stacks::fold`] makes them.
    pub stacks: Vec<(String, u64)>,
    /// What a count is (`samples`, `us`, `events`); `None` for folded files, which do not
    /// say.
    pub unit: Option<String>,
}

/// Reads `bytes` (from `path`, which errors name) as tracekit JSON, pprof (gzipped or not)
/// or folded stacks, told apart by content. Usage errors name the file and what is wrong.
pub fn read_folded(bytes: &[u8], path: &Path) -> Result<Folded> {
    let name = quote(&path.to_string_lossy());
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace()).copied();
    match first {
        None => Err(Error::usage(format!("{name}: empty; give a profile"))),
        Some(b'{') => {
            let kind = saved::kind(bytes, path)?;
            if kind != saved::SavedKind::Profile {
                return Err(Error::usage(format!(
                    "{name}: holds a {}; diff compares profiles (stacks with counts)",
                    kind.name()
                )));
            }
            let saved = saved::parse(bytes, path)?;
            Ok(Folded {
                stacks: stacks::fold(&saved.profile.stacks),
                unit: Some(saved.unit),
            })
        }
        _ if bytes.starts_with(&[0x1f, 0x8b]) => {
            let profile = pprof::decode(bytes).map_err(|err| {
                Error::usage(format!("{name}: gzipped but not a pprof profile: {err}"))
            })?;
            from_pprof(&profile, &name)
        }
        _ => parse_folded(bytes, &name),
    }
}

fn parse_folded(bytes: &[u8], name: &str) -> Result<Folded> {
    let text = std::str::from_utf8(bytes).map_err(|_| {
        Error::usage(format!(
            "{name}: not text; give tracekit JSON, folded stacks or a pprof profile"
        ))
    })?;
    let mut stacks: Vec<(String, u64)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed = line
            .rsplit_once(' ')
            .and_then(|(path, count)| Some((path, count.trim().parse::<u64>().ok()?)));
        let Some((path, count)) = parsed else {
            return Err(Error::usage(format!(
                "{name}:{}: not a folded stack line (`frame;frame;... COUNT`); give tracekit \
                 JSON, folded stacks or a pprof profile",
                i + 1
            )));
        };
        stacks.push((path.to_string(), count));
    }
    Ok(Folded { stacks, unit: None })
}

/// Folded stacks of a pprof profile, by its first sample value (`samples` for CPU
/// profiles); the root frame is the `comm` label where samples have one.
fn from_pprof(profile: &pprof::proto::Profile, name: &str) -> Result<Folded> {
    let strings = &profile.string_table;
    let string = |i: i64| strings.get(i as usize).map_or("", String::as_str);
    let value_type = profile
        .sample_type
        .first()
        .ok_or_else(|| Error::usage(format!("{name}: a pprof profile without sample types")))?;
    let unit = match (string(value_type.r#type), string(value_type.unit)) {
        ("samples", "count") => "samples".to_string(),
        ("offcpu", "nanoseconds") => "us".to_string(),
        ("events", "count") => "events".to_string(),
        (kind, unit) => format!("{kind}/{unit}"),
    };
    let scale = if unit == "us" { 1000 } else { 1 };
    let functions: HashMap<u64, &str> = profile
        .function
        .iter()
        .map(|f| (f.id, string(f.name)))
        .collect();
    let locations: HashMap<u64, &pprof::proto::Location> =
        profile.location.iter().map(|l| (l.id, l)).collect();
    let kernel_mappings: Vec<u64> = profile
        .mapping
        .iter()
        .filter(|m| string(m.filename) == crate::stacks::KERNEL_MODULE)
        .map(|m| m.id)
        .collect();
    let mut folded: HashMap<String, u64> = HashMap::new();
    for sample in &profile.sample {
        let comm = sample
            .label
            .iter()
            .find(|l| string(l.key) == "comm")
            .map_or("[unknown]", |l| string(l.str));
        let mut path = vec![comm.to_string()];
        for id in sample.location_id.iter().rev() {
            let Some(location) = locations.get(id) else {
                return Err(Error::usage(format!(
                    "{name}: a sample names location {id}, which the profile lacks"
                )));
            };
            let kernel = kernel_mappings.contains(&location.mapping_id);
            // Lines go innermost first; folded stacks outermost first.
            for line in location.line.iter().rev() {
                let function = functions.get(&line.function_id).copied().unwrap_or("");
                let function = if function.is_empty() {
                    crate::stacks::UNKNOWN_SYMBOL
                } else {
                    function
                };
                path.push(if kernel {
                    format!("{function}_[k]")
                } else {
                    function.replace(';', ":")
                });
            }
        }
        let count = sample.value.first().copied().unwrap_or(0).max(0) as u64 / scale;
        *folded.entry(path.join(";")).or_default() += count;
    }
    let mut stacks: Vec<(String, u64)> = folded.into_iter().collect();
    stacks.sort();
    Ok(Folded {
        stacks,
        unit: Some(unit),
    })
}

/// Refuses to compare profiles whose units differ (when both files say).
pub fn check_units(before: (&Folded, &Path), after: (&Folded, &Path)) -> Result<()> {
    if let (Some(a), Some(b)) = (&before.0.unit, &after.0.unit)
        && a != b
    {
        return Err(Error::usage(format!(
            "{} counts {a} but {} counts {b}; diff compares profiles of one unit",
            quote(&before.1.to_string_lossy()),
            quote(&after.1.to_string_lossy())
        )));
    }
    Ok(())
}

/// One function's shares of all samples before and after, in percent.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// The function as folded stacks name it (kernel functions end in `_[k]`).
    pub function: String,
    /// Share of the samples whose leaf it is, before.
    pub self_before: f64,
    /// Share of the samples whose leaf it is, after.
    pub self_after: f64,
    /// Share of the samples it is anywhere on the stack of, before.
    pub total_before: f64,
    /// Share of the samples it is anywhere on the stack of, after.
    pub total_after: f64,
}

impl Change {
    /// The change of its self share, in percentage points.
    pub fn self_delta(&self) -> f64 {
        self.self_after - self.self_before
    }
}

/// Self and total shares per function: (self, total) by function, and the samples in all.
fn shares(folded: &[(String, u64)]) -> (HashMap<&str, (u64, u64)>, u64) {
    let mut by_function: HashMap<&str, (u64, u64)> = HashMap::new();
    let mut all = 0;
    for (path, count) in folded {
        all += count;
        // The first element is the process name, not a function.
        let frames: Vec<&str> = path.split(';').skip(1).collect();
        if let Some(leaf) = frames.last() {
            by_function.entry(leaf).or_default().0 += count;
        }
        let mut seen: Vec<&str> = Vec::with_capacity(frames.len());
        for frame in frames {
            if !seen.contains(&frame) {
                seen.push(frame);
                by_function.entry(frame).or_default().1 += count;
            }
        }
    }
    (by_function, all)
}

/// Every function of either profile with its shares, the largest self-share change first
/// (ties by name).
pub fn changes(before: &[(String, u64)], after: &[(String, u64)]) -> Vec<Change> {
    let (b, b_all) = shares(before);
    let (a, a_all) = shares(after);
    let pct = |n: u64, all: u64| {
        if all == 0 {
            0.0
        } else {
            100.0 * n as f64 / all as f64
        }
    };
    let mut names: Vec<&str> = b.keys().chain(a.keys()).copied().collect();
    names.sort_unstable();
    names.dedup();
    let mut changes: Vec<Change> = names
        .into_iter()
        .map(|name| {
            let (bs, bt) = b.get(name).copied().unwrap_or_default();
            let (as_, at) = a.get(name).copied().unwrap_or_default();
            Change {
                function: name.to_string(),
                self_before: pct(bs, b_all),
                self_after: pct(as_, a_all),
                total_before: pct(bt, b_all),
                total_after: pct(at, a_all),
            }
        })
        .collect();
    changes.sort_by(|x, y| {
        y.self_delta()
            .abs()
            .total_cmp(&x.self_delta().abs())
            .then_with(|| x.function.cmp(&y.function))
    });
    changes
}

/// The table `diff` prints: the `limit` functions whose self share grew most, then the
/// `limit` that shrank most, with their self and total shares before and after.
///
/// ```
/// use tracekit::output::diff::{changes, render_table};
/// let before = [("p;main;a".to_string(), 75), ("p;main;b".to_string(), 25)];
/// let after = [("p;main;a".to_string(), 25), ("p;main;b".to_string(), 75)];
/// let table = render_table(&changes(&before, &after), 5);
/// let rows: Vec<&str> = table.lines().collect();
/// assert_eq!(rows[1], "#  Change  Self before  Self after  Total before  Total after  Function");
/// assert_eq!(rows[2], "   +50.00       25.00%      75.00%        25.00%       75.00%  b");
/// assert_eq!(rows[5], "   -50.00       75.00%      25.00%        75.00%       25.00%  a");
/// ```
pub fn render_table(changes: &[Change], limit: usize) -> String {
    let mut out = String::new();
    let section = |out: &mut String, title: &str, rows: Vec<&Change>| {
        let _ = writeln!(out, "# {title}");
        let _ = writeln!(
            out,
            "# {:>7}  {:>11}  {:>10}  {:>12}  {:>11}  Function",
            "Change", "Self before", "Self after", "Total before", "Total after"
        );
        if rows.is_empty() {
            let _ = writeln!(out, "#  (none)");
        }
        for c in rows {
            let _ = writeln!(
                out,
                "{:>+9.2}  {:>10.2}%  {:>9.2}%  {:>11.2}%  {:>10.2}%  {}",
                c.self_delta(),
                c.self_before,
                c.self_after,
                c.total_before,
                c.total_after,
                c.function
            );
        }
    };
    let grew: Vec<&Change> = changes
        .iter()
        .filter(|c| c.self_delta() > 0.0)
        .take(limit)
        .collect();
    let shrank: Vec<&Change> = changes
        .iter()
        .filter(|c| c.self_delta() < 0.0)
        .take(limit)
        .collect();
    section(
        &mut out,
        "Grew most (shares of all samples; change: self share after minus before, in points):",
        grew,
    );
    section(&mut out, "Shrank most:", shrank);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(text: &str) -> Result<Folded> {
        read_folded(text.as_bytes(), Path::new("x.folded"))
    }

    #[test]
    fn reads_folded_and_names_bad_lines() {
        assert_eq!(
            folded("p;main;a 3\n\np;main;b c 4\n").unwrap().stacks,
            [("p;main;a".into(), 3), ("p;main;b c".into(), 4)]
        );
        assert_eq!(
            folded("p;main;a 3\np;main;b\n").unwrap_err().to_string(),
            "x.folded:2: not a folded stack line (`frame;frame;... COUNT`); give tracekit \
             JSON, folded stacks or a pprof profile"
        );
        assert_eq!(
            folded("  \n").unwrap_err().to_string(),
            "x.folded: empty; give a profile"
        );
    }

    #[test]
    fn reads_our_pprof_back_as_folded() {
        use crate::stacks::{Frame, Stack};
        let stacks = [Stack {
            pid: 1,
            comm: "p".into(),
            cgroup: None,
            frames: vec![Frame::user("main", None), Frame::kernel("do_syscall_64")],
            count: 4,
            time_slice: None,
        }];
        let options = pprof::PprofOptions::new(
            pprof::SampleKind::Cpu { hz: 99 },
            std::time::UNIX_EPOCH,
            std::time::Duration::from_secs(1),
        );
        let bytes = pprof::encode(&pprof::build(&stacks, &options));
        let back = read_folded(&bytes, Path::new("x.pb.gz")).unwrap();
        // Without addresses there is no kernel mapping: the suffix is lost, the rest kept.
        assert_eq!(back.stacks, [("p;main;do_syscall_64".into(), 4)]);
        assert_eq!(back.unit.as_deref(), Some("samples"));
    }

    #[test]
    fn shares_count_each_function_once_per_stack() {
        let before = [("p;main;f;f".to_string(), 50), ("p;main;g".to_string(), 50)];
        let after = [("p;main;g".to_string(), 10)];
        let c = changes(&before, &after);
        let f = c.iter().find(|c| c.function == "f").unwrap();
        assert_eq!(
            (f.self_before, f.total_before, f.self_after),
            (50.0, 50.0, 0.0)
        );
        let main = c.iter().find(|c| c.function == "main").unwrap();
        assert_eq!((main.total_before, main.total_after), (100.0, 100.0));
        assert_eq!(c[0].self_delta().abs(), 50.0);
    }
}
