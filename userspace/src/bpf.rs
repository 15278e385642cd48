//! The embedded kernel programs, and what every loader does before loading them.

use crate::{Error, Result};

pub mod btf;
pub mod features;
pub mod names;
mod programs;
#[cfg(test)]
mod stack_depth;

pub use programs::{drop_function_references, keep_programs};

/// A BPF object built from `ebpf/src/bin/`, one per program set (each object's maps are
/// created when it loads, so one set does not pay for another's maps).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Object {
    /// `cpu_sampler`: on-CPU stack sampling (`profile`, `top`, the exporter's profiles).
    CpuSampler,
    /// `engine`: the aggregation engine.
    Engine,
    /// `ksyms`: kernel addresses to names, by the kernel.
    Ksyms,
}

// Empty when the build had no BPF toolchain (see build.rs).
static CPU_SAMPLER: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/cpu_sampler"));
static ENGINE: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/engine"));
static KSYMS: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/ksyms"));

/// The embedded BPF object, or an error saying how to build a binary that has it.
pub fn object(which: Object) -> Result<&'static [u8]> {
    let bytes = match which {
        Object::CpuSampler => CPU_SAMPLER,
        Object::Engine => ENGINE,
        Object::Ksyms => KSYMS,
    };
    if bytes.is_empty() {
        return Err(Error::runtime(
            "this tracekit binary was built without its kernel programs (no bpf-linker or \
             nightly rust-src at build time); build it with `cargo xtask build`",
        ));
    }
    Ok(bytes)
}

/// Lifts `RLIMIT_MEMLOCK`, which kernels before 5.11 charge BPF maps against. Newer kernels
/// account BPF memory to the memory cgroup instead, so a failure (no `CAP_SYS_RESOURCE`) is
/// logged and ignored.
pub fn raise_memlock_limit() {
    let unlimited = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: setrlimit(2) with a live struct.
    if unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &unlimited) } != 0 {
        log::debug!(
            "setrlimit(RLIMIT_MEMLOCK): {} (harmless on kernels that account BPF memory to memcg)",
            std::io::Error::last_os_error()
        );
    }
}

/// The most entries the kernel gives a BPF hash map (`HASH`, `PERCPU_HASH`, `LRU_HASH`):
/// `htab_map_alloc` (kernel/bpf/hashtab.c) rounds the entries up to a power of two of
/// 16-byte buckets and refuses (E2BIG) more buckets than fit in 4 GiB: 2^27 entries. Zero
/// entries is EINVAL. (Checked on 6.18: 2^27 creates, 2^27 + 1 is E2BIG.) Memory is the
/// nearer limit in practice: the maps are allocated up front, ~150 bytes an entry for the
/// engine's groups on 2 CPUs, ~1 KiB for a stack.
pub const MAX_HASH_ENTRIES: u32 = 1 << 27;

/// `entries` for the hash map a flag (`--max-groups`) sizes.
///
/// # Errors
/// A usage error naming the flag and the range the kernel accepts (1 to [`MAX_HASH_ENTRIES`]).
pub fn hash_entries(flag: &str, entries: u32) -> Result<u32> {
    if (1..=MAX_HASH_ENTRIES).contains(&entries) {
        Ok(entries)
    } else {
        Err(Error::usage(format!(
            "{flag} {entries}: {}",
            hash_entries_range()
        )))
    }
}

/// What a hash map size may be, for messages: "expected 1 to 134217728 entries (...)".
pub fn hash_entries_range() -> String {
    format!("expected 1 to {MAX_HASH_ENTRIES} entries (the largest hash map the kernel makes)")
}

/// `kernel.perf_event_max_sample_rate`: the highest `-F` the kernel accepts, in Hz.
pub fn max_sample_rate_hz() -> u64 {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(100_000)
}

/// Checks `-F HZ` against 1 ..= `kernel.perf_event_max_sample_rate`.
pub fn check_frequency(hz: u64) -> Result<u64> {
    let max = max_sample_rate_hz();
    if hz == 0 || hz > max {
        return Err(Error::usage(format!(
            "-F {hz}: the sampling frequency must be between 1 and {max} Hz \
             (kernel.perf_event_max_sample_rate)"
        )));
    }
    Ok(hz)
}

/// Loads `object` with the settings `configure` applies, without aya parsing the kernel's
/// BTF, for programs that need none (perf_event and classic tracepoint programs).
///
/// aya 0.14's `EbpfLoader::new()` always parses `/sys/kernel/btf/vmlinux` (aya#1172; made
/// lazy in releases that need rustc 1.98): 25-30 ms and ~25 MiB of peak memory before the
/// first program loads. While single-threaded, this hides the file: it enters a private
/// mount namespace, binds `/dev/null` over it, builds the loader, and returns to the
/// original namespace before loading. If any step is refused it loads normally.
pub fn load_without_kernel_btf<'a>(
    object: &[u8],
    configure: impl FnOnce(&mut aya::EbpfLoader<'a>),
) -> std::result::Result<aya::Ebpf, aya::EbpfError> {
    let unwinder = features::unwinder();
    let without_references;
    let object = if unwinder.bpf_loop {
        object
    } else {
        match drop_function_references(object) {
            Ok((copy, dropped)) => {
                log::debug!("no bpf_loop: {dropped} function references dropped");
                without_references = copy;
                &without_references[..]
            }
            Err(err) => {
                log::debug!("function references kept: {err}");
                object
            }
        }
    };
    let hidden = HiddenKernelBtf::enter();
    let mut loader: aya::EbpfLoader<'a> = aya::EbpfLoader::new();
    drop(hidden);
    loader.btf(None);
    configure(&mut loader);
    // The unwinder's path on this kernel (objects without an unwinder have no such globals).
    static ON: u8 = 1;
    static OFF: u8 = 0;
    loader
        .override_global(
            names::unwind::BPF_LOOP,
            if unwinder.bpf_loop { &ON } else { &OFF },
            false,
        )
        .override_global(
            names::unwind::TASK_STACK_OFFSET,
            &unwinder.task_stack_offset,
            false,
        )
        .override_global(
            names::unwind::SYSCALLNO_OFFSET,
            &unwinder.syscallno_offset,
            false,
        );
    // The engine's kprobe and uprobe helpers (5.15+).
    let probes = features::probes();
    loader
        .override_global(
            names::engine::FUNC_IP,
            if probes.func_ip { &ON } else { &OFF },
            false,
        )
        .override_global(
            names::engine::ATTACH_COOKIE,
            if probes.attach_cookie { &ON } else { &OFF },
            false,
        );
    let log = kernel_log_enabled();
    loader.override_global(
        names::kernel_log::KERNEL_LOG,
        if log { &ON } else { &OFF },
        false,
    );
    if !log {
        // aya-log's ring buffer (128 KiB) shrinks to one page when nothing writes to it.
        // SAFETY: sysconf(3) has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        loader.map_max_entries(
            names::kernel_log::AYA_LOGS,
            u32::try_from(page).unwrap_or(4096),
        );
    }
    let mut ebpf = loader.load(object)?;
    if log {
        forward_kernel_log(&mut ebpf);
    }
    Ok(ebpf)
}

/// Whether the kernel programs log: at `-vv`, when tracekit's debug messages print.
fn kernel_log_enabled() -> bool {
    log::log_enabled!(target: "tracekit::kernel", log::Level::Debug)
}

/// The kernel log readers of the objects loaded at `-vv`; they live as long as the process.
static KERNEL_LOGGERS: std::sync::Mutex<Vec<aya_log::EbpfLogger<&'static dyn log::Log>>> =
    std::sync::Mutex::new(Vec::new());

/// Forwards the object's kernel log records to the `log` facade (stderr: `tracekit: debug:
/// engine: ...`) from a thread of its own that waits on the ring buffer, so records print
/// as the run goes, whatever loop the command runs; [`flush_kernel_logs`] prints the rest.
fn forward_kernel_log(ebpf: &mut aya::Ebpf) {
    use std::os::fd::AsRawFd as _;
    let logger = match aya_log::EbpfLogger::init(ebpf) {
        Ok(logger) => logger,
        Err(err) => {
            log::debug!("kernel programs' logs not forwarded: {err}");
            return;
        }
    };
    // The fd stays open: the logger is never dropped.
    let fd = logger.as_raw_fd();
    KERNEL_LOGGERS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(logger);
    let spawned = std::thread::Builder::new()
        .name("kernel-log".into())
        .spawn(move || {
            loop {
                let mut poll = libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: poll(2) on one pollfd whose fd the logger keeps open.
                if unsafe { libc::poll(&mut poll, 1, -1) } < 0
                    && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
                {
                    return;
                }
                flush_kernel_logs();
            }
        });
    if let Err(err) = spawned {
        log::debug!("kernel programs' logs not forwarded while the run goes: {err}");
    }
}

/// Prints the kernel log records not printed yet (at `-vv`; nothing otherwise). The run
/// calls it once its probes are detached, so no record is lost to tracekit exiting.
pub fn flush_kernel_logs() {
    let mut loggers = KERNEL_LOGGERS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for logger in loggers.iter_mut() {
        logger.flush();
    }
}

/// While alive, this thread sees an empty `/sys/kernel/btf/vmlinux`.
struct HiddenKernelBtf {
    original: Option<std::os::fd::OwnedFd>,
    cwd: Option<std::fs::File>,
}

impl HiddenKernelBtf {
    fn enter() -> Self {
        use std::os::fd::OwnedFd;
        let original: Option<OwnedFd> = std::fs::File::open("/proc/self/ns/mnt")
            .ok()
            .map(Into::into);
        let Some(original) = original else {
            return Self {
                original: None,
                cwd: None,
            };
        };
        // setns(2) into a mount namespace moves the working directory to its root: keep a
        // handle to come back to (relative `-o` paths were written to `/`).
        let cwd = std::fs::File::open(".").ok();
        // SAFETY: unshare(2) and mount(2) with NUL-terminated constant strings; they affect
        // only this process's private copy of the mount namespace.
        let hidden = unsafe {
            libc::unshare(libc::CLONE_NEWNS) == 0
                && libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ) == 0
                && libc::mount(
                    c"/dev/null".as_ptr(),
                    c"/sys/kernel/btf/vmlinux".as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND,
                    std::ptr::null(),
                ) == 0
        };
        if !hidden {
            log::debug!(
                "cannot hide kernel BTF from the loader ({}); aya will parse it",
                std::io::Error::last_os_error()
            );
        }
        Self {
            original: Some(original),
            cwd,
        }
    }
}

impl Drop for HiddenKernelBtf {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd as _;
        if let Some(original) = &self.original {
            // SAFETY: setns(2) back into the namespace we started in.
            if unsafe { libc::setns(original.as_raw_fd(), libc::CLONE_NEWNS) } != 0 {
                log::debug!(
                    "returning to the original mount namespace: {}",
                    std::io::Error::last_os_error()
                );
            }
        }
        if let Some(cwd) = &self.cwd {
            // SAFETY: fchdir(2) on an open directory fd.
            if unsafe { libc::fchdir(cwd.as_raw_fd()) } != 0 {
                log::debug!(
                    "returning to the working directory: {}",
                    std::io::Error::last_os_error()
                );
            }
        }
    }
}

/// `bpf(2)` for the commands aya 0.14 does not wrap (kprobe.multi loads and links, test
/// runs): the kernel's return value.
pub(crate) fn sys_bpf(
    cmd: aya_obj::generated::bpf_cmd,
    attr: &mut aya_obj::generated::bpf_attr,
) -> std::io::Result<i64> {
    // SAFETY: bpf(2) reads and writes `attr` (and the buffers it points to, which the caller
    // keeps alive for the call).
    let ret = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd as libc::c_int,
            attr as *mut aya_obj::generated::bpf_attr,
            std::mem::size_of::<aya_obj::generated::bpf_attr>(),
        )
    };
    if ret < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}
