//! The shared libraries a program is about to map: its `DT_NEEDED` entries, found where
//! the dynamic linker finds them (`DT_RPATH`, `LD_LIBRARY_PATH`, `DT_RUNPATH`, the default
//! directories; `$ORIGIN` expanded). A `-- CMD` held at its `exec` has only its executable
//! and the dynamic linker mapped; building these tables then means its first samples have
//! them too (pyenv's `python3.X` is a 17 KB executable; its interpreter is `libpython`).
//!
//! Only the program's own entries are followed, not theirs (`libpython`'s `libc` is most
//! likely tracekit's own, built already by [`super::UnwindTables::prepare_command`]), and
//! `/etc/ld.so.cache` is not read: a library found only through it is built when the
//! process is announced, as before.

use std::{
    ffi::OsStr,
    os::unix::ffi::OsStrExt as _,
    path::{Path, PathBuf},
};

use object::{
    Endianness,
    elf::{DT_NEEDED, DT_RPATH, DT_RUNPATH},
    read::elf::ElfFile64,
};

/// Where the dynamic linker looks last (Debian's multiarch layout first).
const DEFAULT_DIRS: &[&str] = &[
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
    "/usr/local/lib",
];

/// The libraries (paths as the process sees them) that `exe`, the file of a program at
/// `exe_path` in its own root, names in `DT_NEEDED`, each found in the first directory of
/// the search order that holds it; `root` prefixes every path looked at (`/proc/PID/root`).
/// Empty for a static program or an unreadable file.
pub fn needed_libraries(
    root: &Path,
    exe: &std::fs::File,
    exe_path: &Path,
    ld_library_path: Option<&OsStr>,
) -> Vec<PathBuf> {
    // SAFETY: a read-only private mapping of a file that is being executed (so not
    // written: ETXTBSY).
    let Ok(data) = (unsafe { memmap2::Mmap::map(exe) }) else {
        return Vec::new();
    };
    let Ok(file) = ElfFile64::<Endianness>::parse(&*data) else {
        return Vec::new();
    };
    let endian = file.endian();
    let Ok(table) = file.elf_section_table().dynamic_table(endian, &*data) else {
        return Vec::new();
    };
    let (mut needed, mut rpath, mut runpath) = (Vec::new(), Vec::new(), Vec::new());
    for entry in table.iter() {
        let Ok(text) = entry.string(table.strings()) else {
            continue;
        };
        let text = OsStr::from_bytes(text).to_owned();
        match entry.tag {
            DT_NEEDED => needed.push(text),
            DT_RPATH => rpath.push(text),
            DT_RUNPATH => runpath.push(text),
            _ => {}
        }
    }
    let origin = exe_path.parent().unwrap_or(Path::new("/"));
    let dirs = |lists: &[std::ffi::OsString]| -> Vec<PathBuf> {
        lists
            .iter()
            .flat_map(|list| std::env::split_paths(list).collect::<Vec<_>>())
            .map(|dir| expand_origin(&dir, origin))
            .collect()
    };
    let mut search = Vec::new();
    // DT_RPATH counts only without DT_RUNPATH (ld.so(8)).
    if runpath.is_empty() {
        search.extend(dirs(&rpath));
    }
    if let Some(paths) = ld_library_path {
        search.extend(dirs(&[paths.to_owned()]));
    }
    search.extend(dirs(&runpath));
    search.extend(DEFAULT_DIRS.iter().map(PathBuf::from));
    needed
        .iter()
        .filter_map(|name| {
            if name.as_bytes().contains(&b'/') {
                return Some(expand_origin(Path::new(name), origin));
            }
            search
                .iter()
                .map(|dir| dir.join(name))
                .find(|path| within(root, path).is_file())
        })
        .collect()
}

/// `path` inside `root` (a process's root directory).
pub fn within(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").unwrap_or(path))
}

/// `dir` with `$ORIGIN` (or `${ORIGIN}`) replaced by `origin`.
fn expand_origin(dir: &Path, origin: &Path) -> PathBuf {
    let text = dir.as_os_str().as_bytes();
    let origin = origin.as_os_str().as_bytes();
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix(b"${ORIGIN}") {
            out.extend_from_slice(origin);
            rest = after;
        } else if let Some(after) = rest.strip_prefix(b"$ORIGIN") {
            out.extend_from_slice(origin);
            rest = after;
        } else {
            out.push(rest[0]);
            rest = &rest[1..];
        }
    }
    PathBuf::from(OsStr::from_bytes(&out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_is_expanded() {
        let origin = Path::new("/opt/py/bin");
        assert_eq!(
            expand_origin(Path::new("$ORIGIN/../lib"), origin),
            PathBuf::from("/opt/py/bin/../lib")
        );
        assert_eq!(
            expand_origin(Path::new("${ORIGIN}/x:/y"), origin),
            PathBuf::from("/opt/py/bin/x:/y")
        );
        assert_eq!(
            expand_origin(Path::new("/usr/lib"), origin),
            PathBuf::from("/usr/lib")
        );
    }

    /// The test binary's own libc is found where the dynamic linker found it.
    #[test]
    fn own_libc_is_found() {
        let exe = std::fs::File::open("/proc/self/exe").unwrap();
        let exe_path = std::fs::read_link("/proc/self/exe").unwrap();
        let found = needed_libraries(Path::new("/"), &exe, &exe_path, None);
        let libc = found
            .iter()
            .find(|path| path.file_name() == Some(OsStr::new("libc.so.6")))
            .unwrap_or_else(|| panic!("no libc.so.6 among {found:?}"));
        let mapped = std::fs::read_to_string("/proc/self/maps").unwrap();
        let canonical = std::fs::canonicalize(libc).unwrap();
        assert!(
            mapped.contains(canonical.to_str().unwrap()) || mapped.contains(libc.to_str().unwrap()),
            "{libc:?} is not what this process maps"
        );
    }
}
