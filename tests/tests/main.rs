//! tracekit's integration tests: real BPF programs on the real kernel, driven by fixture
//! programs whose behaviour is known. Root only, one at a time: `cargo xtask test`.

mod exporter;
mod probes;
mod profile;
mod robustness;
mod runtimes;
mod tools;
