//! Whole outputs of the stack commands (`profile`, `stackcount`, `offcpu`) from a recorded,
//! symbolized profile, through the job's writer and the end-of-run summaries, against
//! golden files in `userspace/tests/golden/stacks/`.

use std::collections::HashMap;

use super::*;
use crate::{
    output::golden::Transcript,
    profile::Stats,
    stacks::{Frame, FrameKind, Stack},
};

fn frame(symbol: &str, module: &str, kind: FrameKind) -> Frame {
    Frame {
        address: None,
        symbol: symbol.into(),
        module: Some(module.into()),
        kind,
        inlined: false,
        jit: false,
    }
}

fn user(symbol: &str) -> Frame {
    frame(symbol, "/usr/bin/tk_burner", FrameKind::User)
}

fn kernel(symbol: &str) -> Frame {
    frame(symbol, "[kernel.kallsyms]", FrameKind::Kernel)
}

fn stack(pid: u32, comm: &str, frames: Vec<Frame>, count: u64) -> Stack {
    Stack {
        pid,
        comm: comm.into(),
        cgroup: None,
        frames,
        count,
        time_slice: None,
    }
}

/// A recorded CPU profile: a burner's two hot leaves, one syscall into the kernel.
fn recorded(stats: Stats) -> Profile {
    Profile {
        stacks: vec![
            stack(
                4242,
                "tk_burner",
                vec![user("main"), user("work"), user("leaf")],
                75,
            ),
            stack(4242, "tk_burner", vec![user("main"), user("spin")], 20),
            stack(
                77,
                "sshd",
                vec![
                    user("main"),
                    kernel("entry_SYSCALL_64"),
                    kernel("do_syscall_64"),
                ],
                5,
            ),
        ],
        stats,
        unwalked: 0,
        broken: Vec::new(),
    }
}

fn header<'a>(tool: &'a str, cgroups: &'a HashMap<u32, String>) -> Header<'a> {
    Header {
        hz: Some(99),
        elapsed: Duration::from_secs(2),
        cpus: 2,
        cgroups: Some(cgroups),
        ..Header::new(tool, "cpu-clock", "samples", "all processes")
    }
}

fn written(format: Format, profile: &Profile, header: &Header<'_>, top: usize) -> String {
    let mut out = Vec::new();
    write_profile(&mut out, format, profile, None, header, top).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn golden_profile_text_and_folded() {
    let cgroups = HashMap::new();
    let profile = recorded(Stats {
        samples: 100,
        ..Stats::default()
    });
    let header = header("profile", &cgroups);
    Transcript::new("tracekit profile -a -F 99 -d 2 ; -o out.folded")
        .part("stdout", written(Format::Text, &profile, &header, 10))
        .part(
            "stderr",
            output::profile::summary(
                &profile,
                &header,
                "duration reached",
                output::profile::processes(&profile),
                &HashMap::new(),
            ),
        )
        .part("out.folded", written(Format::Folded, &profile, &header, 10))
        .check("stacks/profile.txt");
}

/// Samples lost to full maps, stacks the kernel could not walk, announcements lost: each
/// said; `--top 1` cuts the report.
#[test]
fn golden_profile_lost() {
    let cgroups = HashMap::new();
    let profile = recorded(Stats {
        samples: 100,
        count_map_full: 6,
        stack_map_full: 3,
        kernel_stack_errors: 2,
        user_stack_errors: 1,
        events_lost: 4,
    });
    let header = header("profile", &cgroups);
    Transcript::new("tracekit profile -a -F 99 -d 2 --top 1  (maps full)")
        .part("stdout", written(Format::Text, &profile, &header, 1))
        .part(
            "stderr",
            output::profile::summary(
                &profile,
                &header,
                "duration reached",
                output::profile::processes(&profile),
                &HashMap::new(),
            ),
        )
        .check("stacks/profile_lost.txt");
}

/// Nothing sampled (an idle machine, `-p` of a sleeping process).
#[test]
fn golden_profile_empty() {
    let cgroups = HashMap::new();
    let profile = Profile::default();
    let header = header("profile", &cgroups);
    Transcript::new("tracekit profile -a -d 2  (nothing sampled)")
        .part("stdout", written(Format::Text, &profile, &header, 10))
        .part(
            "stderr",
            output::profile::summary(&profile, &header, "duration reached", 0, &HashMap::new()),
        )
        .part("out.folded", written(Format::Folded, &profile, &header, 10))
        .check("stacks/profile_empty.txt");
}

/// offcpu's report: the heaviest stacks, in microseconds blocked.
#[test]
fn golden_offcpu_text() {
    let cgroups = HashMap::new();
    // Counts are microseconds blocked.
    let mut profile = recorded(Stats::default());
    for stack in &mut profile.stacks {
        stack.count *= 12_345;
    }
    let header = Header {
        hz: None,
        ..Header::new("offcpu", "sched:sched_switch", "us", "all processes")
    };
    let header = Header {
        elapsed: Duration::from_secs(2),
        cpus: 2,
        cgroups: Some(&cgroups),
        ..header
    };
    Transcript::new("tracekit offcpu -a -d 2")
        .part("stdout", written(Format::Text, &profile, &header, 10))
        .part("out.folded", written(Format::Folded, &profile, &header, 10))
        .check("stacks/offcpu.txt");
}

/// Each `-o FILE` names its format by extension; an unknown one is a usage error.
#[test]
fn output_formats_by_extension() {
    let options = RunOptions {
        scope: crate::session::Scope::All,
        duration: None,
        interval: None,
        output: Some("a.folded".into()),
        more_outputs: vec!["b.svg".into(), "c.json".into()],
        json: false,
        verbose: 0,
        debug_info: Default::default(),
    };
    let formats: Vec<Format> = outputs(&options)
        .unwrap()
        .into_iter()
        .map(|(_, f)| f)
        .collect();
    assert_eq!(formats, [Format::Folded, Format::Svg, Format::Json]);
    let bad = RunOptions {
        output: Some("a.xyz".into()),
        more_outputs: Vec::new(),
        ..options
    };
    assert!(matches!(outputs(&bad), Err(crate::Error::Usage(_))));
}

#[test]
fn pid_set_counts_distinct_pids() {
    let mut pids = PidSet::default();
    for pid in [1, 63, 64, 1, 4_194_303, 64, 0] {
        pids.insert(pid);
    }
    assert_eq!(pids.len(), 5);
    assert_eq!(pids.bits.len(), 4_194_304 / 64);
}
