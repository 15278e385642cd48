//! Side by side with bpftrace's own tools (`/usr/sbin/*.bt`) whose probes exist on this
//! kernel (tracepoints and uprobes; no kprobes here): one run of a fixture with known truth,
//! watched at once by the tracekit tool and the `.bt` script (tracekit_tests::bpftrace).
//! Both must see the same events, and both must match the fixture's truth.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use tracekit_tests::{
    bpftrace::{self, side_by_side, side_by_side_with},
    fixture, parse_json, require_root,
};

/// tracekit's `--json` event lines (one object a line).
fn events(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// setuids.bt traces setuid, setfsuid and setresuid (not setreuid). On the fixture's 50
/// rounds of setresuid, setreuid, setfsuid and setuid, then a drop to uid 1000 and a failing
/// setuid(0): both tools show the 152 calls of those three, in order, with the fixture's
/// return values and pid; bpftrace's UID column (the real uid at entry) is the one the
/// fixture's previous call left.
#[test]
fn setuids_sees_what_bpftraces_setuids_sees() {
    require_root();
    let program = fixture("tk_snoops");
    let run = side_by_side(
        "setuids_bt",
        "setuids.bt",
        &["setuids", "--json"],
        &[program.to_str().unwrap(), "setuids", "50"],
    );
    let traced = ["setuid", "setfsuid", "setresuid"];
    // Truth: `CALL RET UID EUID SUID FSUID`, the ids after the call.
    let mut real_uid = 0u64;
    let mut truth: Vec<(String, i64, u64)> = Vec::new();
    for line in run.truth.lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        if traced.contains(&parts[0]) {
            truth.push((parts[0].to_string(), parts[1].parse().unwrap(), real_uid));
        }
        real_uid = parts[2].parse().unwrap();
    }
    assert_eq!(truth.len(), 3 * 50 + 2, "{}", run.truth);
    assert!(
        run.ours.stderr.contains("Lost: nothing."),
        "{}",
        run.ours.stderr
    );
    // bpftrace: `TIME PID COMM UID SYSCALL ARGS... (RET)`, `(prevuid=RET)` for setfsuid.
    let mut their_pids = BTreeSet::new();
    let theirs: Vec<(String, i64, u64)> = run
        .theirs
        .lines()
        .filter_map(|line| {
            let parts: Vec<&str> = line.split_whitespace().collect();
            if parts.len() < 6 || parts[2] != "tk_snoops" {
                return None;
            }
            their_pids.insert(parts[1].to_string());
            let ret = parts.last()?.trim_matches(['(', ')']);
            let ret = ret.strip_prefix("prevuid=").unwrap_or(ret);
            Some((
                parts[4].to_string(),
                ret.parse().ok()?,
                parts[3].parse().ok()?,
            ))
        })
        .collect();
    assert_eq!(theirs, truth, "{}", run.theirs);
    let ours: Vec<Value> = events(&run.ours.stdout)
        .into_iter()
        .filter(|e| e["comm"] == "tk_snoops")
        .collect();
    let our_calls: Vec<(String, i64)> = ours
        .iter()
        .filter(|e| traced.contains(&e["syscall"].as_str().unwrap()))
        .map(|e| {
            (
                e["syscall"].as_str().unwrap().to_string(),
                e["ret"].as_i64().unwrap(),
            )
        })
        .collect();
    let their_calls: Vec<(String, i64)> = theirs.iter().map(|t| (t.0.clone(), t.1)).collect();
    assert_eq!(our_calls, their_calls);
    let our_pids: BTreeSet<String> = ours.iter().map(|e| e["pid"].to_string()).collect();
    assert_eq!(our_pids, their_pids);
    assert_eq!(our_pids.len(), 1);
    // tracekit also shows the 50 setreuid calls that setuids.bt does not trace.
    assert_eq!(ours.len(), 4 * 50 + 2);
}

/// syscount.bt counts every syscall by id and by comm; `syscount --by comm` on the same run
/// of tk_syscalls (20000 getppid calls): the same count for the fixture's comm (its getppid
/// calls and the few its start and exit make), 20000 getppid calls under that comm, and
/// bpftrace's machine-wide getppid count between the fixture's 20000 and tracekit's own
/// machine-wide count (tracekit watches a window that holds bpftrace's).
#[test]
fn syscount_counts_what_bpftraces_syscount_counts() {
    require_root();
    let program = fixture("tk_syscalls");
    let run = side_by_side(
        "syscount_bt",
        "syscount.bt",
        &["syscount", "--by", "comm", "--top", "100000", "--json"],
        &[program.to_str().unwrap(), "20000"],
    );
    let json = parse_json(&run.ours.stdout);
    let groups = json["groups"].as_array().unwrap();
    let ours_fixture: u64 = groups
        .iter()
        .filter(|g| g["key"]["comm"] == "tk_syscalls")
        .map(|g| g["count"].as_u64().unwrap())
        .sum();
    let ours_getppid_fixture: u64 = groups
        .iter()
        .filter(|g| g["key"]["comm"] == "tk_syscalls" && g["key"]["syscall"] == "getppid")
        .map(|g| g["count"].as_u64().unwrap())
        .sum();
    let ours_getppid: u64 = groups
        .iter()
        .filter(|g| g["key"]["syscall"] == "getppid")
        .map(|g| g["count"].as_u64().unwrap())
        .sum();
    assert_eq!(ours_getppid_fixture, 20000, "{json:#}");
    let theirs_fixture = bpftrace::map_value(&run.theirs, "@process[tk_syscalls]")
        .unwrap_or_else(|| panic!("no tk_syscalls in the top 10: {}", run.theirs));
    assert_eq!(ours_fixture, theirs_fixture, "{}", run.theirs);
    // getppid is syscall 110 on x86_64.
    let theirs_getppid = bpftrace::map_value(&run.theirs, "@syscall[110]")
        .unwrap_or_else(|| panic!("no getppid in the top 10: {}", run.theirs));
    assert!(
        (20000..=ours_getppid).contains(&theirs_getppid),
        "bpftrace {theirs_getppid}, tracekit {ours_getppid}"
    );
}

/// bitesize.bt keys a power-of-2 histogram of each issued request's bytes by comm; on one
/// run of 100 O_DIRECT writes each of 4 KiB, 16 KiB and 64 KiB (dd copies named
/// `tk_bt_dd`): the same histogram for that comm in both tools, and in each size's bucket
/// the 100 writes, less those the block layer issued from a kworker (counted under the
/// kworker by both tools, as the engine test `engine_bitesize_known_block_sizes` found).
#[test]
fn bitesize_sees_what_bpftraces_bitesize_sees() {
    require_root();
    let dir = tracekit_tests::scratch("bitesize_bt_files");
    let dd = dir.join("tk_bt_dd");
    std::fs::copy("/bin/dd", &dd).unwrap();
    let file = dir.join("file");
    // Written and synced first, so the direct writes overwrite allocated blocks: a direct
    // write that extends a file can fall back to the page cache on ext4, which then flushes
    // it in larger requests (seen: 2 of 100 64 KiB writes as 512 KiB requests).
    std::fs::write(&file, vec![1u8; 100 << 16]).unwrap();
    std::fs::File::open(&file).unwrap().sync_all().unwrap();
    let writes: Vec<String> = ["4k", "16k", "64k"]
        .iter()
        .map(|bs| {
            format!(
                "{} if=/dev/zero of={} bs={bs} count=100 oflag=direct conv=notrunc 2>/dev/null",
                dd.display(),
                file.display()
            )
        })
        .collect();
    let run = side_by_side(
        "bitesize_bt",
        "bitesize.bt",
        &["bitesize", "--json"],
        &["/bin/sh", "-c", &writes.join(" && ")],
    );
    let _ = std::fs::remove_dir_all(&dir);
    let theirs = bpftrace::hist(&run.theirs, "@[tk_bt_dd]");
    let json = parse_json(&run.ours.stdout);
    let groups = json["groups"].as_array().unwrap();
    let hist_of = |comm: &dyn Fn(&str) -> bool| -> BTreeMap<u64, u64> {
        let mut buckets = BTreeMap::new();
        for group in groups
            .iter()
            .filter(|g| comm(g["key"]["comm"].as_str().unwrap_or("")))
        {
            for bucket in group["hist"].as_array().unwrap() {
                let count = bucket["count"].as_u64().unwrap();
                if count > 0 {
                    *buckets.entry(bucket["low"].as_u64().unwrap()).or_default() += count;
                }
            }
        }
        buckets
    };
    let ours = hist_of(&|comm| comm == "tk_bt_dd");
    let theirs_nonzero: BTreeMap<u64, u64> = theirs.into_iter().filter(|b| b.1 > 0).collect();
    assert_eq!(ours, theirs_nonzero, "bpftrace:\n{}\n{json:#}", run.theirs);
    let kworkers = hist_of(&|comm| comm.starts_with("kworker/"));
    for size in [4096, 16384, 65536] {
        let mine = ours.get(&size).copied().unwrap_or(0);
        let issued_for_us = kworkers.get(&size).copied().unwrap_or(0);
        assert!(
            mine <= 100 && mine + issued_for_us >= 100,
            "{size}: {mine} under tk_bt_dd, {issued_for_us} under kworkers: {json:#}"
        );
    }
}

/// gethostlatency.bt probes getaddrinfo and gethostbyname(2) in libc; tk_funcs' 200
/// getaddrinfo calls (100 of "localhost", then 100 of "127.0.0.1") are shown by both, in
/// order, with the same pid and host.
#[test]
fn gethostlatency_sees_what_bpftraces_gethostlatency_sees() {
    require_root();
    let program = fixture("tk_funcs");
    let run = side_by_side(
        "gethostlatency_bt",
        "gethostlatency.bt",
        &["gethostlatency", "--json"],
        &[program.to_str().unwrap(), "resolve", "100"],
    );
    assert!(
        run.ours.stderr.contains("Lost: nothing."),
        "{}",
        run.ours.stderr
    );
    // `TIME PID COMM LATms HOST`
    let theirs: Vec<(String, String)> = run
        .theirs
        .lines()
        .filter_map(
            |line| match line.split_whitespace().collect::<Vec<_>>()[..] {
                [_, pid, "tk_funcs", _, host] => Some((pid.to_string(), host.to_string())),
                _ => None,
            },
        )
        .collect();
    let ours: Vec<(String, String)> = events(&run.ours.stdout)
        .iter()
        .filter(|e| e["comm"] == "tk_funcs")
        .map(|e| {
            (
                e["pid"].to_string(),
                e["host"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: Vec<&str> = ["localhost"; 100]
        .into_iter()
        .chain(["127.0.0.1"; 100])
        .collect();
    let hosts: Vec<&str> = ours.iter().map(|(_, host)| host.as_str()).collect();
    assert_eq!(hosts, expected, "{}", run.ours.stderr);
    assert_eq!(ours, theirs, "{}", run.theirs);
}

/// threadsnoop.bt probes `pthread_create` in libpthread; glibc 2.34 and later (Debian 12's
/// 2.36) moved it into libc.so.6 and left libpthread.so.0 a stub, so there the probe never
/// fires and bpftrace prints no thread. The fixture's truth decides: tracekit (at
/// `task:task_newtask`) shows each of the 200 threads with the fixture's pid; bpftrace shows
/// the same 200 where libpthread still defines `pthread_create`, and none where it does not.
#[test]
fn threadsnoop_sees_the_threads_bpftraces_threadsnoop_sees() {
    require_root();
    let program = fixture("tk_snoops");
    let run = side_by_side(
        "threadsnoop_bt",
        "threadsnoop.bt",
        &["threadsnoop", "--json"],
        &[program.to_str().unwrap(), "threads", "200"],
    );
    assert!(
        run.ours.stderr.contains("Lost: nothing."),
        "{}",
        run.ours.stderr
    );
    let parent: String = run
        .truth
        .lines()
        .find_map(|line| line.strip_prefix("parent "))
        .expect("the fixture's pid")
        .to_string();
    let threads: BTreeSet<u64> = run
        .truth
        .lines()
        .filter_map(|line| line.strip_prefix("thread "))
        .map(|tid| tid.parse().unwrap())
        .collect();
    assert_eq!(threads.len(), 200);
    let ours: BTreeSet<u64> = events(&run.ours.stdout)
        .iter()
        .filter(|e| {
            e["pid"].as_u64().map(|pid| pid.to_string()).as_deref() == Some(parent.as_str())
        })
        .map(|e| e["tid"].as_u64().unwrap())
        .collect();
    assert_eq!(ours, threads);
    // `TIME(ms) PID COMM FUNC`, FUNC the thread's start routine.
    let theirs: Vec<&str> = run
        .theirs
        .lines()
        .filter(|line| line.split_whitespace().nth(1) == Some(parent.as_str()))
        .collect();
    let listed = std::process::Command::new("bpftrace")
        .args(["-l", "uprobe:libpthread:pthread_create"])
        .output()
        .unwrap();
    let probe_exists = String::from_utf8_lossy(&listed.stdout).contains("pthread_create");
    if probe_exists {
        assert_eq!(theirs.len(), 200, "{}", run.theirs);
        assert!(
            theirs.iter().all(|line| line.ends_with(" note_tid")),
            "{theirs:?}"
        );
    } else {
        assert!(theirs.is_empty(), "{theirs:?}");
        println!(
            "bpftrace's threadsnoop.bt saw none of the 200 threads: libpthread has no \
             pthread_create here (glibc >= 2.34 has it in libc.so.6); tracekit saw all 200"
        );
    }
}

/// pidpersec.bt counts `sched:sched_process_fork` on the whole machine, printing and
/// clearing the count each second, and drops the last partial second at exit. The
/// workload forks 50 children and then sleeps 1.5 s, so every fork is printed: the sum of
/// bpftrace's per-second counts holds the fixture's 50 forks plus the rest of the machine's
/// in its window, and tracekit's machine-wide count (over a window holding bpftrace's) holds
/// at least as many. Only bounds: other processes fork at any time.
#[test]
fn pidpersec_counts_what_bpftraces_pidpersec_counts() {
    require_root();
    let program = fixture("tk_snoops");
    let forks_then_wait = format!("{} execs 50 && exec sleep 1.5", program.display());
    let run = side_by_side(
        "pidpersec_bt",
        "pidpersec.bt",
        &["pidpersec", "--json"],
        &["/bin/sh", "-c", &forks_then_wait],
    );
    let theirs: u64 = run
        .theirs
        .lines()
        .filter_map(|line| line.split_once("PIDs/sec: @: "))
        .map(|(_, count)| count.trim().parse::<u64>().unwrap())
        .sum();
    let json = parse_json(&run.ours.stdout);
    let ours: u64 = json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["count"].as_u64().unwrap())
        .sum();
    assert!(
        (50..=ours).contains(&theirs),
        "bpftrace {theirs}, tracekit {ours}: {}",
        run.theirs
    );
    println!("forks: bpftrace {theirs}, tracekit {ours} (the fixture's 50 and the machine's)");
}

/// runqlat.bt, which `#include`s <linux/sched.h> for `TASK_RUNNING`: without kernel
/// headers (Debian installs none) bpftrace 0.17 fails on the uapi header (`unknown type
/// name '__aligned_u64'`) and, past that, finds no `TASK_RUNNING` (kernel-internal), so it
/// runs here with a prelude (`--include`) defining those two as the kernel does. Its
/// histogram is machine-wide and its events are not quite tracekit's: it also times the
/// idle task (switched out with state 0, switched back in: a sample each time a CPU goes
/// idle) and leaves out preemptions (`prev_state` is `TASK_REPORT_MAX` then, not 0), and
/// it watches a shorter window. So only bounds hold, for tk_wake's 1000 pipe writes to
/// its reader 1 ms apart: bpftrace's total holds the reader's wakeups (all in its window),
/// and tracekit's `--tids` histogram has a thread (the reader) with 980 to 1010 samples
/// (its wakeups, its first wakeup as a new task, a rare preemption; a write that lands
/// while the reader is still on its CPU, preempted between reads, wakes nothing: CI saw
/// 999, a machine at load 9 985), as does the writer (woken by its timer each time) or more.
#[test]
fn runqlat_counts_what_bpftraces_runqlat_counts() {
    require_root();
    let dir = tracekit_tests::scratch("runqlat_bt_prelude");
    let prelude = dir.join("prelude.h");
    std::fs::write(
        &prelude,
        "#define __aligned_u64 unsigned long long __attribute__((aligned(8)))\n\
         #define TASK_RUNNING 0\n",
    )
    .unwrap();
    let program = fixture("tk_wake");
    let n = 1000u64;
    let run = side_by_side_with(
        "runqlat_bt",
        "runqlat.bt",
        &["--include", prelude.to_str().unwrap()],
        &["runqlat", "--tids", "--json"],
        &[program.to_str().unwrap(), &n.to_string(), "1000"],
    );
    assert!(
        run.truth.starts_with(&format!("wakeups {n} ")),
        "{}",
        run.truth
    );
    let theirs: u64 = bpftrace::hist(&run.theirs, "@usecs").values().sum();
    let json = parse_json(&run.ours.stdout);
    let counts: Vec<u64> = json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["count"].as_u64().unwrap())
        .collect();
    let ours: u64 = counts.iter().sum();
    // Writes that find the reader still on its CPU wake nothing: a few may be missing, more
    // on a loaded machine.
    let least = n - n / 50;
    assert!(theirs >= least, "bpftrace {theirs}: {}", run.theirs);
    assert!(
        counts.iter().any(|&c| (least..=n + 10).contains(&c)),
        "no thread with {least} to {} samples: {counts:?}",
        n + 10
    );
    assert!(
        counts.iter().filter(|&&c| c >= least).count() >= 2,
        "{counts:?}"
    );
    println!(
        "run queue latency samples: bpftrace {theirs}, tracekit {ours} (the fixture's 2 x {n} \
         and the machine's)"
    );
}
