//! What every tracing subcommand shares at run time: when to stop (duration, Ctrl-C,
//! SIGTERM, the traced processes exiting), interval ticks, and the `-- CMD` workload's end.

use std::{
    os::fd::{AsRawFd as _, OwnedFd},
    time::Duration,
};

use tokio::{
    io::{Interest, unix::AsyncFd},
    signal::unix::{Signal, SignalKind, signal},
    time::{Instant, Interval, Sleep},
};
use tracekit::{
    Error, Result,
    workload::{Exit, Workload},
};

use crate::cli::Scope;

/// Why tracing stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// `-d` elapsed.
    Duration,
    /// SIGINT (Ctrl-C) or SIGTERM.
    Signal(&'static str),
    /// The `-- CMD` command, or every `-p` process, exited.
    Exited,
}

impl Stop {
    /// Why the run ended, for the summary line: "duration reached", "SIGINT received",
    /// "command exited" (`-- CMD`) or "traced processes exited" (`-p`).
    pub fn reason(self, scope: &Scope) -> String {
        match (self, scope) {
            (Stop::Duration, _) => "duration reached".to_string(),
            (Stop::Signal(name), _) => format!("{name} received"),
            (Stop::Exited, Scope::Command(_)) => "command exited".to_string(),
            (Stop::Exited, _) => "traced processes exited".to_string(),
        }
    }
}

/// Stop conditions and interval ticks of one run. Create it inside the tokio runtime.
pub struct Stopper {
    sleep: Option<std::pin::Pin<Box<Sleep>>>,
    ticks: Option<Interval>,
    sigint: Signal,
    sigterm: Signal,
    exits: Vec<AsyncFd<OwnedFd>>,
}

/// What woke the run up.
pub enum Wake {
    /// Time to stop.
    Stop(Stop),
    /// An interval ended.
    Tick,
}

impl Stopper {
    /// Watches `-d`, `-i`, signals, and the exit of each pidfd in `exits`.
    pub fn new(duration: Option<f64>, interval: Option<f64>, exits: Vec<OwnedFd>) -> Result<Self> {
        let io = |err: std::io::Error| Error::runtime(format!("setting up the event loop: {err}"));
        let now = Instant::now();
        Ok(Self {
            sleep: duration
                .map(|d| Box::pin(tokio::time::sleep_until(now + Duration::from_secs_f64(d)))),
            ticks: interval.map(|i| {
                let period = Duration::from_secs_f64(i);
                tokio::time::interval_at(now + period, period)
            }),
            sigint: signal(SignalKind::interrupt()).map_err(io)?,
            sigterm: signal(SignalKind::terminate()).map_err(io)?,
            exits: exits
                .into_iter()
                .map(|fd| {
                    // SAFETY: the OwnedFd is owned by the AsyncFd and never changes.
                    unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
                        .map_err(|err| io(err.into()))
                })
                .collect::<Result<_>>()?,
        })
    }

    /// Waits for the next stop condition or interval tick.
    pub async fn next(&mut self) -> Wake {
        let exits = &mut self.exits;
        let all_exited = async {
            if exits.is_empty() {
                return std::future::pending().await;
            }
            // pidfds become readable when their process exits; wait for every one.
            while let Some(fd) = exits.last() {
                let _ = fd.readable().await;
                exits.pop();
            }
        };
        let sleep = async {
            match self.sleep.as_mut() {
                Some(sleep) => sleep.await,
                None => std::future::pending().await,
            }
        };
        let tick = async {
            match self.ticks.as_mut() {
                Some(ticks) => ticks.tick().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = sleep => Wake::Stop(Stop::Duration),
            _ = self.sigint.recv() => Wake::Stop(Stop::Signal("SIGINT")),
            _ = self.sigterm.recv() => Wake::Stop(Stop::Signal("SIGTERM")),
            () = all_exited => Wake::Stop(Stop::Exited),
            _ = tick => Wake::Tick,
        }
    }
}

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
    pids.iter()
        .map(|&pid| tracekit::workload::pidfd_open(pid))
        .collect()
}

/// How the scope reads in messages and titles.
pub fn describe_scope(scope: &Scope) -> String {
    match scope {
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
        Scope::Command(argv) => {
            let words: Vec<String> = argv
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            format!("`{}`", words.join(" "))
        }
    }
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
