//! `tracekit exporter`: a daemon serving kernel aggregates as Prometheus metrics and CPU
//! profiles as pprof (Cloudflare's ebpf_exporter, Parca's agent), the library's
//! [`tracekit::exporter::kernel::run`].

use std::{net::SocketAddr, path::PathBuf};

use clap::Args as ClapArgs;
use tracekit::{
    Error, Result,
    exporter::{
        config::{Config, OtlpProtocol, Syntax},
        kernel,
        otlp::OtlpEndpoint,
        push::{self, PushOptions, PushTarget},
    },
};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit exporter                           # the built-in set on 127.0.0.1:9435
  tracekit exporter --listen 0.0.0.0:9435     # reachable from other machines
  tracekit exporter --config /etc/tracekit/exporter.toml
  tracekit exporter --config exporter.yaml    # the same keys in YAML
  tracekit exporter --config exporter.toml --check   # validate, compile, exit
  tracekit exporter --push http://pyroscope:4040      # CPU profiles to Pyroscope every 15 s
  tracekit exporter --otlp-endpoint http://collector:4318   # ... as OTLP profiles
  tracekit exporter --otlp-protocol grpc --otlp-endpoint http://collector:4317
  tracekit exporter --web.config.file /etc/tracekit/web.yml # TLS, basic auth
  curl -s localhost:9435/metrics              # what Prometheus scrapes
  go tool pprof -top 'http://localhost:9435/debug/pprof/profile?seconds=10'

The built-in set: syscalls by name, block I/O latency and sizes by disk and operation,
run queue latency, and CPU profiles at /debug/pprof/profile?seconds=N. A config file
(TOML, see dist/exporter.example.toml, or YAML with the same keys,
dist/exporter.example.yaml) names counting and histogram tools by name
(metrics = [\"runqlat\", \"syscount\"]) or any event as the one-liners write it,
with a filter, a value, labels (by), buckets and a unit.";

/// `tracekit exporter`.
#[derive(Debug, ClapArgs)]
#[command(
    about = "Serve kernel aggregates to Prometheus and CPU profiles as pprof (ebpf_exporter)",
    after_help = EXAMPLES
)]
pub struct Args {
    /// The config file (TOML, or YAML when it ends in .yaml or .yml); without it, the
    /// built-in set
    #[arg(long, short = 'c', value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Check the config and compile its metrics for this kernel, then exit
    #[arg(long)]
    pub check: bool,
    /// Listen on ADDR:PORT [default: the config's listen, else 127.0.0.1:9435]
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Push a CPU profile of the machine every interval to a Pyroscope-compatible server:
    /// POST URL/ingest, pprof, as tracekit.cpu{hostname=...}
    #[arg(long, value_name = "URL")]
    pub push: Option<String>,
    /// Push a CPU profile of the machine every interval as OpenTelemetry profiles
    /// (OTLP/HTTP, protobuf, gzip) to URL/v1development/profiles, or over gRPC to the
    /// server at URL (http://HOST:4317, https for TLS) [default: the config's [otlp]
    /// endpoint]
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// How OTLP profiles travel, as OTEL_EXPORTER_OTLP_PROTOCOL names it: http/protobuf
    /// (a POST, port 4318) or grpc (a gzipped ProfilesService/Export call over HTTP/2,
    /// port 4317) [default: the config's [otlp] protocol, else http/protobuf]
    #[arg(long, value_name = "PROTOCOL", value_parser = ["grpc", "http/protobuf"])]
    pub otlp_protocol: Option<String>,
    /// TLS and basic auth for the server, in Prometheus exporter-toolkit's web config
    /// format (YAML: tls_server_config with cert_file, key_file, client_auth_type,
    /// client_ca_file; basic_auth_users with bcrypt hashes)
    #[arg(long = "web.config.file", value_name = "FILE")]
    pub web_config_file: Option<PathBuf>,
    /// Seconds between pushes, each a profile of that long (1 to 3600) [default: 15]
    #[arg(long, value_name = "SECONDS",
          value_parser = clap::value_parser!(u64)
              .range(push::MIN_INTERVAL_SECONDS..=push::MAX_INTERVAL_SECONDS))]
    pub push_interval: Option<u64>,
}

impl Args {
    /// `--push`, `--otlp-endpoint` (else `config`'s, from `origin`) and `--push-interval`,
    /// checked: the URLs are http or https with a host.
    fn push(&self, config: &Config, origin: &str) -> Result<Option<PushOptions>> {
        let protocol = match &self.otlp_protocol {
            Some(name) => OtlpProtocol::parse(name).ok_or_else(|| {
                Error::usage(format!("--otlp-protocol {name}: expected grpc or http/protobuf"))
            })?,
            None => config.otlp.protocol,
        };
        let otlp = match (&self.otlp_endpoint, &config.otlp.endpoint) {
            (Some(url), _) => Some(OtlpEndpoint::parse(url, protocol).map_err(|err| {
                Error::usage(format!(
                    "--otlp-endpoint {}: {err}",
                    tracekit::error::quote(url)
                ))
            })?),
            (None, Some(url)) => Some(OtlpEndpoint::parse(url, protocol).map_err(|err| {
                Error::usage(format!(
                    "{origin}: [otlp] endpoint {}: {err}",
                    tracekit::error::quote(url)
                ))
            })?),
            (None, None) => None,
        };
        if let (Some(name), None) = (&self.otlp_protocol, &otlp) {
            return Err(Error::usage(format!(
                "--otlp-protocol {name}: needs --otlp-endpoint URL or an [otlp] endpoint"
            )));
        }
        if self.push.is_none() && otlp.is_none() {
            return match self.push_interval {
                Some(seconds) => Err(Error::usage(format!(
                    "--push-interval {seconds}: pushes need --push URL or --otlp-endpoint URL"
                ))),
                None => Ok(None),
            };
        }
        let target = match &self.push {
            Some(url) => Some(PushTarget::parse(url, &push::hostname()).map_err(|err| {
                Error::usage(format!("--push {}: {err}", tracekit::error::quote(url)))
            })?),
            None => None,
        };
        Ok(Some(PushOptions {
            target,
            otlp,
            interval: std::time::Duration::from_secs(
                self.push_interval
                    .unwrap_or(push::DEFAULT_INTERVAL_SECONDS),
            ),
        }))
    }
}

/// Runs `tracekit exporter`.
pub fn run(args: Args, _verbose: u8) -> Result<()> {
    let config = match &args.config {
        Some(path) => {
            let shown = path.display().to_string();
            let text = std::fs::read_to_string(path).map_err(|err| {
                Error::usage(format!(
                    "--config {}: cannot read it: {err}",
                    tracekit::error::quote(&shown)
                ))
            })?;
            Config::parse_as(&text, &shown, Syntax::of_path(path))?
        }
        None => Config::default_set(),
    };
    let origin = args
        .config
        .as_ref()
        .map_or("the built-in config".to_string(), |p| p.display().to_string());
    let push = args.push(&config, &origin)?;
    let web = args
        .web_config_file
        .as_deref()
        .map(tracekit::exporter::web::WebConfig::load)
        .transpose()?;
    if args.check {
        let compiled = kernel::compile_all(&config, &origin)?;
        println!("{origin}: {} metrics OK", compiled.len());
        for metric in &compiled {
            println!("  {}: {}", metric.config.name, metric.what);
        }
        return Ok(());
    }
    kernel::run(config, &origin, args.listen, push, web)
}
