//! USDT probes: the C fixture's (`tests/fixtures/tk_usdt.c`) and PostgreSQL's, their
//! arguments read as `readelf -n` and bpftrace read them.

mod fixture_probes;
mod postgres;
