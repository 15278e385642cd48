//! The memory tools. `memleak` against `tk_leak`: 1000 blocks of 4096 bytes leaked from one
//! call chain (main -> leak_outer -> leak_inner -> malloc) while every other block, from
//! every libc allocator and from other functions, is freed; and (kernel mode) N files held
//! open. `slabratetop` against files opened one by one.

use std::{
    collections::BTreeMap,
    io::{BufRead as _, BufReader, Write as _},
    process::{Child, Command, Stdio},
    time::Duration,
};

use tracekit_tests::{
    fixture, kill, parse_json, require_root, spawn_tracekit, tracekit, wait_for_stderr,
    wait_output, *,
};

const TIMEOUT: Duration = Duration::from_secs(60);

/// The fixture's own functions: no stack but the leak's may hold one of them.
const OWN: &[&str] = &[
    "main",
    "leak_outer",
    "leak_inner",
    "churn_malloc",
    "churn_calloc",
    "churn_realloc",
    "churn_aligned",
    "open_files",
];

/// One stack of a report: bytes, allocations, frames leaf first.
#[derive(Debug)]
struct Stack {
    bytes: u64,
    allocations: u64,
    frames: Vec<String>,
}

/// The stacks of a text report (`\tB bytes in N allocations from stack`, then
/// `\t\tSYMBOL [MODULE]` lines; `--show-allocs`' `\taddr = ...` lines are skipped).
fn parse_text(report: &str) -> Vec<Stack> {
    let mut stacks: Vec<Stack> = Vec::new();
    for line in report.lines() {
        if let Some(frame) = line.strip_prefix("\t\t") {
            let symbol = frame.split(" [").next().unwrap_or(frame);
            stacks
                .last_mut()
                .expect("a frame after its stack's line")
                .frames
                .push(symbol.to_string());
        } else if let Some(head) = line.strip_prefix('\t')
            && !head.starts_with("addr = ")
        {
            let words: Vec<&str> = head.split_whitespace().collect();
            assert_eq!(words[1..3], ["bytes", "in"], "{line}");
            stacks.push(Stack {
                bytes: words[0].parse().unwrap(),
                allocations: words[3].parse().unwrap(),
                frames: Vec::new(),
            });
        }
    }
    stacks
}

/// The stacks of a `--json` report.
fn parse_json_report(stdout: &str) -> Vec<Stack> {
    let json = parse_json(stdout);
    assert_eq!(json["command"], "memleak", "{json:#}");
    json["stacks"]
        .as_array()
        .expect("stacks")
        .iter()
        .map(|s| Stack {
            bytes: s["bytes"].as_u64().unwrap(),
            allocations: s["allocations"].as_u64().unwrap(),
            frames: s["frames"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["symbol"].as_str().unwrap().to_string())
                .collect(),
        })
        .collect()
}

/// Exactly one stack holds the fixture's functions: the leak's, 4,096,000 bytes in 1000
/// allocations, leak_inner <- leak_outer <- main.
fn assert_only_the_leak(stacks: &[Stack], report: &str) {
    let own: Vec<&Stack> = stacks
        .iter()
        .filter(|s| s.frames.iter().any(|f| OWN.contains(&f.as_str())))
        .collect();
    assert_eq!(
        own.len(),
        1,
        "one stack of the fixture's own: {own:#?}\n{report}"
    );
    let leak = own[0];
    assert_eq!(
        (leak.bytes, leak.allocations),
        (4_096_000, 1000),
        "{report}"
    );
    assert_eq!(
        leak.frames[..3],
        ["leak_inner", "leak_outer", "main"],
        "{report}"
    );
}

/// Starts `tk_leak --wait --hold ARGS` (stdin and stdout piped).
fn start_fixture(args: &[&str]) -> Child {
    Command::new(fixture("tk_leak"))
        .args(["--wait", "--hold"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("tk_leak starts")
}

/// Runs `tracekit memleak ARGS -p PID` on a held `tk_leak ARGS`: attaches, lets the fixture
/// work, waits for its "done", then stops tracekit with SIGINT (its report then) and ends
/// the fixture.
fn memleak_on_held(tool_args: &[&str], fixture_args: &[&str]) -> tracekit_tests::Output {
    let mut target = start_fixture(fixture_args);
    let pid = target.id().to_string();
    let mut args = vec!["memleak"];
    args.extend(tool_args);
    args.extend(["-p", &pid]);
    let mut tool = spawn_tracekit(&args);
    wait_for_stderr(&mut tool, "Hit Ctrl-C to end.", TIMEOUT);
    target.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let mut done = String::new();
    BufReader::new(target.stdout.take().unwrap())
        .read_line(&mut done)
        .unwrap();
    assert_eq!(done, "done\n");
    kill(tool.id(), libc::SIGINT);
    let run = wait_output(tool, TIMEOUT);
    let _ = target.kill();
    let _ = target.wait();
    run
}

/// `memleak -p PID` reports the one leaking stack, exactly.
#[test]
fn memleak_pid_reports_exactly_the_leaking_stack() {
    require_root();
    let run = memleak_on_held(&[], &[]);
    run.assert_code(0);
    assert!(
        run.stdout.starts_with('[') && run.stdout.contains("] Top "),
        "{}",
        run.stdout
    );
    assert_only_the_leak(&parse_text(&run.stdout), &run.stdout);
    assert!(!run.stderr.contains("lost"), "{}", run.stderr);
}

/// `memleak -- CMD` reports what the command had not freed when
/// it exited (read while it is held at its exit).
#[test]
fn memleak_command_reports_the_leak_at_exit() {
    require_root();
    let leak = fixture("tk_leak");
    let run = tracekit(["memleak", "--json", "--", leak.to_str().unwrap()], TIMEOUT);
    run.assert_code(0);
    assert_only_the_leak(&parse_json_report(&run.stdout), &run.stdout);
}

/// `--show-allocs` lists each of the 1000 leaked blocks; `-z` leaves out what is smaller.
#[test]
fn memleak_show_allocs_and_size_bounds() {
    require_root();
    let run = memleak_on_held(&["--show-allocs", "-z", "4097"], &[]);
    run.assert_code(0);
    assert!(!run.stdout.contains("leak_inner"), "{}", run.stdout);
    let run = memleak_on_held(&["--show-allocs", "-z", "4096", "-Z", "4096"], &[]);
    run.assert_code(0);
    let addresses = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("\taddr = ") && l.ends_with(" size = 4096"))
        .count();
    assert_eq!(addresses, 1000, "{}", run.stdout);
    assert_only_the_leak(&parse_text(&run.stdout), &run.stdout);
}

/// Kernel mode (`kmem` tracepoints): the 500 files `tk_leak --files 500` holds open are 500
/// `struct file`s allocated under `alloc_empty_file` and not freed.
#[test]
fn memleak_kernel_files_held_open() {
    require_root();
    let run = memleak_on_held(&["--kernel", "--top", "100"], &["--files", "500"]);
    if run.stderr.contains("kmem") && run.code() != 0 {
        eprintln!(
            "memleak_kernel_files_held_open: skipped: no kmem tracepoints: {}",
            run.stderr
        );
        return;
    }
    run.assert_code(0);
    let stacks = parse_text(&run.stdout);
    let files: Vec<&Stack> = stacks
        .iter()
        .filter(|s| s.frames.get(1).is_some_and(|f| f == "alloc_empty_file"))
        .collect();
    assert_eq!(
        files.iter().map(|s| s.allocations).sum::<u64>(),
        500,
        "{}",
        run.stdout
    );
    assert!(
        files.iter().all(|s| s.bytes % s.allocations == 0),
        "{}",
        run.stdout
    );
}

/// `slabratetop -- tk_snoops opens DIR N 0` of files that exist: each open(2) takes one
/// `filp` (a `struct file`) and one `names_cache` object (the path), so N = 300 gives
/// exactly 300 more of each than N = 0 (the loader's own opens are the same in both), and
/// 300 objects' more bytes of each.
#[test]
fn slabratetop_counts_a_file_per_open() {
    require_root();
    let dir = scratch("slabratetop");
    let program = fixture("tk_snoops");
    let dir_text = dir.to_str().unwrap();
    // Create the files first: creating one allocates an inode and a dentry too.
    let create = Command::new(&program)
        .args(["opens", dir_text, "300", "0"])
        .output()
        .unwrap();
    assert!(create.status.success());
    let caches = |opens: &str| -> BTreeMap<String, (u64, u64)> {
        let run = tracekit(
            [
                "slabratetop",
                "--json",
                "--top",
                "1000",
                "--",
                program.to_str().unwrap(),
                "opens",
                dir_text,
                opens,
                "0",
            ],
            TIMEOUT,
        );
        run.assert_code(0);
        let json: serde_json::Value = run
            .stdout
            .lines()
            .find(|line| line.starts_with('{'))
            .map(|line| serde_json::from_str(line).unwrap())
            .expect("a JSON report");
        json["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                (
                    g["key"]["CACHE"].as_str().unwrap().to_string(),
                    (g["count"].as_u64().unwrap(), g["sum"].as_u64().unwrap()),
                )
            })
            .collect()
    };
    let none = caches("0");
    let many = caches("300");
    for cache in ["filp", "names_cache"] {
        let (n0, b0) = none.get(cache).copied().unwrap_or_default();
        let (n1, b1) = many[cache];
        assert_eq!(n1 - n0, 300, "{cache}: {none:?} {many:?}");
        // One cache hands out objects of one size.
        assert_eq!((b1 - b0) % 300, 0, "{cache}");
        assert_eq!((b1 - b0) / 300, b1 / n1, "{cache}");
    }
}
