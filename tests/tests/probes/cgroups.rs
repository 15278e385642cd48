//! Cgroups: `--cgroup PATH` keeps only the tasks in a cgroup v2 subtree, checked in the
//! kernel (a fixture making a known number of syscalls runs inside a test cgroup while the
//! same fixture runs outside it at the same time: the tools see exactly the inside one);
//! `count --by cgroup` names each group by its path.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use serde_json::Value;
use tracekit_tests::{
    cgroup2_root, fixture, kill, parse_json, require_root, scratch, tracekit, tracekit_bin,
    wait_for_stderr, wait_output,
};

const TIMEOUT: Duration = Duration::from_secs(60);
/// The timeout of `count --by cgroup`'s run.
const LONG_TIMEOUT: Duration = Duration::from_secs(120);

/// `CGROUP2/tracekit-test-PID-TEST/inner`, made for one test and removed when dropped
/// (also when the test fails).
struct TestCgroup {
    parent: PathBuf,
    inner: PathBuf,
}

impl TestCgroup {
    fn new(test: &str) -> Self {
        let parent = cgroup2_root()
            .expect("a cgroup2 mount")
            .join(format!("tracekit-test-{}-{test}", std::process::id()));
        let inner = parent.join("inner");
        std::fs::create_dir_all(&inner).expect("making the test cgroup");
        Self { parent, inner }
    }

    /// Runs `program ARGS` inside `inner`: a shell writes its own pid to `cgroup.procs`,
    /// then execs the program, so everything the program does happens in the cgroup.
    fn spawn_inside(&self, program: &Path, args: &[&str]) -> Child {
        let procs = self.inner.join("cgroup.procs");
        Command::new("sh")
            .arg("-c")
            .arg(format!("echo $$ > {}; exec \"$0\" \"$@\"", procs.display()))
            .arg(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawning sh")
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        // A cgroup goes once its processes have exited; they may take a moment to be reaped.
        for _ in 0..100 {
            let _ = std::fs::remove_dir(&self.inner);
            if std::fs::remove_dir(&self.parent).is_ok() || !self.parent.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("could not remove {}", self.parent.display());
    }
}

fn spawn_outside(program: &Path, args: &[&str]) -> Child {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawning the fixture")
}

/// Starts `tracekit ARGS` (with `TRACEKIT_INTERPRETER=1` when `interpreter`), waits until
/// it is attached, runs `work`, then ends it with SIGINT and returns its stdout.
fn traced(args: &[&str], interpreter: bool, work: impl FnOnce()) -> String {
    let mut child = Command::new(tracekit_bin())
        .args(args)
        .env("TRACEKIT_INTERPRETER", if interpreter { "1" } else { "0" })
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning tracekit");
    wait_for_stderr(&mut child, "Hit Ctrl-C", TIMEOUT);
    work();
    kill(child.id(), libc::SIGINT);
    let out = wait_output(child, TIMEOUT);
    out.assert_code(0);
    out.stdout
}

/// `count --cgroup PARENT` counts exactly the N getppid calls of the fixture in
/// `PARENT/inner` (descendants count), none of the same fixture's outside it, both in the
/// simple program (`engine::simple`) and in the interpreter.
#[test]
fn cgroup_count_keeps_the_subtree_only() {
    require_root();
    let cgroup = TestCgroup::new("count");
    let program = fixture("tk_syscalls");
    let parent = cgroup.parent.to_str().unwrap().to_string();
    for interpreter in [false, true] {
        let args = [
            "count",
            "syscalls:sys_enter_getppid",
            "--by",
            "pid",
            "--cgroup",
            &parent,
            "--json",
        ];
        let mut inside_pid = 0;
        let stdout = traced(&args, interpreter, || {
            let mut inside = cgroup.spawn_inside(&program, &["7777"]);
            let mut outside = spawn_outside(&program, &["5555"]);
            inside_pid = inside.id();
            assert!(inside.wait().unwrap().success());
            assert!(outside.wait().unwrap().success());
        });
        let json = parse_json(&stdout);
        let groups: Vec<(u64, u64)> = json["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .map(|g| {
                (
                    g["key"]["pid"].as_u64().unwrap(),
                    g["count"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            groups,
            vec![(u64::from(inside_pid), 7777)],
            "interpreter {interpreter}: {json:#}"
        );
    }
}

/// `execsnoop --cgroup` shows the exec made inside the cgroup, not the one outside.
#[test]
fn cgroup_execsnoop_shows_the_inside_exec_only() {
    require_root();
    let cgroup = TestCgroup::new("exec");
    let dir = scratch("cgroup_execsnoop");
    let out = dir.join("events.json");
    let parent = cgroup.parent.to_str().unwrap().to_string();
    let args = [
        "execsnoop",
        "--cgroup",
        &parent,
        "--json",
        "-o",
        out.to_str().unwrap(),
    ];
    traced(&args, false, || {
        let inside = cgroup.spawn_inside(Path::new("/bin/echo"), &["tk-cgroup-inside"]);
        let outside = spawn_outside(Path::new("/bin/echo"), &["tk-cgroup-outside"]);
        for mut child in [inside, outside] {
            assert!(child.wait().unwrap().success());
        }
    });
    let text = std::fs::read_to_string(&out).unwrap();
    let args: Vec<String> = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .map(|event| event["args"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        args,
        vec!["/bin/echo tk-cgroup-inside".to_string()],
        "{text}"
    );
}

/// A path that is not a cgroup v2 directory is refused with one line naming the mount
/// (exit 2); so is `--cgroup` where the events are not the task's.
#[test]
fn cgroup_bad_paths_are_refused() {
    require_root();
    let root = cgroup2_root().expect("a cgroup2 mount");
    let root = root.to_str().unwrap();
    let missing = format!("{root}/no-such-tracekit-cgroup");
    let not_cgroup = |path: &str| {
        format!(
            "--cgroup {path}: not a cgroup v2 directory; cgroup2 is mounted at {root} (give a \
             directory under it, like {root}/system.slice)"
        )
    };
    for (args, line) in [
        (
            vec![
                "count",
                "syscalls:sys_enter_getppid",
                "--cgroup",
                "/proc",
                "-d",
                "1",
            ],
            not_cgroup("/proc"),
        ),
        (
            vec!["execsnoop", "--cgroup", &missing],
            not_cgroup(&missing),
        ),
        (
            vec!["runqlat", "--cgroup", root, "-d", "1"],
            "runqlat --cgroup: run queue latency is recorded in the waker's and the \
             scheduler's context, not the task's; it measures every task (use -a, or -- CMD \
             to measure while CMD runs)"
                .to_string(),
        ),
        (
            vec!["stat", "--cgroup", root, "-d", "1"],
            "stat --cgroup: this command cannot select tasks by cgroup (use -p PID or -- CMD)"
                .to_string(),
        ),
    ] {
        let run = tracekit(&args, TIMEOUT);
        run.assert_code(2);
        assert_eq!(run.stderr.trim(), format!("tracekit: {line}"), "{args:?}");
    }
}

/// With `-p`, both must hold: a process outside the cgroup, named by `-p`, is not counted;
/// the same run on a process inside counts all its calls.
#[test]
fn cgroup_and_pid_both_hold() {
    require_root();
    let cgroup = TestCgroup::new("pid");
    let program = fixture("tk_syscalls");
    let parent = cgroup.parent.to_str().unwrap().to_string();
    for inside in [false, true] {
        // 3000 calls paced over 1.5 s: tracekit attaches while they run, and ends with them.
        let args = ["--rate", "2000", "3000"];
        let mut child = if inside {
            cgroup.spawn_inside(&program, &args)
        } else {
            spawn_outside(&program, &args)
        };
        let pid = child.id().to_string();
        let run = tracekit(
            [
                "count",
                "syscalls:sys_enter_getppid",
                "-p",
                &pid,
                "--cgroup",
                &parent,
                "--json",
            ],
            TIMEOUT,
        );
        assert!(child.wait().unwrap().success());
        run.assert_code(0);
        let total: u64 = parse_json(&run.stdout)["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .map(|g| g["count"].as_u64().unwrap())
            .sum();
        if inside {
            assert!(total > 0 && total <= 3000, "inside: {total}");
        } else {
            assert_eq!(total, 0, "outside: {}", run.stdout);
        }
    }
}

/// `count --by cgroup` counts processes in two cgroups (made for the test under the cgroup2
/// mount) apart, each named by its path: 1000 and 3000 getppid calls. Assumes the test
/// runs in the root of its cgroup namespace (the paths are from the hierarchy's root).
#[test]
fn count_by_cgroup_names_paths() {
    require_root();
    let Some(root) = cgroup2_root() else {
        eprintln!("count_by_cgroup: skipped: no cgroup2 filesystem is mounted (cgroup v2)");
        return;
    };
    let names = [
        format!("tk-cgroup-a-{}", std::process::id()),
        format!("tk-cgroup-b-{}", std::process::id()),
    ];
    for name in &names {
        std::fs::create_dir_all(root.join(name)).unwrap();
    }
    let syscalls = fixture("tk_syscalls");
    let script = |cgroup: &str, calls: &str| {
        format!(
            "echo $$ > {}/cgroup.procs && exec {} {calls}",
            root.join(cgroup).display(),
            syscalls.display()
        )
    };
    let command = format!(
        "sh -c '{}' ; sh -c '{}'",
        script(&names[0], "1000"),
        script(&names[1], "3000")
    );
    let out = tracekit(
        [
            "count",
            "syscalls:sys_enter_getppid",
            "--by",
            "cgroup",
            "--json",
            "--",
            "sh",
            "-c",
            &command,
        ],
        LONG_TIMEOUT,
    );
    for name in &names {
        let _ = std::fs::remove_dir(root.join(name));
    }
    out.assert_code(0);
    let json = tracekit_tests::parse_json(&out.stdout);
    let groups: Vec<(String, u64)> = json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["key"]["cgroup"].as_str().unwrap().to_string(),
                g["count"].as_u64().unwrap(),
            )
        })
        .collect();
    // The shells may call getppid too before they move themselves: those count in the
    // test's own cgroup, never in the two made for it.
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("0::").map(str::to_string))
        .expect("a cgroup v2 line in /proc/self/cgroup");
    let (others, mut made): (Vec<_>, Vec<_>) =
        groups.into_iter().partition(|(path, _)| *path == own);
    made.sort();
    assert_eq!(
        made,
        [
            (format!("/{}", names[0]), 1000),
            (format!("/{}", names[1]), 3000)
        ],
        "{out:#?}"
    );
    assert!(others.iter().all(|(_, n)| *n < 100), "{out:#?}");
}
