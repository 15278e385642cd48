//! The filesystem tools: `fsdist` and `fsslower` (`--fs ext4|xfs|btrfs|nfs`, and their
//! aliases `ext4dist`, `ext4slower`, ...), `filelife`, `dcsnoop`, `filetop` and
//! `cachestat`. They probe the filesystem's own kernel functions (`ext4_file_read_iter`,
//! ...), so the tests that trace run in the VM kernel matrix (`cargo xtask test --vm
//! kfunc_tool_fs`), where the image mounts an ext4 filesystem on a loop device
//! (`xtask/src/vm/image.rs`); the unknown-filesystem test runs anywhere.

use std::{path::PathBuf, time::Duration};

use tracekit_tests::{
    fixture, function_count, kprobes_or_skip, parse_json, require_root, tracekit,
};

// Emulated VMs run everything 2-10x slower.
const TIMEOUT: Duration = Duration::from_secs(300);

/// A fresh directory on a mounted, writable ext4 filesystem (the first in /proc/mounts), or
/// `None` with a printed reason.
fn ext4_dir(test: &str) -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    for line in mounts.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 4 || fields[2] != "ext4" || fields[3].split(',').any(|o| o == "ro") {
            continue;
        }
        let dir = PathBuf::from(fields[1]).join(format!("tracekit-{test}-{}", std::process::id()));
        if std::fs::create_dir_all(&dir).is_ok() {
            return Some(dir);
        }
    }
    assert!(
        !std::path::Path::new("/ext4.img").exists(),
        "{test}: the VM image's /ext4.img is not mounted (its /init mounts it at /mnt/ext4)"
    );
    eprintln!(
        "{test}: skipped: no writable ext4 filesystem is mounted (the VM image mounts one at \
         /mnt/ext4 when mkfs.ext4 built its image)"
    );
    None
}

/// The event file a test's tool writes in its directory.
const OUT: &str = "events.json";

/// `TOOL --json -o DIR/events.json -- sh -c SCRIPT`, where the script makes files `PREFIX0`
/// to `PREFIX{N-1}` in `dir`: the tool ends well and loses nothing, and the `file`s of the
/// events `keep` selects (each event checked with `check`) are exactly those, each once.
/// Removes `dir`.
fn assert_each_file(
    tool: &str,
    dir: &std::path::Path,
    script: &str,
    (prefix, n): (&str, usize),
    keep: impl Fn(&str) -> bool,
    check: impl Fn(&serde_json::Value),
) {
    let out = dir.join(OUT).to_string_lossy().into_owned();
    let run = tracekit(
        [tool, "--json", "-o", &out, "--", "sh", "-c", script],
        TIMEOUT,
    );
    run.assert_code(0);
    assert!(run.stderr.contains("Lost: nothing."), "{}", run.stderr);
    let text = std::fs::read_to_string(&out).unwrap();
    let mut files: Vec<String> = Vec::new();
    for line in text.lines() {
        let e: serde_json::Value = serde_json::from_str(line).unwrap();
        let file = e["file"].as_str().unwrap().to_string();
        if !keep(&file) {
            continue;
        }
        check(&e);
        files.push(file);
    }
    files.sort();
    let mut expected: Vec<String> = (0..n).map(|i| format!("{prefix}{i}")).collect();
    expected.sort();
    assert_eq!(files, expected, "{text}");
    let _ = std::fs::remove_dir_all(dir);
}

/// `TOOL --json ARGS -- tk_files FILE WRITES READS`'s JSON.
fn run_files(tool: &[&str], file: &std::path::Path, writes: u64, reads: u64) -> serde_json::Value {
    let fixture = fixture("tk_files").to_string_lossy().into_owned();
    let (writes, reads) = (writes.to_string(), reads.to_string());
    let file = file.to_string_lossy().into_owned();
    let mut args: Vec<&str> = tool.to_vec();
    args.extend(["--json", "--", &fixture, &file, &writes, &reads]);
    let run = tracekit(&args, TIMEOUT);
    run.assert_code(0);
    parse_json(&run.stdout)
}

/// fsdist --fs ext4 of `tk_files F 300 200` and of `tk_files F 100 700` on ext4: one
/// histogram per function, exactly the fixture's writes in ext4_file_write_iter's, one
/// fsync, and 500 more reads in the second run (a dynamically linked fixture's loader may
/// read its libraries from an ext4 root too; in the VM, whose root is the initramfs, the
/// reads are exact as well). The alias ext4dist is the same tool.
#[test]
fn kfunc_tool_fsdist_ext4_counts_each_operation() {
    require_root();
    if !kprobes_or_skip("kfunc_tool_fsdist_ext4_counts_each_operation") {
        return;
    }
    let Some(dir) = ext4_dir("fsdist") else {
        return;
    };
    let file = dir.join("data");
    let first = run_files(&["fsdist", "--fs", "ext4"], &file, 300, 200);
    let second = run_files(&["ext4dist"], &file, 100, 700);
    let _ = std::fs::remove_dir_all(&dir);
    for (json, writes) in [(&first, 300), (&second, 100)] {
        assert_eq!(
            function_count(json, "ext4_file_write_iter"),
            writes,
            "{json:#}"
        );
        assert_eq!(function_count(json, "ext4_sync_file"), 1, "{json:#}");
        assert!(function_count(json, "ext4_file_open") >= 2, "{json:#}");
        for group in json["groups"].as_array().unwrap() {
            let function = group["key"]["function"].as_str().unwrap();
            assert!(function.starts_with("ext4_"), "{function}: {json:#}");
            let in_buckets = tracekit_tests::hist_total(group);
            assert_eq!(in_buckets, group["count"].as_u64().unwrap(), "{json:#}");
        }
    }
    assert_eq!(
        function_count(&second, "ext4_file_read_iter")
            - function_count(&first, "ext4_file_read_iter"),
        500,
        "{first:#}\n{second:#}"
    );
    if std::env::var_os("TRACEKIT_FIXTURES").is_some() {
        // The VM's static fixture, on its initramfs root: nothing but its own reads.
        assert_eq!(
            function_count(&first, "ext4_file_read_iter"),
            200,
            "{first:#}"
        );
        assert_eq!(function_count(&first, "ext4_file_open"), 2, "{first:#}");
    }
}

/// ext4slower 0 (every call) and fsslower --fs ext4 0 of `tk_files NAME 300 400` on ext4,
/// NAME 24 bytes long (libbpf-tools keeps 31): exactly the fixture's calls on the file, in
/// order, each with its whole name and T O, W, F or R: the open that creates it (0 bytes
/// at 0 KiB, as libbpf-tools prints opens), 300 writes of 4096 bytes at offsets 0, 4, ...
/// 1196 KiB, one fsync (0, 0), the second open, and 400 reads, the first 300 of 4096 bytes
/// at the same offsets and the last 100 of 0 bytes at the end (1200 KiB). Reads and writes
/// have the name from the `struct kiocb *`, opens and fsyncs from their `struct file *`:
/// three probe groups whose events merge in time order.
#[test]
fn kfunc_tool_fsslower_ext4_shows_each_read_write_open_and_fsync() {
    require_root();
    if !kprobes_or_skip("kfunc_tool_fsslower_ext4_shows_each_read_write_open_and_fsync") {
        return;
    }
    let Some(dir) = ext4_dir("fsslower") else {
        return;
    };
    const NAME: &str = "fsslower-whole-name.data";
    assert_eq!(NAME.len(), 24);
    let file = dir.join(NAME);
    let fixture = fixture("tk_files").to_string_lossy().into_owned();
    let path = file.to_string_lossy().into_owned();
    let mut expected: Vec<(String, i64, i64)> = vec![("O".into(), 0, 0)];
    expected.extend((0..300).map(|i| ("W".into(), 4096, 4 * i)));
    expected.push(("F".into(), 0, 0));
    expected.push(("O".into(), 0, 0));
    expected.extend((0..400).map(|i| {
        if i < 300 {
            ("R".to_string(), 4096, 4 * i)
        } else {
            ("R".to_string(), 0, 1200)
        }
    }));
    for tool in [&["ext4slower", "0"][..], &["fsslower", "--fs", "ext4", "0"]] {
        let out = dir.join(OUT).to_string_lossy().into_owned();
        let mut args: Vec<&str> = tool.to_vec();
        args.extend(["--json", "-o", &out, "--", &fixture, &path, "300", "400"]);
        let run = tracekit(&args, TIMEOUT);
        run.assert_code(0);
        assert!(run.stderr.contains("Lost: nothing."), "{}", run.stderr);
        let text = std::fs::read_to_string(&out).unwrap();
        let events: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .filter(|e: &serde_json::Value| e["filename"] == NAME)
            .collect();
        let seen: Vec<(String, i64, i64)> = events
            .iter()
            .map(|e| {
                assert_eq!(e["comm"], "tk_files", "{e}");
                assert!(e["lat_ms"].as_f64().unwrap() >= 0.0, "{e}");
                (
                    e["t"].as_str().unwrap().to_string(),
                    e["bytes"].as_i64().unwrap(),
                    e["off_kb"].as_i64().unwrap(),
                )
            })
            .collect();
        assert_eq!(seen, expected, "{tool:?}\n{text}");
        // Nothing else of the fixture's (its binary is not on ext4 in the VM).
        if std::env::var_os("TRACEKIT_FIXTURES").is_some() {
            assert_eq!(text.lines().count(), 703, "{text}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// filelife of a shell that creates 40 files on ext4, sleeps 1 s and deletes them and a
/// file made before tracing began: exactly the 40 files, each once, aged at least 1 s,
/// deleted by `rm`; the older file is not shown (its creation was not seen).
#[test]
fn kfunc_tool_filelife_shows_each_deleted_file_with_its_age() {
    require_root();
    if !kprobes_or_skip("kfunc_tool_filelife_shows_each_deleted_file_with_its_age") {
        return;
    }
    let Some(dir) = ext4_dir("filelife") else {
        return;
    };
    std::fs::write(dir.join("old"), b"x").unwrap();
    let script = format!(
        "cd {} && i=0; while [ $i -lt 40 ]; do : > tkf$i; i=$((i+1)); done; sleep 1; rm tkf* old",
        dir.display()
    );
    assert_each_file(
        "filelife",
        &dir,
        &script,
        ("tkf", 40),
        |file| file != OUT,
        |e| assert!(e["age_s"].as_f64().unwrap() >= 1.0, "{e}"),
    );
}

/// filelife shows a file's name (its dentry's, `NAME_MAX` 255 bytes at most), not its
/// path: 100 names of 100 bytes, 100 of 255, and 100 of 255 in a directory whose paths come
/// to about 4000 bytes show whole, 100 of 100 each, in JSON and in text.
#[test]
fn kfunc_tool_filelife_shows_long_names_whole() {
    require_root();
    if !kprobes_or_skip("kfunc_tool_filelife_shows_long_names_whole") {
        return;
    }
    let Some(dir) = ext4_dir("filelife-long") else {
        return;
    };
    // Directories of 200 bytes, the last shorter: DEEP/NAME comes to 4000 bytes.
    let mut deep = dir.clone();
    for i in 0.. {
        let room = 4000usize.saturating_sub(deep.as_os_str().len() + 1 + 255 + 1);
        if room == 0 {
            break;
        }
        deep = deep.join(format!("{i:02}{}", "d".repeat(room.clamp(3, 200) - 2)));
    }
    std::fs::create_dir_all(&deep).unwrap();
    let name = |i: usize, len: usize| format!("{i:03}{}", "n".repeat(len - 3));
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    for (at, len) in [(&dir, 100), (&dir, 255), (&deep, 255)] {
        files.extend((0..100).map(|i| (at.join(name(i, len)), name(i, len))));
    }
    let longest = files
        .iter()
        .map(|(path, _)| path.as_os_str().len())
        .max()
        .unwrap();
    assert!((3995..4096).contains(&longest), "{longest}");
    let script = files
        .iter()
        .map(|(path, _)| format!(": > {}\n", path.display()))
        .chain(
            files
                .iter()
                .map(|(path, _)| format!("rm {}\n", path.display())),
        )
        .collect::<String>();
    let script_path = dir.join("make-and-remove.sh");
    std::fs::write(&script_path, script).unwrap();
    let mut expected: Vec<&str> = files.iter().map(|(_, name)| name.as_str()).collect();
    expected.sort();
    for json in [true, false] {
        let out = dir.join(if json { OUT } else { "events.txt" });
        let out = out.to_string_lossy().into_owned();
        let mut args = vec!["filelife", "-o", &out];
        if json {
            args.push("--json");
        }
        let script = script_path.to_string_lossy().into_owned();
        args.extend(["--", "sh", &script]);
        let run = tracekit(&args, TIMEOUT);
        run.assert_code(0);
        assert!(run.stderr.contains("Lost: nothing."), "{}", run.stderr);
        let text = std::fs::read_to_string(&out).unwrap();
        let mut seen: Vec<String> = if json {
            text.lines()
                .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
                .filter_map(|e| e["file"].as_str().map(str::to_string))
                .collect()
        } else {
            text.lines()
                .filter_map(|line| line.split_whitespace().last().map(str::to_string))
                .collect()
        };
        seen.retain(|file| file.len() >= 100);
        seen.sort();
        assert_eq!(seen, expected, "json: {json}\n{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// dcsnoop of a shell that creates 30 new files: each name misses the dentry cache once
/// (`d_lookup` in `lookup_open` returns NULL for a name about to be created), T `M`, in the
/// shell's own pid and tid.
#[test]
fn kfunc_tool_dcsnoop_shows_each_miss() {
    require_root();
    if !kprobes_or_skip("kfunc_tool_dcsnoop_shows_each_miss") {
        return;
    }
    let Some(dir) = ext4_dir("dcsnoop") else {
        return;
    };
    let script = format!(
        "cd {} && i=0; while [ $i -lt 30 ]; do : > tkd$i; i=$((i+1)); done",
        dir.display()
    );
    assert_each_file(
        "dcsnoop",
        &dir,
        &script,
        ("tkd", 30),
        |file| file.starts_with("tkd"),
        |e| {
            assert_eq!(e["t"], "M", "{e}");
            assert_eq!(e["pid"], e["tid"], "{e}");
        },
    );
}

/// dcsnoop --all-lookups (bcc's -a) of a shell that tests 20 existing files (`[ -e
/// tkrI ]`: one path walk each, found by `lookup_fast`) and makes 15 new directories in
/// one `mkdir` (`filename_create`: a `d_lookup` miss each, no `lookup_fast` of the last
/// component): exactly one `R` row per tkr name and one `M` row per tkm name, nothing else
/// for those names.
#[test]
fn kfunc_tool_dcsnoop_all_lookups_shows_references_and_misses() {
    require_root();
    if !kprobes_or_skip("kfunc_tool_dcsnoop_all_lookups_shows_references_and_misses") {
        return;
    }
    let Some(dir) = ext4_dir("dcsnoop-all") else {
        return;
    };
    let (found, missing) = (20, 15);
    for i in 0..found {
        std::fs::write(dir.join(format!("tkr{i}")), b"x").unwrap();
    }
    let made: Vec<String> = (0..missing).map(|i| format!("tkm{i}")).collect();
    let script = format!(
        "cd {} && i=0; while [ $i -lt {found} ]; do [ -e tkr$i ]; i=$((i+1)); done; mkdir {}",
        dir.display(),
        made.join(" ")
    );
    let out = dir.join(OUT).to_string_lossy().into_owned();
    let run = tracekit(
        [
            "dcsnoop",
            "--all-lookups",
            "--json",
            "-o",
            &out,
            "--",
            "sh",
            "-c",
            &script,
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    assert!(run.stderr.contains("Lost: nothing."), "{}", run.stderr);
    let text = std::fs::read_to_string(&out).unwrap();
    let mut rows: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let e: serde_json::Value = serde_json::from_str(line).unwrap();
        let file = e["file"].as_str().unwrap().to_string();
        if file.starts_with("tkr") || file.starts_with("tkm") {
            assert_eq!(e["pid"], e["tid"], "{e}");
            rows.push((e["t"].as_str().unwrap().to_string(), file));
        }
    }
    rows.sort();
    let mut expected: Vec<(String, String)> =
        made.iter().map(|f| ("M".into(), f.clone())).collect();
    expected.extend((0..found).map(|i| ("R".to_string(), format!("tkr{i}"))));
    expected.sort();
    assert_eq!(rows, expected, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// filetop of `tk_files data 300 200` on ext4: the fixture's thread and `data` (T `R`, a
/// regular file) have exactly 300 vfs_write calls of 4096 bytes and 200 vfs_read calls of
/// 4096 bytes. The text table has libbpf-tools' columns `TID COMM READS WRITES R_KB W_KB T
/// FILE`; with `dd if=data of=/dev/null bs=4096 count=50` after the fixture, dd's rows are
/// `50 0 200 0 R data` and `0 50 0 200 O null` (a character device); `--regular` leaves
/// the second out.
#[test]
fn kfunc_tool_filetop_counts_reads_and_writes_per_file() {
    require_root();
    if !kprobes_or_skip("kfunc_tool_filetop_counts_reads_and_writes_per_file") {
        return;
    }
    let Some(dir) = ext4_dir("filetop") else {
        return;
    };
    let file = dir.join("data");
    let json = run_files(&["filetop"], &file, 300, 200);
    let mut seen = std::collections::BTreeMap::new();
    for group in json["groups"].as_array().unwrap() {
        let key = &group["key"];
        if key["FILE"] != "data" || key["COMM"] != "tk_files" {
            continue;
        }
        assert_eq!(key["T"], "R", "{group}");
        let function = key["function"].as_str().unwrap().to_string();
        let old = seen.insert(
            function,
            (
                group["count"].as_u64().unwrap(),
                group["sum"].as_u64().unwrap(),
            ),
        );
        assert!(old.is_none(), "{json:#}");
    }
    assert_eq!(seen.get("vfs_write"), Some(&(300, 300 * 4096)), "{json:#}");
    assert_eq!(seen.get("vfs_read"), Some(&(200, 200 * 4096)), "{json:#}");
    let fixture = fixture("tk_files").to_string_lossy().into_owned();
    let path = file.to_string_lossy().into_owned();
    let script = format!("{fixture} {path} 300 200 && dd if={path} of=/dev/null bs=4096 count=50");
    for regular in [false, true] {
        let mut args = vec!["filetop", "--top", "1000"];
        if regular {
            args.push("--regular");
        }
        args.extend(["--", "sh", "-c", &script]);
        let text = tracekit(&args, TIMEOUT);
        text.assert_code(0);
        let rows: Vec<Vec<&str>> = text
            .stdout
            .lines()
            .map(|line| line.split_whitespace().collect())
            .collect();
        let header = rows
            .iter()
            .find(|cells| cells.first() == Some(&"TID"))
            .unwrap_or_else(|| panic!("{}", text.stdout));
        assert_eq!(
            header[..],
            [
                "TID", "COMM", "READS", "WRITES", "R_KB", "W_KB", "T", "FILE"
            ]
        );
        let row = |comm: &str, file: &str| {
            rows.iter()
                .find(|cells| cells.len() == 8 && cells[1] == comm && cells[7] == file)
                .map(|cells| cells[2..].to_vec())
        };
        let fixture_row = ["200", "300", "800", "1200", "R", "data"];
        assert_eq!(
            row("tk_files", "data").as_deref(),
            Some(&fixture_row[..]),
            "{}",
            text.stdout
        );
        let dd_row = ["50", "0", "200", "0", "R", "data"];
        assert_eq!(
            row("dd", "data").as_deref(),
            Some(&dd_row[..]),
            "{}",
            text.stdout
        );
        let null_row = ["0", "50", "0", "200", "O", "null"];
        assert_eq!(
            row("dd", "null").as_deref(),
            (!regular).then_some(&null_row[..]),
            "{}",
            text.stdout
        );
        assert!(
            !regular
                || rows
                    .iter()
                    .all(|cells| cells.len() != 8 || cells[6] == "R" || cells[6] == "T"),
            "--regular shows regular files only: {}",
            text.stdout
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// filetop --sort on the run above (`tk_files data 300 200`, then dd's 50 reads of data
/// and 50 writes to /dev/null): by read calls the rows go fixture (200), dd's data (50),
/// dd's null (0); by written bytes fixture (1200 KiB), dd's null (200 KiB), dd's data (0),
/// as libbpf-tools' `-s reads` and `-s wbytes` order them.
#[test]
fn kfunc_tool_filetop_sorts_rows() {
    require_root();
    if !kprobes_or_skip("kfunc_tool_filetop_sorts_rows") {
        return;
    }
    let Some(dir) = ext4_dir("filetop-sort") else {
        return;
    };
    let fixture = fixture("tk_files").to_string_lossy().into_owned();
    let path = dir.join("data").to_string_lossy().into_owned();
    let script = format!("{fixture} {path} 300 200 && dd if={path} of=/dev/null bs=4096 count=50");
    for (sort, order) in [
        (
            "reads",
            [("tk_files", "data"), ("dd", "data"), ("dd", "null")],
        ),
        (
            "wbytes",
            [("tk_files", "data"), ("dd", "null"), ("dd", "data")],
        ),
    ] {
        let args = [
            "filetop",
            "--top",
            "1000",
            "--sort",
            sort,
            "--noclear",
            "--",
            "sh",
            "-c",
            &script,
        ];
        let text = tracekit(args, TIMEOUT);
        text.assert_code(0);
        // TID COMM READS WRITES R_KB W_KB T FILE: the known rows, in the order shown.
        let shown: Vec<(&str, &str)> = text
            .stdout
            .lines()
            .map(|line| line.split_whitespace().collect::<Vec<_>>())
            .filter(|cells| cells.len() == 8)
            .map(|cells| (cells[1], cells[7]))
            .filter(|row| order.contains(row))
            .collect();
        assert_eq!(shown, order, "--sort {sort}: {}", text.stdout);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A filesystem whose module is not loaded (xfs in the VM image): one line naming the
/// functions it lacks and the module, exit 1, nothing traced.
#[test]
fn kfunc_tool_fsdist_says_the_module_is_not_loaded() {
    require_root();
    let symbols = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    let Some(fs) = ["xfs", "btrfs", "nfs"].into_iter().find(|fs| {
        !symbols
            .lines()
            .any(|l| l.split_whitespace().nth(2) == Some(&format!("{fs}_file_open")))
    }) else {
        eprintln!(
            "kfunc_tool_fsdist_says_the_module_is_not_loaded: skipped: this kernel has xfs, \
             btrfs and nfs loaded"
        );
        return;
    };
    let run = tracekit(["fsdist", "--fs", fs, "-d", "1"], TIMEOUT);
    run.assert_code(1);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].starts_with(&format!("tracekit: --fs {fs}: this kernel has no {fs}_"))
            && lines[0].contains(&format!("is the {fs} module loaded? modprobe {fs}")),
        "{}",
        lines[0]
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

/// The VM image loads the xfs and btrfs modules (xtask/src/vm/image.rs): `fsdist` and `fsslower`
/// attach to every function of their tables on each kernel of the matrix (the names and
/// `fsslower`'s `struct file *` parameters, in the modules' BTF), run, and end well.
#[test]
fn kfunc_tool_fs_tools_attach_to_xfs_and_btrfs() {
    require_root();
    if !kprobes_or_skip("kfunc_tool_fs_tools_attach_to_xfs_and_btrfs") {
        return;
    }
    for fs in ["xfs", "btrfs"] {
        if !std::path::Path::new("/sys/module").join(fs).exists() {
            let shipped = std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|release| {
                    std::path::Path::new("/lib/modules")
                        .join(release.trim())
                        .join(format!("{fs}.ko"))
                        .exists()
                })
                .unwrap_or(false);
            assert!(
                !shipped,
                "the VM image ships {fs}.ko but /init did not load it"
            );
            eprintln!(
                "kfunc_tool_fs_tools_attach_to_xfs_and_btrfs: skipped {fs}: its module is \
                 not loaded (the VM image loads it)"
            );
            continue;
        }
        for tool in ["fsdist", "fsslower"] {
            let run = tracekit([tool, "--fs", fs, "-d", "1", "-v"], TIMEOUT);
            run.assert_code(0);
            // A missing function ends the run (exit 1) with "this kernel has no xfs_...".
            assert!(
                !run.stderr.contains(&format!("has no {fs}_")) && run.stderr.contains("attached"),
                "{tool} --fs {fs}: {}",
                run.stderr
            );
        }
    }
}

/// An unknown `--fs` is a usage error (exit 2) listing the known filesystems, those this
/// kernel has first; nothing is attached.
#[test]
fn fsdist_unknown_filesystem_lists_those_here() {
    require_root();
    let run = tracekit(["fsdist", "--fs", "zfs", "-d", "1"], TIMEOUT);
    run.assert_code(2);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].starts_with("tracekit: --fs zfs: unknown filesystem; this kernel has ")
            || lines[0].starts_with(
                "tracekit: --fs zfs: unknown filesystem; none of ext4, xfs, btrfs, nfs"
            ),
        "{}",
        lines[0]
    );
    let symbols = std::fs::read_to_string("/proc/kallsyms").unwrap();
    let has = |f: &str| {
        symbols
            .lines()
            .any(|l| l.split_whitespace().nth(2) == Some(f))
    };
    if has("ext4_file_read_iter") && has("ext4_file_getattr") {
        assert!(lines[0].contains("this kernel has ext4"), "{}", lines[0]);
    }
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

/// cachestat of a 1 MiB file on ext4 read 4 KiB at a time, after the page cache was
/// dropped and again: the cold read adds its 256 pages to the cache (and the few metadata
/// blocks its lookup reads), the warm one adds none and marks each page accessed, which
/// cachestat's line shows as 0 misses and at least 256 hits, 100% HITRATIO.
#[test]
fn kfunc_tool_cachestat_cold_then_warm() {
    require_root();
    if !kprobes_or_skip("kfunc_tool_cachestat_cold_then_warm") {
        return;
    }
    let Some(dir) = ext4_dir("cachestat") else {
        return;
    };
    let file = dir.join("data");
    let fixture = fixture("tk_files");
    let status = std::process::Command::new(&fixture)
        .arg(&file)
        .args(["256", "0"])
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::write("/proc/sys/vm/drop_caches", "3").unwrap();
    let cold = run_files(&["cachestat"], &file, 0, 256);
    let warm = run_files(&["cachestat"], &file, 0, 256);
    let fixture = fixture.to_string_lossy().into_owned();
    let path = file.to_string_lossy().into_owned();
    let text = tracekit(["cachestat", "--", &fixture, &path, "0", "256"], TIMEOUT);
    let _ = std::fs::remove_dir_all(&dir);
    text.assert_code(0);
    let added = |json: &serde_json::Value| {
        function_count(json, "filemap_add_folio") + function_count(json, "add_to_page_cache_lru")
    };
    let accessed = |json: &serde_json::Value| {
        function_count(json, "folio_mark_accessed") + function_count(json, "mark_page_accessed")
    };
    assert!((256..=256 + 32).contains(&added(&cold)), "{cold:#}");
    assert!(accessed(&cold) >= 256, "{cold:#}");
    assert_eq!(added(&warm), 0, "{warm:#}");
    assert!(accessed(&warm) >= 256, "{warm:#}");
    let lines: Vec<&str> = text.stdout.lines().collect();
    let header = lines
        .iter()
        .position(|l| {
            l.split_whitespace().eq([
                "HITS",
                "MISSES",
                "DIRTIES",
                "HITRATIO",
                "BUFFERS_MB",
                "CACHED_MB",
            ])
        })
        .unwrap_or_else(|| panic!("no header: {}", text.stdout));
    let values: Vec<&str> = lines[header + 1].split_whitespace().collect();
    assert_eq!(values.len(), 6, "{}", text.stdout);
    assert!(values[0].parse::<u64>().unwrap() >= 256, "{}", text.stdout);
    assert_eq!(values[1], "0", "{}", text.stdout);
    assert_eq!(values[3], "100.00%", "{}", text.stdout);
}

/// On a kernel without kprobes (the development machine, which refuses fentry too), fsdist,
/// its aliases and cachestat say in one line which functions cannot be probed and why, and
/// exit 1 before tracing anything.
#[test]
fn fs_tools_say_what_is_missing_without_kprobes() {
    require_root();
    if std::path::Path::new("/sys/bus/event_source/devices/kprobe").exists() {
        eprintln!(
            "fs_tools_say_what_is_missing_without_kprobes: skipped: this kernel has kprobes; \
             the test is of kernels without them"
        );
        return;
    }
    for args in [
        &["fsdist", "--fs", "ext4", "-d", "1"][..],
        &["ext4dist", "-d", "1"],
        &["cachestat", "-d", "1"],
    ] {
        let run = tracekit(args, TIMEOUT);
        run.assert_code(1);
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {}", run.stderr);
        assert!(
            lines[0].starts_with("tracekit: cannot probe")
                && lines[0].contains("no kprobes (CONFIG_KPROBES is not set)"),
            "{args:?}: {}",
            lines[0]
        );
        assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
    }
}
