//! `tracekit exporter --push URL`: every interval, a CPU profile of the whole machine over
//! that interval, POSTed as pprof to a Pyroscope-compatible `URL/ingest` (Pyroscope's
//! agents push; Grafana Alloy's `pyroscope.receive_http` takes the same requests).
//!
//! The request, as Pyroscope's server API documents it ("Pyroscope Server HTTP API
//! Reference", `docs/sources/configure-server/about-server-api.md` in grafana/pyroscope,
//! <https://grafana.com/docs/pyroscope/latest/configure-server/about-server-api/>):
//!
//! - `POST URL/ingest?name=NAME&from=FROM&until=UNTIL&format=pprof&sampleRate=HZ&spyName=tracekit`;
//! - `from`, `until`: unix seconds of the profile's start and end;
//! - `name`: for pprof, the *prefix* of the application name with its labels in braces;
//!   Pyroscope appends the profile type, so `tracekit{hostname=web1}` shows as
//!   `tracekit.cpu{hostname=web1}` (and, in Pyroscope 1.x, `service_name="tracekit"`);
//! - `sampleRate` and `units` are ignored for pprof (the profile carries its period and
//!   sample types, Go's `samples/count` and `cpu/nanoseconds`, which Pyroscope knows
//!   without a `sample_type_config`);
//! - the body: the gzipped pprof itself, `Content-Type: binary/octet-stream`. The
//!   multipart form (field `profile`) is only needed to send a `sample_type_config` with it;
//!   the ingest handler takes the raw body as the profile when `format=pprof`
//!   (`pkg/ingester/pyroscope/ingest_handler.go`).
//!
//! A push that fails (no connection, a timeout, a status other than 2xx) is counted in the
//! exporter's own metrics and logged once per streak of failures; pushing goes on.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use reqwest::Url;
use tokio::sync::watch;

use crate::{
    Error, Result,
    exporter::{
        client::PushClient,
        otlp::{Batch, OtlpEndpoint, Queue},
        server::Sources,
    },
    output::{
        otlp::OtlpOptions,
        pprof::SampleKind,
        prometheus::{Labels, MetricFamily, Value, Values},
    },
};

/// `--push-interval` when not given: what Pyroscope's agents use (15 s).
pub const DEFAULT_INTERVAL_SECONDS: u64 = 15;
/// The shortest `--push-interval`, in seconds.
pub const MIN_INTERVAL_SECONDS: u64 = 1;
/// The longest `--push-interval`, in seconds (one hour).
pub const MAX_INTERVAL_SECONDS: u64 = 3600;

/// The application name's prefix; Pyroscope appends `.cpu`.
pub const APP_NAME: &str = "tracekit";

/// How long a push in flight may take to finish once the exporter stops.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Where profiles go: the ingest URL and the application name with its labels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushTarget {
    /// `URL/ingest`, without a query.
    ingest: Url,
    /// `tracekit{hostname=...}`.
    name: String,
}

impl PushTarget {
    /// The target for the base `url` (`http://pyroscope:4040`, or with a path prefix:
    /// `https://host/pyroscope`), with the application name [`APP_NAME`] labelled by
    /// `hostname`.
    ///
    /// # Errors
    /// A usage error (without the flag's name: the caller adds it) when `url` does not
    /// parse, is not `http` or `https`, has no host, or has a query or fragment.
    pub fn parse(url: &str, hostname: &str) -> Result<Self> {
        let mut parsed = Url::parse(url).map_err(|err| {
            Error::usage(format!(
                "{err}; expected an http or https URL like http://pyroscope:4040"
            ))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(Error::usage(format!(
                "scheme {}: expected http or https",
                parsed.scheme()
            )));
        }
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err(Error::usage(
                "no host; expected an http or https URL like http://pyroscope:4040",
            ));
        }
        if parsed.query().is_some() || parsed.fragment().is_some() {
            return Err(Error::usage(
                "a query or fragment; give the server's base URL (the query is tracekit's)",
            ));
        }
        let path = parsed.path().trim_end_matches('/').to_string();
        if !path.ends_with("/ingest") {
            parsed.set_path(&format!("{path}/ingest"));
        }
        Ok(Self {
            ingest: parsed,
            name: format!("{APP_NAME}{{hostname={}}}", label_value(hostname)),
        })
    }

    /// The ingest URL (`http://pyroscope:4040/ingest`); user and password left out.
    pub fn shown(&self) -> String {
        let mut shown = self.ingest.clone();
        let _ = shown.set_username("");
        let _ = shown.set_password(None);
        shown.to_string()
    }

    /// The application name sent (`tracekit{hostname=web1}`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The request URL for a profile from `from` to `until` (unix seconds, rounded down)
    /// sampled at `hz`.
    pub fn request_url(&self, from: SystemTime, until: SystemTime, hz: u64) -> Url {
        let mut url = self.ingest.clone();
        url.query_pairs_mut()
            .append_pair("name", &self.name)
            .append_pair("from", &unix_seconds(from).to_string())
            .append_pair("until", &unix_seconds(until).to_string())
            .append_pair("format", "pprof")
            .append_pair("sampleRate", &hz.to_string())
            .append_pair("spyName", "tracekit");
        url
    }
}

/// `text` as a label value in Pyroscope's `name{k=v}` syntax: letters, digits, `.`, `-`
/// and `_` kept, anything else `_`.
fn label_value(text: &str) -> String {
    let value: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if value.is_empty() {
        "unknown".into()
    } else {
        value
    }
}

fn unix_seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

pub use crate::containers::hostname;

/// What `--push` and `--otlp-endpoint` asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushOptions {
    /// Where pprof profiles go (Pyroscope), if anywhere.
    pub target: Option<PushTarget>,
    /// Where OTLP profiles go, if anywhere.
    pub otlp: Option<OtlpEndpoint>,
    /// How often, and the length of each profile.
    pub interval: Duration,
}

/// Pushes made and failed, for the exporter's own metrics; logs a failure once per streak.
#[derive(Debug, Default)]
pub struct PushStats {
    inner: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    pushed: u64,
    failed: u64,
    /// Failures since the last push that got through.
    streak: u64,
}

impl PushStats {
    /// A push got through; logs the end of a failure streak.
    pub fn pushed(&self, target: &str) {
        let mut counts = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        counts.pushed += 1;
        if counts.streak > 0 {
            log::warn!(
                "pushing CPU profiles to {target} works again after {} failed push{}",
                counts.streak,
                if counts.streak == 1 { "" } else { "es" }
            );
        }
        counts.streak = 0;
    }

    /// A push failed (`why`: the status or the error); logged when it starts a streak.
    pub fn failed(&self, target: &str, why: &str) {
        let mut counts = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        counts.failed += 1;
        counts.streak += 1;
        if counts.streak == 1 {
            log::warn!(
                "pushing a CPU profile to {target} failed: {why} (further failures are \
                 counted in the exporter's push_failures_total until one gets through)"
            );
        }
    }

    /// Pushes that got through and pushes that failed, so far.
    pub fn counts(&self) -> (u64, u64) {
        let counts = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        (counts.pushed, counts.failed)
    }

    /// `NAMESPACE_exporter_pushes_total` and `NAMESPACE_exporter_push_failures_total`.
    pub fn families(&self, namespace: &str) -> Vec<MetricFamily> {
        let (pushed, failed) = self.counts();
        let counter = |name: &str, help: &str, value: u64| MetricFamily {
            name: format!("{namespace}_exporter_{name}"),
            help: help.into(),
            unit: None,
            label_names: vec![],
            values: Values::Counter(vec![(Labels::default(), Value::Int(value))]),
        };
        vec![
            counter(
                "pushes",
                "CPU profiles pushed to --push URL and accepted (a 2xx answer).",
                pushed,
            ),
            counter(
                "push_failures",
                "CPU profiles that could not be pushed to --push URL (no connection, a \
                 timeout, an answer other than 2xx) or not taken.",
                failed,
            ),
        ]
    }
}

/// Where each interval's profile goes.
#[derive(Debug)]
pub struct Destinations {
    /// Pyroscope: the target, its client, its counts.
    pub pyroscope: Option<(PushTarget, PushClient, Arc<PushStats>)>,
    /// The OTLP queue (its sender runs on its own, [`otlp::sender`]).
    pub otlp: Option<Arc<Queue>>,
}

/// Takes a profile of every `interval` and hands it to `to` until `stop` turns true (the
/// profile under way is then not pushed; a Pyroscope push in flight gets `STOP_GRACE`
/// (2 s) to finish). Windows follow each other: the next profile starts when the last one
/// ends, while the last one is being sent. Pyroscope and OTLP get the same window, as pprof
/// and as OTLP.
pub async fn run<S: Sources>(
    sources: Arc<S>,
    to: Destinations,
    interval: Duration,
    hz: u64,
    mut stop: watch::Receiver<bool>,
) {
    let host = hostname();
    let mut in_flight: Option<tokio::task::JoinHandle<()>> = None;
    while !*stop.borrow() {
        let window = tokio::select! {
            window = sources.window(interval) => window,
            _ = stop.wait_for(|stopped| *stopped) => break,
        };
        if *stop.borrow() {
            // Cut short by the stop: not a whole interval.
            break;
        }
        // The previous push had a whole interval; it is not left behind.
        if let Some(previous) = in_flight.take() {
            let _ = previous.await;
        }
        let window = match window {
            Ok(window) => Arc::new(window),
            Err(err) => {
                if let Some((target, _, stats)) = &to.pyroscope {
                    stats.failed(&target.shown(), &format!("taking the profile: {err}"));
                }
                if to.otlp.is_some() {
                    log::warn!("taking a CPU profile for OTLP failed: {err}");
                }
                continue;
            }
        };
        if let Some(queue) = &to.otlp
            && window.stacks.is_empty()
        {
            // An idle interval: counted by the queue, not built nor encoded.
            queue.push(Batch::new(&[], 0, window.start));
        } else if let Some(queue) = &to.otlp {
            let (window, queue, host) = (Arc::clone(&window), Arc::clone(queue), host.clone());
            let encoded = tokio::task::spawn_blocking(move || {
                let options = OtlpOptions {
                    kind: SampleKind::Cpu { hz },
                    start: window.start,
                    duration: window.duration,
                    host,
                    process: &|pid| window.process(pid),
                };
                let request = crate::output::otlp::build(&window.stacks, &options);
                let samples = crate::output::otlp::sample_count(&request);
                let bytes = crate::output::otlp::encode(&request);
                queue.push(Batch::new(&bytes, samples, window.start));
            })
            .await;
            if let Err(err) = encoded {
                log::warn!("encoding an OTLP profile failed: {err}");
            }
        }
        if let Some((target, client, stats)) = &to.pyroscope {
            let url = target.request_url(window.start, window.start + window.duration, hz);
            let (client, stats, shown) = (client.clone(), Arc::clone(stats), target.shown());
            let window = Arc::clone(&window);
            in_flight = Some(tokio::spawn(async move {
                let gzipped = tokio::task::spawn_blocking(move || {
                    crate::exporter::kernel::encode(hz, &window)
                })
                .await
                .unwrap_or_default();
                match send(&client, url, gzipped).await {
                    Ok(()) => stats.pushed(&shown),
                    Err(why) => stats.failed(&shown, &why),
                }
            }));
        }
        drop(window);
        // The window's stacks were freed on this thread's arena.
        crate::symbolize::release_freed_memory();
    }
    if let Some(mut last) = in_flight
        && tokio::time::timeout(STOP_GRACE, &mut last).await.is_err()
    {
        last.abort();
        log::warn!("a push to Pyroscope still under way at the stop was abandoned");
    }
}

/// POSTs one gzipped pprof profile; the failure as one line (the status and the start of
/// the answer, or the error).
async fn send(client: &PushClient, url: Url, gzipped: Vec<u8>) -> std::result::Result<(), String> {
    let answer = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "binary/octet-stream")
        .body(gzipped)
        .send()
        .await
        .map_err(|err| crate::error::chain(&err))?;
    if answer.status().is_success() {
        return Ok(());
    }
    Err(super::client::failure(answer).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ingest_urls_and_names() {
        let target = PushTarget::parse("http://pyroscope:4040", "web-1.example").unwrap();
        assert_eq!(target.shown(), "http://pyroscope:4040/ingest");
        assert_eq!(target.name(), "tracekit{hostname=web-1.example}");
        let from = UNIX_EPOCH + Duration::from_millis(1_700_000_000_900);
        let until = from + Duration::from_secs(15);
        assert_eq!(
            target.request_url(from, until, 99).as_str(),
            "http://pyroscope:4040/ingest?name=tracekit%7Bhostname%3Dweb-1.example%7D\
             &from=1700000000&until=1700000015&format=pprof&sampleRate=99&spyName=tracekit"
        );
        // A path prefix (a reverse proxy, Alloy's /pyroscope) is kept; /ingest not doubled.
        for (url, ingest) in [
            ("https://host/pyroscope/", "https://host/pyroscope/ingest"),
            ("http://host:4040/ingest", "http://host:4040/ingest"),
            ("http://[::1]:4040", "http://[::1]:4040/ingest"),
        ] {
            assert_eq!(
                PushTarget::parse(url, "h").unwrap().shown(),
                ingest,
                "{url}"
            );
        }
        // Basic auth travels in the URL but is not shown.
        let secret = PushTarget::parse("https://user:pw@host", "h").unwrap();
        assert_eq!(secret.shown(), "https://host/ingest");
        assert!(
            secret
                .request_url(UNIX_EPOCH, UNIX_EPOCH, 1)
                .as_str()
                .starts_with("https://user:pw@host/ingest?")
        );
        // Hostnames with characters Pyroscope's label syntax does not take.
        assert_eq!(
            PushTarget::parse("http://h", "a b{c}").unwrap().name(),
            "tracekit{hostname=a_b_c_}"
        );
        assert_eq!(
            PushTarget::parse("http://h", "").unwrap().name(),
            "tracekit{hostname=unknown}"
        );
    }

    #[test]
    fn bad_urls_are_usage_errors() {
        for (url, message) in [
            ("pyroscope:4040", "scheme pyroscope: expected http or https"),
            ("ftp://host", "scheme ftp: expected http or https"),
            (
                "localhost",
                "relative URL without a base; expected an http or https URL like \
                 http://pyroscope:4040",
            ),
            (
                "http://",
                "empty host; expected an http or https URL like http://pyroscope:4040",
            ),
            (
                "http://h/?x=1",
                "a query or fragment; give the server's base URL (the query is tracekit's)",
            ),
        ] {
            let err = PushTarget::parse(url, "h").unwrap_err();
            assert_eq!(err.exit_code(), 2, "{url}");
            assert_eq!(err.to_string(), message, "{url}");
        }
    }

    #[test]
    fn failures_are_counted_and_families_named() {
        let stats = PushStats::default();
        stats.failed("u", "HTTP 503");
        stats.failed("u", "HTTP 503");
        stats.pushed("u");
        stats.pushed("u");
        stats.failed("u", "refused");
        assert_eq!(stats.counts(), (2, 3));
        let text = crate::output::prometheus::encode(&stats.families("tk"));
        assert!(text.contains("tk_exporter_pushes_total 2\n"), "{text}");
        assert!(
            text.contains("tk_exporter_push_failures_total 3\n"),
            "{text}"
        );
    }
}
