//! Never a wrong name: short runs of the chain fixture under `-- CMD`, whose start-up frees
//! code objects whose addresses the fixture's own then take, and whose code objects are
//! read after start-up has freed some. A frame is named by the code object recorded, or
//! `[unknown]`: never by another object that held its address, nor by freed memory.

use std::{path::Path, time::Duration};

use tracekit_tests::{parse_folded, require_root, scratch, tracekit, workspace};

const TIMEOUT: Duration = Duration::from_secs(60);

/// Whether `name` of a Python frame (`function (file:LINE)`) is one a real code object
/// could have: printable text and a positive line.
fn plausible(frame: &str) -> bool {
    let printable = frame.chars().all(|c| !c.is_control() && c != '\u{fffd}');
    let line = frame
        .strip_suffix(')')
        .and_then(|inner| inner.rsplit_once(':'))
        .and_then(|(_, line)| line.parse::<i64>().ok());
    printable && line.is_none_or(|line| line > 0)
}

/// pyenv's CPython 3.11.7, 1.5 s runs, 20 of them: before code objects were checked, 8
/// of 20 runs named a frame wrongly (the middle frame in every sample as `<module>
/// (<string>:1)`, or a start-up frame as raw bytes with a negative line); after, none.
#[test]
fn short_python_runs_never_name_a_frame_wrongly() {
    require_root();
    let python = Path::new("/root/.pyenv/versions/3.11.7/bin/python3");
    if !python.is_file() {
        eprintln!("skipped: {} is not installed here", python.display());
        return;
    }
    let dir = scratch("short_python_runs_never_name_a_frame_wrongly");
    let script = workspace().join("tests/fixtures/py_chain.py");
    let fixture = script.display().to_string();
    let out = dir.join("out.folded");
    let (mut wrong, mut unknown_middle, mut runs) = (Vec::new(), 0, 0);
    for run in 0..20 {
        let result = tracekit(
            [
                "profile",
                "-F",
                "99",
                "-o",
                out.to_str().unwrap(),
                "--",
                python.to_str().unwrap(),
                script.to_str().unwrap(),
                "1.5",
            ],
            TIMEOUT,
        );
        result.assert_code(0);
        runs += 1;
        let text = String::from_utf8_lossy(&std::fs::read(&out).unwrap()).into_owned();
        for (stack, count) in parse_folded(&text) {
            let frames: Vec<&str> = stack.split(';').collect();
            for (at, frame) in frames.iter().enumerate() {
                if frame.contains(" (") && !plausible(frame) {
                    wrong.push(format!("run {run}: {frame} ({count} samples)"));
                }
                // Below outer() is middle(), named as itself or [unknown].
                if frame.starts_with(&format!("outer ({fixture}:"))
                    && let Some(next) = frames.get(at + 1)
                {
                    if *next == "[unknown]" {
                        unknown_middle += count;
                    } else if !next.starts_with(&format!("middle ({fixture}:")) {
                        wrong.push(format!(
                            "run {run}: outer's callee {next} ({count} samples)"
                        ));
                    }
                }
            }
        }
    }
    eprintln!("{runs} runs, middle [unknown] in {unknown_middle} samples");
    wrong.dedup();
    assert!(wrong.is_empty(), "wrong names:\n{}", wrong.join("\n"));
}
