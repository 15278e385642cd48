use super::*;

fn err(bytes: &str) -> String {
    parse(bytes.as_bytes(), Path::new("p.json"))
        .unwrap_err()
        .to_string()
}

/// `report` of a histogram saved with `--percentiles` prints what the run printed: the
/// folded log2 histogram and the percentile lines, from the same JSON the run wrote.
#[test]
fn saved_percentiles_print_as_the_run_did() {
    use tracekit_common::engine::log_linear_slot;

    use crate::{
        engine::{EngineStats, Group},
        output::{
            Format,
            aggregates::{self, Report, Table},
        },
    };
    let report = Report::LogLinear {
        unit: "usecs".into(),
        precision: 4,
        div: 1000,
        top: None,
    };
    let table = Table {
        command: "funclatency",
        traced: "latency of wait",
        columns: &[],
        report: &report,
    };
    let mut slots = vec![0u64; 976];
    slots[log_linear_slot(1000, 4) as usize] = 900;
    slots[log_linear_slot(10_000, 4) as usize] = 90;
    slots[log_linear_slot(100_000, 4) as usize] = 10;
    let groups = [Group {
        key: vec![],
        count: 1000,
        sum: 2_800_000_000,
        slots,
    }];
    let stats = EngineStats {
        counted: 1000,
        ..EngineStats::default()
    };
    let written = |format| {
        let mut out = Vec::new();
        aggregates::write(
            &mut out,
            format,
            &table,
            &groups,
            &stats,
            std::time::Duration::from_secs(3),
        )
        .unwrap();
        String::from_utf8(out).unwrap()
    };
    let json = written(Format::Json);
    let saved = parse_histogram(json.as_bytes(), Path::new("run.json")).unwrap();
    let text = saved.text();
    assert!(
        text.ends_with(
            "     percentile (usecs)  : bucket\n\
             \x20    p50                 : 992 -> 1023\n\
             \x20    p90                 : 992 -> 1023\n\
             \x20    p99                 : 9728 -> 10239\n\
             \x20    p99.9               : 98304 -> 102399\n\
             \x20    max                 : 98304 -> 102399\n\
             \x20    count 1000, mean 2800.000 usecs\n"
        ),
        "{text}"
    );
    assert_eq!(text, written(Format::Text));
}

#[test]
fn refuses_foreign_newer_truncated_and_other_kinds() {
    assert_eq!(
        err(r#"{"traceEvents": []}"#),
        "p.json: not a tracekit JSON file (no \"format\": \"tracekit\" field); give a file \
         written by tracekit -o FILE.json or --json"
    );
    assert_eq!(
        err(r#"{"format": "tracekit", "format_version": 2, "kind": "profile"}"#),
        "p.json: written in format version 2, newer than this tracekit reads (1); \
         re-render it with a newer tracekit"
    );
    assert_eq!(
        err(r#"{"format": "tracekit", "format_version": 1, "kind": "prof"#),
        "p.json: truncated: the JSON ends early (line 1, column 57)"
    );
    assert_eq!(
        err(r#"{"format": "tracekit", "format_version": 1, "kind": "histogram"}"#),
        "p.json: holds a histogram, not a profile"
    );
    let mut two = Vec::new();
    let header = Header::new("profile", "cpu-clock", "samples", "-a");
    write(&mut two, &SymbolizedProfile::default(), &header).unwrap();
    write(&mut two, &SymbolizedProfile::default(), &header).unwrap();
    assert_eq!(
        parse(&two, Path::new("p.json")).unwrap_err().to_string(),
        "p.json: holds several JSON documents (line 2 starts another; --json -i writes \
         one per interval and the whole run last); give one, e.g. `tail -n 1 p.json`"
    );
    assert_eq!(
        err("p;main;leaf 3\n"),
        "p.json: not a tracekit JSON file (it does not start with `{`); give a file \
         written by tracekit -o FILE.json or --json"
    );
    assert_eq!(
        err("{\"format\": \"tracekit\", \"format_version\": 1, \"kind\": \"profile\"}"),
        "p.json: not valid tracekit JSON: missing field `tool` at line 1 column 62"
    );
}

#[test]
fn round_trips_addresses_mappings_and_slices() {
    let mapping = Arc::new(Mapping {
        start: 0x1000,
        end: 0x2000,
        file_offset: 0x100,
        path: "/bin/x".into(),
        build_id: Some(vec![0xab, 0x01].into()),
    });
    let mut leaf = Frame::user("leaf", Some("/bin/x"));
    leaf.address = Some(CodeAddress {
        address: 0x1234,
        mapping: Some(Arc::clone(&mapping)),
        lines: None,
    });
    let mut kernel = Frame::kernel("do_syscall_64");
    kernel.address = Some(CodeAddress {
        address: 0xffff_ffff_8100_0000,
        mapping: None,
        lines: None,
    });
    let profile = SymbolizedProfile {
        stacks: vec![Stack {
            pid: 3,
            comm: "x".into(),
            cgroup: None,
            frames: vec![leaf, kernel],
            count: 5,
            time_slice: Some(77),
        }],
        stats: Stats {
            samples: 5,
            ..Stats::default()
        },
        unwalked: 1,
        broken: Vec::new(),
    };
    let cgroups = HashMap::from([(3, "/system.slice/x".to_string())]);
    let header = Header {
        hz: Some(99),
        elapsed: Duration::from_millis(1500),
        cpus: 2,
        start: UNIX_EPOCH + Duration::from_secs(1_700_000_000),
        time_slice_ns: Some(20_000_000),
        cgroups: Some(&cgroups),
        ..Header::new("profile", "cpu-clock", "samples", "pid 3")
    };
    let mut json = Vec::new();
    write(&mut json, &profile, &header).unwrap();
    let back = parse(&json, Path::new("x.json")).unwrap();
    assert_eq!(back.profile.stacks, profile.stacks);
    assert_eq!(back.profile.unwalked, 1);
    assert_eq!(back.cgroups, cgroups);
    let again = back.header();
    assert_eq!(
        (again.start, again.elapsed, again.time_slice_ns),
        (header.start, header.elapsed, header.time_slice_ns)
    );
    // Written again from what was read, the file is the same.
    let mut twice = Vec::new();
    write(&mut twice, &back.profile, &again).unwrap();
    assert_eq!(
        String::from_utf8(twice).unwrap(),
        String::from_utf8(json).unwrap()
    );
}

/// Runtimes whose frames were not named are written as `runtimes_not_named` and read back;
/// a profile with none has no such field.
#[test]
fn runtimes_not_named_round_trip() {
    let not_named = [RuntimeNotNamed {
        runtime: "ruby".into(),
        version: Some("3.9.8".into()),
        language: "Ruby".into(),
        reason: "no layout for Ruby 3.9 (known: 3.1, 3.3)".into(),
        pids: vec![41, 4242],
    }];
    let profile = SymbolizedProfile::default();
    let header = Header {
        runtimes_not_named: &not_named,
        ..Header::new("profile", "cpu-clock", "samples", "pid 41")
    };
    let mut json = Vec::new();
    write(&mut json, &profile, &header).unwrap();
    let text = String::from_utf8(json.clone()).unwrap();
    assert!(
        text.contains(
            r#""runtimes_not_named":[{"runtime":"ruby","version":"3.9.8","language":"Ruby","reason":"no layout for Ruby 3.9 (known: 3.1, 3.3)","pids":[41,4242]}]"#
        ),
        "{text}"
    );
    let back = parse(&json, Path::new("x.json")).unwrap();
    assert_eq!(back.runtimes_not_named, not_named);
    let mut none = Vec::new();
    let plain = Header::new("profile", "cpu-clock", "samples", "pid 41");
    write(&mut none, &profile, &plain).unwrap();
    assert!(
        !String::from_utf8(none)
            .unwrap()
            .contains("runtimes_not_named")
    );
}
