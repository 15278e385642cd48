//! Whole outputs of the stack commands (`profile`, `stackcount`, `offcpu`) from a recorded,
//! symbolized profile, through the job's writer and the end-of-run summaries, against
//! golden files in `userspace/tests/golden/stacks/`.

use std::collections::HashMap;

use tracekit_common::{
    cpu_sampler::{STACK_NONE, SampleKey},
    engine::AggValue,
};

use super::*;
use crate::{
    cpu_sampler::{RawProfile, Stats},
    engine::{Aggregates, EngineStats},
    jobs::source::ReplaySamples,
    output::golden::Transcript,
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
fn recorded(stats: Stats) -> SymbolizedProfile {
    SymbolizedProfile {
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

fn written(format: Format, profile: &SymbolizedProfile, header: &Header<'_>, top: usize) -> String {
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
    let profile = SymbolizedProfile::default();
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
        cgroup: None,
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

/// A whole run of `labels.tool` over `source`: the collector attaches the source, the
/// session ends by its duration, and the run's end reads, symbolizes and writes the
/// report, then the summary; what it printed on stdout and stderr.
fn whole_run(labels: &Labels, hz: Option<u64>, source: ReplaySamples) -> (String, String) {
    let report = ReportOptions {
        top: 10,
        inlined: false,
        lines: false,
        inverted: false,
        folded: false,
    };
    let options = RunOptions {
        scope: crate::session::Scope::All,
        cgroup: None,
        duration: Some(Duration::from_secs(2)),
        interval: None,
        output: None,
        more_outputs: Vec::new(),
        json: false,
        verbose: 0,
        debug_info: Default::default(),
    };
    let mut collector = StackCollector {
        source: Box::new(source),
        time_slice_ns: None,
        labels,
        report,
        symbolizer: Symbolizer::with_options(SymbolizerOptions::default()),
        json: false,
        hz,
        cpus: 1,
        whole: Whole::default(),
        keep: Keep::Counters,
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
    // The test binary's name carries cargo's 16-digit hash, which changes with the build.
    let binary = std::env::current_exe().unwrap();
    let binary = binary.file_name().unwrap().to_string_lossy();
    let hash = binary.rsplit_once('-').map_or("", |(_, hash)| hash);
    assert_eq!(hash.len(), 16, "{binary}");
    (
        String::from_utf8(stdout)
            .unwrap()
            .replace(hash, "################"),
        ending.summary + &ending.after,
    )
}

/// A whole `profile` run over recorded samples.
fn profile_run(raw: RawProfile) -> (String, String) {
    let labels = Labels {
        tool: "profile",
        event: "cpu-clock".into(),
        unit: "samples",
        banner: String::new(),
    };
    whole_run(&labels, Some(99), ReplaySamples::new(vec![raw]))
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
    Transcript::new("tracekit profile -a -F 99 -d 2  (3 samples lost to a full map)")
        .part("stdout", stdout)
        .part("stderr", stderr)
        .check("stacks/profile_run.txt");
}

/// A stack's functions, leaf first.
type Functions<'a> = &'a [fn(u64) -> u64];

/// A stack engine's maps after a run of this process (as `tk_burner`), as the kernel keeps
/// them: cells keyed `[leading words] pid comm ustack` (a comm takes `STR_BYTES`) with
/// `(events, value sum)`,
/// and the stack map holding `stacks` (leaf first).
fn engine_cells(
    leading: &[u64],
    stacks: &[(Functions<'_>, AggValue)],
    stats: EngineStats,
) -> (Aggregates, HashMap<u64, Vec<u64>>) {
    let mut comm = [0u8; tracekit_common::engine::STR_BYTES];
    comm[..9].copy_from_slice(b"tk_burner");
    let comm_words = comm
        .chunks(8)
        .map(|w| u64::from_ne_bytes(w.try_into().unwrap()));
    let mut aggregates = Aggregates {
        stats,
        ..Aggregates::default()
    };
    let mut frames = HashMap::new();
    for (i, (functions, value)) in stacks.iter().enumerate() {
        let id = 0x2000 + i as u64;
        frames.insert(
            id,
            functions.iter().map(|&f| f as usize as u64 + 1).collect(),
        );
        let mut key = leading.to_vec();
        key.push(u64::from(std::process::id()));
        key.extend(comm_words.clone());
        key.push(id);
        aggregates.cells.insert((key, 0), *value);
    }
    (aggregates, frames)
}

/// Stack engines' cells as raw samples: `--by` words in front are skipped, the pid, comm
/// and stack id are read from their places, and offcpu's weight is its time in microseconds.
#[test]
fn stack_layout_reads_engine_cells() {
    let leaf: &[fn(u64) -> u64] = &[burn_leaf, burn_spin, burn_main];
    let value = AggValue {
        count: 4,
        sum: 9_876_543,
    };
    let (aggregates, _) = engine_cells(&[7], &[(leaf, value)], EngineStats::default());
    let layout = |weight| StackLayout {
        leading: 1,
        kernel: false,
        user: true,
        weight,
        waker: false,
    };
    let mut raw = RawProfile::default();
    let ids = layout(Weight::SumMicros).add_to(&mut raw, &aggregates);
    assert_eq!(ids, [STACK_NONE, 0x2000]);
    let (key, us) = raw.counts.iter().next().unwrap();
    assert_eq!(
        (
            key.pid,
            &key.comm[..9],
            key.kernel_stack,
            key.user_stack,
            *us
        ),
        (
            std::process::id(),
            &b"tk_burner"[..],
            STACK_NONE,
            0x2000,
            9876
        )
    );
    let mut raw = RawProfile::default();
    layout(Weight::Count).add_to(&mut raw, &aggregates);
    assert_eq!(raw.counts.values().copied().collect::<Vec<_>>(), [4]);
}

/// A whole run of `tool` (counting `event` in `unit`) from a stack engine's cells: `stacks`
/// with their values, keyed behind `leading` words, read with `weight`.
fn engine_run(
    (tool, event, unit): (&'static str, &str, &'static str),
    leading: &[u64],
    stacks: &[(Functions<'_>, AggValue)],
    stats: EngineStats,
    weight: Weight,
) -> (String, String) {
    let (aggregates, frames) = engine_cells(leading, stacks, stats);
    let layout = StackLayout {
        leading: leading.len(),
        kernel: false,
        user: true,
        weight,
        waker: false,
    };
    let mut raw = RawProfile::default();
    layout.add_to(&mut raw, &aggregates);
    raw.stacks.extend(frames);
    let mut source = ReplaySamples::new(vec![raw]);
    source.engine_stats = Some(aggregates.stats);
    let labels = Labels {
        tool,
        event: event.into(),
        unit,
        banner: String::new(),
    };
    whole_run(&labels, None, source)
}

/// A whole `offcpu` run from its engine's cells: time per stack in microseconds, the
/// summary with the blocks counted and what the kernel could not record.
#[test]
fn golden_offcpu_run_from_engine_cells() {
    let leaf: &[fn(u64) -> u64] = &[burn_leaf, burn_spin, burn_main];
    let spin: &[fn(u64) -> u64] = &[burn_spin, burn_main];
    let (stdout, stderr) = engine_run(
        ("offcpu", "sched:sched_switch", "us"),
        &[],
        &[
            (
                leaf,
                AggValue {
                    count: 30,
                    sum: 1_500_000_000,
                },
            ),
            (
                spin,
                AggValue {
                    count: 12,
                    sum: 250_000_000,
                },
            ),
        ],
        EngineStats {
            counted: 42,
            stack_map_full: 2,
            no_start: 5,
            ..EngineStats::default()
        },
        Weight::SumMicros,
    );
    Transcript::new("tracekit offcpu -a -d 2  (2 stacks lost to a full stack map)")
        .part("stdout", stdout)
        .part("stderr", stderr)
        .check("stacks/offcpu_run.txt");
}

/// A whole `stackcount` run from its engine's cells, grouped `--by cpu` in front.
#[test]
fn golden_stackcount_run_from_engine_cells() {
    let leaf: &[fn(u64) -> u64] = &[burn_leaf, burn_spin, burn_main];
    let spin: &[fn(u64) -> u64] = &[burn_spin, burn_main];
    let (stdout, stderr) = engine_run(
        (
            "stackcount",
            "uprobe:/usr/bin/tk_burner:burn_leaf",
            "events",
        ),
        &[1],
        &[
            (leaf, AggValue { count: 700, sum: 0 }),
            (spin, AggValue { count: 300, sum: 0 }),
        ],
        EngineStats {
            counted: 1000,
            filtered: 17,
            ..EngineStats::default()
        },
        Weight::Count,
    );
    Transcript::new("tracekit stackcount -a -d 2 u:/usr/bin/tk_burner:burn_leaf")
        .part("stdout", stdout)
        .part("stderr", stderr)
        .check("stacks/stackcount_run.txt");
}

/// Which outputs need each stack's process and addresses, and which only its names.
#[test]
fn interval_runs_keep_what_their_outputs_need() {
    let out = |name: &str, format| (std::path::PathBuf::from(name), format);
    assert_eq!(Keep::for_outputs(&[], false), Keep::Counters);
    assert_eq!(Keep::for_outputs(&[], true), Keep::Everything);
    let by_name = [
        out("a.folded", Format::Folded),
        out("a.svg", Format::Svg),
        out("a.txt", Format::Text),
        out("a.heatmap.svg", Format::Heatmap),
    ];
    assert_eq!(Keep::for_outputs(&by_name, false), Keep::Symbols);
    for format in [
        Format::Json,
        Format::Pprof,
        Format::Otlp,
        Format::Speedscope,
        Format::ChromeTrace,
    ] {
        let mut outputs = by_name.to_vec();
        outputs.push(out("b", format));
        assert_eq!(Keep::for_outputs(&outputs, false), Keep::Everything);
    }
}

/// Under churn, an interval run writing folded stacks holds one stack per command and
/// frames, not one per process: 1000 processes running the same code add up to one stack
/// (RSS stays flat over ten minutes of short-lived processes).
#[test]
fn interval_runs_by_name_hold_one_stack_for_many_processes() {
    let mut whole = Whole::default();
    for pid in 1000..2000 {
        let mut frames = vec![user("main"), user("work")];
        frames[1].address = Some(crate::stacks::CodeAddress {
            address: 0x5500_0000_0000 + u64::from(pid) * 4096,
            mapping: None,
            lines: None,
        });
        let profile = SymbolizedProfile {
            stacks: vec![stack(pid, "tk_churn", frames, 2)],
            ..SymbolizedProfile::default()
        };
        whole.add(&profile, Keep::Symbols);
    }
    assert_eq!(whole.pids.len(), 1000);
    assert!(whole.stacks.into_stacks().is_empty());
    let stacks = whole.named.into_stacks();
    assert_eq!(stacks.len(), 1, "{stacks:#?}");
    assert_eq!(stacks[0].count, 2000);
    assert_eq!(stacks[0].comm, "tk_churn");

    let mut everything = Whole::default();
    for pid in [1, 2] {
        let profile = SymbolizedProfile {
            stacks: vec![stack(pid, "tk_churn", vec![user("main")], 1)],
            ..SymbolizedProfile::default()
        };
        everything.add(&profile, Keep::Everything);
    }
    assert_eq!(everything.stacks.into_stacks().len(), 2);
}

/// offwaketime's cells (`pid kstack ustack waker_pid kstack ustack tid waker_tid`) become
/// two samples tagged alike, joined back after symbolizing into bcc's folded pair: the
/// blocked stack, `--`, the waker's frames leaf first, the waker's name.
#[test]
fn offwaketime_pairs_are_joined_into_one_stack() {
    use super::engines::join_wakers;

    let me = std::process::id();
    let mut aggregates = Aggregates::default();
    aggregates.cells.insert(
        (
            vec![u64::from(me), 0x10, 0x20, 0, 0x30, 0x40, u64::from(me), 0],
            0,
        ),
        AggValue {
            count: 3,
            sum: 7_000_000,
        },
    );
    let layout = StackLayout {
        leading: 0,
        kernel: true,
        user: true,
        weight: Weight::SumMicros,
        waker: true,
    };
    let mut raw = RawProfile::default();
    let ids = layout.add_to(&mut raw, &aggregates);
    assert_eq!(ids, [0x10, 0x20, 0x30, 0x40]);
    assert!(raw.sliced);
    let mut keys: Vec<_> = raw.counts.iter().collect();
    keys.sort_by_key(|(key, _)| key.time_slice);
    let [(blocked, &us), (waker, &waker_us)] = keys[..] else {
        panic!("two samples: {keys:?}");
    };
    assert_eq!(
        (blocked.pid, blocked.kernel_stack, blocked.user_stack),
        (me, 0x10, 0x20)
    );
    assert_eq!(
        (waker.pid, waker.kernel_stack, waker.user_stack),
        (0, 0x30, 0x40)
    );
    assert_eq!(blocked.time_slice | 1, waker.time_slice);
    assert_eq!((us, waker_us), (7000, 7000));
    assert_eq!(
        &blocked.comm[..me.to_string().len()],
        me.to_string().as_bytes()
    );
    assert_eq!(&waker.comm[..2], b"0\0");

    let side = |pid: u32, comm: String, frames: Vec<Frame>, slice: u32| Stack {
        pid,
        comm,
        cgroup: None,
        frames,
        count: 7000,
        time_slice: Some(slice),
    };
    let profile = SymbolizedProfile {
        stacks: vec![
            side(
                0,
                "0".into(),
                vec![
                    Frame::user("waker_main", None),
                    Frame::kernel("try_to_wake_up"),
                ],
                blocked.time_slice | 1,
            ),
            side(
                me,
                me.to_string(),
                vec![Frame::user("blocked_main", None), Frame::kernel("schedule")],
                blocked.time_slice,
            ),
        ],
        ..SymbolizedProfile::default()
    };
    let joined = join_wakers(profile, &mut HashMap::new());
    let own = std::fs::read_to_string(format!("/proc/{me}/task/{me}/comm")).unwrap();
    assert_eq!(
        crate::stacks::fold(&joined.stacks),
        [(
            format!(
                "{};blocked_main;schedule_[k];--;try_to_wake_up_[k];waker_main;swapper",
                own.trim_end()
            ),
            7000
        )]
    );
}
