//! Fields reached through BTF: a kernel struct member read through pointers, from the current
//! task or from a pointer a tracepoint records, with offsets from the running kernel's BTF
//! (`/sys/kernel/btf/vmlinux`, read once, by [`crate::probe::raw_btf`]) at load time.
//!
//! Syntax, C's: a base, then at least one `->MEMBER`, and any `.MEMBER`/`->MEMBER` after:
//!
//! - `task->real_parent->tgid`: from the current task (`struct task_struct *`);
//! - `(struct tcp_sock *)skaddr->bytes_received`: from a tracepoint's pointer field, cast
//!   to the struct it points to (needed when the field is a `void *`);
//! - `(struct sock *)skaddr->__sk_common.skc_num`: `.` reads a member of an embedded struct;
//!   members of anonymous structs and unions are found by their own names.
//!
//! - `sock(ret)->__sk_common.skc_num`: from the `struct sock` of the socket the current
//!   task has open at descriptor `ret` (an integer field: `ret` of
//!   `syscalls:sys_exit_accept4`); `file(fd)->f_flags` from the `struct file` at descriptor
//!   `fd`. The descriptor walk (`task->files->fdt->fd[FD]`) is the
//!   kernel's; a descriptor with no file reads as 0.
//!
//! The value must be an integer, an enum or a pointer (1, 2, 4 or 8 bytes; no bitfields),
//! or a struct of at most [`STR_BYTES`] bytes read as raw bytes (`skc_v6_daddr`, a `struct
//! in6_addr`, shown as an address when the name says `addr`). At most 3 pointers are
//! followed (`->` after the first), [`MAX_PATH`] offsets in all; `sock(FD)` follows two of
//! them itself (`file->private_data`, `socket->sk`).

use std::sync::OnceLock;

use tracekit_common::engine::{MAX_PATH, STR_BYTES};

use crate::probe::raw_btf::Type;

/// One step of a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// `->MEMBER`: a member of the struct the value points to.
    Arrow(String),
    /// `.MEMBER`: a member of the struct the value is.
    Dot(String),
}

/// A parsed path: `(struct CAST *)BASE` and its steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathExpr {
    /// The struct the base points to, when cast (`tcp_sock`).
    pub cast: Option<String>,
    /// `task` or a field's name.
    pub base: String,
    /// The steps; the first is an [`Step::Arrow`].
    pub steps: Vec<Step>,
}

/// A path resolved against BTF: what the kernel reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// Byte offsets: a pointer is read at each but the last, the value at the last.
    pub path: Vec<u32>,
    /// The value's width in bytes.
    pub size: u32,
    /// Whether it is a signed integer.
    pub signed: bool,
    /// Whether the value is raw bytes (a small struct such as `struct in6_addr`), not an
    /// integer.
    pub bytes: bool,
}

/// A descriptor base: `sock(FIELD)` or `file(FIELD)`, as (`sock`/`file`, `FIELD`).
pub fn fd_base(base: &str) -> Option<(&str, &str)> {
    let (what, rest) = base.split_once('(')?;
    let field = rest.strip_suffix(')')?;
    (matches!(what, "sock" | "file") && is_name(field)).then_some((what, field))
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses `text` as a path; `None` when it is no path (has no `->`), else the path or what
/// is wrong with it.
pub fn parse(text: &str) -> Option<Result<PathExpr, String>> {
    if !text.contains("->") {
        return None;
    }
    Some(parse_path(text.trim()))
}

fn parse_path(text: &str) -> Result<PathExpr, String> {
    let bad = |what: &str| {
        Err(format!(
            "`{text}`: {what}; a path is task->MEMBER... or (struct NAME *)FIELD->MEMBER..., \
             with ->MEMBER and .MEMBER steps"
        ))
    };
    let (cast, rest) = match text.strip_prefix('(') {
        Some(inner) => {
            let Some((ty, rest)) = inner.split_once(')') else {
                return bad("the cast has no `)`");
            };
            let ty = ty.trim();
            let Some(name) = ty
                .strip_prefix("struct ")
                .and_then(|t| t.trim().strip_suffix('*'))
                .map(str::trim)
            else {
                return bad("a cast is `(struct NAME *)`");
            };
            if !is_name(name) {
                return bad("a cast is `(struct NAME *)`");
            }
            (Some(name.to_string()), rest.trim_start())
        }
        None => (None, text),
    };
    let first = rest.find("->").unwrap_or(rest.len());
    let base = &rest[..first];
    if !is_name(base) && fd_base(base).is_none() {
        return bad("the base is `task`, a field's name, sock(FIELD) or file(FIELD)");
    }
    let mut steps = Vec::new();
    let mut tail = &rest[first..];
    while !tail.is_empty() {
        let (arrow, after) = if let Some(after) = tail.strip_prefix("->") {
            (true, after)
        } else if let Some(after) = tail.strip_prefix('.') {
            (false, after)
        } else {
            return bad("steps are ->MEMBER or .MEMBER");
        };
        let end = after.find(['-', '.']).unwrap_or(after.len());
        let member = &after[..end];
        if !is_name(member) {
            return bad("a member is a name");
        }
        steps.push(if arrow {
            Step::Arrow(member.to_string())
        } else {
            Step::Dot(member.to_string())
        });
        tail = &after[end..];
    }
    Ok(PathExpr {
        cast,
        base: base.to_string(),
        steps,
    })
}

pub use crate::probe::raw_btf::Btf;

/// The running kernel's BTF, read once ([`Btf`]: one read of the file and one pass over
/// its types, no name maps); `None` without it.
pub fn kernel_btf() -> Option<&'static Btf> {
    static BTF: OnceLock<Option<Btf>> = OnceLock::new();
    BTF.get_or_init(|| {
        Btf::from_file("/sys/kernel/btf/vmlinux")
            .map_err(|err| log::debug!("kernel BTF: {err}"))
            .ok()
    })
    .as_ref()
}

/// Member `name` of struct or union `ty` (stripped): its byte offset and type, looking
/// inside anonymous members.
fn member(btf: &Btf, ty: u32, name: &str, depth: u32) -> Result<Option<(u32, u32)>, String> {
    for m in btf.members(ty) {
        if m.name == name {
            if m.bitfield_size != 0 || m.bit_offset % 8 != 0 {
                return Err(format!("`{name}` is a bitfield, which paths cannot read"));
            }
            return Ok(Some((m.bit_offset / 8, m.ty)));
        }
        if m.name.is_empty()
            && depth < 8
            && let Some((inner, found)) = member(btf, btf.strip(m.ty), name, depth + 1)?
        {
            return Ok(Some((m.bit_offset / 8 + inner, found)));
        }
    }
    Ok(None)
}

/// The struct named `name`.
fn struct_named(btf: &Btf, name: &str) -> Result<u32, String> {
    btf.composite_named(name)
        .ok_or_else(|| format!("the kernel's BTF has no `struct {name}`"))
}

/// Resolves `steps` from a pointer to `struct start` against `btf`.
///
/// # Errors
/// What is wrong, naming the struct or member: no such member, not a pointer, a struct
/// where a value is read, a bitfield, more than [`MAX_PATH`] offsets.
pub fn resolve(btf: &Btf, start: &str, steps: &[Step]) -> Result<Resolved, String> {
    let mut pointee = struct_named(btf, start)?;
    let mut current = 0u32;
    let mut at = 0u32;
    let mut path = Vec::new();
    let mut shown = format!("(struct {start} *)");
    for (i, step) in steps.iter().enumerate() {
        let (container, name) = match step {
            Step::Arrow(name) => {
                if i > 0 {
                    let Type::Ptr(to) = btf.get(btf.strip(current)) else {
                        return Err(format!("`{shown}` is not a pointer; use .{name}"));
                    };
                    path.push(at);
                    at = 0;
                    pointee = btf.strip(to);
                }
                shown.push_str("->");
                (pointee, name)
            }
            Step::Dot(name) => {
                if i == 0 {
                    return Err(format!("`{shown}` is a pointer; use ->{name}"));
                }
                shown.push('.');
                (btf.strip(current), name)
            }
        };
        if !matches!(btf.get(container), Type::Composite { .. }) {
            return Err(format!(
                "`{shown}{name}`: what comes before is not a struct"
            ));
        }
        let Some((offset, ty)) = member(btf, container, name, 0)? else {
            return Err(format!(
                "`struct {}` has no member `{name}`",
                btf.name(container)
            ));
        };
        shown.push_str(name);
        at += offset;
        current = ty;
    }
    path.push(at);
    if path.len() > MAX_PATH {
        return Err(format!(
            "`{shown}` follows {} pointers; at most {} are followed",
            path.len() - 1,
            MAX_PATH - 1
        ));
    }
    let (size, signed) = match btf.get(btf.strip(current)) {
        Type::Int { size, signed } => (size, signed),
        Type::Enum { size } => (size, false),
        Type::Ptr(_) => (8, false),
        Type::Composite { size, .. } if (1..=STR_BYTES as u32).contains(&size) => {
            return Ok(Resolved {
                path,
                size,
                signed: false,
                bytes: true,
            });
        }
        _ => {
            return Err(format!(
                "`{shown}` is not an integer, enum or pointer; name one of its members"
            ));
        }
    };
    if !matches!(size, 1 | 2 | 4 | 8) {
        return Err(format!(
            "`{shown}` is {size} bytes; paths read 1, 2, 4 or 8"
        ));
    }
    Ok(Resolved {
        path,
        size,
        signed,
        bytes: false,
    })
}

/// Offsets of a descriptor base's walk (`sock(FD)`, `file(FD)`): the packed words of
/// [`tracekit_common::engine::operand::FD_PATH`] (`files | fdt << 16`, `fd | max_fds <<
/// 16`), the struct the user's path starts from, and the offsets before it (`sock`:
/// `file->private_data`, `socket->sk`).
///
/// # Errors
/// A member the kernel's BTF lacks, or an offset past 16 bits.
pub fn fd_walk(btf: &Btf, what: &str) -> Result<(u32, u32, &'static str, Vec<u32>), String> {
    let at = |start: &str, name: &str| -> Result<u32, String> {
        let r = resolve(btf, start, &[Step::Arrow(name.to_string())])?;
        Ok(r.path[0])
    };
    let pair = |low: u32, high: u32| -> Result<u32, String> {
        if low > 0xffff || high > 0xffff {
            return Err("the descriptor table's offsets do not fit 16 bits".into());
        }
        Ok(low | high << 16)
    };
    let files_fdt = pair(at("task_struct", "files")?, at("files_struct", "fdt")?)?;
    let fd_max = pair(at("fdtable", "fd")?, at("fdtable", "max_fds")?)?;
    Ok(if what == "sock" {
        let before = vec![at("file", "private_data")?, at("socket", "sk")?];
        (files_fdt, fd_max, "sock", before)
    } else {
        (files_fdt, fd_max, "file", Vec::new())
    })
}

/// Offsets of the kernel's walk of a directory's dentries up to the task's root
/// ([`tracekit_common::engine::DentryWalk`], for `operand::DIR_PATH`), from `btf`.
///
/// # Errors
/// A struct or member the kernel's BTF lacks (`struct mount` is the kernel's own, not
/// UAPI), or an offset past 16 bits where two share a word.
pub fn dentry_walk(btf: &Btf) -> Result<tracekit_common::engine::DentryWalk, String> {
    // `start.a.b`: member `a` of `struct start`, then `b` inside it.
    let at = |start: &str, members: &str| -> Result<u32, String> {
        let mut steps: Vec<Step> = members.split('.').map(|m| Step::Dot(m.into())).collect();
        if let Some(Step::Dot(first)) = steps.first().cloned() {
            steps[0] = Step::Arrow(first);
        }
        Ok(resolve(btf, start, &steps)?.path[0])
    };
    let (path_mnt, path_dentry) = (at("path", "mnt")?, at("path", "dentry")?);
    let (files_fdt, fd_max, ..) = fd_walk(btf, "file")?;
    let mnt_root = at("vfsmount", "mnt_root")?;
    Ok(tracekit_common::engine::DentryWalk {
        task_fs: at("task_struct", "fs")?,
        fs_pwd: at("fs_struct", "pwd.mnt")? - path_mnt,
        fs_root: at("fs_struct", "root.mnt")? - path_mnt,
        path_mnt,
        path_dentry,
        files_fdt,
        fd_max,
        file_path: at("file", "f_path.mnt")? - path_mnt,
        d_parent: at("dentry", "d_parent")?,
        d_name: at("dentry", "d_name.name")?,
        mount_mnt: at("mount", "mnt.mnt_root")? - mnt_root,
        mnt_parent: at("mount", "mnt_parent")?,
        mnt_mountpoint: at("mount", "mnt_mountpoint")?,
        mnt_root,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_exactly() {
        assert_eq!(parse("comm"), None);
        assert_eq!(
            parse("task->real_parent->tgid"),
            Some(Ok(PathExpr {
                cast: None,
                base: "task".into(),
                steps: vec![
                    Step::Arrow("real_parent".into()),
                    Step::Arrow("tgid".into())
                ],
            }))
        );
        assert_eq!(
            parse("(struct sock *)skaddr->__sk_common.skc_num"),
            Some(Ok(PathExpr {
                cast: Some("sock".into()),
                base: "skaddr".into(),
                steps: vec![
                    Step::Arrow("__sk_common".into()),
                    Step::Dot("skc_num".into())
                ],
            }))
        );
        assert_eq!(
            parse("sock(ret)->__sk_common.skc_v6_daddr"),
            Some(Ok(PathExpr {
                cast: None,
                base: "sock(ret)".into(),
                steps: vec![
                    Step::Arrow("__sk_common".into()),
                    Step::Dot("skc_v6_daddr".into())
                ],
            }))
        );
        assert_eq!(fd_base("sock(ret)"), Some(("sock", "ret")));
        assert_eq!(fd_base("file(fd)"), Some(("file", "fd")));
        assert_eq!(fd_base("sock(1)"), None);
        assert_eq!(fd_base("ret"), None);
        assert_eq!(
            parse("(struct tcp_sock*)skaddr->bytes_received")
                .unwrap()
                .unwrap()
                .cast
                .as_deref(),
            Some("tcp_sock")
        );
        let rule = "; a path is task->MEMBER... or (struct NAME *)FIELD->MEMBER..., with \
                    ->MEMBER and .MEMBER steps";
        for (text, what) in [
            ("(sock *)skaddr->x", "a cast is `(struct NAME *)`"),
            ("(struct sock *skaddr->x", "the cast has no `)`"),
            (
                "->x",
                "the base is `task`, a field's name, sock(FIELD) or file(FIELD)",
            ),
            (
                "pipe(ret)->x",
                "the base is `task`, a field's name, sock(FIELD) or file(FIELD)",
            ),
            ("task->", "a member is a name"),
            ("task->a-b", "steps are ->MEMBER or .MEMBER"),
            ("task->a..b", "a member is a name"),
        ] {
            assert_eq!(
                parse(text),
                Some(Err(format!("`{text}`: {what}{rule}"))),
                "{text}"
            );
        }
    }

    /// A path is one name in the filter language too.
    #[test]
    fn paths_are_filter_names() {
        let expr = crate::probe::filter::parse(
            "task->real_parent->tgid == 1 && sk->__sk_common.skc_num > 0 && x.y == 2",
        );
        let names = expr.map(|e| crate::probe::filter::fields(&e));
        assert!(names.is_err(), "x.y is no name: {names:?}");
        let expr = crate::probe::filter::parse(
            "task->real_parent->tgid == 1 && sk->__sk_common.skc_num > 0",
        )
        .unwrap();
        assert_eq!(
            crate::probe::filter::fields(&expr),
            ["task->real_parent->tgid", "sk->__sk_common.skc_num"]
        );
        let expr = crate::probe::filter::parse(
            "ret >= 0 && (sock(ret)->__sk_common.skc_family == 10 || file(fd)->f_flags > 0)",
        )
        .unwrap();
        assert_eq!(
            crate::probe::filter::fields(&expr),
            [
                "ret",
                "sock(ret)->__sk_common.skc_family",
                "file(fd)->f_flags"
            ]
        );
    }

    /// On a BTF written here (no kernel needed): a typedef'd pointer is followed, an
    /// anonymous union's member is found at its offset, a bitfield is refused.
    #[test]
    fn paths_resolve_against_written_btf() {
        let mut b = crate::probe::raw_btf::builder::Builder::new();
        let int = b.int("int", 4, true);
        let u8_ = b.int("u8", 1, false);
        let anon = b.composite(true, "", 4, &[("a", int, 0, 0), ("b", u8_, 0, 0)]);
        // `struct task_struct` is type 6; the pointer refers to it before it is written.
        let task_ptr = b.ptr(6);
        let ptr_t = b.typedef("task_ptr", task_ptr);
        let task = b.composite(
            false,
            "task_struct",
            48,
            &[
                ("tgid", int, 0, 0),
                ("real_parent", ptr_t, 64, 0),
                ("", anon, 128, 0),
                ("flags", int, 160, 3),
            ],
        );
        assert_eq!(task, 6);
        let btf = Btf::parse(b.finish()).unwrap();
        let steps = |text: &str| parse(text).unwrap().unwrap().steps;
        let ok = |path: Vec<u32>, size, signed| {
            Ok(Resolved {
                path,
                size,
                signed,
                bytes: false,
            })
        };
        assert_eq!(
            resolve(&btf, "task_struct", &steps("task->real_parent->tgid")),
            ok(vec![8, 0], 4, true)
        );
        assert_eq!(
            resolve(&btf, "task_struct", &steps("task->real_parent->b")),
            ok(vec![8, 16], 1, false)
        );
        assert_eq!(
            resolve(&btf, "task_struct", &steps("task->flags")),
            Err("`flags` is a bitfield, which paths cannot read".into())
        );
        assert_eq!(
            resolve(&btf, "task_struct", &steps("task->tgid->x")),
            Err("`(struct task_struct *)->tgid` is not a pointer; use .x".into())
        );
        assert_eq!(
            resolve(&btf, "u8", &steps("task->x")),
            Err("the kernel's BTF has no `struct u8`".into())
        );
    }

    /// The descriptor walk and a 16-byte address, against this machine's kernel.
    #[test]
    fn descriptor_walks_and_addresses_resolve_against_kernel_btf() {
        let Some(btf) = kernel_btf() else {
            eprintln!("skipped: no /sys/kernel/btf/vmlinux");
            return;
        };
        let steps = |text: &str| parse(text).unwrap().unwrap().steps;
        let (files_fdt, fd_max, start, before) = fd_walk(btf, "sock").unwrap();
        let files = resolve(btf, "task_struct", &steps("task->files")).unwrap();
        let fd = resolve(btf, "fdtable", &steps("x->fd")).unwrap();
        let max = resolve(btf, "fdtable", &steps("x->max_fds")).unwrap();
        assert_eq!(files_fdt & 0xffff, files.path[0]);
        assert_eq!(fd_max, fd.path[0] | max.path[0] << 16);
        assert_eq!((start, before.len()), ("sock", 2));
        let (_, _, start, before) = fd_walk(btf, "file").unwrap();
        assert_eq!((start, before.len()), ("file", 0));
        let v6 = resolve(btf, "sock", &steps("x->__sk_common.skc_v6_daddr")).unwrap();
        assert_eq!((v6.path.len(), v6.size, v6.bytes), (1, 16, true));
        let v4 = resolve(btf, "sock", &steps("x->__sk_common.skc_daddr")).unwrap();
        assert_eq!((v4.size, v4.bytes), (4, false));
    }

    /// Against this machine's kernel, when it has BTF: offsets differ between kernels, so
    /// the shape is exact and the offsets are checked against each other.
    #[test]
    fn paths_resolve_against_kernel_btf() {
        let Some(btf) = kernel_btf() else {
            eprintln!("skipped: no /sys/kernel/btf/vmlinux");
            return;
        };
        let steps = |text: &str| parse(text).unwrap().unwrap().steps;
        let ppid = resolve(btf, "task_struct", &steps("task->real_parent->tgid")).unwrap();
        let pid = resolve(btf, "task_struct", &steps("task->tgid")).unwrap();
        assert_eq!(ppid.path.len(), 2);
        assert_eq!(ppid.path[1], pid.path[0]);
        assert_eq!((ppid.size, ppid.signed), (4, true));
        // skc_num is in an anonymous struct of an anonymous union of `struct sock_common`.
        let port = resolve(btf, "sock", &steps("x->__sk_common.skc_num")).unwrap();
        let common = resolve(btf, "sock_common", &steps("x->skc_num")).unwrap();
        assert_eq!(port, common, "__sk_common is struct sock's first member");
        assert_eq!((port.path.len(), port.size, port.signed), (1, 2, false));
        assert_eq!(
            resolve(btf, "sock", &steps("x->skc_num")),
            Err("`struct sock` has no member `skc_num`".into())
        );
        let rx = resolve(btf, "tcp_sock", &steps("x->bytes_received")).unwrap();
        assert_eq!((rx.path.len(), rx.size), (1, 8));
        assert_eq!(
            resolve(btf, "task_struct", &steps("task->nope")),
            Err("`struct task_struct` has no member `nope`".into())
        );
        assert_eq!(
            resolve(btf, "task_struct", &steps("task->tgid->x")),
            Err("`(struct task_struct *)->tgid` is not a pointer; use .x".into())
        );
        assert_eq!(
            resolve(btf, "task_struct", &steps("task->real_parent")).map(|r| r.size),
            Ok(8)
        );
        assert_eq!(
            resolve(btf, "task_struct", &steps("task->se")),
            Err(
                "`(struct task_struct *)->se` is not an integer, enum or pointer; name one of \
                 its members"
                    .into()
            )
        );
        assert_eq!(
            resolve(btf, "nope_struct", &steps("task->x")),
            Err("the kernel's BTF has no `struct nope_struct`".into())
        );
        let deep = steps("task->real_parent->real_parent->real_parent->real_parent->tgid");
        assert_eq!(
            resolve(btf, "task_struct", &deep),
            Err(
                "`(struct task_struct *)->real_parent->real_parent->real_parent->real_parent->tgid` \
                 follows 4 pointers; at most 3 are followed"
                    .into()
            )
        );
    }
}
