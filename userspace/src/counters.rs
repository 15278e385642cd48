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
pub enum Kind {
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
    pub kind: Kind,
    /// `perf_event_attr.config`.
    pub config: u64,
}

/// Hardware events by perf's names (`include/uapi/linux/perf_event.h`).
pub const HARDWARE: &[(&str, u64)] = &[
    ("cycles", b::PERF_COUNT_HW_CPU_CYCLES as u64),
    ("instructions", b::PERF_COUNT_HW_INSTRUCTIONS as u64),
    ("cache-references", b::PERF_COUNT_HW_CACHE_REFERENCES as u64),
    ("cache-misses", b::PERF_COUNT_HW_CACHE_MISSES as u64),
    ("branches", b::PERF_COUNT_HW_BRANCH_INSTRUCTIONS as u64),
    ("branch-misses", b::PERF_COUNT_HW_BRANCH_MISSES as u64),
    ("bus-cycles", b::PERF_COUNT_HW_BUS_CYCLES as u64),
    (
        "stalled-cycles-frontend",
        b::PERF_COUNT_HW_STALLED_CYCLES_FRONTEND as u64,
    ),
    (
        "stalled-cycles-backend",
        b::PERF_COUNT_HW_STALLED_CYCLES_BACKEND as u64,
    ),
    ("ref-cycles", b::PERF_COUNT_HW_REF_CPU_CYCLES as u64),
];

/// Aliases perf accepts.
const HARDWARE_ALIASES: &[(&str, &str)] = &[
    ("cpu-cycles", "cycles"),
    ("branch-instructions", "branches"),
    ("idle-cycles-frontend", "stalled-cycles-frontend"),
    ("idle-cycles-backend", "stalled-cycles-backend"),
];

/// Software events by perf's names.
pub const SOFTWARE: &[(&str, u64)] = &[
    ("cpu-clock", b::PERF_COUNT_SW_CPU_CLOCK as u64),
    ("task-clock", b::PERF_COUNT_SW_TASK_CLOCK as u64),
    ("page-faults", b::PERF_COUNT_SW_PAGE_FAULTS as u64),
    ("context-switches", b::PERF_COUNT_SW_CONTEXT_SWITCHES as u64),
    ("cpu-migrations", b::PERF_COUNT_SW_CPU_MIGRATIONS as u64),
    ("minor-faults", b::PERF_COUNT_SW_PAGE_FAULTS_MIN as u64),
    ("major-faults", b::PERF_COUNT_SW_PAGE_FAULTS_MAJ as u64),
    ("alignment-faults", b::PERF_COUNT_SW_ALIGNMENT_FAULTS as u64),
    ("emulation-faults", b::PERF_COUNT_SW_EMULATION_FAULTS as u64),
];

const SOFTWARE_ALIASES: &[(&str, &str)] = &[
    ("faults", "page-faults"),
    ("cs", "context-switches"),
    ("migrations", "cpu-migrations"),
];

/// The hardware or software event perf calls `name`, if any.
pub fn named_event(name: &str) -> Option<Event> {
    fn canonical<'a>(name: &'a str, aliases: &[(&'static str, &'static str)]) -> &'a str {
        aliases
            .iter()
            .find(|(alias, _)| *alias == name)
            .map_or(name, |(_, real)| *real)
    }
    let hw = canonical(name, HARDWARE_ALIASES);
    if let Some((n, config)) = HARDWARE.iter().find(|(n, _)| *n == hw) {
        return Some(Event {
            name: n.to_string(),
            kind: Kind::Hardware,
            config: *config,
        });
    }
    let sw = canonical(name, SOFTWARE_ALIASES);
    SOFTWARE
        .iter()
        .find(|(n, _)| *n == sw)
        .map(|(n, config)| Event {
            name: n.to_string(),
            kind: Kind::Software,
            config: *config,
        })
}

/// Every hardware, software and alias name (for suggestions).
pub fn event_names() -> Vec<String> {
    HARDWARE
        .iter()
        .chain(SOFTWARE)
        .map(|(n, _)| n.to_string())
        .chain(
            HARDWARE_ALIASES
                .iter()
                .chain(SOFTWARE_ALIASES)
                .map(|(a, _)| a.to_string()),
        )
        .collect()
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
            Kind::Hardware => b::PERF_TYPE_HARDWARE,
            Kind::Software => b::PERF_TYPE_SOFTWARE,
            Kind::Tracepoint => b::PERF_TYPE_TRACEPOINT,
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
        kind: Kind::Hardware,
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
        assert_eq!(named_event("cycles").unwrap().kind, Kind::Hardware);
        assert_eq!(named_event("cpu-cycles").unwrap().name, "cycles");
        assert_eq!(named_event("cs").unwrap().name, "context-switches");
        assert_eq!(
            named_event("task-clock").unwrap().config,
            u64::from(b::PERF_COUNT_SW_TASK_CLOCK)
        );
        assert!(named_event("cyclez").is_none());
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
