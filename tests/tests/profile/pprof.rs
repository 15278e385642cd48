//! `-o FILE.pb.gz`: pprof profiles read back by the reference reader, `go tool pprof`.

use std::{process::Command, time::Duration};

use tracekit_tests::{
    fixture, parse_json,
    pprof::{assert_burner_chain, go_or_skip, pprof, traces},
    require_root, scratch, tracekit,
};

const TIMEOUT: Duration = Duration::from_secs(60);

/// `go tool pprof` reads `profile -o FILE.pb.gz` of the burner,
/// gives `leaf` the same sample count as the profile's own stacks (the folded output's
/// count of stacks ending in `leaf`), and `-traces` shows the whole chain main -> a -> b ->
/// leaf; the file names the burner's binary with its build ID.
#[test]
fn pprof_file_read_by_go_tool_pprof() {
    require_root();
    let test = "pprof_file_read_by_go_tool_pprof";
    let Some(go) = go_or_skip(test) else {
        return;
    };
    let dir = scratch(test);
    let out = dir.join("cpu.pb.gz");
    let burner = fixture("tk_burner");
    let result = tracekit(
        ["profile", "-F", "99", "--json", "-o"]
            .iter()
            .map(|s| s.as_ref())
            .chain([
                out.as_os_str(),
                "--".as_ref(),
                burner.as_os_str(),
                "3".as_ref(),
            ]),
        TIMEOUT,
    );
    result.assert_code(0);
    assert!(
        result.stderr.contains("(pprof profile)"),
        "{}",
        result.stderr
    );

    // The profile's own stacks (what the folded output sums): self samples of leaf.
    let json = parse_json(&result.stdout);
    let stacks = json["stacks"].as_array().expect("stacks");
    let leaf_self: u64 = stacks
        .iter()
        .filter(|stack| stack["comm"] == "tk_burner")
        .filter(|stack| {
            stack["frames"]
                .as_array()
                .unwrap()
                .last()
                .map(|f| &f["symbol"])
                == Some(&"leaf".into())
        })
        .map(|stack| stack["count"].as_u64().unwrap())
        .sum();
    let total: u64 = stacks.iter().map(|s| s["count"].as_u64().unwrap()).sum();
    // Sample counts depend on the CPU the burner got (a loaded machine gives it less); the
    // test is about pprof agreeing with them, so it only needs leaf to dominate.
    assert!(
        leaf_self >= 20 && leaf_self * 10 >= total * 9,
        "only {leaf_self} of {total} samples in leaf: {json}"
    );

    // -top with sample counts: `flat flat% sum% cum cum% name`.
    let top = pprof(go, &["-top", "-sample_index=samples"], &out);
    let leaf_flat: u64 = top
        .lines()
        .find(|line| line.split_whitespace().last() == Some("leaf"))
        .and_then(|line| line.split_whitespace().next())
        .and_then(|flat| flat.parse().ok())
        .unwrap_or_else(|| panic!("no leaf row in go tool pprof -top:\n{top}"));
    assert_eq!(leaf_flat, leaf_self, "go tool pprof -top:\n{top}");
    assert!(
        top.contains(&format!("Total samples = {total}")),
        "expected {total} samples in all:\n{top}"
    );
    let binary = burner.file_name().unwrap().to_str().unwrap();
    assert!(
        top.lines()
            .next()
            .is_some_and(|line| line.starts_with("File: ") && line.ends_with(binary)),
        "the burner is the main binary:\n{top}"
    );
    let build_id = Command::new("readelf")
        .args(["-n"])
        .arg(&burner)
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|notes| {
            notes
                .lines()
                .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string))
        });
    if let Some(build_id) = build_id {
        assert!(top.contains(&format!("Build ID: {build_id}")), "{top}");
    }

    let traces = pprof(go, &["-traces"], &out);
    assert_burner_chain(&traces);
}

#[test]
fn traces_parses_labels_counts_and_names_with_spaces() {
    let text = "File: node
Type: samples
-----------+-------------------------------------------------------
       pid:  8392
      comm:  tk_js_chain
         3   leaf (/work/js_chain.js)
             middle (/work/js_chain.js)
             Builtins_JSEntry
-----------+-------------------------------------------------------
      comm:  kcompactd0
         1   isolate_freepages_block
             kthread
";
    let traces = traces(text);
    assert_eq!(traces.len(), 2);
    assert_eq!(traces[0].pid, Some(8392));
    assert_eq!(traces[0].samples, 3);
    assert_eq!(
        traces[0].path,
        "Builtins_JSEntry;middle (/work/js_chain.js);leaf (/work/js_chain.js)"
    );
    assert_eq!(
        (traces[1].pid, traces[1].samples, traces[1].path.as_str()),
        (None, 1, "kthread;isolate_freepages_block")
    );
    // `-lines`: frames hold a `:` too, inlined ones are marked.
    let lines = "-----------+-------------------------------------------------------
       pid:  8392
         5   leaf /work/js_inline.js:14 (inline)
             middle /work/js_inline.js:19
";
    let inlined = self::traces(lines);
    assert_eq!(
        (inlined[0].samples, inlined[0].path.as_str()),
        (
            5,
            "middle /work/js_inline.js:19;leaf /work/js_inline.js:14 (inline)"
        )
    );
}
