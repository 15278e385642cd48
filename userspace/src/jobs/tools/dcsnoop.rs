//! `tracekit dcsnoop`: each failed directory-entry cache lookup (bcc's and libbpf-tools'
//! `dcsnoop` without `-a`): a return probe on the kernel function `d_lookup(parent,
//! name)` that returned NULL (a miss), its entry's name saved per thread through BTF
//! (`str(name->name)`, the `struct qstr`'s string). Kernel functions: kprobes or fentry.

use super::{Column, EventsJob, Group, NAME, Plan, Tool};
use crate::Result;

/// The probe: `d_lookup`'s return.
pub const PROBE: &str = "kretprobe:d_lookup";

/// The columns: libbpf-tools' `TIME(s) PID TID COMM T FILE` (TIME(s) always shown; T is
/// `M`, a miss).
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
  tracekit dcsnoop --json -- make

A miss is d_lookup() returning NULL: the name is not in the dentry cache (a file about to
be created, a name that does not exist, or one not read from disk yet). Path walks that
miss in the RCU walk go through d_alloc_parallel(), not d_lookup(), on recent kernels, as
in libbpf-tools. FILE is the last component looked up (32 bytes at most). bcc's -a (every
lookup, T=R) is not done. Needs kernel functions (kprobes or fentry).",
    flags: &[NAME],
    groups: &[Group::Probing],
    plan: |values| dcsnoop(values).map(Plan::Events),
    metric: None,
};

fn dcsnoop(values: &super::FlagValues) -> Result<EventsJob> {
    let mut job = EventsJob::new(PROBE, &COLUMNS).with_flags(vec!["retval == 0".into()], values)?;
    job.request.target = values.target;
    job.time = super::EventTime::Relative;
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
    }
}
