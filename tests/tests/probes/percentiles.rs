//! `--percentiles` (log-linear histograms kept in the kernel) and heat maps (`-i` with
//! `-o FILE.svg`), against workloads with known latencies: `tk_funcs waits` (900 waits of
//! 1 ms, 90 of 10 ms, 10 of 100 ms), `dd` with two block sizes, `tk_yield` from second 3.
//!
//! The machine is shared: waits run late under load, so the checks are on which group of
//! waits a percentile falls in (the data's own ranks), each within its bucket's bounds.

use std::{
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use tracekit_tests::{
    fixture, parse_json, require_root, scratch, spawn_tracekit, tracekit, wait_output,
};

use super::funcs;

const TIMEOUT: Duration = Duration::from_secs(90);

/// `(low, high)` of percentile `name` (`p50`, `max`) of a JSON group.
pub fn bounds(group: &serde_json::Value, name: &str) -> (u64, u64) {
    let summary = &group["percentiles"];
    let entry = if name == "max" {
        &summary["max"]
    } else {
        summary["percentiles"]
            .as_array()
            .expect("percentiles")
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {summary}"))
    };
    (
        entry["low"].as_u64().unwrap(),
        entry["high"].as_u64().unwrap(),
    )
}

/// How far a call's latency as the probes time it may be from the fixture's own timing
/// around the call (the probes' entry and return run inside it).
const SLACK_NS: u64 = 20_000;

/// The fixture's own timings, sorted (`tk_funcs waits FILE`).
fn measured(file: &Path) -> Vec<u64> {
    let mut took: Vec<u64> = std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    took.sort_unstable();
    assert_eq!(took.len(), 1000);
    took
}

/// Of the fixture's 1000 timings, how many may run late against the probes' own: a task
/// preempted between its clock read and the syscall (or on its way back) is timed longer
/// by the fixture than between the probes, never shorter. Such a call moves up the
/// fixture's ranks, and the wait of a rank at a class's top (p90: the last 1 ms wait, p99:
/// the last 10 ms one) is then a late one. 0.5% of the calls.
const LATE_CALLS: usize = 5;

/// Checks the percentiles of the fixture's 1000 waits in a JSON group whose values are in
/// units of `unit_ns`, against the fixture's own timings (`truth`, sorted): each quantile's
/// bucket holds the wait of that rank (HdrHistogram's rank: ceil(q * 1000)), give or take
/// [`SLACK_NS`] (above it: of that rank less [`LATE_CALLS`]), and is at most 1/16 of its
/// low end wide. Nothing sleeps less than asked, so p50 is at least 1 ms and p99.9 at
/// least 100 ms; on a quiet machine p50 is a 1 ms wait, p99 the last 10 ms one and p99.9 a
/// 100 ms one (a loaded one wakes sleepers late).
fn check_waits(group: &serde_json::Value, unit_ns: u64, truth: &[u64]) {
    assert_eq!(group["count"], 1000, "{group}");
    assert_eq!(group["percentiles"]["count"], 1000, "{group}");
    for (name, rank) in [
        ("p50", 500),
        ("p90", 900),
        ("p99", 990),
        ("p99.9", 999),
        ("max", 1000),
    ] {
        let (low, high) = bounds(group, name);
        assert!(
            high - low < (low / 16).max(1),
            "{name}: [{low}, {high}] is wider than the stated 6.25%: {group}"
        );
        // The bucket's values in ns: [low, high + 1) units.
        let (low_ns, end_ns) = (low * unit_ns, (high + 1) * unit_ns);
        let wait = truth[rank - 1];
        assert!(
            low_ns.saturating_sub(SLACK_NS) <= wait,
            "{name}: the fixture timed wait #{rank} at {wait} ns, below [{low_ns}, {end_ns}) \
             ns: {group}"
        );
        let early = truth[rank - 1 - LATE_CALLS];
        assert!(
            early < end_ns + SLACK_NS,
            "{name}: the fixture timed wait #{} at {early} ns, above [{low_ns}, {end_ns}) \
             ns: {group}",
            rank - LATE_CALLS
        );
    }
    let (_, end) = bounds(group, "p50");
    assert!((end + 1) * unit_ns > 1_000_000, "p50 below 1 ms: {group}");
    let (_, end) = bounds(group, "p99.9");
    assert!(
        (end + 1) * unit_ns > 100_000_000,
        "p99.9 below 100 ms: {group}"
    );
    let mean_ns = group["percentiles"]["mean"].as_f64().unwrap() * unit_ns as f64;
    let truth_mean = truth.iter().sum::<u64>() as f64 / 1000.0;
    // The fixture's late calls weigh on its mean alone: up to 100 ms over the run.
    assert!(
        mean_ns < truth_mean + SLACK_NS as f64 && truth_mean - mean_ns < 5.0 * SLACK_NS as f64,
        "mean {mean_ns} ns, the fixture's {truth_mean} ns: {group}"
    );
}

/// The text report's `pNN : LOW -> HIGH` lines agree with the JSON of the same run.
fn check_text_matches(text: &str, group: &serde_json::Value) {
    for name in ["p50", "p90", "p99", "p99.9", "max"] {
        let (low, high) = bounds(group, name);
        let want = if low == high {
            low.to_string()
        } else {
            format!("{low} -> {high}")
        };
        assert!(
            text.lines().any(|line| {
                line.split_once(':')
                    .is_some_and(|(k, v)| k.trim() == name && v.trim() == want)
            }),
            "no `{name} : {want}` in the text report:\n{text}"
        );
    }
}

/// `funclatency --percentiles` on the fixture's wait function (uprobe and
/// uretprobe), in microseconds; the text report (`-o FILE.txt`) and `--json` of one run
/// give the same buckets.
#[test]
fn percentiles_funclatency_of_known_waits() {
    require_root();
    let dir = scratch("percentiles_funclatency_of_known_waits");
    let (text, timings) = (dir.join("report.txt"), dir.join("waits"));
    let saved = dir.join("run.json");
    let spec = format!("{}:sleeper", funcs());
    let run = tracekit(
        [
            "funclatency",
            "--percentiles",
            &spec,
            "--json",
            "-o",
            text.to_str().unwrap(),
            "-o",
            saved.to_str().unwrap(),
            "--",
            &funcs(),
            "waits",
            timings.to_str().unwrap(),
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let json = parse_json(&run.stdout);
    assert_eq!(json["unit"], "usecs");
    let group = &json["groups"][0];
    check_waits(group, 1000, &measured(&timings));
    let text = std::fs::read_to_string(&text).unwrap();
    check_text_matches(&text, group);
    // `report` of the saved JSON prints the same histogram and percentile lines.
    let report = tracekit(["report", saved.to_str().unwrap()], TIMEOUT);
    report.assert_code(0);
    check_text_matches(&report.stdout, group);
    assert_eq!(report.stdout, text, "report's text differs from the run's");
}

/// `hist` of a uretprobe's latency (nanoseconds) with `--percentiles`.
#[test]
fn percentiles_hist_of_uretprobe_latency() {
    require_root();
    let timings = scratch("percentiles_hist_of_uretprobe_latency").join("waits");
    let spec = format!("uretprobe:{}:sleeper", funcs());
    let run = tracekit(
        [
            "hist",
            &spec,
            "--value",
            "latency",
            "--percentiles",
            "--json",
            "--",
            &funcs(),
            "waits",
            timings.to_str().unwrap(),
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    check_waits(
        &parse_json(&run.stdout)["groups"][0],
        1,
        &measured(&timings),
    );
}

/// Syscall latency: `syscount --latency --percentiles` keeps one log-linear
/// histogram per syscall; the fixture's waits are its only nanosleep calls.
#[test]
fn percentiles_syscount_latency_of_nanosleep() {
    require_root();
    let timings = scratch("percentiles_syscount_latency_of_nanosleep").join("waits");
    let run = tracekit(
        [
            "syscount",
            "--latency",
            "--percentiles",
            "--json",
            "--",
            &funcs(),
            "waits",
            timings.to_str().unwrap(),
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let json = parse_json(&run.stdout);
    let group = json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["key"]["syscall"] == "nanosleep")
        .unwrap_or_else(|| panic!("no nanosleep group: {json}"));
    check_waits(group, 1000, &measured(&timings));
    // Sorted by count, most first, as syscount sorts.
    let counts: Vec<u64> = json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["count"].as_u64().unwrap())
        .collect();
    assert!(counts.windows(2).all(|w| w[0] >= w[1]), "{counts:?}");
}

/// Bad combinations are usage errors naming the fix.
#[test]
fn percentiles_usage_errors() {
    require_root();
    let run = tracekit(["syscount", "--percentiles", "-d", "1"], TIMEOUT);
    run.assert_code(2);
    assert!(
        run.stderr.contains("--percentiles: needs a value"),
        "{run:?}"
    );
    let run = tracekit(["runqlat", "--precision", "9", "--percentiles"], TIMEOUT);
    run.assert_code(2);
    let run = tracekit(["biolatency", "-d", "1", "-o", "heat.svg"], TIMEOUT);
    run.assert_code(2);
    assert!(run.stderr.contains("add -i SECONDS"), "{run:?}");
}

/// The cells of a heat map: (column, row, count), each checked to have hover text.
fn cells(svg: &Path) -> Vec<(usize, usize, u64)> {
    cells_with_labels(svg)
        .into_iter()
        .map(|(column, row, count, _)| (column, row, count))
        .collect()
}

/// The cells of a heat map with their row's label as the hover text gives it (`4 -> 7`).
fn cells_with_labels(svg: &Path) -> Vec<(usize, usize, u64, String)> {
    let text = std::fs::read_to_string(svg).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|err| panic!("not XML: {err}"));
    doc.descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("class") == Some("cell"))
        .map(|n| {
            let number = |name: &str| n.attribute(name).unwrap().parse::<u64>().unwrap();
            let title = n
                .children()
                .find(|c| c.has_tag_name("title"))
                .and_then(|t| t.text())
                .expect("a cell without hover text")
                .to_string();
            // `START to END (0s to 1s): LOW -> HIGH UNIT: N events, S% of T`
            let label = title
                .split_once("): ")
                .and_then(|(_, rest)| rest.split_once(": "))
                .map(|(label, _)| label.rsplit_once(' ').map_or(label, |(l, _)| l).to_string())
                .unwrap_or_else(|| panic!("hover text {title:?}"));
            (
                number("data-column") as usize,
                number("data-row") as usize,
                number("data-count"),
                label,
            )
        })
        .collect()
}

/// Events per column.
fn column_totals(cells: &[(usize, usize, u64)]) -> Vec<u64> {
    let columns = cells.iter().map(|c| c.0 + 1).max().unwrap_or(0);
    let mut totals = vec![0; columns];
    for &(column, _, count) in cells {
        totals[column] += count;
    }
    totals
}

/// Starts `tracekit ARGS` and returns it once attached, with its stderr lines (all of
/// them: the end-of-run account is read from them).
fn start_attached(args: &[&str]) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let mut child = spawn_tracekit(args);
    let stderr = child.stderr.take().expect("piped stderr");
    let (lines, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead as _;
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match receiver.recv_timeout(left) {
            Ok(line) if line.contains("Hit Ctrl-C to end.") => return (child, receiver),
            Ok(_) => {}
            Err(err) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("tracekit {args:?} did not attach: {err}");
            }
        }
    }
}

/// Waits for the tool to exit (successfully), and returns the rest of its stderr.
fn finish(child: std::process::Child, stderr: std::sync::mpsc::Receiver<String>) -> String {
    let run = wait_output(child, TIMEOUT);
    run.assert_code(0);
    let rest: Vec<String> = stderr.iter().collect();
    rest.join("\n")
}

/// `Counted N events` from the end-of-run account.
fn counted(stderr: &str) -> u64 {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("Counted ")?.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no Counted line: {stderr}"))
}

/// Runs `dd` with O_DIRECT writes of `bs` into `file` until `until`.
fn dd_until(file: &Path, bs: &str, count: &str, until: Instant) {
    while Instant::now() < until {
        let status = Command::new("dd")
            .args([
                "if=/dev/zero",
                &format!("of={}", file.display()),
                &format!("bs={bs}"),
                &format!("count={count}"),
                "oflag=direct",
                "conv=notrunc",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
    }
}

/// `biolatency -i 1 -d 5 -o heat.svg` while `dd` writes 4 KiB blocks, then
/// 1 MiB blocks from half-way: the SVG parses as XML, has 5 columns whose cells add up to
/// the events counted, and the 1 MiB writes (longer each) raise the columns' latency.
#[test]
fn heatmap_biolatency_while_dd_changes_block_size() {
    require_root();
    let dir = scratch("heatmap_biolatency_while_dd_changes_block_size");
    let svg = dir.join("heat.svg");
    let file = dir.join("data");
    let (tool, stderr) = start_attached(&[
        "biolatency",
        "-i",
        "1",
        "-d",
        "5",
        "-o",
        svg.to_str().unwrap(),
    ]);
    let start = Instant::now();
    dd_until(&file, "4k", "256", start + Duration::from_millis(2500));
    dd_until(&file, "1M", "4", start + Duration::from_millis(4900));
    let account = finish(tool, stderr);
    let cells = cells(&svg);
    let totals = column_totals(&cells);
    assert_eq!(totals.len(), 5, "5 intervals, 5 columns: {totals:?}");
    assert_eq!(totals.iter().sum::<u64>(), counted(&account), "{totals:?}");
    // The mean row (log2 bucket) of the 4 KiB columns is below the 1 MiB columns'.
    let mean_row = |columns: std::ops::Range<usize>| {
        let (mut n, mut weighted) = (0u64, 0u64);
        for &(column, row, count) in &cells {
            if columns.contains(&column) {
                n += count;
                weighted += row as u64 * count;
            }
        }
        weighted as f64 / n.max(1) as f64
    };
    let (small, large) = (mean_row(0..2), mean_row(3..5));
    assert!(
        large > small + 1.0,
        "1 MiB writes should wait longer: mean rows {small:.2} then {large:.2}; {totals:?}"
    );
}

/// `runqlat -i 1 -o heat.svg` with a run-queue load (`tk_yield`: 4 processes
/// giving the CPU to each other) from second 3: its waits, microseconds each, fill the
/// rows under 16 us of the columns from 3 on. The machine is shared and its own waits land
/// in every column (5-40 thousand a second here, across all rows), so the check is on those
/// rows: each loaded column holds more than twice the busiest quiet one (measured here: 1-8
/// thousand quiet; loaded 25-90 thousand between 4 and 15 us when the machine was busy,
/// 350-440 thousand mostly under 4 us when it was not).
#[test]
fn heatmap_runqlat_load_from_second_three() {
    require_root();
    let dir = scratch("heatmap_runqlat_load_from_second_three");
    let svg = dir.join("heat.svg");
    let yielder = fixture("tk_yield");
    let svg_arg = svg.to_str().unwrap();
    let (tool, stderr) = start_attached(&["runqlat", "-i", "1", "-d", "6", "-o", svg_arg]);
    let start = Instant::now();
    // A schedule, not a wait for a condition: the load begins at second 3.1.
    while Instant::now() < start + Duration::from_millis(3100) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let load = Command::new(&yielder)
        .args(["4", "3.3"])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(load.success());
    let account = finish(tool, stderr);
    let cells = cells_with_labels(&svg);
    let plain: Vec<(usize, usize, u64)> = cells.iter().map(|c| (c.0, c.1, c.2)).collect();
    let totals = column_totals(&plain);
    assert_eq!(totals.len(), 6, "{totals:?}");
    assert_eq!(totals.iter().sum::<u64>(), counted(&account), "{totals:?}");
    let mut band = vec![0u64; 6];
    for (column, _, count, label) in &cells {
        let low: u64 = label.split(" -> ").next().unwrap().parse().unwrap();
        if low < 16 {
            band[*column] += count;
        }
    }
    let quiet = band[..3].iter().copied().max().unwrap();
    let loaded = band[3..].iter().copied().min().unwrap();
    assert!(
        loaded > 2 * quiet,
        "waits under 16 us per column: {band:?} (all: {totals:?}); from column 3 on, the load's \
         should make each more than twice the busiest before"
    );
}

/// Histograms: one `runqlat -i 1 -d 3` run writes its heat map and
/// its JSON (`-o heat.svg -o run.json`); `report run.json -o again.svg` draws the same
/// bytes from the file, with no tracing. The JSON's intervals hold what the map shows (3
/// columns whose counts add up to the events counted), and `report`'s text holds the whole
/// run's buckets.
#[test]
fn report_of_a_saved_histogram_draws_the_same_heat_map() {
    require_root();
    let dir = scratch("report_of_a_saved_histogram_draws_the_same_heat_map");
    let (svg, json, again, text) = (
        dir.join("heat.svg"),
        dir.join("run.json"),
        dir.join("again.svg"),
        dir.join("run.txt"),
    );
    let (tool, stderr) = start_attached(&[
        "runqlat",
        "-i",
        "1",
        "-d",
        "3",
        "-o",
        svg.to_str().unwrap(),
        "-o",
        json.to_str().unwrap(),
    ]);
    let account = finish(tool, stderr);
    let saved = parse_json(&std::fs::read_to_string(&json).unwrap());
    assert_eq!(saved["kind"], "histogram", "{saved}");
    let columns = saved["intervals"]["columns"].as_array().expect("intervals");
    assert_eq!(columns.len(), 3, "{saved}");
    let rows = saved["intervals"]["rows"].as_array().unwrap().len();
    let mut in_columns = 0;
    for column in columns {
        let counts = column["counts"].as_array().unwrap();
        assert_eq!(counts.len(), rows, "{column}");
        in_columns += counts.iter().map(|n| n.as_u64().unwrap()).sum::<u64>();
    }
    assert_eq!(in_columns, counted(&account), "{saved}");
    assert_eq!(in_columns, saved["groups"][0]["count"].as_u64().unwrap());

    let report = tracekit(
        [
            "report",
            json.to_str().unwrap(),
            "-o",
            again.to_str().unwrap(),
            "-o",
            text.to_str().unwrap(),
        ],
        TIMEOUT,
    );
    report.assert_code(0);
    let (first, second) = (std::fs::read(&svg).unwrap(), std::fs::read(&again).unwrap());
    assert!(
        first == second,
        "report's heat map differs from the run's:\n{}\n---\n{}",
        String::from_utf8_lossy(&first),
        String::from_utf8_lossy(&second)
    );
    assert_eq!(
        column_totals(&cells(&again)).iter().sum::<u64>(),
        in_columns
    );
    // The text: one `LOW -> HIGH : COUNT` line per log2 bucket, adding up to the run.
    let text = std::fs::read_to_string(&text).unwrap();
    let in_text: u64 = text
        .lines()
        .filter(|l| l.contains(" -> "))
        .map(|l| {
            l.split(':')
                .nth(1)
                .unwrap()
                .split('|')
                .next()
                .unwrap()
                .trim()
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert_eq!(in_text, in_columns, "{text}");
}
