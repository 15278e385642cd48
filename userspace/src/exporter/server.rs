//! The exporter's HTTP server (axum on tokio): `/metrics` for Prometheus, the Go-style CPU
//! profile endpoint for Parca and Pyroscope, `/healthz`.
//!
//! | path | answer |
//! |---|---|
//! | `GET /metrics` | the metrics and the exporter's own: OpenMetrics text, or Prometheus's protobuf format (with native histograms) when `Accept` prefers it ([`wants_protobuf`]) |
//! | `GET /debug/pprof/profile?seconds=N` | a gzipped pprof CPU profile of the machine over N s (default 30) |
//! | `GET /healthz` | `ok`, or 503 with the reason |
//! | `GET /` | what is served here |
//!
//! What is served comes from a [`Sources`] implementation: the server knows HTTP, the
//! sources know the kernel.

use std::{
    collections::HashMap,
    future::Future,
    net::SocketAddr,
    sync::Arc,
    time::{Duration, SystemTime},
};

use axum::{
    Router,
    extract::{Query, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use tokio::net::TcpListener;

use crate::{
    Error, Result,
    exporter::{
        own::{OwnMetrics, ScrapeTimer},
        web::{TlsListener, WebConfig},
    },
    output::prometheus::{self, MetricFamily},
};

/// What the server serves.
pub trait Sources: Send + Sync + 'static {
    /// The metric families of one scrape (the server adds its own). Called on a blocking
    /// thread: it may read kernel maps.
    fn metrics(&self) -> Vec<MetricFamily>;

    /// `Ok` when everything is attached and reading; else why not.
    fn health(&self) -> std::result::Result<(), String>;

    /// A CPU profile of the whole machine over `duration` (less when the exporter stops).
    /// Requests may overlap.
    fn profile(&self, duration: Duration) -> impl Future<Output = Result<CpuProfile>> + Send;

    /// The stacks of the whole machine over `duration`, for the pushes to encode as each
    /// receiver takes them (pprof, OTLP) from one window.
    fn window(&self, duration: Duration) -> impl Future<Output = Result<StackWindow>> + Send;
}

/// The stacks of a CPU profile and the span they cover.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackWindow {
    /// Distinct stacks with their sample counts.
    pub stacks: Vec<crate::stacks::Stack>,
    /// When sampling started.
    pub start: SystemTime,
    /// How long it sampled.
    pub duration: Duration,
    /// Whether inlined functions were expanded into frames.
    pub inlined: bool,
    /// What was known of each process while it ran ([`crate::exporter::sampler::Window`]).
    pub processes: HashMap<u32, crate::containers::ProcessInfo>,
}

impl StackWindow {
    /// What is known of process `pid`: as it was while sampled, else read now.
    pub fn process(&self, pid: u32) -> crate::containers::ProcessInfo {
        self.processes
            .get(&pid)
            .cloned()
            .unwrap_or_else(|| crate::containers::ProcessInfo::read(pid))
    }
}

/// A CPU profile and the span it covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuProfile {
    /// Gzipped pprof.
    pub pprof: Vec<u8>,
    /// When sampling started.
    pub start: SystemTime,
    /// How long it sampled.
    pub duration: Duration,
}

/// How the server answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerOptions {
    /// The prefix of the exporter's own metric names.
    pub namespace: String,
    /// The profile endpoint, if served.
    pub profile: Option<ProfileEndpoint>,
}

/// Limits of `/debug/pprof/profile`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProfileEndpoint {
    /// `seconds` when the request has none (Go's default: 30).
    pub default_seconds: u64,
    /// The largest `seconds` accepted.
    pub max_seconds: u64,
}

struct AppState<S> {
    sources: Arc<S>,
    options: ServerOptions,
    own: OwnMetrics,
}

/// The router: every endpoint, over `sources`.
pub fn router<S: Sources>(sources: Arc<S>, options: ServerOptions) -> Router {
    let state = Arc::new(AppState {
        sources,
        options,
        own: OwnMetrics::default(),
    });
    Router::new()
        .route("/", get(index::<S>))
        .route("/metrics", get(metrics::<S>))
        .route("/healthz", get(health::<S>))
        .route("/debug/pprof/profile", get(profile::<S>))
        .with_state(state)
}

/// Listens on `addr`; the error names the address.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener> {
    TcpListener::bind(addr).await.map_err(|err| Error::Runtime {
        what: format!("cannot listen on {addr}"),
        source: Some(Box::new(err)),
    })
}

/// Serves `sources` on `listener` until `shutdown` completes; requests under way finish.
/// With `web`, over TLS where it says so, and every request authenticated where it has
/// users ([`crate::exporter::web`]).
pub async fn serve<S: Sources>(
    listener: TcpListener,
    sources: Arc<S>,
    options: ServerOptions,
    web: Option<WebConfig>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let addr = listener.local_addr().ok();
    let mut app = router(sources, options);
    if let Some(web) = web.as_ref().filter(|web| !web.users.is_empty()) {
        app = app.layer(axum::middleware::from_fn_with_state(
            web.clone(),
            crate::exporter::web::authenticate,
        ));
    }
    let served = match web.and_then(|web| web.tls) {
        Some(acceptor) => {
            let listener = TlsListener::new(listener, acceptor).map_err(|err| Error::Runtime {
                what: "serving HTTPS".into(),
                source: Some(Box::new(err)),
            })?;
            axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await
        }
        None => {
            axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await
        }
    };
    served.map_err(|err| Error::Runtime {
        what: match addr {
            Some(addr) => format!("serving HTTP on {addr}"),
            None => "serving HTTP".into(),
        },
        source: Some(Box::new(err)),
    })
}

fn text(status: StatusCode, body: impl Into<String>) -> Response {
    let mut body = body.into();
    if !body.ends_with('\n') {
        body.push('\n');
    }
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

async fn index<S: Sources>(State(state): State<Arc<AppState<S>>>) -> Response {
    let mut body = String::from(
        "tracekit exporter\n\n/metrics                  Prometheus metrics (OpenMetrics text; protobuf with \
         native histograms when Accept asks)\n\
         /healthz                  ok, or why not\n",
    );
    if let Some(endpoint) = state.options.profile {
        body.push_str(&format!(
            "/debug/pprof/profile      pprof CPU profile of the machine, ?seconds=N \
             (default {}, at most {})\n",
            endpoint.default_seconds, endpoint.max_seconds
        ));
    }
    text(StatusCode::OK, body)
}

/// Whether an `Accept` header prefers Prometheus's protobuf format
/// (`application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily;
/// encoding=delimited`) to text: it names it with a `q` above zero and at least that of
/// every text type it accepts (`text/plain`, `application/openmetrics-text`, wildcards).
/// Text is the answer to anything else, a missing header included.
///
/// ```
/// use tracekit::exporter::server::wants_protobuf;
/// // Prometheus with native histograms on.
/// assert!(wants_protobuf(
///     "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,\
///      text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
/// ));
/// // Prometheus without them.
/// assert!(!wants_protobuf(
///     "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,\
///      text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
/// ));
/// assert!(!wants_protobuf("*/*"));
/// ```
pub fn wants_protobuf(accept: &str) -> bool {
    let mut protobuf = 0f64;
    let mut text = 0f64;
    for entry in accept.split(',') {
        let mut parts = entry.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let mut q = 1.0;
        let (mut proto, mut delimited) = (false, false);
        for param in parts {
            let Some((key, value)) = param.split_once('=') else {
                continue;
            };
            let value = value.trim().trim_matches('"');
            match key.trim().to_ascii_lowercase().as_str() {
                "q" => q = value.parse().unwrap_or(0.0),
                "proto" => proto = value == "io.prometheus.client.MetricFamily",
                "encoding" => delimited = value == "delimited",
                _ => {}
            }
        }
        match media.as_str() {
            "application/vnd.google.protobuf" if proto && delimited => protobuf = protobuf.max(q),
            "text/plain" | "application/openmetrics-text" | "text/*" | "application/*" | "*/*" => {
                text = text.max(q)
            }
            _ => {}
        }
    }
    protobuf > 0.0 && protobuf >= text
}

async fn metrics<S: Sources>(
    State(state): State<Arc<AppState<S>>>,
    headers: axum::http::HeaderMap,
) -> Response {
    let protobuf = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(wants_protobuf);
    let state_for_scrape = Arc::clone(&state);
    let encoded = tokio::task::spawn_blocking(move || {
        let state = state_for_scrape;
        let _timer = ScrapeTimer::start(&state.own);
        let mut families = state.sources.metrics();
        families.extend(state.own.families(&state.options.namespace));
        if protobuf {
            (
                prometheus::PROTOBUF_CONTENT_TYPE,
                prometheus::encode_protobuf(&families),
            )
        } else {
            (
                prometheus::CONTENT_TYPE,
                prometheus::encode(&families).into_bytes(),
            )
        }
    })
    .await;
    match encoded {
        Ok((content_type, body)) => {
            (StatusCode::OK, [(header::CONTENT_TYPE, content_type)], body).into_response()
        }
        Err(err) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("collecting metrics failed: {err}"),
        ),
    }
}

async fn health<S: Sources>(State(state): State<Arc<AppState<S>>>) -> Response {
    match state.sources.health() {
        Ok(()) => text(StatusCode::OK, "ok"),
        Err(why) => text(StatusCode::SERVICE_UNAVAILABLE, why),
    }
}

async fn profile<S: Sources>(
    State(state): State<Arc<AppState<S>>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let Some(endpoint) = state.options.profile else {
        return text(
            StatusCode::NOT_FOUND,
            "CPU profiles are not served here ([profile] enabled = false)",
        );
    };
    let seconds = match query.get("seconds") {
        None => endpoint.default_seconds.min(endpoint.max_seconds),
        Some(value) => match value.parse::<u64>() {
            Ok(seconds) if (1..=endpoint.max_seconds).contains(&seconds) => seconds,
            _ => {
                return text(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "seconds={value}: expected whole seconds from 1 to {}",
                        endpoint.max_seconds
                    ),
                );
            }
        },
    };
    match state.sources.profile(Duration::from_secs(seconds)).await {
        Ok(profile) => (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "application/octet-stream"),
                (
                    header::CONTENT_DISPOSITION,
                    "attachment; filename=\"profile\"",
                ),
            ],
            profile.pprof,
        )
            .into_response(),
        Err(err) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("profiling failed: {err}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::{
        os::fd::AsRawFd as _,
        sync::Mutex,
        time::{Instant, UNIX_EPOCH},
    };

    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;
    use crate::{
        output::{
            pprof::{self, PprofOptions, SampleKind},
            prometheus::{Labels, Value, Values},
        },
        stacks::{Frame, Stack},
    };

    #[derive(Default)]
    struct Fake {
        unhealthy: Mutex<Option<String>>,
        profiles: Mutex<Vec<Duration>>,
    }

    impl Sources for Fake {
        fn metrics(&self) -> Vec<MetricFamily> {
            vec![MetricFamily {
                name: "tracekit_syscalls".into(),
                help: "System calls entered, by name.".into(),
                unit: None,
                label_names: vec!["syscall".into()],
                values: Values::Counter(vec![(Labels::from(["getppid"]), Value::Int(1000))]),
            }]
        }

        fn health(&self) -> std::result::Result<(), String> {
            match self.unhealthy.lock().unwrap().clone() {
                Some(why) => Err(why),
                None => Ok(()),
            }
        }

        async fn profile(&self, duration: Duration) -> Result<CpuProfile> {
            self.profiles.lock().unwrap().push(duration);
            tokio::time::sleep(duration).await;
            let stacks = [Stack {
                pid: 1,
                comm: "burner".into(),
                cgroup: None,
                frames: vec![Frame::user("main", None), Frame::user("leaf", None)],
                count: 99,
                time_slice: None,
            }];
            let options = PprofOptions::new(SampleKind::Cpu { hz: 99 }, UNIX_EPOCH, duration);
            Ok(CpuProfile {
                pprof: pprof::encode(&pprof::build(&stacks, &options)),
                start: UNIX_EPOCH,
                duration,
            })
        }

        async fn window(&self, duration: Duration) -> Result<StackWindow> {
            Err(Error::runtime(format!("no {duration:?} window here")))
        }
    }

    struct Reply {
        status: u16,
        headers: String,
        body: Vec<u8>,
    }

    /// One HTTP/1.1 GET over a real socket.
    async fn get(addr: SocketAddr, path: &str) -> Reply {
        get_with(addr, path, "").await
    }

    /// [`get`] with more header lines (each ending in `\r\n`).
    async fn get_with(addr: SocketAddr, path: &str, headers: &str) -> Reply {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(
                format!("GET {path} HTTP/1.1\r\nHost: test\r\n{headers}Connection: close\r\n\r\n")
                    .as_bytes(),
            )
            .await
            .unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.unwrap();
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("headers end");
        let headers = String::from_utf8(raw[..split].to_vec()).unwrap();
        let status = headers[9..12].parse().unwrap();
        let body = raw[split + 4..].to_vec();
        let length: usize = headers
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length: ")
                    .map(str::to_string)
            })
            .expect("a content-length")
            .parse()
            .unwrap();
        assert_eq!(body.len(), length);
        Reply {
            status,
            headers: headers.to_ascii_lowercase(),
            body,
        }
    }

    async fn start(
        profile: Option<ProfileEndpoint>,
    ) -> (
        SocketAddr,
        Arc<Fake>,
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<Result<()>>,
        String,
    ) {
        let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let socket = fd_target(listener.as_raw_fd());
        let fake = Arc::new(Fake::default());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let options = ServerOptions {
            namespace: "tracekit".into(),
            profile,
        };
        let server = tokio::spawn(serve(listener, Arc::clone(&fake), options, None, async {
            let _ = stopped.await;
        }));
        (addr, fake, stop, server, socket)
    }

    /// What fd `fd` of this process is (`socket:[INODE]` for a socket).
    fn fd_target(fd: i32) -> String {
        std::fs::read_link(format!("/proc/self/fd/{fd}"))
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }

    /// Whether this process still has the socket `socket` (`socket:[INODE]`: inode
    /// numbers are not reused while the socket lives) open in any fd.
    fn holds(socket: &str) -> bool {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .flatten()
            .any(|entry| std::fs::read_link(entry.path()).is_ok_and(|l| l.as_os_str() == socket))
    }

    const ENDPOINT: ProfileEndpoint = ProfileEndpoint {
        default_seconds: 30,
        max_seconds: 5,
    };

    #[tokio::test]
    async fn serves_metrics_health_and_profiles() {
        let (addr, fake, stop, server, socket) = start(Some(ENDPOINT)).await;
        assert!(holds(&socket), "{socket} is not open here");

        let reply = get(addr, "/metrics").await;
        assert_eq!(reply.status, 200);
        assert!(
            reply.headers.contains(
                "content-type: application/openmetrics-text; version=1.0.0; charset=utf-8"
            ),
            "{}",
            reply.headers
        );
        let body = String::from_utf8(reply.body).unwrap();
        assert!(
            body.starts_with(
                "# HELP tracekit_syscalls System calls entered, by name.\n\
                 # TYPE tracekit_syscalls counter\n\
                 tracekit_syscalls_total{syscall=\"getppid\"} 1000\n"
            ),
            "{body}"
        );
        assert!(body.contains("process_resident_memory_bytes "), "{body}");
        assert!(
            body.contains("tracekit_exporter_scrapes_total 0\n"),
            "{body}"
        );
        assert!(body.ends_with("# EOF\n"), "{body}");
        // The second scrape counts the first.
        let body = String::from_utf8(get(addr, "/metrics").await.body).unwrap();
        assert!(
            body.contains("tracekit_exporter_scrapes_total 1\n"),
            "{body}"
        );

        let reply = get(addr, "/healthz").await;
        assert_eq!((reply.status, reply.body.as_slice()), (200, &b"ok\n"[..]));
        *fake.unhealthy.lock().unwrap() = Some("the syscalls program is detached".into());
        let reply = get(addr, "/healthz").await;
        assert_eq!(reply.status, 503);
        assert_eq!(reply.body, b"the syscalls program is detached\n");

        let started = Instant::now();
        let reply = get(addr, "/debug/pprof/profile?seconds=1").await;
        assert_eq!(reply.status, 200);
        assert!(started.elapsed() >= Duration::from_secs(1));
        assert!(
            reply
                .headers
                .contains("content-type: application/octet-stream")
        );
        assert!(
            reply
                .headers
                .contains("content-disposition: attachment; filename=\"profile\"")
        );
        let profile = pprof::decode(&reply.body).unwrap();
        assert_eq!(profile.sample[0].value, [99, 99 * 10_101_010]);
        assert_eq!(profile.duration_nanos, 1_000_000_000);
        assert_eq!(*fake.profiles.lock().unwrap(), [Duration::from_secs(1)]);

        for bad in ["0", "6", "abc", "-1"] {
            let reply = get(addr, &format!("/debug/pprof/profile?seconds={bad}")).await;
            assert_eq!(reply.status, 400, "seconds={bad}");
            assert_eq!(
                String::from_utf8(reply.body).unwrap(),
                format!("seconds={bad}: expected whole seconds from 1 to 5\n")
            );
        }
        assert_eq!(fake.profiles.lock().unwrap().len(), 1);

        let index = String::from_utf8(get(addr, "/").await.body).unwrap();
        assert!(index.contains("/debug/pprof/profile"), "{index}");
        assert_eq!(get(addr, "/nothing").await.status, 404);

        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
        // Stopped, the server has closed its listener. Asked of the socket, not the port:
        // whether the port binds again depends on every other process (a forked child of
        // another test kept it bound once), and a connect to it may reach another test's
        // listener given the same port.
        assert!(!holds(&socket), "still listening: {socket} is open");
    }

    /// `Accept` asking for Prometheus's protobuf gets it (the families decode with prost);
    /// Prometheus's text-first header and no header get text.
    #[tokio::test]
    async fn metrics_in_protobuf_when_accept_asks() {
        use prost::Message as _;
        let (addr, _fake, stop, server, _) = start(None).await;
        let reply = get_with(
            addr,
            "/metrics",
            "Accept: application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;\
             encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2\r\n",
        )
        .await;
        assert_eq!(reply.status, 200);
        assert!(
            reply.headers.contains(
                "content-type: application/vnd.google.protobuf; \
                 proto=io.prometheus.client.metricfamily; encoding=delimited"
            ),
            "{}",
            reply.headers
        );
        let mut rest = reply.body.as_slice();
        let mut names = Vec::new();
        while !rest.is_empty() {
            let family =
                prometheus::proto::MetricFamily::decode_length_delimited(&mut rest).unwrap();
            if family.name == "tracekit_syscalls_total" {
                let metric = &family.metric[0];
                assert_eq!(metric.counter.as_ref().unwrap().value, 1000.0);
                assert_eq!(
                    (
                        metric.label[0].name.as_str(),
                        metric.label[0].value.as_str()
                    ),
                    ("syscall", "getppid")
                );
            }
            names.push(family.name);
        }
        assert_eq!(names[0], "tracekit_syscalls_total");
        assert!(
            names.contains(&"process_resident_memory_bytes".to_string()),
            "{names:?}"
        );
        for accept in [
            "",
            "Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,\
             */*;q=0.1\r\n",
            "Accept: application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;\
             encoding=delimited;q=0.2,text/plain;q=0.5\r\n",
        ] {
            let reply = get_with(addr, "/metrics", accept).await;
            assert!(
                reply
                    .headers
                    .contains("content-type: application/openmetrics-text"),
                "{accept}: {}",
                reply.headers
            );
        }
        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn no_profile_endpoint_when_disabled() {
        let (addr, fake, stop, server, _) = start(None).await;
        let reply = get(addr, "/debug/pprof/profile?seconds=1").await;
        assert_eq!(reply.status, 404);
        assert!(fake.profiles.lock().unwrap().is_empty());
        assert!(
            !String::from_utf8(get(addr, "/").await.body)
                .unwrap()
                .contains("pprof")
        );
        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn address_in_use_is_named() {
        let first = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = first.local_addr().unwrap();
        let err = bind(addr).await.unwrap_err();
        assert_eq!(err.exit_code(), 1);
        assert_eq!(err.to_string(), format!("cannot listen on {addr}"));
    }
}
