//! Stack profiles in speedscope's file format (`.speedscope.json`,
//! <https://www.speedscope.app/file-format-schema.json>): one `sampled` profile per
//! process, busiest first, over one shared frame table. Each distinct stack is one sample,
//! outermost frame first, weighted by its count: CPU samples in nanoseconds (count ×
//! `1e9 / HZ`), off-CPU time in microseconds, events unitless.

use std::{collections::HashMap, io};

use serde_json::{Value, json};

use super::profile::Header;
use crate::{
    cpu_sampler::SymbolizedProfile,
    stacks::{FrameKind, Stack},
};

/// Writes `profile` as a speedscope file.
pub fn write(
    out: &mut dyn io::Write,
    profile: &SymbolizedProfile,
    header: &Header<'_>,
) -> io::Result<()> {
    serde_json::to_writer(&mut *out, &document(profile, header))?;
    writeln!(out)
}

/// The unit speedscope shows and the weight of one count in it.
fn unit(header: &Header<'_>) -> (&'static str, u64) {
    match (header.tool, header.hz) {
        ("offcpu", _) => ("microseconds", 1),
        (_, Some(hz)) => ("nanoseconds", 1_000_000_000 / hz.max(1)),
        _ => ("none", 1),
    }
}

fn document(profile: &SymbolizedProfile, header: &Header<'_>) -> Value {
    let (unit, per_count) = unit(header);
    let mut frames: Vec<Value> = Vec::new();
    let mut frame_index: HashMap<(&str, Option<&str>, FrameKind), usize> = HashMap::new();
    let mut by_process: Vec<(u32, &str, Vec<&Stack>)> = Vec::new();
    let mut process_at: HashMap<u32, usize> = HashMap::new();
    for stack in &profile.stacks {
        let at = *process_at.entry(stack.pid).or_insert_with(|| {
            by_process.push((stack.pid, &stack.comm, Vec::new()));
            by_process.len() - 1
        });
        by_process[at].2.push(stack);
    }
    let total = |stacks: &[&Stack]| stacks.iter().map(|s| s.count).sum::<u64>();
    by_process.sort_by(|a, b| total(&b.2).cmp(&total(&a.2)).then(a.0.cmp(&b.0)));
    let profiles: Vec<Value> = by_process
        .iter()
        .map(|(pid, comm, stacks)| {
            // Slices of the same stack become one sample.
            let mut merged: Vec<(Vec<usize>, u64)> = Vec::new();
            let mut seen: HashMap<Vec<usize>, usize> = HashMap::new();
            for stack in stacks {
                let ids: Vec<usize> = stack
                    .frames
                    .iter()
                    .map(|frame| {
                        let key = (frame.symbol.as_str(), frame.module.as_deref(), frame.kind);
                        *frame_index.entry(key).or_insert_with(|| {
                            let name = match frame.kind {
                                FrameKind::Kernel => format!("{} [k]", frame.symbol),
                                FrameKind::User => frame.symbol.clone(),
                            };
                            let mut entry = json!({ "name": name });
                            if let Some(module) = &frame.module {
                                entry["file"] = json!(module);
                            }
                            frames.push(entry);
                            frames.len() - 1
                        })
                    })
                    .collect();
                match seen.get(&ids) {
                    Some(&at) => merged[at].1 += stack.count,
                    None => {
                        seen.insert(ids.clone(), merged.len());
                        merged.push((ids, stack.count));
                    }
                }
            }
            let weights: Vec<u64> = merged.iter().map(|(_, c)| c * per_count).collect();
            json!({
                "type": "sampled",
                "name": format!("{comm} (pid {pid})"),
                "unit": unit,
                "startValue": 0,
                "endValue": weights.iter().sum::<u64>(),
                "samples": merged.iter().map(|(ids, _)| ids).collect::<Vec<_>>(),
                "weights": weights,
            })
        })
        .collect();
    json!({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "name": header.title(),
        "exporter": format!("tracekit {}", env!("CARGO_PKG_VERSION")),
        "activeProfileIndex": 0,
        "shared": { "frames": frames },
        "profiles": profiles,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stacks::Frame;

    #[test]
    fn one_sampled_profile_per_process_busiest_first() {
        let stack = |pid, leaf: &str, count| Stack {
            pid,
            comm: format!("p{pid}"),
            cgroup: None,
            frames: vec![
                Frame::user("main", Some("/bin/p")),
                Frame::user(leaf, Some("/bin/p")),
            ],
            count,
            time_slice: Some(1),
        };
        let profile = SymbolizedProfile {
            stacks: vec![
                stack(1, "a", 1),
                stack(2, "b", 3),
                stack(2, "b", 2),
                stack(2, "c", 1),
            ],
            ..SymbolizedProfile::default()
        };
        let header = Header {
            hz: Some(100),
            ..Header::new("profile", "cpu-clock", "samples", "-a")
        };
        let doc = document(&profile, &header);
        // Frames are numbered as the busiest process first uses them.
        assert_eq!(
            doc["shared"]["frames"],
            json!([
                {"name": "main", "file": "/bin/p"},
                {"name": "b", "file": "/bin/p"},
                {"name": "c", "file": "/bin/p"},
                {"name": "a", "file": "/bin/p"},
            ])
        );
        assert_eq!(
            doc["profiles"][0],
            json!({
                "type": "sampled", "name": "p2 (pid 2)", "unit": "nanoseconds",
                "startValue": 0, "endValue": 60_000_000,
                "samples": [[0, 1], [0, 2]], "weights": [50_000_000, 10_000_000],
            })
        );
        assert_eq!(doc["profiles"][1]["name"], "p1 (pid 1)");
    }
}
