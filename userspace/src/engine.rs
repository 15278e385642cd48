//! The userspace half of the aggregation engine: build [`Plan`]s, load and attach the
//! `engine` programs (`ebpf/src/bin/engine.rs`), and read what they aggregated.
//!
//! A command compiles to an [`EngineSpec`]: a main [`Stage`] (a plan and where it attaches)
//! and optionally a start stage. [`PlanBuilder`] turns field names into operands
//! ([`Fields`] resolves them against a tracepoint's format file, or a preset's own table),
//! adds the filter, the group key, the value and the aggregation, and picks the map layout:
//! a per-CPU array when the key is at most one small integer, a per-CPU hash otherwise.

use std::{
    collections::BTreeMap,
    os::fd::{AsFd as _, OwnedFd},
    path::Path,
};

use aya::{
    Ebpf,
    maps::{HashMap as BpfHashMap, Map, MapData, PerCpuArray, PerCpuHashMap, RingBuf},
    programs::{
        FEntry, FExit, KProbe, PerfEvent, RawTracePoint, TracePoint, UProbe,
        perf_event::{PerfEventConfig, PerfEventScope, SamplePolicy, SoftwareEvent},
        uprobe::{UProbeAttachLocation, UProbeAttachPoint, UProbeScope},
    },
};
use tracekit_common::{
    engine::{
        AggKey, AggValue, DEFAULT_HASH_ENTRIES, DEFAULT_STACK_ENTRIES, DEFAULT_START_ENTRIES, Insn,
        KEY_WORDS, LOG2_SLOTS, MAX_INSNS, MAX_KEY_PARTS, MAX_LINEAR_SLOTS, MAX_OPERANDS,
        MAX_START_TRACEPOINTS, MAX_STR_CONSTS, MAX_STRINGS, MAX_TRACEPOINTS, NO_OPERAND, Operand,
        Plan, SIGNED, STAT_COUNT, STR_BYTES, TRACE_RING_BYTES, agg, layout, op, operand, stat,
    },
    profile::{EVENTS_RING_BYTES, STACK_ERROR, StackFrames},
};

use crate::{
    Error, Result,
    bpf::{Object, load_without_kernel_btf, object, raise_memlock_limit},
    error::Context as _,
    kprobe_multi,
    probe::Tracepoint,
    tracefs::{self, EventFormat, Field},
};

/// How a value reads: an integer or a string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    /// An integer, signed or not.
    Int { signed: bool },
    /// A string.
    Str,
}

/// A name resolved to the operand that reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldRef {
    /// How the kernel reads it.
    pub operand: Operand,
    /// Its type.
    pub ty: ValueType,
}

/// The names an event offers to `--value`, `--by` and `--filter`.
pub trait Fields {
    /// The operand named `name`, if any.
    fn lookup(&self, name: &str) -> Option<FieldRef>;
    /// Every name, for suggestions.
    fn names(&self) -> Vec<String>;
    /// Every name with its type, for error messages (`bytes (unsigned int), ...`).
    fn describe(&self) -> String;
    /// The event, for messages (`block:block_rq_issue`).
    fn event_name(&self) -> String;
}

/// Names every event has: `pid`, `tid`, `cpu`, `comm` (of the current task).
pub const BUILTINS: [&str; 4] = ["pid", "tid", "cpu", "comm"];

/// The built-in operand named `name`.
pub fn builtin(name: &str) -> Option<FieldRef> {
    let (kind, ty) = match name {
        "pid" => (operand::PID, ValueType::Int { signed: false }),
        "tid" => (operand::TID, ValueType::Int { signed: false }),
        "cpu" => (operand::CPU, ValueType::Int { signed: false }),
        "comm" => (operand::COMM, ValueType::Str),
        _ => return None,
    };
    Some(FieldRef {
        operand: Operand {
            kind,
            size: if ty == ValueType::Str { 16 } else { 8 },
            ..Operand::NONE
        },
        ty,
    })
}

/// The fields of a tracepoint, from its format file, plus the built-ins it does not shadow.
pub struct TracepointFields {
    /// The tracepoint.
    pub tracepoint: Tracepoint,
    /// Its record layout.
    pub format: EventFormat,
}

impl TracepointFields {
    /// Reads the tracepoint's format file.
    pub fn read(tracefs: &std::path::Path, tracepoint: &Tracepoint) -> Result<Self> {
        Ok(Self {
            format: EventFormat::read(tracefs, &tracepoint.system, &tracepoint.event)?,
            tracepoint: tracepoint.clone(),
        })
    }

    /// The operand reading field `name`, for presets that need the field to exist.
    ///
    /// # Errors
    /// A runtime error naming the tracepoint when it has no such field.
    pub fn operand(&self, name: &str) -> Result<Operand> {
        self.lookup(name)
            .map(|field| field.operand)
            .ok_or_else(|| Error::runtime(format!("{} has no `{name}` field", self.event_name())))
    }

    fn usable(&self) -> impl Iterator<Item = &Field> {
        self.format
            .fields
            .iter()
            .filter(|f| !f.is_common() && field_ref(f).is_some())
    }
}

/// The operand reading a record field, if the engine can read it: integers of 1, 2, 4 or 8
/// bytes and `char` arrays.
pub fn field_ref(field: &Field) -> Option<FieldRef> {
    if field.is_string() {
        let kind = if field.is_dynamic() {
            operand::FIELD_DATA_LOC
        } else {
            operand::FIELD_STRING
        };
        return Some(FieldRef {
            operand: Operand {
                kind,
                offset: field.offset,
                size: if field.is_dynamic() {
                    STR_BYTES as u32
                } else {
                    field.size.min(STR_BYTES as u32)
                },
                ..Operand::NONE
            },
            ty: ValueType::Str,
        });
    }
    if field.array_len.is_some() || field.is_dynamic() || !matches!(field.size, 1 | 2 | 4 | 8) {
        return None;
    }
    Some(FieldRef {
        operand: Operand {
            kind: operand::FIELD,
            offset: field.offset,
            size: field.size,
            flags: if field.signed { SIGNED } else { 0 },
            ..Operand::NONE
        },
        ty: ValueType::Int {
            signed: field.signed,
        },
    })
}

impl Fields for TracepointFields {
    fn lookup(&self, name: &str) -> Option<FieldRef> {
        match self.format.field(name) {
            Some(field) if !field.is_common() => field_ref(field),
            _ => builtin(name),
        }
    }

    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.usable().map(|f| f.name.clone()).collect();
        names.extend(BUILTINS.iter().map(|b| b.to_string()));
        names
    }

    fn describe(&self) -> String {
        let fields: Vec<String> = self
            .usable()
            .map(|f| {
                let ty = if f.is_dynamic() {
                    "string".to_string()
                } else {
                    match f.array_len {
                        Some(n) => format!("{}[{n}]", f.c_type),
                        None => f.c_type.clone(),
                    }
                };
                format!("{} ({ty})", f.name)
            })
            .collect();
        let builtins: Vec<&str> = BUILTINS
            .iter()
            .copied()
            .filter(|b| self.format.field(b).is_none())
            .collect();
        format!("{}; and {}", fields.join(", "), builtins.join(", "))
    }

    fn event_name(&self) -> String {
        self.tracepoint.to_string()
    }
}

/// Builds a [`Plan`], enforcing the engine's limits with one-line errors.
#[derive(Clone, Debug)]
pub struct PlanBuilder {
    plan: Plan,
    strings: u32,
    constants: usize,
    key_words: usize,
}

impl Default for PlanBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl PlanBuilder {
    /// An empty plan: counts every event.
    pub fn new() -> Self {
        Self {
            plan: Plan::EMPTY,
            strings: 0,
            constants: 0,
            key_words: 0,
        }
    }

    /// The index of `operand`, adding it unless an identical one is there.
    pub fn operand(&mut self, mut new: Operand) -> Result<u32> {
        let n = self.plan.n_operands as usize;
        for (index, existing) in self.plan.operands[..n].iter().enumerate() {
            let same = Operand {
                string_slot: existing.string_slot,
                ..new
            };
            if *existing == same {
                return Ok(index as u32);
            }
        }
        if n == MAX_OPERANDS {
            return Err(Error::usage(format!(
                "the command reads more than {MAX_OPERANDS} values per event, the most the kernel \
                 engine reads; use fewer fields"
            )));
        }
        if new.is_string() {
            if self.strings as usize == MAX_STRINGS {
                return Err(Error::usage(format!(
                    "the command reads more than {MAX_STRINGS} strings per event, the most the \
                     kernel engine reads; use fewer string fields"
                )));
            }
            new.string_slot = self.strings;
            self.strings += 1;
        }
        if matches!(new.kind, operand::ARG | operand::ARG_DEREF) {
            self.plan.raw_args = self.plan.raw_args.max(new.offset + 1);
        }
        if matches!(new.kind, operand::PID | operand::TID) {
            self.plan.needs_ids = 1;
        }
        self.plan.operands[n] = new;
        self.plan.n_operands += 1;
        Ok(n as u32)
    }

    /// Appends a filter instruction.
    pub fn push_insn(&mut self, insn: Insn) -> Result<()> {
        let n = self.plan.n_insns as usize;
        if n == MAX_INSNS {
            return Err(Error::usage(format!(
                "needs more than {MAX_INSNS} kernel instructions, the engine runs at most \
                 {MAX_INSNS}; simplify it"
            )));
        }
        self.plan.insns[n] = insn;
        self.plan.n_insns += 1;
        Ok(())
    }

    /// Adds a string constant; the message of the error is for the caller to place.
    pub fn string_constant(&mut self, text: &str) -> std::result::Result<u32, String> {
        if text.len() >= STR_BYTES {
            return Err(format!(
                "string constants are at most {} bytes in the kernel engine",
                STR_BYTES - 1
            ));
        }
        let used = self.constants;
        let n = (0..used).position(|i| {
            self.plan.str_lens[i] as usize == text.len()
                && self.plan.str_consts[i][..text.len()] == *text.as_bytes()
        });
        if let Some(index) = n {
            return Ok(index as u32);
        }
        if used == MAX_STR_CONSTS {
            return Err(format!(
                "the kernel engine compares at most {MAX_STR_CONSTS} different strings"
            ));
        }
        self.plan.str_consts[used][..text.len()].copy_from_slice(text.as_bytes());
        self.plan.str_lens[used] = text.len() as u32;
        self.constants += 1;
        Ok(used as u32)
    }

    /// Appends a group-key part.
    pub fn key_part(&mut self, index: u32) -> Result<()> {
        let operand = self.plan.operands[index as usize];
        let words = if operand.is_string() {
            STR_BYTES / 8
        } else {
            1
        };
        let n = self.plan.n_key_parts as usize;
        if n == MAX_KEY_PARTS || self.key_words + words > KEY_WORDS {
            return Err(Error::usage(format!(
                "--by: the kernel engine groups by at most {MAX_KEY_PARTS} values and 2 strings"
            )));
        }
        self.plan.key_parts[n] = index;
        self.plan.n_key_parts += 1;
        self.key_words += words;
        Ok(())
    }

    /// Appends a correlation-key part (start and main stages must build the same key).
    pub fn corr_part(&mut self, index: u32) {
        let n = self.plan.n_corr_parts as usize;
        assert!(n < 2, "at most two correlation parts");
        self.plan.corr_parts[n] = index;
        self.plan.n_corr_parts += 1;
    }

    /// Aggregates `index` (summed, or the histogram's value).
    pub fn value(&mut self, index: u32) {
        self.plan.value = index;
    }

    /// Start stages: saves operand `index` with the timestamp; the main stage reads it back
    /// with [`saved_operand`] of the returned slot.
    pub fn save(&mut self, index: u32) -> Result<u32> {
        let slot = self
            .plan
            .saves
            .iter()
            .position(|&s| s == NO_OPERAND)
            .ok_or_else(|| Error::runtime("a start stage saves at most 4 values"))?;
        self.plan.saves[slot] = index;
        Ok(slot as u32)
    }

    /// Main stages whose events run in another task's context: no pid filter here.
    pub fn all_tasks(&mut self) {
        self.plan.all_tasks = 1;
    }

    /// Main stages: events need their start (for latency or a saved value).
    pub fn needs_start(&mut self) {
        self.plan.needs_start = 1;
    }

    /// Divides the value by `div` before it picks a histogram slot (sums stay undivided).
    pub fn value_div(&mut self, div: u64) {
        self.plan.value_div = div.max(1);
    }

    /// Each event goes to userspace as a trace record instead of being aggregated.
    pub fn trace(&mut self) {
        self.plan.agg = agg::TRACE;
    }

    /// Announce each traced process once, so its memory map can be cached for
    /// symbolizing user stacks.
    pub fn announce(&mut self) {
        self.plan.announce = 1;
    }

    /// A log2 histogram of the value.
    pub fn log2(&mut self) {
        self.plan.agg = agg::LOG2;
        self.plan.slots = LOG2_SLOTS;
    }

    /// A linear histogram of the value: buckets of `step` from `min` up to `max`.
    pub fn linear(&mut self, min: i64, max: i64, step: u64) -> Result<()> {
        if step == 0 || max <= min {
            return Err(Error::usage(format!(
                "--linear {min},{max},{step}: needs MIN < MAX and a STEP above 0"
            )));
        }
        let buckets = ((max - min) as u64).div_ceil(step);
        if buckets + 2 > u64::from(MAX_LINEAR_SLOTS) {
            return Err(Error::usage(format!(
                "--linear {min},{max},{step}: {buckets} buckets; the kernel engine keeps at most {}",
                MAX_LINEAR_SLOTS - 2
            )));
        }
        self.plan.agg = agg::LINEAR;
        self.plan.linear_min = min;
        self.plan.linear_step = step;
        self.plan.slots = buckets as u32 + 2;
        Ok(())
    }

    /// Picks the map layout. `array_bound`: the key is one integer below this bound (or
    /// absent), so a per-CPU array indexed by it serves; `None` uses the hash.
    pub fn layout(&mut self, array_bound: Option<u32>) {
        let n = self.plan.n_key_parts;
        match array_bound {
            Some(bound) if n <= 1 => {
                self.plan.layout = layout::ARRAY;
                self.plan.array_key_bound = if n == 0 { 0 } else { bound };
            }
            _ if n == 0 => {
                self.plan.layout = layout::ARRAY;
                self.plan.array_key_bound = 0;
            }
            _ => self.plan.layout = layout::HASH,
        }
    }

    /// The plan so far.
    pub fn plan(&self) -> Plan {
        let mut plan = self.plan;
        let from_start = |insn: &Insn| {
            let kind = plan
                .operands
                .get(insn.operand as usize)
                .map_or(operand::NONE, |o| o.kind);
            insn.op >= op::EQ && matches!(kind, operand::LATENCY | operand::SAVED)
        };
        plan.filter_first = u32::from(
            plan.needs_start != 0
                && plan.n_insns > 0
                && !plan.insns[..plan.n_insns as usize].iter().any(from_start),
        );
        plan
    }
}

/// Where a stage's program attaches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attach {
    /// Classic tracepoints (record fields).
    Tracepoints(Vec<Tracepoint>),
    /// A raw tracepoint by name (`sys_enter`).
    RawTracepoint(String),
    /// Kernel functions, at entry or return (`ret`), through BPF trampolines (fentry,
    /// fexit) or kprobes as `how` decides.
    KernelFunctions {
        functions: Vec<String>,
        ret: bool,
        how: KernelAttach,
    },
    /// User functions through uprobes or uretprobes (`ret`): the binary, each function's
    /// file offset, and the process to limit them to. Function `i` gets attach cookie `i`.
    Uprobes {
        binary: std::path::PathBuf,
        offsets: Vec<u64>,
        pid: Option<u32>,
        ret: bool,
    },
    /// A software perf event (`PERF_COUNT_SW_*`) on every CPU, every `period` events.
    SoftwareEvent { config: u64, period: u64 },
}

/// A plan and where it runs.
#[derive(Clone, Debug)]
pub struct Stage {
    /// The plan.
    pub plan: Plan,
    /// Where it attaches.
    pub attach: Attach,
}

/// How kernel functions are probed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KernelAttach {
    /// fentry/fexit for a single function when the kernel allows it, else kprobes (as
    /// libbpf-tools' `fentry_can_attach` decides); kprobes for several functions, since a
    /// trampoline program is loaded per function.
    #[default]
    Auto,
    /// Always kprobes/kretprobes (`--kprobe`).
    Kprobe,
    /// Always fentry/fexit (`--fentry`).
    Fentry,
}

/// Everything one engine object runs.
#[derive(Clone, Debug)]
pub struct EngineSpec {
    /// The stage that aggregates.
    pub main: Stage,
    /// The stage that starts latencies, if any.
    pub start: Option<Stage>,
    /// Entries of the group hash map (hash layout).
    pub hash_entries: u32,
    /// Entries of the start map (with a start stage).
    pub start_entries: u32,
    /// Added to the event index key (`EVENT_INDEX`) when reading, so that events of
    /// several engines behind one command have distinct indices.
    pub event_base: u32,
}

impl EngineSpec {
    /// A spec with the default map sizes.
    pub fn new(main: Stage, start: Option<Stage>) -> Self {
        Self {
            main,
            start,
            hash_entries: DEFAULT_HASH_ENTRIES,
            start_entries: DEFAULT_START_ENTRIES,
            event_base: 0,
        }
    }
}

/// Which processes an engine traces.
#[derive(Clone, Debug, Default)]
pub struct Targets {
    /// `None`: every process.
    pub pids: Option<Vec<u32>>,
    /// Also trace children they fork (for `-- CMD`).
    pub follow_children: bool,
    /// Leave tracekit's own events out. Costs a helper call per event when tracing every
    /// process; unneeded when the maps are only read after [`Engine::detach`].
    pub exclude_self: bool,
}

/// The engine's counters, summed over CPUs (see `tracekit_common::engine::stat`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct EngineStats {
    /// Events aggregated.
    pub counted: u64,
    /// Events the filter rejected.
    pub filtered: u64,
    /// Events dropped: the group map was full.
    pub map_full: u64,
    /// End events whose start was not seen.
    pub no_start: u64,
    /// Starts dropped: the start map was full.
    pub start_map_full: u64,
    /// Events whose fields could not be read.
    pub read_errors: u64,
    /// Starts recorded.
    pub starts: u64,
    /// Trace records lost to a full ring buffer.
    pub trace_lost: u64,
    /// Stacks lost to a full stack map.
    pub stack_map_full: u64,
    /// Stacks the kernel could not walk.
    pub stack_errors: u64,
    /// New-process announcements lost.
    pub announce_lost: u64,
}

impl EngineStats {
    fn add(&mut self, other: &EngineStats) {
        self.trace_lost += other.trace_lost;
        self.stack_map_full += other.stack_map_full;
        self.stack_errors += other.stack_errors;
        self.announce_lost += other.announce_lost;
        self.counted += other.counted;
        self.filtered += other.filtered;
        self.map_full += other.map_full;
        self.no_start += other.no_start;
        self.start_map_full += other.start_map_full;
        self.read_errors += other.read_errors;
        self.starts += other.starts;
    }

    /// Counter-wise `self - earlier`.
    pub fn since(&self, earlier: &EngineStats) -> EngineStats {
        EngineStats {
            counted: self.counted - earlier.counted,
            filtered: self.filtered - earlier.filtered,
            map_full: self.map_full - earlier.map_full,
            no_start: self.no_start - earlier.no_start,
            start_map_full: self.start_map_full - earlier.start_map_full,
            read_errors: self.read_errors - earlier.read_errors,
            starts: self.starts - earlier.starts,
            trace_lost: self.trace_lost - earlier.trace_lost,
            stack_map_full: self.stack_map_full - earlier.stack_map_full,
            stack_errors: self.stack_errors - earlier.stack_errors,
            announce_lost: self.announce_lost - earlier.announce_lost,
        }
    }
}

/// Aggregates as read: (key words, slot) to (count, sum), summed over CPUs.
#[derive(Clone, Debug, Default)]
pub struct Aggregates {
    /// Per key and slot.
    pub cells: BTreeMap<(Vec<u64>, u32), AggValue>,
    /// Counters.
    pub stats: EngineStats,
}

impl Aggregates {
    /// Adds `other`'s cells and counters (several engines behind one command).
    pub fn merge(&mut self, other: Aggregates) {
        for (key, value) in other.cells {
            let cell = self.cells.entry(key).or_default();
            cell.count += value.count;
            cell.sum = cell.sum.wrapping_add(value.sum);
        }
        self.stats.add(&other.stats);
    }

    /// What was aggregated after `earlier` (for `-i`).
    pub fn since(&self, earlier: &Aggregates) -> Aggregates {
        let cells = self
            .cells
            .iter()
            .filter_map(|(key, value)| {
                let before = earlier.cells.get(key).copied().unwrap_or_default();
                (value.count > before.count).then(|| {
                    (
                        key.clone(),
                        AggValue {
                            count: value.count - before.count,
                            sum: value.sum.wrapping_sub(before.sum),
                        },
                    )
                })
            })
            .collect();
        Aggregates {
            cells,
            stats: self.stats.since(&earlier.stats),
        }
    }
}

/// A loaded engine object.
pub struct Engine {
    /// The programs and the maps not read back; dropped by [`Engine::detach`].
    ebpf: Option<Ebpf>,
    array: Map,
    hash: Map,
    stats: Map,
    stacks: Map,
    trace: Option<Map>,
    announce: Option<Map>,
    plan: Plan,
    event_base: u32,
    notes: Vec<String>,
    /// Kprobe links (true: of the start stage), owned here so that detaching can close them
    /// in parallel.
    kprobe_links: Vec<(bool, aya::programs::kprobe::KProbeLink)>,
    /// The object's maps by name, kept when a stage probes several kernel functions: the
    /// kprobe.multi program shares them (see [`kprobe_multi`]).
    map_fds: Vec<(String, OwnedFd)>,
    /// kprobe.multi links and their programs (true: of the start stage); closing them
    /// detaches.
    multi_links: Vec<(bool, OwnedFd, OwnedFd)>,
}

/// The kernel object behind an aya map handle.
fn map_data(map: &Map) -> Option<&MapData> {
    match map {
        Map::Array(data)
        | Map::PerCpuArray(data)
        | Map::HashMap(data)
        | Map::PerCpuHashMap(data)
        | Map::LruHashMap(data)
        | Map::PerCpuLruHashMap(data)
        | Map::RingBuf(data)
        | Map::StackTraceMap(data)
        | Map::PerfEventArray(data)
        | Map::Unsupported(data) => Some(data),
        _ => None,
    }
}

const KPROBE_PMU: &str = "/sys/bus/event_source/devices/kprobe";

/// Closes kprobe links, from many threads when there are many: each waits for an RCU grace
/// period, and waits in parallel share grace periods.
fn close_in_parallel(links: Vec<(bool, aya::programs::kprobe::KProbeLink)>) {
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

/// Detaches and unloads `program` (its tracked links included).
fn unload(program: &mut aya::programs::Program) {
    use aya::programs::Program;
    let result = match program {
        Program::TracePoint(p) => p.unload(),
        Program::RawTracePoint(p) => p.unload(),
        Program::KProbe(p) => p.unload(),
        Program::UProbe(p) => p.unload(),
        Program::PerfEvent(p) => p.unload(),
        Program::FEntry(p) => p.unload(),
        Program::FExit(p) => p.unload(),
        _ => Ok(()),
    };
    // Programs never loaded say so; nothing to do for them.
    let _ = result;
}

/// The engine program for a stage's `index`th tracepoint.
fn tracepoint_program(start: bool, index: usize) -> String {
    match (start, index) {
        (true, 0) => START_TP.to_string(),
        (true, _) => format!("{START_TP}_{index}"),
        (false, _) => format!("engine_tp_{index}"),
    }
}

/// The first line of a message.
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

const START_TP: &str = "engine_tp_start";
const MAIN_RAW: &str = "engine_raw_tp";
const MAIN_RAW_COUNT_ARG1: &str = "engine_raw_tp_count_arg1";
const START_RAW: &str = "engine_raw_tp_start";
const FORK: &str = "engine_sched_fork";

impl Engine {
    /// Loads the engine object with `spec`'s plans and map sizes, tracing `targets`.
    pub fn load(spec: &EngineSpec, targets: &Targets) -> Result<Self> {
        raise_memlock_limit();
        let main = spec.main.plan;
        let start = spec.start.as_ref().map_or(Plan::EMPTY, |s| s.plan);
        let self_pid = if targets.exclude_self {
            std::process::id()
        } else {
            0
        };
        let filter = u8::from(targets.pids.is_some());
        // offcpu announces from its start stage (the task leaving the CPU).
        let announces = main.announce != 0 || start.announce != 0;
        let fork_offset = if targets.follow_children {
            let tracefs = tracefs::root()?;
            EventFormat::read(&tracefs, "sched", "sched_process_fork")?
                .field("child_pid")
                .ok_or_else(|| Error::runtime("sched:sched_process_fork has no child_pid field"))?
                .offset
        } else {
            0
        };
        let mmap_prot_offset = if announces { mmap_prot_offset() } else { None };
        let array_entries = if main.layout == layout::ARRAY {
            (main.array_key_bound + 1) * main.slots
        } else {
            1
        };
        let hash_entries = if main.layout == layout::HASH {
            spec.hash_entries
        } else {
            1
        };
        let start_entries = if spec.start.is_some() {
            spec.start_entries
        } else {
            1
        };
        let uses = |kind: u32| {
            [&main, &start].iter().any(|plan| {
                plan.operands[..plan.n_operands as usize]
                    .iter()
                    .any(|o| o.kind == kind)
            })
        };
        let stack_entries = if uses(operand::KERNEL_STACK) || uses(operand::USER_STACK) {
            DEFAULT_STACK_ENTRIES
        } else {
            1
        };
        let page = 4096;
        let trace_bytes = if main.agg == agg::TRACE {
            TRACE_RING_BYTES
        } else {
            page
        };
        let announce_bytes = if announces { EVENTS_RING_BYTES } else { page };
        // Tracepoint and raw tracepoint programs need no kernel BTF.
        let prot_offset = mmap_prot_offset.unwrap_or(0);
        let mut ebpf = load_without_kernel_btf(object(Object::Engine)?, |loader| {
            loader
                .override_global("ENGINE_PLAN", &main, true)
                .override_global("ENGINE_START_PLAN", &start, true)
                .override_global("ENGINE_SELF_PID", &self_pid, true)
                .override_global("ENGINE_FILTER_PIDS", &filter, true)
                .override_global("ENGINE_FORK_CHILD_PID_OFFSET", &fork_offset, true)
                .override_global("ENGINE_MMAP_PROT_OFFSET", &prot_offset, true)
                .map_max_entries("ENGINE_ARRAY", array_entries)
                .map_max_entries("ENGINE_HASH", hash_entries)
                .map_max_entries("ENGINE_STARTS", start_entries)
                .map_max_entries("ENGINE_STACKS", stack_entries)
                .map_max_entries("ENGINE_TRACE", trace_bytes)
                .map_max_entries("ENGINE_ANNOUNCE", announce_bytes);
        })
        .context("loading the engine BPF programs")?;
        if let Some(pids) = &targets.pids {
            let mut map: BpfHashMap<_, u32, u8> =
                BpfHashMap::try_from(ebpf.map_mut("ENGINE_TARGETS").expect("map in object"))
                    .context("opening ENGINE_TARGETS")?;
            for &pid in pids {
                map.insert(pid, 1, 0)
                    .with_context(|| format!("selecting pid {pid}"))?;
            }
        }
        let several_functions = |stage: Option<&Stage>| {
            stage.is_some_and(|stage| {
                matches!(&stage.attach, Attach::KernelFunctions { functions, how, .. }
                    if functions.len() > 1 && *how != KernelAttach::Fentry)
            })
        };
        let map_fds =
            if several_functions(Some(&spec.main)) || several_functions(spec.start.as_ref()) {
                ebpf.maps()
                    .filter_map(|(name, map)| {
                        let fd = map_data(map)?.fd().as_fd().try_clone_to_owned().ok()?;
                        Some((name.to_string(), fd))
                    })
                    .collect()
            } else {
                Vec::new()
            };
        let mut take = |name: &str| {
            ebpf.take_map(name)
                .ok_or_else(|| Error::runtime(format!("{name} is not in the engine object")))
        };
        let (array, hash, stats) = (
            take("ENGINE_ARRAY")?,
            take("ENGINE_HASH")?,
            take("ENGINE_STATS")?,
        );
        let (stacks, trace, announce) = (
            take("ENGINE_STACKS")?,
            take("ENGINE_TRACE")?,
            take("ENGINE_ANNOUNCE")?,
        );
        let mut engine = Self {
            ebpf: Some(ebpf),
            array,
            hash,
            stats,
            stacks,
            trace: Some(trace),
            announce: Some(announce),
            plan: main,
            event_base: spec.event_base,
            notes: Vec::new(),
            kprobe_links: Vec::new(),
            map_fds,
            multi_links: Vec::new(),
        };
        if announces {
            engine.attach_tracepoint(
                "engine_sched_exec",
                &Tracepoint {
                    system: "sched".into(),
                    event: "sched_process_exec".into(),
                },
            )?;
            if mmap_prot_offset.is_some() {
                engine.attach_tracepoint(
                    "engine_mmap_exec",
                    &Tracepoint {
                        system: "syscalls".into(),
                        event: "sys_enter_mmap".into(),
                    },
                )?;
            }
        }
        if targets.follow_children {
            engine.attach_tracepoint(
                FORK,
                &Tracepoint {
                    system: "sched".into(),
                    event: "sched_process_fork".into(),
                },
            )?;
        }
        Ok(engine)
    }

    /// Attaches the start stage first (so no end is seen before its start could be), then
    /// the main stage.
    pub fn attach(&mut self, spec: &EngineSpec) -> Result<()> {
        // Verifying a program takes milliseconds: load every tracepoint program first, so
        // the stages start within a short window (a wait that begins between the start's
        // attach and the main's has no start).
        for (stage, start) in [(spec.start.as_ref(), true), (Some(&spec.main), false)] {
            if let Some(Stage {
                attach: Attach::Tracepoints(tracepoints),
                ..
            }) = stage
            {
                if tracepoints.len() > MAX_TRACEPOINTS
                    || (start && tracepoints.len() > MAX_START_TRACEPOINTS)
                {
                    return Err(Error::runtime(format!(
                        "an engine attaches at most {MAX_TRACEPOINTS} tracepoints \
                         ({MAX_START_TRACEPOINTS} to start)"
                    )));
                }
                for (index, tp) in tracepoints.iter().enumerate() {
                    self.load_tracepoint_program(&tracepoint_program(start, index), tp)?;
                }
            }
        }
        if let Some(start) = &spec.start {
            self.attach_stage(start, true)?;
        }
        self.attach_stage(&spec.main, false)
    }

    fn attach_trampoline(&mut self, function: &str, start: bool, ret: bool) -> Result<()> {
        let fentry_error = |err: aya::programs::ProgramError| {
            let text = err.to_string();
            Error::runtime(if text.contains("(os error 1)") {
                "refuses BPF trampolines (fentry load: EPERM)".to_string()
            } else {
                format!("fentry/fexit failed: {}", first_line(&text))
            })
        };
        let btf = aya::Btf::from_sys_fs()
            .map_err(|err| Error::runtime(format!("fentry needs kernel BTF: {err}")))?;
        if start || !ret {
            let name = if start {
                "engine_fentry_start"
            } else {
                "engine_fentry"
            };
            let program: &mut FEntry = self
                .ebpf()?
                .program_mut(name)
                .expect("program in object")
                .try_into()
                .context("fentry program type")?;
            program.load(function, &btf).map_err(fentry_error)?;
            program.attach().map_err(fentry_error)?;
        } else {
            let program: &mut FExit = self
                .ebpf()?
                .program_mut("engine_fexit")
                .expect("program in object")
                .try_into()
                .context("fexit program type")?;
            program.load(function, &btf).map_err(fentry_error)?;
            program.attach().map_err(fentry_error)?;
        }
        Ok(())
    }

    /// Attaches `functions` through one kprobe.multi link when the kernel has them, else
    /// through one kprobe per function. Returns how, for `-v`.
    fn attach_kprobes(&mut self, functions: &[String], start: bool, ret: bool) -> Result<String> {
        let name = match (start, ret) {
            (true, _) => "engine_kprobe_start",
            (false, false) => "engine_kprobe",
            (false, true) => "engine_kretprobe",
        };
        let kind = if ret && !start { "kretprobe" } else { "kprobe" };
        let mut how = match functions {
            [one] => format!("{kind} {one}"),
            many => format!("{kind} on {} functions", many.len()),
        };
        if functions.len() > 1 && !self.map_fds.is_empty() {
            match self.attach_kprobe_multi(name, functions, start, ret && !start) {
                Ok(()) => return Ok(format!("{kind}.multi on {} functions", functions.len())),
                Err(err) => how.push_str(&format!(", one link each (kprobe.multi: {err})")),
            }
        }
        let program: &mut KProbe = self
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
        self.kprobe_links
            .extend(links.into_iter().map(|link| (start, link)));
        Ok(how)
    }

    fn attach_kprobe_multi(
        &mut self,
        program: &str,
        functions: &[String],
        start: bool,
        ret: bool,
    ) -> std::result::Result<(), String> {
        let loaded = kprobe_multi::load(
            object(Object::Engine).map_err(|err| err.to_string())?,
            program,
            &self.map_fds,
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
        self.multi_links.push((start, link, loaded));
        Ok(())
    }

    /// How each stage attached (`fentry vfs_read`, `kprobe on 12 functions`), for `-v`.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Detaches and unloads every program; the aggregates stay readable.
    ///
    /// Each kprobe waits for an RCU grace period when it is released; closing the links from
    /// many threads at once lets those waits share grace periods, so detaching hundreds of
    /// kprobes takes a few grace periods instead of hundreds.
    ///
    /// The main stage goes first: while it runs, every start it looks up is still being
    /// recorded. The other order leaves the tasks woken meanwhile (detaching itself wakes the
    /// RCU kthreads) without a start, counted as ends whose start was not seen.
    pub fn detach(&mut self) {
        self.map_fds.clear();
        let (start_multi, main_multi): (Vec<_>, Vec<_>) = std::mem::take(&mut self.multi_links)
            .into_iter()
            .partition(|(start, ..)| *start);
        drop(main_multi);
        let (start_links, main_links): (Vec<_>, Vec<_>) = std::mem::take(&mut self.kprobe_links)
            .into_iter()
            .partition(|(start, _)| *start);
        close_in_parallel(main_links);
        if let Some(ebpf) = self.ebpf.as_mut() {
            let main: Vec<String> = ebpf
                .programs()
                .map(|(name, _)| name.to_string())
                .filter(|name| !name.contains("_start"))
                .collect();
            for name in main {
                if let Some(program) = ebpf.program_mut(&name) {
                    unload(program);
                }
            }
        }
        drop(start_multi);
        close_in_parallel(start_links);
        self.ebpf = None;
    }

    fn ebpf(&mut self) -> Result<&mut Ebpf> {
        self.ebpf
            .as_mut()
            .ok_or_else(|| Error::runtime("the engine was detached"))
    }

    fn attach_stage(&mut self, stage: &Stage, start: bool) -> Result<()> {
        let raw = if start {
            START_RAW
        } else if fast_count_arg1(&stage.plan) {
            MAIN_RAW_COUNT_ARG1
        } else {
            MAIN_RAW
        };
        match &stage.attach {
            Attach::Tracepoints(tracepoints) => {
                // Counts were checked (and the programs loaded) by `attach`.
                for (index, tp) in tracepoints.iter().enumerate() {
                    self.attach_tracepoint(&tracepoint_program(start, index), tp)?;
                }
                Ok(())
            }
            Attach::RawTracepoint(name) => {
                let program: &mut RawTracePoint = self
                    .ebpf()?
                    .program_mut(raw)
                    .expect("program in object")
                    .try_into()
                    .context("raw tracepoint program type")?;
                program
                    .load()
                    .with_context(|| format!("loading the engine for raw tracepoint {name}"))?;
                program
                    .attach(name)
                    .with_context(|| format!("attaching to raw tracepoint {name}"))?;
                Ok(())
            }
            Attach::KernelFunctions {
                functions,
                ret,
                how,
            } => {
                let kprobes = Path::new(KPROBE_PMU).exists();
                let what = match functions.as_slice() {
                    [one] => format!("kernel function {one}"),
                    many => format!("{} kernel functions ({}, ...)", many.len(), many[0]),
                };
                let mut trampoline_error = None;
                if *how != KernelAttach::Kprobe && functions.len() == 1 {
                    match self.attach_trampoline(&functions[0], start, *ret) {
                        Ok(()) => {
                            self.notes.push(format!(
                                "{} {}",
                                if *ret && !start { "fexit" } else { "fentry" },
                                functions[0]
                            ));
                            return Ok(());
                        }
                        Err(err) if *how == KernelAttach::Fentry => return Err(err),
                        Err(err) => trampoline_error = Some(err),
                    }
                } else if *how == KernelAttach::Fentry {
                    return Err(Error::usage(format!(
                        "--fentry probes one function at a time; {what} match; use --kprobe"
                    )));
                }
                if !kprobes {
                    let no_kprobes = "this kernel has no kprobes (CONFIG_KPROBES is not set)";
                    return Err(Error::runtime(match trampoline_error {
                        Some(fentry) => format!("cannot probe {what}: {no_kprobes} and {fentry}"),
                        None => format!(
                            "cannot probe {what}: {no_kprobes}; fentry probes one function at a time"
                        ),
                    }));
                }
                let how = self.attach_kprobes(functions, start, *ret)?;
                self.notes.push(how);
                Ok(())
            }
            Attach::Uprobes {
                binary,
                offsets,
                pid,
                ret,
            } => {
                let name = match (start, ret) {
                    (true, _) => "engine_uprobe_start",
                    (false, false) => "engine_uprobe",
                    (false, true) => "engine_uretprobe",
                };
                let program: &mut UProbe = self
                    .ebpf()?
                    .program_mut(name)
                    .expect("program in object")
                    .try_into()
                    .context("uprobe program type")?;
                program.load().context("loading the engine's uprobe")?;
                let scope = match pid.and_then(std::num::NonZeroU32::new) {
                    Some(pid) => UProbeScope::OneProcess(pid),
                    None => UProbeScope::AllProcesses,
                };
                for (index, &offset) in offsets.iter().enumerate() {
                    let point = UProbeAttachPoint {
                        location: UProbeAttachLocation::AbsoluteOffset(offset),
                        cookie: Some(index as u64),
                    };
                    program.attach(point, binary, scope).with_context(|| {
                        format!("attaching a uprobe to {} at {offset:#x}", binary.display())
                    })?;
                }
                Ok(())
            }
            Attach::SoftwareEvent { config, period } => {
                let program: &mut PerfEvent = self
                    .ebpf()?
                    .program_mut("engine_perf_event")
                    .expect("program in object")
                    .try_into()
                    .context("perf event program type")?;
                program
                    .load()
                    .context("loading the engine's perf event program")?;
                let event = software_event(*config)?;
                let cpus = aya::util::online_cpus().map_err(|(path, err)| {
                    Error::runtime(format!("reading the online CPUs from {path}: {err}"))
                })?;
                for cpu in cpus {
                    program
                        .attach(
                            PerfEventConfig::Software(event),
                            PerfEventScope::AllProcessesOneCpu { cpu },
                            SamplePolicy::Period(*period),
                            false,
                        )
                        .with_context(|| format!("attaching to a software event on cpu {cpu}"))?;
                }
                Ok(())
            }
        }
    }

    /// Tracepoint program `name`, loaded for `tp` unless it was.
    fn load_tracepoint_program(&mut self, name: &str, tp: &Tracepoint) -> Result<&mut TracePoint> {
        let program: &mut TracePoint = self
            .ebpf()?
            .program_mut(name)
            .expect("program in object")
            .try_into()
            .context("tracepoint program type")?;
        if program.fd().is_err() {
            program
                .load()
                .with_context(|| format!("loading the engine for tracepoint {tp}"))?;
        }
        Ok(program)
    }

    fn attach_tracepoint(&mut self, name: &str, tp: &Tracepoint) -> Result<()> {
        tracefs::root()?;
        self.load_tracepoint_program(name, tp)?
            .attach(&tp.system, &tp.event)
            .with_context(|| format!("attaching to tracepoint {tp}"))?;
        Ok(())
    }

    /// The ring buffer of trace records (once).
    pub fn take_trace(&mut self) -> Result<RingBuf<aya::maps::MapData>> {
        let map = self
            .trace
            .take()
            .ok_or_else(|| Error::runtime("ENGINE_TRACE already taken"))?;
        RingBuf::try_from(map).context("opening ENGINE_TRACE")
    }

    /// The ring buffer announcing processes (once).
    pub fn take_announce(&mut self) -> Result<RingBuf<aya::maps::MapData>> {
        let map = self
            .announce
            .take()
            .ok_or_else(|| Error::runtime("ENGINE_ANNOUNCE already taken"))?;
        RingBuf::try_from(map).context("opening ENGINE_ANNOUNCE")
    }

    /// The frames (leaf first) of each stack hash in `hashes` that the stack map holds.
    pub fn stacks(&self, hashes: impl IntoIterator<Item = u64>) -> Result<BTreeMap<u64, Vec<u64>>> {
        let map: BpfHashMap<_, u64, StackFrames> =
            BpfHashMap::try_from(&self.stacks).context("opening ENGINE_STACKS")?;
        let mut out = BTreeMap::new();
        for hash in hashes {
            if hash <= STACK_ERROR || out.contains_key(&hash) {
                continue;
            }
            if let Ok(frames) = map.get(&hash, 0) {
                let len = frames
                    .iter()
                    .position(|&ip| ip == 0)
                    .unwrap_or(frames.len());
                out.insert(hash, frames[..len].to_vec());
            }
        }
        Ok(out)
    }

    /// An independent handle on the stack map, for looking stacks up while events stream.
    pub fn stack_reader(&self) -> Result<StackReader> {
        let Map::HashMap(data) = &self.stacks else {
            return Err(Error::runtime("ENGINE_STACKS is not a hash map"));
        };
        let id = data.info().context("ENGINE_STACKS info")?.id();
        let map = MapData::from_id(id).context("reopening ENGINE_STACKS")?;
        Ok(StackReader {
            map: BpfHashMap::try_from(Map::HashMap(map)).context("opening ENGINE_STACKS")?,
        })
    }

    /// Copies the aggregates and counters out of the kernel.
    pub fn read(&self) -> Result<Aggregates> {
        let mut cells = BTreeMap::new();
        let keyed_by_event = self.plan.n_key_parts > 0
            && self.plan.operands[self.plan.key_parts[0] as usize].kind == operand::EVENT_INDEX;
        let base = if keyed_by_event {
            u64::from(self.event_base)
        } else {
            0
        };
        if self.plan.layout == layout::ARRAY {
            let array: PerCpuArray<_, AggValue> =
                PerCpuArray::try_from(&self.array).context("opening ENGINE_ARRAY")?;
            let slots = self.plan.slots;
            let keyed = self.plan.n_key_parts > 0;
            for index in 0..(self.plan.array_key_bound + 1) * slots {
                let per_cpu = array.get(&index, 0).context("reading ENGINE_ARRAY")?;
                let value = sum(per_cpu.iter());
                if value.count > 0 {
                    let key = if keyed {
                        vec![u64::from(index / slots) + base]
                    } else {
                        Vec::new()
                    };
                    cells.insert((key, index % slots), value);
                }
            }
        } else {
            let hash: PerCpuHashMap<_, AggKey, AggValue> =
                PerCpuHashMap::try_from(&self.hash).context("opening ENGINE_HASH")?;
            for entry in hash.iter() {
                let (key, per_cpu) = entry.context("reading ENGINE_HASH")?;
                let mut words = key.words.to_vec();
                words[0] += base;
                cells.insert((words, key.slot), sum(per_cpu.iter()));
            }
        }
        let stats_map: PerCpuArray<_, u64> =
            PerCpuArray::try_from(&self.stats).context("opening ENGINE_STATS")?;
        let mut counters = [0u64; STAT_COUNT as usize];
        for (index, counter) in counters.iter_mut().enumerate() {
            *counter = stats_map
                .get(&(index as u32), 0)
                .context("reading ENGINE_STATS")?
                .iter()
                .sum();
        }
        let counted = cells.values().map(|value| value.count).sum();
        Ok(Aggregates {
            cells,
            stats: EngineStats {
                counted,
                filtered: counters[stat::FILTERED as usize],
                map_full: counters[stat::MAP_FULL as usize],
                no_start: counters[stat::NO_START as usize],
                start_map_full: counters[stat::START_MAP_FULL as usize],
                read_errors: counters[stat::READ_ERRORS as usize],
                starts: counters[stat::STARTS as usize],
                trace_lost: counters[stat::TRACE_LOST as usize],
                stack_map_full: counters[stat::STACK_MAP_FULL as usize],
                stack_errors: counters[stat::STACK_ERRORS as usize],
                announce_lost: counters[stat::ANNOUNCE_LOST as usize],
            },
        })
    }
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

/// The aya software event for `PERF_COUNT_SW_*` number `config`.
fn software_event(config: u64) -> Result<SoftwareEvent> {
    Ok(match config {
        0 => SoftwareEvent::CpuClock,
        1 => SoftwareEvent::TaskClock,
        2 => SoftwareEvent::PageFaults,
        3 => SoftwareEvent::ContextSwitches,
        4 => SoftwareEvent::CpuMigrations,
        5 => SoftwareEvent::PageFaultsMin,
        6 => SoftwareEvent::PageFaultsMaj,
        7 => SoftwareEvent::AlignmentFaults,
        8 => SoftwareEvent::EmulationFaults,
        other => {
            return Err(Error::usage(format!(
                "unknown software event number {other}"
            )));
        }
    })
}

fn sum<'a>(values: impl Iterator<Item = &'a AggValue>) -> AggValue {
    values.fold(AggValue::default(), |acc, v| AggValue {
        count: acc.count + v.count,
        sum: acc.sum.wrapping_add(v.sum),
    })
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.detach();
    }
}

/// Looks up stacks by hash in an engine's stack map.
pub struct StackReader {
    map: BpfHashMap<MapData, u64, StackFrames>,
}

impl StackReader {
    /// The frames of a stack, leaf first, if it is in the map.
    pub fn frames(&self, hash: u64) -> Option<Vec<u64>> {
        if hash <= STACK_ERROR {
            return None;
        }
        let frames = self.map.get(&hash, 0).ok()?;
        let len = frames
            .iter()
            .position(|&ip| ip == 0)
            .unwrap_or(frames.len());
        Some(frames[..len].to_vec())
    }
}

/// How a group-key part is shown.
#[derive(Clone, Debug)]
pub enum KeyKind {
    /// An integer.
    Int { signed: bool },
    /// A string.
    Str,
    /// An event, named from this table; groups of events not in it are not shown.
    Event(BTreeMap<u64, String>),
    /// A syscall number of this machine's architecture.
    Syscall,
    /// A block device (`dev_t` as the block tracepoints record it: major << 20 | minor).
    Disk,
    /// A kernel function's address, shown as its name.
    KernelFunction,
}

/// One column of a group key.
#[derive(Clone, Debug)]
pub struct KeyColumn {
    /// The header (`comm`, `syscall`, `disk`).
    pub name: String,
    /// How it is shown.
    pub kind: KeyKind,
}

impl KeyColumn {
    fn words(&self) -> usize {
        match self.kind {
            KeyKind::Str => STR_BYTES / 8,
            _ => 1,
        }
    }
}

/// One shown key value.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum KeyValue {
    /// An integer.
    Int(i128),
    /// Text.
    Text(String),
}

impl std::fmt::Display for KeyValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Int(n) => write!(f, "{n}"),
            Self::Text(s) => f.write_str(s),
        }
    }
}

impl serde::Serialize for KeyValue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Self::Int(n) => s.serialize_i128(*n),
            Self::Text(t) => s.serialize_str(t),
        }
    }
}

/// Decodes packed key words into shown values, column by column.
pub fn decode_key(columns: &[KeyColumn], words: &[u64]) -> Vec<KeyValue> {
    let mut at = 0;
    columns
        .iter()
        .map(|column| {
            let n = column.words();
            let part = words.get(at..at + n).unwrap_or(&[]);
            at += n;
            let first = part.first().copied().unwrap_or(0);
            match &column.kind {
                KeyKind::Int { signed: true } => KeyValue::Int(i128::from(first as i64)),
                KeyKind::Int { signed: false } => KeyValue::Int(i128::from(first)),
                KeyKind::Str => {
                    let bytes: Vec<u8> = part.iter().flat_map(|w| w.to_ne_bytes()).collect();
                    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
                    KeyValue::Text(String::from_utf8_lossy(&bytes[..end]).into_owned())
                }
                KeyKind::Event(names) => KeyValue::Text(
                    names
                        .get(&first)
                        .cloned()
                        .unwrap_or_else(|| format!("event {first}")),
                ),
                KeyKind::Syscall => KeyValue::Text(syscall_name(first)),
                KeyKind::Disk => KeyValue::Text(disk_name(first)),
                KeyKind::KernelFunction => KeyValue::Text(crate::symbolize::kernel_function(first)),
            }
        })
        .collect()
}

/// The name of syscall `nr` on this architecture, or `syscall_NR`.
pub fn syscall_name(nr: u64) -> String {
    usize::try_from(nr)
        .ok()
        .and_then(syscalls::Sysno::new)
        .map(|sysno| sysno.name().to_string())
        .unwrap_or_else(|| format!("syscall_{nr}"))
}

/// The name of a block device recorded by the block tracepoints (`dev_t` with 20 minor
/// bits, `include/linux/kdev_t.h`), from `/sys/dev/block/MAJOR:MINOR`, or `MAJOR,MINOR`.
pub fn disk_name(dev: u64) -> String {
    let (major, minor) = (dev >> 20, dev & ((1 << 20) - 1));
    std::fs::read_link(format!("/sys/dev/block/{major}:{minor}"))
        .ok()
        .and_then(|target| target.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| format!("{major},{minor}"))
}

/// One group's aggregate, slots merged.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Group {
    /// The key, one value per column.
    pub key: Vec<KeyValue>,
    /// Events.
    pub count: u64,
    /// Sum of values.
    pub sum: u64,
    /// Histogram slot counts (empty when counting).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub slots: Vec<u64>,
}

/// Groups `aggregates` by decoded key; `slots` histogram slots per group (1: counts).
pub fn groups(aggregates: &Aggregates, columns: &[KeyColumn], slots: u32) -> Vec<Group> {
    let mut by_key: BTreeMap<Vec<KeyValue>, Group> = BTreeMap::new();
    for ((words, slot), value) in &aggregates.cells {
        if let (
            Some(KeyColumn {
                kind: KeyKind::Event(names),
                ..
            }),
            Some(first),
        ) = (columns.first(), words.first())
            && !names.contains_key(first)
        {
            continue;
        }
        let key = decode_key(columns, words);
        let group = by_key.entry(key.clone()).or_insert_with(|| Group {
            key,
            count: 0,
            sum: 0,
            slots: if slots > 1 {
                vec![0; slots as usize]
            } else {
                Vec::new()
            },
        });
        group.count += value.count;
        group.sum = group.sum.wrapping_add(value.sum);
        if let Some(cell) = group.slots.get_mut(*slot as usize) {
            *cell += value.count;
        }
    }
    by_key.into_values().collect()
}

/// The operand of a raw tracepoint argument `n`, `size` bytes, signed or not.
pub fn arg_operand(n: u32, size: u32, signed: bool) -> Operand {
    Operand {
        kind: operand::ARG,
        offset: n,
        size,
        flags: if signed { SIGNED } else { 0 },
        ..Operand::NONE
    }
}

/// The operand reading value `slot` the start stage saved.
pub fn saved_operand(slot: u32) -> Operand {
    Operand {
        kind: operand::SAVED,
        offset: slot,
        size: 8,
        ..Operand::NONE
    }
}

/// An operand of `kind` with no parameters (`PID`, `LATENCY`, `EVENT_INDEX`, ...).
pub fn simple_operand(kind: u32) -> Operand {
    Operand {
        kind,
        size: 8,
        ..Operand::NONE
    }
}

/// The value operand that marks "no value".
pub const NONE: u32 = NO_OPERAND;

/// Whether `plan` only counts events by raw tracepoint argument 1 into the array layout
/// (`syscount` without options), so `engine_raw_tp_count_arg1` computes exactly what the
/// interpreter would, without interpreting.
fn fast_count_arg1(plan: &Plan) -> bool {
    let operand = plan.operands[0];
    plan.n_operands == 1
        && operand.kind == operand::ARG
        && operand.offset == 1
        && operand.size == 8
        && operand.flags == 0
        && plan.n_key_parts == 1
        && plan.key_parts[0] == 0
        && plan.n_insns == 0
        && plan.value == NO_OPERAND
        && plan.needs_start == 0
        && plan.agg == agg::COUNT
        && plan.layout == layout::ARRAY
        && plan.slots == 1
        && plan.announce == 0
}

/// Offset of `prot` in `syscalls:sys_enter_mmap` (include/trace/events/syscalls.h), or None
/// when the kernel has no syscall tracepoints: then processes are announced at their first
/// event and after exec only, and libraries loaded later may not symbolize once they exit.
pub(crate) fn mmap_prot_offset() -> Option<u32> {
    let tracefs = tracefs::root().ok()?;
    let format = EventFormat::read(&tracefs, "syscalls", "sys_enter_mmap")
        .inspect_err(|err| log::debug!("no mmap tracepoint for re-reading memory maps: {err}"))
        .ok()?;
    format.field("prot").map(|field| field.offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A filter runs before the start lookup unless it reads the latency or a saved value.
    #[test]
    fn filter_first_only_when_the_filter_needs_no_start() {
        let with_filter = |kind: u32| {
            let mut builder = PlanBuilder::new();
            builder.needs_start();
            let read = builder.operand(simple_operand(kind)).unwrap();
            builder
                .push_insn(Insn {
                    op: op::NE,
                    operand: read,
                    arg: 0,
                })
                .unwrap();
            builder.plan().filter_first
        };
        assert_eq!(with_filter(operand::CPU), 1);
        assert_eq!(with_filter(operand::LATENCY), 0);
        let mut no_filter = PlanBuilder::new();
        no_filter.needs_start();
        assert_eq!(no_filter.plan().filter_first, 0);
        let mut no_start = PlanBuilder::new();
        let cpu = no_start.operand(simple_operand(operand::CPU)).unwrap();
        no_start
            .push_insn(Insn {
                op: op::NE,
                operand: cpu,
                arg: 0,
            })
            .unwrap();
        assert_eq!(no_start.plan().filter_first, 0);
    }

    /// syscount's plain plan takes the fast path; anything more does not.
    #[test]
    fn fast_count_arg1_only_for_plain_counts_by_arg1() {
        let plain = || {
            let mut builder = PlanBuilder::new();
            let nr = builder.operand(arg_operand(1, 8, false)).unwrap();
            builder.key_part(nr).unwrap();
            builder
        };
        let mut builder = plain();
        builder.layout(Some(1024));
        assert!(fast_count_arg1(&builder.plan()));

        let mut filtered = plain();
        filtered
            .push_insn(Insn {
                op: tracekit_common::engine::op::EQ,
                operand: 0,
                arg: 39,
            })
            .unwrap();
        filtered.layout(Some(1024));
        assert!(!fast_count_arg1(&filtered.plan()));

        let mut histogram = plain();
        histogram.value(0);
        histogram.log2();
        histogram.layout(Some(1024));
        assert!(!fast_count_arg1(&histogram.plan()));

        let mut arg0 = PlanBuilder::new();
        let first = arg0.operand(arg_operand(0, 8, false)).unwrap();
        arg0.key_part(first).unwrap();
        arg0.layout(Some(1024));
        assert!(!fast_count_arg1(&arg0.plan()));
    }

    #[test]
    fn builder_dedupes_operands_and_assigns_string_slots() {
        let mut b = PlanBuilder::new();
        let comm = builtin("comm").unwrap().operand;
        let pid = builtin("pid").unwrap().operand;
        assert_eq!(b.operand(comm).unwrap(), 0);
        assert_eq!(b.operand(pid).unwrap(), 1);
        assert_eq!(b.operand(comm).unwrap(), 0);
        let rwbs = Operand {
            kind: operand::FIELD_STRING,
            offset: 34,
            size: 10,
            ..Operand::NONE
        };
        assert_eq!(b.operand(rwbs).unwrap(), 2);
        let plan = b.plan();
        assert_eq!(plan.n_operands, 3);
        assert_eq!(
            (plan.operands[0].string_slot, plan.operands[2].string_slot),
            (0, 1)
        );
    }

    #[test]
    fn layout_follows_the_key() {
        let mut b = PlanBuilder::new();
        b.layout(None);
        assert_eq!(
            (b.plan().layout, b.plan().array_key_bound),
            (layout::ARRAY, 0)
        );
        let id = b.operand(arg_operand(1, 8, false)).unwrap();
        b.key_part(id).unwrap();
        b.layout(Some(512));
        assert_eq!(
            (b.plan().layout, b.plan().array_key_bound),
            (layout::ARRAY, 512)
        );
        let comm = b.operand(builtin("comm").unwrap().operand).unwrap();
        b.key_part(comm).unwrap();
        b.layout(Some(512));
        assert_eq!(b.plan().layout, layout::HASH);
    }

    #[test]
    fn key_budget_is_enforced() {
        let mut b = PlanBuilder::new();
        for offset in [8, 40] {
            let s = b
                .operand(Operand {
                    kind: operand::FIELD_STRING,
                    offset,
                    size: 16,
                    ..Operand::NONE
                })
                .unwrap();
            b.key_part(s).unwrap();
        }
        let pid = b.operand(builtin("pid").unwrap().operand).unwrap();
        assert_eq!(
            b.key_part(pid).unwrap_err().to_string(),
            "--by: the kernel engine groups by at most 4 values and 2 strings"
        );
    }

    #[test]
    fn linear_buckets() {
        let mut b = PlanBuilder::new();
        b.linear(0, 100, 10).unwrap();
        assert_eq!((b.plan().slots, b.plan().linear_step), (12, 10));
        assert_eq!(
            b.linear(0, 100_000, 1).unwrap_err().to_string(),
            "--linear 0,100000,1: 100000 buckets; the kernel engine keeps at most 1000"
        );
    }

    #[test]
    fn decodes_keys() {
        let columns = [
            KeyColumn {
                name: "comm".into(),
                kind: KeyKind::Str,
            },
            KeyColumn {
                name: "ret".into(),
                kind: KeyKind::Int { signed: true },
            },
            KeyColumn {
                name: "syscall".into(),
                kind: KeyKind::Syscall,
            },
        ];
        let mut words = vec![u64::from_ne_bytes(*b"dd\0\0\0\0\0\0"), 0, 0, 0];
        words.push((-5i64) as u64);
        words.push(110);
        assert_eq!(
            decode_key(&columns, &words),
            [
                KeyValue::Text("dd".into()),
                KeyValue::Int(-5),
                KeyValue::Text("getppid".into())
            ]
        );
    }

    #[test]
    fn groups_merge_slots() {
        let mut aggregates = Aggregates::default();
        aggregates
            .cells
            .insert((vec![7], 2), AggValue { count: 3, sum: 12 });
        aggregates
            .cells
            .insert((vec![7], 5), AggValue { count: 1, sum: 40 });
        let columns = [KeyColumn {
            name: "pid".into(),
            kind: KeyKind::Int { signed: false },
        }];
        assert_eq!(
            groups(&aggregates, &columns, 8),
            [Group {
                key: vec![KeyValue::Int(7)],
                count: 4,
                sum: 52,
                slots: vec![0, 0, 3, 0, 0, 1, 0, 0]
            }]
        );
    }
}
