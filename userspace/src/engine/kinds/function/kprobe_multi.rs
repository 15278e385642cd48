//! kprobe.multi links: one BPF link attaching a kprobe program to many kernel functions
//! (Linux 5.18, `CONFIG_FPROBE`), as libbpf and bpftrace do for wildcards. Attaching N
//! functions is one `bpf(BPF_LINK_CREATE)` instead of N perf events and N kprobes, and
//! detaching is one close instead of N RCU grace periods.
//!
//! The kernel takes a kprobe.multi link only for a program loaded with expected attach type
//! `BPF_TRACE_KPROBE_MULTI`, which aya 0.14 cannot set (newer aya can, but needs a newer rustc
//! than ours; see ../shared/ENVIRONMENT.md). So the engine's kprobe program is loaded a second
//! time here: aya-obj, the object parser aya itself uses, relocates it against the maps aya
//! already created, and `bpf(BPF_PROG_LOAD)` loads it with that attach type.

use std::{
    collections::HashSet,
    ffi::CString,
    io,
    os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd},
};

use aya_obj::generated::{
    BPF_F_KPROBE_MULTI_RETURN, bpf_attach_type, bpf_attr, bpf_cmd, bpf_insn, bpf_prog_type,
};

/// Loads program `name` of BPF object `object` as a kprobe.multi program. `maps` are the
/// object's maps by name (data sections as `.rodata`, `.bss`) as the loader created them:
/// the program shares them with the programs aya loaded.
///
/// # Errors
/// Relocation errors and the kernel's verdict (the verifier log's last line), as text.
pub fn load(object: &[u8], name: &str, maps: &[(String, OwnedFd)]) -> Result<OwnedFd, String> {
    let mut obj = aya_obj::Object::parse(object).map_err(|err| format!("parsing: {err}"))?;
    let text_sections: HashSet<usize> = obj.functions.keys().map(|&(section, _)| section).collect();
    let parsed_maps = obj.maps.clone();
    let relocations = maps.iter().filter_map(|(map_name, fd)| {
        parsed_maps
            .get(map_name)
            .map(|map| (map_name.as_str(), fd.as_raw_fd(), map))
    });
    obj.relocate_maps(relocations, &text_sections)
        .map_err(|err| format!("relocating maps: {err}"))?;
    obj.relocate_calls(&text_sections)
        .map_err(|err| format!("relocating calls: {err}"))?;
    let program = obj
        .programs
        .get(name)
        .ok_or_else(|| format!("no program {name} in the object"))?;
    let function = obj
        .functions
        .get(&program.function_key())
        .ok_or_else(|| format!("no function for program {name}"))?;
    prog_load(
        name,
        &function.instructions,
        &program.license,
        program.kernel_version.unwrap_or(0),
    )
}

fn prog_load(
    name: &str,
    instructions: &[bpf_insn],
    license: &CString,
    kernel_version: u32,
) -> Result<OwnedFd, String> {
    let mut log = vec![0u8; 1 << 16];
    for log_level in [0, 1] {
        // SAFETY: bpf_attr is plain data; all-zero is its "unset" value.
        let mut attr: bpf_attr = unsafe { std::mem::zeroed() };
        // SAFETY: writing the BPF_PROG_LOAD member of the union.
        let load = unsafe { &mut attr.__bindgen_anon_3 };
        load.prog_type = bpf_prog_type::BPF_PROG_TYPE_KPROBE as u32;
        load.expected_attach_type = bpf_attach_type::BPF_TRACE_KPROBE_MULTI as u32;
        load.insns = instructions.as_ptr() as u64;
        load.insn_cnt = instructions.len() as u32;
        load.license = license.as_ptr() as u64;
        load.kern_version = kernel_version;
        // The kernel keeps 15 bytes of a program's name.
        for (slot, byte) in load.prog_name.iter_mut().zip(name.bytes().take(15)) {
            *slot = byte as libc::c_char;
        }
        if log_level > 0 {
            load.log_level = log_level;
            load.log_buf = log.as_mut_ptr() as u64;
            load.log_size = log.len() as u32;
        }
        match bpf(bpf_cmd::BPF_PROG_LOAD, &attr) {
            Ok(fd) => return Ok(fd),
            Err(err) if log_level == 0 => {
                log::debug!("kprobe.multi load: {err}; retrying with the verifier log")
            }
            Err(err) => {
                let text = String::from_utf8_lossy(&log);
                let last = text
                    .trim_end_matches('\0')
                    .lines()
                    .rev()
                    .find(|line| !line.trim().is_empty())
                    .unwrap_or("")
                    .to_string();
                return Err(format!("loading: {err} ({last})"));
            }
        }
    }
    unreachable!("the loop returns")
}

/// Attaches loaded kprobe.multi `program` to kernel `functions` by name (the kernel looks
/// them up in kallsyms), at their entries or, with `ret`, their returns. Closing the returned
/// link detaches every function at once.
///
/// # Errors
/// `ENOENT` when a name is not a traceable function, `EOPNOTSUPP`/`EINVAL` on kernels without
/// kprobe.multi (before 5.18, or without `CONFIG_FPROBE`).
pub fn attach(program: &OwnedFd, functions: &[String], ret: bool) -> io::Result<OwnedFd> {
    let names: Vec<CString> = functions
        .iter()
        .map(|f| CString::new(f.as_str()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput)))
        .collect::<io::Result<_>>()?;
    let pointers: Vec<*const libc::c_char> = names.iter().map(|n| n.as_ptr()).collect();
    // SAFETY: bpf_attr is plain data; all-zero is its "unset" value.
    let mut attr: bpf_attr = unsafe { std::mem::zeroed() };
    // SAFETY: writing the BPF_LINK_CREATE member of the union.
    let create = unsafe { &mut attr.link_create };
    create.__bindgen_anon_1.prog_fd = program.as_raw_fd() as u32;
    create.attach_type = bpf_attach_type::BPF_TRACE_KPROBE_MULTI as u32;
    // SAFETY: writing the kprobe_multi member of the union.
    let multi = unsafe { &mut create.__bindgen_anon_3.kprobe_multi };
    multi.flags = if ret { BPF_F_KPROBE_MULTI_RETURN } else { 0 };
    multi.cnt = pointers.len() as u32;
    multi.syms = pointers.as_ptr() as u64;
    bpf(bpf_cmd::BPF_LINK_CREATE, &attr)
}

fn bpf(cmd: bpf_cmd, attr: &bpf_attr) -> io::Result<OwnedFd> {
    let mut attr = *attr;
    let fd = crate::bpf::sys_bpf(cmd, &mut attr)?;
    // SAFETY: the kernel returned a new file descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}
