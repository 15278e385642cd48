//! Where user code lives: the executable file mappings of processes, with their build IDs,
//! read from `/proc/PID/maps` while each process lives and kept past its exit.
//!
//! Formats that keep addresses need them: pprof's `Mapping` (a binary's load range, the file
//! offset mapped at its start, its build ID) lets Parca, Pyroscope and `go tool pprof` find
//! the very binary again by build ID and turn an address into a file offset
//! (`address - start + file_offset`). The symbolizer reads names; this module reads where
//! they came from. The symbolizer calls [`ProcessMappings::remember`] as it remembers a
//! process, so a process that exits before the profile is written still has its mappings.
//!
//! Only executable file mappings are kept: frames are code. Anonymous executable memory
//! (JIT code) and pseudo files (`[vdso]`) have no file and no mapping. The memory map is
//! parsed by [`crate::procmaps::parse_maps`].

use std::{
    cell::RefCell,
    collections::HashMap,
    fmt::Write as _,
    path::{Path, PathBuf},
    sync::Arc,
};

use blazesym::helper::read_elf_build_id;

use crate::procmaps::{Vma, parse_maps};

/// One executable file mapping of a process (a line of `/proc/PID/maps`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Mapping {
    /// First address mapped.
    pub start: u64,
    /// End of the mapped range (exclusive).
    pub end: u64,
    /// The file offset mapped at `start`.
    pub file_offset: u64,
    /// The file as the process named it (`/usr/lib/x86_64-linux-gnu/libc.so.6`). Shared by
    /// every mapping of the file.
    pub path: Arc<str>,
    /// The file's GNU build ID (`.note.gnu.build-id`), when it has one that could be read.
    pub build_id: Option<Arc<[u8]>>,
}

impl Mapping {
    /// The file offset of `address` (an address inside this mapping).
    pub fn file_offset_of(&self, address: u64) -> u64 {
        address
            .wrapping_sub(self.start)
            .wrapping_add(self.file_offset)
    }

    /// The build ID in lower-case hex (as `readelf -n` and debuginfod spell it), or "".
    pub fn build_id_hex(&self) -> String {
        let mut hex = String::new();
        for byte in self.build_id.iter().flat_map(|id| id.iter()) {
            let _ = write!(hex, "{byte:02x}");
        }
        hex
    }
}

/// The cgroup `pid` runs in, from `/proc/PID/cgroup`: the unified (v2) hierarchy's path
/// (`/system.slice/docker-3f2a….scope`), else the first v1 hierarchy's. `None` when the
/// process is gone or the file says nothing.
pub fn read_cgroup(pid: u32) -> Option<String> {
    parse_cgroup(&std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?)
}

/// The cgroup path in `/proc/PID/cgroup` text (see [`read_cgroup`]).
///
/// ```
/// use tracekit::mappings::parse_cgroup;
/// assert_eq!(
///     parse_cgroup("0::/system.slice/docker-3f2a.scope\n").as_deref(),
///     Some("/system.slice/docker-3f2a.scope")
/// );
/// assert_eq!(parse_cgroup("12:cpu,cpuacct:/docker/3f2a\n1:name=systemd:/x\n").as_deref(), Some("/docker/3f2a"));
/// ```
pub fn parse_cgroup(text: &str) -> Option<String> {
    let entries: Vec<(&str, &str)> = text
        .lines()
        .filter_map(|line| {
            let (id, rest) = line.split_once(':')?;
            let (_, path) = rest.split_once(':')?;
            Some((id, path))
        })
        .collect();
    entries
        .iter()
        .find(|(id, _)| *id == "0")
        .or_else(|| entries.first())
        .map(|(_, path)| path.to_string())
        .filter(|path| !path.is_empty())
}

/// What is known of one process.
#[derive(Clone, Debug, Default)]
struct Known {
    mappings: Vec<Arc<Mapping>>,
    cgroup: Option<String>,
}

/// The executable mappings (and cgroups) of processes, read while they live and kept until
/// [`ProcessMappings::forget`]. Build IDs are read once per file, and a file's path and build
/// ID are shared by every process that maps it.
///
/// Memory grows with the processes remembered (about 70 bytes per executable mapping, a
/// few per process, plus its cgroup path): a long-running caller (the exporter) forgets
/// the processes it no longer needs.
#[derive(Debug, Default)]
pub struct ProcessMappings {
    inner: RefCell<Inner>,
}

/// A file's path and build ID, shared by its mappings.
type SharedFile = (Arc<str>, Option<Arc<[u8]>>);

#[derive(Debug, Default)]
struct Inner {
    processes: HashMap<u32, Known>,
    /// Files by (device, inode, path): their shared path and build ID, read once.
    files: HashMap<(u64, u64, PathBuf), SharedFile>,
}

impl ProcessMappings {
    /// Reads (again, after an `exec` or a new mapping) the mappings of live process `pid`.
    /// Returns false when its memory map could not be read (gone, or not permitted).
    pub fn remember(&self, pid: u32) -> bool {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
            return false;
        };
        let vmas: Vec<Vma> = parse_maps(&text)
            .into_iter()
            .filter(|vma| vma.executable && vma.path.is_some())
            .collect();
        if vmas.is_empty() {
            // An exiting process shows an empty map: keep what an earlier read found.
            return false;
        }
        let mut inner = self.inner.borrow_mut();
        let mut mappings = Vec::with_capacity(vmas.len());
        for vma in vmas {
            let path = vma.path.clone().expect("filtered above");
            let (shared_path, build_id) = inner
                .files
                .entry((vma.dev, vma.inode, path.clone()))
                .or_insert_with(|| {
                    let build_id = build_id_of(pid, &vma, &path).map(Arc::from);
                    (Arc::from(path.to_string_lossy().as_ref()), build_id)
                })
                .clone();
            mappings.push(Arc::new(Mapping {
                start: vma.start,
                end: vma.end,
                file_offset: vma.offset,
                path: shared_path,
                build_id,
            }));
        }
        mappings.sort_by_key(|m| m.start);
        let cgroup = read_cgroup(pid);
        inner.processes.insert(pid, Known { mappings, cgroup });
        true
    }

    /// The mapping of process `pid` that holds `address`. A live process never remembered is
    /// read now (once).
    pub fn lookup(&self, pid: u32, address: u64) -> Option<Arc<Mapping>> {
        if !self.inner.borrow().processes.contains_key(&pid) && !self.remember(pid) {
            // Not readable: remember that, so each frame does not try again.
            self.inner
                .borrow_mut()
                .processes
                .insert(pid, Known::default());
        }
        let inner = self.inner.borrow();
        let mappings = &inner.processes.get(&pid)?.mappings;
        let index = mappings.partition_point(|m| m.start <= address);
        let mapping = mappings.get(index.checked_sub(1)?)?;
        (address < mapping.end).then(|| Arc::clone(mapping))
    }

    /// The cgroup process `pid` was in when it was remembered.
    pub fn cgroup(&self, pid: u32) -> Option<String> {
        self.inner.borrow().processes.get(&pid)?.cgroup.clone()
    }

    /// Drops what is known of `pid`.
    pub fn forget(&self, pid: u32) {
        self.inner.borrow_mut().processes.remove(&pid);
    }

    /// Drops the paths and build IDs of files no remembered process maps any more (after
    /// [`ProcessMappings::forget`]), so a long run under churn holds only live processes'.
    pub fn prune(&self) {
        self.inner
            .borrow_mut()
            .files
            .retain(|_, (path, _)| Arc::strong_count(path) > 1);
    }
}

/// The build ID of a mapped file: through `/proc/PID/map_files` (the very file mapped, also
/// from another mount namespace or deleted), else its path.
fn build_id_of(pid: u32, vma: &Vma, path: &Path) -> Option<Vec<u8>> {
    let map_file = PathBuf::from(format!(
        "/proc/{pid}/map_files/{:x}-{:x}",
        vma.start, vma.end
    ));
    [map_file.as_path(), path]
        .into_iter()
        .find_map(|path| read_elf_build_id(path).ok().flatten())
        .map(|id| id.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_offsets_and_hex_build_ids() {
        let mapping = Mapping {
            start: 0x5000,
            end: 0x6000,
            file_offset: 0x1000,
            path: "/bin/x".into(),
            build_id: Some(Arc::from([0xab, 0x01, 0xff])),
        };
        assert_eq!(mapping.file_offset_of(0x5123), 0x1123);
        assert_eq!(mapping.build_id_hex(), "ab01ff");
    }

    /// This test binary's own code: found by address, with the build ID `readelf -n` shows
    /// (rustc passes `--build-id` to the linker on Linux).
    #[test]
    fn looks_up_own_code() {
        let mappings = ProcessMappings::default();
        let pid = std::process::id();
        assert!(mappings.remember(pid));
        let addr = looks_up_own_code as *const () as u64;
        let mapping = mappings.lookup(pid, addr).expect("own code is mapped");
        assert!(mapping.start <= addr && addr < mapping.end);
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        assert_eq!(Path::new(&*mapping.path), exe);
        let expected = read_elf_build_id(&exe).unwrap().unwrap();
        assert_eq!(mapping.build_id.as_deref(), Some(&*expected));
        // A second read shares the file's path and build ID.
        assert!(mappings.remember(pid));
        let again = mappings.lookup(pid, addr).unwrap();
        assert!(Arc::ptr_eq(&again.path, &mapping.path));
        assert!(mappings.lookup(pid, 8).is_none());
        assert!(mappings.cgroup(pid).is_some());
    }

    /// Files stay known while a remembered process maps them, and only then.
    #[test]
    fn prune_keeps_only_files_still_mapped() {
        let mappings = ProcessMappings::default();
        let pid = std::process::id();
        assert!(mappings.remember(pid));
        let files = || mappings.inner.borrow().files.len();
        let mapped = files();
        assert!(mapped > 0);
        mappings.prune();
        assert_eq!(files(), mapped);
        mappings.forget(pid);
        mappings.prune();
        assert_eq!(files(), 0);
    }
}
