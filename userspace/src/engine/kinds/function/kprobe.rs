//! Kprobes and kretprobes on kernel functions: one kprobe.multi link for several functions
//! where the kernel has them ([`super::kprobe_multi`]), else one link per function.

use std::{os::fd::AsFd as _, path::Path};

use aya::programs::KProbe;

use super::{kprobe_multi, kretprobe_event};
use crate::{
    Error, Result,
    bpf::{Object, names::engine as names, object},
    engine::{Engine, attach::Role},
    error::Context as _,
};

/// Present when the kernel has kprobes (CONFIG_KPROBES).
pub(super) const KPROBE_PMU: &str = "/sys/bus/event_source/devices/kprobe";

/// Attaches `functions` through one kprobe.multi link when the kernel has them, else
/// through one kprobe per function. Returns how, for `-v`.
pub(super) fn attach(
    engine: &mut Engine,
    functions: &[String],
    role: Role,
    ret: bool,
) -> Result<String> {
    let name = match (role, ret) {
        (Role::Start, _) => names::KPROBE_START,
        (Role::Main, false) => names::KPROBE,
        (Role::Main, true) => names::KRETPROBE,
    };
    let ret = ret && !role.is_start();
    let kind = if ret { "kretprobe" } else { "kprobe" };
    let mut how = match functions {
        [one] => format!("{kind} {one}"),
        many => format!("{kind} on {} functions", many.len()),
    };
    if functions.len() > 1 && !engine.map_fds.is_empty() {
        match attach_multi(engine, name, functions, role, ret) {
            Ok(()) => return Ok(format!("{kind}.multi on {} functions", functions.len())),
            Err(err) => how.push_str(&format!(", one link each (kprobe.multi: {err})")),
        }
    }
    let program: &mut KProbe = engine
        .ebpf()?
        .program_mut(name)
        .expect("program in object")
        .try_into()
        .context("kprobe program type")?;
    if program.fd().is_err() {
        program
            .load()
            .with_context(|| format!("loading the engine's {kind}"))?;
    }
    if ret {
        let cpus = aya::util::nr_cpus().unwrap_or(1);
        let maxactive = kretprobe_event::maxactive(functions.len(), cpus);
        let fd = program.fd().context("the engine's kretprobe")?.as_fd();
        match kretprobe_event::attach(fd, functions, maxactive) {
            Ok(events) => {
                engine.kretprobe_events.extend(events);
                return Ok(format!("{how} (maxactive {maxactive}, through tracefs)"));
            }
            Err(err) => how.push_str(&format!(
                " (maxactive the kernel's, through the kprobe PMU: {err})"
            )),
        }
    }
    let mut links = Vec::with_capacity(functions.len());
    for function in functions {
        let link = program
            .attach(function, 0)
            .map_err(|err| kprobe_error(kind, function, err))?;
        links.push(
            program
                .take_link(link)
                .with_context(|| format!("owning the {kind} link of {function}"))?,
        );
    }
    engine
        .kprobe_links
        .extend(links.into_iter().map(|link| (role, link)));
    Ok(how)
}

fn attach_multi(
    engine: &mut Engine,
    program: &str,
    functions: &[String],
    role: Role,
    ret: bool,
) -> std::result::Result<(), String> {
    // kprobe.multi came in 5.18, after bpf_loop (5.17): a kernel without bpf_loop has none
    // (and its verifier would refuse the object's bpf_loop callbacks before saying so).
    if !crate::bpf::features::unwinder().bpf_loop {
        return Err("this kernel has none (Linux 5.18+)".to_string());
    }
    let loaded = kprobe_multi::load(
        object(Object::Engine).map_err(|err| err.to_string())?,
        program,
        &engine.map_fds,
    )?;
    // The kernel rejects duplicate names (static functions sharing a name appear once
    // per definition in available_filter_functions).
    let mut unique = functions.to_vec();
    unique.sort_unstable();
    unique.dedup();
    let link = kprobe_multi::attach(&loaded, &unique, ret).map_err(|err| {
        if err.raw_os_error() == Some(libc::EOPNOTSUPP) {
            "this kernel has none (CONFIG_FPROBE is not set)".to_string()
        } else {
            format!("creating the link: {err}")
        }
    })?;
    engine.multi_links.push((role, link, loaded));
    Ok(())
}

/// A kprobe attach failure in one line, naming the missing kernel feature when the kernel
/// has no kprobes at all (`/sys/bus/event_source/devices/kprobe` absent: no CONFIG_KPROBES).
fn kprobe_error(kind: &str, function: &str, err: aya::programs::ProgramError) -> Error {
    if !Path::new(KPROBE_PMU).exists() {
        return Error::runtime(format!(
            "cannot attach a {kind} to {function}: this kernel has no kprobes \
             (CONFIG_KPROBES is not set; /sys/bus/event_source/devices/kprobe is missing)"
        ));
    }
    Error::Runtime {
        what: format!("attaching a {kind} to {function}"),
        source: Some(Box::new(err)),
    }
}

/// Closes kprobe links (or removes kretprobe events), from many threads when there are many:
/// each waits for an RCU grace period, and waits in parallel share grace periods.
pub(crate) fn close_in_parallel<T: Send>(links: Vec<T>) {
    if links.len() <= 4 {
        return;
    }
    let threads = links.len().min(64);
    let mut buckets: Vec<Vec<_>> = (0..threads).map(|_| Vec::new()).collect();
    for (index, link) in links.into_iter().enumerate() {
        buckets[index % threads].push(link);
    }
    std::thread::scope(|scope| {
        for bucket in buckets {
            scope.spawn(move || drop(bucket));
        }
    });
}
