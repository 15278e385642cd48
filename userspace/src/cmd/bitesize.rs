//! `tracekit bitesize`: block I/O size histograms per process, as perf-tools' and bcc's
//! `bitesize`: a preset of `hist block:block_rq_issue --value bytes --by comm`.

use tracekit::{Error, Result, probe::Tracepoint};

use crate::{
    cli::BitesizeArgs,
    cmd::{
        agg::{self, Job, Report},
        compile::{self, Request, Shape},
    },
};

/// `block:block_rq_issue` (include/trace/events/block.h): a request goes to the device.
pub fn block_rq(event: &str) -> Tracepoint {
    Tracepoint {
        system: "block".into(),
        event: event.into(),
    }
}

/// The `dev` value the block tracepoints record for disk `name` (`dev_t`: major << 20 |
/// minor), from `/sys/block/NAME/dev`.
pub fn disk_dev(name: &str) -> Result<u64> {
    let path = format!("/sys/block/{name}/dev");
    let text = std::fs::read_to_string(&path).map_err(|_| {
        let mut disks: Vec<String> = std::fs::read_dir("/sys/block")
            .map(|dir| {
                dir.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        disks.sort();
        Error::usage(format!(
            "--disk {name}: no such disk; disks here: {}",
            disks.join(", ")
        ))
    })?;
    let (major, minor) = text
        .trim()
        .split_once(':')
        .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
        .ok_or_else(|| Error::runtime(format!("{path}: unexpected contents {text:?}")))?;
    Ok(major << 20 | minor)
}

/// Runs `tracekit bitesize`.
pub fn run(args: BitesizeArgs, verbose: u8) -> Result<()> {
    let filter = args
        .disk
        .as_deref()
        .map(|disk| disk_dev(disk).map(|dev| format!("dev == {dev}")))
        .transpose()?;
    let by = ["comm".to_string()];
    let request = Request {
        value: Some("bytes"),
        shape: Shape::Log2,
        ..Request::count(&by, filter.as_deref())
    };
    let tracepoints = [block_rq("block_rq_issue")];
    let (specs, columns) = compile::specs(&tracepoints, &request, false, &args.maps)?;
    let job = Job {
        tool_filter: false,
        command: "bitesize",
        what: "block I/O sizes".into(),
        specs,
        columns,
        report: Report::Log2 {
            unit: "bytes".into(),
        },
    };
    agg::run(job, &args.scope, &args.timing, &args.output, verbose)
}
