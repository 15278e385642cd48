//! Python: CPython's frames unwound in the kernel with no flags, named from a process's
//! first samples on, and the perf trampolines of `-X perf`.

mod frames;
mod names;
mod perf_trampolines;
mod real_programs;
mod startup;

/// py-spy, as `cargo xtask setup` fetched it from PyPI (xtask's real_programs.rs), or a
/// printed skip reason.
fn py_spy(test: &str) -> Option<std::path::PathBuf> {
    let py_spy = tracekit_tests::workspace().join("target/real-programs/python/py-spy");
    if py_spy.is_file() {
        return Some(py_spy);
    }
    println!(
        "{test}: skipped: no {} (cargo xtask setup fetches py-spy with pip)",
        py_spy.display()
    );
    None
}
