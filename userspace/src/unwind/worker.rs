//! Unwind tables built off the sampling thread.
//!
//! Building a binary's table takes from microseconds (a small C program) to a second or more
//! (`libLLVM`, `rustc`'s driver), and a whole machine's several seconds. Done on the thread
//! that reads the announcement ring, it delays reading the memory maps of processes sampled
//! meanwhile: a process that exits in that time is never symbolized. [`UnwindWorker`] owns the
//! [`UnwindTables`] on a thread of its own: announced processes are queued to it and served
//! before the rest of a whole-machine scan, and [`UnwindWorker::finish`] hands the tables back
//! for the report.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
        mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError},
    },
    thread::JoinHandle,
    time::Duration,
};

use super::UnwindTables;

/// Announced processes waiting for the tables' thread, at most: a thread busy with a big
/// binary for seconds while thousands of processes are announced holds this many pids, not
/// all of them (those past it are counted, and walked by frame pointers).
pub const QUEUE_PIDS: usize = 4096;

/// How often the tables' thread reads the code objects interpreters announced (their names
/// are read from the process's memory, which a short-lived process takes with it).
const ANNOUNCED_POLL: Duration = Duration::from_millis(10);

/// [`UnwindTables`] running on their own thread.
pub struct UnwindWorker {
    queue: SyncSender<u32>,
    /// Announcements dropped because the queue was full.
    dropped: u64,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Box<UnwindTables>>,
}

impl UnwindWorker {
    /// Moves `tables` to a new thread. With `scan_all`, it loads every process of the machine
    /// but `except` (tracekit), serving queued pids first.
    ///
    /// # Errors
    /// When the thread cannot be spawned; the tables are returned with the error.
    pub fn start(
        tables: Box<UnwindTables>,
        scan_all: bool,
        except: u32,
    ) -> Result<Self, Box<UnwindTables>> {
        let (queue, pending) = mpsc::sync_channel(QUEUE_PIDS);
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        // The closure owns the tables; on a failed spawn they come back through the slot.
        let slot = Arc::new(std::sync::Mutex::new(Some(tables)));
        let taken = Arc::clone(&slot);
        let spawned = std::thread::Builder::new()
            .name("tk-unwind".into())
            .spawn(move || {
                let tables = taken
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .take()
                    .expect("tables handed to the thread once");
                run(tables, &pending, &stopping, scan_all.then_some(except))
            });
        match spawned {
            Ok(thread) => Ok(Self {
                queue,
                dropped: 0,
                stop,
                thread,
            }),
            Err(_) => Err(slot
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .take()
                .expect("the thread never ran")),
        }
    }

    /// Queues `pid` (announced, or exec'd again) to have its tables loaded; counts it as
    /// dropped when [`QUEUE_PIDS`] are queued already.
    pub fn load_process(&mut self, pid: u32) {
        match self.queue.try_send(pid) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => self.dropped += 1,
            // The thread ended: nothing more is loaded anyway.
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    /// Stops the thread after the process it is loading now and returns the tables (which
    /// count the announcements the full queue dropped).
    pub fn finish(self) -> Box<UnwindTables> {
        self.stop.store(true, Ordering::Relaxed);
        drop(self.queue);
        match self.thread.join() {
            Ok(mut tables) => {
                tables.add_queue_dropped(self.dropped);
                tables
            }
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

fn run(
    mut tables: Box<UnwindTables>,
    pending: &Receiver<u32>,
    stop: &AtomicBool,
    scan_all_but: Option<u32>,
) -> Box<UnwindTables> {
    // Queued pids are sampled already: they go before the rest of the scan.
    let serve_queue = |tables: &mut UnwindTables| -> bool {
        loop {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            match pending.try_recv() {
                Ok(pid) => {
                    tables.load_process(pid);
                    tables.read_announced_codes();
                }
                Err(TryRecvError::Empty) => return true,
                Err(TryRecvError::Disconnected) => return false,
            }
        }
    };
    if let Some(except) = scan_all_but {
        let pids = super::live_pids(except);
        tables.load_jit_runtimes(&pids);
        for pid in pids {
            if !serve_queue(&mut tables) {
                return tables;
            }
            tables.load_process(pid);
        }
    }
    loop {
        // Woken at least every ANNOUNCED_POLL to name the code objects interpreters ran.
        tables.read_announced_codes();
        match pending.recv_timeout(ANNOUNCED_POLL) {
            Ok(pid) => {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                tables.load_process(pid);
            }
            Err(RecvTimeoutError::Timeout) => {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
            }
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    tables.read_announced_codes();
    tables
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
    /// announced after its exec), else those of `pids`.
    pub fn prepare(&mut self, program: Option<&std::path::Path>, pids: Option<&[u32]>) {
        let tables = self.tables();
        match (program, pids) {
            (Some(program), _) => tables.prepare_command(program),
            (None, Some(pids)) => {
                for &pid in pids {
                    tables.load_process(pid);
                }
            }
            (None, None) => {}
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
