//! `tracekit exporter`'s library side: the config file, monotonic series from kernel
//! aggregates, the HTTP server, and the exporter's own metrics.
//!
//! - [`config`]: the TOML config (presets or events, filters, values, labels, buckets,
//!   units), checked without the kernel; the built-in default set;
//! - [`series`]: kernel map readings to Prometheus series that never go down, across
//!   evictions, with a cap on label sets per metric;
//! - [`server`]: `/metrics`, `/debug/pprof/profile?seconds=N`, `/healthz` over a
//!   [`server::Sources`] implementation;
//! - [`kernel`]: the sources on the real kernel (engine requests, the CPU sampler) and the
//!   daemon, [`kernel::run`];
//! - [`own`]: the exporter's CPU, memory and scrape time;
//! - [`push`]: `--push URL`, CPU profiles POSTed to a Pyroscope-compatible `/ingest`;
//! - [`otlp`]: `--otlp-endpoint URL`, CPU profiles as OTLP, queued and retried;
//! - [`web`]: `--web.config.file`, TLS and basic auth of the server (exporter-toolkit's
//!   format);
//! - [`client`]: the pushes' HTTP client (TLS trust, authentication, headers);
//! - [`sampler`]: the one CPU sampler profile requests and pushes share.
//!
//! The rendering itself is [`crate::output::prometheus`] and [`crate::output::pprof`].

pub mod client;
pub mod config;
pub mod kernel;
pub mod otlp;
pub mod own;
pub mod push;
pub mod sampler;
pub mod series;
pub mod server;
pub mod web;
