//! `tracekit mdflush`: each flush request an md (software RAID) array receives (bcc's,
//! bpftrace's and libbpf-tools' `mdflush`): calls of `md_flush_request(mddev, bio)`
//! (drivers/md/md.c, in the md-mod module), which every md personality (raid0, raid1,
//! raid10, raid456, linear) calls for a bio with `REQ_PREFLUSH` (an `fsync`, a filesystem's
//! journal commit), with the submitting task and the array's device
//! (`bio->bi_bdev->bd_dev`, or before 5.12 `bio->bi_disk->part0.__dev.devt`, chosen by the
//! kernel's BTF; named from /sys/dev/block, where bcc reads `disk_name`). A
//! kernel function: kprobe or fentry, whichever the kernel has; the md-mod module must be
//! loaded (it is while an array exists).

use super::{Column, EventTime, EventsJob, Group, NAME, Tool, ToolPlan};
use crate::{Error, Result, probe::btf_path};

/// The function probed.
pub const FUNCTION: &str = "md_flush_request";

/// The columns: libbpf-tools' `TIME PID COMM DEVICE` (TIME is [`EventTime::Clock`]).
pub const COLUMNS: &[Column] = &[
    Column {
        header: "PID",
        field: "pid",
    },
    Column {
        header: "COMM",
        field: "comm",
    },
    Column {
        header: "DEVICE",
        // The bio's device, named at print time (`disk_name` is a char array, which the
        // kernel side reads only through a pointer). `struct bio` is in vmlinux's BTF,
        // md_flush_request's prototype only in md-mod's, so the argument is cast.
        field: "disk((struct bio *)arg1->bi_bdev->bd_dev)",
    },
];

/// `tracekit mdflush`.
pub const TOOL: Tool = Tool {
    name: "mdflush",
    summary: "Print each flush request to an md (software RAID) array (bcc mdflush)",
    examples: "  tracekit mdflush                   # every md flush until Ctrl-C
  tracekit mdflush -n jbd2/md0-8     # flushes of one filesystem's journal thread
  tracekit mdflush --json -- ./db-bench

Each line is one call of md_flush_request: a bio with REQ_PREFLUSH reaching an md array
(an fsync of a file or of the device, a journal commit), with the task that submitted it.
Needs the md-mod module loaded (any md array does that) and kprobes or fentry.",
    flags: &[NAME],
    groups: &[Group::Probing],
    plan: |values| {
        loaded(&std::fs::read_to_string("/proc/kallsyms").unwrap_or_default())?;
        let device = device_field(btf_path::kernel_btf());
        let columns: Vec<Column> = COLUMNS
            .iter()
            .map(|column| match column.header {
                "DEVICE" => Column {
                    field: device,
                    ..*column
                },
                _ => *column,
            })
            .collect();
        let mut job = EventsJob::new(&format!("kprobe:{FUNCTION}"), &columns);
        job.request.filter = values.comm_filter()?;
        job.request.target = values.target;
        job.request.maps = values.maps;
        // libbpf-tools' mdflush always prints the time.
        job.time = EventTime::Clock;
        Ok(ToolPlan::Events(job))
    },
    metric: None,
};

/// The DEVICE column's field in `btf`: the bio's `bi_bdev->bd_dev` (5.12 on), else 5.10's
/// `bi_disk->part0.__dev.devt` (the whole disk's device: an md array has no partitions).
/// Without BTF, the newer one (loading it says what is missing).
pub fn device_field(btf: Option<&btf_path::Btf>) -> &'static str {
    const OLD: &str = "disk((struct bio *)arg1->bi_disk->part0.__dev.devt)";
    let Some(btf) = btf else {
        return COLUMNS[2].field;
    };
    let bdev = [
        btf_path::Step::Arrow("bi_bdev".into()),
        btf_path::Step::Arrow("bd_dev".into()),
    ];
    let disk = [
        btf_path::Step::Arrow("bi_disk".into()),
        btf_path::Step::Arrow("part0".into()),
        btf_path::Step::Dot("__dev".into()),
        btf_path::Step::Dot("devt".into()),
    ];
    if btf_path::resolve(btf, "bio", &bdev).is_err() && btf_path::resolve(btf, "bio", &disk).is_ok()
    {
        OLD
    } else {
        COLUMNS[2].field
    }
}

/// Whether `kallsyms` (the text of /proc/kallsyms) has [`FUNCTION`].
///
/// # Errors
/// A runtime error naming the function and the module when it does not: without md-mod
/// (no md array on the machine) there is nothing to probe.
pub fn loaded(kallsyms: &str) -> Result<()> {
    if kallsyms
        .lines()
        .any(|line| line.split_whitespace().nth(2) == Some(FUNCTION))
    {
        return Ok(());
    }
    Err(Error::runtime(format!(
        "mdflush: no kernel function {FUNCTION}: the md-mod module is not loaded (no md \
         array on this machine); nothing was attached"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::tools::FlagValues;

    #[test]
    fn mdflush_needs_md_mod() {
        assert!(loaded("ffffffffc02ae720 T md_flush_request\t[md_mod]\n").is_ok());
        let err = loaded("ffffffffc02ae720 T md_flush_request_x\t[x]\n").unwrap_err();
        assert_eq!(err.exit_code(), 1);
        assert_eq!(
            err.to_string(),
            "mdflush: no kernel function md_flush_request: the md-mod module is not loaded \
             (no md array on this machine); nothing was attached"
        );
    }

    #[test]
    fn mdflush_prints_each_flush_with_the_arrays_name() {
        let job = match (TOOL.plan)(&FlagValues::defaults(&TOOL)) {
            Ok(ToolPlan::Events(job)) => job,
            Ok(_) => panic!("mdflush prints events"),
            Err(err) => {
                eprintln!("skipped: {err}");
                return;
            }
        };
        assert_eq!(job.request.probes, ["kprobe:md_flush_request"]);
        assert_eq!(job.time, EventTime::Clock);
        let headers: Vec<&str> = job.columns.iter().map(|c| c.header).collect();
        assert_eq!(headers, ["PID", "COMM", "DEVICE"]);
        // This kernel (5.12 on) has bi_bdev.
        assert_eq!(job.columns[2].field, COLUMNS[2].field);
        let compiled = match crate::engine::compile::compile_in(
            &job.request,
            &crate::engine::compile::Events::test_6_18(),
        ) {
            Ok(compiled) => compiled,
            Err(err) => {
                eprintln!("skipped: {err}");
                return;
            }
        };
        let listing = compiled.listing();
        assert!(
            listing.starts_with("Main KernelFunctions { functions: [\"md_flush_request\"], ret: false"),
            "{listing}"
        );
        assert!(listing.contains("agg: trace"), "{listing}");
    }
}
