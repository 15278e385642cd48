//! One run skeleton for every command: the scope (`-a`, `-p PID`, `-- CMD`), the workload's
//! life, privileges, attaching, the event loop (ring buffers, `-i` intervals, `-d`, Ctrl-C,
//! SIGTERM, the traced processes exiting, stdout closing), detaching, and the workload's end.
//!
//! A command supplies a [`Collector`] (what to attach, what to do with ring-buffer records
//! and at each interval) and [`Options`]; [`run`] does the rest and says how the run
//! [`Finished`]. Every command stops, reports intervals and releases its `-- CMD` the same
//! way because none of them does it itself.

mod wake;
pub mod workload;

use std::{
    os::fd::{AsRawFd as _, OwnedFd},
    time::{Duration, Instant},
};

use aya::maps::{MapData, RingBuf};
use tokio::io::{Interest, unix::AsyncFd};

use self::{
    wake::{StdoutWatch, Stopper, Wake, exit_stop, select_first},
    workload::{Exit, Workload},
};
use crate::{Error, Result, caps};

/// Which processes to trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every process (`-a`, the default).
    All,
    /// These running processes (`-p PID,...`); the run ends when they have all exited.
    Pids(Vec<u32>),
    /// A command to start (`-- CMD ARGS`), traced with its children until it exits.
    Command(Vec<std::ffi::OsString>),
}

impl Scope {
    /// How the scope reads in messages and titles: `all processes`, `pid 12 (bash)`,
    /// `` `make -j8` ``.
    pub fn describe(&self) -> String {
        match self {
            Scope::All => "all processes".to_string(),
            Scope::Pids(pids) => {
                let described: Vec<String> = pids
                    .iter()
                    .map(
                        |pid| match std::fs::read_to_string(format!("/proc/{pid}/comm")) {
                            Ok(comm) => format!("{pid} ({})", comm.trim()),
                            Err(_) => pid.to_string(),
                        },
                    )
                    .collect();
                format!(
                    "{} {}",
                    if pids.len() == 1 { "pid" } else { "pids" },
                    described.join(", ")
                )
            }
            Scope::Command(argv) => format!("`{}`", command_line(argv)),
        }
    }
}

/// A `-- CMD ARGS` command line as messages, banners and reports show it: its words joined
/// by spaces, quoted like any input ([`crate::error::quote`]), so that a megabyte of
/// arguments shows as 80 characters and never breaks the line.
pub fn command_line(argv: &[std::ffi::OsString]) -> String {
    let words: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    crate::error::quote(&words.join(" "))
}

/// Why tracing stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// `-d` elapsed.
    Duration,
    /// SIGINT (Ctrl-C) or SIGTERM.
    Signal(&'static str),
    /// The `-- CMD` command, or every `-p` process, exited.
    Exited,
    /// Whoever read stdout has gone (`| head`).
    OutputClosed,
}

impl Stop {
    /// Why the run ended, for the summary line: "duration reached", "SIGINT received",
    /// "command exited" (`-- CMD`), "traced processes exited" (`-p`), "output closed".
    pub fn reason(self, scope: &Scope) -> String {
        match (self, scope) {
            (Stop::Duration, _) => "duration reached".to_string(),
            (Stop::Signal(name), _) => format!("{name} received"),
            (Stop::Exited, Scope::Command(_)) => "command exited".to_string(),
            (Stop::Exited, _) => "traced processes exited".to_string(),
            (Stop::OutputClosed, _) => "output closed".to_string(),
        }
    }
}

/// The processes a collector traces, as the kernel programs select them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tracees {
    /// `None`: every process.
    pub pids: Option<Vec<u32>>,
    /// Also trace the children they fork (`-- CMD`).
    pub follow_children: bool,
    /// `--cgroup PATH`: only tasks in this cgroup v2 subtree (with `pids`: both hold).
    pub cgroup: Option<crate::cgroups::CgroupFilter>,
}

/// Whether the run goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Go on.
    Continue,
    /// Stop: the output is gone (a closed pipe).
    OutputClosed,
    /// Took the record, but can take no more from this ring until [`Collector::ready`]
    /// says so (its output is full): the other rings are still read meanwhile.
    Full,
}

/// One `-i` interval that ended.
#[derive(Clone, Copy, Debug)]
pub struct Interval {
    /// How long it lasted (the last one is usually shorter).
    pub elapsed: Duration,
    /// The run stopped: this is the last, partial interval, read after detaching.
    pub last: bool,
}

/// What a command runs: the probes it attaches and what it does while they run.
pub trait Collector {
    /// Loads and attaches the probes for `tracees`. A `-- CMD` workload is forked and held
    /// before `exec` meanwhile, so it is traced from its first instruction.
    fn attach(&mut self, tracees: &Tracees) -> Result<()>;

    /// Whether [`Collector::attach`] keeps only [`Tracees::cgroup`]'s tasks in the kernel;
    /// the run refuses `--cgroup` for collectors that do not.
    fn honours_cgroup(&self) -> bool {
        false
    }

    /// Ring buffers to poll while running (taken once, after attaching).
    fn rings(&mut self) -> Result<Vec<RingBuf<MapData>>> {
        Ok(Vec::new())
    }

    /// A record from ring `ring` (an index into [`Collector::rings`]).
    fn record(&mut self, _ring: usize, _data: &[u8]) -> Flow {
        Flow::Continue
    }

    /// Whether ring `ring`'s records can be taken now (see [`Flow::Full`]); with `wait`,
    /// blocks until they can (the last reads, after detaching).
    fn ready(&mut self, _ring: usize, _wait: bool) -> bool {
        true
    }

    /// Ring `ring` was read empty: every record committed to it before `before_ns`
    /// ([`monotonic_ns`], the clock of `bpf_ktime_get_ns`) has been given to
    /// [`Collector::record`].
    fn caught_up(&mut self, _ring: usize, _before_ns: u64) {}

    /// How often the rings are read without a wakeup: `Some` for rings whose records are
    /// committed without waking their reader (the trace ring, [`tracekit_common::engine::
    /// TRACE_WAKEUP_FRACTION`]).
    fn ring_poll(&self) -> Option<Duration> {
        None
    }

    /// Whether user frames are named from the processes' memory maps: a `-- CMD` is then
    /// held at its exit until [`Collector::exiting`] has read its map.
    fn names_user_frames(&self) -> bool {
        false
    }

    /// The `-- CMD` command `pid` is stopped at its exit, its memory still mapped; the rings
    /// were just read. Read what must be read from it while it lasts.
    fn exiting(&mut self, _pid: u32) {}

    /// The `-- CMD` command `pid` is stopped right after an `exec`, its new image mapped,
    /// until this returns: load what its first events need (unwind tables; within
    /// [`workload::EXEC_HOLD_LIMIT`]).
    fn exec_stopped(&mut self, _pid: u32) {}

    /// Everything is ready and the workload is about to be released: start counting.
    fn started(&mut self) -> Result<()> {
        Ok(())
    }

    /// An interval of `-i` ended; also called for the last, partial one when the run stops.
    fn interval(&mut self, _interval: Interval) -> Result<Flow> {
        Ok(Flow::Continue)
    }

    /// Detaches the probes; what they gathered stays readable.
    fn detach(&mut self) -> Result<()>;
}

/// How a run is set up.
pub struct Options {
    /// The subcommand, for privilege messages (`profile`, `stat -a`).
    pub command: String,
    /// Which processes.
    pub scope: Scope,
    /// `--cgroup PATH`: only tasks in this cgroup v2 subtree.
    pub cgroup: Option<crate::cgroups::CgroupFilter>,
    /// `-d`: stop after this long.
    pub duration: Option<Duration>,
    /// `-i`: report every interval this long.
    pub interval: Option<Duration>,
    /// The run loads BPF programs: check for the capabilities first.
    pub needs_bpf: bool,
    /// The first words of the start line (`Tracing block I/O sizes`, given the scope's
    /// description); the session adds the duration and "... Hit Ctrl-C to end.". None: no
    /// start line (`top`, `stat`).
    pub banner: Option<Banner>,
}

/// CLOCK_MONOTONIC now, in ns (the clock of `bpf_ktime_get_ns`, which records are stamped
/// with).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime(2) with a live out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Records read from one ring before the event loop looks at signals, timers and the other
/// rings again: a ring that fills faster than it is read is never empty, and reading it
/// until it was kept Ctrl-C, `-d` and `-i` waiting for as long as the flood lasted.
const RECORDS_PER_PASS: usize = 4096;
/// Time one ring's share of a pass may take. A slow reader of stdout makes each record slow:
/// the other rings (the process announcements that name user stacks) must not wait for
/// the whole backlog.
const TIME_PER_PASS: Duration = Duration::from_millis(20);
/// How often a ring whose collector was full ([`Flow::Full`]) is offered again when no
/// other ring wakes the loop.
const FULL_RETRY: Duration = Duration::from_millis(5);

/// The first words of a run's start line, given the scope's description.
pub type Banner = Box<dyn Fn(&str) -> String>;

/// How a run ended.
#[derive(Debug)]
pub struct Finished {
    /// Why it stopped.
    pub stop: Stop,
    /// From the start of collection to the stop.
    pub elapsed: Duration,
    /// The scope.
    pub scope: Scope,
    /// The scope as messages show it.
    pub scope_text: String,
    /// How `-- CMD` ended.
    pub workload_exit: Option<Exit>,
    /// From the start of the run to attached (for `-v`).
    pub attached_after: Duration,
}

impl Finished {
    /// Why the run ended, for the summary line.
    pub fn reason(&self) -> String {
        self.stop.reason(&self.scope)
    }

    /// Says on stderr how `-- CMD` ended, when it did not exit with status 0.
    pub fn print_workload_exit(&self) {
        match self.workload_exit {
            Some(Exit::Code(0)) | None => {}
            Some(Exit::Code(code)) => eprintln!("The command exited with status {code}."),
            Some(Exit::Signal(signal)) => eprintln!("The command was killed by signal {signal}."),
        }
    }
}

/// Runs `collector` over `options`' scope until `-d`, Ctrl-C, SIGTERM, the traced processes'
/// exit or stdout closing; reports intervals; detaches; ends the workload.
///
/// # Errors
/// Usage errors for a bad scope (a pid that does not exist, a command that cannot be
/// found), privilege errors, and whatever the collector fails with. The collector is detached
/// and the workload ended on every path.
pub fn run(options: Options, collector: &mut dyn Collector) -> Result<Finished> {
    let started = Instant::now();
    if options.cgroup.is_some() && !collector.honours_cgroup() {
        return Err(crate::Error::usage(format!(
            "{} --cgroup: this command cannot select tasks by cgroup (use -p PID or -- CMD)",
            // `stat -a` names the command in privilege messages: the name alone here.
            options.command.split(' ').next().unwrap_or_default()
        )));
    }
    let mut exit_fds = match &options.scope {
        Scope::Pids(pids) => watch_pids(pids)?,
        _ => Vec::new(),
    };
    if options.needs_bpf {
        caps::require_tracing(&options.command)?;
    }
    let scope_text = match options.cgroup {
        Some(cgroup) => format!(
            "{} in cgroup {}",
            options.scope.describe(),
            crate::cgroups::path(cgroup.id)
        ),
        None => options.scope.describe(),
    };
    let mut workload = match &options.scope {
        Scope::Command(argv) if collector.names_user_frames() => Some(Workload::spawn_held(argv)?),
        Scope::Command(argv) => Some(Workload::spawn(argv)?),
        _ => None,
    };
    let tracees = Tracees {
        pids: match &options.scope {
            Scope::All => None,
            Scope::Pids(pids) => Some(pids.clone()),
            Scope::Command(_) => workload.as_ref().map(|w| vec![w.pid()]),
        },
        follow_children: workload.is_some(),
        cgroup: options.cgroup,
    };
    let outcome = collect(
        &options,
        collector,
        &tracees,
        &mut exit_fds,
        workload.as_mut(),
        &scope_text,
    );
    let detached = collector.detach();
    crate::bpf::flush_kernel_logs();
    restore_default_signals();
    let Collected {
        stop,
        elapsed,
        attached: attached_after,
        last_tick,
        mut rings,
    } = match outcome {
        Ok(collected) => collected,
        Err(err) => {
            if let Some(workload) = workload.as_mut() {
                let _ = finish_workload(workload);
            }
            return Err(err);
        }
    };
    let attached_after = attached_after - started;
    detached?;
    // What the rings still hold, now that nothing adds to them (read before detaching, a
    // flood would never let them empty).
    let mut unread = stop != Stop::OutputClosed;
    'passes: while unread {
        unread = false;
        for (index, ring) in rings.iter_mut().enumerate() {
            match read_ring(collector, index, ring) {
                Read::Empty => {}
                Read::More => unread = true,
                Read::Full => {
                    collector.ready(index, true);
                    unread = true;
                }
                Read::OutputClosed => break 'passes,
            }
        }
    }
    if options.interval.is_some() {
        collector.interval(Interval {
            elapsed: elapsed.saturating_sub(last_tick),
            last: true,
        })?;
    }
    let workload_exit = match workload.as_mut() {
        Some(workload) => Some(finish_workload(workload)?),
        None => None,
    };
    Ok(Finished {
        stop,
        elapsed,
        scope: options.scope,
        scope_text,
        workload_exit,
        attached_after,
    })
}

/// Attaches and runs the event loop until the run stops.
fn collect(
    options: &Options,
    collector: &mut dyn Collector,
    tracees: &Tracees,
    exit_fds: &mut Vec<OwnedFd>,
    workload: Option<&mut Workload>,
    scope_text: &str,
) -> Result<Collected> {
    collector.attach(tracees)?;
    let attached = Instant::now();
    let rings = collector.rings()?;
    if let Some(workload) = workload.as_ref() {
        exit_fds.push(workload.pidfd()?);
    }
    let exit_stops = workload
        .as_ref()
        .and_then(|workload| workload.exit_stops())
        .map(|fd| fd.try_clone_to_owned())
        .transpose()
        .map_err(|err| Error::runtime(format!("watching the command's exit: {err}")))?;
    let mut workload = workload;
    let runtime = runtime()?;
    let io = |err: std::io::Error| Error::runtime(format!("polling a ring buffer: {err}"));
    let (stop, elapsed, last_tick, rings) = runtime.block_on(async {
        let mut stopper =
            Stopper::new(options.duration, options.interval, std::mem::take(exit_fds))?;
        if let Some(banner) = &options.banner {
            // Only now, with Ctrl-C handled, invite it.
            eprintln!(
                "{}{}... Hit Ctrl-C to end.",
                banner(scope_text),
                options
                    .duration
                    .map(|d| format!(" for {} s", d.as_secs_f64()))
                    .unwrap_or_default()
            );
        }
        let mut rings = rings
            .into_iter()
            .map(|ring| {
                // SAFETY: the ring buffer owns its map fd, which stays open and unchanged.
                unsafe { AsyncFd::register_with_interest(ring, Interest::READABLE) }
                    .map_err(|err| io(err.into()))
            })
            .collect::<Result<Vec<_>>>()?;
        let stdout_gone = StdoutWatch::new();
        let exit_stops = exit_stops
            .map(|fd| {
                // SAFETY: the OwnedFd is owned by the AsyncFd and never changes.
                unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
                    .map_err(|err| io(err.into()))
            })
            .transpose()?;
        collector.started()?;
        let collect_started = Instant::now();
        stopper.restart(collect_started);
        // Released only now, with the event loop ready: a command that runs for a
        // millisecond must still have its memory map read before it exits.
        if let Some(workload) = workload.as_mut() {
            workload.start()?;
        }
        let mut last_tick = collect_started;
        let ring_poll = collector.ring_poll();
        // Some ring was left with records after its share of a pass.
        let mut unread = false;
        // Some ring's collector could take no more records (its output is full).
        let mut full = false;
        let stop = 'run: loop {
            let readable = async {
                if unread {
                    // Lets the runtime poll its timers and signals (it only does when the
                    // loop waits): a flood must not hide `-d` and Ctrl-C.
                    tokio::task::yield_now().await;
                    return None;
                }
                if rings.is_empty() {
                    return std::future::pending().await;
                }
                let any = select_first(rings.iter().map(|fd| Box::pin(fd.readable())));
                // The full ring is offered again soon even if no ring wakes the loop; rings
                // written without wakeups are read on a timer.
                let Some(timeout) = (if full { Some(FULL_RETRY) } else { ring_poll }) else {
                    return Some(any.await);
                };
                tokio::select! {
                    ready = any => Some(ready),
                    () = tokio::time::sleep(timeout) => None,
                }
            };
            tokio::select! {
                biased;
                wake = stopper.next() => match wake {
                    Wake::Stop(stop) => break stop,
                    Wake::Tick => {
                        let now = Instant::now();
                        let interval = Interval { elapsed: now - last_tick, last: false };
                        last_tick = now;
                        if collector.interval(interval)? == Flow::OutputClosed {
                            break Stop::OutputClosed;
                        }
                    }
                },
                () = stdout_gone.closed() => break Stop::OutputClosed,
                held = exit_stop(exit_stops.as_ref()) => {
                    if held == workload::HeldAt::Exec {
                        // Right after its exec: its tables in before its first instruction.
                        if let Some(workload) = workload.as_ref() {
                            collector.exec_stopped(workload.pid());
                            workload.release();
                        }
                        continue;
                    }
                    // The command is stopped at its exit with its memory mapped: what the
                    // rings hold (its announcement) is read now, then its map.
                    let deadline = Instant::now() + HOLD_READ;
                    for (index, fd) in rings.iter_mut().enumerate() {
                        while Instant::now() < deadline {
                            match read_ring(collector, index, fd.get_mut()) {
                                Read::More => {}
                                Read::Empty | Read::Full => break,
                                Read::OutputClosed => break 'run Stop::OutputClosed,
                            }
                        }
                    }
                    if let Some(workload) = workload.as_ref() {
                        collector.exiting(workload.pid());
                        workload.release();
                    }
                }
                ready = readable => {
                    if let Some((ready, _)) = ready {
                        ready.map_err(io)?.clear_ready();
                    }
                    // Every ring gets its share, so that one flooded ring starves none, and
                    // one whose output is full stops none (the announcements that name
                    // stacks are read while a full pipe holds the records).
                    unread = false;
                    full = false;
                    for (index, fd) in rings.iter_mut().enumerate() {
                        match read_ring(collector, index, fd.get_mut()) {
                            Read::Empty => {}
                            Read::More => unread = true,
                            Read::Full => full = true,
                            Read::OutputClosed => break 'run Stop::OutputClosed,
                        }
                    }
                }
            }
        };
        let elapsed = collect_started.elapsed();
        if let Some(workload) = workload.as_mut() {
            workload.stop_holding();
        }
        let rings = rings.into_iter().map(AsyncFd::into_inner).collect();
        Ok::<_, Error>((stop, elapsed, last_tick - collect_started, rings))
    })?;
    Ok(Collected {
        stop,
        elapsed,
        attached,
        last_tick,
        rings,
    })
}

/// How [`collect`] ended.
struct Collected {
    stop: Stop,
    /// From the start of collection to the stop.
    elapsed: Duration,
    /// When the probes were attached.
    attached: Instant,
    /// When (from the start of collection) the last interval tick came.
    last_tick: Duration,
    /// The rings, to be read to the end once detached.
    rings: Vec<RingBuf<MapData>>,
}

/// What [`read_ring`] left.
enum Read {
    /// The ring is empty.
    Empty,
    /// The limit was reached with records left.
    More,
    /// The collector can take no more records from it for now ([`Flow::Full`]).
    Full,
    /// The collector's output has gone.
    OutputClosed,
}

/// Gives ring `index`'s records to `collector`, at most [`RECORDS_PER_PASS`] of them and for
/// at most [`TIME_PER_PASS`], and says whether it emptied the ring.
fn read_ring(collector: &mut dyn Collector, index: usize, ring: &mut RingBuf<MapData>) -> Read {
    if !collector.ready(index, false) {
        return Read::Full;
    }
    let started = Instant::now();
    let before_ns = monotonic_ns();
    for _ in 0..RECORDS_PER_PASS {
        if started.elapsed() >= TIME_PER_PASS {
            break;
        }
        let Some(item) = ring.next() else {
            collector.caught_up(index, before_ns);
            // Catching up may have handed the collector's output on, and found it full.
            return if collector.ready(index, false) {
                Read::Empty
            } else {
                Read::Full
            };
        };
        match collector.record(index, &item) {
            Flow::Continue => {}
            Flow::OutputClosed => return Read::OutputClosed,
            Flow::Full => return Read::Full,
        }
    }
    Read::More
}

/// Time the rings are read for while the command waits at its exit.
const HOLD_READ: Duration = Duration::from_millis(200);

/// The single-threaded event loop every command polls its rings, timers and signals on.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|err| Error::runtime(format!("starting the event loop: {err}")))
}

/// After the run: signals go back to their default action, so a second Ctrl-C during
/// symbolization ends tracekit at once (the probes are already detached by then).
pub fn restore_default_signals() {
    // SAFETY: resetting dispositions to SIG_DFL is always sound.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
    }
}

/// Ends the `-- CMD` workload: reaps it if it exited, else sends SIGTERM (as `perf stat
/// --timeout` does), SIGKILL after a second, and reaps it. Returns how it ended.
pub fn finish_workload(workload: &mut Workload) -> Result<Exit> {
    let pidfd = workload.pidfd().ok();
    let exited = |timeout_ms| {
        pidfd.as_ref().is_none_or(|fd| {
            let mut poll = libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: poll(2) on one live pollfd.
            unsafe { libc::poll(&mut poll, 1, timeout_ms) > 0 }
        })
    };
    if !exited(0) {
        workload.kill(libc::SIGTERM);
        if !exited(1000) {
            workload.kill(libc::SIGKILL);
        }
    }
    workload.wait()
}

/// Checks that each `-p` pid exists, returning a pidfd per pid that tells when it exits.
pub fn watch_pids(pids: &[u32]) -> Result<Vec<OwnedFd>> {
    pids.iter().map(|&pid| workload::pidfd_open(pid)).collect()
}

/// Local wall-clock time as `HH:MM:SS`, for interval headers.
pub fn clock_time() -> String {
    // SAFETY: time(2) and localtime_r(3) with live out-pointers.
    unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&now, &mut tm);
        format!("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec)
    }
}

/// This process's CPU time so far (user, system) and peak RSS in KiB (`getrusage(2)`).
pub fn own_usage() -> (Duration, Duration, u64) {
    // SAFETY: getrusage(2) with a live out-pointer.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let time = |tv: libc::timeval| {
        Duration::from_secs(tv.tv_sec as u64) + Duration::from_micros(tv.tv_usec as u64)
    };
    (
        time(usage.ru_utime),
        time(usage.ru_stime),
        usage.ru_maxrss as u64,
    )
}

/// With `-v`: time to attach, own CPU time and peak memory, on stderr.
pub fn print_usage(verbose: u8, attached_after: Duration) {
    if verbose >= 1 {
        let (user, sys, max_rss_kib) = own_usage();
        eprintln!(
            "tracekit: attached in {:.1} ms; own CPU time {:.3} s user + {:.3} s sys; peak RSS {:.1} MiB",
            attached_after.as_secs_f64() * 1e3,
            user.as_secs_f64(),
            sys.as_secs_f64(),
            max_rss_kib as f64 / 1024.0
        );
        for line in crate::bpf::features::fallbacks() {
            eprintln!("tracekit: {line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Long command lines are quoted short: start and end, 80 characters in all.
    #[test]
    fn command_lines_are_quoted_short() {
        let short = Scope::Command(vec!["ls".into(), "-l".into()]);
        assert_eq!(short.describe(), "`ls -l`");
        let long = Scope::Command(vec![
            "/bin/true".into(),
            "a".repeat(1 << 20).into(),
            "z".into(),
        ]);
        assert_eq!(
            long.describe(),
            format!("`/bin/true {}…{} z`", "a".repeat(43), "a".repeat(24))
        );
        let newline = Scope::Command(vec!["echo".into(), "a\nb".into()]);
        assert_eq!(newline.describe(), "`echo a\\nb`");
    }

    #[test]
    fn stop_reasons() {
        let command = Scope::Command(vec!["ls".into()]);
        assert_eq!(Stop::Exited.reason(&command), "command exited");
        assert_eq!(
            Stop::Exited.reason(&Scope::Pids(vec![1])),
            "traced processes exited"
        );
        assert_eq!(
            Stop::Signal("SIGTERM").reason(&Scope::All),
            "SIGTERM received"
        );
        assert_eq!(Stop::OutputClosed.reason(&Scope::All), "output closed");
    }
}
