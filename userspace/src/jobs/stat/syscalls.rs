//! `stat -e 'syscalls:sys_enter_*'`: a set of syscall tracepoints counted by one BPF program
//! on the raw tracepoint `sys_enter` (or `sys_exit`), keyed by syscall number, instead of one
//! perf counter per tracepoint.
//!
//! Opening a tracepoint counter is cheap, but closing the last counter of a tracepoint waits
//! for the kernel's tracepoint grace periods (`tracepoint_synchronize_unregister()` in
//! `perf_trace_event_unreg()`, about 35 ms here, under the `event_mutex`, so closing them
//! from several threads does not help). `perf stat -e 'syscalls:sys_enter_*' true` spends
//! 12-15 s closing its 360 counters. One raw tracepoint program attaches and detaches once.
//!
//! The counts are perf's: the engine's syscall-set plan counts exactly the syscalls the
//! tracepoints name (`engine_syscall_set_totals_match_the_table_and_perf`), and a `-- CMD`
//! is counted from its `exec` as perf's `enable_on_exec` counters are (see
//! [`SyscallSets::started`]).

use std::collections::BTreeMap;

use crate::{
    Error, Result,
    counters::{CounterKind, Event, Reading},
    engine::{
        Aggregates, Engine, EngineSpec, Targets,
        compile::compile,
        keys::KeyKind,
        request::Request,
        syscalls::{ORIG_AX_OFFSET, tracepoint_syscall},
    },
    session::Tracees,
};

/// Fewer syscall tracepoints than this in one set (entries or exits) stay perf counters: a
/// counter on one tracepoint costs the traced process only that syscall's events, and closes
/// in one grace period.
pub const MIN_SET: usize = 2;

/// Which set a tracepoint event belongs to: `Some(true)` for `syscalls:sys_enter_NAME`,
/// `Some(false)` for `syscalls:sys_exit_NAME` (where this architecture's `sys_exit` gives
/// the syscall number), with `NAME` a syscall of this architecture; `None` otherwise.
pub fn set_of(event: &Event) -> Option<bool> {
    if event.kind != CounterKind::Tracepoint {
        return None;
    }
    let name = event.name.strip_prefix("syscalls:")?;
    let (enter, call) = match name.strip_prefix("sys_enter_") {
        Some(call) => (true, call),
        None => (false, name.strip_prefix("sys_exit_")?),
    };
    if !enter && ORIG_AX_OFFSET.is_none() {
        return None;
    }
    tracepoint_syscall(call).map(|_| enter)
}

/// One set's engine and the syscall number of each of its events.
struct Set {
    specs: Vec<EngineSpec>,
    engines: Vec<Engine>,
    /// Event name to the syscall number it is keyed by.
    numbers: BTreeMap<String, u64>,
    /// What was counted before the `-- CMD` was released (subtracted).
    before: Aggregates,
}

/// The syscall tracepoint sets of a `stat` run.
#[derive(Default)]
pub struct SyscallSets {
    sets: Vec<Set>,
    /// The `-- CMD`'s pid, counted from its `exec`.
    command: Option<u32>,
    /// When the counting started and stopped (for the readings' enabled and running
    /// times), in [`crate::session::monotonic_ns`].
    started_ns: Option<u64>,
    stopped_ns: Option<u64>,
    /// Which set counts each event, by event name.
    of_event: BTreeMap<String, usize>,
    /// Per set: entries (`sys_enter_*`) or exits.
    enters: Vec<bool>,
}

impl SyscallSets {
    /// Compiles one engine per set (entries, exits) for `events`, which [`set_of`] accepted.
    ///
    /// # Errors
    /// When the engine cannot compile the set (no tracefs).
    pub fn new(events: &[&Event]) -> Result<Self> {
        let mut sets = Self::default();
        for enter in [true, false] {
            let names: Vec<String> = events
                .iter()
                .filter(|e| set_of(e) == Some(enter))
                .map(|e| e.name.clone())
                .collect();
            if names.is_empty() {
                continue;
            }
            let mut request = Request::count(names.clone());
            request.by_event = true;
            let compiled = compile(&request)?;
            let numbers: BTreeMap<String, u64> = match compiled.columns.first().map(|c| &c.kind) {
                Some(KeyKind::Event(by_number)) if compiled.specs.len() == 1 => by_number
                    .iter()
                    .map(|(&nr, name)| (name.clone(), nr))
                    .collect(),
                _ => {
                    return Err(Error::runtime(format!(
                        "the engine did not compile {} syscall tracepoints into one set",
                        names.len()
                    )));
                }
            };
            for name in &names {
                sets.of_event.insert(name.clone(), sets.sets.len());
            }
            sets.enters.push(enter);
            sets.sets.push(Set {
                specs: compiled.specs,
                engines: Vec::new(),
                numbers,
                before: Aggregates::default(),
            });
        }
        Ok(sets)
    }

    /// Whether `name` is counted here.
    pub fn counts(&self, name: &str) -> bool {
        self.of_event.contains_key(name)
    }

    /// Whether there is anything to count.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// Loads and attaches each set's engine for `tracees`; with `verbose`, says how.
    ///
    /// # Errors
    /// Loading or attaching failed.
    pub fn attach(&mut self, tracees: &Tracees, verbose: u8) -> Result<()> {
        let targets = Targets {
            pids: tracees.pids.clone(),
            follow_children: tracees.follow_children,
            exclude_self: false,
            cgroup: tracees.cgroup,
        };
        if tracees.follow_children {
            self.command = tracees.pids.as_ref().and_then(|p| p.first().copied());
        }
        for (set, enter) in self.sets.iter_mut().zip(&self.enters) {
            for spec in &set.specs {
                let mut engine = Engine::load(spec, &targets)?;
                engine.attach(spec)?;
                if verbose >= 1 {
                    for note in engine.notes() {
                        eprintln!("tracekit: attached {note}");
                    }
                    let (raw, prefix) = if *enter {
                        ("sys_enter", "sys_enter_")
                    } else {
                        ("sys_exit", "sys_exit_")
                    };
                    eprintln!(
                        "tracekit: attached raw tracepoint {raw} for {} syscalls:{prefix}* \
                         tracepoints, counted by syscall number in one program",
                        set.numbers.len()
                    );
                }
                set.engines.push(engine);
            }
        }
        Ok(())
    }

    /// Counting starts. A `-- CMD` is held in `read(2)` on its go pipe until it is
    /// released, then calls `execve(2)`: perf's counters start at that exec
    /// (`enable_on_exec`), so what was counted until now (the child's setup after the fork)
    /// is set aside, and the two syscalls between the release and the exec, the end of that
    /// `read` and the start of `execve`, are not counted ([`SyscallSets::reading`]).
    ///
    /// # Errors
    /// Reading the maps failed.
    pub fn started(&mut self) -> Result<()> {
        if let Some(pid) = self.command {
            wait_in_read(pid);
            for set in &mut self.sets {
                set.before = read(&set.engines)?;
            }
        }
        self.started_ns = Some(crate::session::monotonic_ns());
        Ok(())
    }

    /// Detaches every engine; the counts stay readable.
    pub fn detach(&mut self) {
        self.stopped_ns = Some(crate::session::monotonic_ns());
        for set in &mut self.sets {
            for engine in &mut set.engines {
                engine.detach();
            }
        }
    }

    /// The readings of every set, to look events up in with [`SyscallSets::reading`].
    ///
    /// # Errors
    /// Reading the maps failed.
    pub fn read(&self) -> Result<Vec<Aggregates>> {
        self.sets.iter().map(|set| read(&set.engines)).collect()
    }

    /// Events counted by no set's program: runs the kernel skipped (recursion), which no
    /// count includes.
    pub fn missed(all: &[Aggregates]) -> u64 {
        all.iter().map(|a| a.stats.missed).sum()
    }

    /// Event `name`'s reading in `all` (from [`SyscallSets::read`]); running all the time
    /// since counting started.
    pub fn reading(&self, all: &[Aggregates], name: &str) -> Reading {
        let Some(&index) = self.of_event.get(name) else {
            return Reading::default();
        };
        let set = &self.sets[index];
        let Some(&nr) = set.numbers.get(name) else {
            return Reading::default();
        };
        let count = |aggregates: &Aggregates| {
            aggregates
                .cells
                .get(&(vec![nr], 0))
                .map_or(0, |value| value.count)
        };
        let mut value = count(&all[index]).saturating_sub(count(&set.before));
        if self.command.is_some()
            && matches!(name, "syscalls:sys_exit_read" | "syscalls:sys_enter_execve")
        {
            value = value.saturating_sub(1);
        }
        let now = self.stopped_ns.unwrap_or_else(crate::session::monotonic_ns);
        let ns = self.started_ns.map_or(0, |start| now.saturating_sub(start));
        Reading {
            value,
            enabled_ns: ns,
            running_ns: ns,
        }
    }
}

fn read(engines: &[Engine]) -> Result<Aggregates> {
    let mut all = Aggregates::default();
    for engine in engines {
        all.merge(engine.read()?);
    }
    Ok(all)
}

/// Waits (at most 2 s) until `pid` is blocked in `read(2)`: the held `-- CMD` waiting for
/// its go byte (`/proc/PID/syscall` gives the number of the syscall a task is blocked in).
fn wait_in_read(pid: u32) {
    let path = format!("/proc/{pid}/syscall");
    let read_nr = libc::SYS_read.to_string();
    for _ in 0..2000 {
        match std::fs::read_to_string(&path) {
            Ok(text) if text.split_whitespace().next() == Some(read_nr.as_str()) => return,
            Ok(_) => {}
            Err(_) => return,
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    log::debug!("the command {pid} was not seen blocked in read(2)");
}
