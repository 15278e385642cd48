//! USDT probe sites: uprobes at the sites' file offsets, created with the semaphore's file
//! offset as `ref_ctr_offset` so the kernel counts the semaphore while they are attached
//! ([`attach`]; aya 0.14's uprobe attach has no such parameter). Each site's attach cookie
//! is its event index ([`Usdt::events`]), which the program reads: sites of one probe share
//! it, so a probe inlined in several places counts as one event.

use std::os::fd::{AsFd as _, AsRawFd as _, BorrowedFd, FromRawFd as _, OwnedFd};

use aya::programs::UProbe;

use crate::{
    Error, Result,
    bpf::names::engine as names,
    engine::{
        Engine,
        attach::{AttachPoint, Role},
    },
    error::Context as _,
    probe::usdt::ProbeSite,
};

/// A stage on USDT probe sites (of one or several binaries).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Usdt {
    /// The sites, from [`crate::probe::usdt::probes`].
    pub sites: Vec<ProbeSite>,
    /// The event index each site reports (its attach cookie), one per site.
    pub events: Vec<u32>,
    /// Limit the probes (and the semaphores) to this process (`-p PID`); `None`: every
    /// process that maps the binary, now or later.
    pub pid: Option<u32>,
}

impl Usdt {
    /// Sites numbered as events in order (site `i` reports event `i`).
    pub fn new(sites: Vec<ProbeSite>, pid: Option<u32>) -> Self {
        Self {
            events: (0..sites.len() as u32).collect(),
            sites,
            pid,
        }
    }
}

impl AttachPoint for Usdt {
    fn attach(&self, engine: &mut Engine, role: Role) -> Result<()> {
        let name = match role {
            Role::Start => names::UPROBE_START,
            Role::Main => names::UPROBE,
        };
        let program: &mut UProbe = engine
            .ebpf()?
            .program_mut(name)
            .expect("program in object")
            .try_into()
            .context("uprobe program type")?;
        program.load().context("loading the engine's uprobe")?;
        let fd = program.fd().context("the engine's uprobe")?.as_fd();
        let mut links = Vec::with_capacity(self.sites.len());
        for (index, site) in self.sites.iter().enumerate() {
            let event = self.events.get(index).copied().unwrap_or(index as u32);
            links.push((role, attach(fd, site, self.pid, u64::from(event))?));
        }
        engine.usdt_links.extend(links);
        Ok(())
    }

    fn events(&self) -> usize {
        self.sites.len()
    }
}

/// A USDT uprobe attached to a BPF program: the perf event and the BPF link (the engine's
/// [`Usdt`] keeps them). Dropping it
/// detaches the probe (and the kernel decrements the semaphore).
#[derive(Debug)]
pub struct UsdtLink {
    _perf_event: OwnedFd,
    _link: OwnedFd,
}

/// Attaches the uprobe program `program` at `site`: in process `pid` only, or in every
/// process mapping the binary (`None`). The kernel increments the probe's semaphore (if it
/// has one) in those processes while the probe is attached (`ref_ctr_offset`, Linux 4.20+).
/// `cookie` is what `bpf_get_attach_cookie()` returns in the program (Linux 5.15+).
///
/// aya 0.14's `UProbe::attach` has no `ref_ctr_offset`, so this opens the uprobe perf
/// event itself (the `uprobe` PMU; the offset goes where
/// `/sys/bus/event_source/devices/uprobe/format/ref_ctr_offset` says, `config:32-63`) and
/// links the loaded program to it with `BPF_LINK_CREATE`.
pub fn attach(
    program: BorrowedFd<'_>,
    site: &ProbeSite,
    pid: Option<u32>,
    cookie: u64,
) -> Result<UsdtLink> {
    let what = || {
        format!(
            "attaching USDT probe {} in {}",
            site.qualified_name(),
            site.binary.display()
        )
    };
    let pmu_type: u32 = read_sysfs_number("/sys/bus/event_source/devices/uprobe/type")
        .ok_or_else(|| Error::runtime(format!("{}: no uprobe PMU in sysfs", what())))?;
    let mut config = 0u64;
    if let Some(ref_ctr) = site.semaphore_file_offset {
        let shift = ref_ctr_shift().ok_or_else(|| {
            Error::runtime(format!(
                "{}: this kernel cannot count USDT semaphores (no uprobe ref_ctr_offset; Linux 4.20+)",
                what()
            ))
        })?;
        config |= ref_ctr << shift;
    }
    let path = std::ffi::CString::new(site.binary.as_os_str().as_encoded_bytes())
        .map_err(|_| Error::usage(format!("{}: NUL in the path", what())))?;
    // SAFETY: an all-zero perf_event_attr is valid; the fields below are set as the uprobe
    // PMU expects (config1: path, config2: file offset).
    let mut attr: perf_event_open_sys::bindings::perf_event_attr = unsafe { std::mem::zeroed() };
    attr.size = std::mem::size_of_val(&attr) as u32;
    attr.type_ = pmu_type;
    attr.config = config;
    attr.__bindgen_anon_3.config1 = path.as_ptr() as u64;
    attr.__bindgen_anon_4.config2 = site.file_offset;
    attr.set_disabled(0);
    let (pid, cpu) = match pid {
        Some(pid) => (pid as i32, -1),
        None => (-1, 0),
    };
    // SAFETY: attr is initialised and `path` outlives the call.
    let fd = unsafe {
        perf_event_open_sys::perf_event_open(
            &mut attr,
            pid,
            cpu,
            -1,
            perf_event_open_sys::bindings::PERF_FLAG_FD_CLOEXEC as u64,
        )
    };
    if fd < 0 {
        return Err(Error::Runtime {
            what: format!("{}: perf_event_open(uprobe)", what()),
            source: Some(Box::new(std::io::Error::last_os_error())),
        });
    }
    // SAFETY: a fresh descriptor nobody else owns.
    let perf_event = unsafe { OwnedFd::from_raw_fd(fd) };
    let link = bpf_link_create_perf_event(program, perf_event.as_fd(), cookie).map_err(|err| {
        Error::Runtime {
            what: format!("{}: BPF_LINK_CREATE", what()),
            source: Some(Box::new(err)),
        }
    })?;
    Ok(UsdtLink {
        _perf_event: perf_event,
        _link: link,
    })
}

fn read_sysfs_number<T: std::str::FromStr>(path: &str) -> Option<T> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The bit where `ref_ctr_offset` starts in the uprobe PMU's `config`, from
/// `/sys/bus/event_source/devices/uprobe/format/ref_ctr_offset` (`config:32-63`).
fn ref_ctr_shift() -> Option<u32> {
    let format =
        std::fs::read_to_string("/sys/bus/event_source/devices/uprobe/format/ref_ctr_offset")
            .ok()?;
    let bits = format.trim().strip_prefix("config:")?;
    bits.split('-').next()?.parse().ok()
}

/// `BPF_LINK_CREATE` of a perf event link with a cookie (`union bpf_attr`'s `link_create`:
/// prog_fd, target_fd, attach_type, flags, then `perf_event.bpf_cookie`).
fn bpf_link_create_perf_event(
    program: BorrowedFd<'_>,
    perf_event: BorrowedFd<'_>,
    cookie: u64,
) -> std::io::Result<OwnedFd> {
    const BPF_LINK_CREATE: libc::c_long = 28;
    const BPF_PERF_EVENT: u32 = 41;
    #[repr(C)]
    struct LinkCreate {
        prog_fd: u32,
        target_fd: u32,
        attach_type: u32,
        flags: u32,
        bpf_cookie: u64,
        _rest: [u64; 14],
    }
    let attr = LinkCreate {
        prog_fd: program.as_raw_fd() as u32,
        target_fd: perf_event.as_raw_fd() as u32,
        attach_type: BPF_PERF_EVENT,
        flags: 0,
        bpf_cookie: cookie,
        _rest: [0; 14],
    };
    // SAFETY: bpf(2) reads `size` bytes of a zero-padded attr.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_LINK_CREATE,
            &attr as *const LinkCreate,
            std::mem::size_of::<LinkCreate>() as u32,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}
