//! What wakes a run's event loop besides its rings: the stop conditions (`-d`, Ctrl-C,
//! SIGTERM, the traced processes exiting), `-i` interval ticks, a `-- CMD` stopping at its
//! exit, and stdout's reader going away.

use std::{
    io::IsTerminal as _,
    os::fd::{AsFd as _, AsRawFd as _, OwnedFd},
    time::{Duration, Instant},
};

use tokio::{
    io::{Interest, unix::AsyncFd},
    signal::unix::{Signal, SignalKind, signal},
};

use super::Stop;
use crate::{Error, Result};

/// Waits until the `-- CMD` command stops at its exit or an `exec`
/// ([`Workload::exit_stops`]), drains the notice and says which; never, when it is not held.
pub(super) async fn exit_stop(stops: Option<&AsyncFd<OwnedFd>>) -> super::workload::HeldAt {
    use super::workload::HeldAt;
    let Some(stops) = stops else {
        return std::future::pending().await;
    };
    loop {
        let Ok(mut ready) = stops.readable().await else {
            return std::future::pending().await;
        };
        let mut buf = [0u8; 16];
        // SAFETY: reading into a live buffer from our non-blocking pipe.
        let n = unsafe { libc::read(stops.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n > 0 {
            // The command is stopped at the last one (it stops once until released).
            return if buf[n as usize - 1] == HeldAt::Exec as u8 {
                HeldAt::Exec
            } else {
                HeldAt::Exit
            };
        }
        ready.clear_ready();
        if n == 0 {
            // The tracer thread has ended: no more stops.
            return std::future::pending().await;
        }
    }
}

/// Waits for the first of several futures (a small `select_all`, to avoid a dependency).
pub(super) async fn select_first<F: std::future::Future + Unpin>(
    futures: impl Iterator<Item = F>,
) -> (F::Output, usize) {
    let mut futures: Vec<F> = futures.collect();
    std::future::poll_fn(move |cx| {
        for (index, future) in futures.iter_mut().enumerate() {
            if let std::task::Poll::Ready(output) = std::pin::Pin::new(future).poll(cx) {
                return std::task::Poll::Ready((output, index));
            }
        }
        std::task::Poll::Pending
    })
    .await
}

/// Tells when stdout is a pipe whose reader has gone (`| head` exited): the pipe's write
/// end reports an error condition then, before anything is written.
pub(super) struct StdoutWatch(Option<AsyncFd<OwnedFd>>);

impl StdoutWatch {
    pub(super) fn new() -> Self {
        let stdout = std::io::stdout();
        if stdout.is_terminal() {
            return Self(None);
        }
        let watch = stdout
            .as_fd()
            .try_clone_to_owned()
            .ok()
            // Regular files cannot be polled (epoll refuses them): nothing to watch.
            // SAFETY: the duplicated fd is owned by the AsyncFd and never changes.
            .and_then(|fd| unsafe { AsyncFd::register_with_interest(fd, Interest::ERROR) }.ok());
        Self(watch)
    }

    pub(super) async fn closed(&self) {
        match &self.0 {
            Some(fd) => {
                let _ = fd.ready(Interest::ERROR).await;
            }
            None => std::future::pending().await,
        }
    }
}

/// What woke the run up.
pub(super) enum Wake {
    /// Time to stop.
    Stop(Stop),
    /// An interval ended.
    Tick,
}

/// Stop conditions and interval ticks of one run. Ticks fall on whole multiples of the
/// interval; none falls on or after the `-d` deadline, which ends the run instead (so
/// `-i 1 -d 3` reports three intervals: two ticks and the last one at the stop).
pub(super) struct Stopper {
    duration: Option<Duration>,
    interval: Option<Duration>,
    start: tokio::time::Instant,
    ticks: u32,
    sigint: Signal,
    sigterm: Signal,
    exits: Vec<AsyncFd<OwnedFd>>,
}

impl Stopper {
    /// Watches `-d`, `-i`, signals, and the exit of each pidfd in `exits`.
    pub(super) fn new(
        duration: Option<Duration>,
        interval: Option<Duration>,
        exits: Vec<OwnedFd>,
    ) -> Result<Self> {
        let io = |err: std::io::Error| Error::runtime(format!("setting up the event loop: {err}"));
        Ok(Self {
            duration,
            interval,
            start: tokio::time::Instant::now(),
            ticks: 0,
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

    /// Measures `-d` and `-i` from `start`.
    pub(super) fn restart(&mut self, start: Instant) {
        self.start = tokio::time::Instant::from_std(start);
        self.ticks = 0;
    }

    /// Waits for the next stop condition or interval tick.
    pub(super) async fn next(&mut self) -> Wake {
        let deadline = self.duration.map(|d| self.start + d);
        let next_tick = self
            .interval
            .map(|i| self.start + i * (self.ticks + 1))
            .filter(|tick| deadline.is_none_or(|deadline| *tick < deadline));
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
        let until = |at: Option<tokio::time::Instant>| async move {
            match at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            _ = self.sigint.recv() => Wake::Stop(Stop::Signal("SIGINT")),
            _ = self.sigterm.recv() => Wake::Stop(Stop::Signal("SIGTERM")),
            () = until(deadline) => Wake::Stop(Stop::Duration),
            () = all_exited => Wake::Stop(Stop::Exited),
            () = until(next_tick) => {
                self.ticks += 1;
                Wake::Tick
            }
        }
    }
}
