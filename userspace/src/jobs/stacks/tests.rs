//! Whole outputs of the stack commands (`profile`, `stackcount`, `offcpu`) from a recorded,
//! symbolized profile, through the job's writer and the end-of-run summaries, against
//! golden files in `userspace/tests/golden/stacks/`.

use std::collections::HashMap;

use super::*;
use crate::{
    jobs::source::ReplaySamples,
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

/// Functions of this test binary, sampled in the recording below: the real symbolizer names
/// them from this process's own binary, as it names a traced process's.
#[inline(never)]
fn burn_leaf(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(31).rotate_left(7))
}

#[inline(never)]
fn burn_spin(x: u64) -> u64 {
    std::hint::black_box(x ^ 0x5555).wrapping_add(burn_leaf(x))
}

#[inline(never)]
fn burn_main(x: u64) -> u64 {
    burn_spin(std::hint::black_box(x)).wrapping_add(3)
}

/// A sampled stack: its functions, leaf first, and how many samples it took.
type SampledStack<'a> = (&'a [fn(u64) -> u64], u64);

/// The CPU sampler's maps after a run of this process (as `tk_burner`): `stacks` (leaf
/// first, each address inside its function) with their counts, and the kernel's counters.
fn sampled(stacks: &[SampledStack<'_>], stats: Stats) -> RawProfile {
    let mut raw = RawProfile {
        stats,
        ..RawProfile::default()
    };
    let mut comm = [0u8; 16];
    comm[..9].copy_from_slice(b"tk_burner");
    for (i, (frames, count)) in stacks.iter().enumerate() {
        let hash = 0x1000 + i as u64;
        let ips = frames.iter().map(|&f| f as usize as u64 + 1).collect();
        raw.stacks.insert(hash, ips);
        let key = SampleKey {
            pid: std::process::id(),
            generation: 0,
            kernel_stack: STACK_NONE,
            user_stack: hash,
            cgroup: 0,
            comm,
            time_slice: 0,
            padding: 0,
        };
        raw.counts.insert(key, *count);
    }
    raw
}

/// A whole `profile` run over recorded samples: the collector attaches the source, the
/// session ends by its duration, and the run's end reads, symbolizes and writes the
/// report, then the summary; what it printed on stdout and stderr.
fn profile_run(raw: RawProfile) -> (String, String) {
    let labels = Labels {
        tool: "profile",
        event: "cpu-clock".into(),
        unit: "samples",
        banner: String::new(),
    };
    let report = ReportOptions {
        top: 10,
        inlined: false,
        lines: false,
        inverted: false,
    };
    let options = RunOptions {
        scope: crate::session::Scope::All,
        duration: Some(Duration::from_secs(2)),
        interval: None,
        output: None,
        more_outputs: Vec::new(),
        json: false,
        verbose: 0,
        debug_info: Default::default(),
    };
    let mut collector = StackCollector {
        source: Source::Sampler(Box::new(ReplaySamples::new(vec![raw]))),
        time_slice_ns: None,
        labels: &labels,
        report,
        symbolizer: Symbolizer::with_options(SymbolizerOptions::default()),
        json: false,
        hz: Some(99),
        cpus: 1,
        previous: RawProfile::default(),
        whole: Whole::default(),
        keep_stacks: false,
    };
    collector.attach(&Tracees::default()).unwrap();
    collector.detach().unwrap();
    let finished = session::Finished {
        stop: session::Stop::Duration,
        elapsed: Duration::from_secs(2),
        scope: crate::session::Scope::All,
        scope_text: "all processes".into(),
        workload_exit: None,
        attached_after: Duration::ZERO,
    };
    let mut stdout = Vec::new();
    let ending = finish(&mut collector, &finished, &[], &options, &mut stdout).unwrap();
    (
        String::from_utf8(stdout).unwrap(),
        ending.summary + &ending.after,
    )
}

/// `profile -a` from the sampler's maps to the report: stacks symbolized by the real
/// symbolizer, ranked by leaf, and the summary with what the kernel lost.
#[test]
fn golden_profile_run_from_recorded_samples() {
    let leaf: &[fn(u64) -> u64] = &[burn_leaf, burn_spin, burn_main];
    let spin: &[fn(u64) -> u64] = &[burn_spin, burn_main];
    let raw = sampled(
        &[(leaf, 75), (spin, 25)],
        Stats {
            samples: 103,
            count_map_full: 3,
            ..Stats::default()
        },
    );
    let (stdout, stderr) = profile_run(raw);
    // The test binary's name carries cargo's 16-digit hash, which changes with the build.
    let binary = std::env::current_exe().unwrap();
    let binary = binary.file_name().unwrap().to_string_lossy();
    let hash = binary.rsplit_once('-').map_or("", |(_, hash)| hash);
    assert_eq!(hash.len(), 16, "{binary}");
    let stdout = stdout.replace(hash, "################");
    Transcript::new("tracekit profile -a -F 99 -d 2  (3 samples lost to a full map)")
        .part("stdout", stdout)
        .part("stderr", stderr)
        .check("stacks/profile_run.txt");
}
