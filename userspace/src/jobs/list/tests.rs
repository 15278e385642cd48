//! Whole outputs of `list` from a recorded machine (a tracefs tree copied from a 6.x kernel
//! under `userspace/tests/golden/list/tracefs/`, a PMU that counts cycles and instructions
//! only, three traceable kernel functions), against golden files in
//! `userspace/tests/golden/list/`.

use std::path::PathBuf;

use super::*;
use crate::{output::golden::Transcript, probe::usdt::ProbeSite};

/// A recorded machine.
struct Recorded {
    /// `None`: tracefs is not mounted.
    tracefs: Option<PathBuf>,
    functions: Option<Vec<String>>,
}

impl ListSource for Recorded {
    fn tracefs(&self) -> Result<PathBuf> {
        self.tracefs
            .clone()
            .ok_or_else(|| Error::runtime("tracefs is not mounted (recorded machine)"))
    }

    fn hardware_supported(&self, config: u64) -> bool {
        config <= 1
    }

    fn kernel_functions(&self) -> Option<Vec<String>> {
        self.functions.clone()
    }
}

fn machine() -> Recorded {
    Recorded {
        tracefs: Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/list/tracefs")),
        functions: Some(vec![
            "vfs_open".into(),
            "vfs_read".into(),
            "do_sys_openat2".into(),
        ]),
    }
}

/// `tracekit list` on its own, and one class at a time.
#[test]
fn golden_list_events() {
    let machine = machine();
    let mut transcript =
        Transcript::new("tracekit list; tracekit list hw; tracekit list tracepoint");
    for glob in [None, Some("hw"), Some("tracepoint")] {
        transcript = transcript.part(
            &format!("stdout of list {}", glob.unwrap_or("")),
            events_from(&machine, glob).unwrap(),
        );
    }
    transcript.check("list/events.txt");
}

/// A glob over every kind; kernel functions are listed by name only when a glob asks.
#[test]
fn golden_list_glob() {
    let machine = machine();
    Transcript::new("tracekit list 'vfs_*'; tracekit list 'sched:*'; tracekit list '*cycles*'")
        .part(
            "stdout of list vfs_*",
            events_from(&machine, Some("vfs_*")).unwrap(),
        )
        .part(
            "stdout of list sched:*",
            events_from(&machine, Some("sched:*")).unwrap(),
        )
        .part(
            "stdout of list *cycles*",
            events_from(&machine, Some("*cycles*")).unwrap(),
        )
        .check("list/glob.txt");
}

/// Without tracefs: the list says why tracepoints and functions are missing; asking for
/// tracepoints is an error.
#[test]
fn golden_list_without_tracefs() {
    let machine = Recorded {
        tracefs: None,
        functions: None,
    };
    let err = events_from(&machine, Some("tracepoint")).unwrap_err();
    Transcript::new("tracekit list; tracekit list tracepoint  (no tracefs)")
        .part("stdout of list", events_from(&machine, None).unwrap())
        .part("error of list tracepoint", format!("{err}\n"))
        .check("list/without_tracefs.txt");
}

/// `--fields` of tracepoints (a wildcard expands), of a uprobe, and what has none.
#[test]
fn golden_list_fields() {
    let machine = machine();
    let err = fields_from(&machine, "software:cpu-clock", None).unwrap_err();
    Transcript::new("tracekit list --fields 'sched:sched_process_*' ; --fields syscalls:sys_enter_openat ; --fields uretprobe:/bin/bash:readline ; --fields software:cpu-clock")
        .part(
            "sched:sched_process_*",
            fields_from(&machine, "sched:sched_process_*", None).unwrap(),
        )
        .part(
            "syscalls:sys_enter_openat",
            fields_from(&machine, "syscalls:sys_enter_openat", None).unwrap(),
        )
        .part(
            "uretprobe:/bin/bash:readline",
            fields_from(&machine, "uretprobe:/bin/bash:readline", None).unwrap(),
        )
        .part("software:cpu-clock", format!("{err}\n"))
        .check("list/fields.txt");
}

#[test]
fn unknown_tracepoint_fields_are_a_usage_error() {
    let err = fields_from(&machine(), "sched:no_such_event", None).unwrap_err();
    assert!(matches!(err, Error::Usage(_)), "{err:?}");
}

fn site(provider: &str, name: &str, semaphore: Option<u64>, arg_specs: &str) -> ProbeSite {
    ProbeSite {
        binary: "/usr/lib/libc.so.6".into(),
        provider: provider.into(),
        name: name.into(),
        address: 0x1000,
        file_offset: 0x1000,
        semaphore,
        semaphore_file_offset: semaphore,
        arg_specs: arg_specs.into(),
        args: Vec::new(),
    }
}

/// USDT probes: one line each, sites counted, semaphores said, differing argument specs
/// each shown.
#[test]
fn golden_list_usdt_sites() {
    let mut out = String::new();
    write_sites(
        &mut out,
        "/usr/lib/libc.so.6",
        &[
            site("libc", "setjmp", None, "8@%rdi -4@%esi 8@%rax"),
            site("libc", "memory_mallopt", None, ""),
            site("libc", "setjmp", None, "8@%rdi -4@%esi 8@%rax"),
            site(
                "python",
                "function__entry",
                Some(0x4010),
                "8@%rbx 8@%rbp -4@%eax",
            ),
            site(
                "python",
                "function__entry",
                Some(0x4010),
                "8@%r14 8@%r15 -4@%eax",
            ),
        ],
    );
    Transcript::new("tracekit list 'usdt:/usr/lib/libc.so.6'  (recorded notes)")
        .part("stdout", out)
        .check("list/usdt.txt");
}

#[test]
fn usdt_arguments_are_recognized() {
    for usdt in ["usdt", "usdt:/bin/python3", "U:/bin/python3:*"] {
        assert!(is_usdt(usdt), "{usdt}");
    }
    for other in ["usdtx", "u:/bin/x:f", "sched:*"] {
        assert!(!is_usdt(other), "{other}");
    }
}
