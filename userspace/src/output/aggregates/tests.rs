use std::collections::BTreeMap;

use super::*;
use crate::engine::{KeyKind, KeyValue};

fn group(key: &str, count: u64, sum: u64, slots: Vec<u64>) -> Group {
    Group {
        key: vec![KeyValue::Text(key.into())],
        count,
        sum,
        slots,
    }
}

fn render(format: Format, table: &Table<'_>, groups: &[Group]) -> String {
    let mut out = Vec::new();
    let stats = EngineStats {
        counted: groups.iter().map(|g| g.count).sum(),
        ..EngineStats::default()
    };
    write(
        &mut out,
        format,
        table,
        groups,
        &stats,
        Duration::from_millis(1500),
    )
    .unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn counts_table_with_sums_sorted_and_cut() {
    let columns = [KeyColumn {
        name: "syscall".into(),
        kind: KeyKind::Syscall,
    }];
    let report = Report::Counts {
        clear: false,
        sum: Some(("TIME(us)".into(), 1000.0)),
        top: Some(2),
    };
    let table = Table {
        command: "syscount",
        traced: "syscalls",
        columns: &columns,
        report: &report,
    };
    let groups = [
        group("read", 10, 5_000, vec![]),
        group("nanosleep", 20, 102_146_077, vec![]),
        group("close", 2, 1_879, vec![]),
    ];
    assert_eq!(
        render(Format::Text, &table, &groups),
        "SYSCALL    COUNT    TIME(us)  AVG TIME(us)\n\
             nanosleep     20  102146.077      5107.304\n\
             read          10       5.000         0.500\n\
             (--top 2: 1 more group holds the other 2 events)\n"
    );
    // JSON names them too: its groups and not_shown add up to stats.counted.
    let json: serde_json::Value =
        serde_json::from_str(&render(Format::Json, &table, &groups)).unwrap();
    assert_eq!(
        json["not_shown"],
        serde_json::json!({"groups": 1, "count": 2})
    );
    assert_eq!(json["stats"]["counted"], 32);
    assert_eq!(json["groups"].as_array().unwrap().len(), 2);
}

/// A histogram with intervals, written as JSON and read back by
/// [`super::super::saved::parse_histogram`]: the intervals come back whole (the same
/// heat map), and the text is the run's log2 histogram.
#[test]
fn histogram_json_with_intervals_reads_back() {
    use super::super::{heatmap, saved};
    let columns = [KeyColumn {
        name: "comm".into(),
        kind: KeyKind::Str,
    }];
    let report = Report::Log2 {
        unit: "usecs".into(),
    };
    let table = Table {
        command: "runqlat",
        traced: "run queue latency",
        columns: &columns,
        report: &report,
    };
    let groups = [
        group("a", 5, 40, vec![0, 0, 4, 1]),
        group("b", 2, 20, vec![0, 0, 0, 2]),
    ];
    let intervals = heatmap::Intervals {
        place: "host h, all processes; every comm summed".into(),
        rows: vec![
            heatmap::Row {
                low: 4,
                high: 7,
                label: "4 -> 7".into(),
            },
            heatmap::Row {
                low: 8,
                high: 15,
                label: "8 -> 15".into(),
            },
        ],
        columns: vec![
            heatmap::Column {
                clock: "10:00:01".into(),
                start_ms: 0,
                length_ms: 1001,
                counts: vec![4, 0],
            },
            heatmap::Column {
                clock: "10:00:02".into(),
                start_ms: 1001,
                length_ms: 999,
                counts: vec![0, 3],
            },
        ],
    };
    let mut out = Vec::new();
    let stats = EngineStats {
        counted: 7,
        ..EngineStats::default()
    };
    write_with_intervals(
        &mut out,
        Format::Json,
        &table,
        &groups,
        &stats,
        Duration::from_secs(2),
        Some(&intervals),
    )
    .unwrap();
    let json = String::from_utf8(out).unwrap();
    assert!(
        json.ends_with(
            ",\"intervals\":{\"place\":\"host h, all processes; every comm summed\",\
                 \"rows\":[{\"low\":4,\"high\":7,\"label\":\"4 -> 7\"},\
                 {\"low\":8,\"high\":15,\"label\":\"8 -> 15\"}],\
                 \"columns\":[{\"clock\":\"10:00:01\",\"start_ms\":0,\"length_ms\":1001,\
                 \"counts\":[4,0]},{\"clock\":\"10:00:02\",\"start_ms\":1001,\
                 \"length_ms\":999,\"counts\":[0,3]}]}}\n"
        ),
        "{json}"
    );
    let back = saved::parse_histogram(json.as_bytes(), std::path::Path::new("r.json")).unwrap();
    assert_eq!(back.command, "runqlat");
    assert_eq!(back.unit, "usecs");
    assert_eq!(back.duration_s, 2.0);
    assert_eq!(back.intervals.as_ref(), Some(&intervals));
    assert_eq!(back.title(), "runqlat: run queue latency");
    assert_eq!(
        back.groups[1].hist,
        [saved::SavedBucket {
            low: 8,
            high: 15,
            count: 2
        }]
    );
    // The same text as the run's, group by group.
    assert_eq!(back.text(), render(Format::Text, &table, &groups));
    // The same heat map as the run drew from the same intervals.
    let title = back.title();
    let saved_intervals = back.intervals.as_ref().unwrap();
    assert_eq!(
        heatmap::svg(&saved_intervals.map(&title, &back.unit)),
        heatmap::svg(&intervals.map("runqlat: run queue latency", "usecs"))
    );
    // Columns that do not have one count per row are refused, naming the column.
    let bad = json.replace("\"counts\":[0,3]", "\"counts\":[3]");
    assert_eq!(
        saved::parse_histogram(bad.as_bytes(), std::path::Path::new("r.json"))
            .unwrap_err()
            .to_string(),
        "r.json: intervals.columns[1] has 1 counts for 2 rows; each column needs one \
             count per row"
    );
}

/// A linear histogram read back is shown one line per saved bucket.
#[test]
fn saved_linear_histogram_text() {
    let json = "{\"format\":\"tracekit\",\"format_version\":1,\"kind\":\"histogram\",\
                    \"command\":\"hist\",\"traced\":\"x\",\"duration_s\":1.0,\"unit\":\"ms\",\
                    \"groups\":[{\"key\":{},\"count\":3,\"sum\":0,\"hist\":[\
                    {\"low\":-9223372036854775808,\"high\":-1,\"count\":1},\
                    {\"low\":0,\"high\":9,\"count\":2}]}]}";
    let back =
        super::super::saved::parse_histogram(json.as_bytes(), std::path::Path::new("h.json"))
            .unwrap();
    assert_eq!(back.intervals, None);
    assert_eq!(
        back.text(),
        "     ms                  : count     distribution\n\
             \x20       < 0              : 1        |********************                    |\n\
             \x20       0 -> 9           : 2        |****************************************|\n"
    );
}

#[test]
fn log2_histograms_per_group() {
    let columns = [KeyColumn {
        name: "comm".into(),
        kind: KeyKind::Str,
    }];
    let report = Report::Log2 {
        unit: "bytes".into(),
    };
    let table = Table {
        command: "bitesize",
        traced: "block I/O sizes",
        columns: &columns,
        report: &report,
    };
    let mut slots = vec![0; 18];
    slots[12] = 4;
    slots[16] = 512;
    let mut other = vec![0; 18];
    other[14] = 1;
    let groups = [group("dd", 516, 0, slots), group("tracekit", 1, 0, other)];
    assert_eq!(
        render(Format::Text, &table, &groups),
        "comm = dd\n\
             \x20    bytes               : count     distribution\n\
             \x20     4096 -> 8191       : 4        |                                        |\n\
             \x20     8192 -> 16383      : 0        |                                        |\n\
             \x20    16384 -> 32767      : 0        |                                        |\n\
             \x20    32768 -> 65535      : 0        |                                        |\n\
             \x20    65536 -> 131071     : 512      |****************************************|\n\
             \n\
             comm = tracekit\n\
             \x20    bytes               : count     distribution\n\
             \x20    16384 -> 32767      : 1        |****************************************|\n"
    );
    assert_eq!(
        render(Format::Json, &table, &groups[1..]),
        "{\"format\":\"tracekit\",\"format_version\":1,\"kind\":\"histogram\",\
             \"command\":\"bitesize\",\"traced\":\"block I/O sizes\",\"duration_s\":1.5,\
             \"unit\":\"bytes\",\"groups\":[{\"key\":{\"comm\":\"tracekit\"},\"count\":1,\
             \"sum\":0,\"hist\":[{\"low\":16384,\"high\":32767,\"count\":1}]}],\
             \"stats\":{\"counted\":1,\"filtered\":0,\"map_full\":0,\"no_start\":0,\
             \"start_map_full\":0,\"read_errors\":0,\"starts\":0,\"trace_lost\":0,\
             \"stack_map_full\":0,\"stack_errors\":0,\"announce_lost\":0,\"starts_ended\":0,\
             \"starts_exited\":0,\"missed\":0,\"starts_missed\":0}}\n"
    );
}

/// `--percentiles`: the folded log2 histogram, then the percentiles as the buckets
/// they fall in; JSON carries the fine buckets and the same percentiles.
#[test]
fn log_linear_histogram_with_percentiles() {
    use tracekit_common::engine::log_linear_slot;
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
    assert_eq!(
        render(Format::Text, &table, &groups),
        "     usecs               : count     distribution\n\
             \x20      512 -> 1023       : 900      |****************************************|\n\
             \x20     1024 -> 2047       : 0        |                                        |\n\
             \x20     2048 -> 4095       : 0        |                                        |\n\
             \x20     4096 -> 8191       : 0        |                                        |\n\
             \x20     8192 -> 16383      : 90       |****                                    |\n\
             \x20    16384 -> 32767      : 0        |                                        |\n\
             \x20    32768 -> 65535      : 0        |                                        |\n\
             \x20    65536 -> 131071     : 10       |                                        |\n\
             \x20    percentile (usecs)  : bucket\n\
             \x20    p50                 : 992 -> 1023\n\
             \x20    p90                 : 992 -> 1023\n\
             \x20    p99                 : 9728 -> 10239\n\
             \x20    p99.9               : 98304 -> 102399\n\
             \x20    max                 : 98304 -> 102399\n\
             \x20    count 1000, mean 2800.000 usecs\n"
    );
    let json = render(Format::Json, &table, &groups);
    assert!(
        json.contains(
            "\"hist\":[{\"low\":992,\"high\":1023,\"count\":900},\
                 {\"low\":9728,\"high\":10239,\"count\":90},\
                 {\"low\":98304,\"high\":102399,\"count\":10}],\
                 \"percentiles\":{\"count\":1000,\"mean\":2800.0,\"percentiles\":[\
                 {\"name\":\"p50\",\"quantile\":0.5,\"low\":992,\"high\":1023},\
                 {\"name\":\"p90\",\"quantile\":0.9,\"low\":992,\"high\":1023},\
                 {\"name\":\"p99\",\"quantile\":0.99,\"low\":9728,\"high\":10239},\
                 {\"name\":\"p99.9\",\"quantile\":0.999,\"low\":98304,\"high\":102399}],\
                 \"max\":{\"low\":98304,\"high\":102399}}"
        ),
        "{json}"
    );
}

/// `syscount --latency --percentiles`: one row per syscall, each percentile the
/// bucket it falls in, most calls first.
#[test]
fn log_linear_table_with_top() {
    use tracekit_common::engine::log_linear_slot;
    let columns = [KeyColumn {
        name: "syscall".into(),
        kind: KeyKind::Syscall,
    }];
    let report = Report::LogLinear {
        unit: "usecs".into(),
        precision: 4,
        div: 1000,
        top: Some(10),
    };
    let table = Table {
        command: "syscount",
        traced: "syscalls",
        columns: &columns,
        report: &report,
    };
    let mut sleeps = vec![0u64; 976];
    sleeps[log_linear_slot(1000, 4) as usize] = 99;
    sleeps[log_linear_slot(100_000, 4) as usize] = 1;
    let mut reads = vec![0u64; 976];
    reads[log_linear_slot(3, 4) as usize] = 5;
    let groups = [
        group("read", 5, 15_500, reads),
        group("nanosleep", 100, 199_000_000, sleeps),
    ];
    assert_eq!(
        render(Format::Text, &table, &groups),
        "SYSCALL    COUNT  MEAN(us)   P50(us)   P90(us)   P99(us)     P99.9(us)       MAX(us)\n\
             nanosleep    100  1990.000  992-1023  992-1023  992-1023  98304-102399  98304-102399\n\
             read           5     3.100         3         3         3             3             3\n"
    );
}

#[test]
fn linear_buckets_in_json() {
    let report = Report::Linear {
        min: 0,
        step: 100,
        unit: "len".into(),
    };
    let table = Table {
        command: "hist",
        traced: "net:net_dev_xmit",
        columns: &[],
        report: &report,
    };
    let groups = [Group {
        key: vec![],
        count: 3,
        sum: 0,
        slots: vec![1, 0, 1, 1],
    }];
    let json = render(Format::Json, &table, &groups);
    assert!(
        json.contains(
            "\"hist\":[{\"low\":-9223372036854775808,\"high\":-1,\"count\":1},\
                 {\"low\":100,\"high\":199,\"count\":1},\
                 {\"low\":200,\"high\":9223372036854775807,\"count\":1}]"
        ),
        "{json}"
    );
    let _ = BTreeMap::<u8, u8>::new();
}

#[test]
fn unended_starts_counted() {
    let stats = EngineStats {
        starts: 300,
        starts_ended: 287,
        ..EngineStats::default()
    };
    assert_eq!(
        unended(&stats),
        "Not ended: 13 starts whose end was not seen (in flight when tracing stopped, or \
             ended unseen: see Lost).\n"
    );
    let all_ended = EngineStats {
        starts: 300,
        starts_ended: 300,
        ..EngineStats::default()
    };
    assert_eq!(unended(&all_ended), "");
}

#[test]
fn summary_accounts_for_every_loss() {
    let stats = EngineStats {
        counted: 632,
        filtered: 7,
        map_full: 3,
        start_map_full: 2,
        no_start: 4,
        missed: 2,
        starts_missed: 1,
        ..EngineStats::default()
    };
    assert_eq!(
        summary(&stats, Duration::from_secs(2), "duration reached", false),
        "Counted 632 events (7 more did not pass the filter) in 2.00 s (duration reached).\n\
             Lost: 3 events to a full map (raise --max-groups); 2 starts to a full start map \
             (raise --max-in-flight); 2 events and 1 starts not seen (the kernel skips a \
             program while another BPF program runs on the CPU, and a kretprobe's return \
             while more calls are in flight than its maxactive).\n\
             Not counted: 4 ends whose start was not seen (in flight when tracing began).\n"
    );
    assert_eq!(
        summary(
            &EngineStats::default(),
            Duration::ZERO,
            "command exited",
            true
        ),
        "Counted 0 events in 0.00 s (command exited).\nLost: nothing.\n"
    );
    // One of each: every noun agrees with its number.
    let one = EngineStats {
        counted: 1,
        filtered: 1,
        map_full: 1,
        start_map_full: 1,
        read_errors: 1,
        no_start: 1,
        ..EngineStats::default()
    };
    assert_eq!(
        summary(&one, Duration::from_secs(1), "duration reached", false),
        "Counted 1 event (1 more did not pass the filter) in 1.00 s (duration reached).\n\
             Lost: 1 event to a full map (raise --max-groups); 1 start to a full start map \
             (raise --max-in-flight); 1 event whose fields could not be read.\n\
             Not counted: 1 end whose start was not seen (in flight when tracing began).\n"
    );
}
