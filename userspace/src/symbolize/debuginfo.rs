//! Separate debug files of stripped binaries, found by build ID.
//!
//! The lookup order is perf's and bpftrace's:
//! 1. `/usr/lib/debug/.build-id/xx/rest.debug` (where Debian's `-dbg`/`-dbgsym` packages
//!    and most distributions install them);
//! 2. the debuginfod servers in `$DEBUGINFOD_URLS` (space-separated), through the
//!    `debuginfod` crate, unless [`DebugInfoOptions::offline`]. Downloads are cached under
//!    `$XDG_CACHE_HOME/tracekit/debuginfod/BUILDID/debuginfo` (`~/.cache/...` without
//!    `XDG_CACHE_HOME`), so a second run needs no network.
//!
//! Servers only get asked about binaries without a symbol table (`.symtab`): a binary with
//! one already names its functions. A slow or dead server costs a run at most
//! [`DebugInfoOptions::timeout`] in all: after a failed request (not a 404) no more requests
//! are made.

use std::{
    cell::Cell,
    collections::HashMap,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use blazesym::helper::read_elf_build_id;

/// Where and how to look for debug files.
#[derive(Clone, Debug)]
pub struct DebugInfoOptions {
    /// Directories holding `xx/rest.debug` by build ID. Default:
    /// `/usr/lib/debug/.build-id`.
    pub build_id_dirs: Vec<PathBuf>,
    /// Never ask debuginfod servers (the CLI's `--offline`). Default: false.
    pub offline: bool,
    /// Server base URLs; `None` reads `$DEBUGINFOD_URLS`. Default: `None`.
    pub urls: Option<Vec<String>>,
    /// The most a run waits for servers, over all requests. Default: 5 s
    /// (`$DEBUGINFOD_TIMEOUT` seconds when set, as elfutils' client reads it).
    pub timeout: Duration,
    /// Download cache; `None` is `$XDG_CACHE_HOME/tracekit/debuginfod` (or
    /// `~/.cache/tracekit/debuginfod`). Default: `None`.
    pub cache_dir: Option<PathBuf>,
}

impl Default for DebugInfoOptions {
    fn default() -> Self {
        let timeout = std::env::var("DEBUGINFOD_TIMEOUT")
            .ok()
            .and_then(|secs| secs.trim().parse::<u64>().ok())
            .filter(|&secs| secs > 0)
            .map_or(Duration::from_secs(5), Duration::from_secs);
        Self {
            build_id_dirs: vec![PathBuf::from(BUILD_ID_DIR)],
            offline: false,
            urls: None,
            timeout,
            cache_dir: None,
        }
    }
}

/// Where Debian's `-dbg`/`-dbgsym` packages install separate debug files, by build ID.
pub const BUILD_ID_DIR: &str = "/usr/lib/debug/.build-id";

/// Finds separate debug files; remembers its answers per build ID for the run.
#[derive(Debug)]
pub struct DebugInfo {
    options: DebugInfoOptions,
    client: ClientState,
    answers: HashMap<Vec<u8>, Option<PathBuf>>,
    /// Time spent waiting for servers so far.
    waited: Cell<Duration>,
}

#[derive(Debug)]
enum ClientState {
    /// Not built yet (built at the first request).
    Unbuilt,
    /// No servers configured, offline, or given up.
    Off,
    Ready(Box<debuginfod::CachingClient>),
}

impl DebugInfo {
    /// A lookup with `options`; nothing is read or contacted until the first lookup.
    pub fn new(options: DebugInfoOptions) -> Self {
        Self {
            client: if options.offline {
                ClientState::Off
            } else {
                ClientState::Unbuilt
            },
            options,
            answers: HashMap::new(),
            waited: Cell::new(Duration::ZERO),
        }
    }

    /// The separate debug file of the ELF file at `binary`, by its build ID (see the module
    /// docs for the order). `None` when the binary has no build ID or no debug file is found.
    pub fn find(&mut self, binary: &Path) -> Option<PathBuf> {
        let build_id = read_elf_build_id(binary).ok()??.into_owned();
        if let Some(answer) = self.answers.get(&build_id) {
            return answer.clone();
        }
        let mut answer = self.local(&build_id);
        if answer.is_none() && self.may_download() && !has_symbol_table(binary) {
            answer = self.download(&build_id);
        }
        self.answers.insert(build_id, answer.clone());
        answer
    }

    /// Whether servers may still be asked (configured, online, not given up).
    fn may_download(&self) -> bool {
        !matches!(self.client, ClientState::Off)
    }

    /// `DIR/xx/rest.debug` in the first build-ID directory that has it.
    pub fn local(&self, build_id: &[u8]) -> Option<PathBuf> {
        let relative = build_id_path(build_id)?;
        self.options
            .build_id_dirs
            .iter()
            .map(|dir| dir.join(&relative))
            .find(|path| path.is_file())
    }

    /// Asks the debuginfod servers (cached on disk).
    fn download(&mut self, build_id: &[u8]) -> Option<PathBuf> {
        if matches!(self.client, ClientState::Unbuilt) {
            self.client = self.build_client();
        }
        let ClientState::Ready(client) = &self.client else {
            return None;
        };
        let hex = hex(build_id);
        let started = Instant::now();
        let result = client.fetch_debug_info(&debuginfod::BuildId::raw(build_id.to_vec()));
        let elapsed = started.elapsed();
        self.waited.set(self.waited.get() + elapsed);
        match result {
            Ok(Some(path)) => {
                log::debug!("debuginfod: {hex} -> {} in {elapsed:?}", path.display());
                Some(path)
            }
            Ok(None) => {
                log::debug!("debuginfod: no debug info for {hex} ({elapsed:?})");
                self.give_up_if_out_of_time();
                None
            }
            Err(err) => {
                log::warn!(
                    "debuginfod: giving up for this run after a failed request for build ID {hex}: {err:#}"
                );
                self.client = ClientState::Off;
                None
            }
        }
    }

    fn give_up_if_out_of_time(&mut self) {
        if self.waited.get() >= self.options.timeout {
            log::warn!(
                "debuginfod: {:?} spent waiting for servers; no more requests this run",
                self.waited.get()
            );
            self.client = ClientState::Off;
        }
    }

    fn build_client(&self) -> ClientState {
        let urls: Vec<String> = match &self.options.urls {
            Some(urls) => urls.clone(),
            None => std::env::var("DEBUGINFOD_URLS")
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_string)
                .collect(),
        };
        if urls.is_empty() {
            return ClientState::Off;
        }
        let http = match debuginfod::reqwest::blocking::Client::builder()
            .connect_timeout(self.options.timeout)
            .timeout(self.options.timeout)
            .build()
        {
            Ok(http) => http,
            Err(err) => {
                log::warn!("debuginfod: no HTTP client: {err}");
                return ClientState::Off;
            }
        };
        let client = match debuginfod::Client::builder()
            .http_client(http)
            .build(urls.iter().map(String::as_str))
        {
            Ok(Some(client)) => client,
            Ok(None) => return ClientState::Off,
            Err(err) => {
                log::warn!("debuginfod: bad server URL in {urls:?}: {err:#}");
                return ClientState::Off;
            }
        };
        let Some(cache_dir) = self.options.cache_dir.clone().or_else(default_cache_dir) else {
            log::warn!("debuginfod: no cache directory (neither XDG_CACHE_HOME nor HOME is set)");
            return ClientState::Off;
        };
        match debuginfod::CachingClient::new(client, &cache_dir) {
            Ok(client) => {
                log::debug!("debuginfod: {urls:?}, cache {}", cache_dir.display());
                ClientState::Ready(Box::new(client))
            }
            Err(err) => {
                log::warn!("debuginfod: cache {}: {err:#}", cache_dir.display());
                ClientState::Off
            }
        }
    }
}

/// `$XDG_CACHE_HOME/tracekit/debuginfod`, or `$HOME/.cache/tracekit/debuginfod`.
pub fn default_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|dir| !dir.is_empty())
                .map(|home| PathBuf::from(home).join(".cache"))
        })?;
    Some(base.join("tracekit").join("debuginfod"))
}

/// `xx/rest.debug` for a build ID (lowercase hex), as debug directories lay them out.
///
/// ```
/// use tracekit::symbolize::debuginfo::build_id_path;
/// assert_eq!(build_id_path(&[0xab, 0x01, 0xff]).unwrap().to_str(), Some("ab/01ff.debug"));
/// assert_eq!(build_id_path(&[]), None);
/// ```
pub fn build_id_path(build_id: &[u8]) -> Option<PathBuf> {
    let (first, rest) = build_id.split_first()?;
    Some(PathBuf::from(format!("{first:02x}/{}.debug", hex(rest))))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Whether the ELF file at `path` has a `.symtab` section (is not stripped). Unreadable
/// files count as having one (nothing to look up for them).
pub fn has_symbol_table(path: &Path) -> bool {
    use object::{Object as _, ObjectSection as _, read::ReadCache};
    let Ok(file) = std::fs::File::open(path) else {
        return true;
    };
    let cache = ReadCache::new(file);
    match object::File::parse(&cache) {
        Ok(elf) => elf.section_by_name(".symtab").is_some_and(|s| s.size() > 0),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripped_and_unstripped() {
        // The test binary itself keeps its symbol table.
        assert!(has_symbol_table(Path::new("/proc/self/exe")));
        // Debian strips its binaries.
        if Path::new("/usr/bin/ls").exists() {
            assert!(!has_symbol_table(Path::new("/usr/bin/ls")));
        }
    }

    #[test]
    fn offline_never_builds_a_client() {
        let mut lookup = DebugInfo::new(DebugInfoOptions {
            offline: true,
            urls: Some(vec!["http://127.0.0.1:9/".into()]),
            build_id_dirs: vec![],
            ..DebugInfoOptions::default()
        });
        assert_eq!(lookup.find(Path::new("/usr/bin/ls")), None);
        assert!(matches!(lookup.client, ClientState::Off));
    }

    #[test]
    fn a_dead_server_is_asked_once() {
        // Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
        let cache = std::env::temp_dir().join(format!("tk-debuginfod-{}", std::process::id()));
        let mut lookup = DebugInfo::new(DebugInfoOptions {
            urls: Some(vec!["http://127.0.0.1:9/".into()]),
            build_id_dirs: vec![],
            cache_dir: Some(cache.clone()),
            timeout: Duration::from_secs(2),
            ..DebugInfoOptions::default()
        });
        let started = Instant::now();
        assert_eq!(lookup.find(Path::new("/usr/bin/ls")), None);
        assert!(
            matches!(lookup.client, ClientState::Off),
            "{:?}",
            lookup.client
        );
        assert_eq!(lookup.find(Path::new("/usr/bin/cat")), None);
        assert!(started.elapsed() < Duration::from_secs(2));
        let _ = std::fs::remove_dir_all(cache);
    }
}
