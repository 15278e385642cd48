//! `tracekit exporter`.

mod profiles;
