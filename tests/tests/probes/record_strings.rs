//! Strings a tracepoint stores in its own record (`__data_loc`, e.g.
//! `sched:sched_process_exec`'s `filename`): whole in `trace --print` (text and JSON),
//! compared whole by filters, `...` when `--max-string` cuts them, and kept to 31 bytes
//! with the mark as group keys, on execs of a program at a path of 200 bytes.

use std::{path::Path, time::Duration};

use serde_json::Value;
use tracekit_tests::{require_root, scratch, total_count, tracekit};

const TIMEOUT: Duration = Duration::from_secs(60);

/// Execs each run makes of the program at the long path.
const EXECS: usize = 20;

/// A copy of /bin/true at a path of exactly `len` bytes under `dir` (components of at most
/// 200 bytes: NAME_MAX is 255).
fn long_true(dir: &Path, len: usize) -> String {
    let name = "tk-exec-true";
    let mut path = dir.display().to_string();
    while path.len() + 1 + name.len() < len {
        let room = (len - path.len() - 2 - name.len()).clamp(1, 200);
        path.push('/');
        path.push_str(&"d".repeat(room));
    }
    std::fs::create_dir_all(&path).unwrap();
    path.push('/');
    path.push_str(name);
    std::fs::copy("/bin/true", &path).unwrap();
    assert_eq!(path.len(), len, "{path}");
    path
}

/// `tracekit ARGS -o OUT -- sh -c 'PROGRAM; PROGRAM; ...'` ([`EXECS`] execs of `program`):
/// what it wrote to OUT.
fn on_execs(test: &str, args: &[&str], program: &str) -> String {
    let json = args.contains(&"--json");
    let out = scratch(test).join(if json { "out.json" } else { "out.txt" });
    let script = vec![program; EXECS].join("; ");
    let mut all = args.to_vec();
    all.extend(["-o", out.to_str().unwrap(), "--", "/bin/sh", "-c", &script]);
    tracekit(&all, TIMEOUT).assert_code(0);
    std::fs::read_to_string(&out).unwrap()
}

/// The `filename`s of a `trace --print filename` output, text (`"PATH"` ends each line) or
/// JSON lines.
fn filenames(out: &str, json: bool) -> Vec<String> {
    out.lines()
        .filter_map(|line| {
            if json {
                let event: Value = serde_json::from_str(line).ok()?;
                event["filename"].as_str().map(str::to_string)
            } else {
                Some(line.split_once(" \"")?.1.strip_suffix('"')?.to_string())
            }
        })
        .collect()
}

#[test]
fn data_loc_strings_show_whole_and_compare_whole() {
    require_root();
    let dir = scratch("data_loc_strings");
    let program = long_true(&dir, 200);
    let head: String = program.chars().take(31).collect();
    let shell = |names: &[String]| names.iter().filter(|n| n.ends_with("/sh")).count();
    for json in [false, true] {
        let mut args = vec!["trace", "sched:sched_process_exec", "--print", "filename"];
        if json {
            args.push("--json");
        }
        let names = filenames(&on_execs("data_loc_trace", &args, &program), json);
        let whole = names.iter().filter(|n| **n == program).count();
        assert_eq!(whole, EXECS, "json: {json}: {names:?}");
        // The shell's own exec, and nothing else.
        assert_eq!(names.len(), EXECS + 1, "json: {json}: {names:?}");
        assert_eq!(shell(&names), 1, "json: {json}: {names:?}");
        // Cut by --max-string: its first 50 bytes and the mark.
        args.extend(["--max-string", "50"]);
        let names = filenames(&on_execs("data_loc_trace_cut", &args, &program), json);
        let cut = format!("{}...", &program[..50]);
        let marked = names.iter().filter(|n| **n == cut).count();
        assert_eq!(marked, EXECS, "json: {json}: {names:?}");
    }
    // Filters compare the whole string (constants are 31 bytes at most): its end is past
    // the first 31 bytes, which it does not equal.
    let cases = [
        "filename ~ \"*/tk-exec-true\"".to_string(),
        format!("filename ~ \"{}*\"", &program[..20]),
        format!("filename == \"{head}\""),
    ];
    for (filter, expected) in cases.iter().zip([EXECS, EXECS, 0]) {
        let out = on_execs(
            "data_loc_filter",
            &[
                "trace",
                "sched:sched_process_exec",
                "--print",
                "filename",
                "--json",
                "--filter",
                filter,
            ],
            &program,
        );
        let names = filenames(&out, true);
        assert_eq!(names.len(), expected, "--filter '{filter}': {names:?}");
        assert!(names.iter().all(|n| *n == program), "{names:?}");
        let out = on_execs(
            "data_loc_filter_count",
            &[
                "count",
                "sched:sched_process_exec",
                "--json",
                "--filter",
                filter,
            ],
            &program,
        );
        let counted = total_count(&serde_json::from_str(&out).unwrap());
        assert_eq!(counted, expected as u64, "count --filter '{filter}': {out}");
    }
    // A group key keeps 31 bytes and the mark; the shell's path is whole.
    let out = on_execs(
        "data_loc_keys",
        &[
            "count",
            "sched:sched_process_exec",
            "--by",
            "filename",
            "--json",
        ],
        &program,
    );
    let counts: Value = serde_json::from_str(&out).unwrap();
    let mut groups: Vec<(String, u64)> = counts["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let key = g["key"]["filename"].as_str().unwrap().to_string();
            (key, g["count"].as_u64().unwrap())
        })
        .collect();
    groups.sort();
    assert_eq!(
        groups,
        [
            ("/bin/sh".to_string(), 1),
            (format!("{head}..."), EXECS as u64)
        ],
        "{out}"
    );
}
