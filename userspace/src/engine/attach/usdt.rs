//! USDT probe sites: uprobes at the sites' file offsets, created with the semaphore's file
//! offset as `ref_ctr_offset` so the kernel counts the semaphore while they are attached
//! ([`attach`]; aya 0.14's uprobe attach has no such parameter). Site `i` gets
//! attach cookie `i`, which the program reads as its event index.

use std::os::fd::{AsFd as _, AsRawFd as _, BorrowedFd, FromRawFd as _, OwnedFd};

use aya::programs::UProbe;

use super::{AttachPoint, Role};
use crate::{Error, Result, engine::Engine, error::Context as _, probe::usdt::ProbeSite};

/// A stage on USDT probe sites (of one or several binaries).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Usdt {
    /// The sites, from [`crate::probe::usdt::probes`].
    pub sites: Vec<ProbeSite>,
    /// Limit the probes (and the semaphores) to this process (`-p PID`); `None`: every
    /// process that maps the binary, now or later.
    pub pid: Option<u32>,
}

impl AttachPoint for Usdt {
    fn attach(&self, engine: &mut Engine, role: Role) -> Result<()> {
        let name = match role {
            Role::Start => "engine_uprobe_start",
            Role::Main => "engine_uprobe",
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
            links.push((role, attach(fd, site, self.pid, index as u64)?));
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::probe::usdt::probes;

    /// The kernel side, on the real kernel (root): the USDT fixture (`tests/fixtures/
    /// tk_usdt.c`, built at -O0 so its arguments are `%rbp`-relative memory) fires tk:tick
    /// 1000 times; the engine counts exactly 1000, with arg1 in the 16 and 4096 log2
    /// buckets 500 times each, arg2 = -3 (a signed short) and arg3 = 5 (a constant) as
    /// keys, and the sum of arg0 = 0 + 1 + ... + 999. Then the semaphore-guarded probe fires
    /// only while attached (about a third of the fixture's run), is counted each time but
    /// at the edges, and the semaphore is back to 0 once detached.
    #[test]
    fn usdt_arguments_and_semaphores_in_the_kernel() {
        use crate::engine::{Engine, EngineSpec, PlanBuilder, Stage, Targets};
        // SAFETY: geteuid(2) has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: loading BPF programs needs root (cargo xtask test)");
            return;
        }
        if crate::bpf::object(crate::bpf::Object::Engine).is_err() {
            eprintln!("skipped: built without the kernel programs (cargo xtask build)");
            return;
        }
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/tk_usdt.c");
        let dir = std::env::temp_dir().join(format!("tk-usdt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let binary = dir.join("tk_usdt");
        let gcc = std::process::Command::new("gcc")
            .args(["-O0", "-g", "-fno-omit-frame-pointer", "-o"])
            .arg(&binary)
            .arg(&source)
            .output()
            .unwrap();
        if !gcc.status.success() {
            eprintln!(
                "skipped: tk_usdt.c does not build (apt-get install systemtap-sdt-dev): {}",
                String::from_utf8_lossy(&gcc.stderr)
            );
            return;
        }

        let ticks = probes(&binary, Some("tk"), Some("tick")).unwrap();
        assert_eq!(ticks.len(), 1);
        let args = &ticks[0].args;
        assert_eq!(args.len(), 4, "{}", ticks[0].arg_specs);
        let mut plan = PlanBuilder::new();
        let arg0 = plan.operand(args[0].operand().unwrap()).unwrap();
        let arg1 = plan.operand(args[1].operand().unwrap()).unwrap();
        let arg2 = plan.operand(args[2].operand().unwrap()).unwrap();
        let arg3 = plan.operand(args[3].operand().unwrap()).unwrap();
        plan.key_part(arg2).unwrap();
        plan.key_part(arg3).unwrap();
        plan.value(arg1);
        plan.log2();
        plan.layout(None);
        let histogram = run_engine(&plan, ticks.clone(), &binary, &["ticks", "1000"]);
        let key = [(-3i64) as u64, 5];
        let cells: Vec<(u32, u64, u64)> = histogram
            .cells
            .iter()
            .map(|((words, slot), value)| {
                assert_eq!(words[..2], key[..], "{:?}", histogram.cells);
                (*slot, value.count, value.sum)
            })
            .collect();
        assert_eq!(cells, [(4, 500, 500 * 16), (12, 500, 500 * 4096)]);
        assert_eq!(histogram.stats.read_errors, 0);

        let _ = arg0;
        let mut plan = PlanBuilder::new();
        let arg0 = plan.operand(args[0].operand().unwrap()).unwrap();
        plan.value(arg0);
        plan.layout(Some(1));
        let sum = run_engine(&plan, ticks, &binary, &["ticks", "1000"]);
        let cells: Vec<_> = sum.cells.values().map(|v| (v.count, v.sum)).collect();
        assert_eq!(cells, [(1000, 999 * 1000 / 2)]);

        // The guarded probe: attached for about 1 s of the fixture's 3 s.
        let guarded = probes(&binary, Some("tk"), Some("guarded")).unwrap();
        assert!(guarded[0].semaphore_file_offset.is_some());
        let fixture = std::process::Command::new(&binary)
            .args(["guarded", "3000"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(700));
        let mut plan = PlanBuilder::new();
        plan.layout(Some(1));
        let spec = EngineSpec::new(
            Stage {
                plan: plan.plan(),
                attach: std::sync::Arc::new(crate::engine::attach::usdt::Usdt {
                    sites: guarded,
                    pid: Some(fixture.id()),
                }),
            },
            None,
        );
        let mut engine = Engine::load(&spec, &Targets::default()).unwrap();
        engine.attach(&spec).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1000));
        engine.detach();
        let counted: u64 = engine.read().unwrap().cells.values().map(|v| v.count).sum();
        let output = fixture.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let field = |name: &str| -> u64 {
            stdout
                .lines()
                .find_map(|line| line.strip_prefix(name)?.strip_prefix('='))
                .unwrap_or_else(|| panic!("no {name} in {stdout}"))
                .parse()
                .unwrap()
        };
        let (iterations, fired) = (field("iterations"), field("fired"));
        // The kernel sets the semaphore when the uprobe is created, just before the program
        // is linked to it, and clears it when the uprobe goes, just after the program is
        // unlinked: the fixture may fire in those two short windows uncounted.
        assert!(
            counted <= fired && counted * 10 >= fired * 9,
            "{counted}: {stdout}"
        );
        assert!(fired > 0 && fired < iterations / 2, "{stdout}");
        assert_eq!(field("semaphore_at_exit"), 0, "{stdout}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Loads `plan` on `sites` (every process mapping the binary), runs `binary ARGS` to its
    /// end, and reads what was aggregated.
    fn run_engine(
        plan: &crate::engine::PlanBuilder,
        sites: Vec<ProbeSite>,
        binary: &Path,
        args: &[&str],
    ) -> crate::engine::Aggregates {
        use crate::engine::{Engine, EngineSpec, Stage, Targets};
        let spec = EngineSpec::new(
            Stage {
                plan: plan.plan(),
                attach: std::sync::Arc::new(crate::engine::attach::usdt::Usdt { sites, pid: None }),
            },
            None,
        );
        let mut engine = Engine::load(&spec, &Targets::default()).unwrap();
        engine.attach(&spec).unwrap();
        let status = std::process::Command::new(binary)
            .args(args)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        engine.detach();
        engine.read().unwrap()
    }
}
