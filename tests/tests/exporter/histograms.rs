//! The exporter's histograms read by the real readers: a Prometheus scraping every second,
//! log-linear buckets as `hist --json` gives them, and native histograms over protobuf.

use std::{
    collections::BTreeMap,
    net::{SocketAddr, TcpStream},
    path::Path,
    process::{Command, Stdio},
    time::Duration,
};

use tracekit_tests::{ensure_package, fixture, kill, require_root, scratch, tracekit};

use super::{
    config, copy_as, dd_64k, free_port, get, get_with, labels_of, run_ok, sample_sum, scrape,
    settle, start_exporter, stop_exporter,
};

const TIMEOUT: Duration = Duration::from_secs(60);

/// `query` percent-encoded for a URL.
fn url_encode(query: &str) -> String {
    query
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// An instant query's single value (0 when the result is empty).
pub(super) fn prometheus_value(prometheus: SocketAddr, query: &str) -> f64 {
    let (status, body) = get(
        prometheus,
        &format!("/api/v1/query?query={}", url_encode(query)),
    );
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status, 200, "{query}: {json}");
    let result = json["data"]["result"].as_array().expect("a vector result");
    match result.as_slice() {
        [] => 0.0,
        [one] => one["value"][1].as_str().unwrap().parse().unwrap(),
        _ => panic!("{query}: more than one series: {json}"),
    }
}

/// `prometheus`, installed from Debian's package when missing; `None` (with the reason
/// printed) when it cannot be installed.
pub(super) fn prometheus_or_skip(test: &str) -> Option<&'static str> {
    let binary = "/usr/bin/prometheus";
    ensure_package(test, "prometheus", || Path::new(binary).exists()).then_some(binary)
}

/// A real Prometheus scrapes the exporter every second while the
/// fixture makes exactly N getppid() calls and dd writes 64 KiB blocks; its HTTP API gives
/// the syscall counter's increase == N and the histogram's count == the requests, under the
/// right `le`.
#[test]
fn exporter_scraped_by_prometheus() {
    require_root();
    let test = "exporter_scraped_by_prometheus";
    let Some(prometheus_bin) = prometheus_or_skip(test) else {
        return;
    };
    let dir = scratch(test);
    let syscaller = copy_as(&fixture("tk_syscalls"), &dir, "tk_prom_getppid");
    let dd = copy_as(Path::new("/bin/dd"), &dir, "tk_prom_dd");
    let (exporter, addr) = start_exporter(&config(&dir, "tkp", "tk_prom_getppid", "tk_prom_dd"));

    let prometheus_addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let prometheus_config = dir.join("prometheus.yml");
    std::fs::write(
        &prometheus_config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: tracekit\n    static_configs:\n      \
             - targets: ['{addr}']\n"
        ),
    )
    .unwrap();
    let mut prometheus = Command::new(prometheus_bin)
        .arg(format!("--config.file={}", prometheus_config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={prometheus_addr}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting prometheus");
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        settle(
            "Prometheus ready",
            || match TcpStream::connect(prometheus_addr) {
                Ok(_) => f64::from(get(prometheus_addr, "/-/ready").0),
                Err(_) => 0.0,
            },
            |status| status == 200.0,
        );
        let up = "up{job=\"tracekit\"}";
        settle(
            "the exporter up",
            || prometheus_value(prometheus_addr, up),
            |v| v == 1.0,
        );

        let getppid = "tkp_syscalls_total{syscall=\"getppid\",comm=\"tk_prom_getppid\"}";
        run_ok(&syscaller, &["1000"]);
        settle(
            "the first run",
            || prometheus_value(prometheus_addr, getppid),
            |v| v == 1000.0,
        );
        let n = 12345;
        run_ok(&syscaller, &[&n.to_string()]);
        let after = settle(
            "the second run",
            || prometheus_value(prometheus_addr, getppid),
            |v| v != 1000.0,
        );
        assert_eq!(after - 1000.0, f64::from(n), "the counter's increase");

        let requests = 100;
        dd_64k(&dd, &dir.join("file"), requests);
        // block_rq_issue fires in the task that dispatches a request: a kworker running the
        // queue may issue a few of dd's. Every 64 KiB request is counted under some comm.
        let all_64k = "sum(tkp_block_io_size_bytes_bucket{le=~`131071(\\.0)?`}) - \
                       sum(tkp_block_io_size_bytes_bucket{le=~`65535(\\.0)?`})";
        settle(
            "dd's requests",
            || prometheus_value(prometheus_addr, all_64k),
            |v| v >= f64::from(requests),
        );
        let count = prometheus_value(
            prometheus_addr,
            "sum(tkp_block_io_size_bytes_count{comm=\"tk_prom_dd\"})",
        );
        let bucket = |le: &str| {
            prometheus_value(
                prometheus_addr,
                &format!("sum(tkp_block_io_size_bytes_bucket{{comm=\"tk_prom_dd\",le=~`{le}`}})"),
            )
        };
        // One scrape holds the count and the buckets; read them after the count settled.
        let (below, at) = (bucket("65535(\\.0)?"), bucket("131071(\\.0)?"));
        assert!(
            at - below >= 0.95 * f64::from(requests) && below <= 0.05 * count,
            "{count} requests of dd, {below} under le=65535, {at} under le=131071"
        );
    }));
    kill(prometheus.id(), libc::SIGTERM);
    let _ = prometheus.wait();
    stop_exporter(exporter);
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

/// `buckets = "loglinear"` exposes `--percentiles`' buckets as a
/// Prometheus histogram and the percentiles as `NAME_quantile_seconds{quantile, bound}`;
/// with `hist --percentiles` attached to the same function during the same 1000 waits,
/// /metrics and the JSON name the same buckets. Both programs time each call themselves
/// (microseconds apart), so a rank's wait may sit in the neighbouring bucket of one of
/// them; a bucket is 1/16 of its value wide, and no further apart is allowed.
#[test]
fn exporter_loglinear_percentiles_match_hist_json() {
    require_root();
    let dir = scratch("exporter_loglinear_percentiles_match_hist_json");
    let waiter = copy_as(&fixture("tk_funcs"), &dir, "tk_waits");
    let path = dir.join("exporter.toml");
    std::fs::write(
        &path,
        format!(
            r#"[profile]
enabled = false

[[metric]]
name = "waits"
event = "uretprobe:{}:sleeper"
value = "latency"
unit = "ns"
buckets = "loglinear:19..28"
"#,
            waiter.display()
        ),
    )
    .unwrap();
    let (exporter, addr) = start_exporter(&path);
    let spec = format!("uretprobe:{}:sleeper", waiter.display());
    let waiter_arg = waiter.to_string_lossy().into_owned();
    let run = tracekit(
        [
            "hist",
            &spec,
            "--value",
            "latency",
            "--percentiles",
            "--json",
            "--",
            &waiter_arg,
            "waits",
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let json: serde_json::Value = serde_json::from_str(run.stdout.lines().last().unwrap())
        .unwrap_or_else(|err| panic!("not JSON ({err}): {}", run.stdout));
    let group = &json["groups"][0];
    let text = scrape(addr);
    assert_eq!(
        sample_sum(&text, "tracekit_waits_seconds_count", &[]),
        1000.0,
        "{text}"
    );
    assert_eq!(
        sample_sum(&text, "tracekit_waits_seconds_bucket", &[("le", "+Inf")]),
        1000.0,
        "{text}"
    );
    // 10 powers of two (2^19..2^28 ns), 16 buckets each, and +Inf.
    let buckets = text
        .lines()
        .filter(|l| l.starts_with("tracekit_waits_seconds_bucket"))
        .count();
    assert_eq!(buckets, 161, "{text}");
    let exported = |quantile: &str, bound: &str| {
        let seconds = sample_sum(
            &text,
            "tracekit_waits_quantile_seconds",
            &[("quantile", quantile), ("bound", bound)],
        );
        (seconds * 1e9).round() as u64
    };
    let percentiles = group["percentiles"]["percentiles"].as_array().unwrap();
    let rows = percentiles
        .iter()
        .map(|p| (p["quantile"].to_string(), &p["low"], &p["high"]))
        .chain([(
            "1".to_string(),
            &group["percentiles"]["max"]["low"],
            &group["percentiles"]["max"]["high"],
        )]);
    for (quantile, low, high) in rows {
        let (low, high) = (low.as_u64().unwrap(), high.as_u64().unwrap());
        let (e_low, e_high) = (exported(&quantile, "low"), exported(&quantile, "high"));
        let same = (e_low, e_high) == (low, high);
        let next = e_low == high + 1 || e_high + 1 == low;
        assert!(
            same || next,
            "quantile {quantile}: /metrics [{e_low}, {e_high}] ns, JSON [{low}, {high}] ns:\n{text}"
        );
        if !same {
            eprintln!("quantile {quantile}: neighbouring buckets (timed apart)");
        }
    }
    stop_exporter(exporter);
}

/// Prometheus's exposition messages (`io.prometheus.client`, metrics.proto of
/// prometheus/client_model): the fields a histogram needs, to read the exporter's
/// protobuf answer with a decoder of the test's own.
mod metrics_proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct MetricFamily {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(int32, tag = "3")]
        pub r#type: i32,
        #[prost(message, repeated, tag = "4")]
        pub metric: Vec<Metric>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Metric {
        #[prost(message, optional, tag = "7")]
        pub histogram: Option<Histogram>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Histogram {
        #[prost(uint64, tag = "1")]
        pub sample_count: u64,
        #[prost(double, tag = "2")]
        pub sample_sum: f64,
        #[prost(sint32, tag = "5")]
        pub schema: i32,
        #[prost(uint64, tag = "7")]
        pub zero_count: u64,
        #[prost(message, repeated, tag = "12")]
        pub positive_span: Vec<BucketSpan>,
        #[prost(sint64, repeated, tag = "13")]
        pub positive_delta: Vec<i64>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct BucketSpan {
        #[prost(sint32, tag = "1")]
        pub offset: i32,
        #[prost(uint32, tag = "2")]
        pub length: u32,
    }

    impl Histogram {
        /// Native bucket index to count, the spans and deltas undone.
        pub fn buckets(&self) -> Vec<(i32, u64)> {
            let mut out = Vec::new();
            let mut deltas = self.positive_delta.iter();
            let (mut next, mut count) = (0i32, 0i64);
            for (n, span) in self.positive_span.iter().enumerate() {
                next += span.offset;
                if n == 0 {
                    next = span.offset;
                }
                for _ in 0..span.length {
                    count += deltas.next().expect("a delta per bucket");
                    out.push((next, count as u64));
                    next += 1;
                }
            }
            out
        }
    }
}

const PROTOBUF_ACCEPT: &str = "Accept: application/vnd.google.protobuf;\
    proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,\
    text/plain;version=0.0.4;q=0.3,*/*;q=0.2\r\n";

/// The log-linear buckets as a native histogram where the scraper
/// accepts protobuf. The fixture makes 1000 timed calls (900 of 1 ms, 90 of 10 ms, 10 of
/// 100 ms) under an exporter with `buckets = "loglinear"`; /metrics with Prometheus's
/// protobuf `Accept` gives a native histogram of schema 4 whose buckets are the text
/// format's log-linear buckets each moved to the native bucket of its lowest value, and
/// whose three groups hold exactly the calls the fixture timed. A real Prometheus with
/// native histograms on scrapes it: `histogram_count` is 1000 and `histogram_quantile`
/// of p50, p95 and p99.9 is within 12% of the fixture's own timing (a native bucket is
/// 4.4% wide, a log-linear one 6.25%).
#[test]
fn exporter_native_histogram_over_protobuf() {
    use prost::Message as _;
    require_root();
    let test = "exporter_native_histogram_over_protobuf";
    let dir = scratch(test);
    let waiter = copy_as(&fixture("tk_funcs"), &dir, "tk_nwaits");
    let path = dir.join("exporter.toml");
    std::fs::write(
        &path,
        format!(
            r#"[profile]
enabled = false

[[metric]]
name = "waits"
event = "uretprobe:{}:sleeper"
value = "latency"
unit = "ns"
buckets = "loglinear:19..28"
"#,
            waiter.display()
        ),
    )
    .unwrap();
    let (exporter, addr) = start_exporter(&path);
    let prometheus = prometheus_or_skip(test).map(|binary| {
        let prometheus_addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: tracekit\n    static_configs:\n      \
                 - targets: ['{addr}']\n"
            ),
        )
        .unwrap();
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={prometheus_addr}"))
            .arg("--enable-feature=native-histograms")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting prometheus");
        (child, prometheus_addr)
    });
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let truth_file = dir.join("took");
        run_ok(&waiter, &["waits", &truth_file.to_string_lossy()]);
        let mut truth: Vec<f64> = std::fs::read_to_string(&truth_file)
            .unwrap()
            .lines()
            .map(|l| l.trim().parse::<f64>().unwrap() / 1e9)
            .collect();
        truth.sort_by(f64::total_cmp);
        assert_eq!(truth.len(), 1000);

        let text = scrape(addr);
        let (status, body) = get_with(addr, "/metrics", PROTOBUF_ACCEPT);
        assert_eq!(status, 200);
        let mut rest = body.as_slice();
        let mut families = Vec::new();
        while !rest.is_empty() {
            families.push(
                metrics_proto::MetricFamily::decode_length_delimited(&mut rest)
                    .expect("length-delimited MetricFamily messages"),
            );
        }
        let waits = families
            .iter()
            .find(|f| f.name == "tracekit_waits_seconds")
            .unwrap_or_else(|| panic!("no tracekit_waits_seconds in {families:?}"));
        assert_eq!(waits.r#type, 4, "HISTOGRAM");
        let histogram = waits.metric[0].histogram.as_ref().expect("a histogram");
        assert_eq!(histogram.sample_count, 1000);
        assert_eq!(histogram.schema, 4);
        assert_eq!(histogram.zero_count, 0);
        let native = histogram.buckets();
        assert_eq!(
            native.iter().map(|(_, c)| c).sum::<u64>(),
            1000,
            "{native:?}"
        );
        // Bucket i of schema 4 holds (2^((i-1)/16), 2^(i/16)] s.
        let index = |seconds: f64| (seconds.log2() * 16.0).ceil() as i32;

        // The text format's buckets, each with its lowest value (the previous le + 1 ns).
        let mut expected: BTreeMap<i32, u64> = BTreeMap::new();
        let (mut previous_le, mut previous_count) = (None::<f64>, 0.0);
        for line in text
            .lines()
            .filter(|l| l.starts_with("tracekit_waits_seconds_bucket{"))
        {
            let le = labels_of(line)["le"].clone();
            let cumulative: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
            let count = (cumulative - previous_count) as u64;
            previous_count = cumulative;
            if le == "+Inf" {
                assert_eq!(count, 0, "waits above 2^29 ns:\n{text}");
                break;
            }
            let le: f64 = le.parse().unwrap();
            let lowest = previous_le.map_or(f64::from(1u32 << 19) / 1e9, |p| p + 1e-9);
            previous_le = Some(le);
            if count > 0 {
                *expected.entry(index(lowest)).or_default() += count;
            }
        }
        assert_eq!(
            native,
            expected.into_iter().collect::<Vec<_>>(),
            "the native buckets are the log-linear ones moved to their lowest value's:\n{text}"
        );
        // The workload's three groups, as the fixture timed them (tens of microseconds
        // from the uretprobe's timing, far from 5 and 50 ms).
        for (low, high) in [(0.0, 0.005), (0.005, 0.05), (0.05, 1.0)] {
            let timed = truth.iter().filter(|&&t| t >= low && t < high).count() as u64;
            let counted: u64 = native
                .iter()
                .filter(|(i, _)| {
                    let upper = 2f64.powf(f64::from(*i) / 16.0);
                    upper > low && upper <= high
                })
                .map(|(_, c)| c)
                .sum();
            assert_eq!(counted, timed, "[{low}, {high}) s: {native:?}");
        }
        println!("native buckets (schema 4): {native:?}");

        let Some((_, prometheus_addr)) = &prometheus else {
            return;
        };
        let prometheus_addr = *prometheus_addr;
        settle(
            "Prometheus ready",
            || match TcpStream::connect(prometheus_addr) {
                Ok(_) => f64::from(get(prometheus_addr, "/-/ready").0),
                Err(_) => 0.0,
            },
            |status| status == 200.0,
        );
        settle(
            "the native histogram's count",
            || prometheus_value(prometheus_addr, "histogram_count(tracekit_waits_seconds)"),
            |v| v == 1000.0,
        );
        // Classic series are not kept when the native histogram is.
        assert_eq!(
            prometheus_value(prometheus_addr, "count(tracekit_waits_seconds_bucket)"),
            0.0
        );
        for q in [0.5, 0.95, 0.999] {
            let estimate = prometheus_value(
                prometheus_addr,
                &format!("histogram_quantile({q}, tracekit_waits_seconds)"),
            );
            let timed = truth[((q * 1000.0) as usize).min(999) - 1];
            println!(
                "p{}: Prometheus {estimate:.6} s, the fixture timed {timed:.6} s",
                q * 100.0
            );
            assert!(
                (estimate / timed - 1.0).abs() <= 0.12,
                "p{}: Prometheus says {estimate} s, the fixture timed {timed} s",
                q * 100.0
            );
        }
    }));
    if let Some((mut child, _)) = prometheus {
        kill(child.id(), libc::SIGTERM);
        let _ = child.wait();
    }
    stop_exporter(exporter);
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}
