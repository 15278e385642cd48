//! The snoop tools on a fixture whose every call is known (`tests/fixtures/tk_snoops.c`
//! prints its truth), each event matched exactly, alone and side by side with bpftrace's
//! own script.

mod files;
mod processes;

use std::time::Duration;

use serde_json::Value;
use tracekit_tests::{bpftrace::side_by_side, fixture, scratch, tracekit};

const TIMEOUT: Duration = Duration::from_secs(120);

/// Runs `tracekit TOOL ARGS --json -o FILE -- tk_snoops WORKLOAD`: the fixture's truth
/// lines (stdout) and the tool's JSON objects.
fn snoop(test: &str, tool: &str, args: &[&str], workload: &[&str]) -> (String, Vec<Value>) {
    let mut all = vec!["--json"];
    all.extend(args);
    let (truth, out) = snoop_out(test, tool, &all, workload);
    (truth, json_lines(&out).1)
}

/// Runs `tracekit TOOL ARGS -o FILE -- tk_snoops WORKLOAD`: the fixture's truth lines
/// (stdout) and the tool's text.
fn snoop_text(test: &str, tool: &str, args: &[&str], workload: &[&str]) -> (String, String) {
    let (truth, out) = snoop_out(test, tool, args, workload);
    (truth, std::fs::read_to_string(out).unwrap())
}

/// Runs `tracekit TOOL ARGS -o FILE -- tk_snoops WORKLOAD`, which must lose nothing: the
/// fixture's truth lines (stdout) and FILE.
fn snoop_out(
    test: &str,
    tool: &str,
    args: &[&str],
    workload: &[&str],
) -> (String, std::path::PathBuf) {
    let dir = scratch(test);
    let out = dir.join(if args.contains(&"--json") {
        "events.json"
    } else {
        "events.txt"
    });
    let out_text = out.to_str().unwrap().to_string();
    let program = fixture("tk_snoops");
    let mut all = vec![tool, "-o", out_text.as_str()];
    all.extend(args);
    all.push("--");
    all.push(program.to_str().unwrap());
    all.extend(workload);
    let run = tracekit(&all, TIMEOUT);
    run.assert_code(0);
    assert!(
        run.stderr.contains("Lost: nothing."),
        "events were lost: {}",
        run.stderr
    );
    (run.stdout.clone(), out)
}

/// The file a `--json -o FILE` run wrote: its text, and its lines as JSON objects.
fn json_lines(path: &std::path::Path) -> (String, Vec<Value>) {
    let text = std::fs::read_to_string(path).unwrap();
    let events = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (text, events)
}

/// One run of `tk_snoops WORKLOAD` watched at once by `tracekit TOOL --json` and by
/// bpftrace's own `/usr/sbin/SCRIPT` (tracekit_tests::bpftrace::side_by_side): the fixture's
/// truth lines, bpftrace's stdout, and tracekit's events (all processes': the test picks the
/// fixture's). tracekit must have lost nothing.
fn with_bpftrace(
    test: &str,
    script: &str,
    tool: &str,
    workload: &[&str],
) -> (String, String, Vec<Value>) {
    let program = fixture("tk_snoops");
    let mut argv = vec![program.to_str().unwrap()];
    argv.extend(workload);
    let run = side_by_side(test, script, &[tool, "--json"], &argv);
    assert!(
        run.ours.stderr.contains("Lost: nothing."),
        "events were lost: {}",
        run.ours.stderr
    );
    let ours = run
        .ours
        .stdout
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (run.truth, run.theirs, ours)
}
