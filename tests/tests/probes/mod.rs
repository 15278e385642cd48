//! Probes and the engine.

mod cgroups;
mod engine;
mod kernel_functions;
mod percentiles;
mod tracepoint_hooks;
mod usdt;
mod user_functions;
