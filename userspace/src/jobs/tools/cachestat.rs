//! `tracekit cachestat`: page cache hits and misses (bcc's and libbpf-tools' `cachestat`):
//! calls of the kernel functions that mark a page accessed, add a page to the cache, account
//! a page dirtied and dirty a buffer, counted per function in the kernel, and turned into
//! libbpf-tools' `HITS MISSES DIRTIES HITRATIO BUFFERS_MB CACHED_MB` each interval
//! ([`crate::output::pagecache`]). Kernel functions (kprobes, or fentry): each role takes
//! the first of its names this kernel has, as libbpf-tools chooses (`folio_mark_accessed`
//! or `mark_page_accessed`, ...).

use super::{Group, Metric, ToolPlan, Tool};
use crate::{
    Error, Result,
    engine::request::Request,
    jobs::aggregate::AggregateJob,
    output::aggregates::Report,
};

/// Per role (accessed, added, dirtied, buffer dirtied), the functions that play it, newest
/// kernels' first.
pub const ROLES: [(&str, &[&str]); 4] = [
    ("page accessed", &["folio_mark_accessed", "mark_page_accessed"]),
    (
        "page added to the cache",
        &["filemap_add_folio", "add_to_page_cache_lru"],
    ),
    (
        "page dirtied",
        &["folio_account_dirtied", "account_page_dirtied", "__folio_mark_dirty"],
    ),
    ("buffer dirtied", &["mark_buffer_dirty"]),
];

/// `tracekit cachestat`.
pub const TOOL: Tool = Tool {
    name: "cachestat",
    summary: "Page cache hits, misses and dirties per interval (bcc cachestat)",
    examples: "  tracekit cachestat -i 1            # each second, as bcc's cachestat 1
  tracekit cachestat -d 10           # one line for ten seconds
  tracekit cachestat -- tar cf /dev/null /usr   # while one command runs (its own calls)
  tracekit cachestat --json -i 1     # the four functions' counts, each second

HITS, MISSES and DIRTIES are derived from the counts as libbpf-tools derives them: accesses
(folio_mark_accessed) less buffers dirtied (mark_buffer_dirty) are the total, pages added to
the cache (filemap_add_folio) less pages dirtied (folio_account_dirtied) the misses, the
rest hits. --json gives the counts per function.",
    flags: &[],
    groups: &[Group::Probing],
    plan: |values| {
        let functions = pick(&super::fsdist::kernel_symbols())?;
        Ok(ToolPlan::Aggregate(AggregateJob {
            command: "cachestat",
            what: Some("page cache accesses ({probes})".into()),
            request: Request {
                by_event: true,
                maps: values.maps,
                target: values.target,
                ..Request::probe(format!("kprobe:{}", functions.join(",")))
            },
            report: Report::PageCache { functions },
            tool_filter: false,
        }))
    },
    metric: Some(Metric {
        name: "page_cache_operations",
        help: "Page cache accesses, additions and dirtyings (cachestat's kernel functions).",
        labels: &[],
        by: &["function"],
        unit: None,
        buckets: None,
    }),
};

/// Each role's first function in `symbols` (`None`: not checked, the newest names).
///
/// # Errors
/// A runtime error naming a role none of whose functions the kernel has.
pub fn pick(symbols: &Option<std::collections::HashSet<String>>) -> Result<[String; 4]> {
    let mut out: [String; 4] = Default::default();
    for (slot, (role, names)) in out.iter_mut().zip(ROLES) {
        let found = match symbols {
            Some(symbols) => names.iter().find(|n| symbols.contains(**n)),
            None => names.first(),
        };
        *slot = found
            .ok_or_else(|| {
                Error::runtime(format!(
                    "cachestat: this kernel has none of {} ({role})",
                    names.join(", ")
                ))
            })?
            .to_string();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_role_takes_the_first_name_the_kernel_has() {
        let symbols: std::collections::HashSet<String> = [
            "mark_page_accessed",
            "folio_mark_accessed",
            "add_to_page_cache_lru",
            "__folio_mark_dirty",
            "mark_buffer_dirty",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        assert_eq!(
            pick(&Some(symbols.clone())).unwrap(),
            [
                "folio_mark_accessed",
                "add_to_page_cache_lru",
                "__folio_mark_dirty",
                "mark_buffer_dirty"
            ]
        );
        let mut without = symbols;
        without.remove("mark_buffer_dirty");
        let err = pick(&Some(without)).unwrap_err().to_string();
        assert_eq!(
            err,
            "cachestat: this kernel has none of mark_buffer_dirty (buffer dirtied)"
        );
    }
}
