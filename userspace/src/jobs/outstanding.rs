//! Outstanding allocations by stack: the job behind `memleak` (bcc's and libbpf-tools'
//! `memleak`; its table entry is [`crate::jobs::tools::memleak`]), on the engine's
//! outstanding-allocation stage ([`crate::engine::outstanding`]).
//!
//! With `-p PID` or `-- CMD`, the process's libc allocators are probed (`malloc`, `calloc`,
//! `realloc`, `posix_memalign`, `aligned_alloc`, `valloc`, `memalign`, `pvalloc`, and
//! `free`); with neither, the kernel's (`kmem:kmalloc`/`kmem:kfree`,
//! `kmem:kmem_cache_alloc`/`kmem:kmem_cache_free`). At every `-i` interval and at the end,
//! the allocations still outstanding are read from the kernel, grouped by stack and printed
//! biggest first, as bcc prints them (a tab before each stack's line, two before each frame):
//!
//! ```text
//! [14:02:11] Top 10 stacks with outstanding allocations:
//!     4096000 bytes in 1000 allocations from stack
//!         leak_inner [tk_leak]
//!         leak_outer [tk_leak]
//!         main [tk_leak]
//! ```

use std::collections::BTreeMap;

use tracekit_common::engine::{DEFAULT_OUTSTANDING_ENTRIES, Outstanding, size_rule, stat};

use super::RunOptions;
use crate::{
    Error, Result, caps,
    engine::{
        Engine, EngineSpec, Targets,
        outstanding::{UserAllocator, UserAllocators, kernel_spec, user_spec},
    },
    error::Context as _,
    probe::{Tracepoint, functions, tracefs},
    session::{self, Collector, Flow, Interval, Scope, Tracees, monotonic_ns},
    stacks::{Frame, FrameKind},
    symbolize::{Symbolizer, SymbolizerOptions},
};

/// What `memleak` reports, from its flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutstandingJob {
    /// `--top N`: stacks shown per report (bcc's `-T`, 10).
    pub top: usize,
    /// `--older MS`: only allocations at least this old (bcc's `-o`), in ms.
    pub older_ms: Option<u64>,
    /// `-z BYTES`: only allocations at least this big.
    pub min_size: Option<u64>,
    /// `-Z BYTES`: only allocations at most this big.
    pub max_size: Option<u64>,
    /// `--show-allocs`: each allocation's address and size too (bcc's `-a`).
    pub show_allocs: bool,
    /// `--kernel`: the kernel's allocators, also with `-p`/`-- CMD` (then the allocations
    /// made in that process's context).
    pub kernel: bool,
}

impl Default for OutstandingJob {
    fn default() -> Self {
        Self {
            top: 10,
            older_ms: None,
            min_size: None,
            max_size: None,
            show_allocs: false,
            kernel: false,
        }
    }
}

/// The libc allocators: name and size rule over the first three arguments.
const USER_ALLOCATORS: &[(&str, u32)] = &[
    ("malloc", size_rule::saved(0, size_rule::ONE)),
    ("calloc", size_rule::saved(0, 1)),
    ("realloc", size_rule::saved(1, size_rule::ONE)),
    (
        "posix_memalign",
        size_rule::saved(2, size_rule::ONE) | size_rule::ADDR_AT_SAVED_0,
    ),
    ("aligned_alloc", size_rule::saved(1, size_rule::ONE)),
    ("valloc", size_rule::saved(0, size_rule::ONE)),
    ("memalign", size_rule::saved(1, size_rule::ONE)),
    ("pvalloc", size_rule::saved(0, size_rule::ONE)),
];

/// The libc functions that release their argument 0 (`realloc` too: its block moves).
const USER_RELEASES: &[&str] = &["free", "realloc"];

/// The kernel's allocator tracepoints (`kmem`) with their address and size fields, and
/// the release tracepoints with their address field.
const KERNEL_ALLOCS: &[(&str, &str, &str)] = &[
    ("kmalloc", "ptr", "bytes_alloc"),
    ("kmem_cache_alloc", "ptr", "bytes_alloc"),
];
const KERNEL_RELEASES: &[(&str, &str)] = &[("kfree", "ptr"), ("kmem_cache_free", "ptr")];

/// The engine specs for `scope`: libc's allocators of the process, or the kernel's.
fn specs(scope: &Scope, kernel: bool) -> Result<(Vec<EngineSpec>, bool)> {
    if kernel || matches!(scope, Scope::All) {
        return Ok((kernel_specs()?, false));
    }
    let pid = match scope {
        Scope::Pids(pids) if pids.len() == 1 => Some(pids[0]),
        Scope::Pids(_) => {
            return Err(Error::usage(
                "memleak -p takes one process (its libc's allocators are probed)",
            ));
        }
        _ => None,
    };
    let binary = functions::resolve_binary("libc", pid)?;
    let find = |name: &str| -> Option<u64> {
        functions::user_functions(&binary, name)
            .ok()?
            .into_iter()
            .find(|f| f.name == name)
            .map(|f| f.file_offset)
    };
    let mut allocs: Vec<UserAllocator> = Vec::new();
    for &(name, rule) in USER_ALLOCATORS {
        // Two names of one function (an alias) are probed once.
        if let Some(offset) = find(name)
            && !allocs.iter().any(|a| a.offset == offset)
        {
            allocs.push(UserAllocator {
                name: name.into(),
                offset,
                rule,
            });
        }
    }
    let releases: Vec<(String, u64)> = USER_RELEASES
        .iter()
        .filter_map(|&name| find(name).map(|offset| (name.to_string(), offset)))
        .collect();
    if !allocs.iter().any(|a| a.name == "malloc") || !releases.iter().any(|r| r.0 == "free") {
        return Err(Error::runtime(format!(
            "{} has no malloc or free symbol to probe",
            binary.display()
        )));
    }
    let allocators = UserAllocators {
        binary,
        allocs,
        releases,
        pid,
    };
    Ok((
        vec![user_spec(&allocators, DEFAULT_OUTSTANDING_ENTRIES)?],
        true,
    ))
}

/// The kernel's allocators (`kmem`), one engine.
fn kernel_specs() -> Result<Vec<EngineSpec>> {
    let tp = |event: &str| Tracepoint {
        system: "kmem".into(),
        event: event.into(),
    };
    let allocs: Vec<(Tracepoint, &str, &str)> = KERNEL_ALLOCS
        .iter()
        .map(|(event, address, size)| (tp(event), *address, *size))
        .collect();
    let releases: Vec<(Tracepoint, &str)> = KERNEL_RELEASES
        .iter()
        .map(|(event, address)| (tp(event), *address))
        .collect();
    Ok(vec![kernel_spec(
        &tracefs::root()?,
        &allocs,
        &releases,
        DEFAULT_OUTSTANDING_ENTRIES,
    )?])
}

/// One stack's outstanding allocations.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct StackTotal {
    /// Bytes outstanding.
    pub bytes: u64,
    /// Allocations outstanding.
    pub allocations: u64,
    /// The stack, leaf first (empty: not recorded).
    pub frames: Vec<Frame>,
    /// Each allocation's address and size, by address (with `--show-allocs`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allocs: Vec<(u64, u64)>,
}

/// The allocations of `entries` that `job`'s filters keep at `now_ns`, grouped by stack
/// (`stack_of` symbolizes a stack hash and pid, leaf first), biggest first.
pub fn group(
    job: &OutstandingJob,
    entries: &[(u64, Outstanding)],
    now_ns: u64,
    mut stack_of: impl FnMut(u64, u32) -> Vec<Frame>,
) -> Vec<StackTotal> {
    let mut by_stack: BTreeMap<(u32, u64), StackTotal> = BTreeMap::new();
    for &(address, entry) in entries {
        let old_enough = job
            .older_ms
            .is_none_or(|ms| now_ns.saturating_sub(entry.ts_ns) >= ms * 1_000_000);
        let sized = job.min_size.is_none_or(|min| entry.size >= min)
            && job.max_size.is_none_or(|max| entry.size <= max);
        if !old_enough || !sized {
            continue;
        }
        let total = by_stack
            .entry((entry.pid, entry.stack))
            .or_insert_with(|| StackTotal {
                bytes: 0,
                allocations: 0,
                frames: Vec::new(),
                allocs: Vec::new(),
            });
        total.bytes += entry.size;
        total.allocations += 1;
        if job.show_allocs {
            total.allocs.push((address, entry.size));
        }
    }
    // Stacks that symbolize alike (the same code in two processes) are one.
    let mut named: BTreeMap<Vec<(String, Option<String>)>, StackTotal> = BTreeMap::new();
    for ((pid, stack), mut total) in by_stack {
        let frames = stack_of(stack, pid);
        let key = frames
            .iter()
            .map(|f| (f.symbol.clone(), f.module.clone()))
            .collect();
        let slot = named.entry(key).or_insert_with(|| StackTotal {
            frames,
            ..StackTotal {
                bytes: 0,
                allocations: 0,
                frames: Vec::new(),
                allocs: Vec::new(),
            }
        });
        slot.bytes += total.bytes;
        slot.allocations += total.allocations;
        slot.allocs.append(&mut total.allocs);
    }
    let mut all: Vec<StackTotal> = named.into_values().collect();
    for total in &mut all {
        total.allocs.sort_unstable();
    }
    all.sort_by(|a, b| {
        (b.bytes, b.allocations)
            .cmp(&(a.bytes, a.allocations))
            .then_with(|| a.frames.len().cmp(&b.frames.len()))
    });
    all
}

/// One report as bcc prints it: `[CLOCK] Top N stacks with outstanding allocations:`, then
/// per stack (at most `top`) `\tBYTES bytes in N allocations from stack` and its frames
/// leaf first, `\t\tSYMBOL [MODULE]` (kernel frames without a module).
pub fn render(totals: &[StackTotal], top: usize, clock: &str) -> String {
    let shown = &totals[..totals.len().min(top)];
    let mut text = format!(
        "[{clock}] Top {} stacks with outstanding allocations:\n",
        shown.len()
    );
    for total in shown {
        for (address, size) in &total.allocs {
            text.push_str(&format!("\taddr = {address:x} size = {size}\n"));
        }
        text.push_str(&format!(
            "\t{} bytes in {} allocations from stack\n",
            total.bytes, total.allocations
        ));
        if total.frames.is_empty() {
            text.push_str("\t\t[stack not recorded]\n");
        }
        for frame in &total.frames {
            let module = match (&frame.kind, &frame.module) {
                (FrameKind::User, Some(module)) => {
                    format!(" [{}]", module.rsplit('/').next().unwrap_or(module))
                }
                _ => String::new(),
            };
            text.push_str(&format!("\t\t{}{module}\n", frame.symbol));
        }
    }
    text
}

/// Drops the kernel counted, as one line each (empty when nothing was lost).
pub fn lost_lines(counters: &[(u32, u64)]) -> String {
    let mut text = String::new();
    for &(index, count) in counters {
        if count == 0 {
            continue;
        }
        let what = match index {
            stat::OUTSTANDING_FULL => "allocations not recorded: the outstanding map was full",
            stat::STACK_MAP_FULL => "stacks not recorded: the stack map was full",
            stat::STACK_ERRORS => "stacks the kernel could not walk",
            stat::NO_START => "returns without their entry (calls in flight when tracing began)",
            stat::START_MAP_FULL => "entries not recorded: the start map was full",
            stat::READ_ERRORS => "events whose values could not be read",
            _ => continue,
        };
        text.push_str(&format!("memleak: lost {count} {what}\n"));
    }
    text
}

/// The loaded engines and what the reports need.
struct MemleakCollector<'a> {
    job: &'a OutstandingJob,
    specs: Vec<EngineSpec>,
    user: bool,
    engines: Vec<Engine>,
    symbolizer: Symbolizer,
    json: bool,
    /// The report read while `-- CMD` was stopped at its exit (its maps still there).
    at_exit: Option<Vec<StackTotal>>,
    exclude_self: bool,
}

impl MemleakCollector<'_> {
    /// The outstanding allocations now, grouped and symbolized.
    fn totals(&mut self) -> Result<Vec<StackTotal>> {
        let now = monotonic_ns();
        let mut totals = Vec::new();
        for engine in &self.engines {
            let entries = engine.outstanding()?;
            if self.user {
                // Their memory maps, while they live (an exited one keeps what was read).
                let pids: std::collections::BTreeSet<u32> =
                    entries.iter().map(|(_, e)| e.pid).collect();
                for pid in pids {
                    self.symbolizer.remember_process(pid);
                }
            }
            let reader = engine.stack_reader()?;
            let user = self.user;
            let symbolizer = &self.symbolizer;
            let mut engine_totals = group(self.job, &entries, now, |hash, pid| {
                let Some(ips) = reader.frames(hash) else {
                    return Vec::new();
                };
                let mut frames = if user {
                    symbolizer.user_stack(pid, &ips)
                } else {
                    symbolizer.kernel_stack(&ips)
                };
                frames.reverse();
                frames
            });
            totals.append(&mut engine_totals);
        }
        totals.sort_by_key(|t| std::cmp::Reverse((t.bytes, t.allocations)));
        Ok(totals)
    }

    fn print(&self, totals: &[StackTotal]) -> Result<()> {
        let text = if self.json {
            let shown = &totals[..totals.len().min(self.job.top)];
            let mut line = serde_json::to_string(&serde_json::json!({
                "command": "memleak",
                "stacks": shown,
            }))
            .context("writing JSON")?;
            line.push('\n');
            line
        } else {
            render(totals, self.job.top, &session::clock_time())
        };
        super::to_stdout(|out| out.write_all(text.as_bytes()))
    }

    fn lost(&self) -> Result<String> {
        let mut counters = Vec::new();
        for index in [
            stat::OUTSTANDING_FULL,
            stat::STACK_MAP_FULL,
            stat::STACK_ERRORS,
            stat::START_MAP_FULL,
        ] {
            let mut sum = 0;
            for engine in &self.engines {
                sum += engine.stat(index)?;
            }
            counters.push((index, sum));
        }
        Ok(lost_lines(&counters))
    }
}

impl Collector for MemleakCollector<'_> {
    fn honours_cgroup(&self) -> bool {
        true
    }

    fn attach(&mut self, tracees: &Tracees) -> Result<()> {
        let targets = Targets {
            pids: tracees.pids.clone(),
            follow_children: tracees.follow_children,
            exclude_self: self.exclude_self,
            cgroup: tracees.cgroup,
        };
        for spec in &self.specs {
            let mut engine = Engine::load(spec, &targets)?;
            engine.attach(spec)?;
            self.engines.push(engine);
        }
        Ok(())
    }

    fn names_user_frames(&self) -> bool {
        self.user
    }

    fn exiting(&mut self, pid: u32) {
        self.symbolizer.remember_process(pid);
        match self.totals() {
            Ok(totals) => self.at_exit = Some(totals),
            Err(err) => log::warn!("reading the outstanding allocations at exit: {err:#}"),
        }
    }

    fn interval(&mut self, interval: Interval) -> Result<Flow> {
        if !interval.last {
            let totals = self.totals()?;
            self.print(&totals)?;
        }
        Ok(Flow::Continue)
    }

    fn detach(&mut self) -> Result<()> {
        for engine in &mut self.engines {
            engine.detach();
        }
        Ok(())
    }
}

/// Runs `memleak` over `options`' scope: prints the outstanding allocations by stack at
/// every `-i` interval and at the end.
///
/// # Errors
/// Usage errors for a scope of several processes; runtime errors when libc or the `kmem`
/// tracepoints cannot be found, or the kernel refuses the programs.
pub fn run(job: &OutstandingJob, options: &RunOptions) -> Result<()> {
    if options.output.is_some() {
        return Err(Error::usage(
            "memleak prints its reports to stdout; -o FILE is not supported (redirect it)",
        ));
    }
    caps::require_tracing("memleak")?;
    let (specs, user) = specs(&options.scope, job.kernel)?;
    let what = if user {
        "outstanding libc allocations"
    } else {
        "outstanding kernel allocations (kmalloc, kmem_cache_alloc)"
    };
    let mut collector = MemleakCollector {
        job,
        specs,
        user,
        engines: Vec::new(),
        symbolizer: Symbolizer::with_options(SymbolizerOptions {
            inlined: false,
            debug_info: options.debug_info.clone(),
            ..SymbolizerOptions::default()
        }),
        json: options.json,
        at_exit: None,
        // The maps are read while attached: tracekit's own allocations stay out.
        exclude_self: true,
    };
    let mut session = options.session("memleak", true);
    session.banner = Some(Box::new(move |scope| format!("Tracing {what} for {scope}")));
    let finished = session::run(session, &mut collector)?;
    let totals = match collector.at_exit.take() {
        Some(totals) => totals,
        None => collector.totals()?,
    };
    collector.print(&totals)?;
    eprint!("{}", collector.lost()?);
    finished.print_workload_exit();
    Ok(())
}

#[cfg(test)]
mod tests;
