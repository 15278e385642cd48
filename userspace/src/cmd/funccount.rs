//! `tracekit funccount`: calls of kernel or user functions counted per function (bcc
//! `funccount`), through kprobes/fentry or uprobes.

use tracekit::{Error, Result, probe::ProbeSpec};

use crate::{
    cli::{FunccountArgs, SyscountBy},
    cmd::{
        agg::{self, Job, Report},
        compile::{self, Request},
    },
};

/// The probe spec for a function pattern: explicit specs (`k:FUNC`, `u:BIN:FUNC`) as they
/// are; `BINARY:FUNC` a user function; anything else a kernel function. `ret` asks for the
/// return probe.
pub fn function_probe(pattern: &str, ret: bool) -> Result<String> {
    let explicit = pattern.split_once(':').is_some_and(|(head, _)| {
        tracekit::probe::KINDS
            .iter()
            .any(|(_, n)| n.contains(&head))
    });
    if explicit {
        ProbeSpec::parse(pattern)?;
        return Ok(pattern.to_string());
    }
    Ok(match (pattern.contains(':'), ret) {
        (true, false) => format!("uprobe:{pattern}"),
        (true, true) => format!("uretprobe:{pattern}"),
        (false, false) => format!("kprobe:{pattern}"),
        (false, true) => format!("kretprobe:{pattern}"),
    })
}

/// Runs `tracekit funccount`.
pub fn run(args: FunccountArgs, verbose: u8) -> Result<()> {
    let probes = args
        .patterns
        .iter()
        .map(|p| function_probe(p, false))
        .collect::<Result<Vec<_>>>()?;
    // Several kernel patterns become one comma-separated spec: one engine, one key space.
    let probe = match probes.as_slice() {
        [one] => one.clone(),
        many if many.iter().all(|p| p.starts_with("kprobe:")) => format!(
            "kprobe:{}",
            many.iter()
                .map(|p| p.trim_start_matches("kprobe:"))
                .collect::<Vec<_>>()
                .join(",")
        ),
        _ => {
            return Err(Error::usage(
                "funccount: give several kernel patterns, or one user pattern (BINARY:FUNC*)",
            ));
        }
    };
    let by: Vec<String> = match args.by {
        Some(SyscountBy::Comm) => vec!["comm".into()],
        Some(SyscountBy::Pid) => vec!["pid".into()],
        None => Vec::new(),
    };
    let request = Request::count(&by, None);
    let compiled = compile::compile(
        &[probe],
        &request,
        true,
        &args.maps,
        args.target.target(&args.scope)?,
    )?;
    let job = Job {
        tool_filter: false,
        command: "funccount",
        what: compiled.what,
        specs: compiled.specs,
        columns: compiled.columns,
        report: Report::Counts {
            sum: None,
            top: args.top,
        },
    };
    agg::run(job, &args.scope, &args.timing, &args.output, verbose)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_to_probes() {
        assert_eq!(function_probe("vfs_*", false).unwrap(), "kprobe:vfs_*");
        assert_eq!(
            function_probe("vfs_read", true).unwrap(),
            "kretprobe:vfs_read"
        );
        assert_eq!(
            function_probe("libc:malloc", false).unwrap(),
            "uprobe:libc:malloc"
        );
        assert_eq!(
            function_probe("/bin/app:f", true).unwrap(),
            "uretprobe:/bin/app:f"
        );
        assert_eq!(function_probe("f:vfs_read", false).unwrap(), "f:vfs_read");
        assert_eq!(function_probe("u:libc:free", false).unwrap(), "u:libc:free");
    }
}
