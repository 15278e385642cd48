//! CPU and scheduler tools of issue 30 (`offwaketime`), against fixtures of known truth.

use std::{
    io::{BufRead, BufReader, Write},
    process::{Command, Stdio},
    time::Duration,
};

use tracekit_tests::*;

const TIMEOUT: Duration = Duration::from_secs(120);

/// offwaketime: the thread tk_blocked blocks in read() on a pipe 100 times, from
/// blocked_outer() -> blocked_read(), each time woken by tk_waker's write() from
/// waker_outer() -> waker_middle() -> waker_write(). The folded pair (blocked stack, `--`,
/// the waker's stack leaf first, the waker's name) carries the blocked thread's own
/// measurement of its reads, within 10%.
#[test]
fn offwaketime_joins_the_blocked_stack_with_the_wakers() {
    require_root();
    let mut fixture = Command::new(fixture("tk_offwake"))
        .args(["100", "5000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawning tk_offwake");
    let mut lines = BufReader::new(fixture.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "ready");
    let pid = fixture.id().to_string();
    let mut child = spawn_tracekit(["offwaketime", "-f", "-p", &pid]);
    wait_for_stderr(&mut child, "Hit Ctrl-C to end.", TIMEOUT);
    let mut stdin = fixture.stdin.take().unwrap();
    stdin.write_all(b"go\n").unwrap();
    let result = lines.next().unwrap().unwrap();
    kill(child.id(), libc::SIGINT);
    let run = wait_output(child, TIMEOUT);
    drop(stdin);
    let _ = fixture.wait();
    run.assert_code(0);
    let measured_us = result
        .split_whitespace()
        .skip_while(|w| *w != "blocked_ns")
        .nth(1)
        .and_then(|ns| ns.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("the fixture's blocked_ns in {result:?}"))
        / 1000;
    let stacks = parse_folded(&run.stdout);
    let pairs: Vec<&(String, u64)> = stacks
        .iter()
        .filter(|(stack, _)| {
            let Some((blocked, waker)) = stack.split_once(";--;") else {
                return false;
            };
            blocked.starts_with("tk_blocked;")
                && chain_in_order(blocked, &["blocked_outer", "blocked_read", "schedule_[k]"])
                && waker.ends_with(";tk_waker")
                && chain_in_order(
                    waker,
                    &[
                        "try_to_wake_up_[k]",
                        "vfs_write_[k]",
                        "waker_write",
                        "waker_middle",
                        "waker_outer",
                    ],
                )
        })
        .collect();
    let total: u64 = pairs.iter().map(|(_, us)| us).sum();
    assert!(
        total.abs_diff(measured_us) * 10 <= measured_us,
        "the pipe pair holds {total} us, the blocked thread measured {measured_us} us\n{}",
        run.stdout
    );
}
