//! Runtimes (interpreters and JITs) found in profiled processes whose frames could not be
//! named: what the run's summary and its JSON say about them, so that a version with no
//! layout is said, not hidden behind native frames.

use serde::{Deserialize, Serialize};

/// A runtime found in profiled processes whose frames stayed native, and why: one per
/// (runtime, version, reason).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RuntimeNotNamed {
    /// The runtime, lower case (`ruby`, `php`, `python`, `node`, `java`).
    pub runtime: String,
    /// Its version as its binary says it (`3.4.1`), when it was read.
    pub version: Option<String>,
    /// The language of its frames, as messages say it (`Ruby`).
    pub language: String,
    /// Why its frames stayed native (`no layout for Ruby 3.4 (known: 3.1, 3.3)`).
    pub reason: String,
    /// The processes, by pid, ascending.
    pub pids: Vec<u32>,
}

/// Most pids a summary line lists; the rest are counted.
const SHOWN_PIDS: usize = 8;

impl RuntimeNotNamed {
    /// Its line in the run's summary:
    /// `ruby 3.4.1 (pid 4242): Ruby frames not named: no layout for Ruby 3.4 (known: 3.1, 3.3)`.
    pub fn line(&self) -> String {
        let version = self
            .version
            .as_deref()
            .map(|version| format!(" {version}"))
            .unwrap_or_default();
        let shown: Vec<String> = self
            .pids
            .iter()
            .take(SHOWN_PIDS)
            .map(u32::to_string)
            .collect();
        let more = self.pids.len().saturating_sub(SHOWN_PIDS);
        let pids = match (self.pids.len(), more) {
            (1, _) => format!("pid {}", shown.join(", ")),
            (_, 0) => format!("pids {}", shown.join(", ")),
            _ => format!("pids {} and {more} more", shown.join(", ")),
        };
        format!(
            "{}{version} ({pids}): {} frames not named: {}",
            self.runtime, self.language, self.reason
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn not_named(version: Option<&str>, pids: Vec<u32>) -> RuntimeNotNamed {
        RuntimeNotNamed {
            runtime: "ruby".into(),
            version: version.map(str::to_string),
            language: "Ruby".into(),
            reason: "no layout for Ruby 3.4 (known: 3.1, 3.3)".into(),
            pids,
        }
    }

    #[test]
    fn summary_lines() {
        assert_eq!(
            not_named(Some("3.4.1"), vec![4242]).line(),
            "ruby 3.4.1 (pid 4242): Ruby frames not named: no layout for Ruby 3.4 (known: 3.1, 3.3)"
        );
        assert_eq!(
            not_named(None, vec![1, 2]).line(),
            "ruby (pids 1, 2): Ruby frames not named: no layout for Ruby 3.4 (known: 3.1, 3.3)"
        );
        let line = not_named(Some("3.4.1"), (1..=10).collect()).line();
        assert!(
            line.starts_with("ruby 3.4.1 (pids 1, 2, 3, 4, 5, 6, 7, 8 and 2 more): "),
            "{line}"
        );
    }
}
