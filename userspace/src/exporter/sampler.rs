//! The exporter's one CPU sampler, shared by every profile request and push for the
//! exporter's life.
//!
//! It is loaded at the first profile asked for (a `/debug/pprof/profile` request or a
//! push), not at startup: an exporter nobody asks for profiles costs nothing for them; and it
//! is unloaded when no profile has been open for `[profile] idle_seconds` (300 by default): a
//! loaded sampler costs ~0.6% of a CPU under heavy process churn (the memory maps and unwind
//! tables of every new process), which a profile asked for once must not leave behind. A
//! scraper (Parca every 10 s) or `--push` keeps it loaded. Its
//! thread owns the [`Profiler`] (user stacks unwound in the kernel from `.eh_frame` tables,
//! as `profile --call-graph dwarf`, the default, does: the whole machine's tables built once
//! on their own thread, each process announced later added as it comes), the announcement
//! ring, and one [`Symbolizer`] (ELF symbol tables only unless `[profile] inlined`: a
//! sampled debug build's DWARF would cost the exporter about its binary's size in RSS) that
//! forgets exited processes after each cut, as `profile -i` does.
//!
//! Sharing: every profile is a window that subscribes to the sampler. The thread cuts the
//! kernel maps ([`Profiler::take_interval`]) when a window opens, when one closes, and every
//! [`DRAIN_EVERY`] in between, symbolizes each cut once and adds its stacks to every window
//! open across it. Overlapping windows (Parca pulling while a push is under way) each get
//! the samples of their own span, to a cut's precision (milliseconds), and none waits for
//! another: serialized, a 15 s push would wait behind a 300 s request. The cuts also keep
//! the kernel maps bounded: they hold at most [`DRAIN_EVERY`]'s keys and stacks, however
//! long the exporter runs.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
        mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError},
    },
    thread::JoinHandle,
    time::{Duration, Instant, SystemTime},
};

use aya::maps::{MapData, RingBuf};
use tokio::sync::oneshot;
use tracekit_common::{
    cpu_sampler::{DEFAULT_COUNT_MAP_ENTRIES, DEFAULT_STACK_MAP_ENTRIES},
    unwind::DEFAULT_TABLE_BUDGET_BYTES,
};

use crate::{
    Error, Result,
    containers::ProcessInfo,
    cpu_sampler::{self as sampler, ProfileOptions, Profiler},
    stacks::{Stack, StackSum},
    symbolize::{Symbolizer, SymbolizerOptions},
};

/// How often the kernel maps are cut when no window opens or closes.
pub const DRAIN_EVERY: Duration = Duration::from_secs(5);

/// How often the thread reads the announcement ring (new processes: their memory maps are
/// read while they live, their unwind tables queued).
const POLL_EVERY: Duration = Duration::from_millis(100);

/// The samples of one window, symbolized.
#[derive(Debug)]
pub struct Window {
    /// When the window opened.
    pub start: SystemTime,
    /// How long it was open.
    pub elapsed: Duration,
    /// Distinct stacks with their sample counts.
    pub stacks: Vec<Stack>,
    /// What was known of each process of the stacks while it ran (its executable, service
    /// name and cgroup: read when it was first sampled, so a process that exited before the
    /// window closed keeps them).
    pub processes: HashMap<u32, ProcessInfo>,
}

/// The processes the sampler saw, read once each while they run.
#[derive(Default)]
struct Processes(HashMap<u32, ProcessInfo>);

impl Processes {
    /// Reads the processes of `stacks` not known yet.
    fn note(&mut self, stacks: &[Stack]) {
        for stack in stacks {
            self.0
                .entry(stack.pid)
                .or_insert_with(|| ProcessInfo::read(stack.pid));
        }
    }

    /// Forgets the processes that exited (the windows keep copies).
    fn prune(&mut self) {
        self.0
            .retain(|pid, _| std::path::Path::new(&format!("/proc/{pid}")).exists());
    }
}

enum Command {
    Open {
        duration: Duration,
        reply: oneshot::Sender<Window>,
    },
    /// Closes every window now, detaches, ends the thread.
    Stop,
}

struct Running {
    commands: Sender<Command>,
    thread: JoinHandle<()>,
}

/// The exporter's sampler: not loaded until the first window opens, unloaded when none has
/// been open for a while.
pub struct SharedSampler {
    options: ProfileOptions,
    /// Whether stacks are symbolized with DWARF, inlined functions as frames.
    inlined: bool,
    /// How long the sampler stays loaded with no window open.
    idle: Duration,
    /// The thread, while loaded; the thread clears it when it unloads on its own.
    running: Arc<Mutex<Option<Running>>>,
    stopped: Mutex<bool>,
    /// Samplers loaded (and their tables built): 1 after the first profile, one more after
    /// each unload.
    loads: AtomicU64,
}

impl SharedSampler {
    /// A sampler of every CPU at `frequency_hz`, kernel and user stacks, DWARF unwinding
    /// where the kernel can (else frame pointers), not loaded yet; once loaded, it unloads
    /// after `idle` with no window open. User frames are named from ELF symbol tables, or
    /// with `inlined` from DWARF too, inlined functions as frames (see
    /// [`SymbolizerOptions::dwarf`] for what that costs).
    pub fn new(frequency_hz: u64, idle: Duration, inlined: bool) -> Self {
        Self {
            options: ProfileOptions {
                frequency_hz,
                pids: None,
                follow_children: false,
                cgroup: None,
                include_idle: false,
                kernel_stacks: true,
                user_stacks: true,
                stack_map_entries: DEFAULT_STACK_MAP_ENTRIES,
                count_map_entries: DEFAULT_COUNT_MAP_ENTRIES,
                by_cgroup: false,
                time_slice_ns: None,
                call_graph: None,
                unwind_budget_bytes: DEFAULT_TABLE_BUDGET_BYTES,
            },
            idle,
            inlined,
            running: Arc::new(Mutex::new(None)),
            stopped: Mutex::new(false),
            loads: AtomicU64::new(0),
        }
    }

    /// Whether user frames are named with DWARF, inlined functions as frames.
    pub fn inlined(&self) -> bool {
        self.inlined
    }

    /// Samplers loaded so far (0 until the first profile, then 1, and 1 more each time one
    /// is loaded again after an unload).
    pub fn loads(&self) -> u64 {
        self.loads.load(Ordering::Relaxed)
    }

    /// Opens a window of `duration` (less if the exporter stops first), loading the sampler
    /// first if this is the first; the receiver gets the window's samples when it closes.
    /// Blocks while the sampler loads.
    ///
    /// # Errors
    /// When the sampler cannot load or attach, or the exporter is stopping.
    pub fn open(&self, duration: Duration) -> Result<oneshot::Receiver<Window>> {
        if *self.stopped.lock().unwrap_or_else(|e| e.into_inner()) {
            return Err(Error::runtime("the exporter is stopping"));
        }
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if running.is_none() {
            *running = Some(self.start()?);
        }
        let (reply, window) = oneshot::channel();
        let sent = running
            .as_ref()
            .expect("just started")
            .commands
            .send(Command::Open { duration, reply });
        if sent.is_err() {
            // The thread ended (it logged why): the next window loads a new sampler.
            *running = None;
            return Err(Error::runtime("the CPU sampler stopped"));
        }
        Ok(window)
    }

    /// Loads and attaches the sampler on its own thread; returns once it samples.
    fn start(&self) -> Result<Running> {
        let options = self.options.clone();
        let idle = self.idle;
        let inlined = self.inlined;
        let shared = Arc::clone(&self.running);
        let (ready, loaded) = mpsc::channel::<Result<()>>();
        let (commands, received) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("tk-sampler".into())
            .spawn(move || {
                let started = Instant::now();
                let attached = Profiler::load(&options).and_then(|mut profiler| {
                    profiler.attach(&options)?;
                    let ring = profiler.take_events()?;
                    Ok((profiler, ring))
                });
                match attached {
                    Ok((mut profiler, ring)) => {
                        if let Some(reason) = profiler.unwind_unavailable() {
                            log::warn!(
                                "CPU profiles: user stacks by frame pointers (the DWARF \
                                 unwinder does not load here: {reason})"
                            );
                        }
                        // The whole machine's tables, on their thread; announced processes
                        // go first.
                        if let Some(unwinder) = profiler.unwinder() {
                            unwinder.start(true);
                        }
                        log::info!(
                            "CPU profiles: sampler loaded in {:?}, user stacks by {:?}",
                            started.elapsed(),
                            profiler.call_graph()
                        );
                        let _ = ready.send(Ok(()));
                        let symbolizer = Symbolizer::with_options(SymbolizerOptions {
                            inlined,
                            dwarf: inlined,
                            ..SymbolizerOptions::default()
                        });
                        run(profiler, ring, symbolizer, &received, idle, &shared);
                    }
                    Err(err) => {
                        let _ = ready.send(Err(err));
                    }
                }
            })
            .map_err(|err| Error::Runtime {
                what: "starting the CPU sampler's thread".into(),
                source: Some(Box::new(err)),
            })?;
        match loaded.recv() {
            Ok(Ok(())) => {
                self.loads.fetch_add(1, Ordering::Relaxed);
                Ok(Running { commands, thread })
            }
            Ok(Err(err)) => {
                let _ = thread.join();
                Err(err)
            }
            Err(_) => {
                let _ = thread.join();
                Err(Error::runtime(
                    "the CPU sampler's thread ended while loading",
                ))
            }
        }
    }

    /// Closes every window (each answers with what it has) and refuses later ones; the
    /// thread detaches the sampler and ends ([`SharedSampler::finish`] waits for it).
    pub fn stop(&self) {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
        if let Some(running) = &*self.running.lock().unwrap_or_else(|e| e.into_inner()) {
            let _ = running.commands.send(Command::Stop);
        }
    }

    /// [`SharedSampler::stop`], then waits for the thread to have detached the sampler.
    pub fn finish(&self) {
        self.stop();
        let running = self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(running) = running
            && running.thread.join().is_err()
        {
            log::warn!("the CPU sampler's thread panicked");
        }
    }
}

/// A window being filled.
struct Open {
    start: SystemTime,
    opened: Instant,
    deadline: Instant,
    stacks: StackSum,
    processes: HashMap<u32, ProcessInfo>,
    reply: oneshot::Sender<Window>,
}

impl Open {
    fn add(&mut self, stacks: &[Stack]) {
        for stack in stacks {
            self.stacks.add(stack);
        }
    }

    fn add_processes(&mut self, stacks: &[Stack], known: &Processes) {
        for stack in stacks {
            if let Some(info) = known.0.get(&stack.pid) {
                self.processes
                    .entry(stack.pid)
                    .or_insert_with(|| info.clone());
            }
        }
    }

    fn close(self) {
        let stacks = self.stacks.into_stacks();
        // A requester that went away (the client hung up) does not mind.
        let _ = self.reply.send(Window {
            start: self.start,
            elapsed: self.opened.elapsed(),
            stacks,
            processes: self.processes,
        });
    }
}

/// The sampler's thread: reads announcements, cuts the maps, fills and closes windows; ends
/// (detaching the sampler) at [`Command::Stop`], or after `idle` with no window open, when it
/// takes itself out of `shared` first (under its lock, which [`SharedSampler::open`] holds
/// while it sends, so that no window is sent to a thread that is ending).
fn run(
    mut profiler: Profiler,
    mut ring: RingBuf<MapData>,
    mut symbolizer: Symbolizer,
    commands: &Receiver<Command>,
    idle: Duration,
    shared: &Mutex<Option<Running>>,
) {
    let mut windows: Vec<Open> = Vec::new();
    let mut known = Processes::default();
    let mut last_cut = Instant::now();
    // When the last window closed (the first is on its way when the thread starts).
    let mut idle_since = Instant::now();
    loop {
        announcements(&mut profiler, &mut ring, &mut symbolizer);
        let now = Instant::now();
        if windows.iter().any(|w| w.deadline <= now) || now >= last_cut + DRAIN_EVERY {
            cut(&mut profiler, &mut symbolizer, &mut windows, &mut known);
            last_cut = Instant::now();
            let (due, open): (Vec<Open>, Vec<Open>) =
                windows.drain(..).partition(|w| w.deadline <= last_cut);
            windows = open;
            due.into_iter().for_each(Open::close);
            if windows.is_empty() {
                idle_since = last_cut;
            }
        }
        let mut wake = last_cut + DRAIN_EVERY;
        if let Some(deadline) = windows.iter().map(|w| w.deadline).min() {
            wake = wake.min(deadline);
        }
        let wait = wake
            .saturating_duration_since(Instant::now())
            .min(POLL_EVERY);
        let received = if windows.is_empty() && idle_since.elapsed() >= idle {
            let mut running = shared.lock().unwrap_or_else(|e| e.into_inner());
            match commands.try_recv() {
                Ok(command) => Ok(command),
                Err(TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) => {
                    log::info!(
                        "CPU profiles: sampler unloaded after {} s without a profile",
                        idle.as_secs()
                    );
                    *running = None;
                    break;
                }
            }
        } else {
            commands.recv_timeout(wait)
        };
        match received {
            Ok(Command::Open { duration, reply }) => {
                // What came before belongs to the windows already open.
                announcements(&mut profiler, &mut ring, &mut symbolizer);
                cut(&mut profiler, &mut symbolizer, &mut windows, &mut known);
                last_cut = Instant::now();
                windows.push(Open {
                    start: SystemTime::now(),
                    opened: last_cut,
                    deadline: last_cut + duration,
                    stacks: StackSum::default(),
                    processes: HashMap::new(),
                    reply,
                });
            }
            Ok(Command::Stop) | Err(RecvTimeoutError::Disconnected) => {
                announcements(&mut profiler, &mut ring, &mut symbolizer);
                cut(&mut profiler, &mut symbolizer, &mut windows, &mut known);
                windows.into_iter().for_each(Open::close);
                break;
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
    if let Err(err) = profiler.detach() {
        log::warn!("detaching the CPU sampler: {err}");
    }
    // Stops the tables' thread.
    let _ = profiler.unwind_tables();
}

/// New processes: their memory maps read now, while they live; their unwind tables queued.
fn announcements(
    profiler: &mut Profiler,
    ring: &mut RingBuf<MapData>,
    symbolizer: &mut Symbolizer,
) {
    while let Some(record) = ring.next() {
        if let Some(pid) = sampler::announced_pid(&record) {
            symbolizer.remember_process(pid);
            if let Some(unwinder) = profiler.unwinder() {
                unwinder.load_process(pid);
            }
        }
    }
}

/// Drains the kernel maps and adds what they held, symbolized, to every open window (not
/// symbolized when none is open); then forgets the processes that exited.
fn cut(
    profiler: &mut Profiler,
    symbolizer: &mut Symbolizer,
    windows: &mut [Open],
    known: &mut Processes,
) {
    match profiler.take_interval() {
        Ok(raw) if !windows.is_empty() => {
            let profile = sampler::symbolize(&raw, symbolizer);
            known.note(&profile.stacks);
            for window in windows.iter_mut() {
                window.add(&profile.stacks);
                window.add_processes(&profile.stacks, known);
            }
            known.prune();
        }
        Ok(_) => {}
        Err(err) => log::warn!("reading the CPU sampler's maps: {err}"),
    }
    // Their last samples are symbolized above.
    symbolizer.forget_exited();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stacks::Frame;

    fn stack(pid: u32, leaf: &str, count: u64) -> Stack {
        Stack {
            pid,
            comm: "burner".into(),
            cgroup: None,
            frames: vec![Frame::user("main", None), Frame::user(leaf, None)],
            count,
            time_slice: None,
        }
    }

    /// A window sums the cuts added to it, per distinct stack, and answers them on close.
    #[test]
    fn windows_sum_their_cuts() {
        let (reply, mut answer) = oneshot::channel();
        let opened = Instant::now();
        let mut window = Open {
            start: SystemTime::UNIX_EPOCH,
            opened,
            deadline: opened,
            stacks: StackSum::default(),
            processes: HashMap::new(),
            reply,
        };
        window.add(&[stack(1, "leaf", 10), stack(1, "other", 1)]);
        window.add(&[stack(1, "leaf", 5), stack(2, "leaf", 3)]);
        window.close();
        let mut got = answer.try_recv().expect("answered on close");
        got.stacks
            .sort_by_key(|s| (s.pid, s.frames[1].symbol.clone()));
        assert_eq!(
            got.stacks,
            [
                stack(1, "leaf", 15),
                stack(1, "other", 1),
                stack(2, "leaf", 3)
            ]
        );
        assert_eq!(got.start, SystemTime::UNIX_EPOCH);
    }

    /// Before the first profile nothing is loaded; after a stop, windows are refused
    /// without loading anything.
    #[test]
    fn not_loaded_until_asked_and_refused_after_stop() {
        let sampler = SharedSampler::new(99, Duration::from_secs(300), false);
        assert_eq!(sampler.loads(), 0);
        sampler.stop();
        let err = sampler.open(Duration::from_secs(1)).unwrap_err();
        assert_eq!(err.to_string(), "the exporter is stopping");
        assert_eq!(sampler.loads(), 0);
        sampler.finish();
    }
}
