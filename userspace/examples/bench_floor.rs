//! Attaches an empty BPF program to a hook until stdin closes: the cost floor of that hook,
//! for `cargo xtask bench syscount` and `cargo xtask bench engine`.
//!
//! Usage: bench_floor sys_enter                        (raw tracepoint sys_enter)
//!        bench_floor tracepoint raw_syscalls/sys_enter (classic tracepoint)
//!
//! The classic one is two instructions (`r0 = 0; exit`) loaded with bpf(2) and attached
//! through a perf event, as perf and libbpf attach tracepoint programs: the kernel builds
//! the tracepoint's record for it on every event, which a raw tracepoint does not.

use std::{
    io::Read as _,
    os::fd::{FromRawFd as _, OwnedFd},
};

use anyhow::{Context as _, bail};
use aya::programs::RawTracePoint;
use tracekit::bpf::{Object, load_without_kernel_btf, object};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Held until stdin closes.
    let _attached: Box<dyn std::any::Any> = match args.as_slice() {
        [kind, name] if kind == "tracepoint" => {
            let fds = attach_classic(name)?;
            eprintln!("attached an empty program to tracepoint {name}");
            Box::new(fds)
        }
        [] | [_] => {
            let hook = args.first().cloned().unwrap_or_else(|| "sys_enter".into());
            let mut ebpf = load_without_kernel_btf(object(Object::Engine)?, |_| {})?;
            let program: &mut RawTracePoint = ebpf
                .program_mut("engine_empty")
                .expect("engine_empty in the engine object")
                .try_into()?;
            program.load()?;
            program.attach(&hook)?;
            eprintln!("attached an empty program to raw tracepoint {hook}");
            Box::new(ebpf)
        }
        _ => bail!("usage: bench_floor [HOOK] | bench_floor tracepoint SYSTEM/EVENT"),
    };
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    Ok(())
}

/// Loads `r0 = 0; exit` as a tracepoint program and attaches it to tracepoint `name`
/// (`SYSTEM/EVENT`); returns the program's and the perf event's fds.
fn attach_classic(name: &str) -> anyhow::Result<(OwnedFd, OwnedFd)> {
    const BPF_PROG_LOAD: libc::c_long = 5;
    const BPF_PROG_TYPE_TRACEPOINT: u32 = 5;
    // mov64 r0, 0; exit
    let insns: [u64; 2] = [u64::from_le_bytes([0xb7, 0, 0, 0, 0, 0, 0, 0]), 0x95];
    let license = c"GPL";
    // union bpf_attr's BPF_PROG_LOAD part: prog_type, insn_cnt, insns, license; the rest 0.
    let mut attr = [0u8; 128];
    attr[0..4].copy_from_slice(&BPF_PROG_TYPE_TRACEPOINT.to_ne_bytes());
    attr[4..8].copy_from_slice(&(insns.len() as u32).to_ne_bytes());
    attr[8..16].copy_from_slice(&(insns.as_ptr() as u64).to_ne_bytes());
    attr[16..24].copy_from_slice(&(license.as_ptr() as u64).to_ne_bytes());
    // SAFETY: bpf(2) BPF_PROG_LOAD with an attr of the kernel's size whose pointers
    // (instructions, license) outlive the call.
    let prog = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_PROG_LOAD,
            attr.as_mut_ptr(),
            attr.len() as u32,
        )
    };
    if prog < 0 {
        return Err(std::io::Error::last_os_error()).context("loading the empty program");
    }
    // SAFETY: a new fd that bpf(2) returned and nothing else owns.
    let prog = unsafe { OwnedFd::from_raw_fd(prog as i32) };

    let id_path = format!("/sys/kernel/tracing/events/{name}/id");
    let id: u64 = std::fs::read_to_string(&id_path)
        .with_context(|| id_path.clone())?
        .trim()
        .parse()
        .with_context(|| id_path.clone())?;
    let mut perf = perf_event_open_sys::bindings::perf_event_attr {
        type_: perf_event_open_sys::bindings::PERF_TYPE_TRACEPOINT,
        size: std::mem::size_of::<perf_event_open_sys::bindings::perf_event_attr>() as u32,
        config: id,
        ..Default::default()
    };
    perf.__bindgen_anon_1.sample_period = 1;
    // SAFETY: perf_event_open(2) with an initialized attr; every process on CPU 0 (a
    // tracepoint program runs on every CPU whichever CPU its perf event names).
    let event = unsafe {
        perf_event_open_sys::perf_event_open(
            &mut perf,
            -1,
            0,
            -1,
            perf_event_open_sys::bindings::PERF_FLAG_FD_CLOEXEC as _,
        )
    };
    if event < 0 {
        return Err(std::io::Error::last_os_error()).context("perf_event_open");
    }
    // SAFETY: a new fd that perf_event_open(2) returned and nothing else owns.
    let event = unsafe { OwnedFd::from_raw_fd(event) };
    use std::os::fd::AsRawFd as _;
    // SAFETY: ioctls on the perf event fd we own, with the program fd we own.
    unsafe {
        if perf_event_open_sys::ioctls::SET_BPF(event.as_raw_fd(), prog.as_raw_fd() as u32) < 0 {
            return Err(std::io::Error::last_os_error()).context("PERF_EVENT_IOC_SET_BPF");
        }
        if perf_event_open_sys::ioctls::ENABLE(event.as_raw_fd(), 0) < 0 {
            return Err(std::io::Error::last_os_error()).context("PERF_EVENT_IOC_ENABLE");
        }
    }
    Ok((prog, event))
}
