//! The aggregation engine (`hist`, `count`, `trace`, and the tools built on it: `bitesize`,
//! `biolatency`, `syscount`, `runqlat`) against workloads with known counts: a loop of
//! exactly N syscalls, `dd` with known block sizes.

mod counts;
mod histograms;

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use serde_json::Value;
use tracekit_tests::{kill, parse_json, spawn_tracekit, wait_for_stderr, wait_output};

const TIMEOUT: Duration = Duration::from_secs(60);

/// Count of the group whose key `column` is `value`, in a tool's JSON output.
fn group_count(json: &Value, column: &str, value: &str) -> u64 {
    json["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .filter(|g| g["key"][column] == value)
        .map(|g| g["count"].as_u64().unwrap())
        .sum()
}

/// Runs `dd` writing `count` blocks of `bs` with O_DIRECT into `file`, as `program` (a copy
/// of dd under another name gives the writer its own comm).
fn dd(program: &Path, file: &Path, bs: &str, count: u32, direction: &str) {
    let (input, output) = match direction {
        "write" => ("if=/dev/zero".to_string(), format!("of={}", file.display())),
        _ => (format!("if={}", file.display()), "of=/dev/null".to_string()),
    };
    let flag = if direction == "write" {
        "oflag=direct"
    } else {
        "iflag=direct"
    };
    let status = Command::new(program)
        .args([
            input,
            output,
            format!("bs={bs}"),
            format!("count={count}"),
            flag.into(),
        ])
        .stderr(std::process::Stdio::null())
        .status()
        .expect("dd runs");
    assert!(status.success(), "dd failed");
}

/// A copy of dd named `name`, so its requests carry that comm.
fn dd_as(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::copy("/bin/dd", &path).expect("copy dd");
    path
}

/// Starts a tool on all processes and waits until it is attached.
fn start(args: &[&str]) -> std::process::Child {
    let mut child = spawn_tracekit(args);
    wait_for_stderr(&mut child, "Hit Ctrl-C to end.", TIMEOUT);
    child
}

/// Stops a tool with SIGINT and returns its JSON.
fn stop(child: std::process::Child) -> Value {
    std::thread::sleep(Duration::from_millis(300));
    kill(child.id(), libc::SIGINT);
    let run = wait_output(child, TIMEOUT);
    run.assert_code(0);
    parse_json(&run.stdout)
}
