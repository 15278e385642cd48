use super::*;
use crate::engine::request::{KeyField, Shape, Start, StartProbe};

fn events() -> Events {
    Events::test_6_18()
}

fn compiled(request: &Request) -> String {
    compile_in(request, &events()).unwrap().listing()
}

#[test]
fn stackcount_keys_by_process_and_stacks() {
    let request = Request {
        by: KeyField::all(&[
            "pid".into(),
            "comm".into(),
            "kstack".into(),
            "ustack".into(),
        ]),
        ..Request::probe("syscalls:sys_enter_getppid")
    };
    assert_eq!(
        compiled(&request),
        r#"Main Tracepoints([Tracepoint { system: "syscalls", event: "sys_enter_getppid" }])
operands: #0 pid #1 comm #2 kstack #3 ustack
corr: - | key: #0 #1 #2 #3 | saves: -
value: - | agg: count | layout: hash
filter: -
flags: announce needs_ids
columns: pid Int { signed: false }, comm Str, kstack KernelStack, ustack Int { signed: false }
"#
    );
}

/// Tracepoints whose plans are equal share an engine; event indices run across engines. An
/// engine of one tracepoint whose plan reads nothing of the record takes its raw tracepoint
/// (block_rq_complete has no `comm` field: the comm is the current task's).
#[test]
fn count_groups_tracepoints_by_plan() {
    let request = Request {
        by_event: true,
        by: vec![KeyField::new("comm")],
        ..Request::count(vec!["sched:sched_wakeup*".into(), "block:*".into()])
    };
    assert_eq!(
        compiled(&request),
        r#"Main Tracepoints([Tracepoint { system: "sched", event: "sched_wakeup" }, Tracepoint { system: "sched", event: "sched_wakeup_new" }])
operands: #0 event #1 field_string@8:16
corr: - | key: #0 #1 | saves: -
value: - | agg: count | layout: hash
filter: -
flags: -
Main RawOrClassic(Tracepoint { system: "block", event: "block_rq_complete" })
operands: #0 event #1 comm
corr: - | key: #0 #1 | saves: -
value: - | agg: count | layout: hash
filter: -
flags: -
Main Tracepoints([Tracepoint { system: "block", event: "block_rq_insert" }, Tracepoint { system: "block", event: "block_rq_issue" }])
operands: #0 event #1 field_string@44:16
corr: - | key: #0 #1 | saves: -
value: - | agg: count | layout: hash
filter: -
flags: -
columns: event Event({0: "sched:sched_wakeup", 1: "sched:sched_wakeup_new", 2: "block:block_rq_complete", 3: "block:block_rq_insert", 4: "block:block_rq_issue"}), comm Str
"#
    );
    let syscalls = Request {
        by_event: true,
        ..Request::count(vec!["syscalls:sys_enter_*".into()])
    };
    assert_eq!(
        compiled(&syscalls),
        r#"Main RawTracepoint("sys_enter")
operands: #0 arg1:8
corr: - | key: #0 in {26,59,62,74,75,110,162,165,202,257,262,277,306,332} | saves: -
value: - | agg: count | layout: array bound 1024
filter: -
flags: raw_args=2
columns: event Event({26: "syscalls:sys_enter_msync", 59: "syscalls:sys_enter_execve", 62: "syscalls:sys_enter_kill", 74: "syscalls:sys_enter_fsync", 75: "syscalls:sys_enter_fdatasync", 110: "syscalls:sys_enter_getppid", 162: "syscalls:sys_enter_sync", 165: "syscalls:sys_enter_mount", 202: "syscalls:sys_enter_futex", 257: "syscalls:sys_enter_openat", 262: "syscalls:sys_enter_newfstatat", 277: "syscalls:sys_enter_sync_file_range", 306: "syscalls:sys_enter_syncfs", 332: "syscalls:sys_enter_statx"})
"#
    );
}

#[test]
fn hist_with_a_linear_shape_and_a_filter() {
    let request = Request {
        shape: Shape::Linear {
            min: 0,
            max: 1000,
            step: 100,
        },
        value: Some("bytes".into()),
        filter: Some("rwbs ~ \"*W*\" && bytes > 4096".into()),
        ..Request::probe("t:block:block_rq_issue")
    };
    assert_eq!(
        compiled(&request),
        r#"Main Tracepoints([Tracepoint { system: "block", event: "block_rq_issue" }])
operands: #0 field@28:4 #1 field_string@34:10
corr: - | key: - | saves: -
value: #0 | agg: linear 12 slots from 0 step 100 | layout: array bound 0
filter: str_contains #1 0 gt #0 4096 and
flags: -
columns: 
"#
    );
}

#[test]
fn trace_carries_printed_fields_and_stacks() {
    let request = Request {
        shape: Shape::Trace,
        print: vec!["filename".into(), "flags".into(), "ustack".into()],
        ..Request::probe("syscalls:sys_enter_openat")
    };
    assert_eq!(
        compiled(&request),
        r#"Main Tracepoints([Tracepoint { system: "syscalls", event: "sys_enter_openat" }])
operands: #0 user_str@24 whole:4096 #1 field@32:8 #2 ustack
corr: - | key: - | saves: -
value: - | agg: trace | layout: array bound 0
filter: -
flags: announce needs_ids
columns: 
"#
    );
}

#[test]
fn bad_requests_name_the_bad_part() {
    let error = |request: Request| compile_in(&request, &events()).unwrap_err().to_string();
    assert_eq!(
        error(Request::probe("block:block_rq_issue").log2("bytse")),
        "--value bytse: block:block_rq_issue has no field `bytse`; it \
         has dev (dev_t), sector (sector_t), nr_sector (unsigned int), bytes (unsigned int), \
         ioprio (unsigned short), rwbs (char[10]), comm (char[16]), cmd (string); and pid, \
         tid, cpu, cgroup"
    );
    // `--by` lists every key it takes, `cgroup` included.
    assert_eq!(
        error(Request::probe("block:block_rq_issue").by(vec![KeyField::new("cgrop")])),
        "--by cgrop: block:block_rq_issue has no field `cgrop` (did you mean `cgroup`?); it \
         has dev (dev_t), sector (sector_t), nr_sector (unsigned int), bytes (unsigned int), \
         ioprio (unsigned short), rwbs (char[10]), comm (char[16]), cmd (string); and pid, \
         tid, cpu, cgroup"
    );
    assert_eq!(
        error(Request::probe("block:block_rq_issue").log2("rwbs")),
        "--value rwbs: `rwbs` is a string; --value needs a number (use --by rwbs to group by it)"
    );
    let paired = Request {
        start: Some(Start {
            probes: vec![StartProbe::new("block:block_rq_issue", &["dev", "sector"])],
            end_pair: vec!["dev".into(), "sectr".into()],
            all_tasks: false,
            per_thread: false,
            keep: false,
        }),
        ..Request::probe("block:block_rq_complete").log2("latency")
    };
    assert!(error(paired).starts_with("end sectr: block:block_rq_complete has no field `sectr`"));
    let start = Start {
        probes: vec![StartProbe::new("sched:sched_switch", &["prev_pid"])],
        end_pair: vec!["next_pid".into()],
        all_tasks: false,
        per_thread: true,
        keep: false,
    };
    // End events that read `filename` at different offsets need two engines, each with a
    // start map of its own: refused.
    assert_eq!(
        error(Request {
            start: Some(Start {
                end_pair: vec!["tid".into()],
                ..start
            }),
            filter: Some("filename == \"x\"".into()),
            ..Request::count(vec![
                "syscalls:sys_enter_openat".into(),
                "syscalls:sys_enter_execve".into()
            ])
        }),
        "a start stage pairs with end events whose fields are read alike; \
         syscalls:sys_enter_openat and syscalls:sys_enter_execve differ"
    );
}

/// `raw_syscalls`' `id` and `ret` are read from the raw tracepoint's arguments (`id` at exit
/// from `regs->orig_ax`); other tracepoints' fields stay on the classic tracepoint.
#[test]
fn raw_syscalls_fields_come_from_raw_arguments() {
    let hist = |probe: &str, value: &str, filter: &str| Request {
        filter: Some(filter.into()),
        ..Request::probe(probe).log2(value)
    };
    let mut out = String::new();
    for request in [
        hist("raw_syscalls:sys_enter", "id", "id == 110"),
        hist("raw_syscalls:sys_exit", "id", "id == 110 && ret > 0"),
        hist("block:block_rq_issue", "bytes", "bytes > 4096"),
    ] {
        out.push_str(&compiled(&request));
    }
    assert_eq!(
        out,
        r#"Main RawInPlaceOf { name: "sys_enter", of: Tracepoint { system: "raw_syscalls", event: "sys_enter" } }
operands: #0 arg1:s8
corr: - | key: - | saves: -
value: #0 | agg: log2 64 slots | layout: array bound 0
filter: eq #0 110
flags: raw_args=2
columns: 
Main RawInPlaceOf { name: "sys_exit", of: Tracepoint { system: "raw_syscalls", event: "sys_exit" } }
operands: #0 arg_deref0+120:s8 #1 arg1:s8
corr: - | key: - | saves: -
value: #0 | agg: log2 64 slots | layout: array bound 0
filter: eq #0 110 sgt #1 0 and
flags: raw_args=2
columns: 
Main Tracepoints([Tracepoint { system: "block", event: "block_rq_issue" }])
operands: #0 field@28:4
corr: - | key: - | saves: -
value: #0 | agg: log2 64 slots | layout: array bound 0
filter: gt #0 4096
flags: -
columns: 
"#
    );
}

/// A software event attaches by its `PERF_COUNT_SW_*` number from the counters' table,
/// aliases included; an unknown one names the valid ones.
#[test]
fn software_events_come_from_the_counters_table() {
    let listing = compiled(&Request::probe("s:cs"));
    assert_eq!(
        listing.lines().next(),
        Some("Main SoftwareEvent { config: 3, sampling: Period(1) }")
    );
    let err = compile_in(&Request::probe("software:nope"), &events()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "probe `software:nope`: unknown software event; valid: cpu-clock, task-clock, \
         page-faults, faults, context-switches, cs, cpu-migrations, migrations, minor-faults, \
         major-faults, alignment-faults, emulation-faults"
    );
}

/// `:N` runs the program every N events, `:Nhz` at a frequency; anything else is refused.
#[test]
fn software_events_take_a_period_or_a_frequency() {
    let first = |probe: &str| {
        compiled(&Request::probe(probe))
            .lines()
            .next()
            .map(String::from)
    };
    assert_eq!(
        first("software:page-faults:100").as_deref(),
        Some("Main SoftwareEvent { config: 2, sampling: Period(100) }")
    );
    assert_eq!(
        first("s:cpu-clock:99hz").as_deref(),
        Some("Main SoftwareEvent { config: 0, sampling: Frequency(99) }")
    );
    for bad in [
        "s:cpu-clock:0hz",
        "s:cpu-clock:fast",
        "s:cpu-clock:200000hz",
    ] {
        let err = compile_in(&Request::probe(bad), &events()).unwrap_err();
        assert!(
            err.to_string()
                .contains("is not valid; after the event give every N events"),
            "{bad}: {err}"
        );
    }
}

/// `--by follows(STREAM,POS,LEN)` reads its three fields first, then the follows operand
/// (after the command line split `--by` at its commas); a bad one is one usage line.
#[test]
fn follows_reads_its_fields_before_it() {
    let request = Request {
        value: Some("nr_sector".into()),
        by: KeyField::all(&[
            "dev".into(),
            "follows(dev".into(),
            "sector".into(),
            "nr_sector)".into(),
        ]),
        ..Request::probe("block:block_rq_complete")
    };
    assert_eq!(
        compiled(&request),
        r#"Main Tracepoints([Tracepoint { system: "block", event: "block_rq_complete" }])
operands: #0 field@8:4 #1 field@16:8 #2 field@24:4 #3 follows(#0,#1,#2)
corr: - | key: #0 #3 | saves: -
value: #2 | agg: count | layout: hash
filter: -
flags: -
columns: dev Disk, follows(dev,sector,nr_sector) Int { signed: false }
"#
    );
    let error = |by: &str| {
        let request = Request {
            by: vec![KeyField::new(by)],
            ..Request::probe("block:block_rq_complete")
        };
        compile_in(&request, &events()).unwrap_err().to_string()
    };
    assert_eq!(
        error("follows(dev,sector)"),
        "--by follows(dev,sector): follows takes three fields, follows(STREAM,POS,LEN) (e.g. \
         follows(dev,sector,nr_sector))"
    );
    assert_eq!(
        error("follows(dev,rwbs,nr_sector)"),
        "--by follows(dev,rwbs,nr_sector): `rwbs` is a string; follows reads numbers"
    );
}

/// A string stored in the record (`__data_loc`) is read whole where it is printed or
/// compared, and as its 31 bytes (the kernel marks a longer one) where it is a group key.
#[test]
fn record_strings_are_whole_where_printed_or_compared() {
    let exec = || Request::probe("sched:sched_process_exec");
    let operands = |request: &Request| {
        let listing = compiled(request);
        listing
            .lines()
            .find_map(|line| line.strip_prefix("operands: "))
            .unwrap()
            .to_string()
    };
    let trace = Request {
        shape: Shape::Trace,
        print: vec!["filename".into()],
        ..exec()
    };
    assert_eq!(operands(&trace), "#0 field_data_loc@8:4096 whole:4096");
    let filtered = Request {
        filter: Some("filename == \"/bin/true\"".into()),
        ..exec()
    };
    assert_eq!(
        operands(&filtered),
        "#0 field_data_loc@8:4096 whole:4096+head"
    );
    let keyed = Request {
        by: KeyField::all(&["filename".into()]),
        ..exec()
    };
    assert_eq!(operands(&keyed), "#0 field_data_loc@8:32");
}
