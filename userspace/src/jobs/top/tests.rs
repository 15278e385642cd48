//! Whole outputs of `top -e EVENT` from recorded map contents, through the job's
//! collector, against golden files in `userspace/tests/golden/top/`.

use std::{cell::RefCell, collections::BTreeMap, io, rc::Rc};

use tracekit_common::engine::AggValue;

use super::*;
use crate::{
    engine::{EngineStats, KeyKind},
    jobs::source::{Replay, str_key as comm},
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
    }
}

/// `top -e EVENT --sort comm` over `reads` (cumulative maps, one per refresh), with
/// `intervals` as the session would end them: the screens it printed.
fn screens(reads: Vec<Aggregates>, intervals: &[(u64, bool)], limit: usize) -> String {
    let columns = [KeyColumn {
        name: "comm".into(),
        kind: KeyKind::Str,
    }];
    let sort = ["comm".to_string()];
    let out = Shared::default();
    let mut collector = TopCollector {
        source: Source::Events {
            engines: Box::new(Replay::new(reads)),
            columns: &columns,
            what: "sched:sched_switch".into(),
            previous: Aggregates::default(),
        },
        keys: parse_sort(&sort, true).unwrap(),
        sort: &sort,
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
