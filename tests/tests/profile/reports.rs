//! Subsecond heat maps (`profile --heatmap`), `report` re-rendering a saved profile,
//! differential flame graphs (`diff`), and the speedscope and Chrome trace outputs, checked
//! by the tools that read them.

use std::{
    collections::HashMap,
    ffi::OsString,
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use tracekit_tests::{
    Output, ensure_package, fixture, parse_folded,
    pprof::{go_or_skip, pprof},
    require_root, run, scratch, tracekit,
};

const TIMEOUT: Duration = Duration::from_secs(120);

/// `tracekit ARGS`, where arguments may be paths.
fn tk(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    tracekit(
        args.iter()
            .map(|a| a.as_ref().to_os_string())
            .collect::<Vec<OsString>>(),
        TIMEOUT,
    )
}

/// The heat map's cells: (second, row) -> (samples, from, to).
fn heatmap_cells(svg: &str) -> HashMap<(u64, u64), (u64, String, String)> {
    let document = roxmltree::Document::parse(svg).expect("the heat map is well-formed XML");
    document
        .descendants()
        .filter(|n| n.attribute("class") == Some("cell"))
        .map(|n| {
            let num = |name| n.attribute(name).unwrap().parse::<u64>().unwrap();
            (
                (num("data-second"), num("data-row")),
                (
                    num("data-samples"),
                    n.attribute("data-from").unwrap().to_string(),
                    n.attribute("data-to").unwrap().to_string(),
                ),
            )
        })
        .collect()
}

/// A fixture that burns CPU only in the first 200 ms of each
/// second (of CLOCK_MONOTONIC, which the kernel's time slices count) puts its samples in
/// the heat map's first 10 rows (20 ms each); `report --from --to` of the hottest cell
/// draws the fixture's stack, with the cell's samples.
#[test]
fn heatmap_rows_and_report_of_a_hot_cell() {
    require_root();
    let dir = scratch("heatmap_rows_and_report_of_a_hot_cell");
    let (json, svg) = (dir.join("p.json"), dir.join("p.heatmap.svg"));
    let phases = fixture("tk_phases");
    tk(&[
        &"profile",
        &"-F",
        &"499",
        &"-o",
        &json,
        &"-o",
        &svg,
        &"--",
        &phases,
        &"subsecond",
        &"4",
    ])
    .assert_code(0);

    let cells = heatmap_cells(&std::fs::read_to_string(&svg).unwrap());
    assert_eq!(cells.keys().filter(|(s, _)| *s == 0).count(), 50, "50 rows");
    let total: u64 = cells.values().map(|c| c.0).sum();
    let hot: u64 = cells
        .iter()
        .filter(|((_, row), _)| *row < 10)
        .map(|(_, c)| c.0)
        .sum();
    println!("heat map: {hot} of {total} samples in rows 0-9 (0-200 ms)");
    assert!(total >= 30, "too few samples to judge: {total}");
    assert!(
        hot * 100 >= total * 90,
        "only {hot} of {total} samples in the first 200 ms of their seconds"
    );

    let (&(second, row), (samples, from, to)) = cells
        .iter()
        .filter(|((_, row), _)| *row < 10)
        .max_by_key(|(key, c)| (c.0, std::cmp::Reverse(**key)))
        .unwrap();
    let folded_path = dir.join("cell.folded");
    tk(&[
        &"report",
        &json,
        &"--from",
        from,
        &"--to",
        to,
        &"-o",
        &folded_path,
    ])
    .assert_code(0);
    let folded = parse_folded(&std::fs::read_to_string(&folded_path).unwrap());
    let in_cell: u64 = folded.iter().map(|(_, c)| c).sum();
    let burning: u64 = folded
        .iter()
        .filter(|(path, _)| path.contains("main;subsecond;hot_slice;work"))
        .map(|(_, c)| c)
        .sum();
    println!("cell {second} s row {row} ({from}-{to} s): {samples} samples; report: {folded:?}");
    assert_eq!(
        in_cell, *samples,
        "report --from {from} --to {to} gives the cell's samples"
    );
    assert!(
        burning * 10 >= in_cell * 9,
        "the hot cell's stacks are the fixture's: {folded:?}"
    );

    // Each cell with samples links to its flame graph, beside the heat map; the files exist
    // and parse; the hot cell's is the one `report --from --to` draws, with the fixture's
    // stack in it.
    let text = std::fs::read_to_string(&svg).unwrap();
    let document = roxmltree::Document::parse(&text).unwrap();
    let mut links = HashMap::new();
    for cell in document
        .descendants()
        .filter(|n| n.attribute("class") == Some("cell"))
    {
        let key = (
            cell.attribute("data-second")
                .unwrap()
                .parse::<u64>()
                .unwrap(),
            cell.attribute("data-row").unwrap().parse::<u64>().unwrap(),
        );
        let href = cell
            .parent_element()
            .filter(|a| a.tag_name().name() == "a")
            .and_then(|a| a.attribute("href"));
        assert_eq!(
            href.is_some(),
            cells[&key].0 > 0,
            "cell {key:?} ({} samples) links to {href:?}",
            cells[&key].0
        );
        if let Some(href) = href {
            links.insert(key, href.to_string());
        }
    }
    assert!(!links.is_empty());
    for href in links.values() {
        let file = dir.join(href);
        let graph = std::fs::read_to_string(&file)
            .unwrap_or_else(|err| panic!("{href}: {} ({err})", file.display()));
        // inferno's flame graphs declare their DTD.
        let options = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        };
        roxmltree::Document::parse_with_options(&graph, options)
            .unwrap_or_else(|err| panic!("{href} is not XML: {err}"));
    }
    let href = &links[&(second, row)];
    assert_eq!(href, &format!("p.heatmap/{from}-{to}.svg"));
    let linked = std::fs::read_to_string(dir.join(href)).unwrap();
    let reported = dir.join("cell.svg");
    tk(&[
        &"report", &json, &"--from", from, &"--to", to, &"-o", &reported,
    ])
    .assert_code(0);
    assert!(
        linked == std::fs::read_to_string(&reported).unwrap(),
        "the hot cell's flame graph differs from report --from {from} --to {to}"
    );
    for frame in ["subsecond", "hot_slice", "work"] {
        assert!(
            linked.contains(&format!("<title>{frame} (")),
            "no {frame} in the hot cell's flame graph {href}"
        );
    }
    println!(
        "{} cells link to flame graphs; the hot one is {href}",
        links.len()
    );
}

/// One profile written as JSON, folded and pprof in one run;
/// `report` of the JSON to folded is byte for byte the folded file, and to pprof reads the
/// same in `go tool pprof -raw`.
#[test]
fn report_of_saved_json_equals_direct_outputs() {
    require_root();
    let test = "report_of_saved_json_equals_direct_outputs";
    let dir = scratch(test);
    let p = |name: &str| dir.join(name);
    let burner = fixture("tk_burner");
    tk(&[
        &"profile",
        &"-F",
        &"199",
        &"-o",
        &p("a.json"),
        &"-o",
        &p("a.folded"),
        &"-o",
        &p("a.pb.gz"),
        &"-o",
        &p("a.txt"),
        &"--",
        &burner,
        &"1.5",
    ])
    .assert_code(0);
    tk(&[
        &"report",
        &p("a.json"),
        &"-o",
        &p("b.folded"),
        &"-o",
        &p("b.pb.gz"),
        &"-o",
        &p("b.txt"),
    ])
    .assert_code(0);
    let read = |name: &str| std::fs::read(p(name)).unwrap();
    assert!(!read("a.folded").is_empty());
    assert!(
        read("a.folded") == read("b.folded"),
        "folded differs:\n{}\n---\n{}",
        String::from_utf8_lossy(&read("a.folded")),
        String::from_utf8_lossy(&read("b.folded"))
    );
    assert_eq!(
        String::from_utf8(read("a.txt")).unwrap(),
        String::from_utf8(read("b.txt")).unwrap()
    );
    let Some(go) = go_or_skip(test) else {
        return;
    };
    let (direct, rendered) = (
        pprof(go, &["-raw"], &p("a.pb.gz")),
        pprof(go, &["-raw"], &p("b.pb.gz")),
    );
    assert!(direct.contains("leaf"), "{direct}");
    assert_eq!(direct, rendered);
}

/// The fixture's own measure of how its CPU time split (`alpha_pct=A beta_pct=B`).
fn split_truth(stdout: &str) -> (f64, f64) {
    let value = |name: &str| {
        let at = stdout
            .find(&format!("{name}="))
            .unwrap_or_else(|| panic!("no {name} in {stdout:?}"));
        stdout[at + name.len() + 1..]
            .split_whitespace()
            .next()
            .unwrap()
            .parse::<f64>()
            .unwrap()
    };
    (value("alpha_pct"), value("beta_pct"))
}

/// The sample counts of diff's header (`# BEFORE: N samples; AFTER: M samples`).
fn sample_counts(table: &str) -> (f64, f64) {
    let header = table.lines().next().unwrap_or_default();
    let counts: Vec<f64> = header
        .split(';')
        .map(|part| {
            part.trim_end()
                .strip_suffix(" samples")
                .and_then(|part| part.rsplit(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no sample count in {header:?}"))
        })
        .collect();
    assert_eq!(counts.len(), 2, "{header}");
    (counts[0], counts[1])
}

/// A row of diff's table: (change, self before, self after, total before, total after).
fn table_row(table: &str, function: &str) -> (f64, f64, f64, f64, f64) {
    let line = table
        .lines()
        .find(|l| !l.starts_with('#') && l.split_whitespace().last() == Some(function))
        .unwrap_or_else(|| panic!("no row for {function}:\n{table}"));
    let n: Vec<f64> = line
        .split_whitespace()
        .take(5)
        .map(|v| v.trim_end_matches('%').parse().unwrap())
        .collect();
    (n[0], n[1], n[2], n[3], n[4])
}

/// A fixture moves CPU from alpha to beta between two runs
/// (80/20, then 20/80 of its work, 2 s of CPU time each); `diff` of the two profiles draws
/// beta red and alpha blue, and its table names both, beta grown and alpha shrunk, with
/// total shares (samples with the function on the stack, kernel frames above it
/// included, as the fixture's thread CPU clock counts them) within 4 sampling errors (at
/// least 2 points) of the split the fixture measured.
#[test]
fn diff_of_a_cpu_shift() {
    require_root();
    let dir = scratch("diff_of_a_cpu_shift");
    let phases = fixture("tk_phases");
    let mut truth = Vec::new();
    for (name, pct) in [("before.json", "80"), ("after.json", "20")] {
        let out = tk(&[
            &"profile",
            &"-F",
            &"999",
            &"-o",
            &dir.join(name),
            &"--",
            &phases,
            &"split",
            &pct,
            &"2",
        ]);
        out.assert_code(0);
        truth.push(split_truth(&out.stdout));
    }
    let svg_path = dir.join("diff.svg");
    let out = tk(&[
        &"diff",
        &dir.join("before.json"),
        &dir.join("after.json"),
        &"-o",
        &svg_path,
    ]);
    out.assert_code(0);
    println!("truth (alpha%, beta%): {truth:?}\n{}", out.stdout);
    let alpha = table_row(&out.stdout, "alpha");
    let beta = table_row(&out.stdout, "beta");
    assert!(alpha.0 < 0.0 && beta.0 > 0.0, "{}", out.stdout);
    // A share from n samples strays from the truth by its sampling error, sqrt(p(1-p)/n):
    // 0.9 points at 80% of 2000 samples. Allowed: 4 of those, and at least 2 points.
    let samples = sample_counts(&out.stdout);
    for (share, truth, n, what) in [
        (alpha.3, truth[0].0, samples.0, "alpha before"),
        (alpha.4, truth[1].0, samples.1, "alpha after"),
        (beta.3, truth[0].1, samples.0, "beta before"),
        (beta.4, truth[1].1, samples.1, "beta after"),
    ] {
        let p = truth / 100.0;
        let allowed = (400.0 * (p * (1.0 - p) / n).sqrt()).max(2.0);
        assert!(
            (share - truth).abs() <= allowed,
            "{what}: {share}% in the table, {truth}% measured by the fixture (allowed: \
             {allowed:.2} points of {n} samples)"
        );
    }

    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let document = roxmltree::Document::parse_with_options(&svg, options).expect("well-formed");
    // The function's widest frame: a stray sample can put it on another path too (one
    // sample of alpha under a broken stack, unchanged and so neutral).
    let fill = |function: &str| -> (u8, u8, u8) {
        let samples_of = |n: &roxmltree::Node| -> Option<u64> {
            let title = n
                .children()
                .find(|c| c.tag_name().name() == "title")?
                .text()?;
            let rest = title.strip_prefix(&format!("{function} ("))?;
            rest.split(' ').next()?.replace(',', "").parse().ok()
        };
        let frame = document
            .descendants()
            .filter(|n| n.tag_name().name() == "g")
            .filter_map(|n| samples_of(&n).map(|samples| (samples, n)))
            .max_by_key(|(samples, _)| *samples)
            .map(|(_, n)| n)
            .unwrap_or_else(|| panic!("no frame {function} in the SVG"));
        let rect = frame
            .children()
            .find(|c| c.tag_name().name() == "rect")
            .unwrap();
        let rgb: Vec<u8> = rect
            .attribute("fill")
            .unwrap()
            .trim_start_matches("rgb(")
            .trim_end_matches(')')
            .split(',')
            .map(|v| v.trim().parse().unwrap())
            .collect();
        (rgb[0], rgb[1], rgb[2])
    };
    let (r, g, b) = fill("beta");
    assert!(
        r == 255 && g < 250 && b < 250,
        "beta is red: rgb({r},{g},{b})"
    );
    let (r, g, b) = fill("alpha");
    assert!(
        b == 255 && r < 250 && g < 250,
        "alpha is blue: rgb({r},{g},{b})"
    );
}

/// The speedscope package (npm `speedscope@1.25`) in target/, installed on first use;
/// `None` (with the reason printed) when npm cannot install it.
fn speedscope_or_skip(test: &str) -> Option<PathBuf> {
    let dir = tracekit_tests::workspace().join("target/speedscope");
    let release = dir.join("node_modules/speedscope/dist/release");
    if !release.join("index.html").exists() {
        std::fs::create_dir_all(&dir).unwrap();
        let mut npm = Command::new("npm");
        npm.args(["install", "--no-audit", "--no-fund", "speedscope@1.25"])
            .current_dir(&dir);
        let out = run(npm, Duration::from_secs(300));
        if !out.status.success() || !release.join("index.html").exists() {
            eprintln!(
                "{test}: skipped: npm install speedscope@1.25 failed: {}",
                out.stderr
            );
            return None;
        }
    }
    Some(release)
}

/// Headless Chromium with the flags that keep it off the network and the GPU.
fn chromium(profile_dir: &Path) -> Command {
    let mut command = Command::new("chromium");
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile_dir.display()));
    command
}

/// The `.speedscope.json` of a profile validates against the
/// schema the speedscope package ships and loads in speedscope itself (its own index.html
/// in headless Chromium, the way `speedscope FILE` hands it a file): the sandwich view
/// lists the fixture's frames and the console shows no error (a screenshot is in the
/// test's output). The `.trace.json` parses as the trace event format and its outermost
/// events add up to the samples.
#[test]
fn speedscope_and_chrome_trace_load() {
    require_root();
    let test = "speedscope_and_chrome_trace_load";
    let dir = scratch(test);
    let burner = fixture("tk_burner");
    let (ss, trace, folded) = (
        dir.join("p.speedscope.json"),
        dir.join("p.trace.json"),
        dir.join("p.folded"),
    );
    tk(&[
        &"profile", &"-F", &"199", &"-o", &ss, &"-o", &trace, &"-o", &folded, &"--", &burner,
        &"1.5",
    ])
    .assert_code(0);

    // Chrome's trace event format: complete events per process, outermost ones adding up
    // to the samples at 1e6 / 199 us each.
    let samples: u64 = parse_folded(&std::fs::read_to_string(&folded).unwrap())
        .iter()
        .map(|(_, c)| c)
        .sum();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().expect("traceEvents");
    let per_count = doc["otherData"]["count_us"].as_f64().unwrap();
    assert_eq!(per_count, 1e6 / 199.0);
    for event in events {
        assert!(
            ["X", "M"].contains(&event["ph"].as_str().unwrap()),
            "{event}"
        );
        assert!(event["pid"].is_u64() && event["tid"].is_u64() && event["name"].is_string());
    }
    // The outermost events (category `process`, the command name) of each process tile
    // its track from 0 without overlap, every other event inside one of them.
    let mut outer_us = 0.0;
    let mut per_pid: HashMap<u64, Vec<(f64, f64)>> = HashMap::new();
    for e in events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "process")
    {
        per_pid
            .entry(e["pid"].as_u64().unwrap())
            .or_default()
            .push((e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap()));
    }
    for spans in per_pid.values_mut() {
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut at = 0.0;
        for (ts, dur) in spans.iter() {
            assert!(
                (ts - at).abs() < 1e-3,
                "outermost events tile the track: {spans:?}"
            );
            at = ts + dur;
        }
        outer_us += at;
    }
    for e in events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] != "process")
    {
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        assert!(
            per_pid[&e["pid"].as_u64().unwrap()]
                .iter()
                .any(|(t, d)| *t <= ts + 1e-6 && ts + dur <= t + d + 1e-6),
            "{e} inside an outermost event"
        );
    }
    let counted = outer_us / per_count;
    assert!(
        (counted - samples as f64).abs() < 1e-6 * samples as f64 + 1e-3,
        "trace events hold {counted} samples, the profile {samples}"
    );

    // speedscope's schema.
    let Some(release) = speedscope_or_skip(test) else {
        return;
    };
    let schema = release.join("file-format-schema.json");
    let mut validate = Command::new("python3");
    validate.args([
        "-c",
        "import json, sys, jsonschema; \
         jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))); \
         print('valid')",
    ]);
    validate.arg(&ss).arg(&schema);
    let out = run(validate, Duration::from_secs(60));
    if out.stderr.contains("No module named 'jsonschema'") {
        eprintln!("{test}: schema check skipped: python3 has no jsonschema module");
    } else {
        assert_eq!(out.stdout.trim(), "valid", "{out:#?}");
    }

    // speedscope itself, from its own index.html: a script that hands it the file, as the
    // speedscope CLI does (#localProfilePath).
    if !ensure_package(test, "chromium", || Path::new("/usr/bin/chromium").exists()) {
        return;
    }
    let data = std::fs::read(&ss).unwrap();
    let loader = dir.join("load.js");
    std::fs::write(
        &loader,
        format!(
            "speedscope.loadFileFromBase64(\"p.speedscope.json\", \"{}\")",
            base64(&data)
        ),
    )
    .unwrap();
    let page = |view: &str| {
        format!(
            "file://{}#localProfilePath={}&view={view}",
            release.join("index.html").display(),
            loader.display()
        )
    };
    let browser_dir = dir.join("chromium");
    let frames = [">leaf<", ">main<", ">a<", ">b<"];
    // Headless Chromium sometimes dumps the DOM before speedscope has drawn the view (an
    // almost empty body, or some rows only: 2 runs of 7 here, once in CI): up to 3 dumps.
    let mut attempts = 0;
    let out = loop {
        attempts += 1;
        let mut dump = chromium(&browser_dir);
        dump.args([
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=10000",
            "--dump-dom",
        ])
        .arg(page("sandwich"));
        let out = run(dump, Duration::from_secs(120));
        out.assert_code(0);
        if attempts == 3 || frames.iter().all(|frame| out.stdout.contains(frame)) {
            break out;
        }
        println!("speedscope's view not drawn yet in dump {attempts}: dumping again");
    };
    let console: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        // Headless Chromium's own notes about software WebGL, not the page's.
        .filter(|l| !l.contains("WebGL") && !l.contains("GL Driver Message"))
        .collect();
    println!("speedscope's console:\n{}", console.join("\n"));
    assert!(
        console
            .iter()
            .any(|l| l.contains("Importing as speedscope json file")),
        "speedscope read the file as its own format: {console:?}"
    );
    for line in &console {
        let lower = line.to_lowercase();
        assert!(
            !lower.contains("error") && !lower.contains("uncaught") && !lower.contains("failed"),
            "error in speedscope's console: {line}"
        );
    }
    std::fs::write(dir.join("sandwich.html"), &out.stdout).unwrap();
    for frame in frames {
        assert!(
            out.stdout.contains(frame),
            "speedscope's sandwich view lists {frame}"
        );
    }
    let png = dir.join("speedscope.png");
    let mut shot = chromium(&browser_dir);
    shot.args(["--window-size=1400,800", "--virtual-time-budget=10000"])
        .arg(format!("--screenshot={}", png.display()))
        .arg(page("left-heavy"));
    run(shot, Duration::from_secs(120)).assert_code(0);
    assert!(std::fs::metadata(&png).unwrap().len() > 10_000);
    println!("speedscope screenshot: {}", png.display());
}

/// Standard base64 (RFC 4648, padded).
fn base64(data: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(TABLE[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Bad input to `diff` and `report` is one line naming the file
/// and what is wrong, exit 2, never a panic.
#[test]
fn bad_input_to_diff_and_report() {
    require_root();
    let dir = scratch("bad_input_to_diff_and_report");
    let p = |name: &str| dir.join(name);
    let burner = fixture("tk_burner");
    tk(&[
        &"profile",
        &"-F",
        &"99",
        &"-o",
        &p("cpu.json"),
        &"--",
        &burner,
        &"0.5",
    ])
    .assert_code(0);
    // A histogram JSON, and an off-CPU profile (counted in us), from real runs.
    tk(&[
        &"hist",
        &"raw_syscalls:sys_exit",
        &"--value",
        &"ret",
        &"-d",
        &"0.3",
        &"-o",
        &p("hist.json"),
    ])
    .assert_code(0);
    tk(&[&"offcpu", &"-o", &p("off.json"), &"--", &"sleep", &"0.3"]).assert_code(0);

    let saved = std::fs::read_to_string(p("cpu.json")).unwrap();
    std::fs::write(p("cut.json"), &saved[..saved.len() / 2]).unwrap();
    std::fs::write(
        p("newer.json"),
        saved.replacen("\"format_version\":1", "\"format_version\":2", 1),
    )
    .unwrap();
    std::fs::write(p("other.json"), "{\"traceEvents\": []}\n").unwrap();
    std::fs::write(p("notes.txt"), "hello\nworld\n").unwrap();

    let diff = |a: &str, b: &str| vec!["diff".into(), p(a), p(b)];
    let report = |a: &str| vec!["report".into(), p(a)];
    let cases: Vec<(Vec<PathBuf>, &str, &str)> = vec![
        (
            diff("cpu.json", "hist.json"),
            "hist.json",
            "holds a histogram; diff compares profiles",
        ),
        (
            diff("cpu.json", "off.json"),
            "off.json",
            "counts samples but",
        ),
        (
            diff("cpu.json", "notes.txt"),
            "notes.txt:1",
            "not a folded stack line",
        ),
        (
            report("newer.json"),
            "newer.json",
            "format version 2, newer",
        ),
        (report("cut.json"), "cut.json", "truncated"),
        (
            report("other.json"),
            "other.json",
            "not a tracekit JSON file",
        ),
        (report("notes.txt"), "notes.txt", "not a tracekit JSON file"),
        (
            [report("hist.json"), vec!["-o".into(), p("x.svg")]].concat(),
            "hist.json",
            "the heat map needs the run's intervals",
        ),
        (
            [report("cpu.json"), vec!["--from".into(), "0".into()]].concat(),
            "cpu.json",
            "--from/--to need time slices",
        ),
        (
            [report("cpu.json"), vec!["-o".into(), p("x.heatmap.svg")]].concat(),
            "x.heatmap.svg",
            "a heat map needs the whole profile's time slices, and this one has none",
        ),
    ];
    for (args, file, what) in cases {
        let all: Vec<OsString> = args.into_iter().map(PathBuf::into_os_string).collect();
        let out = tracekit(&all, TIMEOUT);
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(out.code(), 2, "{all:?}: {out:#?}");
        assert_eq!(lines.len(), 1, "{all:?}: one line: {}", out.stderr);
        assert!(
            lines[0].contains(file) && lines[0].contains(what) && !out.stderr.contains("panicked"),
            "{all:?}: {:?} should name {file} and say {what:?}",
            lines[0]
        );
    }
}
