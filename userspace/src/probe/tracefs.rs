//! tracefs: where it is mounted, and the layout of a tracepoint's record.
//!
//! A tracepoint's record layout is read at run time from
//! `/sys/kernel/tracing/events/<system>/<event>/format`, never compiled in: offsets move
//! between kernels (`sched:sched_process_fork`'s `child_pid` is at 44 on 6.1 and at 20 on
//! 6.18, where the comms became `__data_loc` strings).

use std::{
    fs,
    path::{Path, PathBuf},
};

use crate::{Error, Result};

/// Where tracefs is mounted on current kernels.
pub const TRACEFS: &str = "/sys/kernel/tracing";
/// Where it is reached through debugfs on older setups.
pub const DEBUGFS_TRACING: &str = "/sys/kernel/debug/tracing";

/// The tracefs root, mounting tracefs at [`TRACEFS`] when nothing is mounted (a fresh boot
/// leaves the directory empty).
///
/// # Errors
/// [`Error::Privilege`] naming the capability when tracefs is mounted but this user cannot
/// read it (it is `drwx------ root`: `CAP_DAC_READ_SEARCH` reads it) or when mounting it needs
/// `CAP_SYS_ADMIN`; a runtime error saying how to mount it by hand otherwise.
pub fn root() -> Result<PathBuf> {
    for dir in [TRACEFS, DEBUGFS_TRACING] {
        match fs::metadata(Path::new(dir).join("events")) {
            Ok(meta) if meta.is_dir() => return Ok(PathBuf::from(dir)),
            Err(err) if err.kind() == std::io::ErrorKind::PermissionDenied => {
                return Err(unreadable(dir));
            }
            _ => {}
        }
    }
    if mounted_at(TRACEFS) {
        return Err(unreadable(TRACEFS));
    }
    mount_tracefs().map_err(|err| {
        if err.raw_os_error() == Some(libc::EPERM) {
            Error::Privilege(format!(
                "tracefs is not mounted, and mounting it needs CAP_SYS_ADMIN; mount it as root \
                 with `mount -t tracefs nodev {TRACEFS}`"
            ))
        } else {
            Error::runtime(format!(
                "tracefs is not mounted and mounting it failed ({err}); \
                 mount it with `mount -t tracefs nodev {TRACEFS}`"
            ))
        }
    })?;
    Ok(PathBuf::from(TRACEFS))
}

/// The error for a tracefs this user cannot read.
fn unreadable(dir: &str) -> Error {
    Error::Privilege(format!(
        "tracefs ({dir}) is readable by root only: tracepoints need CAP_DAC_READ_SEARCH too \
         (grant it with `setcap cap_bpf,cap_perfmon,cap_dac_read_search+ep tracekit`, or run \
         as root)"
    ))
}

/// Whether `/proc/self/mountinfo` lists a tracefs mounted at `dir`.
fn mounted_at(dir: &str) -> bool {
    fs::read_to_string("/proc/self/mountinfo").is_ok_and(|info| {
        info.lines().any(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let fs_type = line
                .split(" - ")
                .nth(1)
                .and_then(|rest| rest.split(' ').next());
            fields.get(4) == Some(&dir) && fs_type == Some("tracefs")
        })
    })
}

fn mount_tracefs() -> std::io::Result<()> {
    let target = std::ffi::CString::new(TRACEFS).expect("no NUL in a constant");
    // SAFETY: plain mount(2) with NUL-terminated strings that outlive the call.
    let rc = unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            target.as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// One field of a tracepoint record, as its format file declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// The field's name (`bytes`, `rwbs`, `child_pid`).
    pub name: String,
    /// The C type as declared, without the name and array suffix (`unsigned int`, `char`,
    /// `__data_loc char[]`).
    pub c_type: String,
    /// Byte offset from the start of the record.
    pub offset: u32,
    /// Size in bytes (for arrays, of the whole array).
    pub size: u32,
    /// Whether the kernel says the value is signed.
    pub signed: bool,
    /// Number of elements when the field is a fixed-size array (`char rwbs[8]` gives 8).
    pub array_len: Option<u32>,
}

impl Field {
    /// Whether the field is a `__data_loc` (or `__rel_loc`) dynamic array, usually a string:
    /// the record holds a `u32` whose low 16 bits are the data's offset and high 16 its length.
    pub fn is_dynamic(&self) -> bool {
        self.c_type.starts_with("__data_loc") || self.c_type.starts_with("__rel_loc")
    }

    /// Whether the field holds text: a `char` array, fixed or dynamic.
    pub fn is_string(&self) -> bool {
        let base = self
            .c_type
            .trim_start_matches("__data_loc ")
            .trim_start_matches("__rel_loc ")
            .trim_end_matches("[]");
        base == "char" && (self.array_len.is_some() || self.is_dynamic())
    }

    /// Whether the field is one of the `common_*` fields every record starts with.
    pub fn is_common(&self) -> bool {
        self.name.starts_with("common_")
    }
}

/// The parsed `format` file of one tracepoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFormat {
    /// The event's name (`block_rq_issue`).
    pub name: String,
    /// The event's id (`PERF_TYPE_TRACEPOINT` config).
    pub id: u32,
    /// Every field, the `common_*` ones first, in file order.
    pub fields: Vec<Field>,
}

/// What is wrong with a format file.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("line {line}: {message}")]
pub struct FormatError {
    /// 1-based line number in the format file.
    pub line: usize,
    /// What was expected there.
    pub message: String,
}

impl EventFormat {
    /// Reads `events/<system>/<event>/format` under the tracefs root.
    pub fn read(tracefs: &Path, system: &str, event: &str) -> Result<Self> {
        let path = tracefs
            .join("events")
            .join(system)
            .join(event)
            .join("format");
        let text = fs::read_to_string(&path).map_err(|err| {
            if err.kind() == std::io::ErrorKind::NotFound {
                Error::usage(format!(
                    "unknown tracepoint {}",
                    crate::error::quote(&format!("{system}:{event}"))
                ))
            } else {
                Error::runtime(format!(
                    "reading {}: {err}",
                    crate::error::quote(&path.to_string_lossy())
                ))
            }
        })?;
        Self::parse(&text)
            .map_err(|err| Error::runtime(format!("parsing {}: {err}", path.display())))
    }

    /// Parses the text of a format file.
    ///
    /// ```
    /// let text = "name: sched_process_exec\nID: 365\nformat:\n\
    ///     \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\
    ///     \tfield:pid_t pid;\toffset:12;\tsize:4;\tsigned:1;\n\nprint fmt: \"pid=%d\"\n";
    /// let format = tracekit::probe::tracefs::EventFormat::parse(text).unwrap();
    /// assert_eq!(format.field("pid").unwrap().offset, 12);
    /// ```
    pub fn parse(text: &str) -> Result<Self, FormatError> {
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line_no = index + 1;
            let error = |message: &str| FormatError {
                line: line_no,
                message: message.to_string(),
            };
            let trimmed = line.trim();
            if let Some(value) = trimmed.strip_prefix("name:") {
                name = Some(value.trim().to_string());
            } else if let Some(value) = trimmed.strip_prefix("ID:") {
                id = Some(
                    value
                        .trim()
                        .parse()
                        .map_err(|_| error("ID is not a number"))?,
                );
            } else if trimmed.starts_with("field:") {
                fields.push(parse_field(trimmed).map_err(|message| error(&message))?);
            } else if trimmed.starts_with("print fmt:") {
                break;
            }
        }
        Ok(Self {
            name: name.ok_or_else(|| FormatError {
                line: 1,
                message: "no `name:` line".into(),
            })?,
            id: id.ok_or_else(|| FormatError {
                line: 2,
                message: "no `ID:` line".into(),
            })?,
            fields,
        })
    }

    /// The field with this name, if the event has one.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|field| field.name == name)
    }
}

/// Parses `field:TYPE NAME[N];\toffset:O;\tsize:S;\tsigned:B;`.
fn parse_field(line: &str) -> Result<Field, String> {
    let mut decl = None;
    let (mut offset, mut size, mut signed) = (None, None, None);
    for part in line
        .split(';')
        .map(str::trim)
        .filter(|part| !part.is_empty())
    {
        let (key, value) = part
            .split_once(':')
            .ok_or_else(|| format!("expected `key:value`, found `{part}`"))?;
        let number = || {
            value
                .trim()
                .parse::<u32>()
                .map_err(|_| format!("`{key}` is not a number: `{value}`"))
        };
        match key {
            "field" => decl = Some(value.trim()),
            "offset" => offset = Some(number()?),
            "size" => size = Some(number()?),
            "signed" => signed = Some(number()? != 0),
            _ => {}
        }
    }
    let decl = decl.ok_or("no field declaration")?;
    let (c_type, name, array_len) = split_declaration(decl)?;
    Ok(Field {
        name,
        c_type,
        offset: offset.ok_or("no offset")?,
        size: size.ok_or("no size")?,
        signed: signed.unwrap_or(false),
        array_len,
    })
}

/// Splits a C declaration like `unsigned int nr_sector`, `char rwbs[8]` or
/// `__data_loc char[] name` into (type, name, fixed array length).
fn split_declaration(decl: &str) -> Result<(String, String, Option<u32>), String> {
    let (decl, array_len) = match decl.strip_suffix(']') {
        Some(head) => {
            let open = head
                .rfind('[')
                .ok_or_else(|| format!("unbalanced `]` in `{decl}`"))?;
            let len = head[open + 1..].trim();
            // Kernels may spell a length as an expression (`[TASK_COMM_LEN]`); the size
            // field still tells the truth, so only a plain number is kept.
            (head[..open].trim_end(), len.parse().ok())
        }
        None => (decl, None),
    };
    let split = decl
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .ok_or_else(|| format!("no type in `{decl}`"))?;
    let name = decl[split + 1..].to_string();
    let c_type = decl[..=split].trim().to_string();
    if name.is_empty() || c_type.is_empty() {
        return Err(format!("cannot split `{decl}` into type and name"));
    }
    Ok((c_type, name, array_len))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORK_6_18: &str = include_str!("../../tests/data/format/sched_process_fork-6.18");
    const BLOCK_RQ_ISSUE_6_18: &str = include_str!("../../tests/data/format/block_rq_issue-6.18");

    #[test]
    fn parses_sched_process_fork_with_data_loc_comms() {
        let format = EventFormat::parse(FORK_6_18).unwrap();
        assert_eq!(format.name, "sched_process_fork");
        assert_eq!(format.id, 366);
        let comm = format.field("parent_comm").unwrap();
        assert_eq!(comm.c_type, "__data_loc char[]");
        assert!(comm.is_dynamic() && comm.is_string());
        assert_eq!(
            format.field("child_pid").unwrap(),
            &Field {
                name: "child_pid".into(),
                c_type: "pid_t".into(),
                offset: 20,
                size: 4,
                signed: true,
                array_len: None,
            }
        );
        assert_eq!(format.fields.iter().filter(|f| f.is_common()).count(), 4);
    }

    #[test]
    fn parses_block_rq_issue_fixed_arrays() {
        let format = EventFormat::parse(BLOCK_RQ_ISSUE_6_18).unwrap();
        let rwbs = format.field("rwbs").unwrap();
        assert_eq!((rwbs.offset, rwbs.size, rwbs.array_len), (34, 10, Some(10)));
        assert!(rwbs.is_string() && !rwbs.is_dynamic());
        let bytes = format.field("bytes").unwrap();
        assert_eq!(
            (bytes.c_type.as_str(), bytes.size, bytes.signed),
            ("unsigned int", 4, false)
        );
        assert!(!bytes.is_string());
    }

    #[test]
    fn reports_the_line_of_a_broken_field() {
        let text = "name: x\nID: 1\nformat:\n\tfield:int a;\toffset:zero;\tsize:4;\tsigned:1;\n";
        assert_eq!(
            EventFormat::parse(text).unwrap_err().to_string(),
            "line 4: `offset` is not a number: `zero`"
        );
    }

    #[test]
    fn splits_declarations() {
        assert_eq!(
            split_declaration("unsigned long long sector").unwrap(),
            ("unsigned long long".into(), "sector".into(), None)
        );
        assert_eq!(
            split_declaration("char comm[TASK_COMM_LEN]").unwrap(),
            ("char".into(), "comm".into(), None)
        );
        assert_eq!(
            split_declaration("const void * skbaddr").unwrap(),
            ("const void *".into(), "skbaddr".into(), None)
        );
    }
}
