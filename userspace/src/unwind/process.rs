//! A process's executable mappings, from `/proc/PID/maps`, and how to open the files behind
//! them from outside the process (deleted files, other mount namespaces).

use std::{fs::File, io, path::PathBuf};

/// What backs an executable mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backing {
    /// A file, by the path the process sees (without the ` (deleted)` suffix).
    File {
        path: String,
        /// The file was deleted (or replaced) after it was mapped.
        deleted: bool,
    },
    /// The kernel's vDSO.
    Vdso,
    /// Anonymous memory (JIT compilers), or a pseudo-file like `[heap]`: no unwind tables.
    Anonymous(String),
}

/// One executable mapping of a process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecMapping {
    pub begin: u64,
    pub end: u64,
    /// File offset of `begin`.
    pub offset: u64,
    /// Device (`major:minor` as printed) and inode of the file; inode 0 for no file.
    pub device: String,
    pub inode: u64,
    pub backing: Backing,
}

impl ExecMapping {
    /// A short name for reports: the file's path, `[vdso]`, or the pseudo-file's name.
    pub fn name(&self) -> String {
        match &self.backing {
            Backing::File { path, .. } => path.clone(),
            Backing::Vdso => "[vdso]".into(),
            Backing::Anonymous(name) if name.is_empty() => "[anon]".into(),
            Backing::Anonymous(name) => name.clone(),
        }
    }
}

/// The executable mappings in the text of a `/proc/PID/maps` file, in address order.
/// `[vsyscall]` (kernel-emulated, above user space) is left out.
pub fn parse_maps(text: &str) -> Vec<ExecMapping> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<ExecMapping> {
    // "begin-end perms offset dev inode   path", the path optional and free to hold spaces.
    let mut fields = line.splitn(6, ' ');
    let range = fields.next()?;
    let perms = fields.next()?;
    let offset = fields.next()?;
    let device = fields.next()?;
    let inode = fields.next()?;
    let path = fields.next().unwrap_or("").trim_start();
    if perms.as_bytes().get(2) != Some(&b'x') || path == "[vsyscall]" {
        return None;
    }
    let (begin, end) = range.split_once('-')?;
    let inode: u64 = inode.parse().ok()?;
    let backing = if path == "[vdso]" {
        Backing::Vdso
    } else if inode != 0 && path.starts_with('/') {
        match path.strip_suffix(" (deleted)") {
            Some(path) => Backing::File {
                path: path.to_string(),
                deleted: true,
            },
            None => Backing::File {
                path: path.to_string(),
                deleted: false,
            },
        }
    } else {
        Backing::Anonymous(path.to_string())
    };
    Some(ExecMapping {
        begin: u64::from_str_radix(begin, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        offset: u64::from_str_radix(offset, 16).ok()?,
        device: device.to_string(),
        inode,
        backing,
    })
}

/// The executable mappings of live process `pid`.
pub fn exec_mappings(pid: u32) -> io::Result<Vec<ExecMapping>> {
    Ok(parse_maps(&std::fs::read_to_string(format!(
        "/proc/{pid}/maps"
    ))?))
}

/// Opens the file behind `mapping` of process `pid`: through `/proc/PID/map_files/`, which
/// reaches deleted files and files of other mount namespaces (root only), else through the
/// process's root directory.
pub fn open_mapped_file(pid: u32, mapping: &ExecMapping) -> io::Result<File> {
    let Backing::File { path, .. } = &mapping.backing else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a file"));
    };
    let map_file = PathBuf::from(format!(
        "/proc/{pid}/map_files/{:x}-{:x}",
        mapping.begin, mapping.end
    ));
    File::open(&map_file).or_else(|_| File::open(format!("/proc/{pid}/root{path}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executable_mappings_of_a_maps_file() {
        let text = "\
55d0c8e88000-55d0c8e8a000 r--p 00000000 fe:01 1311 /usr/bin/xz
55d0c8e8a000-55d0c8ea2000 r-xp 00002000 fe:01 1311 /usr/bin/xz
7f3a1c000000-7f3a1c021000 rwxp 00000000 00:00 0 
7f3a1c200000-7f3a1c226000 r-xp 00026000 fe:01 2087 /usr/lib/x86_64-linux-gnu/libc.so.6
7f3a1c300000-7f3a1c302000 r-xp 00001000 00:19 77 /tmp/my lib.so (deleted)
7ffd4a1f0000-7ffd4a1f2000 r-xp 00000000 00:00 0                          [vdso]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
";
        let mappings = parse_maps(text);
        assert_eq!(
            mappings,
            [
                ExecMapping {
                    begin: 0x55d0_c8e8_a000,
                    end: 0x55d0_c8ea_2000,
                    offset: 0x2000,
                    device: "fe:01".into(),
                    inode: 1311,
                    backing: Backing::File {
                        path: "/usr/bin/xz".into(),
                        deleted: false
                    },
                },
                ExecMapping {
                    begin: 0x7f3a_1c00_0000,
                    end: 0x7f3a_1c02_1000,
                    offset: 0,
                    device: "00:00".into(),
                    inode: 0,
                    backing: Backing::Anonymous(String::new()),
                },
                ExecMapping {
                    begin: 0x7f3a_1c20_0000,
                    end: 0x7f3a_1c22_6000,
                    offset: 0x26000,
                    device: "fe:01".into(),
                    inode: 2087,
                    backing: Backing::File {
                        path: "/usr/lib/x86_64-linux-gnu/libc.so.6".into(),
                        deleted: false
                    },
                },
                ExecMapping {
                    begin: 0x7f3a_1c30_0000,
                    end: 0x7f3a_1c30_2000,
                    offset: 0x1000,
                    device: "00:19".into(),
                    inode: 77,
                    backing: Backing::File {
                        path: "/tmp/my lib.so".into(),
                        deleted: true
                    },
                },
                ExecMapping {
                    begin: 0x7ffd_4a1f_0000,
                    end: 0x7ffd_4a1f_2000,
                    offset: 0,
                    device: "00:00".into(),
                    inode: 0,
                    backing: Backing::Vdso,
                },
            ]
        );
        assert_eq!(mappings[1].name(), "[anon]");
    }

    #[test]
    fn own_mappings_open_through_map_files() {
        let pid = std::process::id();
        let mappings = exec_mappings(pid).unwrap();
        let own = mappings
            .iter()
            .find(|m| matches!(&m.backing, Backing::File { .. }))
            .expect("the test binary maps itself");
        assert!(open_mapped_file(pid, own).is_ok());
    }
}
