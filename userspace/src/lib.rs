//! tracekit: eBPF tracing for the jobs of `perf`, bcc and bpftrace, with aggregation in the
//! kernel and one self-contained binary.
//!
//! The binary (`src/bin/tracekit/`: `main.rs`, `cli/`, `commands/`) is glue: one file per command that
//! builds a request and hands it to a job. The work lives here, in layers that only import
//! downward:
//!
//! 1. [`error`], [`caps`], [`bpf`]: errors, privileges, the embedded BPF objects;
//! 2. [`probe`]: tracepoint formats, fields, functions, the filter language;
//! 3. [`engine`]: probe specs and one module per probe kind ([`engine::kinds`]), requests
//!    compiled to plans, loaded, attached and read; [`cpu_sampler`]: the CPU sampler; [`counters`]: perf counters;
//! 4. [`symbolize`], [`ksyms`], [`stacks`]: addresses to frames, stacks folded and ranked;
//!    [`mappings`]: the file mappings and build IDs of frames (for pprof);
//!    [`jit`](symbolize::jit), [`procmaps`], [`debuginfo`](symbolize::debuginfo): JIT symbols (`perf-PID.map`, jitdump), what a
//!    process mapped (kept past its exit, across mount namespaces), debug files by build ID
//!    (local, debuginfod); [`usdt`](probe::usdt): USDT probes (`.note.stapsdt`), their argument operands,
//!    attaching with semaphores; [`unwind`]: unwind tables from `.eh_frame` for the
//!    kernel's DWARF unwinder; [`runtimes`]: the runtimes whose frames could not be named;
//! 5. [`output`]: neutral values (groups, stacks, counts) to text, folded stacks, SVG, JSON;
//! 6. [`session`]: one run skeleton (scope, workload, signals, intervals, detach);
//! 7. [`jobs`]: what the commands run on it (aggregates, stacks, trace, stat, top);
//!    [`exporter`]: the exporter's config, series, HTTP server.

pub mod bpf;
pub mod caps;
pub mod cgroups;
pub mod containers;
pub mod counters;
pub mod cpu_sampler;
pub mod engine;
pub mod error;
pub mod exporter;
pub mod jobs;
pub mod ksyms;
pub mod mappings;
pub mod output;
pub mod probe;
pub mod procmaps;
pub mod runtimes;
pub mod session;
pub mod stacks;
pub mod symbolize;
pub mod unwind;

pub use error::{Error, Result};
