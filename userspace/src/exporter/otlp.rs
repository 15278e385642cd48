//! `tracekit exporter --otlp-endpoint URL`: every interval, the CPU profile of the machine
//! as OpenTelemetry profiles ([`crate::output::otlp`]), POSTed as OTLP/HTTP protobuf,
//! gzipped, to `URL/v1development/profiles` (the path of the Collector's `otlp` receiver
//! and of Pyroscope 2.0's OTLP ingestion for the profiles signal while it is in
//! development), or with `--otlp-protocol grpc` sent as a gzipped OTLP/gRPC call
//! ([`grpc`]).
//!
//! Profiles wait in a bounded queue ([`Queue`], `[otlp] queue_size`, one profile per
//! interval) while the receiver cannot take them: a connection refused, a timeout, or the
//! answers OTLP/HTTP says to retry (429, 502, 503, 504) are retried with exponential
//! backoff (1 s, doubling, at most [`MAX_BACKOFF`]) or after the answer's `Retry-After`
//! (at most [`MAX_THROTTLE`]), the oldest first; a profile that finds
//! the queue full pushes the oldest out. Other answers (400, 401, 413...) reject the
//! profile for good; over gRPC, the statuses the OTLP specification says to retry
//! (`UNAVAILABLE`, `RESOURCE_EXHAUSTED` with a retry delay, ...) are retried, after the
//! server's delay when it gives one, and the others reject the profile. What is dropped (`queue_full`, `rejected`, `shutdown`) is counted in
//! `NS_exporter_otlp_dropped_profiles_total{reason}` and
//! `NS_exporter_otlp_dropped_samples_total{reason}`, and logged once per streak. An
//! interval without a sample sends nothing (`NS_exporter_otlp_empty_intervals_total`).

use std::{
    collections::VecDeque,
    io::Write as _,
    sync::{Arc, Mutex},
    time::{Duration, SystemTime},
};

use flate2::{Compression, write::GzEncoder};
use reqwest::Url;
use tokio::sync::{Notify, watch};

use crate::{
    Error, Result,
    exporter::{
        client::{self, PushClient},
        config::{ClientConfig, OtlpProtocol},
    },
    output::prometheus::{Labels, MetricFamily, Value, Values},
};

pub mod grpc;

/// The OTLP/HTTP path of the profiles signal.
pub const PROFILES_PATH: &str = "/v1development/profiles";

/// The longest wait between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// How long queued profiles may still be sent once the exporter stops.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// The longest wait a server's retry delay (gRPC's `RetryInfo`, HTTP's `Retry-After`) gets.
pub const MAX_THROTTLE: Duration = Duration::from_secs(60);

/// Where OTLP profiles go, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OtlpEndpoint {
    url: Url,
    protocol: OtlpProtocol,
}

impl OtlpEndpoint {
    /// The endpoint for the base `url` (`http://collector:4318`); for OTLP/HTTP,
    /// [`PROFILES_PATH`] is appended unless the path already ends with it; over gRPC
    /// (`http://collector:4317`, `https` for TLS) the URL names the server only.
    ///
    /// # Errors
    /// A usage error (without the flag's name) when `url` does not parse, is not `http` or
    /// `https`, has no host, or has a query or fragment; for gRPC, also a path or a user.
    pub fn parse(url: &str, protocol: OtlpProtocol) -> Result<Self> {
        let example = match protocol {
            OtlpProtocol::HttpProtobuf => {
                "expected an http or https URL like http://collector:4318"
            }
            OtlpProtocol::Grpc => "expected an http or https URL like http://collector:4317",
        };
        let mut parsed =
            Url::parse(url).map_err(|err| Error::usage(format!("{err}; {example}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(Error::usage(format!(
                "scheme {}: expected http or https",
                parsed.scheme()
            )));
        }
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err(Error::usage(format!("no host; {example}")));
        }
        if parsed.query().is_some() || parsed.fragment().is_some() {
            return Err(Error::usage(
                "a query or fragment; give the receiver's base URL",
            ));
        }
        let path = parsed.path().trim_end_matches('/').to_string();
        if protocol == OtlpProtocol::Grpc {
            if !path.is_empty() {
                return Err(Error::usage(format!(
                    "a path ({path}): gRPC calls go to the server's {}; give \
                     http(s)://HOST:PORT",
                    grpc::EXPORT_PATH
                )));
            }
            if !parsed.username().is_empty() || parsed.password().is_some() {
                return Err(Error::usage("a user in a gRPC URL: give [otlp] basic_auth"));
            }
        } else if !path.ends_with(PROFILES_PATH) {
            parsed.set_path(&format!("{path}{PROFILES_PATH}"));
        }
        Ok(Self {
            url: parsed,
            protocol,
        })
    }

    /// How profiles travel to it.
    pub fn protocol(&self) -> OtlpProtocol {
        self.protocol
    }

    /// The URL POSTed to, without user and password.
    pub fn shown(&self) -> String {
        let mut shown = self.url.clone();
        let _ = shown.set_username("");
        let _ = shown.set_password(None);
        match self.protocol {
            OtlpProtocol::HttpProtobuf => shown.to_string(),
            OtlpProtocol::Grpc => shown.as_str().trim_end_matches('/').to_string(),
        }
    }

    /// What the start message says of it: `URL as OTLP/HTTP` or `URL as OTLP/gRPC`.
    pub fn described(&self) -> String {
        let how = match self.protocol {
            OtlpProtocol::HttpProtobuf => "OTLP/HTTP",
            OtlpProtocol::Grpc => "OTLP/gRPC",
        };
        format!("{} as {how}", self.shown())
    }
}

/// The client of an endpoint's protocol.
#[derive(Clone, Debug)]
pub enum OtlpClient {
    /// OTLP/HTTP.
    Http(PushClient),
    /// OTLP/gRPC (tonic's endpoint settings are 600 bytes).
    Grpc(Box<grpc::GrpcClient>),
}

impl OtlpClient {
    /// The client for `endpoint` with `config`'s TLS, authentication and headers; a
    /// request may take `timeout`.
    ///
    /// # Errors
    /// A usage error when a file named cannot be read, or a header is not one.
    pub fn new(endpoint: &OtlpEndpoint, config: &ClientConfig, timeout: Duration) -> Result<Self> {
        match endpoint.protocol {
            OtlpProtocol::HttpProtobuf => Ok(Self::Http(PushClient::new("otlp", config, timeout)?)),
            OtlpProtocol::Grpc => Ok(Self::Grpc(Box::new(grpc::GrpcClient::new(
                &endpoint.url,
                config,
                timeout,
            )?))),
        }
    }
}

/// One interval's profile, encoded and gzipped, waiting to be sent.
#[derive(Clone, Debug)]
pub struct Batch {
    /// The gzipped `ExportProfilesServiceRequest`.
    pub body: Vec<u8>,
    /// Samples in it.
    pub samples: u64,
    /// When its window started.
    pub start: SystemTime,
}

impl Batch {
    /// A batch of `request`'s bytes, gzipped.
    pub fn new(request: &[u8], samples: u64, start: SystemTime) -> Self {
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(request).expect("writing to memory");
        Self {
            body: gz.finish().expect("writing to memory"),
            samples,
            start,
        }
    }
}

/// Why profiles were dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drop {
    /// The queue was full (the receiver away longer than the queue holds).
    QueueFull,
    /// The receiver refused the profile for good (or took part of it).
    Rejected,
    /// Still queued when the exporter stopped.
    Shutdown,
}

impl Drop {
    const ALL: [Drop; 3] = [Drop::QueueFull, Drop::Rejected, Drop::Shutdown];

    fn label(self) -> &'static str {
        match self {
            Drop::QueueFull => "queue_full",
            Drop::Rejected => "rejected",
            Drop::Shutdown => "shutdown",
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    /// Profiles taken and queued.
    taken: u64,
    /// Intervals without a sample: nothing to send.
    empty: u64,
    exported: u64,
    samples_exported: u64,
    failures: u64,
    dropped: [(u64, u64); 3],
    /// Failed attempts since the last success.
    streak: u64,
    queued: usize,
}

/// What the OTLP push did, for the exporter's own metrics; logs failures and drops.
#[derive(Debug, Default)]
pub struct OtlpStats {
    inner: Mutex<Counts>,
}

impl OtlpStats {
    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn exported(&self, target: &str, samples: u64) {
        let mut counts = self.counts();
        counts.exported += 1;
        counts.samples_exported += samples;
        if counts.streak > 0 {
            log::warn!(
                "exporting OTLP profiles to {target} works again after {} failed attempt{}",
                counts.streak,
                if counts.streak == 1 { "" } else { "s" }
            );
        }
        counts.streak = 0;
    }

    fn failed(&self, target: &str, why: &str, queued: usize) {
        let mut counts = self.counts();
        counts.failures += 1;
        counts.streak += 1;
        if counts.streak == 1 {
            log::warn!(
                "exporting OTLP profiles to {target} failed: {why}; retrying with backoff \
                 ({queued} profile{} queued; further failures are counted in \
                 otlp_export_failures_total)",
                if queued == 1 { "" } else { "s" }
            );
        }
    }

    fn dropped(&self, reason: Drop, samples: u64, why: &str) {
        let mut counts = self.counts();
        let slot = &mut counts.dropped[reason as usize];
        slot.0 += 1;
        slot.1 += samples;
        log::warn!(
            "dropped an OTLP profile of {samples} samples ({}: {why}); {} dropped so far for \
             this reason",
            reason.label(),
            slot.0
        );
    }

    /// Profiles exported, and samples in them.
    pub fn exported_counts(&self) -> (u64, u64) {
        let counts = self.counts();
        (counts.exported, counts.samples_exported)
    }

    /// Profiles and samples dropped for `reason`.
    pub fn dropped_counts(&self, reason: Drop) -> (u64, u64) {
        self.counts().dropped[reason as usize]
    }

    /// The exporter's metrics of the OTLP push.
    pub fn families(&self, namespace: &str) -> Vec<MetricFamily> {
        let counts = self.counts();
        let family = |name: &str, help: &str, values: Values, labels: &[&str]| MetricFamily {
            name: format!("{namespace}_exporter_otlp_{name}"),
            help: help.into(),
            unit: None,
            label_names: labels.iter().map(|l| l.to_string()).collect(),
            values,
        };
        let one = |value: u64| vec![(Labels::default(), Value::Int(value))];
        let by_reason = |pick: fn(&(u64, u64)) -> u64| {
            Drop::ALL
                .iter()
                .map(|&reason| {
                    (
                        Labels(vec![reason.label().into()]),
                        Value::Int(pick(&counts.dropped[reason as usize])),
                    )
                })
                .collect()
        };
        vec![
            family(
                "profiles",
                "OTLP profiles taken (one per interval) and queued for the receiver.",
                Values::Counter(one(counts.taken)),
                &[],
            ),
            family(
                "empty_intervals",
                "Intervals without a CPU sample, for which no OTLP profile was sent.",
                Values::Counter(one(counts.empty)),
                &[],
            ),
            family(
                "exports",
                "OTLP profile requests the receiver accepted.",
                Values::Counter(one(counts.exported)),
                &[],
            ),
            family(
                "exported_samples",
                "CPU samples in the OTLP profiles the receiver accepted.",
                Values::Counter(one(counts.samples_exported)),
                &[],
            ),
            family(
                "export_failures",
                "OTLP export attempts that failed and were retried (no connection, a \
                 timeout, 429, 502, 503, 504, a gRPC status to retry).",
                Values::Counter(one(counts.failures)),
                &[],
            ),
            family(
                "dropped_profiles",
                "OTLP profiles not delivered: queue_full (the receiver away longer than \
                 the queue holds), rejected (refused for good), shutdown (queued at the stop).",
                Values::Counter(by_reason(|d| d.0)),
                &["reason"],
            ),
            family(
                "dropped_samples",
                "CPU samples in the OTLP profiles not delivered, by the same reasons.",
                Values::Counter(by_reason(|d| d.1)),
                &["reason"],
            ),
            family(
                "queue_length",
                "OTLP profiles waiting to be sent.",
                Values::Gauge(one(counts.queued as u64)),
                &[],
            ),
        ]
    }
}

/// The bounded queue between the profiles and the sender.
#[derive(Debug)]
pub struct Queue {
    batches: Mutex<VecDeque<Batch>>,
    capacity: usize,
    ready: Notify,
    stats: Arc<OtlpStats>,
}

impl Queue {
    /// A queue of at most `capacity` profiles.
    pub fn new(capacity: usize, stats: Arc<OtlpStats>) -> Self {
        Self {
            batches: Mutex::new(VecDeque::new()),
            capacity: capacity.max(1),
            ready: Notify::new(),
            stats,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Batch>> {
        self.batches.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `batch`; the oldest goes (counted) when the queue is full. A batch of no
    /// samples (an idle interval) is counted and not sent: a request without a resource
    /// says nothing, not even its window's time.
    pub fn push(&self, batch: Batch) {
        if batch.samples == 0 {
            self.stats.counts().empty += 1;
            return;
        }
        let mut batches = self.lock();
        self.stats.counts().taken += 1;
        batches.push_back(batch);
        while batches.len() > self.capacity {
            let oldest = batches.pop_front().expect("not empty");
            self.stats.dropped(
                Drop::QueueFull,
                oldest.samples,
                &format!("the queue holds {}", self.capacity),
            );
        }
        self.stats.counts().queued = batches.len();
        drop(batches);
        self.ready.notify_one();
    }

    /// Puts back a batch that failed, first in line, unless newer ones fill the queue.
    fn retry_later(&self, batch: Batch) {
        let mut batches = self.lock();
        if batches.len() >= self.capacity {
            self.stats.dropped(
                Drop::QueueFull,
                batch.samples,
                &format!("the queue holds {}", self.capacity),
            );
        } else {
            batches.push_front(batch);
        }
        self.stats.counts().queued = batches.len();
    }

    fn pop(&self) -> Option<Batch> {
        let mut batches = self.lock();
        let batch = batches.pop_front();
        self.stats.counts().queued = batches.len();
        batch
    }

    /// Profiles waiting.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// How one attempt ended.
#[derive(Debug, PartialEq, Eq)]
enum Sent {
    Accepted,
    /// Worth another attempt (after this long, when the server says).
    Retry(String, Option<Duration>),
    /// Refused for good.
    Rejected(String),
}

/// A client ready to send: over gRPC, its channel (made in the runtime, connected at
/// the first call and again after a failure).
enum Sender {
    Http(PushClient),
    Grpc(grpc::Connected),
}

impl Sender {
    async fn send(&self, endpoint: &OtlpEndpoint, batch: &Batch) -> Sent {
        match self {
            Sender::Http(client) => send(client, endpoint, batch).await,
            Sender::Grpc(connected) => connected.send(batch).await,
        }
    }
}

/// What a partial success says was not taken, if anything.
fn partial_rejection(
    response: &opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceResponse,
) -> Option<String> {
    response
        .partial_success
        .as_ref()
        .filter(|partial| partial.rejected_profiles > 0)
        .map(|partial| {
            format!(
                "{} profiles rejected: {}",
                partial.rejected_profiles, partial.error_message
            )
        })
}

async fn send(client: &PushClient, endpoint: &OtlpEndpoint, batch: &Batch) -> Sent {
    let answer = client
        .post(endpoint.url.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/x-protobuf")
        .header(reqwest::header::CONTENT_ENCODING, "gzip")
        .body(batch.body.clone())
        .send()
        .await;
    let answer = match answer {
        Ok(answer) => answer,
        Err(err) => return Sent::Retry(crate::error::chain(&err), None),
    };
    let status = answer.status().as_u16();
    if answer.status().is_success() {
        // A partial success says how many profiles were not taken, and why.
        let body = answer.bytes().await.unwrap_or_default();
        if let Ok(response) = <opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceResponse as prost::Message>::decode(body.as_ref())
            && let Some(why) = partial_rejection(&response)
        {
            return Sent::Rejected(why);
        }
        return Sent::Accepted;
    }
    // The server's own wait (429, 503), bounded by the sender.
    let after = client::retry_after(answer.headers(), SystemTime::now());
    let why = client::failure(answer).await;
    if matches!(status, 429 | 502 | 503 | 504) {
        Sent::Retry(why, after)
    } else {
        Sent::Rejected(why)
    }
}

/// The wait before the next attempt: the server's delay (`Retry-After`, `RetryInfo`) when
/// it gave one, at most [`MAX_THROTTLE`], else `backoff`.
fn retry_wait(delay: Option<Duration>, backoff: Duration) -> Duration {
    delay.map_or(backoff, |delay| delay.min(MAX_THROTTLE))
}

/// Sends what `queue` holds to `endpoint`, oldest first, retrying with backoff, until
/// `stop` turns true; then what is still queued gets [`STOP_GRACE`] to go, and the rest
/// is dropped (counted as `shutdown`).
pub async fn sender(
    queue: Arc<Queue>,
    client: OtlpClient,
    endpoint: OtlpEndpoint,
    stats: Arc<OtlpStats>,
    mut stop: watch::Receiver<bool>,
) {
    let shown = endpoint.shown();
    let client = match client {
        OtlpClient::Http(client) => Sender::Http(client),
        OtlpClient::Grpc(client) => Sender::Grpc(client.connect()),
    };
    let mut backoff = Duration::from_secs(1);
    loop {
        if *stop.borrow() {
            break;
        }
        let Some(batch) = queue.pop() else {
            tokio::select! {
                _ = queue.ready.notified() => {}
                _ = stop.wait_for(|stopped| *stopped) => {}
            }
            continue;
        };
        match client.send(&endpoint, &batch).await {
            Sent::Accepted => {
                stats.exported(&shown, batch.samples);
                backoff = Duration::from_secs(1);
            }
            Sent::Rejected(why) => stats.dropped(Drop::Rejected, batch.samples, &why),
            Sent::Retry(why, delay) => {
                queue.retry_later(batch);
                stats.failed(&shown, &why, queue.len());
                let wait = retry_wait(delay, backoff);
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = stop.wait_for(|stopped| *stopped) => {}
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
    // The last profiles, while the grace lasts.
    let deadline = tokio::time::Instant::now() + STOP_GRACE;
    while let Some(batch) = queue.pop() {
        let sent = tokio::time::timeout_at(deadline, client.send(&endpoint, &batch)).await;
        match sent {
            Ok(Sent::Accepted) => stats.exported(&shown, batch.samples),
            Ok(Sent::Rejected(why)) => stats.dropped(Drop::Rejected, batch.samples, &why),
            Ok(Sent::Retry(why, _)) => stats.dropped(Drop::Shutdown, batch.samples, &why),
            Err(_) => stats.dropped(
                Drop::Shutdown,
                batch.samples,
                "still being sent when the exporter stopped",
            ),
        }
    }
}

#[cfg(test)]
mod tests;
