//! Probes and the aggregation engine: `count`, `hist` and `trace` on tracepoints and their
//! hooks, kernel and user function probes, USDT, cgroup filters and keys, percentiles,
//! strings stored in tracepoint records.

mod cgroups;
mod engine;
mod kernel_functions;
mod percentiles;
mod record_strings;
mod tracepoint_hooks;
mod usdt;
mod user_functions;

use tracekit_tests::fixture;

/// `tk_funcs`, the fixture of the user-function probes: known malloc sizes, a function
/// called N times, a sleeper, known return values.
fn funcs() -> String {
    fixture("tk_funcs").to_string_lossy().into_owned()
}
