//! Whole user stacks of code without frame pointers: the kernel's DWARF unwinder
//! (`profile --call-graph dwarf`, the default) against `--call-graph fp`, on a fixture with a
//! known call chain and on Debian's own `xz`.

use std::{path::Path, process::Command, time::Duration};

use tracekit_tests::{
    ensure_package, fixture_flags, fixture_with, parse_folded, require_root, scratch, tracekit,
};

const TIMEOUT: Duration = Duration::from_secs(120);

/// The user frames of folded lines of `comm`, outermost first, with their counts.
fn user_stacks(folded: &[(String, u64)], comm: &str) -> Vec<(Vec<String>, u64)> {
    folded
        .iter()
        .filter_map(|(path, count)| {
            let mut frames = path.split(';');
            (frames.next() == Some(comm)).then(|| {
                let user = frames
                    .filter(|f| !f.ends_with("_[k]"))
                    .map(str::to_string)
                    .collect();
                (user, *count)
            })
        })
        .collect()
}

/// Of the samples whose user stack ends in `chain`'s leaf (the sampled PC names it, however
/// the rest was walked), those that end with the whole `chain`; and that count of samples.
fn ending_with(stacks: &[(Vec<String>, u64)], chain: &[&str]) -> (u64, u64) {
    let chain: Vec<String> = chain.iter().map(|f| f.to_string()).collect();
    let count = |keep: &dyn Fn(&Vec<String>) -> bool| {
        stacks
            .iter()
            .filter(|(frames, _)| keep(frames))
            .map(|(_, count)| count)
            .sum()
    };
    (
        count(&|frames| frames.ends_with(&chain)),
        count(&|frames| frames.last() == chain.last()),
    )
}

/// All samples of `stacks`.
fn samples(stacks: &[(Vec<String>, u64)]) -> u64 {
    stacks.iter().map(|(_, count)| count).sum()
}

/// The median of the user depths of `stacks`, weighted by their counts.
fn median_depth(stacks: &[(Vec<String>, u64)]) -> usize {
    let mut depths: Vec<(usize, u64)> = stacks.iter().map(|(f, c)| (f.len(), *c)).collect();
    depths.sort_unstable();
    let total: u64 = depths.iter().map(|(_, c)| c).sum();
    let mut seen = 0;
    for (depth, count) in depths {
        seen += count;
        if seen * 2 >= total {
            return depth;
        }
    }
    0
}

/// `tracekit profile EXTRA -- COMMAND`'s folded stacks and stderr (see [`folded_of`]).
fn profile_folded(test: &str, extra: &[&str], command: &[&str]) -> (Vec<(String, u64)>, String) {
    let mut args = vec!["profile"];
    args.extend_from_slice(extra);
    folded_of(test, &args, command)
}

/// `-O2 -fomit-frame-pointer`, a chain four deep and a leaf with
/// no frame. The DWARF unwinder finds the whole chain from `main` in at least 95% of the
/// samples; frame pointers do not (so the test proves the unwinder, not the build).
#[test]
fn unwind_nofp_whole_chain_dwarf_and_cut_with_fp() {
    require_root();
    let fixture = fixture_with("tk_nofp", fixture_flags("tk_nofp"));
    let fixture = fixture.to_str().unwrap();
    let chain = ["main", "one", "two", "three", "four", "leaf"];

    let (folded, stderr) = profile_folded(
        "unwind_nofp_dwarf",
        &["--call-graph", "dwarf"],
        &[fixture, "3"],
    );
    let stacks = user_stacks(&folded, "tk_nofp");
    let (whole, total) = ending_with(&stacks, &chain);
    // Startup and exit are the rest (a large part under emulation in the VM matrix).
    assert!(
        total >= 50 && total as f64 >= 0.8 * samples(&stacks) as f64,
        "only {total} samples in leaf, of {}: {folded:#?}\n{stderr}",
        samples(&stacks)
    );
    assert!(
        whole as f64 >= 0.95 * total as f64,
        "dwarf: only {whole} of {total} samples in leaf end with \
         main;one;two;three;four;leaf: {folded:#?}\n{stderr}"
    );
    assert!(stderr.contains("unwind tables: "), "{stderr}");
    eprintln!(
        "dwarf: {whole} of {total} samples in leaf whole, median user depth {}",
        median_depth(&stacks)
    );

    let (folded, stderr) =
        profile_folded("unwind_nofp_fp", &["--call-graph", "fp"], &[fixture, "2"]);
    let stacks = user_stacks(&folded, "tk_nofp");
    let (whole, total) = ending_with(&stacks, &chain);
    assert!(
        total >= 30,
        "only {total} samples in leaf: {folded:#?}\n{stderr}"
    );
    assert!(
        (whole as f64) < 0.5 * total as f64,
        "fp: {whole} of {total} samples in leaf whole; the fixture keeps frame pointers? \
         {folded:#?}"
    );
    assert!(!stderr.contains("unwind tables: "), "{stderr}");
    eprintln!("fp: {whole} of {total} samples in leaf whole");
}

/// Frames of a stripped binary are named by the start of the function its unwind
/// information bounds them with, so the samples of one function aggregate as they do with
/// symbols. `tk_nofp` stripped (`strip` keeps `.eh_frame`): at least 95% of the samples in
/// its leaf are the one stack `tk_nofp_s+0xMAIN;...;tk_nofp_s+0xLEAF`, with the starts `nm`
/// reads from the unstripped binary (each sample's own PC would give each its own name).
#[test]
fn unwind_stripped_frames_grouped_by_function() {
    require_root();
    let fixture = fixture_with("tk_nofp", fixture_flags("tk_nofp"));
    let stripped = scratch("unwind_stripped_binary").join("tk_nofp_s");
    let status = Command::new("strip")
        .arg("-o")
        .arg(&stripped)
        .arg(&fixture)
        .status()
        .expect("strip runs (binutils comes with gcc)");
    assert!(status.success());
    let nm = Command::new("nm").arg(&fixture).output().expect("nm runs");
    let symbols = String::from_utf8_lossy(&nm.stdout);
    let chain: Vec<String> = ["main", "one", "two", "three", "four", "leaf"]
        .iter()
        .map(|name| {
            let address = symbols
                .lines()
                .find_map(|line| {
                    let mut fields = line.split_whitespace();
                    let (address, _, symbol) = (fields.next()?, fields.next()?, fields.next()?);
                    (symbol == *name).then(|| u64::from_str_radix(address, 16).ok())?
                })
                .unwrap_or_else(|| panic!("no {name} in nm's output: {symbols}"));
            format!("tk_nofp_s+{address:#x}")
        })
        .collect();
    let chain: Vec<&str> = chain.iter().map(String::as_str).collect();
    let (folded, stderr) =
        profile_folded("unwind_stripped", &[], &[stripped.to_str().unwrap(), "2"]);
    let stacks = user_stacks(&folded, "tk_nofp_s");
    let (whole, total) = ending_with(&stacks, &chain);
    let in_module: u64 = stacks
        .iter()
        .filter(|(frames, _)| frames.last().is_some_and(|f| f.starts_with("tk_nofp_s+")))
        .map(|(_, count)| count)
        .sum();
    assert!(
        total >= 50 && whole as f64 >= 0.95 * in_module as f64,
        "only {whole} of {in_module} samples in tk_nofp_s are the stack {chain:?} \
         ({total} in its leaf): {folded:#?}\n{stderr}"
    );
}

/// Debian's own `path` (from `package`), installed if missing, or a printed reason.
fn debian_program(test: &str, path: &'static str, package: &str) -> Option<&'static str> {
    ensure_package(test, package, || Path::new(path).exists()).then_some(path)
}

/// A file that takes `xz -9` about a second per MiB here: text of pseudo-random words.
fn write_input(path: &Path, bytes: usize) {
    let mut text = String::with_capacity(bytes + 64);
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    while text.len() < bytes {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let word_len = 2 + (state % 9) as usize;
        for i in 0..word_len {
            text.push((b'a' + ((state >> (i * 5)) % 26) as u8) as char);
        }
        text.push(if state.is_multiple_of(13) { '\n' } else { ' ' });
    }
    std::fs::write(path, text).unwrap();
}

/// For one Debian program built without frame pointers: at least
/// 90% of `comm`'s samples are whole stacks (the walk reaches libc's `__libc_start_call_main`,
/// under `_start` and `__libc_start_main`, which are outermost), no user frame is `[unknown]`
/// (a frame without a symbol is `module+offset`), the median depth is at least
/// `min_median`, and frame pointers alone walk less deep.
fn assert_whole_stacks(test: &str, comm: &str, command: &[&str], min_median: usize) {
    let (folded, stderr) = profile_folded(test, &["--user-only"], command);
    let stacks = user_stacks(&folded, comm);
    let total = samples(&stacks);
    assert!(
        total >= 50,
        "only {total} samples of {comm}: {folded:#?}\n{stderr}"
    );
    let whole: u64 = stacks
        .iter()
        .filter(|(frames, _)| {
            frames
                .iter()
                .take(3)
                .any(|frame| frame == "__libc_start_call_main")
        })
        .map(|(_, count)| count)
        .sum();
    let median = median_depth(&stacks);
    eprintln!("{comm}: {whole} of {total} samples whole, median user depth {median}");
    assert!(
        whole as f64 >= 0.9 * total as f64,
        "only {whole} of {total} samples reach __libc_start_call_main: {folded:#?}\n{stderr}"
    );
    assert!(
        median >= min_median,
        "median user depth {median}: {folded:#?}"
    );
    let unknown = through(&stacks, &["[unknown]"]);
    assert_eq!(unknown, 0, "[unknown] user frames: {folded:#?}");

    // The same run by frame pointers is cut (1 frame was measured).
    let (folded, _) = profile_folded(
        &format!("{test}_fp"),
        &["--user-only", "--call-graph", "fp"],
        command,
    );
    let stacks = user_stacks(&folded, comm);
    let median_fp = median_depth(&stacks);
    eprintln!(
        "{comm} by frame pointers: median user depth {median_fp} over {} samples",
        samples(&stacks)
    );
    assert!(
        median_fp < median,
        "fp median {median_fp} vs dwarf {median}"
    );
}

/// For Debian's `xz -9` (perf --call-graph dwarf: median 14).
#[test]
fn unwind_debian_xz_whole_stacks() {
    require_root();
    let Some(xz) = debian_program("unwind_debian_xz", "/usr/bin/xz", "xz-utils") else {
        return;
    };
    let input = scratch("unwind_debian_xz_input").join("input.txt");
    write_input(&input, 4 << 20);
    let input = input.to_str().unwrap();
    assert_whole_stacks(
        "unwind_debian_xz",
        "xz",
        &[xz, "-9", "-T1", "-k", "-f", input],
        6,
    );
}

/// For Debian's `gzip -9` (stripped: its own frames are
/// `gzip+0x...`; perf --call-graph dwarf: median 8).
#[test]
fn unwind_debian_gzip_whole_stacks() {
    require_root();
    let Some(gzip) = debian_program("unwind_debian_gzip", "/usr/bin/gzip", "gzip") else {
        return;
    };
    let input = scratch("unwind_debian_gzip_input").join("input.txt");
    write_input(&input, 24 << 20);
    let input = input.to_str().unwrap();
    assert_whole_stacks(
        "unwind_debian_gzip",
        "gzip",
        &[gzip, "-9", "-k", "-f", input],
        6,
    );
}

/// For Debian's `rg` (Rust, stripped; perf --call-graph dwarf:
/// median 15 on the same command): one search is a fraction of a second, so one rg searches the
/// file twenty times (twenty rg processes would each race their first samples against the
/// loading of their tables, walked by frame pointers until then).
#[test]
fn unwind_debian_rg_whole_stacks() {
    require_root();
    let Some(rg) = debian_program("unwind_debian_rg", "/usr/bin/rg", "ripgrep") else {
        return;
    };
    let input = scratch("unwind_debian_rg_input").join("input.txt");
    write_input(&input, 24 << 20);
    let input = input.to_str().unwrap();
    let mut command = vec![rg, "-j1", "-c", "[a-z]{4}\\s[a-z]{3}q[a-z]"];
    command.extend([input; 20]);
    assert_whole_stacks("unwind_debian_rg", "rg", &command, 6);
}

/// Debian's `xz -9` (stripped `liblzma`, no frame pointers) profiled by tracekit and by
/// `perf record --call-graph dwarf` (Debian's `linux-perf`) on the same input: tracekit's
/// median user depth is within 1 of perf's, no user frame is a bare `[unknown]`, and of the
/// samples in `lzma_code` (the compression, called from `main`) as large a share reaches
/// `__libc_start_main` as perf's, within 2 points (a stack cut by a wrong step ends in a
/// frame read from the wrong slot instead; those of xz's exit, whose memory is gone, and of
/// ld.so's start are not counted). Where
/// Debian's perf runs: here (perf 6.1 on x86_64: median 15) and in the arm64 VM, whose
/// image holds Debian's arm64 `xz` and `perf`.
#[test]
fn unwind_debian_xz_as_deep_as_perf() {
    require_root();
    let test = "unwind_debian_xz_perf";
    let Some(xz) = debian_program(test, "/usr/bin/xz", "xz-utils") else {
        return;
    };
    let Some(perf) = debian_program(test, "/usr/bin/perf", "linux-perf") else {
        return;
    };
    // Emulated (the VM matrix), xz runs several times slower: 512 KiB is seconds there.
    let emulated = std::env::var("TRACEKIT_VM_EMULATED").is_ok_and(|v| v == "1");
    // Apart from the test's own scratch, which each tracekit run starts afresh.
    let dir = scratch("unwind_debian_xz_perf_data");
    let input = dir.join("input.txt");
    write_input(&input, if emulated { 512 << 10 } else { 4 << 20 });
    let command = [xz, "-9", "-T1", "-k", "-f", input.to_str().unwrap()];

    let (folded, stderr) = profile_folded(test, &["--user-only"], &command);
    let stacks = user_stacks(&folded, "xz");
    let total = samples(&stacks);
    assert!(
        total >= 50,
        "only {total} samples of xz: {folded:#?}\n{stderr}"
    );
    let unknown = through(&stacks, &["[unknown]"]);
    let median = median_depth(&stacks);

    let perf_stacks = perf_user_stacks(perf, &dir, &command, "xz");
    let perf_median = median_depth(&perf_stacks);
    // Of the samples in `lzma_code`, the share that hold `__libc_start_main` (perf's frames
    // are `IP SYM+OFF (DSO)`).
    let rooted = |stacks: &[(Vec<String>, u64)]| {
        let holds = |frames: &[String], name: &str| frames.iter().any(|f| f.contains(name));
        let (mut coding, mut through) = (0, 0);
        for (frames, count) in stacks.iter().filter(|(f, _)| holds(f, "lzma_code")) {
            coding += count;
            if holds(frames, "__libc_start_main") {
                through += count;
            }
        }
        through as f64 / coding.max(1) as f64
    };
    let (share, perf_share) = (rooted(&stacks), rooted(&perf_stacks));
    let walked = stderr.lines().find(|l| l.contains("dwarf unwinder:"));
    eprintln!(
        "{test}: median user depth {median} over {total} samples ({unknown} with [unknown], \
         {:.1}% of lzma_code's through __libc_start_main); perf --call-graph dwarf: \
         {perf_median} over {} ({:.1}%)\n{}",
        share * 100.0,
        perf_stacks.len(),
        perf_share * 100.0,
        walked.unwrap_or_default()
    );
    assert!(
        perf_stacks.len() >= 50,
        "perf recorded only {} samples of xz",
        perf_stacks.len()
    );
    assert!(
        median.abs_diff(perf_median) <= 1,
        "median user depth {median}, perf's {perf_median}: {folded:#?}"
    );
    assert_eq!(unknown, 0, "[unknown] user frames: {folded:#?}");
    assert!(
        share + 0.02 >= perf_share,
        "{:.1}% of lzma_code's samples through __libc_start_main, perf's {:.1}%: {folded:#?}",
        share * 100.0,
        perf_share * 100.0
    );
}

/// `perf record --call-graph dwarf` of `command` (cpu-clock at 99 Hz, into `dir`), read back
/// by `perf script`: the user frames of each sample of `comm` (`ADDRESS SYMBOL+OFFSET (DSO)`,
/// innermost first, inlined functions not counted as frames), each with a count of 1.
fn perf_user_stacks(
    perf: &str,
    dir: &Path,
    command: &[&str],
    comm: &str,
) -> Vec<(Vec<String>, u64)> {
    let data = dir.join("perf.data");
    let data = data.to_str().unwrap();
    // Debian's arm64 perf 6.1 in the emulated arm64 6.12 refused cpu-clock sampling
    // ("PMU Hardware doesn't support sampling/overflow-interrupts"): then the other clock,
    // then the emulated PMU's cycles.
    let mut refusals = String::new();
    let recorded = ["cpu-clock", "task-clock", "cycles"].iter().any(|event| {
        let mut record = Command::new(perf);
        record
            .args(["record", "-q", "-e", event, "-F", "99", "--call-graph"])
            .args(["dwarf", "-o", data, "--"])
            .args(command);
        let out = tracekit_tests::run(record, TIMEOUT);
        refusals += &format!("perf record -e {event}: {}\n", out.stderr.trim());
        out.status.success()
    });
    eprint!("{refusals}");
    assert!(recorded, "perf record refused every event:\n{refusals}");
    let mut script = Command::new(perf);
    script.args([
        "script",
        "--no-inline",
        "-F",
        "comm,ip,sym,symoff,dso",
        "-i",
        data,
    ]);
    let out = tracekit_tests::run(script, TIMEOUT);
    assert!(out.status.success(), "perf script: {}", out.stderr);
    // A sample is its comm on a line, then one indented line per frame.
    let mut stacks: Vec<(Option<Vec<String>>, u64)> = Vec::new();
    for line in out.stdout.lines() {
        if !line.starts_with(char::is_whitespace) {
            if !line.trim().is_empty() {
                stacks.push(((line.trim() == comm).then(Vec::new), 1));
            }
        } else if let Some((Some(frames), _)) = stacks.last_mut() {
            let frame = line.trim();
            if !frame.is_empty() && !frame.ends_with("([kernel.kallsyms])") {
                frames.push(frame.to_string());
            }
        }
    }
    stacks
        .into_iter()
        .filter_map(|(frames, count)| Some((frames?, count)))
        .collect()
}

/// PostgreSQL: Debian's server is built without frame pointers.
/// `profile -a` while `pgbench -c 4` runs against a private cluster (the backends started
/// before tracekit, so their tables come from the whole-machine scan): at least 80% of the
/// samples of the `postgres` processes hold `PostgresMain` or `main` (every process of the
/// cluster is forked from the postmaster's `main`), most of them `PostgresMain`.
#[test]
fn unwind_postgres_backends_whole_stacks() {
    require_root();
    let test = "unwind_postgres";
    let Some(cluster) = tracekit_tests::postgres::Cluster::start(test) else {
        return;
    };
    cluster.pgbench(&["-i", "-q", "-s", "2"]).assert_code(0);
    let out = scratch(test).join("out.folded");
    let (run, bench) = std::thread::scope(|scope| {
        let bench = scope.spawn(|| cluster.pgbench(&["-c", "4", "-T", "8"]));
        // Let pgbench connect its four backends first.
        std::thread::sleep(Duration::from_secs(2));
        let run = tracekit(
            [
                "profile",
                "-a",
                "-d",
                "4",
                "-v",
                "-o",
                out.to_str().unwrap(),
            ],
            TIMEOUT,
        );
        (run, bench.join().unwrap())
    });
    run.assert_code(0);
    bench.assert_code(0);
    let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
    let stacks = user_stacks(&folded, "postgres");
    let total = samples(&stacks);
    let count = |name: &str| -> u64 {
        stacks
            .iter()
            .filter(|(frames, _)| frames.iter().any(|f| f == name))
            .map(|(_, count)| count)
            .sum()
    };
    let (in_main, in_postgres_main) = (count("main"), count("PostgresMain"));
    eprintln!(
        "{test}: {in_main} of {total} postgres samples hold main, {in_postgres_main} \
         PostgresMain; median user depth {}",
        median_depth(&stacks)
    );
    assert!(
        total >= 100,
        "only {total} postgres samples: {folded:#?}\n{}",
        run.stderr
    );
    assert!(
        in_main as f64 >= 0.8 * total as f64 && in_postgres_main * 2 >= total,
        "{in_main} of {total} postgres samples hold main, {in_postgres_main} PostgresMain: \
         {folded:#?}\n{}",
        run.stderr
    );
}

/// Counts of the stacks of `stacks` whose user frames hold `chain` in a row.
fn through(stacks: &[(Vec<String>, u64)], chain: &[&str]) -> u64 {
    stacks
        .iter()
        .filter(|(frames, _)| frames.windows(chain.len()).any(|w| w == chain))
        .map(|(_, count)| count)
        .sum()
}

/// Runs `tracekit ARGS -o out.folded -- COMMAND` and parses the folded stacks.
fn folded_of(test: &str, args: &[&str], command: &[&str]) -> (Vec<(String, u64)>, String) {
    let out = scratch(test).join("out.folded");
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.extend([
        "-v".into(),
        "-o".into(),
        out.to_str().unwrap().into(),
        "--".into(),
    ]);
    all.extend(command.iter().map(|s| s.to_string()));
    let run = tracekit(&all, TIMEOUT);
    run.assert_code(0);
    let folded = parse_folded(&std::fs::read_to_string(&out).unwrap());
    (folded, run.stderr)
}

/// `stackcount` and `offcpu` (the engine's programs) walk user
/// stacks with the same unwinder. The fixture, without frame pointers, sleeps 2 ms 200 times
/// in `main;one;two;three;four;nap` through libc's usleep (after one sleep in `main` while
/// its tables load): every one of those clock_nanosleep stacks holds the whole chain, and so
/// does nearly all of their time off CPU; frame pointers lose it.
#[test]
fn unwind_nofp_stackcount_and_offcpu() {
    require_root();
    const NAPS: u64 = 200;
    let fixture = fixture_with("tk_nofp", fixture_flags("tk_nofp"));
    let command = [fixture.to_str().unwrap(), "--naps", "200"];
    let chain = ["main", "one", "two", "three", "four", "nap"];
    let event = "t:syscalls:sys_enter_clock_nanosleep";

    let (folded, stderr) = folded_of(
        "unwind_nofp_stackcount",
        &["stackcount", "-U", event],
        &command,
    );
    let stacks = user_stacks(&folded, "tk_nofp");
    assert_eq!(
        through(&stacks, &chain),
        NAPS,
        "stackcount: not every nap's stack holds main;one;two;three;four;nap: \
         {folded:#?}\n{stderr}"
    );
    assert!(stderr.contains("unwind tables: "), "{stderr}");

    let (folded, stderr) = folded_of(
        "unwind_nofp_stackcount_fp",
        &["stackcount", "-U", "--call-graph", "fp", event],
        &command,
    );
    let stacks = user_stacks(&folded, "tk_nofp");
    assert_eq!(samples(&stacks), NAPS + 1, "{folded:#?}\n{stderr}");
    assert!(
        through(&stacks, &chain) < NAPS / 2,
        "fp: the chain survived frame pointers; the fixture keeps them? {folded:#?}"
    );

    let (folded, stderr) = folded_of("unwind_nofp_offcpu", &["offcpu", "-U"], &command);
    let stacks = user_stacks(&folded, "tk_nofp");
    let (whole_us, nap_us) = (through(&stacks, &chain), through(&stacks, &["nap"]));
    // 200 naps of at least 2 ms each.
    assert!(
        whole_us >= NAPS * 2000 && whole_us as f64 >= 0.95 * nap_us as f64,
        "offcpu: {whole_us} of {nap_us} us off CPU in nap under the whole chain: \
         {folded:#?}\n{stderr}"
    );
}

/// A C++ fixture with frame pointers whose hot leaf, a small
/// template member function, has no frame (`-momit-leaf-frame-pointer`): the leaf's caller
/// `run` stays in its stacks in both modes (frame pointers repair the first frame from the
/// return address at the top of the stack; the tables say where it is). Also `stackcount` by
/// frame pointers on a syscall: libc's `getppid` wrapper has no frame either, and its caller
/// stays.
#[test]
fn unwind_leaf_caller_kept_in_both_modes() {
    require_root();
    let fixture = fixture_with("tk_leaf", fixture_flags("tk_leaf"));
    let fixture = fixture.to_str().unwrap();
    let chain = ["main", LEAF_CALLER, LEAF];
    for mode in ["fp", "dwarf"] {
        let (folded, stderr) = profile_folded(
            &format!("unwind_leaf_{mode}"),
            &["--call-graph", mode],
            &[fixture, "2"],
        );
        let stacks = user_stacks(&folded, "tk_leaf");
        let (whole, total) = ending_with(&stacks, &chain);
        assert!(
            total >= 50,
            "{mode}: only {total} samples in the leaf: {folded:#?}\n{stderr}"
        );
        assert!(
            whole as f64 >= 0.95 * total as f64,
            "{mode}: only {whole} of {total} samples in the leaf end with \
             main;{LEAF_CALLER};{LEAF}: {folded:#?}\n{stderr}"
        );
        eprintln!("{mode}: {whole} of {total} samples in the leaf keep its caller");
    }

    const CALLS: u64 = 300;
    let (folded, stderr) = folded_of(
        "unwind_leaf_stackcount_fp",
        &[
            "stackcount",
            "-U",
            "--call-graph",
            "fp",
            "t:syscalls:sys_enter_getppid",
        ],
        &[fixture, "--syscalls", &CALLS.to_string()],
    );
    let stacks = user_stacks(&folded, "tk_leaf");
    let kept = through(&stacks, &["main", SYSCALLS_CALLER]);
    assert_eq!(
        (kept, samples(&stacks)),
        (CALLS, CALLS),
        "fp: not every getppid stack holds main;{SYSCALLS_CALLER}: {folded:#?}\n{stderr}"
    );
}

/// tk_leaf's frames, as the symbolizer names them (demangled).
const LEAF: &str = "Counter<unsigned long>::step(unsigned long)";

const LEAF_CALLER: &str = "run(double)";

const SYSCALLS_CALLER: &str = "run_syscalls(long)";

/// `trace -U` prints each event's user stack walked by the same DWARF unwinder as
/// `stackcount`'s: every one of tk_nofp's 50 naps (no frame pointers) holds
/// `nap;four;three;two;one;main`, leaf first; `--call-graph fp` loses them. Under TCG trace
/// prints the last events after the fixture has exited, while it is a zombie: they keep their
/// names (they were `tk_nofp+0x401930` while a zombie counted as alive).
#[test]
fn unwind_nofp_trace_user_stacks() {
    require_root();
    let fixture = fixture_with("tk_nofp", fixture_flags("tk_nofp"));
    let fixture = fixture.to_str().unwrap();
    let chain = ["nap", "four", "three", "two", "one", "main"];
    let whole_naps = |call_graph: &str| {
        let run = tracekit(
            [
                "trace",
                "t:syscalls:sys_enter_clock_nanosleep",
                "-U",
                "--json",
                "--call-graph",
                call_graph,
                "--",
                fixture,
                "--naps",
                "50",
            ],
            TIMEOUT,
        );
        run.assert_code(0);
        let whole = run
            .stdout
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|event| event["comm"] == "tk_nofp")
            .filter(|event| {
                let frames: Vec<&str> = event["user_stack"]
                    .as_array()
                    .map(|frames| frames.iter().filter_map(|f| f.as_str()).collect())
                    .unwrap_or_default();
                frames.windows(chain.len()).any(|w| w == chain)
            })
            .count();
        (whole, run)
    };
    let (whole, run) = whole_naps("dwarf");
    assert_eq!(
        whole, 50,
        "dwarf: {whole} of 50 naps with the whole chain: {}\n{}",
        run.stdout, run.stderr
    );
    let (whole, run) = whole_naps("fp");
    assert!(
        whole < 25,
        "fp: {whole} of 50 naps kept the chain; the fixture keeps frame pointers? {}",
        run.stdout
    );
}

/// A Rust release binary without frame pointers, built here by rustc (linked by its own lld,
/// which packs the text into the read-only segment's last page: the load bias must come from
/// the text segment).
fn rust_nofp() -> std::path::PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let dir = root.join("target/fixtures");
    std::fs::create_dir_all(&dir).unwrap();
    let binary = dir.join("tk_rust_nofp");
    let output = Command::new("rustc")
        .args([
            "--edition",
            "2024",
            "-C",
            "opt-level=2",
            "-C",
            "force-frame-pointers=no",
        ])
        .args(["-g", "-o"])
        .arg(&binary)
        .arg(root.join("tests/fixtures/tk_rust_nofp.rs"))
        .output()
        .expect("rustc runs (the toolchain builds tracekit)");
    assert!(
        output.status.success(),
        "rustc: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    binary
}

/// A Rust release binary without frame pointers, with a known
/// chain: the samples in its leaf hold the whole chain up to `_start`; frame pointers lose it.
#[test]
fn unwind_rust_release_whole_chain() {
    require_root();
    let binary = rust_nofp();
    let binary = binary.to_str().unwrap();
    let chain = [
        "tk_rust_nofp::main",
        "tk_rust_nofp::one",
        "tk_rust_nofp::two",
        "tk_rust_nofp::three",
        "tk_rust_nofp::leaf",
    ];
    let in_leaf = |stacks: &[(Vec<String>, u64)]| through(stacks, &["tk_rust_nofp::leaf"]);

    let (folded, stderr) = profile_folded("unwind_rust_dwarf", &[], &[binary, "2"]);
    let stacks = user_stacks(&folded, "tk_rust_nofp");
    let whole: Vec<(Vec<String>, u64)> = stacks
        .iter()
        .filter(|(frames, _)| frames.first().map(String::as_str) == Some("_start"))
        .cloned()
        .collect();
    let (whole, total) = (through(&whole, &chain), in_leaf(&stacks));
    assert!(
        total >= 50,
        "only {total} samples in leaf: {folded:#?}\n{stderr}"
    );
    assert!(
        whole as f64 >= 0.9 * total as f64,
        "dwarf: only {whole} of {total} samples in leaf hold _start..main;one;two;three;leaf: \
         {folded:#?}\n{stderr}"
    );

    let (folded, stderr) =
        profile_folded("unwind_rust_fp", &["--call-graph", "fp"], &[binary, "1"]);
    let stacks = user_stacks(&folded, "tk_rust_nofp");
    let (whole, total) = (through(&stacks, &chain), in_leaf(&stacks));
    assert!(
        total >= 20,
        "only {total} samples in leaf: {folded:#?}\n{stderr}"
    );
    assert!(
        (whole as f64) < 0.5 * total as f64,
        "fp: {whole} of {total} whole; the binary keeps frame pointers? {folded:#?}"
    );
}
