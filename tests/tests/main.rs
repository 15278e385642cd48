//! tracekit's integration tests: real BPF programs on the real kernel, driven by fixture
//! programs whose behaviour is known. Root only, one at a time: `cargo xtask test`.

mod block;
mod bpftrace_tools;
mod cgroup;
mod churn;
mod cputools;
mod engine;
mod everyday;
mod exporter;
mod fstools;
mod hooks;
mod hostile;
mod interp;
mod interp_machine;
mod interp_rb_php;
mod jit;
mod jit_machine;
mod jit_node22;
mod jvm;
mod kfunc;
mod kfunc_tools;
mod memleak;
mod network;
mod percentiles;
mod pprof;
mod profile;
mod realprog;
mod reliability;
mod reports;
mod snoops;
mod systools;
mod ufunc;
mod unwind;
