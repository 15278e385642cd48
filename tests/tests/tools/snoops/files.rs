//! File calls: opens (fd or errno), syncs, stats and mounts.

use std::{
    collections::{BTreeMap, BTreeSet},
    time::Duration,
};

use serde_json::Value;
use tracekit_tests::{fixture, require_root, scratch, total_count, tracekit};

use super::{json_lines, snoop, snoop_text, with_bpftrace};

const TIMEOUT: Duration = Duration::from_secs(120);

#[test]
fn opensnoop_shows_each_open_with_its_fd_and_each_failure_with_its_errno() {
    require_root();
    // Short, so every path fits the 32 bytes the engine reads.
    let dir = format!("/tmp/tkos{}", std::process::id());
    std::fs::create_dir_all(&dir).unwrap();
    let (truth, events) = snoop(
        "opensnoop",
        "opensnoop",
        &[],
        &["opens", &dir, "300", "100"],
    );
    let expected: BTreeSet<(String, i64, i64)> = truth
        .lines()
        .map(|line| {
            let parts: Vec<&str> = line.split(' ').collect();
            match parts[..] {
                ["open", path, fd] => (path.to_string(), fd.parse().unwrap(), 0),
                ["fail", path, errno] => (path.to_string(), -1, errno.parse().unwrap()),
                _ => panic!("truth line {line}"),
            }
        })
        .collect();
    assert_eq!(expected.len(), 400);
    let seen: BTreeSet<(String, i64, i64)> = events
        .iter()
        .filter(|e| e["path"].as_str().unwrap().starts_with(&dir))
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_string(),
                e["fd"].as_i64().unwrap(),
                e["err"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(seen, expected);
    // -x: only the 100 failures (the loader's opens of libraries succeed).
    let (_, failed) = snoop(
        "opensnoop_x",
        "opensnoop",
        &["-x"],
        &["opens", &dir, "300", "100"],
    );
    let failed: BTreeSet<(String, i64, i64)> = failed
        .iter()
        .filter(|e| e["path"].as_str().unwrap().starts_with(&dir))
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_string(),
                e["fd"].as_i64().unwrap(),
                e["err"].as_i64().unwrap(),
            )
        })
        .collect();
    let expected_failed: BTreeSet<_> = expected.into_iter().filter(|e| e.1 == -1).collect();
    assert_eq!(expected_failed.len(), 100);
    assert_eq!(failed, expected_failed);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn syncsnoop_shows_each_sync_call_by_name() {
    require_root();
    let file = scratch("syncsnoop").join("synced");
    let (truth, events) = snoop(
        "syncsnoop",
        "syncsnoop",
        &[],
        &["syncs", file.to_str().unwrap(), "50"],
    );
    let expected: BTreeMap<String, usize> = truth
        .lines()
        .map(|line| {
            let (call, n) = line.split_once(' ').unwrap();
            (call.to_string(), n.parse().unwrap())
        })
        .collect();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for event in &events {
        *seen
            .entry(event["call"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    assert_eq!(seen, expected);
}

#[test]
fn opensnoop_sees_what_bpftraces_opensnoop_sees() {
    require_root();
    let dir = format!("/tmp/tkob{}", std::process::id());
    std::fs::create_dir_all(&dir).unwrap();
    let workload = ["opens", dir.as_str(), "300", "100"];
    let (truth, theirs, ours) =
        with_bpftrace("opensnoop_bt", "opensnoop.bt", "opensnoop", &workload);
    // The fixture's truth: `open PATH FD` and `fail PATH ERRNO`.
    let expected: BTreeSet<(String, i64, i64)> = truth
        .lines()
        .map(|line| match line.split(' ').collect::<Vec<_>>()[..] {
            ["open", path, fd] => (path.to_string(), fd.parse().unwrap(), 0),
            ["fail", path, errno] => (path.to_string(), -1, errno.parse().unwrap()),
            _ => panic!("truth line {line}"),
        })
        .collect();
    // `PID COMM FD ERR PATH`
    let theirs: BTreeSet<(String, i64, i64)> = theirs
        .lines()
        .filter_map(|line| {
            let parts: Vec<&str> = line.split_whitespace().collect();
            match parts[..] {
                [_, _, fd, err, path] if path.starts_with(&dir) => {
                    Some((path.to_string(), fd.parse().ok()?, err.parse().ok()?))
                }
                _ => None,
            }
        })
        .collect();
    let ours: BTreeSet<(String, i64, i64)> = ours
        .iter()
        .filter(|e| e["path"].as_str().unwrap().starts_with(&dir))
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_string(),
                e["fd"].as_i64().unwrap(),
                e["err"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(expected.len(), 400);
    assert_eq!(theirs, expected);
    assert_eq!(ours, theirs);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn syncsnoop_sees_what_bpftraces_syncsnoop_sees() {
    require_root();
    let file = scratch("syncsnoop_bt_file").join("synced");
    let workload = ["syncs", file.to_str().unwrap(), "50"];
    let (_, theirs, ours) = with_bpftrace("syncsnoop_bt", "syncsnoop.bt", "syncsnoop", &workload);
    // `TIME PID COMM EVENT`, EVENT the probe (`tracepoint:syscalls:sys_enter_fsync`).
    let mut counted: BTreeMap<String, usize> = BTreeMap::new();
    for line in theirs.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        if let [_, _, "tk_snoops", probe] = parts[..]
            && let Some(call) = probe.strip_prefix("tracepoint:syscalls:sys_enter_")
        {
            *counted.entry(call.to_string()).or_default() += 1;
        }
    }
    let mut ours_counted: BTreeMap<String, usize> = BTreeMap::new();
    for event in ours.iter().filter(|e| e["comm"] == "tk_snoops") {
        *ours_counted
            .entry(event["call"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    assert_eq!(counted.values().sum::<usize>(), 5 * 50 + 1, "{counted:?}");
    assert_eq!(ours_counted, counted);
}

/// statx(2) of 200 files and 100 missing ones: each with its path and errno, under `-x`
/// only the failures; bpftrace's statsnoop.bt (which traces statx too) sees the same.
#[test]
fn statsnoop_shows_each_stat_and_sees_what_bpftraces_statsnoop_sees() {
    require_root();
    let dir = format!("/tmp/tkst{}", std::process::id());
    std::fs::create_dir_all(&dir).unwrap();
    let workload = ["stats", dir.as_str(), "200", "100"];
    let (truth, events) = snoop("statsnoop", "statsnoop", &[], &workload);
    let expected: BTreeSet<(String, i64)> = truth
        .lines()
        .map(|line| {
            let parts: Vec<&str> = line.split(' ').collect();
            (parts[1].to_string(), parts[2].parse().unwrap())
        })
        .collect();
    assert_eq!(expected.len(), 300);
    let mine = |events: &[Value]| -> BTreeSet<(String, i64)> {
        events
            .iter()
            .filter(|e| e["path"].as_str().unwrap().starts_with(&dir))
            .map(|e| {
                (
                    e["path"].as_str().unwrap().to_string(),
                    e["err"].as_i64().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(mine(&events), expected);
    let (_, failed) = snoop("statsnoop_x", "statsnoop", &["-x"], &workload);
    let expected_failed: BTreeSet<_> = expected.iter().filter(|e| e.1 != 0).cloned().collect();
    assert_eq!(expected_failed.len(), 100);
    assert_eq!(mine(&failed), expected_failed);
    // One more run, watched by tracekit and bpftrace's statsnoop.bt at once: the same
    // stats (paths are the same in every run of the fixture, and so are their errnos).
    let (_, theirs, ours) = with_bpftrace("statsnoop_bt", "statsnoop.bt", "statsnoop", &workload);
    assert_eq!(mine(&ours), expected);
    // `PID COMM ERR PATH`
    let theirs: BTreeSet<(String, i64)> = theirs
        .lines()
        .filter_map(|line| {
            let parts: Vec<&str> = line.split_whitespace().collect();
            match parts[..] {
                [_, _, err, path] if path.starts_with(&dir) => {
                    Some((path.to_string(), err.parse().ok()?))
                }
                _ => None,
            }
        })
        .collect();
    assert_eq!(theirs, expected);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A tmpfs mounted (read-only, so the flags are known) and unmounted: one line with its
/// type, source, target and flags.
#[test]
fn mountsnoop_shows_a_mount() {
    require_root();
    let target = format!("/tmp/tkmnt{}", std::process::id());
    std::fs::create_dir_all(&target).unwrap();
    let out = scratch("mountsnoop").join("mounts.json");
    let script = format!("mount -t tmpfs -o ro tk-src {target} && umount {target}");
    let run = tracekit(
        [
            "mountsnoop",
            "--json",
            "-o",
            out.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            &script,
        ],
        TIMEOUT,
    );
    let _ = std::fs::remove_dir(&target);
    run.assert_code(0);
    let (text, events) = json_lines(&out);
    assert_eq!(events.len(), 1, "{text}");
    assert_eq!(events[0]["fstype"], "tmpfs", "{text}");
    assert_eq!(events[0]["source"], "tk-src", "{text}");
    assert_eq!(events[0]["target"], target.as_str(), "{text}");
    // MS_RDONLY.
    assert_eq!(events[0]["flags"].as_u64().unwrap() & 1, 1, "{text}");
}

/// A directory under /tmp whose files `DIR/fI` have paths of about `len` bytes (components
/// of at most 200 bytes: NAME_MAX is 255).
fn long_dir(len: usize) -> String {
    let mut dir = format!("/tmp/tkol{}_{len}", std::process::id());
    while dir.len() + 6 < len {
        let room = (len - dir.len() - 6).min(200);
        dir.push('/');
        dir.push_str(&"d".repeat(room.max(1)));
    }
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The paths a `opens`/`stats` truth names.
fn truth_paths(truth: &str) -> BTreeSet<String> {
    truth
        .lines()
        .filter_map(|line| {
            let parts: Vec<&str> = line.split(' ').collect();
            matches!(parts[0], "open" | "fail" | "stat").then(|| parts[1].to_string())
        })
        .collect()
}

/// Paths of about 100, 255 and 4000 bytes, and the ENOENT calls on them, show whole in
/// `tool`'s JSON `path` and in its text's last column: each of the fixture's 100 calls that
/// succeed and 100 that fail once (`mode`: `opens` or `stats`).
fn long_paths_whole(tool: &str, mode: &str) {
    for len in [100, 255, 4000] {
        let dir = long_dir(len);
        let workload = [mode, &dir, "100", "100"];
        let (truth, events) = snoop(tool, tool, &[], &workload);
        let expected = truth_paths(&truth);
        assert_eq!(expected.len(), 200, "{len}");
        let seen: Vec<String> = events
            .iter()
            .filter_map(|e| e["path"].as_str())
            .filter(|path| path.starts_with(&dir))
            .map(str::to_string)
            .collect();
        assert_eq!(seen.len(), 200, "{tool}: JSON events of {len}-byte paths");
        let seen: BTreeSet<String> = seen.into_iter().collect();
        assert_eq!(seen, expected, "{tool}: paths of {len} bytes, JSON");
        // The text: the path is the last column (these have no spaces).
        let (truth, text) = snoop_text(&format!("{tool}_text"), tool, &[], &workload);
        assert_eq!(truth_paths(&truth), expected);
        let seen: Vec<String> = text
            .lines()
            .filter_map(|line| line.split(' ').next_back())
            .filter(|path| path.starts_with(&dir))
            .map(str::to_string)
            .collect();
        assert_eq!(seen.len(), 200, "{tool}: text lines of {len}-byte paths");
        let seen: BTreeSet<String> = seen.into_iter().collect();
        assert_eq!(seen, expected, "{tool}: paths of {len} bytes, text");
        let top = dir.split('/').take(3).collect::<Vec<_>>().join("/");
        let _ = std::fs::remove_dir_all(top);
    }
}

#[test]
fn opensnoop_shows_long_paths_whole() {
    require_root();
    long_paths_whole("opensnoop", "opens");
}

#[test]
fn statsnoop_shows_long_paths_whole() {
    require_root();
    long_paths_whole("statsnoop", "stats");
}

/// `trace --print filename` at the entry of openat, text and JSON: the 4000-byte paths whole.
#[test]
fn trace_prints_long_filenames_whole() {
    require_root();
    let dir = long_dir(4000);
    let program = fixture("tk_snoops");
    let dir_out = scratch("trace_long_filenames");
    for json in [false, true] {
        let out = dir_out.join(if json { "trace.json" } else { "trace.txt" });
        let out_text = out.to_str().unwrap();
        // Lines of 4 KiB from two processes on one pipe interleave: ours go to a file.
        let mut args = vec![
            "trace",
            "syscalls:sys_enter_openat",
            "--print",
            "filename",
            "-o",
            out_text,
        ];
        if json {
            args.push("--json");
        }
        args.extend(["--", program.to_str().unwrap(), "opens", &dir, "100", "100"]);
        let run = tracekit(&args, TIMEOUT);
        run.assert_code(0);
        let expected = truth_paths(&run.stdout);
        assert_eq!(expected.len(), 200);
        let text = std::fs::read_to_string(&out).unwrap();
        let seen: BTreeSet<String> = if json {
            text.lines()
                .filter(|line| line.starts_with('{'))
                .filter_map(|line| {
                    let e: Value = serde_json::from_str(line).unwrap();
                    e["filename"].as_str().map(str::to_string)
                })
                .filter(|path| path.starts_with(&dir))
                .collect()
        } else {
            text.lines()
                .filter_map(|line| line.split_once(" \"")?.1.strip_suffix('"'))
                .filter(|path| path.starts_with(&dir))
                .map(str::to_string)
                .collect()
        };
        assert_eq!(seen, expected, "json: {json}");
    }
    let top = dir.split('/').take(3).collect::<Vec<_>>().join("/");
    let _ = std::fs::remove_dir_all(top);
}

/// `--full-path`: `openat(dirfd, "rel/x")` shows as the absolute DIR/rel/x.
#[test]
fn opensnoop_full_path_resolves_a_dirfd() {
    require_root();
    let dir = format!("/tmp/tkfp{}", std::process::id());
    std::fs::create_dir_all(&dir).unwrap();
    let (truth, events) = snoop(
        "opensnoop_full_path",
        "opensnoop",
        &["--full-path"],
        &["openat-rel", &dir, "10"],
    );
    let path = format!("{dir}/rel/x");
    assert_eq!(truth_paths(&truth), BTreeSet::from([path.clone()]));
    // The fixture's creation of the file, then its 10 opens through the dirfd.
    let full = events.iter().filter(|e| e["path"] == path.as_str()).count();
    assert_eq!(full, 11, "{events:?}");
    assert!(!events.iter().any(|e| e["path"] == "rel/x"), "{events:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--full-path` names directories as the kernel's dentries do at the open, not as /proc
/// shows them later: 100 processes that each open `openat(dirfd, "rel/x")` and, after
/// chdir, `open("rel/y")`, then exit at once, show both paths absolute, 100 of 100; in
/// /dev/shm (a tmpfs mounted on /dev) the walk crosses the mount.
#[test]
fn opensnoop_full_path_outlives_the_process() {
    require_root();
    for top in ["/tmp", "/dev/shm"] {
        let dir = format!("{top}/tkfpx{}", std::process::id());
        std::fs::create_dir_all(&dir).unwrap();
        let (truth, events) = snoop(
            "opensnoop_full_path_exits",
            "opensnoop",
            &["--full-path"],
            &["rel-exits", &dir, "100"],
        );
        let (x, y) = (format!("{dir}/rel/x"), format!("{dir}/rel/y"));
        assert_eq!(truth_paths(&truth), BTreeSet::from([x.clone(), y.clone()]));
        for path in [&x, &y] {
            // The parent's creation of the file, then one open by each child.
            let seen = events.iter().filter(|e| e["path"] == path.as_str()).count();
            assert_eq!(seen, 101, "{path}: {events:?}");
        }
        assert!(
            !events
                .iter()
                .any(|e| e["path"] == "rel/x" || e["path"] == "rel/y"),
            "{events:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// `TRACEKIT ARGS -o OUT -- tk_snoops opens DIR 100 100` (DIR/f0..f99 opened,
/// DIR/missing0..99 failing): what it wrote to OUT.
fn on_opens(args: &[&str], dir: &str) -> String {
    let out = scratch("on_opens").join("out.json");
    let program = fixture("tk_snoops");
    let mut all = args.to_vec();
    all.extend(["-o", out.to_str().unwrap()]);
    all.extend(["--", program.to_str().unwrap(), "opens", dir, "100", "100"]);
    let run = tracekit(&all, TIMEOUT);
    run.assert_code(0);
    std::fs::read_to_string(&out).unwrap()
}

/// String filters compare whole strings, in traces and in counts: paths of about 100 bytes
/// end with `/f7` once, contain `missing4` 11 times (4, 40..49), and none equals its own
/// first 31 bytes (a string's head alone matched every path that starts alike).
#[test]
fn string_filters_compare_whole_strings() {
    require_root();
    let dir = long_dir(100);
    let short = format!("/tmp/tkse{}", std::process::id());
    std::fs::create_dir_all(&short).unwrap();
    let head: String = format!("{dir}/f1").chars().take(31).collect();
    let cases = [
        (&dir, "filename ~ \"*/f7\"".to_string(), 1),
        (&dir, "filename ~ \"*missing4*\"".to_string(), 11),
        (&dir, format!("filename ~ \"{}*\"", &dir[..20]), 200),
        (&dir, format!("filename == \"{head}\""), 0),
        (&short, format!("filename == \"{short}/f7\""), 1),
        (&short, format!("filename == \"{short}/f\""), 0),
        (&short, "filename ~ \"*/f7*\"".to_string(), 11),
    ];
    for (dir, filter, expected) in cases {
        let out = on_opens(
            &[
                "trace",
                "syscalls:sys_enter_openat",
                "--print",
                "filename",
                "--json",
                "--filter",
                &filter,
            ],
            dir,
        );
        let seen = out.lines().filter(|line| line.starts_with('{')).count();
        assert_eq!(seen, expected, "trace --filter '{filter}'\n{out}");
        let out = on_opens(
            &[
                "count",
                "syscalls:sys_enter_openat",
                "--json",
                "--filter",
                &filter,
            ],
            dir,
        );
        let counted = total_count(&serde_json::from_str(&out).unwrap());
        assert_eq!(counted, expected as u64, "count --filter '{filter}'\n{out}");
    }
    let top = dir.split('/').take(3).collect::<Vec<_>>().join("/");
    let _ = std::fs::remove_dir_all(top);
    let _ = std::fs::remove_dir_all(short);
}

/// A string group key keeps a string's first 31 bytes, and shows a longer one with `...`:
/// the 200 opens under a directory of about 100 bytes share one group, marked; a path of
/// 31 bytes or fewer (`/etc/ld.so.cache`) is not.
#[test]
fn string_keys_keep_31_bytes_marked() {
    require_root();
    let dir = long_dir(100);
    let out = on_opens(
        &[
            "count",
            "syscalls:sys_enter_openat",
            "--by",
            "filename",
            "--json",
        ],
        &dir,
    );
    let counts: Value = serde_json::from_str(&out).unwrap();
    let groups: Vec<(String, u64)> = counts["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let key = g["key"]["filename"].as_str().unwrap().to_string();
            (key, g["count"].as_u64().unwrap())
        })
        .collect();
    let head: String = dir.chars().take(31).collect();
    let marked: Vec<&(String, u64)> = groups
        .iter()
        .filter(|(k, _)| k.starts_with(&head))
        .collect();
    assert_eq!(marked, [&(format!("{head}..."), 200)], "{out}");
    // Every other key is either whole (31 bytes at most) or its first 31 bytes and the
    // mark: the fixture's libraries sit under paths as long as the checkout's.
    assert!(
        groups.iter().all(|(k, _)| match k.strip_suffix("...") {
            Some(cut) => cut.len() == 31,
            None => k.len() <= 31,
        }),
        "{out}"
    );
    assert!(groups.iter().any(|(k, _)| !k.ends_with("...")), "{out}");
    let top = dir.split('/').take(3).collect::<Vec<_>>().join("/");
    let _ = std::fs::remove_dir_all(top);
}
