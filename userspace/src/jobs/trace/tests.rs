//! Whole outputs of `trace` from recorded ring-buffer records (the bytes the kernel
//! commits), through the job's decoding, rendering and end-of-run summary, against golden
//! files in `userspace/tests/golden/trace/`.

use std::{collections::BTreeMap, time::Duration};

use tracekit_common::engine::{MAX_OPERANDS, MAX_STRINGS, STR_BYTES};

use super::*;
use crate::{
    engine::EngineStats,
    output::golden::Transcript,
    probe::fields::{Hint, ValueType},
};

/// The bytes of one record the kernel would commit.
fn record(ts_ns: u64, comm: &str, pid: u32, event: u32, ints: &[u64], strings: &[&str]) -> Vec<u8> {
    let mut record = tracekit_common::engine::TraceRecord {
        ts_ns,
        pid,
        tid: pid + 1,
        cpu: 3,
        event,
        comm: [0; 16],
        ints: [0; MAX_OPERANDS],
        strings: [[0; STR_BYTES]; MAX_STRINGS],
        str_spans: [0; MAX_STRINGS],
        str_flags: 0,
        str_cap: 0,
    };
    record.comm[..comm.len()].copy_from_slice(comm.as_bytes());
    record.ints[..ints.len()].copy_from_slice(ints);
    for (slot, text) in strings.iter().enumerate() {
        record.strings[slot][..text.len()].copy_from_slice(text.as_bytes());
    }
    // SAFETY: TraceRecord is plain old data (#[repr(C)], no padding the kernel leaves
    // uninitialised that a test reads: it is built whole above).
    unsafe {
        std::slice::from_raw_parts(
            (&raw const record).cast::<u8>(),
            size_of::<tracekit_common::engine::TraceRecord>(),
        )
    }
    .to_vec()
}

/// `trace -e 'syscalls:sys_enter_openat' -e 'syscalls:sys_enter_close' --print
/// filename,ret`: two events, an int and a string field.
fn view() -> EngineView {
    EngineView {
        prints: vec![
            Printed {
                name: "fd".into(),
                operand: 0,
                string_slot: 0,
                ty: ValueType::Int { signed: true },
                hint: Hint::Plain,
            },
            Printed {
                name: "filename".into(),
                operand: 0,
                string_slot: 0,
                ty: ValueType::Str,
                hint: Hint::Plain,
            },
        ],
        events: EventNames::ByIndex(BTreeMap::from([
            (0, "syscalls:sys_enter_openat".to_string()),
            (1, "syscalls:sys_enter_close".to_string()),
        ])),
        reader: None,
        stacks: (None, None),
    }
}

const START_NS: u64 = 1_000_000_000;

fn records() -> Vec<Vec<u8>> {
    vec![
        record(
            START_NS + 1_500,
            "cat",
            4242,
            0,
            &[u64::MAX - 99],
            &["/etc/hostname"],
        ),
        record(START_NS + 2_250_000, "cat", 4242, 1, &[3], &[""]),
        // A short record (never written by the engine): skipped, not printed as garbage.
        vec![0; 7],
        record(
            START_NS + 1_000_000_000,
            "sshd",
            77,
            7,
            &[0],
            &["a \"quoted\" name"],
        ),
    ]
}

/// What `trace` prints for `records`: the header (text only), one line per record.
fn stdout(records: &[Vec<u8>], json: bool) -> (String, u64) {
    let symbolizer = Symbolizer::new(false);
    let view = view();
    let mut out = if json {
        String::new()
    } else {
        header(&["fd".into(), "filename".into()])
    };
    let mut printed = 0;
    for data in records {
        if let Some(record) = TraceEvent::decode(data) {
            out.push_str(&render(&record, &view, START_NS, json, &symbolizer));
            printed += 1;
        }
    }
    (out, printed)
}

#[test]
fn golden_trace_text() {
    let (out, printed) = stdout(&records(), false);
    Transcript::new("tracekit trace -e syscalls:sys_enter_openat -e syscalls:sys_enter_close --print fd,filename -d 1")
        .part("stdout", out)
        .part(
            "stderr",
            summary(printed, Duration::from_secs(1), &EngineStats::default()),
        )
        .check("trace/text.txt");
}

#[test]
fn golden_trace_json() {
    let (out, printed) = stdout(&records(), true);
    Transcript::new("tracekit trace ... --print fd,filename -d 1 --json")
        .part("stdout", out)
        .part(
            "stderr",
            summary(printed, Duration::from_secs(1), &EngineStats::default()),
        )
        .check("trace/json.txt");
}

/// Nothing traced: the header alone, and a summary that says so.
#[test]
fn golden_trace_empty() {
    let (out, printed) = stdout(&[], false);
    Transcript::new(
        "tracekit trace -e syscalls:sys_enter_openat --print fd,filename  (nothing opened)",
    )
    .part("stdout", out)
    .part(
        "stderr",
        summary(printed, Duration::from_millis(500), &EngineStats::default()),
    )
    .check("trace/empty.txt");
}

/// A reader too slow for the ring buffer, stacks that did not fit, fields that did not
/// read, events the kernel skipped: each is named on the `Lost:` line.
#[test]
fn golden_trace_lost() {
    let (out, printed) = stdout(&records()[..2], false);
    let stats = EngineStats {
        filtered: 12,
        trace_lost: 1_024,
        stack_map_full: 2,
        stack_errors: 1,
        read_errors: 5,
        missed: 8,
        ..EngineStats::default()
    };
    Transcript::new("tracekit trace ... --print fd,filename -d 2  (ring buffer overrun)")
        .part("stdout", out)
        .part("stderr", summary(printed, Duration::from_secs(2), &stats))
        .check("trace/lost.txt");
}

#[test]
fn header_leaves_stacks_to_their_own_lines() {
    assert_eq!(
        header(&["kstack".into(), "ret".into(), "ustack".into()]),
        "TIME(s)      COMM                 PID     TID EVENT                        ret\n"
    );
    assert_eq!(
        header(&[]),
        "TIME(s)      COMM                 PID     TID EVENT\n"
    );
}

#[test]
fn header_names_each_groups_fields_when_they_differ() {
    let printing = |probe: &str, fields: &[&str]| {
        let mut request = Request::probe(probe);
        request.print = fields.iter().map(|f| f.to_string()).collect();
        request
    };
    let open = printing("syscalls:sys_enter_openat", &["str(filename)", "flags"]);
    let ret = printing("syscalls:sys_exit_openat", &["ret", "kstack"]);
    let none = printing("sched:sched_process_exit", &[]);
    assert_eq!(
        header_each(&[&open, &ret, &none]),
        "TIME(s)      COMM                 PID     TID EVENT                        FIELDS\n\
         # syscalls:sys_enter_openat: str(filename) flags\n\
         # syscalls:sys_exit_openat: ret\n"
    );
    // The same fields: one header, as one request's.
    let other = printing("syscalls:sys_enter_open", &["str(filename)", "flags"]);
    assert_eq!(
        header_each(&[&open, &other]),
        "TIME(s)      COMM                 PID     TID EVENT                        str(filename) flags\n"
    );
}

#[test]
fn unknown_event_index_is_named_by_number() {
    let data = record(START_NS, "x", 1, 9, &[], &[]);
    let record = TraceEvent::decode(&data).unwrap();
    let line = render(&record, &view(), START_NS, false, &Symbolizer::new(false));
    assert!(line.contains(" event 9 "), "{line}");
}

/// Unsigned fields print as they are; a string that fills its slot has no NUL and is
/// printed whole.
#[test]
fn fields_unsigned_and_full_strings() {
    let full = "x".repeat(STR_BYTES);
    let data = record(START_NS, "x", 1, 0, &[u64::MAX], &[&full]);
    let record = TraceEvent::decode(&data).unwrap();
    let unsigned = Printed {
        name: "n".into(),
        operand: 0,
        string_slot: 0,
        ty: ValueType::Int { signed: false },
        hint: Hint::Plain,
    };
    assert_eq!(
        field_text(&record, &unsigned),
        (u64::MAX.to_string(), serde_json::json!(u64::MAX))
    );
    let string = Printed {
        ty: ValueType::Str,
        ..unsigned
    };
    assert_eq!(field_text(&record, &string).0, format!("{full:?}"));
}

/// Address fields print as addresses, in text and JSON: a 16-byte one from its string slot
/// (IPv6, or IPv4 when IPv4-mapped), a 4-byte one from its integer.
#[test]
fn address_fields_print_as_addresses() {
    let v6 = "\u{20}\u{1}\u{d}\u{e}";
    let data = record(START_NS, "x", 1, 0, &[0x0100_007f], &[v6]);
    let record = TraceEvent::decode(&data).unwrap();
    let ipv4 = Printed {
        name: "daddr".into(),
        operand: 0,
        string_slot: 0,
        ty: ValueType::Int { signed: false },
        hint: Hint::Ipv4,
    };
    assert_eq!(
        field_text(&record, &ipv4),
        ("127.0.0.1".to_string(), serde_json::json!("127.0.0.1"))
    );
    let ip = Printed {
        ty: ValueType::Str,
        hint: Hint::Ip,
        ..ipv4
    };
    assert_eq!(
        field_text(&record, &ip),
        ("2001:d0e::".to_string(), serde_json::json!("2001:d0e::"))
    );
}

/// A `Write` that keeps what it is given, shared with the test.
#[derive(Clone, Default)]
struct Kept(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Kept {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Lines are gathered into chunks, written in order, and a flush prints what was gathered
/// without waiting for a chunk to fill (a quiet trace prints each line when it is read).
#[test]
fn writer_gathers_lines_into_chunks_in_order() {
    let kept = Kept::default();
    let mut writer = Writer::spawn(Box::new(kept.clone())).unwrap();
    assert!(writer.offer("first\n").unwrap());
    assert!(writer.flush().unwrap());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while kept.0.lock().unwrap().as_slice() != b"first\n" {
        assert!(
            std::time::Instant::now() < deadline,
            "a flushed line was not written"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut expected = String::from("first\n");
    for i in 0..20_000 {
        let line = format!("line {i}\n");
        expected.push_str(&line);
        if !writer.offer(&line).unwrap() {
            assert!(writer.ready(true).unwrap());
        }
    }
    writer.finish().unwrap();
    assert_eq!(
        String::from_utf8(kept.0.lock().unwrap().clone()).unwrap(),
        expected
    );
}

/// A `Write` whose reader has gone.
struct Closed;

impl std::io::Write for Closed {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        Err(std::io::ErrorKind::BrokenPipe.into())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A closed output is seen by the event loop as the write's own error (`trace | head`).
#[test]
fn writer_reports_a_closed_output() {
    let mut writer = Writer::spawn(Box::new(Closed)).unwrap();
    let line = "x".repeat(1000) + "\n";
    let err = (0..1000)
        .find_map(|_| match writer.offer(&line) {
            Ok(true) => None,
            Ok(false) => writer.ready(true).err(),
            Err(err) => Some(err),
        })
        .expect("a closed output is reported");
    assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe);
}
