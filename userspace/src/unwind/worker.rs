//! Unwind tables built off the sampling thread, the processes that need them most first.
//!
//! Building a binary's table takes from microseconds (a small C program) to seconds
//! (`libLLVM`, `rustc`'s driver), and a whole machine's tens of seconds on a development
//! machine. Done on the thread that reads the announcement ring, it delays reading the
//! memory maps of processes sampled meanwhile: a process that exits in that time is never
//! symbolized. [`UnwindWorker`] runs the [`UnwindTables`] on two threads of their own:
//! - the **front** thread (`tk-unwind`) serves what cannot wait: a process announced by the
//!   kernel (at its first sample, again after an `exec`) whose mappings hold an interpreter
//!   ([`interp::may_hold_interpreter`]) or whose binaries all have tables already (a new
//!   Python process of a known build: only its mapping table and its interpreter are
//!   published), and a process loaded with [`Unwinder::load_process_now`] (`-- CMD` held at
//!   its `exec`). It also names the code objects interpreters announce, every
//!   [`ANNOUNCED_POLL`];
//! - the **back** thread (`tk-unwind-bulk`) loads the other announced processes, then the
//!   rest of the machine (with `-a`). It builds each new binary's table without holding the
//!   tables (a `libLLVM` takes seconds), so the front thread is never behind it, and takes
//!   them only to load the built rows and publish the process. It runs at nice
//!   [`BACK_NICE`], so that on a busy machine its builds do not slow the front thread's.
//!
//! A shared object built for one process (`libpython`, `libc`) is reused by every process
//! that maps it (by file, then by build ID). [`UnwindWorker::finish`] hands the tables back
//! for the report: the back thread drops what it is building when it next looks.

use std::{
    collections::VecDeque,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
        mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender, TryRecvError, TrySendError},
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use super::{UnwindTables, interp, process, table};

/// Announced processes waiting for the tables' threads, at most: threads busy for seconds
/// while thousands of processes are announced hold this many pids, not all of them (those
/// past it are counted, and walked by frame pointers).
pub const QUEUE_PIDS: usize = 4096;

/// How often the front thread reads the code objects interpreters announced (their names
/// are read from the process's memory, which a short-lived process takes with it).
const ANNOUNCED_POLL: Duration = Duration::from_millis(10);

/// How long the back thread waits for work when it has none before looking at `stop`.
const BACK_POLL: Duration = Duration::from_millis(100);

/// The tables both threads use; `None` once [`UnwindWorker::finish`] took them back.
type Shared = Arc<Mutex<Option<Box<UnwindTables>>>>;

/// Runs `f` on the shared tables; `None` when they were taken back.
fn with<R>(shared: &Shared, f: impl FnOnce(&mut UnwindTables) -> R) -> Option<R> {
    let mut guard = shared
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    guard.as_deref_mut().map(f)
}

/// Work for the front thread.
enum Job {
    /// Announced by the kernel: loaded now when it cannot wait, else sent to the back.
    Announced(u32),
    /// Loaded now; the sender hears when it is published.
    Now(u32, Sender<()>),
}

/// Work for the back thread.
enum Back {
    Announced(u32),
    /// The rest of the machine, after every announced process.
    Scan(Vec<u32>),
}

/// [`UnwindTables`] running on their own threads (see the module docs).
pub struct UnwindWorker {
    queue: SyncSender<Job>,
    /// Announcements dropped because the queue was full.
    dropped: u64,
    stop: Arc<AtomicBool>,
    shared: Shared,
    front: JoinHandle<()>,
}

impl UnwindWorker {
    /// Moves `tables` to new threads. With `scan_all`, they load every process of the
    /// machine but `except` (tracekit): those with an interpreter first, then the rest
    /// after the processes announced meanwhile.
    ///
    /// # Errors
    /// When a thread cannot be spawned; the tables are returned with the error.
    pub fn start(
        tables: Box<UnwindTables>,
        scan_all: bool,
        except: u32,
    ) -> Result<Self, Box<UnwindTables>> {
        let shared: Shared = Arc::new(Mutex::new(Some(tables)));
        let take_back = |shared: &Shared| {
            shared
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .take()
                .expect("the threads never ran")
        };
        let (queue, jobs) = mpsc::sync_channel(QUEUE_PIDS);
        let (to_back, back_jobs) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let back = {
            let (shared, stop) = (Arc::clone(&shared), Arc::clone(&stop));
            std::thread::Builder::new()
                .name("tk-unwind-bulk".into())
                .spawn(move || run_back(&shared, &back_jobs, &stop))
        };
        // Not joined: it ends at its next look at `stop` (after the binary it builds).
        if back.is_err() {
            return Err(take_back(&shared));
        }
        let front = {
            let (shared, stop) = (Arc::clone(&shared), Arc::clone(&stop));
            std::thread::Builder::new()
                .name("tk-unwind".into())
                .spawn(move || {
                    run_front(&shared, &jobs, &to_back, &stop, scan_all.then_some(except));
                })
        };
        match front {
            Ok(front) => Ok(Self {
                queue,
                dropped: 0,
                stop,
                shared,
                front,
            }),
            Err(_) => {
                stop.store(true, Ordering::Relaxed);
                Err(take_back(&shared))
            }
        }
    }

    /// Queues `pid` (announced, or exec'd again) to have its tables loaded; counts it as
    /// dropped when [`QUEUE_PIDS`] are queued already.
    pub fn load_process(&mut self, pid: u32) {
        match self.queue.try_send(Job::Announced(pid)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => self.dropped += 1,
            // The thread ended: nothing more is loaded anyway.
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    /// Has the front thread load `pid` before anything else queued and waits until it is
    /// published, for at most `limit`; returns whether it was.
    pub fn load_process_now(&mut self, pid: u32, limit: Duration) -> bool {
        let (done, published) = mpsc::channel();
        // A blocking send: the front thread empties its queue quickly (it builds no big
        // binary), and an announcement must not be dropped here.
        let deadline = Instant::now() + limit;
        let mut job = Job::Now(pid, done);
        loop {
            match self.queue.try_send(job) {
                Ok(()) => break,
                Err(TrySendError::Full(back)) if Instant::now() < deadline => {
                    job = back;
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(_) => return false,
            }
        }
        published
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .is_ok()
    }

    /// Stops the threads and returns the tables (which count the announcements the full
    /// queue dropped). The front thread ends after the process it is loading now; the back
    /// thread may still be building a binary, which it drops.
    pub fn finish(self) -> Box<UnwindTables> {
        self.stop.store(true, Ordering::Relaxed);
        drop(self.queue);
        if let Err(panic) = self.front.join() {
            std::panic::resume_unwind(panic);
        }
        let mut tables = self
            .shared
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
            .expect("tables taken back once");
        tables.add_queue_dropped(self.dropped);
        tables
    }
}

/// Whether `mappings` hold a file that may be an interpreter (with interpreters enabled).
fn maps_interpreter(mappings: &[process::ExecMapping]) -> bool {
    interp::enabled()
        && mappings.iter().any(|mapping| match &mapping.backing {
            process::Backing::File { path, .. } => interp::may_hold_interpreter(path),
            _ => false,
        })
}

/// Whether announced process `pid` goes before the rest: it maps an interpreter, or every
/// binary it maps has a table already (loading it only publishes its mapping table).
/// `None` when it is gone.
fn cannot_wait(shared: &Shared, pid: u32) -> Option<bool> {
    let mappings = process::exec_mappings(pid).ok()?;
    if maps_interpreter(&mappings) {
        return Some(true);
    }
    with(shared, |tables| {
        tables.unknown_binaries(&mappings).is_empty()
    })
}

fn run_front(
    shared: &Shared,
    jobs: &Receiver<Job>,
    to_back: &Sender<Back>,
    stop: &AtomicBool,
    scan_all_but: Option<u32>,
) {
    let load = |pid: u32| {
        with(shared, |tables| {
            tables.load_process(pid);
            tables.read_announced_codes();
        })
    };
    let handle = |job: Job| match job {
        Job::Announced(pid) => match cannot_wait(shared, pid) {
            Some(true) => {
                load(pid);
            }
            Some(false) => {
                // A JIT runtime is named from its first samples; its tables can wait.
                with(shared, |tables| tables.load_jit_runtimes(&[pid]));
                let _ = to_back.send(Back::Announced(pid));
            }
            None => {}
        },
        Job::Now(pid, done) => {
            // Held at its exec: the libraries it is about to map too.
            with(shared, |tables| tables.prepare_libraries(pid));
            load(pid);
            let _ = done.send(());
        }
    };
    if let Some(except) = scan_all_but {
        // The machine's interpreters first, here; the rest to the back thread.
        let mut rest = Vec::new();
        let pids = super::live_pids(except);
        // JIT runtimes (V8) need no tables: published for every process before any is built.
        with(shared, |tables| tables.load_jit_runtimes(&pids));
        for pid in pids {
            loop {
                match jobs.try_recv() {
                    Ok(job) => handle(job),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => return,
                }
            }
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let mappings = process::exec_mappings(pid).unwrap_or_default();
            if maps_interpreter(&mappings) {
                load(pid);
            } else if !mappings.is_empty() {
                rest.push(pid);
            }
        }
        let _ = to_back.send(Back::Scan(rest));
    }
    loop {
        // Woken at least every ANNOUNCED_POLL to name the code objects interpreters ran.
        if with(shared, UnwindTables::read_announced_codes).is_none() {
            return;
        }
        match jobs.recv_timeout(ANNOUNCED_POLL) {
            Ok(job) => {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                handle(job);
            }
            Err(RecvTimeoutError::Timeout) => {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
            }
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    with(shared, UnwindTables::read_announced_codes);
}

/// How long a whole-machine run builds interpreter processes' tables before sampling
/// starts; the rest are built while it runs.
pub const PREPARE_INTERPRETERS: Duration = Duration::from_secs(2);

/// The back thread's nice value: its builds yield the CPU to the front thread's (and to the
/// machine's work) on a busy machine. A sampled process's big binary (a compiler's 3.9 M
/// rows) may then wait for seconds on a machine at load 8; at nice 0 its build took a
/// CPU from the work being profiled.
const BACK_NICE: i32 = 10;

fn run_back(shared: &Shared, jobs: &Receiver<Back>, stop: &AtomicBool) {
    // SAFETY: gettid(2) and setpriority(2) on this thread only (Linux nice is per thread).
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        if libc::setpriority(libc::PRIO_PROCESS, tid, BACK_NICE) != 0 {
            log::debug!(
                "unwind tables' back thread keeps its priority: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    let mut announced = VecDeque::new();
    let mut scan = VecDeque::new();
    let take = |job: Back, announced: &mut VecDeque<u32>, scan: &mut VecDeque<u32>| match job {
        Back::Announced(pid) => announced.push_back(pid),
        Back::Scan(pids) => scan.extend(pids),
    };
    loop {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        loop {
            match jobs.try_recv() {
                Ok(job) => take(job, &mut announced, &mut scan),
                Err(TryRecvError::Empty) => break,
                // The front thread ended: so does the run.
                Err(TryRecvError::Disconnected) => return,
            }
        }
        let next = announced
            .pop_front()
            .map(|pid| (pid, false))
            .or_else(|| scan.pop_front().map(|pid| (pid, true)));
        let Some((pid, scanned)) = next else {
            match jobs.recv_timeout(BACK_POLL) {
                Ok(job) => take(job, &mut announced, &mut scan),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            continue;
        };
        // A scanned process announced (and loaded) meanwhile is not loaded twice.
        if scanned && with(shared, |tables| tables.is_published(pid)) != Some(false) {
            continue;
        }
        if !build_binaries(shared, pid, stop)
            || with(shared, |tables| tables.load_process(pid)).is_none()
        {
            return;
        }
    }
}

/// Builds the tables of the binaries `pid` maps that have none yet, without holding the
/// shared tables while building. Returns false when the tables were taken back or the run
/// stops. What cannot be opened or parsed here is left to [`UnwindTables::load_process`],
/// which records why.
fn build_binaries(shared: &Shared, pid: u32, stop: &AtomicBool) -> bool {
    let Ok(mappings) = process::exec_mappings(pid) else {
        return true;
    };
    let Some(unknown) = with(shared, |tables| tables.unknown_binaries(&mappings)) else {
        return false;
    };
    for mapping in unknown {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let started = Instant::now();
        let Ok(file) = process::open_mapped_file(pid, &mapping) else {
            continue;
        };
        // SAFETY: a read-only private mapping; a file truncated under us could fault, as
        // with every profiler that reads the binaries it profiles.
        let Ok(data) = (unsafe { memmap2::Mmap::map(&file) }) else {
            continue;
        };
        let Ok(parsed) = table::parse(&data) else {
            continue;
        };
        let build_id = {
            use object::Object as _;
            parsed.build_id().ok().flatten().map(<[u8]>::to_vec)
        };
        match with(shared, |tables| {
            tables.knows_binary(&mapping, build_id.as_deref())
        }) {
            None => return false,
            Some(true) => continue,
            Some(false) => {}
        }
        let built = table::build_from(&parsed);
        let took = started.elapsed();
        if with(shared, |tables| {
            tables.add_built(&mapping, build_id, built, took)
        })
        .is_none()
        {
            return false;
        }
    }
    true
}

/// The unwind tables of one loaded BPF object over a run: built in line until sampling
/// starts (so that the first samples of `-p` processes and `-- CMD` have them), then on their
/// own thread ([`UnwindWorker`]), and back in line for the report.
pub struct Unwinder {
    /// Always `Some` between calls; `None` only while moving between the two.
    state: Option<State>,
}

enum State {
    Here(Box<UnwindTables>),
    Worker(UnwindWorker),
}

impl Unwinder {
    /// Tables that start in line.
    pub fn new(tables: UnwindTables) -> Self {
        Self {
            state: Some(State::Here(Box::new(tables))),
        }
    }

    /// The tables, back from their thread if they were on one (which stops building: call
    /// this for the final report).
    pub fn tables(&mut self) -> &mut UnwindTables {
        let tables = match self.state.take().expect("unwinder state") {
            State::Here(tables) => tables,
            State::Worker(worker) => worker.finish(),
        };
        match self.state.insert(State::Here(tables)) {
            State::Here(tables) => tables,
            State::Worker(_) => unreachable!("just inserted"),
        }
    }

    /// Builds, now, the tables the first events will need: those a command about to run
    /// maps (`program`, its `argv[0]`: see [`UnwindTables::prepare_command`]; the command is
    /// announced after its exec), else those of `pids`, else (the whole machine) those of
    /// the processes that run an interpreter, for at most [`PREPARE_INTERPRETERS`]: without
    /// its tables no frame of an interpreter's process is walked past the first, and a
    /// short `-a` run lost 8-17% of four interpreters' samples so on a busy machine.
    pub fn prepare(&mut self, program: Option<&std::path::Path>, pids: Option<&[u32]>) {
        let tables = self.tables();
        match (program, pids) {
            (Some(program), _) => tables.prepare_command(program),
            (None, Some(pids)) => {
                for &pid in pids {
                    tables.load_process(pid);
                }
            }
            (None, None) => {
                let started = Instant::now();
                let pids = super::live_pids(std::process::id());
                tables.load_jit_runtimes(&pids);
                let mut loaded = 0;
                for pid in pids {
                    if started.elapsed() >= PREPARE_INTERPRETERS {
                        break;
                    }
                    let mappings = process::exec_mappings(pid).unwrap_or_default();
                    if maps_interpreter(&mappings) && tables.load_process(pid) {
                        loaded += 1;
                    }
                }
                log::debug!(
                    "unwind: the tables of {loaded} interpreter processes before sampling, in \
                     {:.0} ms",
                    started.elapsed().as_secs_f64() * 1e3
                );
            }
        }
    }

    /// Moves the tables to their own thread, which first loads every process of the
    /// machine (but tracekit) with `scan_all`; falls back to loading in line if no thread
    /// can be started.
    pub fn start(&mut self, scan_all: bool) {
        let own_pid = std::process::id();
        self.state = Some(match self.state.take().expect("unwinder state") {
            State::Here(tables) => match UnwindWorker::start(tables, scan_all, own_pid) {
                Ok(worker) => State::Worker(worker),
                Err(mut tables) => {
                    log::debug!("no thread for the unwind tables: building them in line");
                    if scan_all {
                        tables.load_all_processes(own_pid);
                    }
                    State::Here(tables)
                }
            },
            running => running,
        });
    }

    /// Loads the tables of `pid` now, before anything queued, and waits until they are
    /// published (at most `limit` when they are on their thread): `-- CMD` held at its
    /// `exec`, so that its first samples have them. Returns whether they were.
    pub fn load_process_now(&mut self, pid: u32, limit: Duration) -> bool {
        match self.state.as_mut().expect("unwinder state") {
            State::Worker(worker) => worker.load_process_now(pid, limit),
            State::Here(tables) => {
                tables.prepare_libraries(pid);
                tables.load_process(pid)
            }
        }
    }

    /// Loads the tables of `pid` (announced at its first event, or again after `exec`): on
    /// the tables' thread when they are on one, else now.
    pub fn load_process(&mut self, pid: u32) {
        match self.state.as_mut().expect("unwinder state") {
            State::Worker(worker) => worker.load_process(pid),
            State::Here(tables) => {
                tables.load_process(pid);
            }
        }
    }
}
