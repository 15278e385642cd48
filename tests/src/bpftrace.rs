//! Side by side with bpftrace's own tools (`/usr/sbin/*.bt`, Debian's bpftrace package):
//! one run of a workload watched at once by a tracekit tool and by the `.bt` script, so
//! both see the same events.
//!
//! `cargo xtask test` installs bpftrace (xtask/src/setup.rs), so a missing bpftrace or
//! script is a setup error here, never a skip.

use std::{
    collections::BTreeMap,
    io::{BufRead as _, BufReader},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use crate::{Output, kill, run, scratch, spawn_tracekit, wait_output};

/// How long one side-by-side run may take: bpftrace compiles and attaches for seconds on
/// a loaded 2-CPU machine.
pub const TIMEOUT: Duration = Duration::from_secs(180);

/// `/usr/sbin/SCRIPT`; panics (a setup error: `cargo xtask test` installs bpftrace) when
/// bpftrace or the script is missing.
pub fn script(script: &str) -> PathBuf {
    let path = PathBuf::from(format!("/usr/sbin/{script}"));
    assert!(
        path.is_file() && Path::new("/usr/bin/bpftrace").is_file(),
        "setup error: no {} or no /usr/bin/bpftrace; `cargo xtask test` installs them \
         (apt-get install bpftrace)",
        path.display()
    );
    path
}

/// One run of a workload seen by both tools.
#[derive(Debug)]
pub struct SideBySide {
    /// The workload's own stdout (its truth lines).
    pub truth: String,
    /// bpftrace's stdout: the script's output ("Attaching N probes...", its header, its
    /// lines, and the maps it prints at exit).
    pub theirs: String,
    /// tracekit's run, stopped with SIGINT once the workload and bpftrace are done.
    pub ours: Output,
}

/// Writes `dir/workload.sh`, which runs `workload` (argv, each word quoted) with its stdout
/// in `dir/truth`, and returns the command that runs it. bpftrace's `-c` shares its stdout
/// with the command, and lines written at once interleave: the truth goes to a file.
fn workload_script(dir: &Path, workload: &[&str]) -> (String, PathBuf) {
    let truth = dir.join("truth");
    let quoted: Vec<String> = workload
        .iter()
        .map(|word| format!("'{}'", word.replace('\'', "'\\''")))
        .collect();
    let script = dir.join("workload.sh");
    std::fs::write(
        &script,
        format!("exec {} > '{}'\n", quoted.join(" "), truth.display()),
    )
    .unwrap();
    (format!("/bin/sh {}", script.display()), truth)
}

/// Runs bpftrace's `SCRIPT` with `-c WORKLOAD` (it starts the workload once its probes
/// are attached and exits, printing its maps, when the workload exits): its stdout and the
/// workload's stdout. Panics unless bpftrace exits 0.
pub fn bpftrace_alone(test: &str, script_name: &str, workload: &[&str]) -> (String, String) {
    let path = script(script_name);
    let dir = scratch(test);
    let (command, truth) = workload_script(&dir, workload);
    let mut bpftrace = Command::new("bpftrace");
    bpftrace.args(["-c", &command]).arg(&path);
    let out = run(bpftrace, TIMEOUT);
    out.assert_code(0);
    let truth = std::fs::read_to_string(truth).unwrap_or_default();
    (out.stdout.clone(), truth)
}

/// One run of `workload` watched by `tracekit TOOL_ARGS` (all processes, attached first:
/// it has printed "Hit Ctrl-C to end.") and by bpftrace's `/usr/sbin/SCRIPT`, which starts
/// the workload with `-c` once its own probes are attached. When bpftrace has exited (the
/// workload has), tracekit is stopped with SIGINT and must exit 0. Both tools watch the
/// whole machine: the test picks the workload's events (by comm, pid or path).
pub fn side_by_side(test: &str, script_name: &str, tool: &[&str], workload: &[&str]) -> SideBySide {
    side_by_side_with(test, script_name, &[], tool, workload)
}

/// [`side_by_side`], with `bpftrace_args` given to bpftrace before the script (`--include
/// FILE`: definitions the script's `#include` would take from kernel headers).
pub fn side_by_side_with(
    test: &str,
    script_name: &str,
    bpftrace_args: &[&str],
    tool: &[&str],
    workload: &[&str],
) -> SideBySide {
    let path = script(script_name);
    let dir = scratch(test);
    let (command, truth) = workload_script(&dir, workload);
    let mut ours = spawn_tracekit(tool);
    // All of tracekit's stderr is kept (its "Lost: ..." line comes at the end); the run
    // goes on once it says its probes are attached.
    let stderr = ours.stderr.take().unwrap();
    let (attached, attached_rx) = std::sync::mpsc::channel();
    let stderr_reader = std::thread::spawn(move || {
        let mut text = String::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if line.contains("Hit Ctrl-C to end.") {
                let _ = attached.send(());
            }
            text.push_str(&line);
            text.push('\n');
        }
        text
    });
    if attached_rx.recv_timeout(TIMEOUT).is_err() {
        kill(ours.id(), libc::SIGKILL);
        let _ = ours.wait();
        panic!("tracekit never attached: {}", stderr_reader.join().unwrap());
    }
    let bpftrace = Command::new("bpftrace")
        .args(["-c", &command])
        .args(bpftrace_args)
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning bpftrace");
    // Should bpftrace hang (wait_output panics), tracekit must not stay attached.
    let guard = KillOnPanic(ours.id());
    let theirs = wait_output(bpftrace, TIMEOUT);
    std::mem::forget(guard);
    // tracekit reads its ring after the events: SIGINT drains it before printing.
    kill(ours.id(), libc::SIGINT);
    let mut ours = wait_output(ours, TIMEOUT);
    ours.stderr = stderr_reader.join().unwrap();
    theirs.assert_code(0);
    ours.assert_code(0);
    SideBySide {
        truth: std::fs::read_to_string(truth).unwrap_or_default(),
        theirs: theirs.stdout,
        ours,
    }
}

/// Kills a process with SIGKILL when dropped (during a panic; forgotten otherwise).
struct KillOnPanic(u32);

impl Drop for KillOnPanic {
    fn drop(&mut self) {
        kill(self.0, libc::SIGKILL);
    }
}

/// The power-of-2 histogram bpftrace prints for map key `key` (`@[tk_dd]:` for
/// `key = "@[tk_dd]"`, `@usecs:` for `"@usecs"`): each bucket's low bound (`[4K, 8K)` is
/// 4096; `[0]` and `[1]` are 0 and 1) and its count. Empty when the map has no such key.
pub fn hist(text: &str, key: &str) -> BTreeMap<u64, u64> {
    let header = format!("{key}:");
    let mut buckets = BTreeMap::new();
    let mut lines = text.lines().skip_while(|line| line.trim() != header);
    if lines.next().is_none() {
        return buckets;
    }
    for line in lines {
        let Some(rest) = line.strip_prefix('[') else {
            break;
        };
        let Some((range, after)) = rest.split_once([')', ']']) else {
            break;
        };
        let low = range.split(',').next().unwrap().trim();
        let count = after.split_whitespace().next().unwrap_or("");
        buckets.insert(
            size(low).unwrap_or_else(|| panic!("bucket {line:?}")),
            count.parse().unwrap_or_else(|_| panic!("bucket {line:?}")),
        );
    }
    buckets
}

/// bpftrace's bucket bound (`4K`, `1M`, `512`) in units.
fn size(text: &str) -> Option<u64> {
    let (digits, scale) = match text.as_bytes().last()? {
        b'K' => (&text[..text.len() - 1], 1 << 10),
        b'M' => (&text[..text.len() - 1], 1 << 20),
        b'G' => (&text[..text.len() - 1], 1 << 30),
        b'T' => (&text[..text.len() - 1], 1 << 40),
        _ => (text, 1),
    };
    Some(digits.parse::<u64>().ok()? * scale)
}

/// The value bpftrace prints for one key of a counting map (`@process[tk_syscalls]: 1234`).
pub fn map_value(text: &str, key: &str) -> Option<u64> {
    let prefix = format!("{key}: ");
    text.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .and_then(|value| value.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_bpftrace_histograms_and_maps() {
        let text = "Attaching 3 probes...\n\n@[kworker/0:1H]:\n[4K, 8K)  3 |@@@@|\n\n\
                    @[tk_dd]:\n[0]   1 |@|\n[4K, 8K)   100 |@@@@@@|\n[16K, 32K)  0 |  |\n\
                    [64K, 128K)  100 |@@@@@@|\n[1M, 2M)  2 |@|\n\n@process[tk_dd]: 345\n";
        assert_eq!(
            hist(text, "@[tk_dd]"),
            [(0, 1), (4096, 100), (16384, 0), (65536, 100), (1 << 20, 2)].into()
        );
        assert_eq!(hist(text, "@[kworker/0:1H]"), [(4096, 3)].into());
        assert!(hist(text, "@[nobody]").is_empty());
        assert_eq!(map_value(text, "@process[tk_dd]"), Some(345));
        assert_eq!(map_value(text, "@process[other]"), None);
    }
}
