//! The lock tools: `futexctn` on two threads fighting over one pthread mutex, `klockstat`
//! on the mmap lock of many threads mapping memory.

use std::time::Duration;

use tracekit_tests::*;

const TIMEOUT: Duration = Duration::from_secs(60);

/// Futexes: two threads fighting over one pthread_mutex_t. futexctn shows the
/// mutex's address (the futex word is its first field), a wait time within 10% of what the
/// fixture measured around its pthread_mutex_lock calls, and with `--stacks` the waiting
/// user stack down to the fixture's `wait_for_mutex`.
#[test]
fn futexctn_shows_the_contended_mutex() {
    require_root();
    let fixture = fixture("tk_mutex");
    let fixture = fixture.to_str().unwrap();
    let run = tracekit(["futexctn", "--json", "--", fixture], TIMEOUT);
    run.assert_code(0);
    // The fixture's line, then tracekit's JSON (the fixture exits first).
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("mutex "))
        .unwrap_or_else(|| panic!("{run:#?}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let (mutex, measured_ns) = (words[1], words[3].parse::<u64>().unwrap());
    let json = parse_json(
        run.stdout
            .lines()
            .find(|l| l.starts_with('{'))
            .unwrap_or_else(|| panic!("{run:#?}")),
    );
    let waited: u64 = json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["key"]["UADDR"] == mutex)
        .map(|g| g["sum"].as_u64().unwrap())
        .sum();
    assert!(
        measured_ns > 50_000_000,
        "the fixture barely contended: {line}"
    );
    let off = (waited as f64 - measured_ns as f64).abs() / measured_ns as f64;
    assert!(
        off < 0.10,
        "futexctn {waited} ns on {mutex}, the fixture measured {measured_ns} ns: {json:#}"
    );

    let run = tracekit(["futexctn", "--stacks", "--", fixture], TIMEOUT);
    run.assert_code(0);
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("mutex "))
        .unwrap();
    let mutex = u64::from_str_radix(
        line.split_whitespace()
            .nth(1)
            .unwrap()
            .trim_start_matches("0x"),
        16,
    )
    .unwrap()
    .to_string();
    // A row (`UADDR WAIT(ns)`) then its stack, a frame a line, indented.
    let mut on_mutex_with_frame = 0;
    let mut current = false;
    for line in run.stdout.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if !line.starts_with(' ') && words.len() == 2 {
            let address = match words[0].strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).ok(),
                None => words[0].parse::<u64>().ok(),
            };
            current = address.map(|a| a.to_string()) == Some(mutex.clone());
        } else if current && line.trim_start().starts_with("wait_for_mutex ") {
            on_mutex_with_frame += 1;
        }
    }
    assert!(
        on_mutex_with_frame >= 10,
        "{on_mutex_with_frame} waits on {mutex} from wait_for_mutex:\n{}",
        run.stdout
    );
}

/// Kernel locks: many threads of one process mapping and unmapping at once
/// contend for its mmap_lock, an rwsem: klockstat shows waits of type WRITE (4) under the
/// fixture's name, and with `--stacks` the waits come from mmap and munmap taking it.
#[test]
fn klockstat_shows_mmap_lock_contention() {
    require_root();
    let fixture = fixture("tk_mmap");
    let fixture = fixture.to_str().unwrap();
    let run = tracekit(
        ["klockstat", "--by", "comm", "--json", "--", fixture],
        TIMEOUT,
    );
    run.assert_code(0);
    let json = parse_json(&run.stdout);
    let writes: u64 = json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["key"]["comm"] == "tk_mmap" && g["key"]["TYPE"] == 4)
        .map(|g| g["count"].as_u64().unwrap())
        .sum();
    assert!(writes >= 10, "{json:#}");

    let run = tracekit(["klockstat", "--stacks", "--", fixture], TIMEOUT);
    run.assert_code(0);
    let from_mmap = run
        .stdout
        .lines()
        .filter(|l| {
            let frame = l.trim_start();
            frame.starts_with("vm_mmap_pgoff ") || frame.starts_with("__vm_munmap ")
        })
        .count();
    assert!(from_mmap >= 10, "{}", run.stdout);
}
