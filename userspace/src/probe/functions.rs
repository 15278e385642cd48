//! Functions to probe: kernel functions (traceable list, BTF prototypes) and user functions
//! (binary resolution as the dynamic linker would, symbol file offsets through blazesym).

use std::{
    ops::ControlFlow,
    path::{Path, PathBuf},
    process::Command,
};

use blazesym::inspect::{
    Inspector,
    source::{Elf, Source},
};

use crate::{
    Error, Result,
    error::quote,
    probe::{glob_match, nearest, tracefs},
};

/// One parameter of a kernel function, from BTF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// Its name (`count` of `vfs_read`).
    pub name: String,
    /// Size in bytes of its value (pointers: 8).
    pub size: u32,
    /// Whether it is a signed integer.
    pub signed: bool,
    /// Its C type as BTF names it, for messages (`size_t`, `struct file *`).
    pub c_type: String,
}

/// The kernel's function type information (`/sys/kernel/btf/vmlinux`).
pub struct KernelBtf {
    btf: btf_rs::Btf,
}

impl KernelBtf {
    /// Reads `/sys/kernel/btf/vmlinux`; None when the kernel has no BTF.
    pub fn open() -> Option<Self> {
        btf_rs::Btf::from_file("/sys/kernel/btf/vmlinux")
            .ok()
            .map(|btf| Self { btf })
    }

    /// Whether BTF describes a function of this name.
    pub fn has_function(&self, name: &str) -> bool {
        self.btf
            .resolve_types_by_name(name)
            .map(|types| types.iter().any(|t| matches!(t, btf_rs::Type::Func(_))))
            .unwrap_or(false)
    }

    /// The parameters of kernel function `name`, or None if BTF does not describe it.
    pub fn params(&self, name: &str) -> Option<Vec<Param>> {
        let types = self.btf.resolve_types_by_name(name).ok()?;
        let func = types.iter().find_map(|t| match t {
            btf_rs::Type::Func(func) => Some(func.clone()),
            _ => None,
        })?;
        let btf_rs::Type::FuncProto(proto) = self.btf.resolve_chained_type(&func).ok()? else {
            return None;
        };
        Some(
            proto
                .parameters
                .iter()
                .filter(|p| !p.is_variadic())
                .map(|p| {
                    let name = self.btf.resolve_name(p).unwrap_or_default();
                    let (size, signed, c_type) = self.describe(p);
                    Param {
                        name,
                        size,
                        signed,
                        c_type,
                    }
                })
                .collect(),
        )
    }

    /// Size, signedness and name of a parameter's type, through typedefs and qualifiers.
    fn describe(&self, param: &btf_rs::Parameter) -> (u32, bool, String) {
        let mut ty = self.btf.resolve_chained_type(param).ok();
        let mut names = Vec::new();
        for _ in 0..16 {
            match &ty {
                Some(btf_rs::Type::Typedef(t)) => {
                    names.push(self.btf.resolve_name(t).unwrap_or_default());
                    ty = self.btf.resolve_chained_type(t).ok();
                }
                Some(btf_rs::Type::Const(t)) => ty = self.btf.resolve_chained_type(t).ok(),
                Some(btf_rs::Type::Volatile(t)) => ty = self.btf.resolve_chained_type(t).ok(),
                Some(btf_rs::Type::Restrict(t)) => ty = self.btf.resolve_chained_type(t).ok(),
                _ => break,
            }
        }
        let first = names.first().cloned();
        match ty {
            Some(btf_rs::Type::Int(int)) => {
                let name = self.btf.resolve_name(&int).unwrap_or_default();
                (int.size() as u32, int.is_signed(), first.unwrap_or(name))
            }
            Some(btf_rs::Type::Enum(e)) => (e.size() as u32, false, first.unwrap_or("enum".into())),
            // A pointer to a struct is named for it (`struct sock *`), so that paths
            // (`sk->sk_ack_backlog`) know where they start.
            Some(btf_rs::Type::Ptr(ptr)) => {
                let pointee = self.struct_of(self.btf.resolve_chained_type(&ptr).ok());
                let name = pointee.map_or_else(|| "pointer".into(), |s| format!("struct {s} *"));
                (8, false, first.unwrap_or(name))
            }
            _ => (8, false, first.unwrap_or("struct".into())),
        }
    }

    /// The name of the struct `ty` is, through typedefs and qualifiers.
    fn struct_of(&self, mut ty: Option<btf_rs::Type>) -> Option<String> {
        for _ in 0..16 {
            ty = match &ty {
                Some(btf_rs::Type::Struct(s)) => return self.btf.resolve_name(s).ok(),
                Some(btf_rs::Type::Typedef(t)) => self.btf.resolve_chained_type(t).ok(),
                Some(btf_rs::Type::Const(t)) => self.btf.resolve_chained_type(t).ok(),
                Some(btf_rs::Type::Volatile(t)) => self.btf.resolve_chained_type(t).ok(),
                _ => return None,
            };
        }
        None
    }

    /// Every function BTF describes (for suggestions when tracefs cannot list them).
    pub fn function_names(&self) -> Vec<String> {
        use fallible_iterator::FallibleIterator as _;
        let mut names = Vec::new();
        let mut types = self.btf.type_iter();
        while let Ok(Some(ty)) = types.next() {
            if let btf_rs::Type::Func(func) = ty
                && let Ok(name) = self.btf.resolve_name(&func)
            {
                names.push(name);
            }
        }
        names.sort();
        names.dedup();
        names
    }
}

/// The kernel functions that can be probed (`available_filter_functions`), if this kernel
/// lets tracefs list them (root without CAP_SYS_ADMIN in a container may not).
pub fn traceable_kernel_functions() -> Option<Vec<String>> {
    let root = tracefs::root().ok()?;
    let text = std::fs::read_to_string(root.join("available_filter_functions")).ok()?;
    let mut names: Vec<String> = text
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    Some(names)
}

/// The kernel functions `pattern` (wildcards allowed) names, checked against what the
/// kernel can probe. Usage errors suggest near names, or say why a function cannot be
/// probed.
pub fn kernel_functions(pattern: &str, btf: Option<&KernelBtf>) -> Result<Vec<String>> {
    if pattern.contains(',') {
        let mut all = Vec::new();
        for part in pattern.split(',').filter(|p| !p.is_empty()) {
            for name in kernel_functions(part, btf)? {
                if !all.contains(&name) {
                    all.push(name);
                }
            }
        }
        return Ok(all);
    }
    let traceable = traceable_kernel_functions();
    let wildcard = pattern.contains(['*', '?']);
    let Some(traceable) = traceable else {
        // No list: trust BTF, or the name as given.
        if wildcard {
            let names = btf.map(KernelBtf::function_names).unwrap_or_default();
            let matched: Vec<String> = names
                .into_iter()
                .filter(|n| glob_match(pattern, n))
                .collect();
            if matched.is_empty() {
                return Err(Error::usage(format!(
                    "kernel function pattern `{}` matches nothing",
                    quote(pattern)
                )));
            }
            return Ok(matched);
        }
        if let Some(btf) = btf
            && !btf.has_function(pattern)
        {
            let near = nearest(pattern, &btf.function_names(), 3);
            return Err(unknown_function(pattern, &near));
        }
        return Ok(vec![pattern.to_string()]);
    };
    if wildcard {
        let matched: Vec<String> = traceable
            .iter()
            .filter(|n| glob_match(pattern, n))
            .cloned()
            .collect();
        if matched.is_empty() {
            return Err(Error::usage(format!(
                "kernel function pattern `{}` matches no traceable function",
                quote(pattern)
            )));
        }
        return Ok(matched);
    }
    if traceable.binary_search(&pattern.to_string()).is_ok() {
        return Ok(vec![pattern.to_string()]);
    }
    if btf.is_some_and(|btf| btf.has_function(pattern)) {
        return Err(Error::usage(format!(
            "kernel function `{}` cannot be probed: it is not in \
             available_filter_functions (notrace, inlined everywhere, or on the kprobe blacklist)",
            quote(pattern)
        )));
    }
    Err(unknown_function(pattern, &nearest(pattern, &traceable, 3)))
}

fn unknown_function(name: &str, near: &[String]) -> Error {
    if near.is_empty() {
        Error::usage(format!("no kernel function `{}`", quote(name)))
    } else {
        Error::usage(format!(
            "no kernel function `{}`; did you mean {}?",
            quote(name),
            near.join(", ")
        ))
    }
}

/// A user function to probe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserFunction {
    /// Its symbol name.
    pub name: String,
    /// Where to put the probe: file offset in the binary.
    pub file_offset: u64,
}

/// Finds the binary of a uprobe spec, as the dynamic linker would: a path as given; else
/// a library mapped by `pid`; else a library in the linker's cache (`ldconfig -p`), named in
/// full (`libc.so.6`) or short (`libc`); else a program on `PATH`.
///
/// # Errors
/// Usage errors when nothing of that name exists, or what exists is a directory, a device
/// or another file that is not ELF; they say `uprobe binary` ([`resolve_binary_for`] names
/// another probe kind).
pub fn resolve_binary(name: &str, pid: Option<u32>) -> Result<PathBuf> {
    resolve_binary_for("uprobe", name, pid)
}

/// [`resolve_binary`] for probes of kind `probe` (`uprobe`, `USDT`), which errors name
/// (`USDT binary `postgress` not found ...`).
///
/// A usage error when `pid` is a kernel thread: it runs no user code, so no probe in a
/// binary would ever fire in it.
pub fn resolve_binary_for(probe: &str, name: &str, pid: Option<u32>) -> Result<PathBuf> {
    if let Some(pid) = pid {
        crate::procmaps::refuse_kernel_threads(&[pid], &format!("where {probe} probes fire"))?;
    }
    let path = find_binary(probe, name, pid)?;
    check_elf(probe, &path, name)?;
    Ok(path)
}

fn find_binary(probe: &str, name: &str, pid: Option<u32>) -> Result<PathBuf> {
    if name.contains('/') {
        return Ok(PathBuf::from(name));
    }
    let matches = |file: &str| {
        file == name
            || file.starts_with(&format!("{name}.so"))
            || file.starts_with(&format!("{name}-"))
            || file.starts_with(&format!("lib{name}.so"))
    };
    if let Some(pid) = pid
        && let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps"))
    {
        let found = maps
            .lines()
            .filter_map(|line| line.split_whitespace().nth(5))
            .find(|path| path.rsplit('/').next().is_some_and(matches));
        if let Some(path) = found {
            return Ok(PathBuf::from(format!("/proc/{pid}/root{path}")));
        }
    }
    if let Ok(output) = Command::new("ldconfig").arg("-p").output() {
        let text = String::from_utf8_lossy(&output.stdout);
        // How `ldconfig -p` tags this architecture's libraries (`(libc6,x86-64)`).
        let arch = if cfg!(target_arch = "x86_64") {
            "x86-64"
        } else if cfg!(target_arch = "aarch64") {
            "AArch64"
        } else {
            ""
        };
        let mut candidates: Vec<(bool, PathBuf)> = text
            .lines()
            .filter_map(|line| {
                let (left, path) = line.split_once(" => ")?;
                let file = left.split_whitespace().next()?;
                matches(file).then(|| (left.contains(arch), PathBuf::from(path.trim())))
            })
            .collect();
        candidates.sort_by_key(|(native, _)| !native);
        if let Some((_, path)) = candidates.into_iter().next() {
            return Ok(path);
        }
    }
    let paths = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&paths)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
        .ok_or_else(|| {
            Error::usage(format!(
                "{probe} binary `{}` not found (not a path, a library known to ldconfig, \
                 nor a program on PATH)",
                quote(name)
            ))
        })
}

/// Checks that `path` (found for the spec's `name`) is an ELF file, the only kind uprobes
/// go into: a usage error saying what it is instead.
fn check_elf(probe: &str, path: &Path, name: &str) -> Result<()> {
    use std::{io::Read as _, os::unix::fs::FileTypeExt as _};
    let shown = if path == Path::new(name) {
        format!("{probe} binary `{}`", quote(name))
    } else {
        format!(
            "{probe} binary `{}` ({})",
            quote(name),
            quote(&path.to_string_lossy())
        )
    };
    let problem = |what: &str| Err(Error::usage(format!("{shown}: {what}")));
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return problem("no such file");
        }
        Err(err) if err.kind() == std::io::ErrorKind::PermissionDenied => {
            return Err(Error::Privilege(format!("{shown}: {err}")));
        }
        Err(err) => return problem(&err.to_string()),
    };
    let kind = metadata.file_type();
    if kind.is_dir() {
        return problem("is a directory");
    }
    // Devices and pipes are not read: a FIFO would block.
    let other = if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_socket() {
        Some("a socket")
    } else {
        None
    };
    if let Some(other) = other {
        return problem(&format!("not an ELF file ({other})"));
    }
    let mut magic = [0u8; 4];
    let read = std::fs::File::open(path).and_then(|mut file| file.read_exact(&mut magic));
    match read {
        Ok(()) if &magic == b"\x7fELF" => Ok(()),
        Ok(()) => problem("not an ELF file"),
        Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => {
            problem("not an ELF file (shorter than an ELF header)")
        }
        Err(err) if err.kind() == std::io::ErrorKind::PermissionDenied => {
            Err(Error::Privilege(format!("{shown}: {err}")))
        }
        Err(err) => problem(&err.to_string()),
    }
}

/// The functions of `binary` that `pattern` (`name`, `name+OFFSET`, or a wildcard) names.
///
/// # Errors
/// Usage errors when nothing matches (with near names), or OFFSET is not within the
/// function (as the symbol table gives its size).
pub fn user_functions(binary: &Path, pattern: &str) -> Result<Vec<UserFunction>> {
    let (pattern, extra) = match pattern.split_once('+') {
        Some((name, offset)) => {
            let offset = parse_offset(offset).ok_or_else(|| {
                Error::usage(format!(
                    "uprobe offset `+{}` is not a number (decimal, or hex with 0x)",
                    quote(offset)
                ))
            })?;
            (name, offset)
        }
        None => (pattern, 0),
    };
    let inspector = Inspector::new();
    let mut elf = Elf::new(binary);
    elf.debug_syms = false;
    let source = Source::Elf(elf);
    // (name, file offset, size in bytes if the symbol table gives it)
    let mut all: Vec<(String, u64, Option<u64>)> = Vec::new();
    inspector
        .for_each(&source, |sym| {
            if sym.sym_type == blazesym::SymType::Function
                && let Some(offset) = sym.file_offset
            {
                let size = sym.size.filter(|&size| size > 0).map(|size| size as u64);
                all.push((sym.name.to_string(), offset, size));
            }
            ControlFlow::Continue(())
        })
        .map_err(|err| {
            Error::runtime(format!(
                "reading symbols of {}: {err}",
                quote(&binary.to_string_lossy())
            ))
        })?;
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all.dedup_by(|a, b| a.0 == b.0);
    let matched: Vec<&(String, u64, Option<u64>)> = all
        .iter()
        .filter(|(name, ..)| glob_match(pattern, name))
        .collect();
    if matched.is_empty() {
        let names: Vec<String> = all.iter().map(|(name, ..)| name.clone()).collect();
        let near = nearest(pattern, &names, 3);
        return Err(Error::usage(format!(
            "no function `{}` in {}{}",
            quote(pattern),
            quote(&binary.to_string_lossy()),
            if near.is_empty() {
                String::new()
            } else {
                format!("; did you mean {}?", near.join(", "))
            }
        )));
    }
    matched
        .into_iter()
        .map(|(name, offset, size)| {
            if extra > 0 {
                let shown = quote(name);
                match size {
                    Some(size) if extra >= *size => {
                        return Err(Error::usage(format!(
                            "uprobe offset +{extra}: offset past the end of {shown} \
                             ({size} bytes)"
                        )));
                    }
                    Some(_) => {}
                    None => {
                        return Err(Error::usage(format!(
                            "uprobe offset +{extra}: the symbol table gives no size for \
                             {shown}, so an offset into it cannot be checked"
                        )));
                    }
                }
            }
            Ok(UserFunction {
                name: name.clone(),
                file_offset: offset + extra,
            })
        })
        .collect()
}

fn parse_offset(text: &str) -> Option<u64> {
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_libc_short_and_its_malloc() {
        let libc = resolve_binary("libc", None).unwrap();
        assert!(
            libc.to_string_lossy().contains("libc.so"),
            "{}",
            libc.display()
        );
        let malloc = user_functions(&libc, "malloc").unwrap();
        assert_eq!(malloc.len(), 1);
        assert!(malloc[0].file_offset > 0);
        let err = user_functions(&libc, "mallocc").unwrap_err().to_string();
        assert!(err.contains("did you mean `malloc`"), "{err}");
        assert!(user_functions(&libc, "str*").unwrap().len() > 10);
    }

    #[test]
    fn missing_binary_is_a_usage_error() {
        assert_eq!(
            resolve_binary("/no/such/bin", None)
                .unwrap_err()
                .to_string(),
            "uprobe binary `/no/such/bin`: no such file"
        );
        assert!(resolve_binary("no-such-library-xyz", None).is_err());
        // USDT probes name themselves.
        assert_eq!(
            resolve_binary_for("USDT", "/no/such/bin", None)
                .unwrap_err()
                .to_string(),
            "USDT binary `/no/such/bin`: no such file"
        );
        assert_eq!(
            resolve_binary_for("USDT", "no-such-library-xyz", None)
                .unwrap_err()
                .to_string(),
            "USDT binary `no-such-library-xyz` not found (not a path, a library known to \
             ldconfig, nor a program on PATH)"
        );
    }

    #[test]
    fn offsets_stay_within_the_function() {
        let libc = resolve_binary("libc", None).unwrap();
        let malloc = user_functions(&libc, "malloc").unwrap()[0].file_offset;
        assert_eq!(
            user_functions(&libc, "malloc+4").unwrap()[0].file_offset,
            malloc + 4
        );
        let err = user_functions(&libc, "malloc+99999999")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("uprobe offset +99999999: offset past the end of malloc (")
                && err.ends_with(" bytes)"),
            "{err}"
        );
        assert_eq!(
            user_functions(&libc, "malloc+x").unwrap_err().to_string(),
            "uprobe offset `+x` is not a number (decimal, or hex with 0x)"
        );
    }

    #[test]
    fn directories_devices_and_other_files_are_not_binaries() {
        let dir = std::env::temp_dir();
        let text = dir.join(format!("tracekit-not-elf-{}", std::process::id()));
        std::fs::write(&text, "#!/bin/sh\n").unwrap();
        let empty = dir.join(format!("tracekit-empty-{}", std::process::id()));
        std::fs::write(&empty, "").unwrap();
        let shown = |path: &Path| path.display().to_string();
        let cases = [
            (
                "/usr/lib".to_string(),
                "uprobe binary `/usr/lib`: is a directory".to_string(),
            ),
            (
                "/dev/zero".into(),
                "uprobe binary `/dev/zero`: not an ELF file (a character device)".into(),
            ),
            (
                shown(&text),
                format!("uprobe binary `{}`: not an ELF file", shown(&text)),
            ),
            (
                shown(&empty),
                format!(
                    "uprobe binary `{}`: not an ELF file (shorter than an ELF header)",
                    shown(&empty)
                ),
            ),
        ];
        for (name, message) in cases {
            assert_eq!(
                resolve_binary(&name, None).unwrap_err().to_string(),
                message
            );
        }
        let _ = std::fs::remove_file(text);
        let _ = std::fs::remove_file(empty);
        let long = format!("/no-such-dir/{}", "x".repeat(200));
        assert_eq!(
            resolve_binary(&long, None).unwrap_err().to_string(),
            format!(
                "uprobe binary `/no-such-dir/{}…{}`: no such file",
                "x".repeat(40),
                "x".repeat(26)
            )
        );
        let longer = format!("/{}", "x".repeat(100_000));
        assert_eq!(
            resolve_binary(&longer, None).unwrap_err().to_string(),
            format!(
                "uprobe binary `/{}…{}`: File name too long (os error 36)",
                "x".repeat(52),
                "x".repeat(26)
            )
        );
    }

    #[test]
    fn offsets() {
        assert_eq!(parse_offset("0x10"), Some(16));
        assert_eq!(parse_offset("12"), Some(12));
        assert_eq!(parse_offset("x"), None);
    }
}
