//! The columns of event tools (`execsnoop`, `opensnoop`): libbpf-tools' headers and
//! values, rendered from `trace`'s records ([`crate::jobs::tools::EventsJob`]).
//!
//! A column's field is a name the event offers, or one of these views:
//! - `pid`, `tid`, `comm`, `cpu`: the record's own (they take no operand); `event`: the
//!   probe that fired (`syscalls:sys_enter_fsync`), for tools on several; `syscall`: its
//!   syscall's name (`fsync`); `fsop`: the filesystem operation of the function that fired,
//!   as fsslower's `T` shows it (`R`, `W`, `O`, `F`, `G` for fsdist's read, write, open,
//!   fsync, getattr functions);
//! - `field(NAME)`: the event's own field NAME where a record name shadows it
//!   (`oom:mark_victim`'s `comm`, the victim's);
//! - `ppid`: the parent of the record's process, from `/proc/PID/status` when the line is
//!   printed (`?` once the process is gone; a kernel-side source can replace it);
//! - `fd(NAME)`: NAME when it is not negative, else -1; `errno(NAME)`: -NAME when NAME is
//!   negative, else 0 (a syscall's return value split as opensnoop shows it);
//! - `comm_of(NAME)`: the command name of a program run from path NAME (its basename, cut
//!   at 15 bytes, as the kernel names it);
//! - `ms(NAME)`: NAME, nanoseconds, as milliseconds with 3 decimals (biosnoop's `LAT(ms)`);
//! - `lit(TEXT)`: TEXT itself (dcsnoop's `T`, always `M`), a number in JSON when it is one
//!   (fsslower's `BYTES` of an open, 0);
//! - `sec(NAME)`: NAME, nanoseconds, as seconds with 2 decimals (filelife's `AGE(s)`);
//! - `kb(NAME)`: NAME, bytes, in whole KiB, rounded down (fsslower's `OFF_KB`);
//! - `age(NAME)`: seconds from NAME, a `CLOCK_MONOTONIC` time in ns (`task->start_time`),
//!   to the event, with 2 decimals (exitsnoop's `AGE(s)`);
//! - `exit(NAME)`: a task's `exit_code` as libbpf-tools' exitsnoop shows it: `0`, `code N`
//!   (the status given to `exit`), or `signal N (NAME)` with `, core dumped`;
//! - `symbol(NAME)`: the name the tracepoint's own print format gives the value
//!   (`__print_symbolic`: `skb:kfree_skb`'s `reason` 3 is `NO_SOCKET`), else the number
//!   ([`crate::jobs::symbolic`]);
//! - `capability(NAME)`: a capability number by its name (`CAP_CHOWN` for 0), capable's `NAME`;
//! - `signal(NAME)`: a signal number by its name (`SIGKILL` for 9), sigsnoop's `--signal-name`;
//! - `disk(NAME)`: a kernel `dev_t` (major << 20 | minor, as `block_device->bd_dev`) by its
//!   disk's name under /sys/dev/block (`md0`), mdflush's `DEVICE`;
//! - `full_path(DIR, PATH)`: PATH made absolute when relative: joined to DIR, a `dir(FD)`
//!   (the directory at descriptor FD as the kernel's dentries name it), or when DIR is a
//!   descriptor, to `/proc/PID/fd/DIR` or `/proc/PID/cwd` (`AT_FDCWD`) as read at print time;
//! - `NAME[A..B]`: the strings `NAME[A]` to `NAME[B-1]` joined by spaces, up to the first
//!   empty one (execsnoop's `argv[0..4]`).

use crate::{
    cpu_sampler::comm_string,
    engine::{
        compile::{Printed, body::dir_of},
        request::Request,
    },
    jobs::tools::{Column, EventTime, EventsJob},
    jobs::trace::TraceEvent,
};

/// The probe groups of `job` that run, its own first ([`EventsJob::parts`]): each request
/// with its columns. An optional group ([`crate::jobs::tools::EventsPart::optional`]) that
/// `compiles` refuses (the kernel lacks its tracepoint, or a type its fields read) is left
/// out, with the line `-v` prints for it (`tracekit: io_uring accepts left out
/// (io_uring:io_uring_complete): WHY`).
pub fn groups(
    job: &EventsJob,
    compiles: impl Fn(&Request) -> crate::Result<()>,
) -> (Vec<(&Request, &[Column])>, Vec<String>) {
    let mut groups = vec![(&job.request, job.columns.as_slice())];
    let mut left_out = Vec::new();
    for part in &job.parts {
        if let Some(what) = part.optional
            && let Err(err) = compiles(&part.request)
        {
            left_out.push(format!(
                "tracekit: {what} left out ({}): {err}",
                part.request.probes.join(", ")
            ));
            continue;
        }
        groups.push((&part.request, part.columns.as_slice()));
    }
    (groups, left_out)
}

/// Why the kernel cannot walk a directory's dentries here (`dir(FD)`, the kernel's
/// `operand::DIR_PATH`): no BTF, or a member its BTF lacks; `None` when it can.
pub fn no_dentry_walk() -> Option<String> {
    match crate::probe::btf_path::kernel_btf() {
        None => Some(crate::probe::fields::NO_BTF.into()),
        Some(btf) => crate::probe::btf_path::dentry_walk(btf).err(),
    }
}

/// The lines `-v` prints for `columns`: how a `full_path` column finds directories.
pub fn notes(columns: &[Column]) -> Vec<String> {
    columns
        .iter()
        .filter_map(|column| match View::of(column.field) {
            View::FullPath(dir, _) if dir_of(&dir).is_some() => Some(
                "tracekit: full paths: relative ones joined to their directory as the \
                 kernel's dentries name it"
                    .to_string(),
            ),
            View::FullPath(..) => Some(format!(
                "tracekit: full paths: relative ones joined to their directory as /proc/PID \
                 shows it when the line is printed (wrong once the process is gone or moved): \
                 the kernel cannot walk dentries here: {}",
                no_dentry_walk().unwrap_or_else(|| "the tool asked for /proc".into())
            )),
            _ => None,
        })
        .collect()
}

/// What a column shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum View {
    /// The record's pid, tid, cpu, comm or event.
    Record(&'static str),
    /// The parent process, looked up at print time.
    Ppid,
    /// A printed field as it is.
    Field(String),
    /// A return value as a file descriptor (-1 on failure).
    Fd(String),
    /// A return value as an errno (0 on success).
    Errno(String),
    /// Strings joined by spaces up to the first empty one.
    Join(Vec<String>),
    /// The command name the kernel gives a program run from a path: its basename, cut at
    /// 15 bytes.
    CommOf(String),
    /// Seconds from a monotonic time in ns to the event.
    Age(String),
    /// Nanoseconds as milliseconds.
    Ms(String),
    /// Bytes as whole KiB.
    Kb(String),
    /// Nanoseconds as seconds.
    Sec(String),
    /// The text itself.
    Lit(String),
    /// A task's `exit_code` (status << 8, or the signal with 0x80 for a core dump).
    ExitCode(String),
    /// A value by the name its tracepoint's print format gives it.
    Symbol(String),
    /// A capability number by its name (`CAP_CHOWN`).
    Capability(String),
    /// A signal number by its name (`SIGKILL`).
    Signal(String),
    /// An address family as the IP version: 4 (`AF_INET`, 2), 6 (`AF_INET6`, 10).
    IpVersion(String),
    /// A kernel `dev_t` by its disk's name.
    Disk(String),
    /// A path (the second name) made absolute: relative to the directory the first name
    /// is, `dir(FD)` (the kernel's), or is at as a descriptor (read from /proc at print time;
    /// the cwd for `AT_FDCWD`).
    FullPath(String, String),
}

/// A view written as a call, `NAME(inner)`: what it makes of `inner`.
type CallView = fn(String) -> View;

impl View {
    /// The view of a column's field.
    pub fn of(field: &str) -> View {
        if let Some(record) = ["pid", "tid", "cpu", "comm", "event", "syscall", "fsop"]
            .into_iter()
            .find(|&name| name == field)
        {
            return View::Record(record);
        }
        if field == "ppid" {
            return View::Ppid;
        }
        let call = |name: &str| {
            field
                .strip_prefix(name)
                .and_then(|rest| rest.strip_prefix('('))
                .and_then(|rest| rest.strip_suffix(')'))
                .map(str::to_string)
        };
        let calls: [(&str, CallView); 16] = [
            ("full_path", |inner| {
                let (dfd, path) = inner.split_once(',').unwrap_or(("", &inner));
                View::FullPath(dfd.trim().to_string(), path.trim().to_string())
            }),
            ("fd", View::Fd),
            ("errno", View::Errno),
            ("field", View::Field),
            ("comm_of", View::CommOf),
            ("age", View::Age),
            ("ms", View::Ms),
            ("kb", View::Kb),
            ("sec", View::Sec),
            ("lit", View::Lit),
            ("exit", View::ExitCode),
            ("symbol", View::Symbol),
            ("capability", View::Capability),
            ("signal", View::Signal),
            ("ipver", View::IpVersion),
            ("disk", View::Disk),
        ];
        for (name, view) in calls {
            if let Some(inner) = call(name) {
                return view(inner);
            }
        }
        if let Some((base, range)) = field.split_once('[')
            && let Some((from, to)) = range.strip_suffix(']').and_then(|r| r.split_once(".."))
            && let (Ok(from), Ok(to)) = (from.parse::<u32>(), to.parse::<u32>())
        {
            return View::Join((from..to).map(|i| format!("{base}[{i}]")).collect());
        }
        View::Field(field.to_string())
    }

    /// The names the request prints for it.
    pub fn prints(&self) -> Vec<String> {
        match self {
            View::Record(_) | View::Ppid | View::Lit(_) => Vec::new(),
            View::Field(name)
            | View::Fd(name)
            | View::Errno(name)
            | View::CommOf(name)
            | View::Age(name)
            | View::Ms(name)
            | View::Kb(name)
            | View::Sec(name)
            | View::ExitCode(name)
            | View::Symbol(name)
            | View::Capability(name)
            | View::Signal(name)
            | View::IpVersion(name)
            | View::Disk(name) => vec![name.clone()],
            View::Join(names) => names.clone(),
            View::FullPath(dfd, path) => vec![dfd.clone(), path.clone()],
        }
    }
}

/// The names a request prints for `columns`, each once, in order.
pub fn prints_of(columns: &[Column]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for column in columns {
        for name in View::of(column.field).prints() {
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

/// A printed value: a string or an integer.
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Text(String),
    Int(i64),
    Uint(u64),
    /// A number shown with 2 decimals (a JSON number).
    Fixed2(f64),
    /// A number shown with 3 decimals (a JSON number).
    Fixed3(f64),
}

impl Value {
    fn text(&self) -> String {
        match self {
            Value::Text(text) => text.clone(),
            Value::Int(n) => n.to_string(),
            Value::Uint(n) => n.to_string(),
            Value::Fixed2(x) => format!("{x:.2}"),
            Value::Fixed3(x) => format!("{x:.3}"),
        }
    }
    fn json(&self) -> serde_json::Value {
        match self {
            Value::Text(text) => text.clone().into(),
            Value::Int(n) => (*n).into(),
            Value::Uint(n) => (*n).into(),
            Value::Fixed2(x) => ((x * 100.0).round() / 100.0).into(),
            Value::Fixed3(x) => ((x * 1000.0).round() / 1000.0).into(),
        }
    }
}

fn printed_value(record: &TraceEvent<'_>, prints: &[Printed], name: &str) -> Value {
    let Some(printed) = prints.iter().find(|p| p.name == name) else {
        return Value::Text("?".into());
    };
    // Disks by name and pointers in hex, as group keys show them; the rest as `trace`
    // shows it: the record's own pid/tid/comm, addresses and TCP states by their hints,
    // strings, integers.
    if printed.operand != tracekit_common::engine::NO_OPERAND {
        let raw = record.ints[printed.operand as usize % record.ints.len()];
        match printed.hint {
            crate::probe::fields::Hint::Disk => {
                return Value::Text(crate::engine::keys::disk_name(raw));
            }
            crate::probe::fields::Hint::Address => return Value::Text(format!("{raw:#x}")),
            _ => {}
        }
    }
    match super::trace::field_text(record, printed).1 {
        serde_json::Value::String(text) => Value::Text(text),
        serde_json::Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(n), _) => Value::Uint(n),
            (None, Some(n)) => Value::Int(n),
            _ => Value::Text(n.to_string()),
        },
        other => Value::Text(other.to_string()),
    }
}

fn as_int(value: &Value) -> i64 {
    match value {
        Value::Int(n) => *n,
        Value::Uint(n) => *n as i64,
        Value::Fixed2(x) | Value::Fixed3(x) => *x as i64,
        Value::Text(_) => 0,
    }
}

/// libbpf-tools exitsnoop's `EXIT_CODE` of a task's `exit_code`.
fn exit_text(exit_code: i64) -> String {
    let (status, signal) = ((exit_code >> 8) & 0xff, exit_code & 0xff);
    if signal == 0 {
        return if status == 0 {
            "0".into()
        } else {
            format!("code {status}")
        };
    }
    let number = (signal & 0x7f) as i32;
    let mut text = String::new();
    if number != 0 {
        text = format!("signal {number} ({})", signal_name(number));
    }
    if signal & 0x80 != 0 {
        text.push_str(if text.is_empty() {
            "core dumped"
        } else {
            ", core dumped"
        });
    }
    text
}

/// `SIGKILL` for 9 (Linux x86-64 numbers; `SIGRTMIN+N` above 33).
pub fn signal_name(number: i32) -> String {
    const NAMES: [&str; 32] = [
        "0",
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    match usize::try_from(number) {
        Ok(n) if n < NAMES.len() => NAMES[n].to_string(),
        _ if number >= 34 => format!("SIGRTMIN+{}", number - 34),
        _ => format!("signal {number}"),
    }
}

/// The parent of `pid`, from `/proc/PID/status`.
fn ppid_of(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("PPid:"))
        .and_then(|v| v.trim().parse().ok())
}

fn value(record: &TraceEvent<'_>, prints: &[Printed], event: &str, view: &View) -> Value {
    match view {
        View::Record("event") => Value::Text(event.to_string()),
        View::Record("syscall") => Value::Text(
            event
                .strip_prefix("syscalls:sys_enter_")
                .or_else(|| event.strip_prefix("syscalls:sys_exit_"))
                .unwrap_or(event)
                .to_string(),
        ),
        View::Record("fsop") => Value::Text(super::tools::fsdist::operation_letter(event).into()),
        View::Record("pid") => Value::Uint(record.pid.into()),
        View::Record("tid") => Value::Uint(record.tid.into()),
        View::Record("cpu") => Value::Uint(record.cpu.into()),
        View::Record(_) => Value::Text(comm_string(&record.comm)),
        View::Ppid => match ppid_of(record.pid) {
            Some(ppid) => Value::Uint(ppid.into()),
            None => Value::Text("?".into()),
        },
        View::Field(name) => printed_value(record, prints, name),
        View::Fd(name) => Value::Int(as_int(&printed_value(record, prints, name)).max(-1)),
        View::Errno(name) => {
            let ret = as_int(&printed_value(record, prints, name));
            Value::Int(if ret < 0 { -ret } else { 0 })
        }
        View::CommOf(name) => {
            let path = printed_value(record, prints, name).text();
            let base = path.rsplit('/').next().unwrap_or_default();
            let mut end = base.len().min(15);
            while !base.is_char_boundary(end) {
                end -= 1;
            }
            Value::Text(base[..end].to_string())
        }
        View::Age(name) => {
            let since = as_int(&printed_value(record, prints, name)) as u64;
            Value::Fixed2(record.ts_ns.saturating_sub(since) as f64 / 1e9)
        }
        View::Ms(name) => Value::Fixed3(as_int(&printed_value(record, prints, name)) as f64 / 1e6),
        View::Lit(text) => match text.parse::<i64>() {
            Ok(n) => Value::Int(n),
            Err(_) => Value::Text(text.clone()),
        },
        View::Sec(name) => Value::Fixed2(as_int(&printed_value(record, prints, name)) as f64 / 1e9),
        View::Kb(name) => Value::Int(as_int(&printed_value(record, prints, name)) / 1024),
        View::ExitCode(name) => {
            Value::Text(exit_text(as_int(&printed_value(record, prints, name))))
        }
        View::Symbol(name) => {
            let number = as_int(&printed_value(record, prints, name));
            match super::symbolic::name(event, name, number) {
                Some(symbol) => Value::Text(symbol),
                None => Value::Text(number.to_string()),
            }
        }
        View::Capability(name) => Value::Text(super::tools::capable::capability_name(as_int(
            &printed_value(record, prints, name),
        ))),
        View::Disk(name) => Value::Text(crate::engine::keys::disk_name(as_int(&printed_value(
            record, prints, name,
        )) as u64)),
        View::Signal(name) => Value::Text(signal_name(
            as_int(&printed_value(record, prints, name)) as i32,
        )),
        View::IpVersion(name) => match as_int(&printed_value(record, prints, name)) {
            2 => Value::Uint(4),
            10 => Value::Uint(6),
            other => Value::Int(other),
        },
        View::FullPath(dir, path) => {
            let path = printed_value(record, prints, path).text();
            if dir_of(dir).is_some() {
                let dir = printed_value(record, prints, dir).text();
                return Value::Text(joined(&dir, path));
            }
            let dfd = as_int(&printed_value(record, prints, dir));
            Value::Text(full_path(record.pid, dfd, path))
        }
        View::Join(names) => {
            let mut parts = Vec::new();
            for name in names {
                match printed_value(record, prints, name) {
                    Value::Text(text) if text.is_empty() => break,
                    other => parts.push(other.text()),
                }
            }
            Value::Text(parts.join(" "))
        }
    }
}

/// `path` as an absolute path: a relative one joined to `dir`, the kernel's path of its
/// directory (`dir(FD)`); as it is when it is absolute, cut, unreadable, or the directory
/// was unreadable (a descriptor closed meanwhile).
fn joined(dir: &str, path: String) -> String {
    let unreadable = super::trace::UNREADABLE;
    if path.starts_with('/') || path.is_empty() || path == unreadable || dir == unreadable {
        return path;
    }
    let path = path.strip_prefix("./").unwrap_or(&path);
    format!("{}/{path}", dir.trim_end_matches('/'))
}

/// `path` as an absolute path: a relative one joined to the directory of process `pid` at
/// descriptor `dfd` (`AT_FDCWD`, -100: its cwd), read from `/proc/PID/fd/DFD` or
/// `/proc/PID/cwd` when the line is made; as it is when it is absolute, cut, unreadable, or
/// the process is gone (or changed directory since).
fn full_path(pid: u32, dfd: i64, path: String) -> String {
    if path.starts_with('/') || path.is_empty() || path == super::trace::UNREADABLE {
        return path;
    }
    let dir = if dfd == i64::from(libc::AT_FDCWD) {
        format!("/proc/{pid}/cwd")
    } else {
        format!("/proc/{pid}/fd/{dfd}")
    };
    match std::fs::read_link(dir) {
        Ok(dir) => {
            let dir = dir.to_string_lossy();
            let path = path.strip_prefix("./").unwrap_or(&path);
            format!("{}/{path}", dir.trim_end_matches('/'))
        }
        Err(_) => path,
    }
}

/// Width of a column, and whether it is right-aligned: libbpf-tools' layout for the usual
/// headers (`%-16s` names, `%-7d` pids, `%3d` fds and errnos), else the header's width.
fn width(header: &str) -> (usize, bool) {
    match header {
        "PCOMM" | "COMM" => (16, false),
        "PID" | "PPID" | "TID" | "TPID" | "AGE(s)" => (7, false),
        "FD" | "RET" | "ERR" | "SIG" => (3, true),
        "SYSCALL" => (9, false),
        // libbpf-tools' tcpconnect, tcpaccept, tcplife: `%-16s` addresses (an IPv6 one is
        // wider, as there), `%-5d` ports.
        "SADDR" | "DADDR" | "RADDR" | "LADDR" | "ADDR" => (16, false),
        "SPORT" | "DPORT" | "RPORT" | "LPORT" | "PORT" => (5, false),
        // libbpf-tools' biosnoop: `%-7s %-1s %-10s %-7s` (our T is the whole rwbs, `WS`).
        "DISK" | "BYTES" => (7, false),
        "T" => (3, false),
        "SECTOR" => (10, false),
        _ => (header.len(), false),
    }
}

fn cell(text: &str, header: &str) -> String {
    match width(header) {
        (w, true) => format!("{text:>w$}"),
        (w, false) => format!("{text:<w$}"),
    }
}

/// A header as a JSON key: lower case, other characters than letters and digits as `_`
/// (`ANON(kB)` is `anon_kb`).
pub fn json_key(header: &str) -> String {
    let mut key = String::new();
    for c in header.chars() {
        if c.is_ascii_alphanumeric() {
            key.push(c.to_ascii_lowercase());
        } else if !key.is_empty() && !key.ends_with('_') {
            key.push('_');
        }
    }
    key.trim_end_matches('_').to_string()
}

/// The header line.
pub fn header(columns: &[Column], time: EventTime) -> String {
    let mut cells: Vec<String> = Vec::new();
    match time {
        EventTime::None => {}
        EventTime::Relative => cells.push(format!("{:<9}", "TIME(s)")),
        EventTime::Clock => cells.push(format!("{:<8}", "TIME")),
    }
    let last = columns.len().saturating_sub(1);
    for (i, column) in columns.iter().enumerate() {
        cells.push(if i == last {
            column.header.to_string()
        } else {
            cell(column.header, column.header)
        });
    }
    format!("{}\n", cells.join(" ").trim_end())
}

fn values(
    record: &TraceEvent<'_>,
    prints: &[Printed],
    event: &str,
    columns: &[Column],
) -> Vec<Value> {
    columns
        .iter()
        .map(|c| value(record, prints, event, &View::of(c.field)))
        .collect()
}

/// One event's JSON object, as [`line`] prints it with `--json` (a caller may add keys, as
/// `trace` adds the event's stacks).
pub fn object(
    record: &TraceEvent<'_>,
    prints: &[Printed],
    event: &str,
    columns: &[Column],
    time: EventTime,
    since_start_s: f64,
    clock: &str,
) -> serde_json::Map<String, serde_json::Value> {
    let mut object = serde_json::Map::new();
    match time {
        EventTime::None => {}
        EventTime::Relative => {
            object.insert("time_s".into(), since_start_s.into());
        }
        EventTime::Clock => {
            object.insert("time".into(), clock.into());
        }
    }
    for (column, value) in columns.iter().zip(values(record, prints, event, columns)) {
        object.insert(json_key(column.header), value.json());
    }
    object
}

/// One event's line (or JSON object with the headers as keys, [`json_key`]; `time_s` or
/// `time` first with `-t`/`-T`). `event`: the probe that fired; `since_start_s`: seconds
/// since tracing began; `clock`: the wall clock's `HH:MM:SS`.
#[allow(clippy::too_many_arguments)]
pub fn line(
    record: &TraceEvent<'_>,
    prints: &[Printed],
    event: &str,
    columns: &[Column],
    time: EventTime,
    since_start_s: f64,
    clock: &str,
    json: bool,
) -> String {
    if json {
        let object = object(record, prints, event, columns, time, since_start_s, clock);
        return format!("{}\n", serde_json::Value::Object(object));
    }
    let values = values(record, prints, event, columns);
    let mut cells: Vec<String> = Vec::new();
    match time {
        EventTime::None => {}
        EventTime::Relative => cells.push(format!("{since_start_s:<9.3}")),
        EventTime::Clock => cells.push(format!("{clock:<8}")),
    }
    let last = columns.len().saturating_sub(1);
    for (i, (column, value)) in columns.iter().zip(&values).enumerate() {
        let text = value.text();
        cells.push(if i == last {
            text
        } else {
            cell(&text, column.header)
        });
    }
    format!("{}\n", cells.join(" ").trim_end())
}

/// The wall clock at `unix_s` (seconds since the epoch) as `HH:MM:SS`, local time, as bcc
/// prints it.
pub fn clock_at(unix_s: i64) -> String {
    // SAFETY: localtime_r with valid pointers.
    unsafe {
        // time_t unnamed: musl deprecates the alias (it turns 64-bit there).
        let at = unix_s as _;
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&at, &mut tm);
        format!("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec)
    }
}

/// The wall clock second (since the epoch) of an event stamped `ts_ns` by
/// `bpf_ktime_get_ns` (CLOCK_MONOTONIC), given both clocks read together once: the time
/// the event happened, not when its line was made (lines of several rings wait to be put in
/// order; libbpf-tools stamps a line when it reads it).
pub fn wall_s(ts_ns: u64, (monotonic_ns, realtime_ns): (u64, u64)) -> i64 {
    let wall_ns = realtime_ns as i128 + ts_ns as i128 - monotonic_ns as i128;
    wall_ns.div_euclid(1_000_000_000) as i64
}

/// CLOCK_MONOTONIC and CLOCK_REALTIME now, in ns, for [`wall_s`].
pub fn clocks_now() -> (u64, u64) {
    let read = |clock| {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime(2) with a live out-pointer.
        unsafe { libc::clock_gettime(clock, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    };
    (read(libc::CLOCK_MONOTONIC), read(libc::CLOCK_REALTIME))
}

#[cfg(test)]
mod tests;
