//! Debian's PostgreSQL 15, built with USDT probes: commits counted as `pg_stat_database`
//! counts them, RIP-relative arguments read as bpftrace reads them.

use std::{
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use tracekit_tests::{
    ensure_package, kill, postgres::Cluster, require_root, run, spawn_tracekit, wait_for_stderr,
    wait_output,
};

const TIMEOUT: Duration = Duration::from_secs(120);

/// Debian's PostgreSQL 15 is built with USDT probes. A private cluster on loopback
/// (autovacuum and the logical replication launcher off, so only clients commit) runs
/// `pgbench -t 500 -c 4`; `count usdt:.../postgres:transaction__commit -a` over the run
/// equals the growth of `xact_commit` summed over `pg_stat_database`. The run is bracketed
/// so that both count the same transactions: tracekit attaches before the first `psql`
/// reads the counter (whose own transactions are flushed to the statistics when it exits)
/// and detaches before the last one reads it. Then one `CHECKPOINT` fires
/// `checkpoint__done`, whose arguments are RIP-relative globals.
#[test]
fn usdt_postgres_commits_match_pg_stat_database() {
    require_root();
    let test = "usdt_postgres";
    let started = Instant::now();
    let Some(cluster) = Cluster::start(test) else {
        return;
    };
    let postgres = Cluster::postgres();
    let pg_commits = || cluster.psql_number("select sum(xact_commit) from pg_stat_database");
    cluster.pgbench(&["-i", "-q"]).assert_code(0);
    // Let the initialisation's backends exit and flush their statistics.
    std::thread::sleep(Duration::from_millis(1500));

    let probe = format!("usdt:{}:transaction__commit", postgres.display());
    let mut count = spawn_tracekit(["count", &probe, "-a", "--json"]);
    wait_for_stderr(&mut count, "Hit Ctrl-C to end.", TIMEOUT);
    let before = pg_commits();
    let bench = cluster.pgbench(&["-t", "500", "-c", "4"]);
    bench.assert_code(0);
    // The backends exit when pgbench disconnects; their commits are all in by now.
    std::thread::sleep(Duration::from_millis(1000));
    kill(count.id(), libc::SIGINT);
    let counted = wait_output(count, TIMEOUT);
    counted.assert_code(0);
    std::thread::sleep(Duration::from_millis(1000));
    let after = pg_commits();
    let json = tracekit_tests::parse_json(&counted.stdout);
    let total = tracekit_tests::total_count(&json);
    eprintln!(
        "{test}: tracekit counted {total} commits; pg_stat_database: {before} -> {after} \
         (+{}); {:.1} s",
        after - before,
        started.elapsed().as_secs_f64()
    );
    assert!(total >= 2000, "{counted:#?}\n{}", bench.stdout);
    assert_eq!(total, after - before, "{counted:#?}");

    // RIP-relative arguments: checkpoint__done's are `-4@40+CheckpointStats(%rip)
    // -4@NBuffers(%rip) ...` (globals of the PIE, found in its dynamic symbol table). One
    // CHECKPOINT: arg0 is the buffers its log line says it wrote, arg1 shared_buffers in
    // pages.
    let probe = format!("usdt:{}:checkpoint__done", postgres.display());
    let mut count = spawn_tracekit(["count", &probe, "-a", "--by", "arg0,arg1", "--json"]);
    wait_for_stderr(&mut count, "Hit Ctrl-C to end.", TIMEOUT);
    cluster.psql("checkpoint").assert_code(0);
    kill(count.id(), libc::SIGINT);
    let counted = wait_output(count, TIMEOUT);
    counted.assert_code(0);
    let json = tracekit_tests::parse_json(&counted.stdout);
    let shared_buffers =
        cluster.psql_number("select setting from pg_settings where name = 'shared_buffers'");
    // log_checkpoints is on by default: `checkpoint complete: wrote N buffers (...)`.
    let log_text = std::fs::read_to_string(&cluster.log).unwrap();
    let wrote: u64 = log_text
        .lines()
        .filter_map(|line| line.split("checkpoint complete: wrote ").nth(1))
        .filter_map(|rest| rest.split_whitespace().next()?.parse().ok())
        .next_back()
        .unwrap_or_else(|| panic!("no checkpoint in the log: {log_text}"));
    // pgbench left dirty buffers: a wrong read of the +40 would not match by chance.
    assert!(wrote > 0, "{log_text}");
    let groups = json["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{json}");
    assert_eq!(groups[0]["count"], 1, "{json}");
    assert_eq!(groups[0]["key"]["arg1"], shared_buffers, "{json}");
    assert_eq!(groups[0]["key"]["arg0"], wrote, "{json}\n{log_text}");
}

/// PostgreSQL's two USDT probes whose arguments are RIP-relative globals (`readelf -n`):
/// `checkpoint__done` (`-4@40+CheckpointStats(%rip) -4@NBuffers(%rip) -4@44+... -4@48+...
/// -4@52+...`: buffers written, shared_buffers, WAL files added, removed, recycled) and
/// `buffer__sync__done` (`-4@NBuffers(%rip) -4@%eax -4@%r14d`: shared_buffers, buffers
/// written, buffers to scan) read the same values in tracekit and in bpftrace, attached at
/// once, over three checkpoints (one after pgbench, one after a one-row update, one with
/// nothing to write). bpftrace 0.17 cannot read these arguments itself (it logs "deref
/// ident is not handled yet" and reads the memory at the probe's own address + the
/// displacement), so its script reads each global at the address its `uaddr()` gives, moved
/// by the process's load bias (the uprobe's `ip` minus the probe's address in the note);
/// the register arguments are its own `argN`. Events are matched by the window both tools
/// were attached in: bpftrace prints `nsecs` (CLOCK_MONOTONIC) with each event, and it is
/// attached before tracekit (a warm-up checkpoint shows both its probes firing), which
/// attaches before the window opens and detaches after it closes.
#[test]
fn usdt_postgres_rip_relative_arguments_match_bpftrace() {
    require_root();
    let test = "usdt_postgres_bpftrace";
    if !ensure_package(test, "bpftrace", || {
        Path::new("/usr/bin/bpftrace").is_file()
    }) {
        return;
    }
    let Some(cluster) = Cluster::start(test) else {
        return;
    };
    let postgres = Cluster::postgres();
    let pg = postgres.to_str().unwrap();
    cluster.pgbench(&["-i", "-q"]).assert_code(0);
    let probes = ["checkpoint__done", "buffer__sync__done"];
    let notes: Vec<(u64, Vec<String>)> = probes
        .iter()
        .map(|name| readelf_usdt_note(&postgres, name))
        .collect();
    assert!(
        notes.iter().all(|(_, specs)| specs[0].ends_with("(%rip)")),
        "the notes changed: {notes:?}"
    );
    // One line per event: `NAME NSECS V0 V1 ...`, then bpftrace's own reads for the log.
    let mut script = String::new();
    for (name, (pc, specs)) in probes.iter().zip(&notes) {
        let values: Vec<String> = specs
            .iter()
            .enumerate()
            .map(|(i, spec)| bpftrace_usdt_arg(i, spec, *pc))
            .collect();
        let own: Vec<String> = (0..specs.len()).map(|i| format!("arg{i}")).collect();
        let formats = vec!["%lld"; specs.len()].join(" ");
        script.push_str(&format!(
            "usdt:{pg}:{name} {{ printf(\"{name} %llu {formats}\\n\", nsecs, {}); \
             printf(\"own {name} {formats}\\n\", {}); }}\n",
            values.join(", "),
            own.join(", ")
        ));
    }
    let mut bpftrace = Command::new("bpftrace")
        .args(["-e", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let reader = {
        let lines = lines.clone();
        let stdout = bpftrace.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
                let Ok(line) = line else { break };
                lines.lock().unwrap().push(line);
            }
        })
    };
    let stderr = bpftrace.stderr.take().unwrap();
    let stderr_reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut { stderr }, &mut text);
        text
    });
    // Events of `name` bpftrace printed at or after `since` (CLOCK_MONOTONIC ns), as
    // (nsecs, values).
    let events = |name: &str, since: u64, until: u64| -> Vec<Vec<i64>> {
        lines
            .lock()
            .unwrap()
            .iter()
            .filter_map(|line| {
                let mut words = line.split_whitespace();
                (words.next()? == name).then_some(())?;
                let nsecs: u64 = words.next()?.parse().ok()?;
                (since..=until)
                    .contains(&nsecs)
                    .then(|| words.map(|w| w.parse().unwrap()).collect())
            })
            .collect()
    };
    let dirty_and_checkpoint = || {
        cluster
            .psql("update pgbench_branches set bbalance = bbalance")
            .assert_code(0);
        cluster.psql("checkpoint").assert_code(0);
    };
    // Warm-up: bpftrace attaches its probes one by one after printing "Attaching"; once a
    // checkpoint fired both, they are all attached.
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let start = monotonic_ns();
        dirty_and_checkpoint();
        let poll = Instant::now() + Duration::from_secs(5);
        while Instant::now() < poll && events(probes[0], start, u64::MAX).is_empty() {
            std::thread::sleep(Duration::from_millis(50));
        }
        if probes
            .iter()
            .all(|name| !events(name, start, u64::MAX).is_empty())
        {
            break;
        }
        assert!(
            Instant::now() < deadline && bpftrace.try_wait().unwrap().is_none(),
            "bpftrace never saw both probes: {:?}",
            lines.lock().unwrap()
        );
    }

    let mut traces: Vec<Child> = probes
        .iter()
        .zip(&notes)
        .map(|(name, (_, specs))| {
            let by: Vec<String> = (0..specs.len()).map(|i| format!("arg{i}")).collect();
            let mut trace = spawn_tracekit([
                "trace",
                &format!("usdt:{pg}:{name}"),
                "-a",
                "--print",
                &by.join(","),
                "--json",
            ]);
            wait_for_stderr(&mut trace, "Hit Ctrl-C to end.", TIMEOUT);
            trace
        })
        .collect();
    let opened = monotonic_ns();
    cluster.pgbench(&["-t", "100", "-c", "2"]).assert_code(0);
    cluster.psql("checkpoint").assert_code(0);
    dirty_and_checkpoint();
    cluster.psql("checkpoint").assert_code(0);
    let closed = monotonic_ns();
    // Each event a line of JSON.
    let traced: Vec<Vec<serde_json::Value>> = traces
        .drain(..)
        .map(|trace| {
            kill(trace.id(), libc::SIGINT);
            let out = wait_output(trace, TIMEOUT);
            out.assert_code(0);
            out.stdout
                .lines()
                .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("{out:#?}")))
                .collect()
        })
        .collect();
    kill(bpftrace.id(), libc::SIGINT);
    let deadline = Instant::now() + TIMEOUT;
    while bpftrace.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "bpftrace did not exit on SIGINT");
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().unwrap();
    let bpftrace_stderr = stderr_reader.join().unwrap();
    let shared_buffers =
        cluster.psql_number("select setting from pg_settings where name = 'shared_buffers'") as i64;

    for ((name, json), (_, specs)) in probes.iter().zip(&traced).zip(&notes) {
        let mut tracekit_events: Vec<Vec<i64>> = json
            .iter()
            .map(|event| {
                (0..specs.len())
                    .map(|i| event[format!("arg{i}")].as_i64().unwrap())
                    .collect()
            })
            .collect();
        let mut bpftrace_events = events(name, opened, closed);
        tracekit_events.sort();
        bpftrace_events.sort();
        let own: Vec<String> = lines
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.starts_with(&format!("own {name} ")))
            .cloned()
            .collect();
        eprintln!(
            "{test}: {name}: tracekit {tracekit_events:?}, bpftrace {bpftrace_events:?}; \
             bpftrace's own argN (last 3): {:?}",
            &own[own.len().saturating_sub(3)..]
        );
        assert_eq!(
            tracekit_events,
            bpftrace_events,
            "{name}: {json:?}\nbpftrace: {:?}\n{bpftrace_stderr}",
            lines.lock().unwrap()
        );
        // Every event has shared_buffers (in pages) where the note says NBuffers is.
        let nbuffers = specs.iter().position(|s| s.contains("NBuffers")).unwrap();
        assert!(
            tracekit_events
                .iter()
                .all(|e| e[nbuffers] == shared_buffers),
            "{name}: shared_buffers {shared_buffers}: {tracekit_events:?}"
        );
        // pgbench and the update left buffers to write.
        assert!(
            tracekit_events
                .iter()
                .filter(|e| e[if *name == probes[0] { 0 } else { 1 }] > 0)
                .count()
                >= 2,
            "{name}: {tracekit_events:?}"
        );
    }
    // Three checkpoints; buffer__sync__done only fires in those that had dirty buffers.
    assert_eq!(traced[0].len(), 3, "{:?}", traced[0]);
    assert!(traced[1].len() >= 2, "{:?}", traced[1]);
}

/// CLOCK_MONOTONIC in nanoseconds, bpftrace's `nsecs`.
fn monotonic_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// (address, argument specs) of USDT probe `name` in `binary`, as `readelf -n` (binutils)
/// prints its note: an account of the note independent of tracekit's.
fn readelf_usdt_note(binary: &Path, name: &str) -> (u64, Vec<String>) {
    let mut readelf = Command::new("readelf");
    readelf.arg("-n").arg(binary);
    let out = run(readelf, TIMEOUT);
    out.assert_code(0);
    let mut lines = out
        .stdout
        .lines()
        .map(str::trim)
        .skip_while(|line| *line != format!("Name: {name}"));
    lines
        .next()
        .unwrap_or_else(|| panic!("no {name} in readelf -n"));
    let location = lines.next().unwrap();
    let pc = location
        .strip_prefix("Location: 0x")
        .and_then(|rest| rest.split(',').next())
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
        .unwrap_or_else(|| panic!("{location}"));
    let specs = lines
        .next()
        .and_then(|line| line.strip_prefix("Arguments:"))
        .unwrap_or_else(|| panic!("no arguments after {location}"));
    (pc, specs.split_whitespace().map(str::to_string).collect())
}

/// The bpftrace expression for USDT argument `index` with spec `spec` of a probe at `pc`:
/// `argN`, bpftrace's own read, except for RIP-relative globals (`-4@40+CheckpointStats(%rip)`),
/// which bpftrace 0.17 reads at a wrong address: for those, the global at the address
/// bpftrace's `uaddr()` gives it, moved by the load bias (the uprobe's `ip` - `pc`).
fn bpftrace_usdt_arg(index: usize, spec: &str, pc: u64) -> String {
    let (size, location) = spec.split_once('@').unwrap();
    let Some(global) = location.strip_suffix("(%rip)") else {
        return format!("(int64)arg{index}");
    };
    let ty = match size {
        "-1" => "int8",
        "1" => "uint8",
        "-2" => "int16",
        "2" => "uint16",
        "-4" => "int32",
        "4" => "uint32",
        _ => "int64",
    };
    // `symbol`, `N+symbol` or `symbol+N`.
    let (symbol, displacement) = match global.split_once('+') {
        None => (global, 0),
        Some((n, symbol)) if n.parse::<i64>().is_ok() => (symbol, n.parse().unwrap()),
        Some((symbol, n)) => (symbol, n.parse::<i64>().unwrap()),
    };
    format!("(int64)*({ty} *)(reg(\"ip\") - {pc} + (uint64)uaddr(\"{symbol}\") + {displacement})")
}
