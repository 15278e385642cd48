//! tracekit: eBPF tracing for the jobs of `perf`, bcc and bpftrace, with aggregation in the
//! kernel and one self-contained binary.
//!
//! The binary (`src/main.rs`) is glue; the work lives here:
//! - [`profile`]: the kernel side of CPU sampling (load, attach, read, detach) and
//!   symbolization of what it collected;
//! - [`symbolize`]: addresses to frames (blazesym), surviving process exit;
//! - [`ksyms`]: kernel addresses named by the kernel's own kallsyms lookup;
//! - [`engine`], [`kprobe_multi`]: the aggregation engine's loader, and one kprobe.multi
//!   link for many kernel functions;
//! - [`stacks`]: the stack model, folding, self-time ranking;
//! - [`output`]: text report, folded stacks, flame graph SVG;
//! - [`tracefs`]: tracefs mounting and tracepoint format files;
//! - [`workload`]: `-- CMD` held before exec until tracing starts;
//! - [`caps`], [`bpf`]: privileges, the embedded BPF object, loader limits.

pub mod bpf;
pub mod caps;
pub mod counters;
pub mod engine;
pub mod error;
pub mod filter;
pub mod functions;
pub mod kprobe_multi;
pub mod ksyms;
pub mod output;
pub mod probe;
pub mod probes;
pub mod profile;
pub mod stacks;
pub mod symbolize;
pub mod tracefs;
pub mod workload;

pub use error::{Error, Result};
