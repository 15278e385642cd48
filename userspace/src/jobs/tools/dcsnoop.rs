//! `tracekit dcsnoop`: each failed directory-entry cache lookup (bcc's `dcsnoop`): a
//! return probe on the kernel function `d_lookup(parent, name)` that returned NULL (a
//! miss), its entry's name saved per thread through BTF (`str(name->name)`, the `struct
//! qstr`'s string). With `--all-lookups` (bcc's `-a`), also each path-walk lookup: the
//! entry of `lookup_fast(nd)`, the component being looked up (`str(nd->last.name)`),
//! printed as bcc prints it with T `R` (a reference), in the same columns from a second
//! request ([`EventsJob::parts`]). Kernel functions: kprobes or fentry.

use super::{Column, EventsJob, Flag, Group, NAME, ToolPlan, Tool};
use crate::Result;

/// The probe: `d_lookup`'s return.
pub const PROBE: &str = "kretprobe:d_lookup";

/// `--all-lookups`' probe: `lookup_fast`'s entry (a static function of fs/namei.c, traced
/// by bcc's `-a` too; both Debian kernels of the VM matrix and 6.18 have it in BTF).
pub const LOOKUP_PROBE: &str = "kprobe:lookup_fast";

/// `--all-lookups`' columns: [`COLUMNS`] with T `R` and the name `lookup_fast` is looking
/// up (`nd->last`, a `struct qstr`).
pub const LOOKUP_COLUMNS: [Column; 5] = [
    COLUMNS[0],
    COLUMNS[1],
    COLUMNS[2],
    Column {
        header: "T",
        field: "lit(R)",
    },
    Column {
        header: "FILE",
        field: "str(nd->last.name)",
    },
];

/// The columns: bcc's `TIME(s) PID TID COMM T FILE` (TIME(s) always shown; T is `M`, a
/// miss).
pub const COLUMNS: [Column; 5] = [
    Column {
        header: "PID",
        field: "pid",
    },
    Column {
        header: "TID",
        field: "tid",
    },
    Column {
        header: "COMM",
        field: "comm",
    },
    Column {
        header: "T",
        field: "lit(M)",
    },
    Column {
        header: "FILE",
        field: "start.str(name->name)",
    },
];

/// `tracekit dcsnoop`.
pub const TOOL: Tool = Tool {
    name: "dcsnoop",
    summary: "Print each failed dentry cache lookup with its name (bcc dcsnoop)",
    examples: "  tracekit dcsnoop                    # every d_lookup miss until Ctrl-C
  tracekit dcsnoop -p 1234
  tracekit dcsnoop --all-lookups -p 1234  # every lookup (T R), and the misses (T M)
  tracekit dcsnoop --json -- make

A miss is d_lookup() returning NULL: the name is not in the dentry cache (a file about to
be created, a name that does not exist, or one not read from disk yet). Path walks that
miss in the RCU walk go through d_alloc_parallel(), not d_lookup(), on recent kernels, as
in bcc. FILE is the last component looked up (whole). --all-lookups is bcc's
-a (-a is --all-cpus here): each lookup_fast() call too, T R (a reference: the path walk
looking FILE up in the dentry cache, found or not). The two kinds of rows come from two
ring buffers, merged in time order. Needs
kernel functions (kprobes or fentry).",
    flags: &[
        Flag::switch(
            "all-lookups",
            "Every path-walk lookup too, T R (bcc dcsnoop -a; -a is --all-cpus here)",
        ),
        NAME,
    ],
    groups: &[Group::Probing],
    plan: |values| dcsnoop(values).map(ToolPlan::Events),
    metric: None,
};

fn dcsnoop(values: &super::FlagValues) -> Result<EventsJob> {
    let mut job = EventsJob::new(PROBE, &COLUMNS).with_flags(vec!["retval == 0".into()], values)?;
    job.request.target = values.target;
    job.time = super::EventTime::Relative;
    if values.switch("all-lookups") {
        let mut lookups =
            EventsJob::new(LOOKUP_PROBE, &LOOKUP_COLUMNS).with_flags(Vec::new(), values)?;
        lookups.request.target = values.target;
        job.parts.push(super::EventsPart {
            request: lookups.request,
            columns: LOOKUP_COLUMNS.to_vec(),
            optional: None,
        });
    }
    Ok(job)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::tools::FlagValues;

    #[test]
    fn dcsnoop_saves_the_name_and_keeps_the_misses() {
        let job = dcsnoop(&FlagValues::defaults(&TOOL)).unwrap();
        assert_eq!(job.request.probes, [PROBE]);
        assert_eq!(job.request.print, ["start.str(name->name)"]);
        assert_eq!(job.request.filter.as_deref(), Some("retval == 0"));
        let Ok(compiled) = crate::engine::compile::compile_in(
            &job.request,
            &crate::engine::compile::Events::test_6_18(),
        ) else {
            eprintln!("skipped: this kernel has no d_lookup BTF");
            return;
        };
        let listing = compiled.listing();
        for line in [
            "operands: #0 tid #1 path_str(arg1)[1]:32\ncorr: #0 | key: - | saves: #1->0 #1->1 #1->2 #1->3",
            "Main KernelFunctions { functions: [\"d_lookup\"], ret: true",
        ] {
            assert!(listing.contains(line), "{line}\n{listing}");
        }
        assert!(job.parts.is_empty());
    }

    /// `--all-lookups` adds `lookup_fast`'s entries, under the same headers, T `R`, the
    /// name read from `nd->last` at the entry (no start stage); the misses stay as they are.
    #[test]
    fn dcsnoop_all_lookups_adds_lookup_fast_entries() {
        let mut values = FlagValues::defaults(&TOOL);
        values.set("all-lookups", crate::jobs::tools::Value::Switch(true));
        values.set("name", crate::jobs::tools::Value::Text("tk".into()));
        let job = dcsnoop(&values).unwrap();
        assert_eq!(job.request.probes, [PROBE]);
        let [super::super::EventsPart {
            request: lookups,
            columns,
            ..
        }] = &job.parts[..]
        else {
            panic!("one more request: {:?}", job.parts);
        };
        assert_eq!(lookups.probes, [LOOKUP_PROBE]);
        assert_eq!(lookups.print, ["str(nd->last.name)"]);
        assert!(lookups.start.is_none());
        // -n applies to both; the miss filter to d_lookup alone.
        let comm = values.comm_filter().unwrap().unwrap();
        assert_eq!(lookups.filter.as_deref(), Some(comm.as_str()));
        assert_eq!(
            job.request.filter.as_deref(),
            Some(format!("retval == 0 && {comm}").as_str())
        );
        let headers = |c: &[Column]| c.iter().map(|c| c.header).collect::<Vec<_>>();
        assert_eq!(headers(columns), headers(&job.columns));
        assert_eq!(columns[3].field, "lit(R)");
        let Ok(compiled) = crate::engine::compile::compile_in(
            lookups,
            &crate::engine::compile::Events::test_6_18(),
        ) else {
            eprintln!("skipped: this kernel has no lookup_fast BTF");
            return;
        };
        let listing = compiled.listing();
        assert!(
            listing.contains("Main KernelFunctions { functions: [\"lookup_fast\"], ret: false"),
            "{listing}"
        );
    }
}
