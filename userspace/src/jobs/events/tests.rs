use tracekit_common::engine::STR_BYTES;

use super::*;
use crate::probe::fields::ValueType;

// The tool's own columns.
const OPENSNOOP: [Column; 5] = crate::jobs::tools::opensnoop::COLUMNS;

fn record(ret: i64, path: &str) -> (TraceEvent<'static>, Vec<Printed>) {
    let mut record = tracekit_common::engine::TraceRecord {
        ts_ns: 0,
        pid: 4242,
        tid: 4243,
        cpu: 1,
        event: 0,
        comm: [0; 16],
        ints: [0; tracekit_common::engine::MAX_OPERANDS],
        strings: [[0; STR_BYTES]; 4],
        str_spans: [0; 4],
        str_flags: 0,
        str_cap: 0,
    };
    record.comm[..3].copy_from_slice(b"cat");
    record.ints[1] = ret as u64;
    record.strings[0][..path.len()].copy_from_slice(path.as_bytes());
    let prints = vec![
        Printed {
            name: "ret".into(),
            operand: 1,
            string_slot: 0,
            ty: ValueType::Int { signed: true },
            hint: Default::default(),
        },
        Printed {
            name: "start.filename".into(),
            operand: 2,
            string_slot: 0,
            ty: ValueType::Str,
            hint: Default::default(),
        },
    ];
    (record.into(), prints)
}

#[test]
fn json_keys_of_headers() {
    assert_eq!(json_key("PCOMM"), "pcomm");
    assert_eq!(json_key("ANON(kB)"), "anon_kb");
    assert_eq!(json_key("TIME(s)"), "time_s");
}

#[test]
fn exit_codes_as_exitsnoop_shows_them() {
    assert_eq!(exit_text(0), "0");
    assert_eq!(exit_text(3 << 8), "code 3");
    assert_eq!(exit_text(9), "signal 9 (SIGKILL)");
    assert_eq!(exit_text(0x80 | 11), "signal 11 (SIGSEGV), core dumped");
    assert_eq!(exit_text(36), "signal 36 (SIGRTMIN+2)");
    assert_eq!(
        View::of("exit(task->exit_code)"),
        View::ExitCode("task->exit_code".into())
    );
}

#[test]
fn age_is_seconds_from_a_start_time_to_the_event() {
    let columns = [Column {
        header: "AGE(s)",
        field: "age(start)",
    }];
    let (mut record, _) = record(0, "");
    record.ts_ns = 5_000_000_000;
    record.ints[0] = 1_234_000_000;
    let prints = [Printed {
        name: "start".into(),
        operand: 0,
        string_slot: 0,
        ty: ValueType::Int { signed: false },
        hint: Default::default(),
    }];
    let text = line(
        &record,
        &prints,
        "",
        &columns,
        EventTime::None,
        0.0,
        "",
        false,
    );
    assert_eq!(text, "3.77\n");
    let json = line(
        &record,
        &prints,
        "",
        &columns,
        EventTime::None,
        0.0,
        "",
        true,
    );
    assert_eq!(json, "{\"age_s\":3.77}\n");
}

#[test]
fn views_and_what_they_print() {
    assert_eq!(View::of("comm"), View::Record("comm"));
    assert_eq!(View::of("fd(ret)"), View::Fd("ret".into()));
    assert_eq!(
        View::of("argv[0..3]"),
        View::Join(vec!["argv[0]".into(), "argv[1]".into(), "argv[2]".into()])
    );
    assert_eq!(prints_of(&OPENSNOOP), ["ret", "start.filename"]);
    let family = "sock(ret)->__sk_common.skc_family";
    assert_eq!(
        View::of(&format!("ipver({family})")),
        View::IpVersion(family.into())
    );
}

/// An address family as tcpaccept's IP column: 2 is 4, 10 is 6, others as they are.
#[test]
fn ip_version_of_a_family() {
    let (mut record, prints) = record(0, "");
    let view = View::IpVersion("ret".into());
    for (family, shown) in [(2, "4"), (10, "6"), (1, "1")] {
        record.ints[1] = family;
        assert_eq!(value(&record, &prints, "e", &view).text(), shown);
    }
}

/// Addresses and ports line up under their headers, as libbpf-tools' tcpconnect prints.
#[test]
fn tcp_address_columns_are_padded() {
    let columns = [
        Column {
            header: "PID",
            field: "pid",
        },
        Column {
            header: "COMM",
            field: "comm",
        },
        Column {
            header: "SADDR",
            field: "saddr",
        },
        Column {
            header: "DADDR",
            field: "daddr",
        },
        Column {
            header: "DPORT",
            field: "dport",
        },
    ];
    assert_eq!(
        header(&columns, EventTime::None),
        "PID     COMM             SADDR            DADDR            DPORT\n"
    );
    assert_eq!(cell("127.0.0.1", "SADDR"), "127.0.0.1       ");
    assert_eq!(cell("429044736", "SECTOR"), "429044736 ");
    assert_eq!(cell("WS", "T"), "WS ");
    assert_eq!(cell("443", "RPORT"), "443  ");
}

#[test]
fn opensnoop_lines_exactly() {
    assert_eq!(
        header(&OPENSNOOP, EventTime::None),
        "PID     COMM              FD ERR PATH\n"
    );
    let (ok, prints) = record(3, "/etc/passwd");
    assert_eq!(
        line(
            &ok,
            &prints,
            "",
            &OPENSNOOP,
            EventTime::None,
            0.0,
            "",
            false
        ),
        "4242    cat                3   0 /etc/passwd\n"
    );
    let (failed, prints) = record(-2, "/nonexistent");
    assert_eq!(
        line(
            &failed,
            &prints,
            "",
            &OPENSNOOP,
            EventTime::Relative,
            1.5,
            "",
            false
        ),
        "1.500     4242    cat               -1   2 /nonexistent\n"
    );
    assert_eq!(
        line(
            &failed,
            &prints,
            "",
            &OPENSNOOP,
            EventTime::Clock,
            0.0,
            "12:34:56",
            true
        ),
        "{\"comm\":\"cat\",\"err\":2,\"fd\":-1,\"path\":\"/nonexistent\",\"pid\":4242,\"time\":\"12:34:56\"}\n"
    );
}

#[test]
fn argv_joins_up_to_the_first_empty_string() {
    let columns = [
        Column {
            header: "PCOMM",
            field: "comm",
        },
        Column {
            header: "ARGS",
            field: "argv[0..3]",
        },
    ];
    let (mut record, _) = record(0, "");
    record.strings[0][..4].copy_from_slice(b"/bin");
    record.strings[1][..2].copy_from_slice(b"-l");
    let prints: Vec<Printed> = (0..3)
        .map(|i| Printed {
            name: format!("argv[{i}]"),
            operand: i,
            string_slot: i,
            ty: ValueType::Str,
            hint: Default::default(),
        })
        .collect();
    assert_eq!(
        line(
            &record,
            &prints,
            "",
            &columns,
            EventTime::None,
            0.0,
            "",
            false
        ),
        "cat              /bin -l\n"
    );
}

/// fsslower's fsync line: T from the function, 0 bytes at offset 0 (numbers in JSON), the
/// latency in ms, the whole 31-byte name the entry saved.
#[test]
fn fsslower_fsync_lines_exactly() {
    let columns = crate::jobs::tools::fsslower::FSYNC_COLUMNS;
    let name = "a-file-name-of-thirty-one-bytes";
    assert_eq!(name.len(), 31);
    let (mut record, _) = record(0, name);
    record.ints[3] = 1_500_000;
    let prints = vec![
        Printed {
            name: "latency".into(),
            operand: 3,
            string_slot: 0,
            ty: ValueType::Int { signed: false },
            hint: Default::default(),
        },
        Printed {
            name: columns[6].field.into(),
            operand: 4,
            string_slot: 0,
            ty: ValueType::Str,
            hint: Default::default(),
        },
    ];
    let event = "kretprobe:ext4_sync_file";
    assert_eq!(
        header(&columns, EventTime::Clock),
        "TIME     COMM             PID     T   BYTES   OFF_KB LAT(ms) FILENAME\n"
    );
    assert_eq!(
        line(
            &record,
            &prints,
            event,
            &columns,
            EventTime::Clock,
            0.0,
            "12:34:56",
            false
        ),
        format!("12:34:56 cat              4242    F   0       0      1.500   {name}\n")
    );
    assert_eq!(
        line(
            &record,
            &prints,
            event,
            &columns,
            EventTime::Clock,
            0.0,
            "12:34:56",
            true
        ),
        format!(
            "{{\"bytes\":0,\"comm\":\"cat\",\"filename\":\"{name}\",\"lat_ms\":1.5,\"off_kb\":0,\
             \"pid\":4242,\"t\":\"F\",\"time\":\"12:34:56\"}}\n"
        )
    );
}

#[test]
fn wall_clock_of_an_event_is_its_stamp_not_the_line_time() {
    // Clocks read together: monotonic 1000.5 s, realtime 1_700_000_000.5 s.
    let clocks = (1_000_500_000_000, 1_700_000_000_500_000_000);
    assert_eq!(wall_s(1_000_500_000_000, clocks), 1_700_000_000);
    // Stamped 2.6 s before the clocks were read (an event read late): 2.6 s earlier.
    assert_eq!(wall_s(997_900_000_000, clocks), 1_699_999_997);
    assert_eq!(wall_s(1_002_000_000_000, clocks), 1_700_000_002);
    // Before the epoch rounds down, not toward zero.
    assert_eq!(wall_s(0, (2_000_000_000, 1_500_000_000)), -1);
}

/// An optional group the kernel refuses is left out with its `-v` line; the tool's own
/// groups stay (tcpaccept without io_uring's tracepoint).
#[test]
fn optional_groups_the_kernel_lacks_are_left_out() {
    use crate::jobs::tools::{FlagValues, tcpaccept};
    let job = tcpaccept::plan(&FlagValues::defaults(&tcpaccept::TOOL)).unwrap();
    let no_uring = |request: &Request| {
        if request.probes[0].starts_with("io_uring:") {
            Err(crate::Error::usage(
                "no tracepoint io_uring:io_uring_complete",
            ))
        } else {
            Ok(())
        }
    };
    let (kept, left_out) = groups(&job, no_uring);
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].0.probes, tcpaccept::PROBES);
    assert_eq!(kept[0].1, tcpaccept::COLUMNS);
    assert_eq!(
        left_out,
        [
            "tracekit: io_uring accepts left out (io_uring:io_uring_complete): no tracepoint \
          io_uring:io_uring_complete"
        ]
    );
    let (kept, left_out) = groups(&job, |_| Ok(()));
    assert_eq!(kept.len(), 2);
    assert_eq!(kept[1].0.probes, [tcpaccept::URING_PROBE]);
    assert_eq!(kept[1].1, tcpaccept::URING_COLUMNS);
    assert!(left_out.is_empty());
    // A group the tool needs is never left out: its error is the run's (fsslower's opens).
    let mut needed = job.clone();
    needed.parts[0].optional = None;
    assert_eq!(groups(&needed, no_uring).0.len(), 2);
}
