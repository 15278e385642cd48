use std::time::UNIX_EPOCH;

use super::*;

#[test]
fn endpoints() {
    for (url, shown) in [
        (
            "http://collector:4318",
            "http://collector:4318/v1development/profiles",
        ),
        (
            "https://u:p@host/otlp/",
            "https://host/otlp/v1development/profiles",
        ),
        (
            "http://h:4318/v1development/profiles",
            "http://h:4318/v1development/profiles",
        ),
    ] {
        let endpoint = OtlpEndpoint::parse(url, OtlpProtocol::HttpProtobuf).unwrap();
        assert_eq!(endpoint.shown(), shown, "{url}");
    }
    // Over gRPC the URL names the server; the call's path is the service's.
    for (url, described) in [
        (
            "http://collector:4317",
            "http://collector:4317 as OTLP/gRPC",
        ),
        (
            "https://collector:4317/",
            "https://collector:4317 as OTLP/gRPC",
        ),
    ] {
        let endpoint = OtlpEndpoint::parse(url, OtlpProtocol::Grpc).unwrap();
        assert_eq!(endpoint.described(), described, "{url}");
    }
    for (url, message) in [
        (
            "http://h:4317/otlp",
            "a path (/otlp): gRPC calls go to the server's \
             /opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export; \
             give http(s)://HOST:PORT",
        ),
        (
            "http://u:p@h:4317",
            "a user in a gRPC URL: give [otlp] basic_auth",
        ),
        ("grpc://h:4317", "scheme grpc: expected http or https"),
    ] {
        let err = OtlpEndpoint::parse(url, OtlpProtocol::Grpc).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert_eq!(err.to_string(), message, "{url}");
    }
    for (url, message) in [
        ("ftp://h", "scheme ftp: expected http or https"),
        (
            "http://h/?a=1",
            "a query or fragment; give the receiver's base URL",
        ),
    ] {
        let err = OtlpEndpoint::parse(url, OtlpProtocol::HttpProtobuf).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert_eq!(err.to_string(), message);
    }
}

fn batch(samples: u64) -> Batch {
    Batch::new(b"x", samples, UNIX_EPOCH)
}

/// A full queue drops its oldest, counted with its samples; a failed batch goes back first
/// in line unless newer ones fill the queue.
#[test]
fn the_queue_is_bounded_and_counts_what_it_drops() {
    let stats = Arc::new(OtlpStats::default());
    let queue = Queue::new(2, Arc::clone(&stats));
    queue.push(batch(10));
    queue.push(batch(20));
    queue.push(batch(30));
    assert_eq!(queue.len(), 2);
    assert_eq!(stats.dropped_counts(Drop::QueueFull), (1, 10));
    let first = queue.pop().unwrap();
    assert_eq!(first.samples, 20);
    queue.retry_later(first);
    assert_eq!(queue.pop().unwrap().samples, 20);
    let again = queue.pop().unwrap();
    queue.push(batch(40));
    queue.push(batch(50));
    queue.retry_later(again);
    assert_eq!(stats.dropped_counts(Drop::QueueFull), (2, 40));
    let text = crate::output::prometheus::encode(&stats.families("tk"));
    assert!(
        text.contains("tk_exporter_otlp_dropped_profiles_total{reason=\"queue_full\"} 2\n"),
        "{text}"
    );
    assert!(
        text.contains("tk_exporter_otlp_dropped_samples_total{reason=\"queue_full\"} 40\n"),
        "{text}"
    );
    assert!(text.contains("tk_exporter_otlp_queue_length 2\n"), "{text}");
}

/// An interval without samples is counted, not queued: its request would carry no
/// resource, not even the window's time.
#[test]
fn an_interval_without_samples_is_counted_not_sent() {
    let stats = Arc::new(OtlpStats::default());
    let queue = Queue::new(2, Arc::clone(&stats));
    queue.push(batch(0));
    queue.push(batch(3));
    queue.push(batch(0));
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.pop().unwrap().samples, 3);
    let text = crate::output::prometheus::encode(&stats.families("tk"));
    for line in [
        "tk_exporter_otlp_empty_intervals_total 2\n",
        "tk_exporter_otlp_profiles_total 1\n",
    ] {
        assert!(text.contains(line), "{line}{text}");
    }
    assert_eq!(stats.dropped_counts(Drop::QueueFull), (0, 0));
}

#[test]
fn a_servers_delay_replaces_the_backoff_up_to_a_minute() {
    let backoff = Duration::from_secs(2);
    assert_eq!(retry_wait(None, backoff), backoff);
    let delay = Duration::from_secs(5);
    assert_eq!(retry_wait(Some(delay), backoff), delay);
    assert_eq!(retry_wait(Some(Duration::ZERO), backoff), Duration::ZERO);
    assert_eq!(
        retry_wait(Some(Duration::from_secs(3600)), backoff),
        MAX_THROTTLE
    );
    assert_eq!(MAX_THROTTLE, Duration::from_secs(60));
}
