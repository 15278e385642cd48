use super::*;

fn bytes_family(series: Vec<(Labels, Histogram)>) -> MetricFamily {
    let buckets = Buckets::Log2 {
        first: 11,
        last: 17,
    };
    MetricFamily {
        name: "tracekit_block_io_size".into(),
        help: "Block I/O request sizes.".into(),
        unit: Some(BaseUnit::Bytes),
        label_names: vec!["disk".into(), "op".into()],
        values: Values::Histogram {
            upper_bounds: buckets.upper_bounds(Scale::IDENTITY),
            series,
        },
    }
}

/// 512 requests of 64 KiB and 4 of 4 KiB: 65536 is in slot 16 (65536..=131071), so it
/// counts under le="131071.0" and not under le="65535.0"; 4096 under le="8191.0".
#[test]
fn histogram_le_is_the_slots_inclusive_upper_bound() {
    let buckets = Buckets::Log2 {
        first: 11,
        last: 17,
    };
    let mut slots = vec![0u64; 64];
    slots[12] = 4; // 4096
    slots[16] = 512; // 65536
    slots[40] = 1; // far above the last bucket: only +Inf
    let histogram = Histogram {
        buckets: buckets.fold(&slots),
        sum: (4 * 4096 + 512 * 65536 + (1u64 << 40)) as f64,
        native: buckets.native(&slots, Scale::IDENTITY),
    };
    let text = encode(&[bytes_family(vec![(
        Labels::from(["vda", "write"]),
        histogram,
    )])]);
    assert_eq!(
        text,
        "# HELP tracekit_block_io_size_bytes Block I/O request sizes.\n\
         # TYPE tracekit_block_io_size_bytes histogram\n\
         # UNIT tracekit_block_io_size_bytes bytes\n\
         tracekit_block_io_size_bytes_sum{disk=\"vda\",op=\"write\"} 1099545198592.0\n\
         tracekit_block_io_size_bytes_count{disk=\"vda\",op=\"write\"} 517\n\
         tracekit_block_io_size_bytes_bucket{le=\"4095.0\",disk=\"vda\",op=\"write\"} 0\n\
         tracekit_block_io_size_bytes_bucket{le=\"8191.0\",disk=\"vda\",op=\"write\"} 4\n\
         tracekit_block_io_size_bytes_bucket{le=\"16383.0\",disk=\"vda\",op=\"write\"} 4\n\
         tracekit_block_io_size_bytes_bucket{le=\"32767.0\",disk=\"vda\",op=\"write\"} 4\n\
         tracekit_block_io_size_bytes_bucket{le=\"65535.0\",disk=\"vda\",op=\"write\"} 4\n\
         tracekit_block_io_size_bytes_bucket{le=\"131071.0\",disk=\"vda\",op=\"write\"} 516\n\
         tracekit_block_io_size_bytes_bucket{le=\"262143.0\",disk=\"vda\",op=\"write\"} 516\n\
         tracekit_block_io_size_bytes_bucket{le=\"+Inf\",disk=\"vda\",op=\"write\"} 517\n\
         # EOF\n"
    );
}

/// Log-linear buckets: each power of two in `first..=last` split into 2^precision,
/// each `le` its slot's inclusive upper bound; lower slots fold into the first bucket,
/// higher ones into +Inf.
#[test]
fn log_linear_buckets_split_each_power_of_two() {
    use tracekit_common::engine::log_linear_slot;
    let buckets = Buckets::LogLinear {
        first: 4,
        last: 5,
        precision: 2,
    };
    assert_eq!(buckets.kernel_slots(), 20);
    assert_eq!(
        buckets.upper_bounds(Scale::IDENTITY),
        [19.0, 23.0, 27.0, 31.0, 39.0, 47.0, 55.0, 63.0]
    );
    let mut slots = vec![0u64; 40];
    for value in [0, 3, 15, 16, 19, 20, 63, 64, 1000] {
        slots[log_linear_slot(value, 2) as usize] += 1;
    }
    assert_eq!(buckets.fold(&slots), [5, 1, 0, 0, 0, 0, 0, 1, 2]);
    // Nanoseconds to seconds: 2^0..2^63 ends at u64::MAX.
    let all = Buckets::LogLinear {
        first: 0,
        last: 63,
        precision: 4,
    };
    assert_eq!(all.kernel_slots(), 976);
    assert_eq!(all.upper_bounds(Scale::IDENTITY).len(), 976);
    assert_eq!(
        all.upper_bounds(Scale::IDENTITY).last(),
        Some(&(u64::MAX as f64))
    );
}

/// Native bucket indices: every power of two is the upper bound of its bucket, at every
/// schema; a value halfway (geometrically) between two boundaries is in the upper one's
/// bucket.
#[test]
fn native_index_at_powers_of_two_and_between() {
    for schema in -4..=8 {
        for k in -40..=40 {
            let power = 2f64.powi(k);
            let expected = if schema >= 0 {
                k * (1 << schema)
            } else {
                // Buckets of 2^-schema octaves: 2^k is inside unless k is a multiple.
                (k as f64 / f64::from(1 << -schema)).ceil() as i32
            };
            assert_eq!(
                native_index(power, schema),
                expected,
                "2^{k}, schema {schema}"
            );
            if schema >= 0 {
                let per = f64::from(1 << schema);
                for i in [k * (1 << schema) + 1, k * (1 << schema) - 3] {
                    let inside = 2f64.powf((f64::from(i) - 0.5) / per);
                    assert_eq!(native_index(inside, schema), i, "{inside}, schema {schema}");
                }
            }
        }
    }
    // Subnormal values still index (Prometheus's zero threshold is above them).
    assert_eq!(native_index(f64::MIN_POSITIVE / 4.0, 0), -1024);
}

/// The acceptance workload (900 waits of 1 ms, 90 of 10 ms, 10 of 100 ms, in the
/// kernel's log-linear slots of nanoseconds) as one protobuf family: decoded with prost,
/// the native histogram has schema 4 and one bucket per wait length, each the native
/// bucket that holds the wait itself (1 ms is in (2^(-160/16), 2^(-159/16)] s); the
/// classic buckets are there too; counters get `_total`.
#[test]
fn protobuf_native_histogram_decodes_to_exact_buckets() {
    use prost::Message as _;
    use tracekit_common::engine::log_linear_slot;
    let scale = Scale {
        div: 1,
        per_base: 1e9,
    };
    let buckets = Buckets::LogLinear {
        first: 19,
        last: 27,
        precision: 4,
    };
    let mut slots = vec![0u64; 600];
    for (ns, n) in [(1_000_000u64, 900), (10_000_000, 90), (100_000_000, 10)] {
        slots[log_linear_slot(ns, 4) as usize] += n;
        // The bucket the wait itself belongs in.
        let expected = native_index(ns as f64 / 1e9, 4);
        assert_eq!(
            buckets
                .native(&slots, scale)
                .unwrap()
                .buckets
                .get(&expected),
            Some(&n),
            "{ns} ns"
        );
    }
    slots[0] = 3; // Three zero-length waits.
    let sum = 900.0 * 1e-3 + 90.0 * 1e-2 + 10.0 * 1e-1;
    let families = [
        MetricFamily {
            name: "tracekit_waits".into(),
            help: "Waits.".into(),
            unit: Some(BaseUnit::Seconds),
            label_names: vec!["comm".into()],
            values: Values::Histogram {
                upper_bounds: buckets.upper_bounds(scale),
                series: vec![(
                    Labels::from(["tk_funcs"]),
                    Histogram {
                        buckets: buckets.fold(&slots),
                        sum,
                        native: buckets.native(&slots, scale),
                    },
                )],
            },
        },
        MetricFamily {
            name: "tracekit_syscalls".into(),
            help: "System calls.".into(),
            unit: None,
            label_names: vec![],
            values: Values::Counter(vec![(Labels::default(), Value::Int(7))]),
        },
    ];
    let mut with_empty = families.to_vec();
    with_empty.insert(
        1,
        MetricFamily {
            name: "tracekit_nothing".into(),
            help: "No series yet.".into(),
            unit: None,
            label_names: vec![],
            values: Values::Gauge(vec![]),
        },
    );
    let encoded = encode_protobuf(&with_empty);
    let mut rest = encoded.as_slice();
    let waits = proto::MetricFamily::decode_length_delimited(&mut rest).unwrap();
    let syscalls = proto::MetricFamily::decode_length_delimited(&mut rest).unwrap();
    assert!(rest.is_empty());

    assert_eq!(
        (waits.name.as_str(), waits.r#type),
        (
            "tracekit_waits_seconds",
            proto::MetricType::Histogram as i32
        )
    );
    let metric = &waits.metric[0];
    assert_eq!(
        (
            metric.label[0].name.as_str(),
            metric.label[0].value.as_str()
        ),
        ("comm", "tk_funcs")
    );
    let histogram = metric.histogram.as_ref().unwrap();
    assert_eq!(histogram.sample_count, 1003);
    assert_eq!(histogram.sample_sum, sum);
    assert_eq!(histogram.schema, 4);
    assert_eq!(histogram.zero_count, 3);
    assert_eq!(histogram.zero_threshold, 2f64.powi(-128));
    assert_eq!(
        histogram
            .positive_span
            .iter()
            .map(|s| (s.offset, s.length))
            .collect::<Vec<_>>(),
        [(-159, 1), (52, 1), (52, 1)]
    );
    assert_eq!(histogram.positive_delta, [900, -810, -80]);
    assert_eq!(
        histogram.native_buckets().into_iter().collect::<Vec<_>>(),
        [(-159, 900), (-106, 90), (-53, 10)]
    );
    // Classic buckets too, cumulative (zeros fold into the first), the last holding
    // everything (+Inf is the count).
    assert_eq!(histogram.bucket.len(), buckets.upper_bounds(scale).len());
    let last = histogram.bucket.last().unwrap();
    assert_eq!(last.cumulative_count, 1003);
    let at_1ms = histogram
        .bucket
        .iter()
        .find(|b| b.upper_bound >= 1e-3)
        .unwrap();
    assert_eq!(
        (at_1ms.upper_bound, at_1ms.cumulative_count),
        (0.001015807, 903)
    );

    assert_eq!(
        (syscalls.name.as_str(), syscalls.r#type),
        ("tracekit_syscalls_total", proto::MetricType::Counter as i32)
    );
    assert_eq!(syscalls.metric[0].counter.as_ref().unwrap().value, 7.0);
    assert!(syscalls.metric[0].label.is_empty());
}

/// No observations: a no-op span keeps it native; log2 and linear buckets have no native
/// form; microsecond buckets of nanoseconds put their slot 0 (0-999 ns) in the zero
/// bucket, whose threshold says so.
#[test]
fn native_edges() {
    let buckets = Buckets::LogLinear {
        first: 0,
        last: 10,
        precision: 2,
    };
    let empty = proto::Histogram::new(
        &[],
        &Histogram {
            buckets: vec![0],
            sum: 0.0,
            native: buckets.native(&[], Scale::IDENTITY),
        },
    );
    assert_eq!(empty.positive_span, [proto::BucketSpan::default()]);
    assert_eq!(
        Buckets::Log2 { first: 0, last: 3 }.native(&[1], Scale::IDENTITY),
        None
    );
    let micros = Scale {
        div: 1000,
        per_base: 1e9,
    };
    let native = buckets.native(&[5, 0, 2], micros).unwrap();
    assert_eq!(native.zero_threshold, 999e-9);
    assert_eq!(native.zero_count, 5);
    // Slot 2 holds 2000-2999 ns, counted where 2 us is.
    assert_eq!(
        native.buckets.into_iter().collect::<Vec<_>>(),
        [(native_index(2e-6, 2), 2)]
    );
    // Bytes: exact powers of two land in the bucket they bound, and small values (a slot
    // each) exactly.
    let bytes = Buckets::LogLinear {
        first: 0,
        last: 20,
        precision: 4,
    };
    let mut slots = vec![0u64; 400];
    for value in [4096u64, 4096, 3, 65536] {
        slots[tracekit_common::engine::log_linear_slot(value, 4) as usize] += 1;
    }
    let native = bytes.native(&slots, Scale::IDENTITY).unwrap();
    assert_eq!(
        native.buckets.into_iter().collect::<Vec<_>>(),
        [(native_index(3.0, 4), 1), (12 * 16, 2), (16 * 16, 1)]
    );
}

#[test]
fn log2_slot_zero_holds_zero_and_one() {
    let buckets = Buckets::Log2 { first: 0, last: 3 };
    assert_eq!(buckets.upper_bounds(Scale::IDENTITY), [1.0, 3.0, 7.0, 15.0]);
    // Lower slots fold into the first bucket; higher ones into the last (+Inf) part.
    let buckets = Buckets::Log2 { first: 2, last: 3 };
    assert_eq!(buckets.fold(&[1, 2, 3, 4, 5, 6]), [6, 4, 11]);
    assert_eq!(buckets.fold(&[1]), [1, 0, 0]);
    assert_eq!(buckets.kernel_slots(), 4);
}

/// Nanoseconds in seconds: each le is the slot's last nanosecond, printed exactly.
#[test]
fn nanoseconds_become_seconds() {
    let scale = Scale {
        div: 1,
        per_base: 1e9,
    };
    let buckets = Buckets::Log2 { first: 9, last: 11 };
    assert_eq!(buckets.upper_bounds(scale), [1.023e-6, 2.047e-6, 4.095e-6]);
    let family = MetricFamily {
        name: "tracekit_runq_latency".into(),
        help: "Run queue latency.".into(),
        unit: Some(BaseUnit::Seconds),
        label_names: vec![],
        values: Values::Histogram {
            upper_bounds: buckets.upper_bounds(scale),
            series: vec![(
                Labels::default(),
                Histogram {
                    buckets: vec![1, 2, 0, 3],
                    sum: scale.to_base(12_345.0),
                    native: None,
                },
            )],
        },
    };
    assert_eq!(
        encode(&[family]),
        "# HELP tracekit_runq_latency_seconds Run queue latency.\n\
         # TYPE tracekit_runq_latency_seconds histogram\n\
         # UNIT tracekit_runq_latency_seconds seconds\n\
         tracekit_runq_latency_seconds_sum 0.000012345\n\
         tracekit_runq_latency_seconds_count 6\n\
         tracekit_runq_latency_seconds_bucket{le=\"0.000001023\"} 1\n\
         tracekit_runq_latency_seconds_bucket{le=\"0.000002047\"} 3\n\
         tracekit_runq_latency_seconds_bucket{le=\"0.000004095\"} 3\n\
         tracekit_runq_latency_seconds_bucket{le=\"+Inf\"} 6\n\
         # EOF\n"
    );
}

#[test]
fn linear_buckets() {
    // min 0, step 10, 5 slots: <0, 0..=9, 10..=19, 20..=29, >=30.
    let buckets = Buckets::Linear {
        min: 0,
        step: 10,
        slots: 5,
    };
    assert_eq!(
        buckets.upper_bounds(Scale::IDENTITY),
        [-1.0, 9.0, 19.0, 29.0]
    );
    assert_eq!(buckets.fold(&[0, 2, 0, 1, 7]), [0, 2, 0, 1, 7]);
    assert_eq!(buckets.kernel_slots(), 5);
}

#[test]
fn counters_gauges_units_and_escaping() {
    let families = [
        MetricFamily {
            name: "tracekit_syscall_time".into(),
            help: "Time in system calls.\nSecond line \\ here.".into(),
            unit: Some(BaseUnit::Seconds),
            label_names: vec!["syscall".into(), "comm".into()],
            values: Values::Counter(vec![(
                Labels::from(["read", "we\"ird\\\n"]),
                Value::Float(0.25),
            )]),
        },
        MetricFamily {
            name: "process_resident_memory".into(),
            help: "Resident memory.".into(),
            unit: Some(BaseUnit::Bytes),
            label_names: vec![],
            values: Values::Gauge(vec![(Labels::default(), Value::Int(4096))]),
        },
    ];
    assert_eq!(
        encode(&families),
        "# HELP tracekit_syscall_time_seconds Time in system calls.\\nSecond line \\\\ here.\n\
         # TYPE tracekit_syscall_time_seconds counter\n\
         # UNIT tracekit_syscall_time_seconds seconds\n\
         tracekit_syscall_time_seconds_total{syscall=\"read\",comm=\"we\\\"ird\\\\\\n\"} 0.25\n\
         # HELP process_resident_memory_bytes Resident memory.\n\
         # TYPE process_resident_memory_bytes gauge\n\
         # UNIT process_resident_memory_bytes bytes\n\
         process_resident_memory_bytes 4096\n\
         # EOF\n"
    );
}
