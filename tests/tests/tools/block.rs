//! The block tools of issue 30 that need a known disk layout (`biopattern`, `biostacks`):
//! O_DIRECT writes of a fixture to a file whose blocks the file system maps for it (FIEMAP).

use std::{collections::BTreeMap, os::unix::fs::MetadataExt, path::Path, process::Command};

use tracekit_tests::*;

const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
/// Blocks the fixture writes.
const BLOCKS: u64 = 300;

/// The disk (a name under /sys/block) holding `path`: its device's, or the disk of its
/// partition.
fn disk_of(path: &Path) -> String {
    let dev = std::fs::metadata(path).unwrap().dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let sys = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).unwrap();
    let disk = if sys.join("partition").exists() {
        sys.parent().unwrap().to_path_buf()
    } else {
        sys
    };
    disk.file_name().unwrap().to_string_lossy().into_owned()
}

/// Writes `file` with [`BLOCKS`] blocks (untraced) and returns how many of the writes of
/// `tk_blocks write` in `mode` after the first start where the previous one ended on disk.
fn prepare(fixture: &Path, file: &Path, mode: &str) -> u64 {
    let mut command = Command::new(fixture);
    command
        .arg("prepare")
        .arg(file)
        .arg(BLOCKS.to_string())
        .arg(mode);
    let out = run(command, TIMEOUT);
    out.assert_code(0);
    let words: Vec<&str> = out.stdout.split_whitespace().collect();
    assert_eq!(words.len(), 4, "{}", out.stdout);
    assert_eq!(
        words[3].parse::<u64>().unwrap(),
        BLOCKS - 1,
        "{}",
        out.stdout
    );
    words[1].parse().unwrap()
}

/// biopattern on 300 O_DIRECT 4 KiB writes of one process: in block order, each write after
/// the first is sequential; in a shuffled order, exactly those the file's block map says
/// start where the previous write ended are. COUNT (299: the disk's first request counts
/// neither way, as in libbpf-tools) and KBYTES are exact, all on the disk of the file; the
/// text has libbpf-tools' columns.
#[test]
fn biopattern_tells_sequential_from_random_writes() {
    require_root();
    let dir = scratch("biopattern_tells_sequential_from_random_writes");
    let file = dir.join("blocks");
    let fixture = fixture("tk_blocks");
    let disk = disk_of(&dir);
    for mode in ["seq", "rand"] {
        let followed = prepare(&fixture, &file, mode);
        let run = tracekit(
            [
                "biopattern".as_ref(),
                "--json".as_ref(),
                "--".as_ref(),
                fixture.as_os_str(),
                "write".as_ref(),
                file.as_os_str(),
                BLOCKS.to_string().as_ref(),
                mode.as_ref(),
            ],
            TIMEOUT,
        );
        run.assert_code(0);
        let json = parse_json(&run.stdout);
        let mut groups: BTreeMap<(String, u64), (u64, u64)> = BTreeMap::new();
        for group in json["groups"].as_array().unwrap() {
            let key = (
                group["key"]["DISK"].as_str().unwrap().to_string(),
                group["key"]["PATTERN"].as_u64().unwrap(),
            );
            groups.insert(
                key,
                (
                    group["count"].as_u64().unwrap(),
                    group["sum"].as_u64().unwrap(),
                ),
            );
        }
        let expected: BTreeMap<(String, u64), (u64, u64)> = [
            (
                (disk.clone(), 0),
                (BLOCKS - 1 - followed, (BLOCKS - 1 - followed) * 8),
            ),
            ((disk.clone(), 1), (followed, followed * 8)),
            ((disk.clone(), 2), (1, 8)),
        ]
        .into_iter()
        .filter(|(_, (count, _))| *count > 0)
        .collect();
        assert_eq!(groups, expected, "{mode}: {}", run.stdout);
        // The two orders differ as they should on a file laid out in one piece.
        if mode == "seq" {
            assert!(followed > BLOCKS * 9 / 10, "seq: {followed} followed");
        } else {
            assert!(followed < BLOCKS / 10, "rand: {followed} followed");
        }
    }
    // The text: libbpf-tools' columns, one row for the disk.
    let followed = prepare(&fixture, &file, "seq");
    let run = tracekit(
        [
            "biopattern".as_ref(),
            "--".as_ref(),
            fixture.as_os_str(),
            "write".as_ref(),
            file.as_os_str(),
            BLOCKS.to_string().as_ref(),
            "seq".as_ref(),
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let _ = std::fs::remove_dir_all(&dir);
    let total = BLOCKS - 1;
    let row = format!(
        "{disk:<7} {:>5} {:>5} {total:>8} {:>10}",
        (total - followed) * 100 / total,
        followed * 100 / total,
        total * 4
    );
    assert_eq!(
        run.stdout,
        format!("DISK     %RND  %SEQ    COUNT     KBYTES\n{row}\n"),
        "{}",
        run.stderr
    );
}

/// biostacks on 300 O_DIRECT 4 KiB overwrites of dd (`conv=notrunc` on a file written before,
/// so no block is allocated and no bitmap read on the way): the groups of dd whose kernel
/// stack goes through the write path hold exactly 300 latencies, on the disk of the file.
#[test]
fn biostacks_shows_the_write_path_of_direct_writes() {
    require_root();
    let dir = scratch("biostacks_shows_the_write_path_of_direct_writes");
    let file = dir.join("file");
    let disk = disk_of(&dir);
    let of = format!("of={}", file.display());
    let dd = |extra: &[&str]| {
        let mut args = vec!["if=/dev/zero", of.as_str(), "bs=4k", "count=300"];
        args.extend(extra);
        args.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let mut prepare = Command::new("dd");
    prepare.args(dd(&["conv=fsync"]));
    run(prepare, TIMEOUT).assert_code(0);
    let mut args = vec![
        "biostacks".to_string(),
        "--json".into(),
        "--".into(),
        "dd".into(),
    ];
    args.extend(dd(&["oflag=direct", "conv=notrunc"]));
    let run = tracekit(&args, TIMEOUT);
    let _ = std::fs::remove_dir_all(&dir);
    run.assert_code(0);
    let json = parse_json(&run.stdout);
    let mut writes = 0;
    for group in json["groups"].as_array().unwrap() {
        let key = &group["key"];
        let stack = key["STACK"].as_str().unwrap();
        let frames: Vec<&str> = stack.split(';').collect();
        if key["COMM"] == "dd" && frames.iter().any(|f| f.ends_with("sys_write")) {
            assert_eq!(key["DISK"], disk.as_str(), "{group:#}");
            // The histogram holds every latency of the group.
            let in_buckets = tracekit_tests::hist_total(group);
            assert_eq!(in_buckets, group["count"].as_u64().unwrap(), "{group:#}");
            assert!(
                frames
                    .iter()
                    .any(|f| f.contains("dio") || f.contains("direct")),
                "not a direct I/O path: {stack}"
            );
            writes += group["count"].as_u64().unwrap();
        }
    }
    // Completions the kernel did not run the program for are reported in the stats.
    let stats = &json["stats"];
    let not_seen = stats["missed"].as_u64().unwrap() + stats["starts_missed"].as_u64().unwrap();
    assert!(
        writes <= 300 && writes + not_seen >= 300 && not_seen <= 3,
        "{writes} writes, {not_seen} not seen: {}\n{}",
        run.stdout,
        run.stderr
    );
}
