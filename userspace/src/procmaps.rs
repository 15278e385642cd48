//! What a process has mapped, kept so it can be read after the process exits and from any
//! mount namespace.
//!
//! `/proc/PID/maps` names files by their paths in the process's own mount namespace: in a
//! container (`docker run`, `unshare -m` with a private tmpfs) those paths do not exist, or
//! name other files, in ours. While the process lives, `/proc/PID/map_files/START-END` opens
//! the very file mapped there (what perf and blazesym use); once it exits, nothing under
//! `/proc/PID` is left. So [`ProcessFiles::capture`] opens, while the process lives, each
//! executable mapping whose path does not lead to the same file from here and keeps the
//! descriptor; the process's root directory too, to find its perf map
//! (`/tmp/perf-NSPID.map`, `NSPID` its pid in its own namespace).
//!
//! The file offsets of a mapping turn into ELF addresses (what `addr2line -e`, `nm` and
//! `gdb` take) with [`elf_address`], for frames without a symbol.

use std::{
    collections::HashMap,
    fs::File,
    os::{
        fd::{AsRawFd as _, FromRawFd as _, OwnedFd},
        unix::fs::MetadataExt as _,
    },
    path::{Path, PathBuf},
    sync::Arc,
};

/// One line of `/proc/PID/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vma {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// Offset in the file of `start`, in bytes.
    pub offset: u64,
    /// Whether the mapping is executable.
    pub executable: bool,
    /// Device (`major:minor`) of the file, as the kernel encodes `st_dev`.
    pub dev: u64,
    /// Inode of the file; 0 for anonymous memory.
    pub inode: u64,
    /// The path (in the process's mount namespace) without ` (deleted)`; `None` for
    /// anonymous memory and pseudo files (`[heap]`, `[vdso]`).
    pub path: Option<PathBuf>,
    /// Whether the kernel marked the path ` (deleted)`.
    pub deleted: bool,
}

/// Parses `/proc/PID/maps`; malformed lines are skipped.
///
/// ```
/// use tracekit::procmaps::parse_maps;
/// let vmas = parse_maps(
///     "55d0c0a00000-55d0c0a01000 r-xp 00001000 fd:01 1234  /mnt/my app (deleted)\n\
///      7ffd1a3f0000-7ffd1a3f2000 r-xp 00000000 00:00 0  [vdso]\n",
/// );
/// assert_eq!(vmas[0].path.as_deref(), Some(std::path::Path::new("/mnt/my app")));
/// assert!(vmas[0].deleted && vmas[0].executable);
/// assert_eq!((vmas[0].offset, vmas[0].inode), (0x1000, 1234));
/// assert_eq!(vmas[1].path, None);
/// ```
pub fn parse_maps(text: &str) -> Vec<Vma> {
    text.lines().filter_map(parse_maps_line).collect()
}

fn parse_maps_line(line: &str) -> Option<Vma> {
    let mut rest = line;
    let mut field = || {
        let trimmed = rest.trim_start();
        let end = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
        let (word, tail) = trimmed.split_at(end);
        rest = tail;
        Some(word).filter(|w| !w.is_empty())
    };
    let range = field()?;
    let perms = field()?;
    let offset = field()?;
    let dev = field()?;
    let inode = field()?;
    let (start, end) = range.split_once('-')?;
    let (major, minor) = dev.split_once(':')?;
    let major = u32::from_str_radix(major, 16).ok()?;
    let minor = u32::from_str_radix(minor, 16).ok()?;
    let name = rest.trim();
    let (name, deleted) = match name.strip_suffix(" (deleted)") {
        Some(name) => (name, true),
        None => (name, false),
    };
    Some(Vma {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        offset: u64::from_str_radix(offset, 16).ok()?,
        executable: perms.as_bytes().get(2) == Some(&b'x'),
        dev: libc::makedev(major, minor),
        inode: inode.parse().ok()?,
        path: name.starts_with('/').then(|| PathBuf::from(name)),
        deleted,
    })
}

/// The pid a process has in its own (innermost) pid namespace: the last `NSpid:` field of
/// `/proc/PID/status`, or `pid` itself on kernels without it.
pub fn namespace_pid(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    Some(
        status
            .lines()
            .find_map(|line| line.strip_prefix("NSpid:"))
            .and_then(|ids| ids.split_whitespace().last()?.parse().ok())
            .unwrap_or(pid),
    )
}

/// `PF_KTHREAD` of `include/linux/sched.h`: the task is a kernel thread.
const PF_KTHREAD: u64 = 0x0020_0000;

/// Whether a `/proc/PID/stat` line is a kernel thread's: `PF_KTHREAD` in its flags (field
/// 9, counted after the `(comm)` that may hold spaces and parentheses), None if malformed.
///
/// ```
/// use tracekit::procmaps::stat_is_kernel_thread;
/// assert_eq!(stat_is_kernel_thread("2 (kthreadd) S 0 0 0 0 -1 2129984 0 0"), Some(true));
/// assert_eq!(stat_is_kernel_thread("77 (a) b) S 1 77 77 0 -1 4194560 9"), Some(false));
/// assert_eq!(stat_is_kernel_thread("77 (a"), None);
/// ```
pub fn stat_is_kernel_thread(stat: &str) -> Option<bool> {
    let (_, rest) = stat.rsplit_once(')')?;
    // After the comm: state (3), ppid, pgrp, session, tty_nr, tpgid, flags (9).
    let flags: u64 = rest.split_whitespace().nth(6)?.parse().ok()?;
    Some(flags & PF_KTHREAD != 0)
}

/// The comm of `pid` if it is a kernel thread (runs no user code, maps nothing), else None
/// (a user process, or no such process).
pub fn kernel_thread(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    if !stat_is_kernel_thread(&stat)? {
        return None;
    }
    let comm = stat.split_once('(')?.1.rsplit_once(')')?.0;
    Some(comm.to_string())
}

/// A usage error when every pid of `-p` is a kernel thread, for runs that see only user
/// code: `consequence` says what never happens then (`where uprobe probes fire`).
///
/// # Errors
/// `-p 2: pid 2 (kthreadd) is a kernel thread and runs no user code, CONSEQUENCE; choose
/// a user process`; several pids are named together.
pub fn refuse_kernel_threads(pids: &[u32], consequence: &str) -> crate::Result<()> {
    let mut named = Vec::new();
    for &pid in pids {
        match kernel_thread(pid) {
            Some(comm) => named.push(format!("{pid} ({})", crate::error::quote(&comm))),
            None => return Ok(()),
        }
    }
    let list: Vec<String> = pids.iter().map(u32::to_string).collect();
    let message = match named.as_slice() {
        [] => return Ok(()),
        [one] => format!("pid {one} is a kernel thread and runs no user code"),
        many => format!(
            "pids {} are kernel threads and run no user code",
            many.join(", ")
        ),
    };
    Err(crate::Error::usage(format!(
        "-p {}: {message}, {consequence}; choose a user process",
        list.join(",")
    )))
}

/// Whether `pid` lives in another mount namespace than tracekit (a container).
fn other_mount_namespace(pid: u32) -> bool {
    match (
        std::fs::read_link(format!("/proc/{pid}/ns/mnt")),
        std::fs::read_link("/proc/self/ns/mnt"),
    ) {
        (Ok(theirs), Ok(ours)) => theirs != ours,
        _ => false,
    }
}

/// Opens a directory as an `O_PATH` descriptor (it pins the directory, reads nothing).
fn open_path_dir(path: &Path) -> Option<OwnedFd> {
    use std::os::unix::ffi::OsStrExt as _;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: a valid NUL-terminated path; the returned descriptor is owned below.
    let fd = unsafe {
        libc::open(
            c_path.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    // SAFETY: a fresh descriptor nobody else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens `relative` (no leading `/`) under the directory `dir` for reading.
fn open_at(dir: &OwnedFd, relative: &str) -> Option<File> {
    let c_path = std::ffi::CString::new(relative).ok()?;
    // SAFETY: a valid directory descriptor and NUL-terminated path.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c_path.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    // SAFETY: a fresh descriptor nobody else owns.
    (fd >= 0).then(|| unsafe { File::from_raw_fd(fd) })
}

/// A pidfd for `pid` (Linux 5.3+), readable once the process has exited.
pub fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open(2) takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    // SAFETY: a fresh descriptor nobody else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Whether `pidfd`'s process has exited (poll without waiting).
pub fn pidfd_exited(pidfd: &OwnedFd) -> bool {
    let mut poll = libc::pollfd {
        fd: pidfd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait.
    let ready = unsafe { libc::poll(&mut poll, 1, 0) };
    ready > 0 && poll.revents != 0
}

/// Most unmapped executable file mappings remembered per process ([`ProcessFiles::unmapped`]).
pub const MAX_UNMAPPED: usize = 256;

/// Files kept open for processes that map them, shared between processes by (device, inode).
pub type KeptFiles = HashMap<(u64, u64), Arc<File>>;

/// What is known of one process's mappings, kept past its exit.
#[derive(Debug, Default)]
pub struct ProcessFiles {
    /// The pid tracekit sees.
    pub pid: u32,
    /// The pid the process sees itself as (names its perf map and jitdump).
    pub ns_pid: u32,
    /// Its memory map when last read.
    pub vmas: Vec<Vma>,
    /// Executable file mappings an earlier read had and a later one did not (a library
    /// `dlclose`d: PHP unloads its extensions at exit, after the last samples in them),
    /// oldest first, at most [`MAX_UNMAPPED`]: addresses sampled while they were mapped
    /// are still theirs.
    pub unmapped: Vec<Vma>,
    /// Its root directory, for a process in another mount namespace.
    pub root: Option<OwnedFd>,
    /// Mapped files that no path from tracekit's namespace reaches, by the process's path.
    pub kept: HashMap<PathBuf, Arc<File>>,
    /// Readable once the process exits; only for processes something is kept open for
    /// (a root directory, JIT files), so a system-wide run holds few descriptors.
    pub pidfd: Option<OwnedFd>,
}

impl ProcessFiles {
    /// Reads the memory map of live process `pid` and keeps what is needed to read its
    /// files later (see the module docs). `files` shares descriptors between processes.
    /// Returns `None` when the process is gone or its map is empty (exiting).
    pub fn capture(pid: u32, files: &mut KeptFiles) -> Option<Self> {
        let mut process = Self {
            pid,
            ns_pid: namespace_pid(pid)?,
            ..Self::default()
        };
        if other_mount_namespace(pid) {
            process.root = open_path_dir(Path::new(&format!("/proc/{pid}/root")));
            // To close the root once the process exits.
            process.pidfd = pidfd_open(pid);
        }
        process.update(files).then_some(process)
    }

    /// Re-reads the memory map (after an `exec` or a new executable mapping), keeping the
    /// files kept before. Returns false when the process is gone or its map is empty.
    pub fn update(&mut self, files: &mut KeptFiles) -> bool {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{}/maps", self.pid)) else {
            return false;
        };
        let vmas = parse_maps(&text);
        if vmas.is_empty() {
            return false;
        }
        for vma in vmas.iter().filter(|vma| vma.executable) {
            let Some(path) = &vma.path else { continue };
            if self.kept.contains_key(path) || (!vma.deleted && same_file(path, vma)) {
                continue;
            }
            let key = (vma.dev, vma.inode);
            let file = match files.get(&key) {
                Some(file) => Arc::clone(file),
                None => {
                    let map_file =
                        format!("/proc/{}/map_files/{:x}-{:x}", self.pid, vma.start, vma.end);
                    match File::open(&map_file) {
                        Ok(file) => {
                            let file = Arc::new(file);
                            files.insert(key, Arc::clone(&file));
                            file
                        }
                        Err(err) => {
                            log::debug!("keeping {map_file} ({}): {err}", path.display());
                            continue;
                        }
                    }
                }
            };
            log::debug!(
                "pid {}: kept {} (not reachable from this mount namespace)",
                self.pid,
                path.display()
            );
            self.kept.insert(path.clone(), file);
        }
        self.replace_vmas(vmas);
        true
    }

    /// Makes `vmas` (a new read, sorted) the memory map, remembering the executable file
    /// mappings of the old one that no new mapping overlaps in [`ProcessFiles::unmapped`],
    /// and forgetting the unmapped ones a new mapping now overlaps. After an `exec` (the
    /// lowest mapping, the executable's, is another file) nothing of the old program is
    /// remembered: its addresses mean nothing in the new one.
    fn replace_vmas(&mut self, vmas: Vec<Vma>) {
        let program = |map: &[Vma]| map.first().map(|vma| (vma.dev, vma.inode));
        if !self.vmas.is_empty() && program(&self.vmas) != program(&vmas) {
            self.unmapped.clear();
            self.vmas = vmas;
            return;
        }
        let overlapped = |old: &Vma| {
            let index = vmas.partition_point(|vma| vma.end <= old.start);
            vmas.get(index).is_some_and(|vma| vma.start < old.end)
        };
        self.unmapped.retain(|old| !overlapped(old));
        let gone = self
            .vmas
            .iter()
            .filter(|old| old.executable && old.path.is_some() && !overlapped(old));
        self.unmapped.extend(gone.cloned());
        let excess = self.unmapped.len().saturating_sub(MAX_UNMAPPED);
        self.unmapped.drain(..excess);
        self.vmas = vmas;
    }

    /// The mapping holding `addr`.
    pub fn vma(&self, addr: u64) -> Option<&Vma> {
        let index = self.vmas.partition_point(|vma| vma.end <= addr);
        self.vmas.get(index).filter(|vma| vma.start <= addr)
    }

    /// The mapping holding `addr`, else the executable file mapping unmapped last that
    /// held it.
    pub fn vma_or_unmapped(&self, addr: u64) -> Option<&Vma> {
        self.vma(addr).or_else(|| {
            self.unmapped
                .iter()
                .rev()
                .find(|vma| vma.start <= addr && addr < vma.end)
        })
    }

    /// A path that opens the file the process mapped at `path` (its own path): the kept
    /// descriptor (`/proc/self/fd/N`), else `path` itself when it exists here.
    pub fn readable_path(&self, path: &Path) -> Option<PathBuf> {
        if let Some(file) = self.kept.get(path) {
            return Some(PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd())));
        }
        path.exists().then(|| path.to_path_buf())
    }

    /// Opens the file at `path_in_process` (absolute, in the process's mount namespace).
    pub fn open_in_root(&self, path_in_process: &str) -> Option<File> {
        match &self.root {
            Some(root) => open_at(root, path_in_process.trim_start_matches('/')),
            None => File::open(path_in_process).ok(),
        }
    }
}

/// Whether `path`, from tracekit's namespace, is the file `vma` maps.
fn same_file(path: &Path, vma: &Vma) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| meta.ino() == vma.inode && meta.dev() == vma.dev)
}

/// The ELF virtual address of `file_offset` in the ELF file at `path` (through its
/// `PT_LOAD` program headers), as `addr2line -e`, `nm` and `gdb` number code. `None` when
/// the file is not ELF or no segment holds the offset.
pub fn elf_address(path: &Path, file_offset: u64) -> Option<u64> {
    segment_address(&load_segments(path)?, file_offset)
}

/// The ELF virtual address of `file_offset` through `segments` ([`load_segments`]).
pub fn segment_address(segments: &[LoadSegment], file_offset: u64) -> Option<u64> {
    segments
        .iter()
        .find(|segment| {
            file_offset >= segment.offset && file_offset - segment.offset < segment.file_size
        })
        .map(|segment| file_offset - segment.offset + segment.vaddr)
}

/// A `PT_LOAD` program header: file bytes `offset..offset + file_size` are loaded at ELF
/// virtual address `vaddr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadSegment {
    offset: u64,
    vaddr: u64,
    file_size: u64,
}

/// The `PT_LOAD` segments of a 64-bit ELF file, from its first 64 KiB (where linkers put
/// the program headers). `None` when the file does not open or is not 64-bit ELF.
pub fn load_segments(path: &Path) -> Option<Vec<LoadSegment>> {
    use object::{
        Endianness,
        elf::{FileHeader64, PT_LOAD},
        read::elf::{FileHeader as _, ProgramHeader as _},
    };
    use std::io::Read as _;
    let mut head = Vec::with_capacity(64 * 1024);
    File::open(path)
        .ok()?
        .take(64 * 1024)
        .read_to_end(&mut head)
        .ok()?;
    let header = FileHeader64::<Endianness>::parse(&*head).ok()?;
    let endian = header.endian().ok()?;
    let segments = header.program_headers(endian, &*head).ok()?;
    Some(
        segments
            .iter()
            .filter(|segment| segment.p_type(endian) == PT_LOAD)
            .map(|segment| LoadSegment {
                offset: segment.p_offset(endian),
                vaddr: segment.p_vaddr(endian),
                file_size: segment.p_filesz(endian),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines() {
        let vmas = parse_maps(
            "00400000-00401000 r--p 00000000 08:02 17  /usr/bin/x\n\
             00401000-00402000 r-xp 00001000 08:02 17  /usr/bin/x\n\
             7f0000000000-7f0000001000 rwxp 00000000 00:00 0 \n\
             garbage\n",
        );
        assert_eq!(vmas.len(), 3);
        assert_eq!(vmas[1].start, 0x401000);
        assert_eq!(vmas[1].dev, libc::makedev(8, 2));
        assert!(!vmas[0].executable && vmas[1].executable && vmas[2].executable);
        assert_eq!(vmas[2].path, None);
        let process = ProcessFiles {
            vmas,
            ..ProcessFiles::default()
        };
        assert_eq!(process.vma(0x401800).map(|v| v.offset), Some(0x1000));
        assert_eq!(process.vma(0x402000), None);
        assert_eq!(process.vma(0x3fffff), None);
    }

    /// A library unmapped between two reads (`dlclose`) still holds its addresses; a new
    /// mapping over them replaces it.
    #[test]
    fn unmapped_code_keeps_its_addresses_until_mapped_over() {
        let first = parse_maps(
            "00400000-00401000 r-xp 00001000 08:02 17  /usr/bin/php\n\
             7f0000001000-7f0000003000 r--p 00000000 08:02 20  /usr/lib/tokenizer.so\n\
             7f0000003000-7f0000005000 r-xp 00002000 08:02 20  /usr/lib/tokenizer.so\n",
        );
        let mut process = ProcessFiles::default();
        process.replace_vmas(first.clone());
        assert!(process.unmapped.is_empty());
        process.replace_vmas(first[..1].to_vec());
        // Only the executable mapping is remembered.
        assert_eq!(process.unmapped, vec![first[2].clone()]);
        assert_eq!(process.vma(0x7f0000003800), None);
        let vma = process.vma_or_unmapped(0x7f0000003800).unwrap();
        assert_eq!(
            (vma.start, vma.offset, vma.inode),
            (0x7f0000003000, 0x2000, 20)
        );
        assert_eq!(process.vma_or_unmapped(0x7f0000002000), None);
        assert_eq!(process.vma_or_unmapped(0x7f0000005000), None);
        // Read again unchanged: remembered once.
        process.replace_vmas(first[..1].to_vec());
        assert_eq!(process.unmapped.len(), 1);
        let over = parse_maps(
            "00400000-00401000 r-xp 00001000 08:02 17  /usr/bin/php\n\
             7f0000004000-7f0000006000 r-xp 00000000 08:02 30  /usr/lib/other.so\n",
        );
        process.replace_vmas(over.clone());
        assert!(process.unmapped.is_empty());
        assert_eq!(process.vma_or_unmapped(0x7f0000003800), None);
        assert_eq!(process.vma_or_unmapped(0x7f0000004800), Some(&over[1]));
        // An exec: another program, and the old one's libraries are not remembered.
        process.replace_vmas(first.clone());
        let exec = parse_maps("00400000-00401000 r-xp 00001000 08:02 99  /usr/bin/other\n");
        process.replace_vmas(exec);
        assert!(process.unmapped.is_empty());
        assert_eq!(process.vma_or_unmapped(0x7f0000003800), None);
    }

    #[test]
    fn unmapped_code_is_bounded() {
        let program = parse_maps("00400000-00401000 r-xp 00001000 08:02 17  /usr/bin/x\n");
        let mut process = ProcessFiles::default();
        for i in 0..MAX_UNMAPPED as u64 + 10 {
            let start = 0x7f0000000000 + i * 0x1000;
            let plugin = Vma {
                start,
                end: start + 0x1000,
                offset: 0,
                executable: true,
                dev: 1,
                inode: i + 1,
                path: Some(PathBuf::from(format!("/lib/plugin{i}.so"))),
                deleted: false,
            };
            process.replace_vmas([program.clone(), vec![plugin]].concat());
        }
        process.replace_vmas(program);
        assert_eq!(process.unmapped.len(), MAX_UNMAPPED);
        // The oldest went first.
        assert_eq!(process.unmapped[0].inode, 11);
        assert_eq!(
            process.unmapped.last().unwrap().inode,
            MAX_UNMAPPED as u64 + 10
        );
    }

    #[test]
    fn own_process_is_captured_and_its_code_has_elf_addresses() {
        let mut files = KeptFiles::new();
        let pid = std::process::id();
        let process = ProcessFiles::capture(pid, &mut files).expect("own process");
        assert_eq!(process.ns_pid, pid);
        assert!(process.root.is_none() && process.kept.is_empty());
        let addr = own_process_is_captured_and_its_code_has_elf_addresses as *const () as u64;
        let vma = process.vma(addr).expect("own code is mapped");
        let path = vma.path.clone().expect("file-backed");
        let file_offset = addr - vma.start + vma.offset;
        let elf = elf_address(&path, file_offset).expect("ELF address");
        // The test binary is PIE: its ELF addresses are its load address subtracted.
        let base = process
            .vmas
            .iter()
            .find(|v| v.path.as_ref() == Some(&path) && v.offset == 0)
            .expect("first mapping")
            .start;
        assert_eq!(elf, addr - base);
    }

    #[test]
    fn not_elf_has_no_addresses() {
        assert_eq!(elf_address(Path::new("/proc/self/status"), 0), None);
    }
}
