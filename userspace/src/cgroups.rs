//! Cgroup v2 ids to paths, for `--by cgroup` (containers, systemd services).
//!
//! The kernel side keys by `bpf_get_current_cgroup_id()`: the id of the task's cgroup in
//! the v2 hierarchy, which is the inode number of the cgroup's directory in the cgroup2
//! filesystem. Userspace names it by walking that filesystem (where this machine mounts it:
//! `/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on hybrid setups) for the directory with
//! that inode number, and shows its path from the hierarchy's root (`/`,
//! `/system.slice/nginx.service`, `/docker/ID`), the path `/proc/PID/cgroup` shows on its
//! `0::` line. The walk is cached and redone (at most once a second) for ids it did not
//! find; a cgroup removed before the report shows as `cgroup ID`.

use std::{
    cell::RefCell,
    collections::HashMap,
    os::unix::fs::MetadataExt as _,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

/// How often the hierarchy is walked again for an id not found.
const REWALK: Duration = Duration::from_secs(1);

/// Where the cgroup2 filesystem is mounted in this mount namespace, from
/// `/proc/self/mountinfo`; `None` when it is not mounted.
pub fn cgroup2_root() -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mountinfo.lines().find_map(|line| {
        // `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS... - FSTYPE SOURCE SUPER`
        let (left, right) = line.split_once(" - ")?;
        let fstype = right.split_whitespace().next()?;
        let mount_point = left.split_whitespace().nth(4)?;
        (fstype == "cgroup2").then(|| PathBuf::from(unescape(mount_point)))
    })
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest.get(at + 1..at + 4);
        match code.and_then(|c| u8::from_str_radix(c, 8).ok()) {
            Some(byte) => {
                out.push(char::from(byte));
                rest = &rest[at + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The cgroup v2 path of process `pid` (its `0::PATH` line of `/proc/PID/cgroup`).
pub fn process_cgroup(pid: u32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix("0::"))
        .map(str::to_string)
}

/// Every cgroup under `root` (a cgroup2 mount) by id (directory inode number), with its
/// path from the root (`/` for the root itself).
pub fn walk(root: &Path) -> HashMap<u64, String> {
    let mut ids = HashMap::new();
    let mut pending = vec![(root.to_path_buf(), String::from("/"))];
    while let Some((dir, shown)) = pending.pop() {
        let Ok(metadata) = std::fs::metadata(&dir) else {
            continue;
        };
        ids.insert(metadata.ino(), shown.clone());
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                let name = entry.file_name().to_string_lossy().into_owned();
                let child = if shown == "/" {
                    format!("/{name}")
                } else {
                    format!("{shown}/{name}")
                };
                pending.push((entry.path(), child));
            }
        }
    }
    ids
}

/// Ids seen so far and when the hierarchy was last walked.
#[derive(Default)]
struct Cache {
    ids: HashMap<u64, String>,
    walked: Option<Instant>,
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

/// The path of the cgroup with v2 id `id` (see the module docs), or `cgroup ID` when no
/// cgroup has it (any more).
pub fn path(id: u64) -> String {
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if !cache.ids.contains_key(&id) && cache.walked.is_none_or(|t| t.elapsed() >= REWALK) {
            cache.walked = Some(Instant::now());
            if let Some(root) = cgroup2_root() {
                let found = walk(&root);
                cache.ids.extend(found);
            }
        }
        cache
            .ids
            .get(&id)
            .cloned()
            .unwrap_or_else(|| format!("cgroup {id}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes() {
        assert_eq!(unescape(r"/mnt/my\040dir"), "/mnt/my dir");
        assert_eq!(unescape(r"/plain"), "/plain");
        assert_eq!(unescape(r"/odd\x"), r"/odd\x");
    }

    /// This process's cgroup, found by the inode of its directory, has the path
    /// `/proc/self/cgroup` gives.
    #[test]
    fn own_cgroup_by_inode() {
        let (Some(root), Some(own)) = (cgroup2_root(), process_cgroup(std::process::id())) else {
            eprintln!("skipped: no cgroup2 filesystem mounted here");
            return;
        };
        let dir = root.join(own.trim_start_matches('/'));
        let id = std::fs::metadata(&dir).unwrap().ino();
        assert_eq!(path(id), own);
        assert_eq!(path(u64::MAX), format!("cgroup {}", u64::MAX));
    }
}
