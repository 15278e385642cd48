//! Whole outputs of `top -e EVENT` from recorded map contents, through the job's
//! collector, against golden files in `userspace/tests/golden/top/`.

use std::{cell::RefCell, collections::BTreeMap, io, rc::Rc};

use tracekit_common::engine::AggValue;

use super::*;
use crate::{
    engine::{EngineStats, KeyKind},
    jobs::source::{Replay, ReplaySamples, str_key as comm},
    output::golden::Transcript,
};

/// A writer the test reads back after the collector is done with it.
#[derive(Clone, Default)]
struct Shared(Rc<RefCell<Vec<u8>>>);

impl io::Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn maps(cells: &[(&str, u64)]) -> Aggregates {
    Aggregates {
        cells: cells
            .iter()
            .map(|(name, count)| {
                (
                    (comm(name), 0),
                    AggValue {
                        count: *count,
                        sum: 0,
                    },
                )
            })
            .collect::<BTreeMap<_, _>>(),
        stats: EngineStats::default(),
        kernel_stacks: BTreeMap::new(),
    }
}

/// `top -e EVENT --sort comm` over `reads` (cumulative maps, one per refresh), with
/// `intervals` as the session would end them: the screens it printed.
fn screens(reads: Vec<Aggregates>, intervals: &[(u64, bool)], limit: usize) -> String {
    let columns = [KeyColumn {
        name: "comm".into(),
        kind: KeyKind::Str,
    }];
    let source = Source::Events {
        engines: Box::new(Replay::new(reads)),
        columns: &columns,
        what: "sched:sched_switch".into(),
        previous: Aggregates::default(),
    };
    run_collector(source, &["comm".to_string()], intervals, limit)
}

/// The whole command over `source`, sorted by `sort`, with `intervals` as the session would
/// end them: attach, one refresh per interval, detach; the screens it printed.
fn run_collector(
    source: Source<'_>,
    sort: &[String],
    intervals: &[(u64, bool)],
    limit: usize,
) -> String {
    let event = matches!(source, Source::Events { .. });
    let out = Shared::default();
    let mut collector = TopCollector {
        source,
        keys: parse_sort(sort, event).unwrap(),
        sort,
        limit,
        scope_text: "all processes".into(),
        tty: false,
        out: Box::new(out.clone()),
        clock: || "11:33:28".into(),
    };
    collector.attach(&Tracees::default()).unwrap();
    for &(ms, last) in intervals {
        let flow = collector
            .interval(Interval {
                elapsed: Duration::from_millis(ms),
                last,
            })
            .unwrap();
        assert_eq!(flow, Flow::Continue);
    }
    collector.detach().unwrap();
    drop(collector);
    String::from_utf8(out.0.take()).unwrap()
}

/// Functions of this test binary, sampled in the recordings below: their addresses are
/// named by the symbolizer from this process's own binary, as a traced process's are.
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

/// An address inside `function` (past its first byte: callers' frames are return
/// addresses, looked up one byte back).
fn inside(function: fn(u64) -> u64) -> u64 {
    function as usize as u64 + 1
}

/// A sampled stack: its functions, leaf first, and how many samples it took.
type SampledStack<'a> = (&'a [fn(u64) -> u64], u64);

/// One interval's samples of this process under `comm`: `stacks` (leaf first) with their
/// counts.
fn samples(comm: &str, stacks: &[SampledStack<'_>]) -> RawProfile {
    let mut raw = RawProfile::default();
    let mut name = [0u8; 16];
    name[..comm.len()].copy_from_slice(comm.as_bytes());
    for (i, (frames, count)) in stacks.iter().enumerate() {
        let hash = 0x1000 + i as u64;
        raw.stacks
            .insert(hash, frames.iter().map(|&f| inside(f)).collect());
        let key = tracekit_common::cpu_sampler::SampleKey {
            pid: std::process::id(),
            generation: 0,
            kernel_stack: tracekit_common::cpu_sampler::STACK_NONE,
            user_stack: hash,
            cgroup: 0,
            comm: name,
            time_slice: 0,
            padding: 0,
        };
        raw.counts.insert(key, *count);
        raw.stats.samples += count;
    }
    raw
}

/// `top`'s CPU view over recorded samples: each refresh ranks its interval's leaf
/// functions, named from the sampled process's binary; an interval with no samples says
/// 0 samples.
#[test]
fn golden_top_cpu_samples() {
    let leaf: &[fn(u64) -> u64] = &[burn_leaf, burn_spin, burn_main];
    let spin: &[fn(u64) -> u64] = &[burn_spin, burn_main];
    let intervals = vec![
        samples("tk_burner", &[(leaf, 75), (spin, 25)]),
        RawProfile::default(),
        samples("tk_burner", &[(leaf, 9), (spin, 90)]),
    ];
    let source = Source::Samples {
        sampler: Box::new(ReplaySamples::new(intervals)),
        frequency_hz: 99,
        symbolizer: Box::new(Symbolizer::with_options(SymbolizerOptions::default())),
    };
    let sort = ["comm".to_string(), "sym".to_string()];
    let out = run_collector(
        source,
        &sort,
        &[(1000, false), (1000, false), (1000, true)],
        10,
    );
    Transcript::new("tracekit top -F 99 --sort comm,sym -i 1 -d 3 | cat")
        .part("stdout", out)
        .check("top/cpu_samples.txt");
}

/// Two refreshes, each ranking what happened in its own interval; the last, short
/// interval (Ctrl-C 50 ms after a refresh) shows nothing new and is not drawn.
#[test]
fn golden_top_events() {
    let reads = vec![
        maps(&[("bash", 3), ("kworker/0:1", 40), ("sshd", 12)]),
        maps(&[("bash", 103), ("kworker/0:1", 50), ("sshd", 12)]),
    ];
    let out = screens(reads, &[(2000, false), (2000, false), (50, true)], 20);
    Transcript::new(
        "tracekit top -e sched:sched_switch --sort comm -i 2 | cat  (Ctrl-C at 4.05 s)",
    )
    .part("stdout", out)
    .check("top/events.txt");
}

/// Nothing happened: the title says 0 events and the table is its header alone; `--top 1`
/// cuts the rows.
#[test]
fn golden_top_empty_and_cut() {
    let reads = vec![Aggregates::default(), maps(&[("bash", 7), ("sshd", 2)])];
    let out = screens(reads, &[(1000, false), (1000, true)], 1);
    Transcript::new("tracekit top -e sched:sched_switch --sort comm --top 1 -i 1 -d 2 | cat")
        .part("stdout", out)
        .check("top/empty_and_cut.txt");
}

#[test]
fn sort_keys_parse_with_their_errors() {
    assert!(matches!(
        parse_sort(&["symbol".into(), "dso".into()], false).unwrap()[..],
        [SortKey::Sym, SortKey::Dso]
    ));
    assert_eq!(
        parse_sort(&["size".into()], false).unwrap_err().to_string(),
        "--sort size: unknown key; valid: sym, dso, comm, pid"
    );
    assert_eq!(
        parse_sort(&["sym".into()], true).unwrap_err().to_string(),
        "--sort sym: with -e, events are grouped by comm or pid (sym and dso need CPU samples)"
    );
}
