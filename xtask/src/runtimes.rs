//! `cargo xtask test --runtimes`: the runtime version matrix. Runs the integration tests of
//! `runtimes::` (each runtime as the distribution roots, pyenv and the registries ship it:
//! `tests/tests/runtimes/`) `repeat` times without stopping at a failure, then prints the
//! matrix's table, one row per runtime and a column per way it is profiled
//! (`runtimes::matrix::{by_pid,from_start,all_cpus}::<runtime>`), each cell the runs that
//! passed, and the other runtime tests' failures.

use std::collections::BTreeMap;

use anyhow::{Result, bail};

/// The matrix's ways, in the table's order.
const WAYS: [&str; 3] = ["by_pid", "from_start", "all_cpus"];

/// Passed and run counts per test.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Results {
    runs: BTreeMap<String, (u32, u32)>,
}

impl Results {
    /// Takes one line of libtest's output: `test NAME ... ok` (or `FAILED`; an ignored
    /// test is not counted).
    pub fn line(&mut self, line: &str) {
        let Some((name, result)) = line
            .strip_prefix("test ")
            .and_then(|rest| rest.split_once(" ... "))
        else {
            return;
        };
        let passed = match result.trim_end() {
            "ok" => true,
            "FAILED" => false,
            _ => return,
        };
        let entry = self.runs.entry(name.to_string()).or_default();
        entry.0 += u32::from(passed);
        entry.1 += 1;
    }

    /// The table: a row per runtime of the matrix, `passed/runs` per way; then each other
    /// test that failed at least once.
    pub fn table(&self) -> String {
        let mut rows: BTreeMap<&str, [Option<(u32, u32)>; 3]> = BTreeMap::new();
        let mut others = Vec::new();
        for (name, &counts) in &self.runs {
            let cell = name
                .strip_prefix("runtimes::matrix::")
                .and_then(|rest| rest.split_once("::"))
                .and_then(|(way, runtime)| Some((WAYS.iter().position(|w| *w == way)?, runtime)));
            match cell {
                Some((way, runtime)) => rows.entry(runtime).or_default()[way] = Some(counts),
                None if counts.0 < counts.1 => others.push((name, counts)),
                None => {}
            }
        }
        let mut out = format!("{:<20}", "runtime");
        for way in WAYS {
            out += &format!(" {way:>10}");
        }
        out.push('\n');
        for (runtime, cells) in rows {
            out += &format!("{runtime:<20}");
            for cell in cells {
                let shown =
                    cell.map_or("-".to_string(), |(passed, runs)| format!("{passed}/{runs}"));
                out += &format!(" {shown:>10}");
            }
            out.push('\n');
        }
        let passed = self.runs.values().filter(|(p, r)| p == r).count();
        out += &format!(
            "{passed} of {} runtime tests passed every run\n",
            self.runs.len()
        );
        for (name, (passed, runs)) in others {
            out += &format!("failed: {name} ({passed}/{runs} passed)\n");
        }
        out
    }

    fn all_passed(&self) -> bool {
        self.runs.values().all(|(passed, runs)| passed == runs)
    }
}

/// Runs the runtime tests `repeat` times with `binary` (their names containing `filter`
/// too, if given) and prints the table; fails when any run of any test failed.
pub fn run(binary: &std::path::Path, filter: Option<&str>, repeat: u32) -> Result<()> {
    let mut results = Results::default();
    for run in 1..=repeat {
        eprintln!("xtask: runtime matrix: run {run} of {repeat}");
        let mut cmd = crate::integration_command(binary, Some(filter.unwrap_or("runtimes::")));
        // A failed test is counted; the next run goes on.
        let _ = cmd.run_watching_stdout(|line| results.line(line));
    }
    eprint!("xtask: runtime matrix:\n{}", results.table());
    if !results.all_passed() {
        bail!("the runtime matrix failed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_of_two_runs() {
        let mut results = Results::default();
        for _ in 0..2 {
            for line in [
                "test runtimes::matrix::by_pid::node_18_bookworm ... ok",
                "test runtimes::matrix::from_start::node_18_bookworm ... ok",
                "test runtimes::matrix::by_pid::ruby_3_3_trixie ... ok",
                "test runtimes::java::jvm_c1_frames_are_named ... ok",
                "test runtimes::python::frames::python_chain_3_8 ... ignored",
                "running 3 tests",
            ] {
                results.line(line);
            }
        }
        results.line("test runtimes::matrix::all_cpus::ruby_3_3_trixie ... FAILED");
        results.line("test runtimes::php::php_chain_debian_8_2 ... FAILED");
        assert_eq!(
            results.table(),
            "runtime                  by_pid from_start   all_cpus\n\
             node_18_bookworm            2/2        2/2          -\n\
             ruby_3_3_trixie             2/2          -        0/1\n\
             4 of 6 runtime tests passed every run\n\
             failed: runtimes::php::php_chain_debian_8_2 (0/1 passed)\n"
        );
        assert!(!results.all_passed());
    }
}
