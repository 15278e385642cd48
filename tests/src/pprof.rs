//! `go tool pprof`, the reference reader of pprof profiles: installed when missing, run on
//! a profile, its `-traces` output parsed.

use std::{path::Path, process::Command, time::Duration};

use crate::{ensure_package, run};

const TIMEOUT: Duration = Duration::from_secs(60);

/// `go`, installed from Debian's `golang-go` when missing; `None` (with the reason printed)
/// when it cannot be installed.
pub fn go_or_skip(test: &str) -> Option<&'static str> {
    let go = "/usr/bin/go";
    ensure_package(test, "golang-go", || Path::new(go).exists()).then_some(go)
}

/// `go tool pprof ARGS FILE`, its stdout.
pub fn pprof(go: &str, args: &[&str], file: &Path) -> String {
    let mut command = Command::new(go);
    command.args(["tool", "pprof"]).args(args).arg(file);
    let output = run(command, TIMEOUT);
    output.assert_code(0);
    output.stdout
}

/// `go tool pprof -traces` output: each sample's functions, leaf first (label lines, which
/// hold a `:`, and separators left out).
pub fn trace_chains(traces: &str) -> Vec<Vec<&str>> {
    traces
        .split("-----------+-")
        .map(|block| {
            block
                .lines()
                .filter(|line| {
                    let line = line.trim();
                    !line.is_empty() && !line.contains(':') && !line.starts_with('-')
                })
                .filter_map(|line| line.split_whitespace().last())
                .collect()
        })
        .collect()
}

/// The burner's whole call chain, leaf <- b <- a <- main, is one of the `-traces`, under
/// its comm label.
pub fn assert_burner_chain(traces: &str) {
    assert!(
        trace_chains(traces)
            .iter()
            .any(|chain| chain.starts_with(&["leaf", "b", "a", "main"])),
        "no leaf <- b <- a <- main trace in go tool pprof -traces:\n{traces}"
    );
    assert!(traces.contains("comm:  tk_burner"), "{traces}");
}

/// One sample of `go tool pprof -traces -sample_index=samples`: its `pid` label, its
/// samples, and its functions outermost first joined by `;` (a folded path; names may hold
/// spaces, as `leaf (/path/js_chain.js)`).
#[derive(Debug)]
pub struct Trace {
    pub pid: Option<u32>,
    pub samples: u64,
    pub path: String,
}

/// Parses `go tool pprof -traces -sample_index=samples` output: a block per sample, label
/// lines (`pid:  123`), then the leaf's line led by its count, then one function a line.
pub fn traces(text: &str) -> Vec<Trace> {
    text.split("-----------+-")
        .skip(1)
        .filter_map(|block| {
            let (mut pid, mut samples, mut frames) = (None, None, Vec::new());
            for line in block.lines().skip(1).map(str::trim) {
                if line.is_empty() {
                    continue;
                }
                if let Some(value) = line.strip_prefix("pid:") {
                    pid = value.trim().parse().ok();
                } else if samples.is_none()
                    && frames.is_empty()
                    && line
                        .split_whitespace()
                        .next()
                        .is_some_and(|w| w.ends_with(':'))
                {
                    // Another label (comm, cgroup); frames may hold a `:` too (`-lines`).
                } else if samples.is_none() {
                    let (count, leaf) = line.split_once(char::is_whitespace)?;
                    samples = Some(count.parse().ok()?);
                    frames.push(leaf.trim());
                } else {
                    frames.push(line);
                }
            }
            frames.reverse();
            Some(Trace {
                pid,
                samples: samples?,
                path: frames.join(";"),
            })
        })
        .collect()
}
