//! `cachestat`'s line: page cache hits, misses and dirties from the counts of four kernel
//! functions, with the buffers and cache sizes of `/proc/meminfo`, in libbpf-tools'
//! `cachestat` columns `HITS MISSES DIRTIES HITRATIO BUFFERS_MB CACHED_MB` and by its rule:
//!
//! - total = accessed (`folio_mark_accessed`) - buffers dirtied (`mark_buffer_dirty`);
//! - misses = added to the cache (`filemap_add_folio`) - dirtied (`folio_account_dirtied`);
//! - hits = total - misses (both first raised to 0; when hits would be negative, misses =
//!   total and hits = 0); HITRATIO = hits / total; DIRTIES = buffers dirtied.

use std::io;

use crate::engine::Group;

/// The counts of one interval, by role.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageCacheCounts {
    /// Calls of the function marking a page accessed.
    pub accessed: u64,
    /// Pages added to the page cache.
    pub added: u64,
    /// Pages dirtied (accounted as dirty).
    pub dirtied: u64,
    /// Buffers dirtied.
    pub buffers_dirtied: u64,
}

/// libbpf-tools' cachestat figures of one interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PageCacheStat {
    /// Accesses that found the page in the cache.
    pub hits: u64,
    /// Accesses that added the page.
    pub misses: u64,
    /// Buffers dirtied.
    pub dirties: u64,
    /// hits / (hits + misses), 0 without accesses.
    pub ratio: f64,
}

impl PageCacheCounts {
    /// The counts of `groups` keyed by kernel function (first key column), whose functions
    /// are `functions` (accessed, added, dirtied, buffers dirtied).
    pub fn of(groups: &[Group], functions: &[String; 4]) -> Self {
        let count = |name: &str| -> u64 {
            groups
                .iter()
                .filter(|g| g.key.first().is_some_and(|k| k.to_string() == name))
                .map(|g| g.count)
                .sum()
        };
        Self {
            accessed: count(&functions[0]),
            added: count(&functions[1]),
            dirtied: count(&functions[2]),
            buffers_dirtied: count(&functions[3]),
        }
    }

    /// The figures, by libbpf-tools' rule.
    pub fn stat(&self) -> PageCacheStat {
        let total = (self.accessed as i64 - self.buffers_dirtied as i64).max(0);
        let mut misses = (self.added as i64 - self.dirtied as i64).max(0);
        let mut hits = total - misses;
        if hits < 0 {
            misses = total;
            hits = 0;
        }
        PageCacheStat {
            hits: hits as u64,
            misses: misses as u64,
            dirties: self.buffers_dirtied,
            ratio: if total > 0 {
                hits as f64 / total as f64
            } else {
                0.0
            },
        }
    }
}

/// `Buffers` and `Cached` of `/proc/meminfo`, in MiB (0 when unreadable).
pub fn meminfo_mb() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let kb = |name: &str| -> u64 {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (kb("Buffers") / 1024, kb("Cached") / 1024)
}

/// The header and the line, as libbpf-tools prints them (`%8lld %8lld %8llu %7.2f%% %12llu
/// %10llu`).
pub fn write(out: &mut dyn io::Write, stat: &PageCacheStat, mb: (u64, u64)) -> io::Result<()> {
    writeln!(
        out,
        "{:>8} {:>8} {:>8} {:>8} {:>12} {:>10}",
        "HITS", "MISSES", "DIRTIES", "HITRATIO", "BUFFERS_MB", "CACHED_MB"
    )?;
    writeln!(
        out,
        "{:>8} {:>8} {:>8} {:>7.2}% {:>12} {:>10}",
        stat.hits,
        stat.misses,
        stat.dirties,
        100.0 * stat.ratio,
        mb.0,
        mb.1
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libbpf_tools_rule() {
        let all_hits = PageCacheCounts {
            accessed: 256,
            ..Default::default()
        };
        assert_eq!(
            all_hits.stat(),
            PageCacheStat {
                hits: 256,
                misses: 0,
                dirties: 0,
                ratio: 1.0
            }
        );
        let cold = PageCacheCounts {
            accessed: 256,
            added: 256,
            ..Default::default()
        };
        assert_eq!((cold.stat().hits, cold.stat().misses), (0, 256));
        // More added than accessed: every access a miss.
        let readahead = PageCacheCounts {
            accessed: 10,
            added: 40,
            dirtied: 0,
            buffers_dirtied: 2,
        };
        let stat = readahead.stat();
        assert_eq!((stat.hits, stat.misses, stat.dirties), (0, 8, 2));
        let mut out = Vec::new();
        write(&mut out, &all_hits.stat(), (12, 345)).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "    HITS   MISSES  DIRTIES HITRATIO   BUFFERS_MB  CACHED_MB\n     256        0        0  100.00%           12        345\n"
        );
    }
}
