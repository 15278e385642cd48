//! The USDT fixture's probes: exact counts and histograms of known arguments, semaphores,
//! `list`, and the operand forms of optimized code (RIP-relative and indexed).

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use tracekit_tests::{ensure_package, fixture, require_root, run, tracekit, wait_output};

const TIMEOUT: Duration = Duration::from_secs(120);

/// The USDT fixture (`tests/fixtures/tk_usdt.c`), built against `<sys/sdt.h>`.
fn usdt_fixture(test: &str) -> Option<PathBuf> {
    let sdt = || {
        [
            "/usr/include/sys/sdt.h",
            "/usr/include/x86_64-linux-gnu/sys/sdt.h",
        ]
        .iter()
        .any(|p| Path::new(p).is_file())
    };
    ensure_package(test, "systemtap-sdt-dev", sdt).then(|| fixture("tk_usdt"))
}

/// `name=VALUE` of a fixture's stdout.
fn stdout_field(stdout: &str, name: &str) -> u64 {
    stdout
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {name} in {stdout}"))
        .parse()
        .unwrap()
}

/// USDT probes of the C fixture on the CLI: `tk:tick` fires exactly 1000 times with known
/// arguments (arg0 = i, arg1 = 16 or 4096, arg2 = -3 as a short, arg3 = 5 a constant; at -O0
/// they are %rbp-relative memory and a constant), so `count` says 1000, `hist --value
/// arg1` has 500 in each of two buckets, the signed and constant arguments group, and the
/// sum of arg0 is 0 + ... + 999. The `U:` spelling and wildcards over names and providers
/// count per probe; a name that matches nothing is a usage error with a suggestion.
#[test]
fn usdt_fixture_counts_and_histograms() {
    require_root();
    let Some(binary) = usdt_fixture("usdt_fixture") else {
        return;
    };
    let bin = binary.to_str().unwrap();
    let count = tracekit(
        [
            "count",
            &format!("usdt:{bin}:tk:tick"),
            "--json",
            "--",
            bin,
            "ticks",
            "1000",
        ],
        TIMEOUT,
    );
    count.assert_code(0);
    let json = tracekit_tests::parse_json(&count.stdout);
    assert_eq!(tracekit_tests::total_count(&json), 1000, "{count:#?}");
    assert_eq!(json["groups"][0]["key"]["probe"], "tk:tick", "{json}");

    let hist = tracekit(
        [
            "hist",
            &format!("usdt:{bin}:tick"),
            "--value",
            "arg1",
            "--by",
            "arg2,arg3",
            "--json",
            "--",
            bin,
            "ticks",
            "1000",
        ],
        TIMEOUT,
    );
    hist.assert_code(0);
    let json = tracekit_tests::parse_json(&hist.stdout);
    assert_eq!(tracekit_tests::bucket(&json, 16), 500, "{json}");
    assert_eq!(tracekit_tests::bucket(&json, 4096), 500, "{json}");
    assert_eq!(tracekit_tests::total_count(&json), 1000, "{json}");
    let groups = json["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{json}");
    assert_eq!(groups[0]["key"]["arg2"], -3, "{json}");
    assert_eq!(groups[0]["key"]["arg3"], 5, "{json}");
    assert_eq!(
        json["stats"]["read_errors"].as_u64().unwrap_or(0),
        0,
        "{json}"
    );

    let sum = tracekit(
        [
            "hist",
            &format!("U:{bin}:tk:tick"),
            "--value",
            "arg0",
            "--json",
            "--",
            bin,
            "ticks",
            "1000",
        ],
        TIMEOUT,
    );
    sum.assert_code(0);
    let json = tracekit_tests::parse_json(&sum.stdout);
    assert_eq!(json["groups"][0]["sum"], 999 * 1000 / 2, "{json}");

    // Wildcards over providers and names: one row per probe, the unfired one absent.
    let wild = tracekit(
        ["count", &format!("U:{bin}:t?:*"), "--", bin, "ticks", "300"],
        TIMEOUT,
    );
    wild.assert_code(0);
    assert!(
        wild.stdout
            .lines()
            .any(|line| line.split_whitespace().collect::<Vec<_>>() == ["tk:tick", "300"]),
        "{wild:#?}"
    );
    assert!(
        wild.stderr.contains("2 probes, 2 sites"),
        "the banner counts probes and sites: {wild:#?}"
    );

    let typo = tracekit(["count", &format!("usdt:{bin}:tk:tock")], TIMEOUT);
    typo.assert_code(2);
    assert!(
        typo.stderr.contains(&format!(
            "no USDT probe `tk:tock` in {bin}; did you mean `tk:tick`"
        )),
        "{typo:#?}"
    );
    let arg = tracekit(
        ["hist", &format!("usdt:{bin}:tk:guarded"), "--value", "arg3"],
        TIMEOUT,
    );
    arg.assert_code(2);
    assert!(
        arg.stderr
            .contains("arg3: USDT probe tk:guarded has 1 argument"),
        "{arg:#?}"
    );
}

/// `tk:guarded` is behind a semaphore: the fixture fires it only while a tracer is
/// attached. `count -p PID -d 1` on a 3 s run counts what it fired (all of it but the
/// short windows where the kernel set the semaphore before linking the program, or cleared
/// it after unlinking), which is about a third of its iterations, and the semaphore is back
/// to 0 at exit.
#[test]
fn usdt_semaphore_only_while_attached() {
    require_root();
    let Some(binary) = usdt_fixture("usdt_semaphore") else {
        return;
    };
    let bin = binary.to_str().unwrap();
    let fixture = Command::new(&binary)
        .args(["guarded", "3000"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let count = tracekit(
        [
            "count",
            &format!("usdt:{bin}:tk:guarded"),
            "-p",
            &fixture.id().to_string(),
            "-d",
            "1",
            "--json",
        ],
        TIMEOUT,
    );
    let out = wait_output(fixture, TIMEOUT);
    count.assert_code(0);
    let counted = tracekit_tests::total_count(&tracekit_tests::parse_json(&count.stdout));
    let (iterations, fired) = (
        stdout_field(&out.stdout, "iterations"),
        stdout_field(&out.stdout, "fired"),
    );
    assert!(
        counted <= fired && counted * 10 >= fired * 9,
        "counted {counted}: {}",
        out.stdout
    );
    assert!(fired > 0 && fired < iterations / 2, "{}", out.stdout);
    assert_eq!(stdout_field(&out.stdout, "semaphore_at_exit"), 0);
}

/// `list usdt:BINARY` shows each probe with its argument specs and semaphore; `list usdt -p
/// PID` the probes of every file the process maps; `list --fields` the arguments.
#[test]
fn usdt_list_probes_and_fields() {
    require_root();
    let Some(binary) = usdt_fixture("usdt_list") else {
        return;
    };
    let bin = binary.to_str().unwrap();
    let list = tracekit(["list", &format!("usdt:{bin}")], TIMEOUT);
    list.assert_code(0);
    let lines: Vec<&str> = list.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{list:#?}");
    assert!(
        lines[0]
            .trim_start()
            .starts_with(&format!("usdt:{bin}:tk:tick"))
            && lines[0].contains("[USDT probe, semaphore]")
            && lines[0]
                .split_whitespace()
                .filter(|w| w.contains('@'))
                .count()
                == 4,
        "{list:#?}"
    );
    assert!(
        lines[1].contains(&format!("usdt:{bin}:tk:guarded")),
        "{list:#?}"
    );

    let mut sleeper = Command::new(&binary)
        .args(["guarded", "5000"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let by_pid = tracekit(["list", "usdt", "-p", &sleeper.id().to_string()], TIMEOUT);
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    by_pid.assert_code(0);
    assert!(
        by_pid.stdout.contains(&format!("usdt:{bin}:tk:guarded")),
        "{by_pid:#?}"
    );

    let fields = tracekit(
        ["list", "--fields", &format!("usdt:{bin}:tk:tick")],
        TIMEOUT,
    );
    fields.assert_code(0);
    assert!(
        fields
            .stdout
            .starts_with(&format!("usdt:{bin}:tk:tick: arg0 (signed, 4 bytes, -4@"))
            && fields.stdout.contains("arg3 (signed, 4 bytes, -4@$5)"),
        "{fields:#?}"
    );
}

/// The operand forms of optimized code, in the fixture built `-O2 -fPIE -pie` and `-O2
/// -fno-pie -no-pie`: a global read RIP-relative (`-8@tk_global(%rip)`, found in the symbol
/// table and read at its distance from the probe, wherever ASLR put the binary), an element
/// of a stack array read base + index × scale (`-4@(%rsp,%rax,4)`), and an element of a
/// global array, base + index × scale in the PIE and absolute + index × scale
/// (`-4@tk_table(,%rax,4)`) in the other. The fixture fires 800 times: arg0 is 16 or 4096
/// (400 each), arg1 cycles through 1, 4, 16, ..., 16384 (100 each), so every log2 bucket is
/// exact, arg2 through 1000..1007 (100 each). A thread-local argument (`%fs:`) is a usage
/// error naming the probe and the operand, never a wrong value.
#[test]
fn usdt_rip_relative_and_indexed_arguments() {
    require_root();
    let test = "usdt_operands";
    let sdt = || {
        [
            "/usr/include/sys/sdt.h",
            "/usr/include/x86_64-linux-gnu/sys/sdt.h",
        ]
        .iter()
        .any(|p| Path::new(p).is_file())
    };
    if !ensure_package(test, "systemtap-sdt-dev", sdt) {
        return;
    }
    for (name, table_form) in [
        ("tk_usdt_operands", ",4)"),
        ("tk_usdt_operands_nopie", "-4@tk_table(,%rax,4)"),
    ] {
        let binary = tracekit_tests::fixture_with(name, tracekit_tests::fixture_flags(name));
        let bin = binary.to_str().unwrap();
        // The compiler wrote the forms this test is about (the note's specs, as `readelf -n`
        // shows them).
        let list = tracekit(["list", &format!("usdt:{bin}")], TIMEOUT);
        list.assert_code(0);
        let operands = list
            .stdout
            .lines()
            .find(|line| line.contains(":tk:operands "))
            .unwrap_or_else(|| panic!("no tk:operands: {list:#?}"));
        let specs: Vec<&str> = operands.split_whitespace().skip(3).collect();
        assert!(
            specs.len() == 3
                && specs[0] == "-8@tk_global(%rip)"
                && specs[1].ends_with("(%rsp,%rax,4)")
                && specs[2].contains(table_form),
            "gcc wrote other operand forms in {name}: {list:#?}"
        );
        let run = |args: &[&str]| {
            let probe = format!("usdt:{bin}:tk:operands");
            let mut all = vec![args[0], &probe];
            all.extend_from_slice(&args[1..]);
            all.extend_from_slice(&["--json", "--", bin, "800"]);
            let out = tracekit(all, TIMEOUT);
            out.assert_code(0);
            let json = tracekit_tests::parse_json(&out.stdout);
            assert_eq!(tracekit_tests::total_count(&json), 800, "{name}: {json}");
            assert_eq!(
                json["stats"]["read_errors"].as_u64().unwrap_or(0),
                0,
                "{name}: {json}"
            );
            json
        };
        let global = run(&["hist", "--value", "arg0"]);
        assert_eq!(tracekit_tests::bucket(&global, 16), 400, "{global}");
        assert_eq!(tracekit_tests::bucket(&global, 4096), 400, "{global}");
        assert_eq!(
            global["groups"][0]["sum"],
            400 * 16 + 400 * 4096,
            "{name}: {global}"
        );
        let element = run(&["hist", "--value", "arg1"]);
        // 1 is in the first bucket, [0, 1].
        for low in [0, 4, 16, 64, 256, 1024, 4096, 16384] {
            assert_eq!(
                tracekit_tests::bucket(&element, low),
                100,
                "{name}: bucket {low}: {element}"
            );
        }
        let table = run(&["count", "--by", "arg2"]);
        let mut rows: Vec<(u64, u64)> = table["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                (
                    g["key"]["arg2"].as_u64().unwrap(),
                    g["count"].as_u64().unwrap(),
                )
            })
            .collect();
        rows.sort_unstable();
        assert_eq!(
            rows,
            (1000..1008).map(|v| (v, 100)).collect::<Vec<_>>(),
            "{name}: {table}"
        );

        let tls = tracekit(
            ["hist", &format!("usdt:{bin}:tk:tls"), "--value", "arg0"],
            TIMEOUT,
        );
        tls.assert_code(2);
        assert!(
            tls.stderr.contains(
                "arg0: usdt:tk:tls cannot read its argument `-8@%fs:tk_tls@tpoff`: \
                 segment-relative operands (%fs:, thread-local variables) are not supported"
            ),
            "{name}: {tls:#?}"
        );
    }
}

/// The indexed arguments of the `-O2 -fPIE` fixture (`-4@(%rsp,%rax,4)` and
/// `-4@(%rsi,%rax,4)`: base + index × scale) read the same values in tracekit and bpftrace:
/// `count --by arg1,arg2` and bpftrace's `@[arg1, arg2] = count()` over 800 firings of each
/// tool's own run give the same eight pairs, 100 each. (Its RIP-relative arg0 bpftrace 0.17
/// cannot read; see usdt_postgres_rip_relative_arguments_match_bpftrace.)
#[test]
fn usdt_indexed_arguments_match_bpftrace() {
    require_root();
    let test = "usdt_indexed_bpftrace";
    let sdt = || {
        [
            "/usr/include/sys/sdt.h",
            "/usr/include/x86_64-linux-gnu/sys/sdt.h",
        ]
        .iter()
        .any(|p| Path::new(p).is_file())
    };
    if !ensure_package(test, "systemtap-sdt-dev", sdt)
        || !ensure_package(test, "bpftrace", || {
            Path::new("/usr/bin/bpftrace").is_file()
        })
    {
        return;
    }
    let name = "tk_usdt_operands";
    let binary = tracekit_tests::fixture_with(name, tracekit_tests::fixture_flags(name));
    let bin = binary.to_str().unwrap();
    let count = tracekit(
        [
            "count",
            &format!("usdt:{bin}:tk:operands"),
            "--by",
            "arg1,arg2",
            "--json",
            "--",
            bin,
            "800",
        ],
        TIMEOUT,
    );
    count.assert_code(0);
    let json = tracekit_tests::parse_json(&count.stdout);
    let mut tracekit_pairs: Vec<(i64, i64, u64)> = json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["key"]["arg1"].as_i64().unwrap(),
                g["key"]["arg2"].as_i64().unwrap(),
                g["count"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut bpftrace = Command::new("bpftrace");
    bpftrace.args([
        "-e",
        &format!("usdt:{bin}:tk:operands {{ @[arg1, arg2] = count(); }}"),
        "-c",
        &format!("{bin} 800"),
    ]);
    let out = run(bpftrace, TIMEOUT);
    out.assert_code(0);
    // `@[1, 1000]: 100`
    let mut bpftrace_pairs: Vec<(i64, i64, u64)> = out
        .stdout
        .lines()
        .filter_map(|line| {
            let (key, n) = line.strip_prefix("@[")?.split_once("]: ")?;
            let (a, b) = key.split_once(", ")?;
            Some((a.parse().ok()?, b.parse().ok()?, n.parse().ok()?))
        })
        .collect();
    tracekit_pairs.sort_unstable();
    bpftrace_pairs.sort_unstable();
    let expected: Vec<(i64, i64, u64)> = (0..8).map(|j| (1 << (2 * j), 1000 + j, 100)).collect();
    assert_eq!(tracekit_pairs, expected, "{json}");
    assert_eq!(bpftrace_pairs, tracekit_pairs, "{out:#?}");
}
