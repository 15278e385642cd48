//! Counting events with `perf_event_open(2)` (through perf-event-open-sys): software and
//! hardware events by perf's names, and tracepoints, for `tracekit stat` and `tracekit list`.
//!
//! A counter is one file descriptor per thread (`-p`), per CPU (`-a`), or one inherited
//! descriptor for a command (`-- CMD`, enabled at its `exec`). Values are scaled by
//! enabled/running time when the kernel multiplexed them, as perf does.

use std::{
    io,
    os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd},
};

use perf_event_open_sys::{self as sys, bindings as b};

use crate::{Error, Result};

/// The kind of a countable event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterKind {
    /// `PERF_TYPE_HARDWARE`.
    Hardware,
    /// `PERF_TYPE_SOFTWARE`.
    Software,
    /// `PERF_TYPE_TRACEPOINT` (config is the tracepoint id).
    Tracepoint,
}

/// An event to count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Its name as perf prints it (`cycles`, `page-faults`, `syscalls:sys_enter_read`).
    pub name: String,
    pub kind: CounterKind,
    /// `perf_event_attr.config`.
    pub config: u64,
}

/// A hardware or software event as perf names it: one row of [`HARDWARE`] or [`SOFTWARE`],
/// the tables `stat -e`, `list`, the `software:` probe kind and `stat`'s defaults read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerfName {
    /// perf's name (`context-switches`).
    pub name: &'static str,
    /// `perf_event_attr.config`: `PERF_COUNT_HW_*` or `PERF_COUNT_SW_*`.
    pub config: u64,
    /// perf's other names for it (`cs`).
    pub aliases: &'static [&'static str],
    /// Its place in what `stat` counts without `-e` (perf stat's order, 0 first); `None`:
    /// not counted by default.
    pub stat_default: Option<u8>,
}

const fn row(
    name: &'static str,
    config: u32,
    aliases: &'static [&'static str],
    stat_default: Option<u8>,
) -> PerfName {
    PerfName {
        name,
        config: config as u64,
        aliases,
        stat_default,
    }
}

/// Hardware events by perf's names (`include/uapi/linux/perf_event.h`).
pub const HARDWARE: &[PerfName] = &[
    row(
        "cycles",
        b::PERF_COUNT_HW_CPU_CYCLES,
        &["cpu-cycles"],
        Some(4),
    ),
    row("instructions", b::PERF_COUNT_HW_INSTRUCTIONS, &[], Some(5)),
    row(
        "cache-references",
        b::PERF_COUNT_HW_CACHE_REFERENCES,
        &[],
        None,
    ),
    row("cache-misses", b::PERF_COUNT_HW_CACHE_MISSES, &[], None),
    row(
        "branches",
        b::PERF_COUNT_HW_BRANCH_INSTRUCTIONS,
        &["branch-instructions"],
        Some(6),
    ),
    row(
        "branch-misses",
        b::PERF_COUNT_HW_BRANCH_MISSES,
        &[],
        Some(7),
    ),
    row("bus-cycles", b::PERF_COUNT_HW_BUS_CYCLES, &[], None),
    row(
        "stalled-cycles-frontend",
        b::PERF_COUNT_HW_STALLED_CYCLES_FRONTEND,
        &["idle-cycles-frontend"],
        None,
    ),
    row(
        "stalled-cycles-backend",
        b::PERF_COUNT_HW_STALLED_CYCLES_BACKEND,
        &["idle-cycles-backend"],
        None,
    ),
    row("ref-cycles", b::PERF_COUNT_HW_REF_CPU_CYCLES, &[], None),
];

/// Software events by perf's names (`include/uapi/linux/perf_event.h`).
pub const SOFTWARE: &[PerfName] = &[
    row("cpu-clock", b::PERF_COUNT_SW_CPU_CLOCK, &[], None),
    row("task-clock", b::PERF_COUNT_SW_TASK_CLOCK, &[], Some(0)),
    row(
        "page-faults",
        b::PERF_COUNT_SW_PAGE_FAULTS,
        &["faults"],
        Some(3),
    ),
    row(
        "context-switches",
        b::PERF_COUNT_SW_CONTEXT_SWITCHES,
        &["cs"],
        Some(1),
    ),
    row(
        "cpu-migrations",
        b::PERF_COUNT_SW_CPU_MIGRATIONS,
        &["migrations"],
        Some(2),
    ),
    row("minor-faults", b::PERF_COUNT_SW_PAGE_FAULTS_MIN, &[], None),
    row("major-faults", b::PERF_COUNT_SW_PAGE_FAULTS_MAJ, &[], None),
    row(
        "alignment-faults",
        b::PERF_COUNT_SW_ALIGNMENT_FAULTS,
        &[],
        None,
    ),
    row(
        "emulation-faults",
        b::PERF_COUNT_SW_EMULATION_FAULTS,
        &[],
        None,
    ),
];

/// The row of `table` whose name or alias is `name`.
fn find(table: &'static [PerfName], name: &str) -> Option<&'static PerfName> {
    table
        .iter()
        .find(|row| row.name == name || row.aliases.contains(&name))
}

/// The hardware or software event perf calls `name` (or an alias of it), if any.
pub fn named_event(name: &str) -> Option<Event> {
    let event = |row: &PerfName, kind| Event {
        name: row.name.to_string(),
        kind,
        config: row.config,
    };
    find(HARDWARE, name)
        .map(|row| event(row, CounterKind::Hardware))
        .or_else(|| find(SOFTWARE, name).map(|row| event(row, CounterKind::Software)))
}

/// Every hardware, software and alias name (for suggestions): the names, then the aliases.
pub fn event_names() -> Vec<String> {
    let rows = || HARDWARE.iter().chain(SOFTWARE);
    rows()
        .map(|row| row.name)
        .chain(rows().flat_map(|row| row.aliases.iter().copied()))
        .map(str::to_string)
        .collect()
}

/// The software event names a probe takes (`software:NAME`), each followed by its aliases:
/// `cpu-clock, task-clock, page-faults, faults, ...`.
pub fn software_names() -> Vec<&'static str> {
    SOFTWARE
        .iter()
        .flat_map(|row| std::iter::once(row.name).chain(row.aliases.iter().copied()))
        .collect()
}

/// What `stat` counts without `-e`, in perf stat's order (`task-clock`, `context-switches`,
/// `cpu-migrations`, `page-faults`, `cycles`, ...): the rows with a [`PerfName::stat_default`].
pub fn stat_defaults() -> Vec<&'static str> {
    let mut rows: Vec<&PerfName> = HARDWARE
        .iter()
        .chain(SOFTWARE)
        .filter(|row| row.stat_default.is_some())
        .collect();
    rows.sort_by_key(|row| row.stat_default);
    rows.into_iter().map(|row| row.name).collect()
}

/// Where to count.
#[derive(Clone, Debug)]
pub enum Scope {
    /// Every CPU, every process.
    AllCpus(Vec<u32>),
    /// These threads (all threads of the `-p` processes), and the threads they start.
    Threads(Vec<u32>),
    /// A command held before exec: counting starts at its exec and follows its children.
    Command(u32),
}

/// Why a counter could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// The kernel or the hardware does not have this event (perf's `<not supported>`).
    NotSupported,
    /// Any other failure.
    Other(io::Error),
}

/// An open counter: one descriptor per thread or CPU.
#[derive(Debug)]
pub struct Counter {
    pub event: Event,
    fds: Vec<OwnedFd>,
}

/// A counter's value, scaled for multiplexing.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Reading {
    /// The count (scaled when the counter did not run all the time it was enabled).
    pub value: u64,
    /// Nanoseconds enabled and running, summed over descriptors.
    pub enabled_ns: u64,
    pub running_ns: u64,
}

fn attr(event: &Event, command: bool) -> b::perf_event_attr {
    let mut attr = b::perf_event_attr {
        size: size_of::<b::perf_event_attr>() as u32,
        type_: match event.kind {
            CounterKind::Hardware => b::PERF_TYPE_HARDWARE,
            CounterKind::Software => b::PERF_TYPE_SOFTWARE,
            CounterKind::Tracepoint => b::PERF_TYPE_TRACEPOINT,
        },
        config: event.config,
        read_format: (b::PERF_FORMAT_TOTAL_TIME_ENABLED | b::PERF_FORMAT_TOTAL_TIME_RUNNING) as u64,
        ..Default::default()
    };
    if command {
        attr.set_disabled(1);
        attr.set_enable_on_exec(1);
        attr.set_inherit(1);
    }
    attr
}

fn open_one(
    attr: &mut b::perf_event_attr,
    pid: i32,
    cpu: i32,
) -> std::result::Result<OwnedFd, OpenError> {
    // SAFETY: a fully initialized perf_event_attr; the kernel checks everything else.
    let fd = unsafe { sys::perf_event_open(attr, pid, cpu, -1, b::PERF_FLAG_FD_CLOEXEC as _) };
    if fd < 0 {
        let err = io::Error::last_os_error();
        return Err(match err.raw_os_error() {
            Some(libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV | libc::EINVAL) => {
                OpenError::NotSupported
            }
            _ => OpenError::Other(err),
        });
    }
    // SAFETY: the kernel returned a new descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Counter {
    /// Opens `event` on `scope`.
    pub fn open(event: &Event, scope: &Scope) -> std::result::Result<Self, OpenError> {
        let mut fds = Vec::new();
        match scope {
            Scope::AllCpus(cpus) => {
                let mut attr = attr(event, false);
                attr.set_disabled(1);
                for &cpu in cpus {
                    fds.push(open_one(&mut attr, -1, cpu as i32)?);
                }
            }
            Scope::Threads(tids) => {
                let mut attr = attr(event, false);
                attr.set_inherit(1);
                attr.set_disabled(1);
                for &tid in tids {
                    match open_one(&mut attr, tid as i32, -1) {
                        Ok(fd) => fds.push(fd),
                        // A thread that exited in between counts nothing.
                        Err(OpenError::Other(err)) if err.raw_os_error() == Some(libc::ESRCH) => {}
                        Err(err) => return Err(err),
                    }
                }
            }
            Scope::Command(pid) => {
                let mut attr = attr(event, true);
                fds.push(open_one(&mut attr, *pid as i32, -1)?);
            }
        }
        Ok(Self {
            event: event.clone(),
            fds,
        })
    }

    /// Reads the counter, summed over its descriptors.
    pub fn read(&self) -> Result<Reading> {
        let mut total = Reading::default();
        let mut scaled = 0f64;
        for fd in &self.fds {
            let mut buf = [0u64; 3];
            // SAFETY: reading 24 bytes into a live buffer of that size.
            let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), 24) };
            if n != 24 {
                return Err(Error::runtime(format!(
                    "reading the {} counter: {}",
                    self.event.name,
                    io::Error::last_os_error()
                )));
            }
            let [value, enabled, running] = buf;
            total.enabled_ns += enabled;
            total.running_ns += running;
            scaled += if running > 0 && running < enabled {
                value as f64 * enabled as f64 / running as f64
            } else {
                value as f64
            };
        }
        total.value = scaled.round() as u64;
        Ok(total)
    }
}

/// Enables (or disables) every counter this process opened, in one system call
/// (`PR_TASK_PERF_EVENTS_ENABLE`), so that none counts tracekit's own setup or teardown.
/// Counters of a command are enabled at its exec instead.
pub fn enable_all(enable: bool) {
    let option = if enable {
        libc::PR_TASK_PERF_EVENTS_ENABLE
    } else {
        libc::PR_TASK_PERF_EVENTS_DISABLE
    };
    // SAFETY: prctl(2) with an option that takes no arguments.
    unsafe { libc::prctl(option, 0, 0, 0, 0) };
}

/// The threads of process `pid` (`/proc/PID/task`).
pub fn threads_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_else(|_| vec![pid])
}

/// Whether this machine can count hardware event `config` (for `list`): opens it on this
/// process and closes it.
pub fn hardware_supported(config: u64) -> bool {
    let event = Event {
        name: String::new(),
        kind: CounterKind::Hardware,
        config,
    };
    let mut attr = attr(&event, false);
    attr.set_disabled(1);
    attr.set_exclude_kernel(1);
    open_one(&mut attr, 0, -1).is_ok()
}

/// Raises the soft open-file limit to the hard one: counting hundreds of tracepoints on
/// every CPU takes a descriptor each.
pub fn raise_fd_limit() {
    // SAFETY: getrlimit/setrlimit with a live struct.
    unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases() {
        assert_eq!(named_event("cycles").unwrap().kind, CounterKind::Hardware);
        assert_eq!(named_event("cpu-cycles").unwrap().name, "cycles");
        assert_eq!(named_event("cs").unwrap().name, "context-switches");
        assert_eq!(
            named_event("task-clock").unwrap().config,
            u64::from(b::PERF_COUNT_SW_TASK_CLOCK)
        );
        assert!(named_event("cyclez").is_none());
        assert_eq!(
            named_event("migrations").unwrap(),
            Event {
                name: "cpu-migrations".into(),
                kind: CounterKind::Software,
                config: u64::from(b::PERF_COUNT_SW_CPU_MIGRATIONS),
            }
        );
    }

    /// The software probe kind's names, each followed by its aliases (its error lists them).
    #[test]
    fn software_names_with_their_aliases() {
        assert_eq!(
            software_names(),
            [
                "cpu-clock",
                "task-clock",
                "page-faults",
                "faults",
                "context-switches",
                "cs",
                "cpu-migrations",
                "migrations",
                "minor-faults",
                "major-faults",
                "alignment-faults",
                "emulation-faults",
            ]
        );
        let configs: Vec<u64> = SOFTWARE.iter().map(|row| row.config).collect();
        assert_eq!(configs, [0, 1, 2, 3, 4, 5, 6, 7, 8]);
    }

    /// `stat` without `-e` counts what perf stat does, in its order.
    #[test]
    fn stat_defaults_in_perf_order() {
        assert_eq!(
            stat_defaults(),
            [
                "task-clock",
                "context-switches",
                "cpu-migrations",
                "page-faults",
                "cycles",
                "instructions",
                "branches",
                "branch-misses",
            ]
        );
    }

    /// No name or alias is taken twice across both tables, and suggestions offer them all.
    #[test]
    fn every_name_is_taken_once() {
        let names = event_names();
        assert_eq!(names.len(), 10 + 9 + 4 + 3);
        let unique: std::collections::BTreeSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), names.len());
        for name in &names {
            assert!(named_event(name).is_some(), "{name}");
        }
    }

    #[test]
    fn counts_own_page_faults() {
        let event = named_event("page-faults").unwrap();
        // SAFETY: gettid(2).
        let tid = unsafe { libc::gettid() } as u32;
        let counter = Counter::open(&event, &Scope::Threads(vec![tid])).unwrap();
        enable_all(true);
        let memory = vec![1u8; 64 << 20];
        std::hint::black_box(&memory);
        let reading = counter.read().unwrap();
        assert!(reading.value >= 1000, "{reading:?}");
    }
}
