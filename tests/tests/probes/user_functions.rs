//! User function probes (uprobe, uretprobe), trace and stackcount on the host, against
//! `tk_funcs`: known malloc sizes, a function called N times, a 10 ms sleeper, known return
//! values, page touching.

use std::{
    io::Write as _,
    process::{Command, Stdio},
    time::Duration,
};

use tracekit_tests::{
    bucket, fixture, parse_folded, parse_json, require_root, scratch, spawn_tracekit, tracekit,
    wait_for_stderr, wait_output,
};

use super::funcs;

const TIMEOUT: Duration = Duration::from_secs(60);

/// Starts `tk_funcs --wait ARGS`, runs tracekit with `-p PID` until attached, lets the
/// fixture go, and returns tracekit's output once the fixture exited.
fn with_pid(tool_args: &[&str], fixture_args: &[&str]) -> tracekit_tests::Output {
    let mut target = Command::new(funcs())
        .arg("--wait")
        .args(fixture_args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("tk_funcs starts");
    let pid = target.id().to_string();
    let mut args: Vec<&str> = tool_args.to_vec();
    args.extend(["-p", &pid]);
    let mut tool = spawn_tracekit(&args);
    wait_for_stderr(&mut tool, "Hit Ctrl-C to end.", TIMEOUT);
    target.stdin.take().unwrap().write_all(b"go\n").unwrap();
    assert!(target.wait().unwrap().success());
    // -p ends when the process exits.
    wait_output(tool, TIMEOUT)
}

/// Exact counts of known malloc sizes in the 16, 4096 and 1048576 buckets.
#[test]
fn ufunc_hist_malloc_sizes_exact() {
    require_root();
    let run = with_pid(
        &["hist", "uprobe:libc:malloc", "--value", "arg0", "--json"],
        &["malloc"],
    );
    run.assert_code(0);
    let json = parse_json(&run.stdout);
    assert_eq!(bucket(&json, 16), 1000, "{json:#}");
    assert_eq!(bucket(&json, 4096), 100, "{json:#}");
    assert_eq!(bucket(&json, 1048576), 10, "{json:#}");
}

/// `trace` with a kernel-side filter prints exactly the 110 large mallocs.
#[test]
fn ufunc_trace_filtered_mallocs_exact_lines() {
    require_root();
    let run = with_pid(
        &[
            "trace",
            "uprobe:libc:malloc",
            "--filter",
            "arg0 >= 4096",
            "--print",
            "arg0",
        ],
        &["malloc"],
    );
    run.assert_code(0);
    let lines: Vec<&str> = run.stdout.lines().skip(1).collect();
    assert_eq!(lines.len(), 110, "{}", run.stdout);
    assert!(
        lines
            .iter()
            .all(|l| l.contains("tk_funcs") && l.contains("uprobe:malloc"))
    );
    let sizes: Vec<u64> = lines
        .iter()
        .map(|l| l.split_whitespace().last().unwrap().parse().unwrap())
        .collect();
    assert_eq!(sizes.iter().filter(|&&s| s == 4096).count(), 100);
    assert_eq!(sizes.iter().filter(|&&s| s == 1048576).count(), 10);
}

/// funccount of the fixture's own function says N.
#[test]
fn ufunc_funccount_exact() {
    require_root();
    let spec = format!("{}:tick", funcs());
    let run = tracekit(
        [
            "funccount",
            &spec,
            "--json",
            "--",
            &funcs(),
            "calls",
            "4242",
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let json = parse_json(&run.stdout);
    assert_eq!(json["groups"][0]["key"]["function"], "tick", "{json:#}");
    assert_eq!(json["groups"][0]["count"], 4242, "{json:#}");
}

/// A function sleeping 10 ms lands in the bucket holding 10 ms.
#[test]
fn ufunc_funclatency_ten_ms() {
    require_root();
    let spec = format!("{}:sleeper", funcs());
    let run = tracekit(
        [
            "funclatency",
            &spec,
            "--unit",
            "ms",
            "--json",
            "--",
            &funcs(),
            "sleep",
            "5",
            "10",
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let json = parse_json(&run.stdout);
    assert_eq!(
        bucket(&json, 8),
        5,
        "10 ms calls must fall in 8 -> 15 ms: {json:#}"
    );
}

/// uretprobe return values land in their buckets.
#[test]
fn ufunc_uretprobe_return_values() {
    require_root();
    let spec = format!("uretprobe:{}:answer", funcs());
    let run = tracekit(
        [
            "hist",
            &spec,
            "--value",
            "retval",
            "--json",
            "--",
            &funcs(),
            "returns",
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let json = parse_json(&run.stdout);
    assert_eq!(
        (bucket(&json, 64), bucket(&json, 512), bucket(&json, 65536)),
        (3, 2, 1),
        "{json:#}"
    );
}

/// stackcount on page faults names the function that touches memory, once per
/// page. 20000 pages keep the command alive for tens of milliseconds (a `-- CMD` is also
/// held at its exit until its memory map is read: docs/profiling.md, Commands held at exit).
#[test]
fn ufunc_stackcount_page_faults() {
    require_root();
    const PAGES: u64 = 20_000;
    let dir = scratch("ufunc_stackcount_page_faults");
    let out = dir.join("faults.folded");
    let run = tracekit(
        [
            "stackcount",
            "software:page-faults",
            "-o",
            out.to_str().unwrap(),
            "--",
            &funcs(),
            "touch",
            &PAGES.to_string(),
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
    let touching: u64 = folded
        .iter()
        .filter(|(path, _)| path.starts_with("tk_funcs;") && path.ends_with(";main;touch_pages"))
        .map(|(_, c)| c)
        .sum();
    assert_eq!(touching, PAGES, "faults in touch_pages: {folded:#?}");
}

/// stackcount on a syscall tracepoint has N under the fixture's frames. Their
/// kernel frames are named by the kernel (the `ksyms` program's `%ps` lookups): each is a
/// /proc/kallsyms name, at least the two of the syscall entry path.
#[test]
fn ufunc_stackcount_syscall_tracepoint() {
    require_root();
    let dir = scratch("ufunc_stackcount_syscall_tracepoint");
    let out = dir.join("getppid.folded");
    let fixture = fixture("tk_syscalls");
    let run = tracekit(
        [
            "stackcount",
            "t:syscalls:sys_enter_getppid",
            "-o",
            out.to_str().unwrap(),
            "--",
            fixture.to_str().unwrap(),
            "3333",
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
    let under: u64 = folded
        .iter()
        .filter(|(path, _)| {
            path.starts_with("tk_syscalls;") && path.contains(";main;syscall_loop;")
        })
        .map(|(_, c)| c)
        .sum();
    assert_eq!(under, 3333, "{folded:#?}");

    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap();
    let names: std::collections::HashSet<&str> = kallsyms
        .lines()
        .filter_map(|line| line.split_whitespace().nth(2))
        .collect();
    for (path, count) in folded.iter().filter(|(p, _)| p.contains(";syscall_loop;")) {
        let kernel: Vec<&str> = path
            .split(';')
            .filter_map(|f| f.strip_suffix("_[k]"))
            .collect();
        assert!(
            kernel.len() >= 2,
            "{count} stacks without kernel frames: {path}"
        );
        for frame in kernel {
            assert!(
                names.contains(frame),
                "{frame} is not in /proc/kallsyms: {path}"
            );
        }
    }
}

/// Bad function probes, one line, exit 2; kernel functions on a kernel without kprobes or
/// trampolines, one line naming both, exit 1 (the host part).
#[test]
fn ufunc_bad_input_one_line_errors() {
    require_root();
    let cases: [(&[&str], i32, &str); 6] = [
        (
            &["funccount", "no_such_function_xyz"],
            2,
            "no kernel function",
        ),
        (&["funccount", "libc:mallocx"], 2, "did you mean `malloc`"),
        (&["funccount", "/no/such/binary:f"], 2, "no such file"),
        (&["trace", "uprobe:no-such-lib-xyz:f"], 2, "not found"),
        (
            &["hist", "uprobe:libc:malloc", "--value", "arg7"],
            2,
            "has no field `arg7`",
        ),
        (
            &["hist", "kprobe:vfs_read", "--value", "cnt"],
            2,
            "count (arg2, size_t)",
        ),
    ];
    for (args, code, needle) in cases {
        let mut args = args.to_vec();
        args.extend(["-d", "1"]);
        let run = tracekit(&args, TIMEOUT);
        assert_eq!(run.code(), code, "{args:?}: {run:#?}");
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {}", run.stderr);
        assert!(lines[0].contains(needle), "{args:?}: {}", run.stderr);
    }
    if !std::path::Path::new("/sys/bus/event_source/devices/kprobe").exists() {
        let run = tracekit(["funccount", "vfs_read", "-d", "1"], TIMEOUT);
        assert_eq!(run.code(), 1, "{run:#?}");
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        assert!(
            run.stderr.contains("CONFIG_KPROBES is not set"),
            "{}",
            run.stderr
        );
    }
}
