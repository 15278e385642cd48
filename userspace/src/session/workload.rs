//! `-- CMD ARGS`: run a command and trace it from its first instruction.
//!
//! The command is forked first and held before `exec` until the probes are attached and
//! its pid is in the kernel's filter, as `perf record -- CMD` does; then it is released.
//! Its exit is watched through a pidfd. It dies with tracekit (`PR_SET_PDEATHSIG`), also
//! when tracekit is killed with SIGKILL.

use std::{
    ffi::{CString, OsStr, OsString},
    os::{
        fd::{AsRawFd as _, FromRawFd as _, OwnedFd},
        unix::ffi::OsStrExt as _,
    },
    path::{Path, PathBuf},
};

use crate::{Error, Result};

/// A forked command, stopped before `exec` until [`Workload::start`].
#[derive(Debug)]
pub struct Workload {
    pid: u32,
    program: PathBuf,
    go: Option<OwnedFd>,
    exec_error: Option<OwnedFd>,
    reaped: bool,
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

    /// Sends `signal` to the command if it has not been reaped yet.
    pub fn kill(&self, signal: i32) {
        if !self.reaped {
            // SAFETY: kill(2) on our own unreaped child.
            unsafe { libc::kill(self.pid as i32, signal) };
        }
    }

    /// Waits for the command to exit and reaps it.
    pub fn wait(&mut self) -> Result<Exit> {
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
        Ok(if libc::WIFSIGNALED(status) {
            Exit::Signal(libc::WTERMSIG(status))
        } else {
            Exit::Code(libc::WEXITSTATUS(status))
        })
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        // Never leave a held child behind: closing the go pipe makes it exit.
        self.go.take();
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
