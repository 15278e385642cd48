//! Hostile input: deep and long filters, long probe names, paths and `-- CMD` arguments, map
//! sizes the kernel refuses, binaries that are no ELF files, offsets past a function's end,
//! numbers out of range and intervals of a nanosecond. Each run must end at once with exit
//! status 2 and one line on stderr that names the bad part (quoting at most 80 characters
//! of it) and what would be valid.

use std::time::Duration;

use tracekit_tests::{Output, require_root, tracekit};

const TIMEOUT: Duration = Duration::from_secs(60);

/// The most stderr a refused input may cost: one line, inputs quoted short.
const MAX_STDERR: usize = 1024;

fn run(args: &[&str]) -> Output {
    require_root();
    tracekit(args, TIMEOUT)
}

/// Runs tracekit with `args` and asserts exit status 2 and exactly `message` on stderr.
fn refused(args: &[&str], message: &str) {
    let out = run(args);
    assert_eq!(
        out.stderr.len().min(MAX_STDERR + 1),
        out.stderr.len(),
        "{} bytes of stderr: {}",
        out.stderr.len(),
        tracekit_tests_head(&out.stderr)
    );
    out.assert_code(2);
    assert_eq!(out.stderr, format!("tracekit: {message}\n"));
    assert_eq!(out.stdout, "");
}

/// The first 300 bytes of a long text, for failure messages that stay readable.
fn tracekit_tests_head(text: &str) -> String {
    text.chars().take(300).collect()
}

/// 1,000 nested `(` or `!` overflowed the parser's stack (SIGABRT); 10,000 are
/// longer than a filter may be.
#[test]
fn hostile_deep_filters_name_the_limit() {
    for open in ["(", "!"] {
        let filter = format!("{}id == 1", open.repeat(1_000));
        refused(
            &[
                "hist",
                "raw_syscalls:sys_enter",
                "-d",
                "1",
                "--filter",
                &filter,
            ],
            &format!(
                "--filter '{}…': more than 32 levels of `(` and `!`; filters nest at most 32 \
                 deep at column 33",
                open.repeat(79)
            ),
        );
    }
    let filter = format!("{}id == 1{}", "(".repeat(10_000), ")".repeat(10_000));
    refused(
        &[
            "hist",
            "raw_syscalls:sys_enter",
            "-d",
            "1",
            "--filter",
            &filter,
        ],
        &format!(
            "--filter '{}…{}': 20007 bytes long; a filter is at most 4096 bytes",
            "(".repeat(53),
            ")".repeat(26)
        ),
    );
    // 32 levels are fine, and mean what they say: no event has id 1 and id 2.
    let filter = format!("{}id == 1 && id == 2{}", "(".repeat(32), ")".repeat(32));
    let out = run(&[
        "count",
        "raw_syscalls:sys_enter",
        "-d",
        "0.5",
        "--json",
        "--filter",
        &filter,
    ]);
    out.assert_code(0);
    assert_eq!(
        tracekit_tests::total_count(&tracekit_tests::parse_json(&out.stdout)),
        0
    );
}

/// Errors quote at most 80 characters of a 100 KiB filter, probe, name or path.
#[test]
fn hostile_long_inputs_are_quoted_short() {
    let long = "x".repeat(100 * 1024);
    // A long filter, wrong in the middle: the quote is the part around the column.
    let filter = format!("{}{} == 1", "id == 1 && ".repeat(12), "y".repeat(3000));
    refused(
        &[
            "hist",
            "raw_syscalls:sys_enter",
            "-d",
            "1",
            "--filter",
            &filter,
        ],
        &format!(
            "--filter '…== 1 && id == 1 && {}…': unknown field `{}…{}`; \
             raw_syscalls:sys_enter has id (long); and pid, tid, cpu, comm, cgroup at column 133",
            "y".repeat(59),
            "y".repeat(53),
            "y".repeat(26)
        ),
    );
    refused(
        &[
            "hist",
            "raw_syscalls:sys_enter",
            "-d",
            "1",
            "--filter",
            &long,
        ],
        &format!(
            "--filter '{}…{}': 102400 bytes long; a filter is at most 4096 bytes",
            "x".repeat(53),
            "x".repeat(26)
        ),
    );
    // Probe names: over the length limit, and under it but unknown.
    let probe = format!("tracepoint:{long}:x");
    refused(
        &["count", &probe, "-d", "1"],
        &format!(
            "probe `tracepoint:{}…{}:x`: 102413 bytes long; a probe is at most 8192 bytes",
            "x".repeat(42),
            "x".repeat(24)
        ),
    );
    let probe = format!("sched:{}", "x".repeat(5000));
    refused(
        &["count", &probe, "-d", "1"],
        &format!(
            "unknown tracepoint `sched:{}…{}` (`tracekit list` shows them)",
            "x".repeat(47),
            "x".repeat(26)
        ),
    );
    // Names of fields and output files.
    refused(
        &["hist", "raw_syscalls:sys_enter", "-d", "1", "--by", &long],
        &format!(
            "--by {q}: raw_syscalls:sys_enter has no field `{q}`; it has id (long); and pid, \
             tid, cpu, comm, cgroup",
            q = format!("{}…{}", "x".repeat(53), "x".repeat(26))
        ),
    );
    let output = format!("/tmp/{}.xyz", "o".repeat(200));
    refused(
        &["hist", "raw_syscalls:sys_enter", "-d", "1", "-o", &output],
        &format!(
            "-o /tmp/{}…{}.xyz: cannot tell the format from the extension `.xyz`; use one of \
             .txt, .json",
            "o".repeat(48),
            "o".repeat(22)
        ),
    );
    // Flags clap refuses quote the value short too.
    refused(
        &["hist", "raw_syscalls:sys_enter", "--max-groups", &long],
        &format!(
            "invalid value '{}…{}' for '--max-groups <N>': expected 1 to 134217728 entries \
             (the largest hash map the kernel makes) (see --help)",
            "x".repeat(53),
            "x".repeat(26)
        ),
    );
}

/// The `-- CMD` program and stat's `-e`: one line of bounded length naming it.
#[test]
fn hostile_long_commands_and_events_stay_one_short_line() {
    let program = format!("/nonexistent/{}", "x".repeat(100 * 1024));
    let out = run(&["count", "raw_syscalls:sys_enter", "--", &program]);
    out.assert_code(2);
    assert!(
        out.stderr.len() <= 2 * MAX_STDERR + 100,
        "{} bytes",
        out.stderr.len()
    );
    assert!(
        out.stderr.starts_with("tracekit: -- /nonexistent/xxxx")
            && out.stderr.ends_with("xxxx: no such file\n")
            && out.stderr.lines().count() == 1,
        "{}",
        tracekit_tests_head(&out.stderr)
    );
    let event = format!("sched:{}", "x".repeat(100 * 1024));
    refused(
        &["stat", "-e", &event, "-d", "1"],
        &format!(
            "probe `sched:{}…{}`: 102406 bytes long; a probe is at most 8192 bytes",
            "x".repeat(47),
            "x".repeat(26)
        ),
    );
}

/// Map sizes the kernel refuses are usage errors naming the flag and its range.
#[test]
fn hostile_map_sizes_name_the_flag_and_range() {
    let range = "expected 1 to 134217728 entries (the largest hash map the kernel makes) \
                 (see --help)";
    for (command, flag, value) in [
        ("hist", "--max-groups", "0"),
        ("hist", "--max-groups", "2000000000"),
        ("count", "--max-groups", "134217729"),
        ("hist", "--max-in-flight", "0"),
    ] {
        refused(
            &[command, "raw_syscalls:sys_enter", "-d", "1", flag, value],
            &format!("invalid value '{value}' for '{flag} <N>': {range}"),
        );
    }
    for flag in ["--stack-storage-size", "--count-map-size"] {
        refused(
            &["profile", "-d", "1", flag, "0"],
            &format!("invalid value '0' for '{flag} <N>': {range}"),
        );
    }
}

/// A directory and a device are named for what they are, not "no such file".
#[test]
fn hostile_uprobe_binaries_that_are_not_elf() {
    refused(
        &["hist", "uprobe:/usr/lib:malloc", "-d", "1"],
        "uprobe binary `/usr/lib`: is a directory",
    );
    refused(
        &["hist", "uprobe:/dev/zero:main", "-d", "1"],
        "uprobe binary `/dev/zero`: not an ELF file (a character device)",
    );
    refused(
        &["hist", "uprobe:/etc/passwd:main", "-d", "1"],
        "uprobe binary `/etc/passwd`: not an ELF file",
    );
    refused(
        &["hist", "uprobe:/no/such/binary:main", "-d", "1"],
        "uprobe binary `/no/such/binary`: no such file",
    );
    // USDT probes find their binary the same way and say what they are.
    refused(
        &["count", "usdt:/no/such/binary:tk:tick", "-d", "1"],
        "USDT binary `/no/such/binary`: no such file",
    );
    refused(
        &["list", "usdt:/usr/lib"],
        "USDT binary `/usr/lib`: is a directory",
    );
    refused(
        &["count", "usdt:no-such-program-xyz:tk:tick", "-d", "1"],
        "USDT binary `no-such-program-xyz` not found (not a path, a library known to ldconfig, \
         nor a program on PATH)",
    );
}

/// An offset past the function's end is refused before the kernel sees it.
#[test]
fn hostile_uprobe_offset_past_the_function() {
    let out = run(&["hist", "uprobe:libc:malloc+99999999", "-d", "1"]);
    out.assert_code(2);
    let size: u64 = out
        .stderr
        .strip_prefix("tracekit: uprobe offset +99999999: offset past the end of malloc (")
        .and_then(|rest| rest.strip_suffix(" bytes)\n"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected stderr: {}", out.stderr));
    // glibc's malloc is some hundreds of bytes.
    assert!((16..100_000).contains(&size), "malloc is {size} bytes");
    refused(
        &["hist", &format!("uprobe:libc:malloc+{size}"), "-d", "1"],
        &format!("uprobe offset +{size}: offset past the end of malloc ({size} bytes)"),
    );
    refused(
        &["hist", "uprobe:libc:malloc+0x", "-d", "1"],
        "uprobe offset `+0x` is not a number (decimal, or hex with 0x)",
    );
}

/// Numbers outside the field's range, and intervals below 10 ms.
#[test]
fn hostile_numbers_out_of_range() {
    refused(
        &[
            "hist",
            "raw_syscalls:sys_enter",
            "-d",
            "1",
            "--filter",
            "id > -9223372036854775809",
        ],
        "--filter 'id > -9223372036854775809': -9223372036854775809 is out of range for `id` \
         (s64: -9223372036854775808 to 9223372036854775807) at column 6",
    );
    refused(
        &[
            "count",
            "sched:sched_switch",
            "-d",
            "1",
            "--filter",
            "prev_pid == 4294967295",
        ],
        "--filter 'prev_pid == 4294967295': 4294967295 is out of range for `prev_pid` (s32: \
         -2147483648 to 2147483647) at column 13",
    );
    refused(
        &[
            "count",
            "raw_syscalls:sys_enter",
            "-d",
            "1",
            "--filter",
            "id == 99999999999999999999",
        ],
        "--filter 'id == 99999999999999999999': `99999999999999999999` is out of range: \
         numbers are 64-bit, -18446744073709551615 to 18446744073709551615 at column 7",
    );
    for (flag, value) in [
        ("-i", "1e-9"),
        ("-d", "1e-9"),
        ("-i", "0.001"),
        ("-d", "inf"),
    ] {
        let long = if flag == "-i" {
            "--interval"
        } else {
            "--duration"
        };
        refused(
            &["hist", "raw_syscalls:sys_enter", flag, value],
            &format!(
                "invalid value '{value}' for '{long} <SECONDS>': expected seconds from 0.01 \
                 (10 ms) to 1000000000, like 10 or 0.5 (see --help)"
            ),
        );
    }
    refused(
        &[
            "hist",
            "raw_syscalls:sys_enter",
            "--value",
            "id",
            "--linear=-9223372036854775808,9223372036854775807,1",
        ],
        "--linear -9223372036854775808,9223372036854775807,1: 18446744073709551615 buckets; \
         the kernel engine keeps at most 1000",
    );
}

/// User-space probes limited to a kernel thread (`-p 2`, kthreadd) could never
/// fire, and the run printed nothing and exited 0. Every probe kind that sees only user
/// code refuses it, naming the thread.
#[test]
fn hostile_user_probes_on_a_kernel_thread() {
    let comm = std::fs::read_to_string("/proc/2/comm").expect("pid 2 is kthreadd");
    let comm = comm.trim();
    let message = |probe: &str| {
        format!(
            "-p 2: pid 2 ({comm}) is a kernel thread and runs no user code, where {probe} \
             probes fire; choose a user process"
        )
    };
    refused(
        &["funclatency", "libc:malloc", "-p", "2"],
        &message("uprobe"),
    );
    refused(
        &["count", "uprobe:libc:malloc", "-p", "2", "-d", "1"],
        &message("uprobe"),
    );
    refused(
        &[
            "hist",
            "uretprobe:libc:malloc",
            "--value",
            "retval",
            "-p",
            "2",
        ],
        &message("uprobe"),
    );
    let usdt = tracekit_tests::fixture("tk_usdt");
    refused(
        &[
            "count",
            &format!("usdt:{}:tk:tick", usdt.display()),
            "-p",
            "2",
            "-d",
            "1",
        ],
        &message("USDT"),
    );
    // Stacks of user code only: profile, offcpu and stackcount with --user-only.
    let user_only = format!(
        "-p 2: pid 2 ({comm}) is a kernel thread and runs no user code, so --user-only finds \
         no stack; choose a user process"
    );
    refused(
        &["profile", "--user-only", "-p", "2", "-d", "1"],
        &user_only,
    );
    refused(&["offcpu", "-U", "-p", "2", "-d", "1"], &user_only);
    refused(
        &[
            "stackcount",
            "-U",
            "sched:sched_switch",
            "-p",
            "2",
            "-d",
            "1",
        ],
        &user_only,
    );
}

/// `-- /bin/true <1 MiB of arguments>` was echoed whole in the banner (and in
/// stat's report and JSON scope). Every echo of the command line quotes it short, as errors
/// quote inputs: 80 characters, start and end.
#[test]
fn hostile_long_command_lines_are_echoed_short() {
    // Ten arguments of 100 KiB (one argument may be at most 128 KiB: MAX_ARG_STRLEN).
    let args: Vec<String> = (0..10)
        .map(|i| format!("{i}{}", "a".repeat(100 * 1024)))
        .collect();
    let shown = format!("/bin/true 0{}…{}", "a".repeat(42), "a".repeat(26));
    let with_command = |head: &[&str]| {
        let mut all: Vec<&str> = head.to_vec();
        all.extend(["--", "/bin/true"]);
        all.extend(args.iter().map(String::as_str));
        let out = run(&all);
        out.assert_code(0);
        assert!(
            out.stdout.len() + out.stderr.len() < 2000,
            "{} + {} bytes: {}",
            out.stdout.len(),
            out.stderr.len(),
            tracekit_tests_head(&out.stderr)
        );
        out
    };
    let out = with_command(&["count", "syscalls:sys_enter_getppid"]);
    assert_eq!(
        out.stderr.lines().next(),
        Some(
            format!("Tracing syscalls:sys_enter_getppid for `{shown}`... Hit Ctrl-C to end.")
                .as_str()
        ),
        "{}",
        tracekit_tests_head(&out.stderr)
    );
    let out = with_command(&["stat", "-e", "task-clock"]);
    assert!(
        out.stdout
            .contains(&format!(" Performance counter stats for '{shown}':\n")),
        "{}",
        tracekit_tests_head(&out.stdout)
    );
    let out = with_command(&["stat", "-e", "task-clock", "--json"]);
    assert!(
        out.stdout.contains(&format!("\"scope\":\"`{shown}`\"")),
        "{}",
        tracekit_tests_head(&out.stdout)
    );
    let out = with_command(&["profile", "-F", "99"]);
    assert!(
        out.stderr
            .starts_with(&format!("Sampling on-CPU stacks of `{shown}` at 99 Hz")),
        "{}",
        tracekit_tests_head(&out.stderr)
    );
}
