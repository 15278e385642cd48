//! Runtimes tracekit recognises and does not walk (Perl, Erlang's BEAM): their processes keep
//! whole native stacks, and the run's summary and JSON say which runtime, version and process.

use super::TIMEOUT;
use tracekit_tests::{parse_folded, require_root, scratch, share, tracekit};

/// `profile -- perl -e LOOP` with Debian's perl: the interpreter's own loop
/// (`Perl_runops_standard`) is in the samples, down to `main`, and the summary says in one
/// line, without `-v`, that Perl frames are not named.
#[test]
fn perl_is_said_in_the_summary_and_keeps_native_stacks() {
    let test = "perl_is_said_in_the_summary_and_keeps_native_stacks";
    require_root();
    let perl = std::path::Path::new("/usr/bin/perl");
    if !perl.is_file() {
        eprintln!("{test}: skipped: {} is not installed here", perl.display());
        return;
    }
    let version = String::from_utf8(
        std::process::Command::new(perl)
            .args(["-e", "printf '%vd', $^V"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let dir = scratch(test);
    let folded = dir.join("out.folded");
    let json = dir.join("out.json");
    let run = tracekit(
        [
            "profile",
            "-F",
            "199",
            "-o",
            folded.to_str().unwrap(),
            "-o",
            json.to_str().unwrap(),
            "--",
            "/usr/bin/perl",
            "-e",
            "my $n = 0; $n++ while time < $^T + 2; print $n > 0",
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let folded = parse_folded(&std::fs::read_to_string(&folded).unwrap());
    let (runops, total) = share(&folded, |path| {
        path.starts_with("perl;") && path.contains("main;") && path.contains("Perl_runops_")
    });
    eprintln!("{test}: {runops} of {total} samples hold main and Perl_runops_*");
    assert!(total >= 50, "only {total} samples: {folded:#?}");
    assert!(
        runops as f64 >= 0.90 * total as f64,
        "{runops} of {total}: {folded:#?}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let not_named = &json["runtimes_not_named"][0];
    let pid = not_named["pids"][0].as_u64().expect("a pid");
    let reason = "tracekit walks Python, Ruby, PHP, Node.js and Java, not this runtime";
    assert_eq!(
        json["runtimes_not_named"],
        serde_json::json!([{
            "runtime": "perl",
            "version": version,
            "language": "Perl",
            "reason": reason,
            "pids": [pid],
        }]),
        "{json}"
    );
    let line = format!("tracekit: perl {version} (pid {pid}): Perl frames not named: {reason}\n");
    assert!(
        run.stderr.contains(&line),
        "want {line:?} in: {}",
        run.stderr
    );
}
