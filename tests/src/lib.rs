//! Helpers for tracekit's integration tests: the binary under test, fixture programs with
//! known behaviour (compiled from `fixtures/*.c` on first use), and runs with timeouts.
//!
//! The tests load BPF programs, so they need root and run one at a time
//! (`cargo xtask test` does both).

pub mod agreement;
pub mod bpftrace;
pub mod postgres;
pub mod pprof;

use std::{
    collections::HashMap,
    ffi::OsStr,
    io::{BufRead as _, BufReader, Read as _},
    path::{Path, PathBuf},
    process::{Child, ChildStderr, Command, ExitStatus, Stdio},
    sync::{Mutex, OnceLock},
    time::{Duration, Instant},
};

/// Burns this test process's CPU until `until`, in a function of its own (never inlined):
/// the frame a profile of the harness, a debug binary, names. Returns the spins made.
#[inline(never)]
pub fn burn_cpu_until(until: Instant) -> u64 {
    let mut spins = 0u64;
    while Instant::now() < until {
        spins = std::hint::black_box(spins + 1);
    }
    spins
}

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The tracekit binary under test: `$TRACEKIT_BIN` (set by xtask), else target/release.
pub fn tracekit_bin() -> PathBuf {
    let path = std::env::var_os("TRACEKIT_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target/release/tracekit"));
    assert!(
        path.is_file(),
        "{} does not exist; run the tests with `cargo xtask test`",
        path.display()
    );
    path
}

/// Fails the test unless it runs as root: loading BPF programs needs it.
pub fn require_root() {
    // SAFETY: geteuid(2) has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(
        euid, 0,
        "integration tests load BPF programs and must run as root (cargo xtask test)"
    );
}

/// A scratch directory for one test, emptied first.
pub fn scratch(test: &str) -> PathBuf {
    let dir = workspace().join("target/test-scratch").join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The path of fixture `name`, compiled from `fixtures/NAME.c` on first use: `-O0` with
/// frame pointers and debug info, so every function in the source is a frame on the stack.
/// In the VM matrix the fixtures are prebuilt (static) in `$TRACEKIT_FIXTURES`.
pub fn fixture(name: &str) -> PathBuf {
    fixture_with(name, DEFAULT_FIXTURE_FLAGS)
}

/// How [`fixture`] compiles.
pub const DEFAULT_FIXTURE_FLAGS: &[&str] = &["-O0", "-g", "-fno-omit-frame-pointer"];

/// Compiler flags of the fixtures built otherwise than [`DEFAULT_FIXTURE_FLAGS`] (the VM
/// image builds them the same way, statically).
pub fn fixture_flags(name: &str) -> &'static [&'static str] {
    match name {
        // Optimized and without frame pointers, as distributions build: only unwind tables
        // walk it.
        "tk_nofp" => &["-O2", "-g", "-fomit-frame-pointer"],
        // Position-independent and optimized: USDT arguments become RIP-relative and
        // indexed memory operands.
        "tk_usdt_operands" => &["-O2", "-fPIE", "-pie", "-g"],
        // The same source position-dependent: a global array element is absolute + index
        // × scale.
        "tk_usdt_operands_nopie" => &["-O2", "-fno-pie", "-no-pie", "-g"],
        // C++ with frame pointers, but none in leaf functions: a frame-pointer walk from
        // the leaf loses its caller unless the first frame is repaired.
        "tk_leaf" => &[
            "-O2",
            "-g",
            "-fno-omit-frame-pointer",
            "-momit-leaf-frame-pointer",
        ],
        _ => DEFAULT_FIXTURE_FLAGS,
    }
}

/// The path of fixture `name` compiled with gcc (g++ for C++) `flags` (e.g. `-O2 -fPIE -pie` for the code
/// distributions ship); each name is always built with the same flags (see
/// [`fixture_flags`]).
pub fn fixture_with(name: &str, flags: &[&str]) -> PathBuf {
    if let Some(dir) = std::env::var_os("TRACEKIT_FIXTURES") {
        return PathBuf::from(dir).join(name);
    }
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let mut built = BUILT.get_or_init(Default::default).lock().unwrap();
    if let Some(path) = built.get(name) {
        return path.clone();
    }
    // C fixtures are NAME.c, C++ ones NAME.cpp (built by g++, which xtask setup installs).
    let c = workspace().join("tests/fixtures").join(format!("{name}.c"));
    let (source, compiler) = if c.exists() {
        (c, "gcc")
    } else {
        let cpp = workspace()
            .join("tests/fixtures")
            .join(format!("{name}.cpp"));
        (cpp, "g++")
    };
    let dir = workspace().join("target/fixtures");
    std::fs::create_dir_all(&dir).unwrap();
    let binary = dir.join(name);
    let output = Command::new(compiler)
        .args(flags)
        .arg("-o")
        .arg(&binary)
        .arg(&source)
        .output()
        .unwrap_or_else(|err| panic!("{compiler} runs (cargo xtask setup installs it): {err}"));
    assert!(
        output.status.success(),
        "compiling {}: {}",
        source.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    built.insert(name.to_string(), binary.clone());
    binary
}

/// A finished run of tracekit.
#[derive(Debug)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// The exit code (panics if a signal killed it).
    pub fn code(&self) -> i32 {
        self.status
            .code()
            .unwrap_or_else(|| panic!("killed by a signal: {self:#?}"))
    }

    /// Panics with the whole output unless the exit code is `code`.
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(self.code(), code, "unexpected exit status: {self:#?}");
        self
    }
}

/// Runs `tracekit ARGS` to completion (at most `timeout`).
pub fn tracekit<I, S>(args: I, timeout: Duration) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = Command::new(tracekit_bin());
    command.args(args);
    run(command, timeout)
}

/// Runs a command to completion with a timeout, capturing stdout and stderr.
pub fn run(mut command: Command, timeout: Duration) -> Output {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("spawning {command:?}: {err}"));
    wait_output(child, timeout)
}

/// Installs Debian `package` with apt-get unless `present()` already holds (after
/// `apt-get update` if the first try fails: a fresh machine's package lists may be stale);
/// false, with a printed reason naming the package, when it cannot be installed.
pub fn ensure_package(test: &str, package: &str, present: impl Fn() -> bool) -> bool {
    if present() {
        return true;
    }
    let install = || {
        let mut install = Command::new("apt-get");
        install
            .args(["install", "-y", "-q", "--no-install-recommends", package])
            .env("DEBIAN_FRONTEND", "noninteractive");
        run(install, Duration::from_secs(600))
    };
    let mut out = install();
    if !(out.status.success() && present()) {
        let mut update = Command::new("apt-get");
        update.args(["update", "-qq"]);
        run(update, Duration::from_secs(300));
        out = install();
    }
    if out.status.success() && present() {
        return true;
    }
    eprintln!(
        "{test}: skipped: installing `{package}` failed (apt-get install {package}): {}",
        out.stderr.lines().last().unwrap_or("")
    );
    false
}

/// Waits for a child started with piped stdout/stderr, killing it after `timeout`.
pub fn wait_output(mut child: Child, timeout: Duration) -> Output {
    let mut stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take();
    let out_thread = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err_thread = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut stderr) = stderr {
            let _ = stderr.read_to_string(&mut text);
        }
        text
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "timed out after {timeout:?}; stderr: {}",
                err_thread.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out_thread.join().unwrap(),
        stderr: err_thread.join().unwrap(),
    }
}

/// Starts `tracekit ARGS` in the background with piped output.
pub fn spawn_tracekit<I, S>(args: I) -> Child
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Command::new(tracekit_bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning tracekit")
}

/// Reads the child's stderr until a line contains `needle` (tracekit prints "Hit Ctrl-C to
/// end." once its probes are attached). Returns the lines read and keeps the rest readable.
pub fn wait_for_stderr(child: &mut Child, needle: &str, timeout: Duration) -> Vec<String> {
    let stderr: ChildStderr = child.stderr.take().expect("piped stderr");
    let (sender, receiver) = std::sync::mpsc::channel();
    let wanted = needle.to_string();
    std::thread::spawn(move || {
        let mut lines = Vec::new();
        let mut reader = BufReader::new(stderr);
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap_or(0) > 0 {
            let found = line.contains(&wanted);
            lines.push(std::mem::take(&mut line));
            if found {
                let _ = sender.send((lines.clone(), true));
                // Keep draining so the child never blocks on a full pipe.
                let mut rest = String::new();
                let _ = reader.read_to_string(&mut rest);
                return;
            }
        }
        let _ = sender.send((lines, false));
    });
    match receiver.recv_timeout(timeout) {
        Ok((lines, true)) => lines,
        Ok((lines, false)) => panic!("stderr ended without {needle:?}: {lines:?}"),
        Err(_) => panic!("no {needle:?} on stderr within {timeout:?}"),
    }
}

/// Starts fixture `name` with `args`, stdout discarded.
pub fn spawn_fixture(name: &str, args: &[&str]) -> Child {
    Command::new(fixture(name))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap_or_else(|err| panic!("spawning fixture {name}: {err}"))
}

/// Samples of `folded` whose stack satisfies `test`, and all samples: `(hits, total)`.
pub fn share(folded: &[(String, u64)], test: impl Fn(&str) -> bool) -> (u64, u64) {
    let total = folded.iter().map(|(_, n)| n).sum();
    let hits = folded
        .iter()
        .filter(|(path, _)| test(path))
        .map(|(_, n)| n)
        .sum();
    (hits, total)
}

/// Asserts that a [`share`], `(named, total)`, is at least `ratio` of a `total` of at least
/// `at_least`, printing both for `test` (`what` names the share); `detail` goes with a failure.
pub fn assert_share(
    test: &str,
    what: &str,
    (named, total): (u64, u64),
    (at_least, ratio): (u64, f64),
    detail: &dyn std::fmt::Debug,
) {
    eprintln!("{test}: {named} of {total} {what}");
    assert!(total >= at_least, "only {total}: {detail:#?}");
    assert!(
        named as f64 >= ratio * total as f64,
        "{named} of {total} {what} (want {:.0}%): {detail:#?}",
        ratio * 100.0
    );
}

/// Whether `program` is on PATH; if not, prints why `test` skips (`apt-get install package`).
pub fn installed(test: &str, program: &str, package: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()));
    if !found {
        eprintln!("{test}: skipped: `{program}` is not installed (apt-get install {package})");
    }
    found
}

/// `tests/fixtures/FIXTURE` (a `.java` file) compiled by `javac` into `dir/classes`, which
/// it returns.
pub fn compile_java(dir: &Path, fixture: &str) -> PathBuf {
    let classes = dir.join("classes");
    std::fs::create_dir_all(&classes).unwrap();
    let mut javac = Command::new("javac");
    javac
        .arg("-d")
        .arg(&classes)
        .arg(workspace().join("tests/fixtures").join(fixture));
    run(javac, Duration::from_secs(120)).assert_code(0);
    classes
}

/// `tests/fixtures/FIXTURE` (a `.java` file) compiled: by `javac` into `dir/classes`
/// ([`compile_java`]), or in the VM matrix the classes the image holds
/// (`$TRACEKIT_FIXTURES/classes`, compiled by the host's `javac`, for a JVM of the image).
/// `None`, the test skipping with a printed reason, without `javac`, or in the VM without
/// `java` or the fixture's classes.
pub fn java_classes(test: &str, dir: &Path, fixture: &str) -> Option<PathBuf> {
    let Some(fixtures) = std::env::var_os("TRACEKIT_FIXTURES") else {
        return installed(test, "javac", "openjdk-17-jdk-headless")
            .then(|| compile_java(dir, fixture));
    };
    let classes = PathBuf::from(fixtures).join("classes");
    let class = classes
        .join(fixture.trim_end_matches(".java"))
        .with_extension("class");
    if !class.is_file() {
        eprintln!("{test}: skipped: no {} in the image", class.display());
        return None;
    }
    installed(test, "java", "openjdk-17-jre-headless").then_some(classes)
}

/// Starts `command` (stdout piped) and waits for its first line, which must be "ready":
/// fixtures print it once their known work begins.
pub fn spawn_ready(mut command: Command) -> Child {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("spawning {command:?}: {err}"));
    let mut line = String::new();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut line).unwrap();
    if line.trim() != "ready" {
        // The rest says why (a JVM prints its reason on the next lines).
        let mut rest = String::new();
        let _ = stdout.read_to_string(&mut rest);
        let _ = child.kill();
        let _ = child.wait();
        panic!("{command:?} did not start: {line}{rest}");
    }
    child
}

/// Whether folded stack `path` (outermost first) has frames starting with `names`, in this
/// order (others may stand between them).
pub fn chain_in_order(path: &str, names: &[impl AsRef<str>]) -> bool {
    let mut frames = path.split(';');
    names
        .iter()
        .all(|name| frames.any(|frame| frame.starts_with(name.as_ref())))
}

/// Parses folded stacks (`frame;frame;... count` per line).
pub fn parse_folded(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let (path, count) = line
                .rsplit_once(' ')
                .unwrap_or_else(|| panic!("not a folded line: {line:?}"));
            let count = count
                .parse()
                .unwrap_or_else(|_| panic!("bad count in folded line: {line:?}"));
            (path.to_string(), count)
        })
        .collect()
}

/// Sends `signal` to `pid`.
pub fn kill(pid: u32, signal: i32) {
    // SAFETY: kill(2).
    unsafe { libc::kill(pid as i32, signal) };
}

/// Polls `check` every 20 ms until it returns `Ok`, and returns that value; after
/// `timeout`, panics with the last `Err` (what still did not hold). For every wait on
/// something another process or the kernel does: a fixed sleep assumes it happened by
/// then, which a busy machine outruns.
pub fn wait_until<T, E: std::fmt::Display>(
    timeout: Duration,
    mut check: impl FnMut() -> Result<T, E>,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        match check() {
            Ok(value) => return value,
            Err(why) if Instant::now() >= deadline => panic!("after {timeout:?}: {why}"),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Waits until process `pid` catches `signal` (a handler installed: its bit in SigCgt of
/// /proc/PID/status), so that sending it runs tracekit's handling, not the default action
/// that kills it. For tools that print no start line.
pub fn wait_catches(pid: u32, signal: i32) {
    wait_until(Duration::from_secs(60), || {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .map_err(|err| format!("process {pid}: {err}"))?;
        let caught = status
            .lines()
            .find_map(|line| line.strip_prefix("SigCgt:"))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .unwrap_or(0);
        if caught & (1 << (signal - 1)) != 0 {
            Ok(())
        } else {
            Err(format!("process {pid} does not catch signal {signal}"))
        }
    });
}

/// The ids of the BPF programs process `pid` holds (program and link fds both name one).
/// Tests find their tracekit's programs this way, never by name: other processes on the
/// machine (another tracekit, another test run) load programs of the same names.
pub fn programs_held_by(pid: u32) -> Vec<u32> {
    ids_held_by(pid, "prog_id:")
}

/// The programs process `pid` holds whose name (cut by the kernel to 15 characters) starts
/// with `prefix`: by name, but only among that process's own.
pub fn programs_held_named(pid: u32, prefix: &str) -> Vec<u32> {
    let held = programs_held_by(pid);
    aya::programs::loaded_programs()
        .filter_map(Result::ok)
        .filter(|info| held.contains(&info.id()))
        .filter(|info| info.name_as_str().unwrap_or("").starts_with(prefix))
        .map(|info| info.id())
        .collect()
}

/// The ids after `field` (`prog_id:`, `link_id:`) in the fdinfo of every fd `pid` holds;
/// none once it has exited.
pub fn ids_held_by(pid: u32, field: &str) -> Vec<u32> {
    let mut ids = Vec::new();
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
        return ids;
    };
    for entry in fds.flatten() {
        let Ok(info) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        ids.extend(info.lines().filter_map(|line| {
            line.strip_prefix(field)
                .and_then(|id| id.trim().parse::<u32>().ok())
        }));
    }
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// How long the kernel may take to free a program after its holder exited. It is deferred
/// (a link drops its program after an RCU grace period): 0 to 128 ms here for the
/// exporter's and profile's programs at a load average of 20 on 2 CPUs. A bound on a
/// poll: it costs this only when a program really stays.
pub const UNLOAD_TIMEOUT: Duration = Duration::from_secs(30);

/// Waits until none of `programs` and none of `links` (ids, as [`programs_held_by`] and
/// [`ids_held_by`] read them while their holder ran) is loaded, nor any link to one of
/// `programs`; panics naming those left after [`UNLOAD_TIMEOUT`]. Program and link ids
/// are not reused soon (the kernel allocates them cyclically), so other processes'
/// programs never count.
pub fn wait_unloaded(programs: &[u32], links: &[u32]) {
    let started = Instant::now();
    wait_until(UNLOAD_TIMEOUT, || {
        let left_programs: Vec<u32> = aya::programs::loaded_programs()
            .filter_map(Result::ok)
            .map(|info| info.id())
            .filter(|id| programs.contains(id))
            .collect();
        let left_links: Vec<u32> = aya::programs::loaded_links()
            .filter_map(Result::ok)
            .filter(|link| links.contains(&link.id()) || programs.contains(&link.program_id()))
            .map(|link| link.id())
            .collect();
        if left_programs.is_empty() && left_links.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "programs {left_programs:?} and links {left_links:?} are still loaded, \
                 {:?} after the wait began",
                started.elapsed()
            ))
        }
    });
}

/// Whether this kernel has kprobes; prints why a test is skipped when it has not.
pub fn kprobes_or_skip(test: &str) -> bool {
    if Path::new("/sys/bus/event_source/devices/kprobe").exists() {
        return true;
    }
    eprintln!(
        "{test}: skipped: this kernel has no kprobes (CONFIG_KPROBES is not set); \
         it runs in the VM kernel matrix (cargo xtask test --vm)"
    );
    false
}

/// Whether tracepoint `event` (`io_uring:io_uring_complete`) has field `field` on this
/// kernel (its tracefs format); prints why a test is skipped when it has not, naming the
/// kernel that has it (`since`).
pub fn tracepoint_field_or_skip(test: &str, event: &str, field: &str, since: &str) -> bool {
    let (system, name) = event.split_once(':').expect("system:name");
    let format =
        std::fs::read_to_string(format!("/sys/kernel/tracing/events/{system}/{name}/format"))
            .unwrap_or_default();
    let has = format.lines().any(|line| {
        line.trim_start().starts_with("field:")
            && line
                .split(';')
                .next()
                .and_then(|decl| decl.trim_end().rsplit([' ', '*']).next())
                == Some(field)
    });
    if !has {
        eprintln!("{test}: skipped: this kernel's {event} has no `{field}` field (Linux {since})");
    }
    has
}

/// The JSON document on the last line of a tool's stdout (`--json` output).
pub fn parse_json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|err| panic!("not JSON ({err}): {stdout}"))
}

/// The count of kernel function `name` in a funccount-like JSON (`funccount`, `vfsstat`,
/// `vfscount`: groups keyed by `function`); 0 without a row.
pub fn function_count(json: &serde_json::Value, name: &str) -> u64 {
    json["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .filter(|g| g["key"]["function"] == name)
        .map(|g| g["count"].as_u64().unwrap())
        .sum()
}

/// The sum of every group's count in an engine command's JSON output.
pub fn total_count(json: &serde_json::Value) -> u64 {
    json["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| g["count"].as_u64().unwrap())
        .sum()
}

/// The events in one group's histogram (`--json`), summed over its buckets.
pub fn hist_total(group: &serde_json::Value) -> u64 {
    group["hist"]
        .as_array()
        .expect("hist")
        .iter()
        .map(|b| b["count"].as_u64().unwrap())
        .sum()
}

/// The count in the histogram bucket starting at `low`, summed over the groups.
pub fn bucket(json: &serde_json::Value, low: u64) -> u64 {
    json["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["hist"].as_array().unwrap())
        .filter(|b| b["low"].as_u64() == Some(low))
        .map(|b| b["count"].as_u64().unwrap())
        .sum()
}

/// (samples of `comm` whose stack has `needle`, samples of `comm`).
fn comm_share(folded: &[(String, u64)], comm: &str, needle: &str) -> (u64, u64) {
    let mine = folded
        .iter()
        .filter(|(path, _)| path.split(';').next() == Some(comm));
    let total = mine.clone().map(|(_, n)| n).sum();
    let hits = mine
        .filter(|(path, _)| path.contains(needle))
        .map(|(_, n)| n)
        .sum();
    (hits, total)
}

/// Asserts that at least `at_least` of the samples of `comm` (the first frame) in `folded`
/// have `needle` in their stack, of at least 30 samples.
pub fn assert_comm_share(folded: &[(String, u64)], comm: &str, needle: &str, at_least: f64) {
    let (hits, total) = comm_share(folded, comm, needle);
    // A share of fewer samples says little; a busy machine gives a 2 s fixture fewer than
    // 200, so the floor is low.
    assert!(total >= 30, "only {total} samples of {comm}: {folded:#?}");
    assert!(
        hits as f64 >= at_least * total as f64,
        "{hits} of {total} samples of {comm} have {needle:?} (want {:.0}%): {folded:#?}",
        at_least * 100.0
    );
}

/// A memory figure of process `pid` from `/proc/PID/status`, in KiB (`field`: `VmRSS`, the
/// resident set; `RssAnon`, its heap and other anonymous memory); 0 once it is gone.
pub fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Where the cgroup2 filesystem is mounted (`/sys/fs/cgroup`, or `.../unified` on hybrid
/// machines), from /proc/self/mountinfo.
pub fn cgroup2_root() -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        (right.split_whitespace().next() == Some("cgroup2"))
            .then(|| left.split_whitespace().nth(4).map(Into::into))?
    })
}

/// The Debian root of `suite` (`trixie`) made by `cargo xtask test` with debootstrap
/// (xtask/src/roots.rs): `$TRACEKIT_ROOTS/SUITE`, else `target/roots/SUITE`. `None`, with the
/// reason printed for the test's skip, when it was not made (no mirror reachable).
pub fn distro_root(test: &str, suite: &str) -> Option<PathBuf> {
    let roots = std::env::var_os("TRACEKIT_ROOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target/roots"));
    let root = roots.join(suite);
    if root.join(".tracekit-done").is_file() {
        Some(root)
    } else {
        println!(
            "{test}: skipped: no Debian {suite} root at {} (cargo xtask test makes it with \
             debootstrap)",
            root.display()
        );
        None
    }
}

/// `chroot ROOT PROGRAM ARGS`, with the root's `/proc` mounted (runtimes read
/// `/proc/self`) while the guard lives.
pub fn chroot_command(root: &Path, program: &str, args: &[&str]) -> (Command, ProcMount) {
    let proc_dir = root.join("proc");
    let mounted = std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .any(|line| line.split(' ').nth(1) == proc_dir.to_str());
    if !mounted {
        let status = Command::new("mount")
            .args(["-t", "proc", "proc"])
            .arg(&proc_dir)
            .status()
            .unwrap();
        assert!(status.success(), "mount -t proc {}", proc_dir.display());
    }
    let mut command = Command::new("chroot");
    command.arg(root).arg(program).args(args);
    (
        command,
        ProcMount {
            dir: (!mounted).then_some(proc_dir),
        },
    )
}

/// Unmounts the root's `/proc` when dropped (when this test mounted it).
pub struct ProcMount {
    dir: Option<PathBuf>,
}

impl Drop for ProcMount {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = Command::new("umount").arg("-l").arg(dir).status();
        }
    }
}

/// A fresh directory for block I/O (O_DIRECT writes that reach a disk): `scratch(test)`, or
/// in the VM matrix, whose root is the in-memory initramfs, a directory on its ext4 loop
/// device (`$TRACEKIT_BLOCK_DIR`, set by its `/init`). There the other tests' directories
/// are removed first: the filesystem is small.
pub fn block_scratch(test: &str) -> PathBuf {
    let Some(base) = std::env::var_os("TRACEKIT_BLOCK_DIR") else {
        return scratch(test);
    };
    let base = PathBuf::from(base);
    if let Ok(entries) = std::fs::read_dir(&base) {
        for entry in entries.flatten() {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with("tracekit-block-")
            {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let dir = base.join(format!("tracekit-block-{test}"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
