//! `-- CMD ARGS`: run a command and trace it from its first instruction.
//!
//! The command is forked first and held before `exec` until the probes are attached and
//! its pid is in the kernel's filter, as `perf record -- CMD` does; then it is released.
//! Its exit is watched through a pidfd. It dies with tracekit (`PR_SET_PDEATHSIG`), also
//! when tracekit is killed with SIGKILL.
//!
//! With [`Workload::spawn_held`], its exit is held too, until tracekit has read its memory
//! map: a command that lives a millisecond is gone before its first events' announcement
//! is read, and its user frames could not be named. A thread of tracekit ptrace-seizes the
//! command (`PTRACE_SEIZE` with `PTRACE_O_TRACEEXIT`): the command stops at its exit with
//! its memory still mapped ([`Workload::exit_stops`] becomes readable), the event loop reads
//! its map, and [`Workload::release`] lets it finish (after [`HOLD_LIMIT`] at most). Only
//! the command itself is held, not the children it forks; and being traced, it cannot be
//! attached to by a debugger (it can still be one). Signals reach it as before (the thread
//! passes each one on).
//!
//! A held command also stops right after each `exec` (`PTRACE_O_TRACEEXEC`), before the
//! new program's first instruction, until [`Workload::release`] (after [`EXEC_HOLD_LIMIT`]
//! at most): the event loop has its unwind tables published then, so that its first
//! samples are walked whole (an interpreter such as CPython keeps no frame pointers, and its
//! stacks are named only through its tables).

use std::{
    ffi::{CString, OsStr, OsString},
    os::{
        fd::{AsRawFd as _, FromRawFd as _, OwnedFd},
        unix::ffi::OsStrExt as _,
    },
    path::{Path, PathBuf},
};

use crate::{Error, Result};

/// The longest a command's exit is held for its memory map to be read: an event loop that
/// does not answer must not keep a command from exiting.
pub const HOLD_LIMIT: std::time::Duration = std::time::Duration::from_secs(1);

/// The longest a command is held at its `exec` for its unwind tables to be published (its
/// executable's table is built then, which takes up to a second or two for a big one).
pub const EXEC_HOLD_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Where a held command stopped (the byte the tracer thread writes for each stop).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeldAt {
    /// Right after an `exec`, its new image mapped, before its first instruction.
    Exec = 2,
    /// At its exit, its memory still mapped.
    Exit = 1,
}

/// The thread that holds a command's exit (see the module docs).
#[derive(Debug)]
struct Hold {
    /// Readable (one byte per stop) when the command stops at its exit.
    exit_stops: OwnedFd,
    /// Lets a command stopped at its exit go on; None once nothing will read maps anymore.
    release: Option<std::sync::mpsc::Sender<()>>,
    /// Reaps the command: how it ended.
    tracer: Option<std::thread::JoinHandle<Result<Exit>>>,
}

/// A forked command, stopped before `exec` until [`Workload::start`].
#[derive(Debug)]
pub struct Workload {
    pid: u32,
    program: PathBuf,
    go: Option<OwnedFd>,
    exec_error: Option<OwnedFd>,
    reaped: bool,
    hold: Option<Hold>,
}

/// How a workload ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this status.
    Code(i32),
    /// A signal killed it.
    Signal(i32),
}

impl Workload {
    /// Forks `argv` (program then arguments), resolved through `PATH` as a shell would. The
    /// child waits before `exec`. A program that cannot be found or run is a usage error.
    ///
    /// Call it while the process has one thread: the child runs only `read`, `execv`,
    /// `write` and `_exit` between fork and exec.
    pub fn spawn(argv: &[OsString]) -> Result<Self> {
        Self::fork(argv)
    }

    /// As [`Workload::spawn`], and holds the command's exit until its memory map is read
    /// (see the module docs). Where ptrace is refused (a seccomp policy, another tracer),
    /// the command runs unheld; `-vv` says why.
    pub fn spawn_held(argv: &[OsString]) -> Result<Self> {
        let mut workload = Self::fork(argv)?;
        match hold(workload.pid) {
            Ok(hold) => workload.hold = Some(hold),
            Err(err) => log::debug!("the command's exit is not held: {err}"),
        }
        Ok(workload)
    }

    fn fork(argv: &[OsString]) -> Result<Self> {
        let program = argv
            .first()
            .ok_or_else(|| Error::usage("-- needs a command to run"))?;
        let resolved = resolve(program)?;
        let c_program = cstring(resolved.as_os_str())?;
        let c_args = argv
            .iter()
            .map(|arg| cstring(arg))
            .collect::<Result<Vec<_>>>()?;
        let mut c_argv: Vec<*const libc::c_char> = c_args.iter().map(|a| a.as_ptr()).collect();
        c_argv.push(std::ptr::null());

        let (go_read, go_write) = pipe()?;
        let (err_read, err_write) = pipe()?;
        // SAFETY: getpid(2) has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: fork(2); the child only calls async-signal-safe functions below.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(Error::runtime(format!(
                "fork: {}",
                std::io::Error::last_os_error()
            )));
        }
        if pid == 0 {
            // Child: die with tracekit, even when it is killed with SIGKILL (as perf's
            // workload does not, and users expect); a parent that died before the prctl is
            // seen as a new parent pid. Then wait for the go byte (EOF means the parent gave
            // up), then exec.
            // SAFETY: valid fds and buffers; execv's arrays are NUL-terminated and live.
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
                if libc::getppid() != parent {
                    libc::_exit(127);
                }
                libc::close(go_write.as_raw_fd());
                libc::close(err_read.as_raw_fd());
                let mut byte = 0u8;
                if libc::read(go_read.as_raw_fd(), (&raw mut byte).cast(), 1) != 1 {
                    libc::_exit(127);
                }
                libc::execv(c_program.as_ptr(), c_argv.as_ptr());
                let errno = *libc::__errno_location();
                libc::write(err_write.as_raw_fd(), (&raw const errno).cast(), 4);
                libc::_exit(127);
            }
        }
        drop(go_read);
        drop(err_write);
        Ok(Self {
            pid: pid as u32,
            program: resolved,
            go: Some(go_write),
            exec_error: Some(err_read),
            reaped: false,
            hold: None,
        })
    }

    /// The command's pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Lets the command `exec`. Fails if `exec` itself failed.
    pub fn start(&mut self) -> Result<()> {
        if let Some(go) = self.go.take() {
            // SAFETY: writing one byte from a live buffer to an open pipe.
            unsafe { libc::write(go.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
        }
        let Some(err_read) = self.exec_error.take() else {
            return Ok(());
        };
        let mut errno = [0u8; 4];
        // SAFETY: reading into a live 4-byte buffer; EOF (0) means exec succeeded (CLOEXEC).
        let n = unsafe { libc::read(err_read.as_raw_fd(), errno.as_mut_ptr().cast(), 4) };
        if n == 4 {
            let _ = self.wait();
            let err = std::io::Error::from_raw_os_error(i32::from_ne_bytes(errno));
            return Err(Error::runtime(format!(
                "cannot run {}: {err}",
                crate::error::quote(&self.program.to_string_lossy())
            )));
        }
        Ok(())
    }

    /// A pidfd that becomes readable when the command exits (`pidfd_open(2)`, Linux 5.3).
    pub fn pidfd(&self) -> Result<OwnedFd> {
        pidfd_open(self.pid)
    }

    /// Readable when the command has stopped at its exit, with its memory still mapped, or
    /// right after an `exec`: one [`HeldAt`] byte per stop. Read the byte, do what the stop
    /// is for, then [`Workload::release`] it. None when not held.
    pub fn exit_stops(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        use std::os::fd::AsFd as _;
        self.hold.as_ref().map(|hold| hold.exit_stops.as_fd())
    }

    /// Lets a command stopped at its exit finish exiting, or one stopped at its `exec` run.
    pub fn release(&self) {
        if let Some(release) = self.hold.as_ref().and_then(|hold| hold.release.as_ref()) {
            let _ = release.send(());
        }
    }

    /// Holds the command's exit no more (nothing will read its map now).
    pub fn stop_holding(&mut self) {
        if let Some(hold) = self.hold.as_mut() {
            hold.release = None;
        }
    }

    /// Sends `signal` to the command if it has not been reaped yet.
    pub fn kill(&self, signal: i32) {
        let reaped_by_tracer = self
            .hold
            .as_ref()
            .and_then(|hold| hold.tracer.as_ref())
            .is_some_and(std::thread::JoinHandle::is_finished);
        if !self.reaped && !reaped_by_tracer {
            // SAFETY: kill(2) on our own unreaped child.
            unsafe { libc::kill(self.pid as i32, signal) };
        }
    }

    /// Waits for the command to exit and reaps it.
    pub fn wait(&mut self) -> Result<Exit> {
        self.stop_holding();
        if let Some(tracer) = self.hold.as_mut().and_then(|hold| hold.tracer.take()) {
            self.reaped = true;
            return tracer
                .join()
                .unwrap_or_else(|_| Err(Error::runtime("the command's tracer thread panicked")));
        }
        let mut status = 0;
        loop {
            // SAFETY: waitpid(2) on our own child with a live status pointer.
            let rc = unsafe { libc::waitpid(self.pid as i32, &mut status, 0) };
            if rc >= 0 {
                break;
            }
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                return Err(Error::runtime(format!(
                    "waiting for pid {}: {err}",
                    self.pid
                )));
            }
        }
        self.reaped = true;
        Ok(exit_of(status))
    }
}

/// How a process ended, from its wait status.
fn exit_of(status: i32) -> Exit {
    if libc::WIFSIGNALED(status) {
        Exit::Signal(libc::WTERMSIG(status))
    } else {
        Exit::Code(libc::WEXITSTATUS(status))
    }
}

/// Seizes `pid` (our child, held before `exec`) from a new thread, which then passes its
/// signals on, tells of its exit stops and reaps it (ptrace requests come from the tracer
/// thread only).
fn hold(pid: u32) -> Result<Hold> {
    let (stops_read, stops_write) = pipe()?;
    // SAFETY: fcntl(2) on our own open fd: the event loop drains it without blocking.
    unsafe { libc::fcntl(stops_read.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    let (release, released) = std::sync::mpsc::channel::<()>();
    let (seized_tx, seized) = std::sync::mpsc::channel::<std::io::Result<()>>();
    let tracer = std::thread::Builder::new()
        .name("tracekit-hold".into())
        .spawn(move || -> Result<Exit> {
            let options =
                libc::PTRACE_O_TRACEEXIT | libc::PTRACE_O_TRACEEXEC | libc::PTRACE_O_EXITKILL;
            // SAFETY: ptrace(2) on our own child; no memory is passed.
            let rc = unsafe {
                libc::ptrace(
                    libc::PTRACE_SEIZE,
                    pid as libc::pid_t,
                    0,
                    options as libc::c_ulong,
                )
            };
            let _ = seized_tx.send(if rc == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            });
            if rc != 0 {
                return Err(Error::runtime("not seized"));
            }
            trace_until_exit(pid, &stops_write, &released)
        })
        .map_err(|err| Error::runtime(format!("starting the command's tracer: {err}")))?;
    match seized.recv() {
        Ok(Ok(())) => Ok(Hold {
            exit_stops: stops_read,
            release: Some(release),
            tracer: Some(tracer),
        }),
        Ok(Err(err)) => {
            let _ = tracer.join();
            Err(Error::runtime(format!(
                "ptrace(PTRACE_SEIZE, {pid}): {err}"
            )))
        }
        Err(_) => Err(Error::runtime("the command's tracer thread ended")),
    }
}

/// The tracer thread's loop: every stop of `pid` until it is reaped. A signal-delivery
/// stop passes the signal on; a group stop (`SIGSTOP`) listens, as the command stays
/// stopped; the exit stop writes a byte to `stops` and waits for `released` (at most
/// [`HOLD_LIMIT`]).
fn trace_until_exit(
    pid: u32,
    stops: &OwnedFd,
    released: &std::sync::mpsc::Receiver<()>,
) -> Result<Exit> {
    loop {
        let mut status = 0;
        // SAFETY: waitpid(2) on our own child with a live status pointer.
        let rc = unsafe { libc::waitpid(pid as i32, &mut status, libc::__WALL) };
        if rc < 0 {
            let err = std::io::Error::last_os_error();
            if err.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(Error::runtime(format!("waiting for pid {pid}: {err}")));
        }
        if !libc::WIFSTOPPED(status) {
            return Ok(exit_of(status));
        }
        let event = (status >> 16) & 0xff;
        let held = match event {
            libc::PTRACE_EVENT_EXIT => Some((HeldAt::Exit, HOLD_LIMIT)),
            libc::PTRACE_EVENT_EXEC => Some((HeldAt::Exec, EXEC_HOLD_LIMIT)),
            _ => None,
        };
        let (request, data) = if let Some((at, limit)) = held {
            // A release that came after an earlier stop's limit is not this stop's.
            while released.try_recv().is_ok() {}
            // SAFETY: writing one byte from a live buffer to our pipe.
            unsafe { libc::write(stops.as_raw_fd(), [at as u8].as_ptr().cast(), 1) };
            let _ = released.recv_timeout(limit);
            (libc::PTRACE_CONT, 0)
        } else if event == libc::PTRACE_EVENT_STOP {
            // Stopped (SIGSTOP and the like): it stays so until SIGCONT, which traps again
            // with SIGTRAP (do_jobctl_trap in kernel/signal.c), to go on.
            if libc::WSTOPSIG(status) == libc::SIGTRAP {
                (libc::PTRACE_CONT, 0)
            } else {
                (libc::PTRACE_LISTEN, 0)
            }
        } else {
            (libc::PTRACE_CONT, libc::WSTOPSIG(status))
        };
        // SAFETY: ptrace(2) on our stopped tracee; no memory is passed.
        unsafe { libc::ptrace(request, pid as libc::pid_t, 0, data as libc::c_ulong) };
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        // Never leave a held child behind: closing the go pipe makes it exit.
        self.go.take();
        self.stop_holding();
        if !self.reaped && self.exec_error.is_some() {
            let _ = self.wait();
        }
    }
}

/// `pidfd_open(2)`: an fd that becomes readable when `pid` exits.
pub fn pidfd_open(pid: u32) -> Result<OwnedFd> {
    // SAFETY: plain syscall; a non-negative result is a new fd we own.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        let err = std::io::Error::last_os_error();
        return Err(if err.raw_os_error() == Some(libc::ESRCH) {
            Error::usage(format!("-p {pid}: no such process"))
        } else {
            Error::runtime(format!("pidfd_open({pid}): {err}"))
        });
    }
    // SAFETY: the kernel returned a new fd.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Finds `program` like execvp(3): as given when it has a `/`, else in each `PATH` entry.
fn resolve(program: &OsStr) -> Result<PathBuf> {
    let executable = |path: &Path| {
        let c = CString::new(path.as_os_str().as_bytes()).ok();
        // SAFETY: access(2) with a NUL-terminated path.
        path.is_file() && c.is_some_and(|c| unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0)
    };
    let shown = crate::error::quote(&program.to_string_lossy());
    if program.as_bytes().contains(&b'/') {
        let path = PathBuf::from(program);
        if !path.exists() {
            return Err(Error::usage(format!("-- {shown}: no such file")));
        }
        if !executable(&path) {
            return Err(Error::usage(format!("-- {shown}: not an executable file")));
        }
        return Ok(path);
    }
    let paths = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&paths)
        .map(|dir| dir.join(program))
        .find(|candidate| executable(candidate))
        .ok_or_else(|| Error::usage(format!("-- {shown}: command not found in PATH")))
}

fn cstring(s: &OsStr) -> Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| {
        Error::usage(format!(
            "-- {}: contains a NUL byte",
            crate::error::quote(&s.to_string_lossy())
        ))
    })
}

fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2(2) with a live two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Error::runtime(format!(
            "pipe: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: the kernel returned two new fds.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_program_is_a_usage_error() {
        let err = Workload::spawn(&["/no/such/binary".into()]).unwrap_err();
        assert_eq!(err.to_string(), "-- /no/such/binary: no such file");
        assert_eq!(err.exit_code(), 2);
        let err = Workload::spawn(&["no-such-command-xyz".into()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "-- no-such-command-xyz: command not found in PATH"
        );
    }

    #[test]
    fn held_child_runs_after_start_and_reports_status() {
        let mut workload = Workload::spawn(&["sh".into(), "-c".into(), "exit 7".into()]).unwrap();
        workload.start().unwrap();
        assert_eq!(workload.wait().unwrap(), Exit::Code(7));
    }

    /// The held command stops at its exit with its memory still mapped, until released.
    #[test]
    fn held_command_keeps_its_map_until_released() {
        let mut workload =
            Workload::spawn_held(&["sh".into(), "-c".into(), "exit 3".into()]).unwrap();
        let stops = workload
            .exit_stops()
            .expect("held")
            .try_clone_to_owned()
            .unwrap();
        workload.start().unwrap();
        let mut poll = libc::pollfd {
            fd: stops.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll(2) on one live pollfd.
        let ready = unsafe { libc::poll(&mut poll, 1, 10_000) };
        assert_eq!(ready, 1, "no exit stop");
        let maps = std::fs::read_to_string(format!("/proc/{}/maps", workload.pid())).unwrap();
        assert!(maps.contains("/sh") || maps.contains("dash"), "{maps}");
        workload.release();
        assert_eq!(workload.wait().unwrap(), Exit::Code(3));
    }

    /// A signal reaches a held command as it would an unheld one.
    #[test]
    fn held_command_gets_its_signals() {
        let mut workload = Workload::spawn_held(&["sleep".into(), "30".into()]).unwrap();
        workload.start().unwrap();
        workload.kill(libc::SIGTERM);
        assert_eq!(workload.wait().unwrap(), Exit::Signal(libc::SIGTERM));
    }

    #[test]
    fn dropped_workload_never_runs() {
        let dir = std::env::temp_dir().join(format!("tracekit-wl-{}", std::process::id()));
        let marker = dir.with_extension("ran");
        let script = format!("touch {}", marker.display());
        let workload = Workload::spawn(&["sh".into(), "-c".into(), script.into()]).unwrap();
        drop(workload);
        assert!(!marker.exists());
    }
}
