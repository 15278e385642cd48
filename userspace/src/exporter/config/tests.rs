//! The config's checks, one line per error.

use super::*;
use crate::output::prometheus::BaseUnit;

fn error(text: &str) -> String {
    let err = Config::parse(text, "exporter.toml").unwrap_err();
    assert_eq!(err.exit_code(), 2, "{err}");
    let message = err.to_string();
    assert!(!message.contains('\n'), "not one line: {message}");
    message
}

#[test]
fn the_documented_example_parses() {
    let config = Config::parse(EXAMPLE, "example").unwrap();
    assert_eq!(config.listen, "127.0.0.1:9435".parse().unwrap());
    assert_eq!(config.namespace, "tracekit");
    assert_eq!(config.profile, ProfileConfig::default());
    assert_eq!(config.metrics.len(), 2);
    let latency = &config.metrics[0];
    assert_eq!(latency.name, "tracekit_block_io_latency");
    assert_eq!(latency.help, "Block I/O latency from issue to completion.");
    assert_eq!(
        latency.source,
        MetricSource::Preset(Preset::named("biolatency").unwrap())
    );
    assert_eq!(latency.by, ["disk", "op"]);
    assert_eq!(latency.unit, Some(ValueUnit::Nanoseconds));
    let size = &config.metrics[1];
    assert_eq!(
        size.source,
        MetricSource::Event {
            event: "block:block_rq_issue".into(),
            value: Some("bytes".into())
        }
    );
    assert_eq!(size.filter.as_deref(), Some("rwbs ~ \"*W*\""));
    assert_eq!(size.by, ["dev", "rwbs"]);
    assert_eq!(size.name, "tracekit_block_io_write_size");
    assert_eq!(size.buckets, Some(BucketSpec::Log2 { first: 9, last: 26 }));
    let spec = size.spec(1);
    assert_eq!(spec.unit, Some(BaseUnit::Bytes));
    assert_eq!(
        spec.kind,
        SeriesKind::Histogram {
            buckets: Buckets::Log2 { first: 9, last: 26 },
            scale: Scale::IDENTITY
        }
    );
}

/// `[profile] inlined` turns DWARF on for the profiles; off by default.
#[test]
fn profile_inlined_frames_are_asked_for() {
    assert!(!Config::parse("", "empty").unwrap().profile.inlined);
    let config = Config::parse("[profile]\ninlined = true\n", "inlined").unwrap();
    assert_eq!(
        config.profile,
        ProfileConfig {
            inlined: true,
            ..ProfileConfig::default()
        }
    );
}

/// `[profile] interpreters = false` is the exporter's `--no-interpreters`.
#[test]
fn profile_interpreters_can_be_turned_off() {
    assert!(Config::parse("", "empty").unwrap().profile.interpreters);
    let config = Config::parse("[profile]\ninterpreters = false\n", "off").unwrap();
    assert!(!config.profile.interpreters);
}

/// The example shipped beside the systemd unit.
const EXAMPLE: &str = include_str!("../../../../dist/exporter.example.toml");
const EXAMPLE_YAML: &str = include_str!("../../../../dist/exporter.example.yaml");

/// The YAML example says exactly what the TOML one says.
#[test]
fn the_yaml_example_is_the_toml_example() {
    assert_eq!(
        Config::parse_as(EXAMPLE_YAML, "example.yaml", Syntax::Yaml).unwrap(),
        Config::parse(EXAMPLE, "example").unwrap()
    );
    assert_eq!(
        Config::parse_as("", "empty.yaml", Syntax::Yaml).unwrap(),
        Config::parse("", "empty.toml").unwrap()
    );
}

/// YAML configs get the TOML configs' checks and one-line errors, with the line.
#[test]
fn bad_yaml_configs() {
    let err = |text: &str| {
        let err = Config::parse_as(text, "x.yaml", Syntax::Yaml).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        err.to_string()
    };
    assert_eq!(
        err("metric:\n  - name: a\n    preset: syscount\n    colour: red\n"),
        "x.yaml: metric \"a\": unknown field `colour`; valid fields: name, help, preset, \
         event, filter, value, unit, buckets, by, max_series"
    );
    assert_eq!(
        err("metric:\n  - name: a\n    preset: syscount\n  - name: a\n    preset: runqlat\n"),
        "x.yaml: metric \"a\": duplicate name (each metric needs its own)"
    );
    assert_eq!(
        err("namespace: t\nlisten: [a, b]\n"),
        "x.yaml (line 2): listen: invalid type: sequence, expected a string"
    );
    let syntax = err("namespace: t\nlisten: x\n  max_series: 3\n");
    assert!(
        syntax.starts_with("x.yaml (line 3): ") && !syntax.contains('\n'),
        "{syntax}"
    );
    let unknown = err("namespace: t\nlisten_on: x\n");
    assert!(
        unknown.starts_with("x.yaml (line 2): unknown field `listen_on`"),
        "{unknown}"
    );
}

#[test]
fn syntax_from_the_file_name() {
    use std::path::Path;
    assert_eq!(Syntax::of_path(Path::new("/etc/x.yaml")), Syntax::Yaml);
    assert_eq!(Syntax::of_path(Path::new("x.YML")), Syntax::Yaml);
    assert_eq!(Syntax::of_path(Path::new("x.toml")), Syntax::Toml);
    assert_eq!(Syntax::of_path(Path::new("exporter")), Syntax::Toml);
}

#[test]
fn default_set() {
    let config = Config::default_set();
    let names: Vec<&str> = config.metrics.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "tracekit_syscalls",
            "tracekit_block_io_latency",
            "tracekit_block_io_size",
            "tracekit_runq_latency"
        ]
    );
    assert!(config.profile.enabled);
    assert_eq!(config.listen.port(), 9435);
    let syscalls = config.metrics[0].spec(1);
    assert_eq!((syscalls.kind, syscalls.unit), (SeriesKind::Count, None));
    assert_eq!(syscalls.label_names, ["syscall"]);
    let latency = config.metrics[1].spec(1000);
    assert_eq!(latency.unit, Some(BaseUnit::Seconds));
    assert_eq!(
        latency.kind,
        SeriesKind::Histogram {
            buckets: Buckets::Log2 {
                first: 10,
                last: 35
            },
            scale: Scale {
                div: 1000,
                per_base: 1e9
            }
        }
    );
}

/// `idle_series_seconds`: 600 unless set, 0 kept (never evict), the same in YAML; a
/// value that is not a whole number of seconds is a one-line error naming its line.
#[test]
fn idle_series_seconds() {
    assert_eq!(Config::parse("", "x").unwrap().idle_series_seconds, 600);
    assert_eq!(
        Config::parse("idle_series_seconds = 0", "x")
            .unwrap()
            .idle_series_seconds,
        0
    );
    assert_eq!(
        Config::parse_as("idle_series_seconds: 2", "x.yaml", Syntax::Yaml)
            .unwrap()
            .idle_series_seconds,
        2
    );
    assert_eq!(
        Config::parse("\nidle_series_seconds = -1", "x")
            .unwrap_err()
            .to_string(),
        "x (line 2): invalid value: integer `-1`, expected u64"
    );
}

#[test]
fn event_metrics_count_sum_or_histogram() {
    let config = Config::parse(
        r#"
namespace = "node"
[[metric]]
name = "page_faults"
event = "software:page-faults"
by = ["comm"]
max_series = 5
[[metric]]
name = "read"
event = "syscalls:sys_exit_read"
value = "ret"
unit = "bytes"
[[metric]]
name = "packet_size"
event = "net:net_dev_xmit"
value = "len"
buckets = "linear:0,1500,100"
help = "Sizes of packets sent."
"#,
        "x",
    )
    .unwrap();
    let specs: Vec<Spec> = config.metrics.iter().map(|m| m.spec(1)).collect();
    assert_eq!(specs[0].name, "node_page_faults");
    assert_eq!(specs[0].kind, SeriesKind::Count);
    assert_eq!(specs[0].max_series, 5);
    assert_eq!(
        specs[1].kind,
        SeriesKind::Sum {
            scale: Scale::IDENTITY
        }
    );
    assert_eq!(specs[1].unit, Some(BaseUnit::Bytes));
    assert_eq!(
        specs[2].kind,
        SeriesKind::Histogram {
            buckets: Buckets::Linear {
                min: 0,
                step: 100,
                slots: 17
            },
            scale: Scale::IDENTITY
        }
    );
    assert_eq!(specs[2].unit, None);
    assert_eq!(specs[2].help, "Sizes of packets sent.");
}

#[test]
fn bad_configs_name_the_metric_and_the_bad_part() {
    let cases = [
        (
            "[[metric]]\nname = \"a\"\npreset = \"syscount\"\n[[metric]]\nname = \"a\"\nevent = \"x:y\"\n",
            "exporter.toml: metric \"a\": duplicate name (each metric needs its own)",
        ),
        (
            "[[metric]]\nname = \"io\"\nevent = \"block:block_rq_issue\"\nvalue = \"bytes\"\nunit = \"parsecs\"\n",
            "exporter.toml: metric \"io\": unit \"parsecs\": unknown; valid units: ns, us, ms, s, bytes",
        ),
        (
            "[[metric]]\nname = \"io\"\nevent = \"block:block_rq_issue\"\nvalue = \"bytes\"\nbuckets = \"log3\"\n",
            "exporter.toml: metric \"io\": buckets \"log3\": expected log2, log2:FIRST..LAST \
             (slots 0 to 63), loglinear, loglinear:FIRST..LAST (powers of two 0 to 63) or \
             linear:MIN,MAX,STEP",
        ),
        (
            "[[metric]]\nname = \"io\"\nevent = \"block:block_rq_issue\"\nvalue = \"bytes\"\nbuckets = \"log2:20..70\"\n",
            "exporter.toml: metric \"io\": buckets \"log2:20..70\": needs FIRST <= LAST <= 63 (log2 slots)",
        ),
        (
            "[[metric]]\nname = \"io\"\nevent = \"block:block_rq_issue\"\nvalue = \"bytes\"\nbuckets = \"linear:0,100000,1\"\n",
            "exporter.toml: metric \"io\": buckets \"linear:0,100000,1\": 100000 buckets; \
             the kernel engine keeps at most 1000",
        ),
        (
            "[[metric]]\nname = \"io\"\nevent = \"block:block_rq_issue\"\nfitler = \"x\"\n",
            "exporter.toml: metric \"io\": unknown field `fitler`; valid fields: name, help, \
             preset, event, filter, value, unit, buckets, by, max_series",
        ),
        (
            "[[metric]]\nname = \"io\"\npreset = \"biolatncy\"\n",
            "exporter.toml: metric \"io\": preset \"biolatncy\": unknown; valid presets: \
             bitesize, biolatency, runqlat, syscount, pidpersec, vfsstat, vfscount, fsdist, \
             ext4dist, xfsdist, btrfsdist, nfsdist, cachestat, filetop, biotop, biopattern, biostacks, cpudist, runqlen, hardirqs, softirqs, slabratetop, swapin, tcprtt, tcpsynbl, tcptop, klockstat, \
             futexctn",
        ),
        (
            "[[metric]]\nname = \"io\"\npreset = \"biolatency\"\nunit = \"ms\"\n",
            "exporter.toml: metric \"io\": preset \"biolatency\" sets its own unit; drop `unit`",
        ),
        (
            "[[metric]]\nname = \"io\"\npreset = \"syscount\"\nbuckets = \"log2\"\n",
            "exporter.toml: metric \"io\": preset \"syscount\" counts events; it has no buckets to set",
        ),
        (
            "[[metric]]\nname = \"io\"\nevent = \"block:block_rq_issue\"\nbuckets = \"log2\"\n",
            "exporter.toml: metric \"io\": buckets need value = \"FIELD\" (the value to histogram)",
        ),
        (
            "[[metric]]\nname = \"io\"\nevent = \"block:block_rq_issue\"\nunit = \"ns\"\n",
            "exporter.toml: metric \"io\": unit needs value = \"FIELD\" (a count has no unit)",
        ),
        (
            "[[metric]]\nname = \"io_seconds\"\npreset = \"biolatency\"\n",
            "exporter.toml: metric \"io_seconds\": name \"io_seconds\": drop the `_seconds` \
             suffix; the exporter adds unit and type suffixes itself",
        ),
        (
            "[[metric]]\nname = \"io-latency\"\npreset = \"biolatency\"\n",
            "exporter.toml: metric \"io-latency\": name \"io-latency\": not a Prometheus \
             metric name (letters, digits, `_`, `:`, not starting with a digit)",
        ),
        (
            "[[metric]]\nname = \"io\"\nevent = \"x:y\"\nby = [\"comm\", \"comm\"]\n",
            "exporter.toml: metric \"io\": by \"comm\": listed twice",
        ),
        (
            "[[metric]]\nname = \"io\"\nevent = \"x:y\"\nby = [\"le\"]\n",
            "exporter.toml: metric \"io\": by \"le\": not usable as a label name (letters, \
             digits and `_`, not starting with a digit or `__`, not `le`)",
        ),
        (
            "[[metric]]\nname = \"io\"\n",
            "exporter.toml: metric \"io\": needs preset = \"NAME\" or event = \"EVENT\"",
        ),
        (
            "[[metric]]\nname = \"io\"\npreset = \"syscount\"\nevent = \"x:y\"\n",
            "exporter.toml: metric \"io\": has both preset and event; a preset names its own events",
        ),
        (
            "[[metric]]\nevent = \"x:y\"\n",
            "exporter.toml: metric #1: needs name = \"NAME\"",
        ),
        (
            "metrics = [\"syscount\", \"funccount\"]\n",
            "exporter.toml: preset \"funccount\": a tool with no metric (it takes an argument \
             or prints events); valid presets: bitesize, biolatency, runqlat, syscount, pidpersec, \
             vfsstat, vfscount, fsdist, ext4dist, xfsdist, btrfsdist, nfsdist, cachestat, filetop, biotop, biopattern, biostacks, cpudist, runqlen, hardirqs, softirqs, slabratetop, swapin, tcprtt, tcpsynbl, tcptop, klockstat, futexctn",
        ),
        (
            "metrics = [\"syscount\"]\n[[metric]]\npreset = \"syscount\"\n",
            "exporter.toml: metric \"syscalls\": duplicate name (each metric needs its own)",
        ),
        (
            "listen = \"localhost\"\n",
            "exporter.toml: listen \"localhost\": expected ADDRESS:PORT, e.g. 127.0.0.1:9435 \
             or [::1]:9435",
        ),
        (
            "lisen = \"127.0.0.1:1\"\n",
            "exporter.toml (line 1): unknown field `lisen`, expected one of `listen`, \
             `namespace`, `max_series`, `idle_series_seconds`, `profile`, `otlp`, `pyroscope`, `metrics`, `metric`",
        ),
        (
            "[[metric]\nname = 3\n",
            "exporter.toml (line 1): unclosed array table, expected `]`",
        ),
        (
            "[[metric]]\nname = \"io\"\nevent = \"x:y\"\nmax_series = \"many\"\n",
            "exporter.toml: metric \"io\": invalid type: string \"many\", expected usize",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(error(text), expected, "config:\n{text}");
    }
}

#[test]
fn bucket_specs() {
    assert_eq!(
        BucketSpec::parse("log2:10..35"),
        Ok(BucketSpec::Log2 {
            first: 10,
            last: 35
        })
    );
    assert_eq!(
        BucketSpec::parse("linear:-10,10,5").unwrap().buckets(),
        Buckets::Linear {
            min: -10,
            step: 5,
            slots: 6
        }
    );
    assert!(BucketSpec::parse("linear:10,10,5").is_err());
    assert!(BucketSpec::parse("linear:0,10").is_err());
    assert_eq!(
        BucketSpec::parse("loglinear:19..28").unwrap().buckets(),
        Buckets::LogLinear {
            first: 19,
            last: 28,
            precision: 4
        }
    );
    assert_eq!(
        BucketSpec::parse("loglinear"),
        Ok(BucketSpec::LogLinear { first: 0, last: 63 })
    );
    assert_eq!(
        BucketSpec::parse("loglinear:30..20"),
        Err("buckets \"loglinear:30..20\": needs FIRST <= LAST <= 63 (powers of two)".into())
    );
}

/// Any servable tool is a metric by its name alone, in TOML (`metrics = [...]`, or a
/// `[[metric]]` with only `preset`) and YAML, with the tool's metric name, labels, unit and
/// buckets.
#[test]
fn tools_are_served_by_name() {
    let by_list =
        Config::parse("metrics = [\"runqlat\", \"biolatency\", \"syscount\"]", "x").unwrap();
    let by_table = Config::parse(
        "[[metric]]\npreset = \"runqlat\"\n[[metric]]\npreset = \"biolatency\"\n\
         [[metric]]\npreset = \"syscount\"\n",
        "x",
    )
    .unwrap();
    let by_yaml = Config::parse_as(
        "metrics: [runqlat, biolatency, syscount]\n",
        "x.yaml",
        Syntax::Yaml,
    )
    .unwrap();
    assert_eq!(by_list, by_table);
    assert_eq!(by_list, by_yaml);
    let names: Vec<&str> = by_list.metrics.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "tracekit_runq_latency",
            "tracekit_block_io_latency",
            "tracekit_syscalls"
        ]
    );
    let latency = &by_list.metrics[1];
    assert_eq!(latency.by, ["disk", "op"]);
    assert_eq!(latency.unit, Some(ValueUnit::Nanoseconds));
    assert_eq!(
        latency.buckets,
        Some(BucketSpec::Log2 {
            first: 10,
            last: 35
        })
    );
    // Every servable tool of the table parses by name alone.
    for name in Preset::names() {
        let config = Config::parse(&format!("metrics = [\"{name}\"]"), "x").unwrap();
        let metric = &config.metrics[0];
        let tool = tools::find(name).unwrap().metric.unwrap();
        assert_eq!(metric.name, format!("tracekit_{}", tool.name));
        assert_eq!(metric.help, tool.help);
        assert_eq!(metric.by, tool.by);
    }
}

/// `[otlp]` and `[pyroscope]`: endpoint, queue, client settings, in TOML and YAML alike;
/// what does not go together is one line.
#[test]
fn push_tables() {
    let toml = r#"
[otlp]
endpoint = "https://collector:4317"
protocol = "grpc"
queue_size = 8
headers = { "X-Scope-OrgID" = "tenant1" }
bearer_token_file = "/etc/tracekit/token"
tls = { ca_file = "/etc/tracekit/ca.pem" }

[pyroscope]
basic_auth = { username = "123", password_file = "/etc/tracekit/pw" }
tls = { insecure_skip_verify = true }
"#;
    let yaml = r#"
otlp:
  endpoint: https://collector:4317
  protocol: grpc
  queue_size: 8
  headers: {X-Scope-OrgID: tenant1}
  bearer_token_file: /etc/tracekit/token
  tls: {ca_file: /etc/tracekit/ca.pem}
pyroscope:
  basic_auth: {username: "123", password_file: /etc/tracekit/pw}
  tls: {insecure_skip_verify: true}
"#;
    let config = Config::parse(toml, "x").unwrap();
    assert_eq!(config, Config::parse_as(yaml, "x", Syntax::Yaml).unwrap());
    assert_eq!(
        config.otlp.endpoint.as_deref(),
        Some("https://collector:4317")
    );
    assert_eq!(config.otlp.protocol, OtlpProtocol::Grpc);
    assert_eq!(config.otlp.queue_size, 8);
    assert_eq!(config.otlp.client().headers["X-Scope-OrgID"], "tenant1");
    assert_eq!(
        config.pyroscope.basic_auth.as_ref().unwrap().username,
        "123"
    );
    assert!(config.pyroscope.tls.insecure_skip_verify);
    // Defaults: no endpoint, 64 queued.
    let default = Config::default_set();
    assert_eq!(default.otlp.endpoint, None);
    assert_eq!(default.otlp.protocol, OtlpProtocol::HttpProtobuf);
    assert_eq!(default.otlp.queue_size, DEFAULT_QUEUE_SIZE);
    for (text, message) in [
        (
            "[otlp]\nqueue_size = 0",
            "x: [otlp]: queue_size 0: needs at least 1",
        ),
        (
            "[otlp]\nbearer_token = \"a\"\nbearer_token_file = \"b\"",
            "x: [otlp]: bearer_token and bearer_token_file: give one",
        ),
        (
            "[pyroscope]\nbasic_auth = { username = \"u\" }",
            "x: [pyroscope]: basic_auth needs one of password and password_file",
        ),
    ] {
        let err = Config::parse(text, "x").unwrap_err();
        assert_eq!(err.to_string(), message, "{text}");
        assert_eq!(err.exit_code(), 2);
    }
    let protocol = Config::parse("[otlp]\nprotocol = \"http/json\"", "x").unwrap_err();
    assert!(
        protocol
            .to_string()
            .contains("unknown variant `http/json`, expected `http/protobuf` or `grpc`"),
        "{protocol}"
    );
    let typo = Config::parse("[otlp]\nendpont = \"x\"", "x").unwrap_err();
    assert!(
        typo.to_string()
            .starts_with("x (line 2): unknown field `endpont`"),
        "{typo}"
    );
}
