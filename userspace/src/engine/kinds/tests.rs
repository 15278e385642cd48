use super::*;

#[test]
fn patterns_to_probes() {
    assert_eq!(function_probe("vfs_*", false).unwrap(), "kprobe:vfs_*");
    assert_eq!(
        function_probe("vfs_read", true).unwrap(),
        "kretprobe:vfs_read"
    );
    assert_eq!(
        function_probe("libc:malloc", false).unwrap(),
        "uprobe:libc:malloc"
    );
    assert_eq!(
        function_probe("/bin/app:f", true).unwrap(),
        "uretprobe:/bin/app:f"
    );
    assert_eq!(function_probe("f:vfs_read", false).unwrap(), "f:vfs_read");
    assert_eq!(function_probe("u:libc:free", false).unwrap(), "u:libc:free");
}

#[test]
fn parses_kinds_aliases_and_perf_form() {
    for (text, kind, target) in [
        (
            "tracepoint:block:block_rq_issue",
            "tracepoint",
            "block:block_rq_issue",
        ),
        (
            "t:syscalls:sys_enter_*",
            "tracepoint",
            "syscalls:sys_enter_*",
        ),
        (
            "block:block_rq_complete",
            "tracepoint",
            "block:block_rq_complete",
        ),
        ("k:vfs_read", "kprobe", "vfs_read"),
        ("kr:vfs_read", "kretprobe", "vfs_read"),
        ("uprobe:/bin/bash:readline", "uprobe", "/bin/bash:readline"),
        ("rt:sys_enter", "rawtracepoint", "sys_enter"),
        (
            "usdt:postgres:transaction__commit",
            "usdt",
            "postgres:transaction__commit",
        ),
        ("U:libc:libc:setjmp", "usdt", "libc:libc:setjmp"),
    ] {
        let spec = ProbeSpec::parse(text).unwrap();
        assert_eq!(
            (spec.kind.name(), spec.target.as_str()),
            (kind, target),
            "{text}"
        );
    }
}

#[test]
fn refuses_malformed_specs() {
    assert_eq!(
        ProbeSpec::parse("block").unwrap_err().to_string(),
        "probe `block`: expected KIND:TARGET (e.g. tracepoint:block:block_rq_issue) \
         or SYSTEM:EVENT (e.g. block:block_rq_issue)"
    );
    assert!(
        ProbeSpec::parse("foo:bar:baz")
            .unwrap_err()
            .to_string()
            .starts_with("probe `foo:bar:baz`: unknown probe type `foo`; valid: tracepoint (t), ")
    );
    assert_eq!(
        ProbeSpec::parse("t:block").unwrap_err().to_string(),
        "probe `t:block`: a tracepoint is SYSTEM:EVENT, e.g. tracepoint:block:block_rq_issue"
    );
}

/// Every kind in [`KINDS`] is reachable by each of its names from the spec parser, from
/// [`function_probe`] and from `list --fields` (each kind answers it, with its fields or
/// with the built-in names it has), and no name is taken twice: a kind cannot be half-added.
#[test]
fn every_kind_is_reachable_by_each_name() {
    let mut seen = Vec::new();
    for kind in KINDS {
        for name in kind.names() {
            assert!(!seen.contains(name), "`{name}` names two kinds");
            seen.push(*name);
            // Two-part targets have the shape every kind takes.
            let text = format!("{name}:sys:event");
            let spec = ProbeSpec::parse(&text).unwrap();
            assert_eq!(spec.kind.name(), kind.name(), "{text}");
            assert_eq!(function_probe(&text, false).unwrap(), text);
        }
        let valid = ProbeSpec::parse("nosuchkind:a:b").unwrap_err().to_string();
        assert!(
            valid.contains(&format!("{} (", kind.name())),
            "{valid} omits {}",
            kind.name()
        );
    }
    assert_eq!(
        seen,
        [
            "tracepoint",
            "t",
            "rawtracepoint",
            "rt",
            "kprobe",
            "k",
            "kretprobe",
            "kr",
            "fentry",
            "f",
            "kfunc",
            "fexit",
            "fr",
            "kretfunc",
            "uprobe",
            "u",
            "uretprobe",
            "ur",
            "usdt",
            "U",
            "software",
            "s",
            "hardware",
            "h"
        ]
    );
    // `list --fields` for the kinds that need neither tracefs, BTF nor a binary.
    let fields = |text: &str| {
        let spec = ProbeSpec::parse(text).unwrap();
        match spec.kind.fields(&spec, None, &crate::probe::tracefs::root) {
            Ok(out) | Err(crate::Error::Usage(out)) => out,
            Err(err) => panic!("{text}: {err}"),
        }
    };
    assert_eq!(
        fields("rt:sys_enter"),
        "rawtracepoint:sys_enter: regs (arg0), id (arg1), arg0..arg5; and pid, tid, cpu, \
         comm, cgroup\n"
    );
    assert_eq!(
        fields("ur:/bin/sh:main"),
        "ur:/bin/sh:main: retval, latency; and pid, tid, cpu, comm, cgroup\n"
    );
    assert_eq!(
        fields("s:page-faults"),
        "--fields s:page-faults: software events carry no fields beyond pid, tid, cpu, comm, \
         cgroup"
    );
    assert_eq!(
        fields("h:cycles"),
        "--fields h:cycles: hardware events carry no fields beyond pid, tid, cpu, comm, cgroup"
    );
}

/// The function kinds share one compile step; what tells them apart is theirs (the return
/// probes take `retval` and `latency`, fentry/fexit attach through trampolines).
#[test]
fn function_kinds_say_return_and_trampoline() {
    let kernel: Vec<(&str, bool, bool)> = [
        &function::KPROBE,
        &function::KRETPROBE,
        &function::FENTRY,
        &function::FEXIT,
    ]
    .iter()
    .map(|k| (k.name(), k.is_return, k.trampoline))
    .collect();
    assert_eq!(
        kernel,
        [
            ("kprobe", false, false),
            ("kretprobe", true, false),
            ("fentry", false, true),
            ("fexit", true, true)
        ]
    );
    let user: Vec<(&str, bool)> = [&function::UPROBE, &function::URETPROBE]
        .iter()
        .map(|k| (k.name(), k.is_return))
        .collect();
    assert_eq!(user, [("uprobe", false), ("uretprobe", true)]);
}
