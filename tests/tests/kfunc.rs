//! Kernel function probes (kprobe, kretprobe, fentry, fexit) against a fixture doing exactly
//! N reads of 4096 bytes. They need kprobes and BPF trampolines, which the development
//! machine's kernel lacks: there they skip with the reason, and `cargo xtask test --vm` runs
//! them in stock Debian kernels under qemu.

use std::time::{Duration, Instant};

use tracekit_tests::{
    bucket, fixture, kill, kprobes_or_skip, parse_json, require_root, spawn_tracekit, total_count,
    tracekit, wait_for_stderr, wait_output,
};

// Emulated VMs run everything 2-10x slower.
const TIMEOUT: Duration = Duration::from_secs(300);

fn reads() -> String {
    fixture("tk_reads").to_string_lossy().into_owned()
}

/// `funccount vfs_read` counts at least the fixture's N reads.
#[test]
fn kfunc_funccount_vfs_read() {
    require_root();
    if !kprobes_or_skip("kfunc_funccount_vfs_read") {
        return;
    }
    let run = tracekit(
        ["funccount", "vfs_read", "--json", "--", &reads(), "500"],
        TIMEOUT,
    );
    run.assert_code(0);
    let json = parse_json(&run.stdout);
    assert!(total_count(&json) >= 500, "{json:#}");
    assert_eq!(json["groups"][0]["key"]["function"], "vfs_read", "{json:#}");
}

/// `hist kretprobe:vfs_read --value retval` puts the 4096-byte reads in the 4096 bucket.
#[test]
fn kfunc_kretprobe_retval_bucket() {
    require_root();
    if !kprobes_or_skip("kfunc_kretprobe_retval_bucket") {
        return;
    }
    let run = tracekit(
        [
            "hist",
            "kretprobe:vfs_read",
            "--value",
            "retval",
            "--json",
            "--",
            &reads(),
            "300",
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let json = parse_json(&run.stdout);
    assert!(bucket(&json, 4096) >= 300, "{json:#}");
}

/// A BTF parameter name (`count` of `vfs_read`) works as a value and in a filter.
#[test]
fn kfunc_btf_argument_by_name() {
    require_root();
    if !kprobes_or_skip("kfunc_btf_argument_by_name") {
        return;
    }
    let run = tracekit(
        [
            "hist",
            "kprobe:vfs_read",
            "--value",
            "count",
            "--filter",
            "count == 4096",
            "--json",
            "--",
            &reads(),
            "300",
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let json = parse_json(&run.stdout);
    assert!(bucket(&json, 4096) >= 300, "{json:#}");
    assert_eq!(
        bucket(&json, 4096),
        total_count(&json),
        "only count == 4096 passed: {json:#}"
    );
}

/// The fentry path and the forced kprobe path count the same calls, and -v says which ran.
#[test]
fn kfunc_fentry_and_kprobe_agree() {
    require_root();
    if !kprobes_or_skip("kfunc_fentry_and_kprobe_agree") {
        return;
    }
    let mut counts = Vec::new();
    for (flag, note) in [
        ("--fentry", "attached fentry vfs_read"),
        ("--kprobe", "attached kprobe"),
    ] {
        let run = tracekit(
            [
                "funccount",
                flag,
                "-v",
                "vfs_read",
                "--json",
                "--",
                &reads(),
                "400",
            ],
            TIMEOUT,
        );
        run.assert_code(0);
        assert!(run.stderr.contains(note), "{flag}: {}", run.stderr);
        counts.push(total_count(&parse_json(&run.stdout)));
    }
    assert!(counts[0] >= 400, "{counts:?}");
    assert_eq!(counts[0], counts[1], "fentry and kprobe counts differ");
}

/// Latency of a kernel function: one entry per call, through the start stage.
#[test]
fn kfunc_funclatency_counts_calls() {
    require_root();
    if !kprobes_or_skip("kfunc_funclatency_counts_calls") {
        return;
    }
    let run = tracekit(
        [
            "funclatency",
            "vfs_read",
            "--unit",
            "ns",
            "--json",
            "--",
            &reads(),
            "200",
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let json = parse_json(&run.stdout);
    assert!(total_count(&json) >= 200, "{json:#}");
    assert_eq!(json["unit"], "nsecs");
}

/// A wildcard matching 100+ functions attaches and detaches in under 2 s, at native speed.
/// Under TCG emulation (`TRACEKIT_VM_EMULATED=1`, set by the VM matrix when KVM does not
/// work), where the ENVIRONMENT notes measure setup 10-15x slower, the bound scales by 15.
///
/// Known gap: with one kprobe per function, attaching and detaching cost ~60 ms per function
/// under emulation (serialized text patching in the kernel); meeting 2 s natively for
/// hundreds of functions needs kprobe.multi links, which aya 0.14 cannot load.
#[test]
fn kfunc_wildcard_attach_detach_is_fast() {
    require_root();
    if !kprobes_or_skip("kfunc_wildcard_attach_detach_is_fast") {
        return;
    }
    let started = Instant::now();
    let mut child = spawn_tracekit(["funccount", "-v", "udp*"]);
    let lines = wait_for_stderr(&mut child, "Hit Ctrl-C to end.", TIMEOUT);
    let attach = started.elapsed();
    let functions: usize = lines
        .iter()
        .find_map(|l| l.strip_prefix("tracekit: attached kprobe on "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no attach note: {lines:?}"));
    assert!(functions >= 100, "udp* matched only {functions} functions");
    let stopping = Instant::now();
    kill(child.id(), libc::SIGINT);
    let run = wait_output(child, TIMEOUT);
    run.assert_code(0);
    let detach = stopping.elapsed();
    let emulated = std::env::var("TRACEKIT_VM_EMULATED").is_ok_and(|v| v == "1");
    let bound = Duration::from_secs(if emulated { 30 } else { 2 });
    eprintln!(
        "{functions} kprobes: attach {attach:?}, detach {detach:?} (bound {bound:?}{})",
        if emulated { ", emulated" } else { "" }
    );
    assert!(
        attach + detach < bound,
        "{functions} kprobes: attach {attach:?}, detach {detach:?}"
    );
}
