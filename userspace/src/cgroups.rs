//! Cgroup v2 ids to paths, for `--by cgroup` (containers, systemd services), and paths to
//! ids and levels, for `--cgroup PATH`.
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

/// A cgroup v2 subtree the kernel programs keep events of (`--cgroup PATH`): a task is in
/// it when its ancestor at `level` is `id` (`bpf_get_current_ancestor_cgroup_id`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CgroupFilter {
    /// The cgroup's id: its directory's inode number in the cgroup2 filesystem.
    pub id: u64,
    /// Its depth below the hierarchy's root (the root is 0, `/system.slice` 1).
    pub level: u32,
}

/// The depth of `dir` below `root`, both canonical paths: 0 for the root itself; `None`
/// when `dir` is not under `root`.
pub fn level_below(root: &Path, dir: &Path) -> Option<u32> {
    let rest = dir.strip_prefix(root).ok()?;
    u32::try_from(rest.components().count()).ok()
}

/// The subtree `--cgroup PATH` names: PATH is a directory of the cgroup2 filesystem
/// (`/sys/fs/cgroup/system.slice/nginx.service`), a path from the hierarchy's root as
/// `--by cgroup` and `/proc/PID/cgroup` show it (`/system.slice/nginx.service`), or a
/// Kubernetes pod UID or container ID (at least 12 digits of it), found by the names the
/// kubelet and the runtimes give their cgroups ([`crate::containers`]).
///
/// # Errors
/// A usage error (one line) when no cgroup2 filesystem is mounted, or PATH is not a
/// directory of it (naming where it is mounted).
pub fn resolve_filter(path: &Path) -> crate::Result<CgroupFilter> {
    let shown = crate::error::quote(&path.to_string_lossy());
    let Some(root) = cgroup2_root() else {
        return Err(crate::Error::usage(format!(
            "--cgroup {shown}: no cgroup2 filesystem is mounted (cgroup v2 is needed: \
             mount -t cgroup2 none /sys/fs/cgroup)"
        )));
    };
    let root = root.canonicalize().unwrap_or(root);
    let not_cgroup = || {
        crate::Error::usage(format!(
            "--cgroup {shown}: not a cgroup v2 directory; cgroup2 is mounted at {} (give a \
             directory under it, like {})",
            root.display(),
            root.join("system.slice").display()
        ))
    };
    let mut candidates = vec![
        path.to_path_buf(),
        root.join(path.to_string_lossy().trim_start_matches('/')),
    ];
    // A pod UID or a container ID (or 12 digits or more of one) names the cgroup the
    // kubelet or the runtime made for it.
    let text = path.to_string_lossy();
    if !candidates.iter().any(|c| c.is_dir()) && crate::containers::looks_like_id(&text) {
        match crate::containers::find_cgroup(&root, &text) {
            Some(dir) => candidates.push(dir),
            None => {
                return Err(crate::Error::usage(format!(
                    "--cgroup {shown}: no cgroup under {} is named after this pod or \
                     container ID",
                    root.display()
                )));
            }
        }
    }
    let root_dev = std::fs::metadata(&root).map_err(|_| not_cgroup())?.dev();
    for candidate in candidates {
        let Ok(dir) = candidate.canonicalize() else {
            continue;
        };
        let Ok(metadata) = std::fs::metadata(&dir) else {
            continue;
        };
        // Under the mount and on its filesystem (not another one mounted below it).
        if let Some(level) = level_below(&root, &dir)
            && metadata.is_dir()
            && metadata.dev() == root_dev
        {
            return Ok(CgroupFilter {
                id: metadata.ino(),
                level,
            });
        }
    }
    Err(not_cgroup())
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

    #[test]
    fn levels_below_the_mount() {
        let root = Path::new("/sys/fs/cgroup");
        assert_eq!(level_below(root, root), Some(0));
        assert_eq!(
            level_below(root, Path::new("/sys/fs/cgroup/system.slice")),
            Some(1)
        );
        assert_eq!(
            level_below(root, Path::new("/sys/fs/cgroup/system.slice/nginx.service")),
            Some(2)
        );
        assert_eq!(level_below(root, Path::new("/sys/fs")), None);
        assert_eq!(level_below(root, Path::new("/sys/fs/cgroupx/a")), None);
    }

    /// `--cgroup` takes a cgroup2 directory or its path from the hierarchy's root, and
    /// refuses other paths with one line naming the mount.
    #[test]
    fn filters_resolve_to_inode_and_depth() {
        let (Some(root), Some(own)) = (cgroup2_root(), process_cgroup(std::process::id())) else {
            eprintln!("skipped: no cgroup2 filesystem mounted here");
            return;
        };
        let dir = root.join(own.trim_start_matches('/'));
        let expected = CgroupFilter {
            id: std::fs::metadata(&dir).unwrap().ino(),
            level: own.split('/').filter(|part| !part.is_empty()).count() as u32,
        };
        assert_eq!(resolve_filter(&dir).unwrap(), expected);
        assert_eq!(resolve_filter(Path::new(&own)).unwrap(), expected);
        assert_eq!(resolve_filter(&root).unwrap().level, 0);
        assert_eq!(
            resolve_filter(Path::new("/proc")).unwrap_err().to_string(),
            format!(
                "--cgroup /proc: not a cgroup v2 directory; cgroup2 is mounted at {} (give a \
                 directory under it, like {}/system.slice)",
                root.display(),
                root.display()
            )
        );
        assert!(resolve_filter(&root.join("cgroup.procs")).is_err());
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
