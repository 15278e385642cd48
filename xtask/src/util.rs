//! Running commands with their failures explained.

use std::{
    ffi::{OsStr, OsString},
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use anyhow::{Context as _, Result, bail};

/// The workspace root (xtask lives in `xtask/`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask/ has a parent")
        .to_path_buf()
}

/// `$CARGO_HOME/bin`, where `cargo install` puts bpf-linker.
pub fn cargo_bin_dir() -> PathBuf {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))
        .unwrap_or_else(|| PathBuf::from("/root/.cargo"))
        .join("bin")
}

/// `PATH` with `$CARGO_HOME/bin` in front, so a just-installed bpf-linker is found.
pub fn path_with_cargo_bin() -> OsString {
    let mut paths = vec![cargo_bin_dir()];
    if let Some(path) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(paths).unwrap_or_default()
}

/// A command builder that says what it ran when it fails.
pub struct Cmd {
    inner: Command,
}

impl Cmd {
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        let mut inner = Command::new(program);
        inner.env("PATH", path_with_cargo_bin());
        Self { inner }
    }

    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Self {
        self.inner.arg(arg);
        self
    }

    pub fn args<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.inner.args(args);
        self
    }

    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Self {
        self.inner.env(key, value);
        self
    }

    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.inner.current_dir(dir);
        self
    }

    fn describe(&self) -> String {
        let mut words = vec![self.inner.get_program().to_string_lossy().into_owned()];
        words.extend(
            self.inner
                .get_args()
                .map(|a| a.to_string_lossy().into_owned()),
        );
        words.join(" ")
    }

    /// Runs with inherited stdio; fails unless it exits 0.
    pub fn run(&mut self) -> Result<()> {
        let what = self.describe();
        let status = self
            .inner
            .status()
            .with_context(|| format!("cannot start `{what}`"))?;
        if !status.success() {
            bail!("`{what}` failed ({status})");
        }
        Ok(())
    }

    /// Runs with stdin and stderr inherited, copying its stdout line by line to ours and
    /// giving each line to `each`; fails unless it exits 0. A thread reads the pipe: a
    /// process the command leaves behind holding its stdout (a test's stray child) does not
    /// keep this one waiting once the command has exited (what comes in the 2 s after the
    /// exit is still copied).
    pub fn run_watching_stdout(&mut self, mut each: impl FnMut(&str)) -> Result<()> {
        use std::{
            io::{BufRead, Write},
            sync::mpsc::{RecvTimeoutError, channel},
            time::{Duration, Instant},
        };
        let what = self.describe();
        let mut child = self
            .inner
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start `{what}`"))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let (lines, received) = channel::<Vec<u8>>();
        std::thread::spawn(move || {
            let mut reader = std::io::BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if lines.send(line).is_err() => break,
                    Ok(_) => {}
                }
            }
        });
        let mut out = std::io::stdout();
        let mut show = |line: Vec<u8>| -> Result<()> {
            out.write_all(&line)?;
            out.flush()?;
            each(String::from_utf8_lossy(&line).trim_end_matches('\n'));
            Ok(())
        };
        let status = loop {
            match received.recv_timeout(Duration::from_millis(200)) {
                Ok(line) => show(line)?,
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(status) = child.try_wait()? {
                        break status;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => break child.wait()?,
            }
        };
        let until = Instant::now() + Duration::from_secs(2);
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            match received.recv_timeout(left) {
                Ok(line) => show(line)?,
                Err(_) => break,
            }
        }
        if !status.success() {
            bail!("`{what}` failed ({status})");
        }
        Ok(())
    }

    /// Runs with inherited stdio and returns its exit status (1 if killed by a signal).
    pub fn status_code(&mut self) -> Result<u8> {
        let what = self.describe();
        let status = self
            .inner
            .status()
            .with_context(|| format!("cannot start `{what}`"))?;
        Ok(status.code().map_or(1, |code| code as u8))
    }

    /// Runs with stderr shown and returns stdout; fails unless it exits 0.
    pub fn stdout_only(&mut self) -> Result<String> {
        let what = self.describe();
        let output = self
            .inner
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .with_context(|| format!("cannot start `{what}`"))?;
        if !output.status.success() {
            bail!("`{what}` failed ({})", output.status);
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// Runs quietly and returns stdout if it exits 0, `None` otherwise (or if it is missing).
    pub fn output_ok(&mut self) -> Option<String> {
        let output = self
            .inner
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
    }
}

/// `cargo` (the one running xtask), in the workspace root.
pub fn cargo() -> Cmd {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Cmd::new(cargo);
    cmd.current_dir(workspace_root());
    cmd
}

/// Whether `program` is on `PATH` (with `$CARGO_HOME/bin`).
pub fn find_program(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&path_with_cargo_bin())
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child left behind holding the command's stdout (`sleep 30 &`) does not hold the
    /// run up past the command's exit and the 2 s after it.
    #[test]
    fn a_stray_child_does_not_hold_up_the_watch() {
        let started = std::time::Instant::now();
        let mut lines = Vec::new();
        Cmd::new("sh")
            .args(["-c", "echo one; sleep 30 & echo two"])
            .run_watching_stdout(|line| lines.push(line.to_string()))
            .unwrap();
        assert_eq!(lines, ["one", "two"]);
        assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    }
}
