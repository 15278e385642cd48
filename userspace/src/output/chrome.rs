//! Stack profiles in Chrome's trace event format (`.trace.json`, the JSON object form of
//! <https://docs.google.com/document/d/1CvAClvFfyA5R-PAYUQJD8ZfcdWM_SGsh9qKXNP4JWU4>), which
//! chrome://tracing, Perfetto and speedscope open.
//!
//! A profile has no timeline of its own, so each process gets a flame chart: its stacks,
//! sorted by their folded path, laid end to end, and every frame one complete (`"ph": "X"`)
//! event spanning the stacks it is in. A count lasts `1e6 / HZ` µs for CPU samples, 1 µs
//! otherwise (off-CPU time is in µs already); so the outermost events of a process add up
//! to its samples × that length. Processes are named by metadata (`"ph": "M"`) events.

use std::io;

use serde_json::{Value, json};

use super::profile::Header;
use crate::{
    cpu_sampler::SymbolizedProfile,
    stacks::{self, FrameKind, Stack},
};

/// The length of one count in µs.
pub fn count_us(header: &Header<'_>) -> f64 {
    match (header.tool, header.hz) {
        ("offcpu", _) => 1.0,
        (_, Some(hz)) => 1e6 / hz.max(1) as f64,
        _ => 1.0,
    }
}

/// Writes `profile` as a trace event file.
pub fn write(
    out: &mut dyn io::Write,
    profile: &SymbolizedProfile,
    header: &Header<'_>,
) -> io::Result<()> {
    serde_json::to_writer(&mut *out, &document(profile, header))?;
    writeln!(out)
}

fn document(profile: &SymbolizedProfile, header: &Header<'_>) -> Value {
    let per_count = count_us(header);
    let mut pids: Vec<u32> = profile.stacks.iter().map(|s| s.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    let mut events = Vec::new();
    for pid in pids {
        let mut stacks: Vec<(String, &Stack)> = profile
            .stacks
            .iter()
            .filter(|s| s.pid == pid)
            .map(|s| (stacks::folded_path(s), s))
            .collect();
        stacks.sort_by(|a, b| a.0.cmp(&b.0));
        let comm = &stacks[0].1.comm;
        events.push(json!({
            "ph": "M", "name": "process_name", "pid": pid, "tid": pid,
            "args": { "name": format!("{comm} (pid {pid})") },
        }));
        // Open frames: (name, category, start in counts); closed when the next stack
        // leaves them.
        let mut open: Vec<(String, &str, u64)> = Vec::new();
        let mut at = 0u64;
        let mut close = |open: &mut Vec<(String, &str, u64)>, keep: usize, at: u64| {
            while open.len() > keep {
                let (name, cat, start) = open.pop().expect("non-empty");
                events.push(json!({
                    "ph": "X", "name": name, "cat": cat, "pid": pid, "tid": pid,
                    "ts": start as f64 * per_count,
                    "dur": (at - start) as f64 * per_count,
                }));
            }
        };
        for (_, stack) in &stacks {
            let mut names: Vec<(String, &str)> = vec![(stack.comm.clone(), "process")];
            names.extend(stack.frames.iter().map(|f| match f.kind {
                FrameKind::Kernel => (f.symbol.clone(), "kernel"),
                FrameKind::User => (f.symbol.clone(), "user"),
            }));
            let common = open
                .iter()
                .zip(&names)
                .take_while(|((name, cat, _), (n, c))| name == n && cat == c)
                .count();
            close(&mut open, common, at);
            for (name, cat) in names.into_iter().skip(common) {
                open.push((name, cat, at));
            }
            at += stack.count;
        }
        close(&mut open, 0, at);
    }
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "tool": header.tool,
            "event": header.event,
            "unit": header.unit,
            "title": header.title(),
            "count_us": per_count,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stacks::Frame;

    #[test]
    fn flame_chart_events_add_up_to_the_samples() {
        let stack = |leaf: &str, count| Stack {
            pid: 5,
            comm: "x".into(),
            cgroup: None,
            frames: vec![Frame::user("main", None), Frame::user(leaf, None)],
            count,
            time_slice: None,
        };
        let profile = SymbolizedProfile {
            stacks: vec![stack("b", 2), stack("a", 3), stack("b", 1)],
            ..SymbolizedProfile::default()
        };
        let header = Header {
            hz: Some(100),
            ..Header::new("profile", "cpu-clock", "samples", "-a")
        };
        let doc = document(&profile, &header);
        let events: Vec<(String, f64, f64)> = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| {
                (
                    e["name"].as_str().unwrap().to_string(),
                    e["ts"].as_f64().unwrap(),
                    e["dur"].as_f64().unwrap(),
                )
            })
            .collect();
        let ms = |n: f64| n * 10_000.0;
        assert_eq!(
            events,
            [
                // The same stack twice (two time slices) is one event.
                ("a".into(), 0.0, ms(3.0)),
                ("b".into(), ms(3.0), ms(3.0)),
                ("main".into(), 0.0, ms(6.0)),
                ("x".into(), 0.0, ms(6.0)),
            ]
        );
    }
}
