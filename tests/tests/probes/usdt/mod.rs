//! USDT probes.

mod fixture_probes;
