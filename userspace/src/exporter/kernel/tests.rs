use super::*;

fn requests(text: &str) -> Vec<Request> {
    let config = Config::parse(text, "test").unwrap();
    config.metrics.iter().map(|m| request(m).unwrap()).collect()
}

fn by(request: &Request) -> Vec<(&str, &str)> {
    request
        .by
        .iter()
        .map(|k| (k.label.as_str(), k.field.as_str()))
        .collect()
}

/// The default set: the presets' own events, labels on the fields bcc shows, buckets
/// of raw nanoseconds and bytes.
#[test]
fn default_set_requests() {
    let [syscalls, latency, size, runq] =
        <[Request; 4]>::try_from(requests(crate::exporter::config::DEFAULT_SET)).unwrap();
    assert_eq!(syscalls.probes, ["rawtracepoint:sys_enter"]);
    assert_eq!(
        (syscalls.shape, syscalls.value.as_deref()),
        (Shape::Count, None)
    );
    assert_eq!(by(&syscalls), [("syscall", "id")]);

    assert_eq!(latency.probes, ["block:block_rq_complete"]);
    assert_eq!(latency.value.as_deref(), Some("latency"));
    assert_eq!((latency.shape, latency.value_div), (Shape::Log2, 1));
    assert_eq!(by(&latency), [("disk", "dev"), ("op", "rwbs")]);
    assert_eq!(
        latency.start.as_ref().unwrap().probes[0].probe,
        "block:block_rq_issue"
    );

    assert_eq!(size.probes, ["block:block_rq_issue"]);
    assert_eq!(size.value.as_deref(), Some("bytes"));
    assert_eq!(by(&size), [("disk", "dev"), ("op", "rwbs")]);

    assert_eq!(runq.probes, ["sched:sched_switch"]);
    assert_eq!((runq.shape, runq.value_div), (Shape::Log2, 1));
    assert!(runq.by.is_empty());
    assert_eq!(runq.filter.as_deref(), Some("next_pid != 0"));
}

/// Extra filters are added to a preset's own; event metrics count, sum or bucket.
#[test]
fn filters_labels_and_shapes() {
    let [runq, syscalls, reads, packets] = <[Request; 4]>::try_from(requests(
        r#"
[[metric]]
name = "runq"
preset = "runqlat"
by = ["tid"]
filter = "next_prio < 100"
[[metric]]
name = "sys"
preset = "syscount"
by = ["syscall", "comm"]
filter = 'comm == "app"'
[[metric]]
name = "read"
event = "syscalls:sys_exit_read"
value = "ret"
unit = "bytes"
by = ["comm"]
[[metric]]
name = "packet_size"
event = "net:net_dev_xmit"
value = "len"
buckets = "linear:0,1500,100"
"#,
    ))
    .unwrap();
    assert_eq!(
        runq.filter.as_deref(),
        Some("(next_pid != 0) && (next_prio < 100)")
    );
    assert_eq!(by(&runq), [("tid", "next_pid")]);
    assert_eq!(syscalls.filter.as_deref(), Some("comm == \"app\""));
    assert_eq!(by(&syscalls), [("syscall", "id"), ("comm", "comm")]);
    assert_eq!(reads.probes, ["syscalls:sys_exit_read"]);
    assert_eq!(
        (reads.shape, reads.value.as_deref()),
        (Shape::Count, Some("ret"))
    );
    assert_eq!(by(&reads), [("comm", "comm")]);
    assert_eq!(
        packets.shape,
        Shape::Linear {
            min: 0,
            max: 1500,
            step: 100
        }
    );
    assert_eq!(packets.value_div, 1);
}

#[test]
fn errors_name_the_metric_and_keep_their_kind() {
    let usage = in_metric("io", Error::usage("unknown field `x`"));
    assert_eq!(usage.to_string(), "metric \"io\": unknown field `x`");
    assert_eq!(usage.exit_code(), 2);
    let runtime = in_metric("io", Error::runtime("attaching"));
    assert_eq!(runtime.to_string(), "metric \"io\": attaching");
    assert_eq!(runtime.exit_code(), 1);
}

/// Only cells unchanged since the last reading, with every kernel entry in an engine
/// that can delete, are idle.
#[test]
fn idle_cells_are_unchanged_and_deletable() {
    let cell = |name: &str| (Labels::from([name]), 0u32);
    let previous: HashMap<(Labels, u32), (u64, u64)> = [
        (cell("gone"), (5, 50)),
        (cell("busy"), (7, 70)),
        (cell("array"), (3, 30)),
        (cell("two"), (4, 40)),
    ]
    .into_iter()
    .collect();
    let reading: Reading = [
        (cell("gone"), ((5, 50), vec![(0, vec![1], 0)])),
        (cell("busy"), ((8, 80), vec![(0, vec![2], 0)])),
        (cell("new"), ((1, 10), vec![(0, vec![3], 0)])),
        (cell("array"), ((3, 30), vec![(1, vec![4], 0)])),
        // Two kernel entries behind one label set, one in the array engine.
        (
            cell("two"),
            ((4, 40), vec![(0, vec![5], 0), (1, vec![6], 0)]),
        ),
    ]
    .into_iter()
    .collect();
    assert_eq!(
        idle_cells(&previous, &reading, &[true, false]),
        [cell("gone")]
    );
    assert_eq!(
        idle_cells(&previous, &reading, &[true, true]),
        [cell("array"), cell("gone"), cell("two")]
    );
}
