//! Kretprobes created through tracefs's `kprobe_events` with an explicit `maxactive`, as
//! `perf probe` and bcc can: the kprobe PMU (aya's `KProbe::attach`) lets the kernel pick
//! it, and without CONFIG_PREEMPTION (Debian's and Ubuntu's generic kernels) 5.10 picks
//! one instance per possible CPU. A return of a call entered while every instance is
//! taken is lost (the kretprobe's `nmissed`): on 2 CPUs, three tasks blocked in `read()`
//! made `kretprobe:vfs_read` count 0 of 200 reads.
//!
//! Each event is `rN:tracekit_PID/EVENT FUNCTION` in the group of this process, opened
//! as a tracepoint perf event on CPU 0 for every process (as aya opens kprobes) with the
//! loaded program set on it. [`KretprobeEvent`] removes it when dropped; groups left by
//! processes that died without removing theirs are removed at the first attach.

use std::{
    fs::OpenOptions,
    io::Write as _,
    os::fd::{AsRawFd as _, BorrowedFd, FromRawFd as _, OwnedFd},
    path::{Path, PathBuf},
};

/// The kernel's cap on a kretprobe's instances (`KRETPROBE_MAXACTIVE_MAX`).
const MAXACTIVE_MAX: usize = 4096;

/// Instances shared by one stage's kretprobes. An instance is a small allocation
/// (`struct kretprobe_instance`, 64-128 bytes with its rethook node), so 4096 for each of
/// up to 16 functions costs at most 4-8 MiB of kernel memory while attached.
const INSTANCES_PER_STAGE: usize = 16 * MAXACTIVE_MAX;

/// Prefix of this tool's groups in `kprobe_events`: `tracekit_PID`.
const GROUP_PREFIX: &str = "tracekit_";

/// How many calls of each of `functions` kretprobes track at once: 4096 (the kernel's cap)
/// for up to 16 functions, fewer for more (the stage's [`INSTANCES_PER_STAGE`] shared),
/// never fewer than the kernel's own choice with preemption (`max(10, 2 * CPUs)`).
pub(super) fn maxactive(functions: usize, cpus: usize) -> usize {
    let floor = (2 * cpus).max(10);
    (INSTANCES_PER_STAGE / functions.max(1))
        .min(MAXACTIVE_MAX)
        .max(floor)
        .min(MAXACTIVE_MAX)
}

/// This process's group (`tracekit_PID`).
fn group(pid: u32) -> String {
    format!("{GROUP_PREFIX}{pid}")
}

/// The event name of process `pid`'s `index`th kretprobe, on `function`:
/// `FUNCTION_PID_INDEX`, unique on the machine (`kprobe_profile` names events without their
/// group), with what the kernel refuses in a name (`.` of `foo.isra.0`) made `_`, and the
/// function cut to 32 bytes (names are at most 64).
fn event_name(function: &str, pid: u32, index: usize) -> String {
    let function: String = function
        .chars()
        .take(32)
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("{function}_{pid}_{index}")
}

/// The `kprobe_events` line creating a kretprobe: `rMAXACTIVE:GROUP/EVENT FUNCTION`.
fn create_line(maxactive: usize, group: &str, event: &str, function: &str) -> String {
    format!("r{maxactive}:{group}/{event} {function}")
}

/// The `kprobe_events` line removing an event: `-:GROUP/EVENT`.
fn remove_line(group: &str, event: &str) -> String {
    format!("-:{group}/{event}")
}

/// Each event's `(name, nmissed)` in a `kprobe_profile`: lines of `NAME NHIT NMISSED`
/// (for a kretprobe, nmissed counts the returns lost to taken instances as well as the
/// entries lost to recursion).
fn parse_profile(text: &str) -> Vec<(&str, u64)> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let name = words.next()?;
            let _hits = words.next()?;
            Some((name, words.next()?.parse().ok()?))
        })
        .collect()
}

/// The `(group, event)` of each line of `kprobe_events` (`r4096:GROUP/EVENT FUNCTION`,
/// `p:GROUP/EVENT FUNCTION`).
fn parse_events(text: &str) -> Vec<(&str, &str)> {
    text.lines()
        .filter_map(|line| {
            let (_, name) = line.split_whitespace().next()?.split_once(':')?;
            name.split_once('/')
        })
        .collect()
}

/// A kretprobe event with the engine's program attached; dropping it detaches the program
/// and removes the event.
#[derive(Debug)]
pub(crate) struct KretprobeEvent {
    perf_event: Option<OwnedFd>,
    tracefs: PathBuf,
    group: String,
    event: String,
}

impl Drop for KretprobeEvent {
    fn drop(&mut self) {
        // The kernel refuses to remove an event while a perf event holds it.
        drop(self.perf_event.take());
        let line = remove_line(&self.group, &self.event);
        if let Err(err) = write_events(&self.tracefs, &line) {
            log::warn!("removing the kretprobe event {}: {err}", self.event);
        }
    }
}

/// Appends `line` to `kprobe_events` (opening it for writing without appending would
/// remove every kprobe event on the machine).
fn write_events(tracefs: &Path, line: &str) -> std::io::Result<()> {
    let mut file = OpenOptions::new()
        .append(true)
        .open(tracefs.join("kprobe_events"))?;
    file.write_all(format!("{line}\n").as_bytes())
}

/// Creates a kretprobe with `maxactive` instances on each of `functions` and attaches
/// `program` (a loaded kprobe program) to it. One line why when any fails: the events made
/// so far are removed, and the caller attaches through the kprobe PMU instead.
pub(super) fn attach(
    program: BorrowedFd<'_>,
    functions: &[String],
    maxactive: usize,
) -> Result<Vec<KretprobeEvent>, String> {
    let tracefs = crate::probe::tracefs::root().map_err(|err| err.to_string())?;
    static STALE: std::sync::Once = std::sync::Once::new();
    STALE.call_once(|| remove_stale(&tracefs));
    let pid = std::process::id();
    let group = group(pid);
    let mut events = Vec::with_capacity(functions.len());
    // Numbered across the process: engines of one process (the exporter's) may probe the
    // same function.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    for function in functions {
        let index = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let event = event_name(function, pid, index);
        let line = create_line(maxactive, &group, &event, function);
        write_events(&tracefs, &line).map_err(|err| format!("writing `{line}`: {err}"))?;
        let mut owned = KretprobeEvent {
            perf_event: None,
            tracefs: tracefs.clone(),
            group: group.clone(),
            event,
        };
        owned.perf_event = Some(open(program, &tracefs, &group, &owned.event)?);
        events.push(owned);
    }
    Ok(events)
}

/// Opens `GROUP/EVENT`'s tracepoint perf event (every process, CPU 0: a kprobe's programs
/// run on every CPU), sets `program` on it and enables it.
fn open(
    program: BorrowedFd<'_>,
    tracefs: &Path,
    group: &str,
    event: &str,
) -> Result<OwnedFd, String> {
    use perf_event_open_sys::{self as sys, bindings as b};
    let id_path = tracefs.join("events").join(group).join(event).join("id");
    let id: u64 = std::fs::read_to_string(&id_path)
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .ok_or_else(|| format!("no event id in {}", id_path.display()))?;
    // SAFETY: an all-zero perf_event_attr is valid; type, size and config are set below.
    let mut attr: b::perf_event_attr = unsafe { std::mem::zeroed() };
    attr.size = std::mem::size_of_val(&attr) as u32;
    attr.type_ = b::PERF_TYPE_TRACEPOINT;
    attr.config = id;
    attr.set_disabled(1);
    // SAFETY: attr is initialised.
    let fd = unsafe { sys::perf_event_open(&mut attr, -1, 0, -1, b::PERF_FLAG_FD_CLOEXEC as u64) };
    if fd < 0 {
        let err = std::io::Error::last_os_error();
        return Err(format!("perf_event_open of {group}/{event}: {err}"));
    }
    // SAFETY: a fresh descriptor nobody else owns.
    let perf_event = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: both are open descriptors of the kinds these ioctls take.
    if unsafe { sys::ioctls::SET_BPF(fd, program.as_raw_fd() as u32) } < 0 {
        let err = std::io::Error::last_os_error();
        return Err(format!("PERF_EVENT_IOC_SET_BPF on {group}/{event}: {err}"));
    }
    // SAFETY: as above.
    if unsafe { sys::ioctls::ENABLE(fd, 0) } < 0 {
        let err = std::io::Error::last_os_error();
        return Err(format!("PERF_EVENT_IOC_ENABLE on {group}/{event}: {err}"));
    }
    Ok(perf_event)
}

/// Removes the events of `tracekit_PID` groups whose process is gone (killed before it
/// could remove them).
fn remove_stale(tracefs: &Path) {
    let Ok(text) = std::fs::read_to_string(tracefs.join("kprobe_events")) else {
        return;
    };
    for (group, event) in parse_events(&text) {
        let Some(pid) = group.strip_prefix(GROUP_PREFIX) else {
            continue;
        };
        if pid.parse::<u32>().is_err() || Path::new("/proc").join(pid).exists() {
            continue;
        }
        match write_events(tracefs, &remove_line(group, event)) {
            Ok(()) => log::debug!("removed the stale kretprobe event {group}/{event}"),
            Err(err) => log::debug!("removing the stale kretprobe event {group}/{event}: {err}"),
        }
    }
}

/// The calls whose return `events` lost (their `nmissed` in `kprobe_profile`): the return
/// found every instance taken, or the entry came while another kprobe ran on the CPU.
pub(crate) fn missed(events: &[KretprobeEvent]) -> u64 {
    let Some(first) = events.first() else {
        return 0;
    };
    let Ok(text) = std::fs::read_to_string(first.tracefs.join("kprobe_profile")) else {
        return 0;
    };
    parse_profile(&text)
        .into_iter()
        .filter(|(name, _)| events.iter().any(|event| event.event == *name))
        .map(|(_, missed)| missed)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maxactive_shared_by_many_functions() {
        assert_eq!(maxactive(1, 2), 4096);
        assert_eq!(maxactive(16, 2), 4096);
        assert_eq!(maxactive(64, 2), 1024);
        assert_eq!(maxactive(100_000, 2), 10);
        assert_eq!(maxactive(100_000, 64), 128);
        assert_eq!(maxactive(0, 4096), 4096);
    }

    #[test]
    fn lines_written_to_kprobe_events() {
        let event = event_name("vfs_read", 4242, 0);
        assert_eq!(event, "vfs_read_4242_0");
        assert_eq!(
            create_line(4096, &group(4242), &event, "vfs_read"),
            "r4096:tracekit_4242/vfs_read_4242_0 vfs_read"
        );
        assert_eq!(
            remove_line(&group(4242), &event),
            "-:tracekit_4242/vfs_read_4242_0"
        );
        assert_eq!(
            event_name("ext4_file_read_iter.cold.isra.0", 7, 12),
            "ext4_file_read_iter_cold_isra_0_7_12"
        );
        assert_eq!(
            event_name(&"a".repeat(100), 4_194_304, 99999),
            format!("{}_4194304_99999", "a".repeat(32))
        );
    }

    #[test]
    fn nmissed_read_from_kprobe_profile() {
        // Linux 5.10's kprobe_profile: "  %-44s %15lu %15lu\n" (name, nhit, nmissed).
        let profile = "  vfs_read_4242_0                                          200                0\n  \
                       vfs_write_4242_1                                           5               17\n";
        assert_eq!(
            parse_profile(profile),
            [("vfs_read_4242_0", 0), ("vfs_write_4242_1", 17)]
        );
        assert_eq!(parse_profile("garbage\n\n  a 1 x\n"), []);
    }

    #[test]
    fn groups_read_from_kprobe_events() {
        let events = "r4096:tracekit_4242/vfs_read_4242_0 vfs_read\n\
                      p:kprobes/myprobe do_sys_open\n\
                      r10:tracekit_7/tcp_recvmsg_7_0 tcp_recvmsg\n";
        assert_eq!(
            parse_events(events),
            [
                ("tracekit_4242", "vfs_read_4242_0"),
                ("kprobes", "myprobe"),
                ("tracekit_7", "tcp_recvmsg_7_0")
            ]
        );
    }
}
