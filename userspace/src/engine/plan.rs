//! [`PlanBuilder`]: assembles a [`Plan`] (operands, filter instructions, key, value,
//! aggregation, map layout) and enforces the kernel engine's limits with one-line errors.

use tracekit_common::engine::{
    FD_INT32, Insn, KEY_SET_BITS, KEY_SET_WORDS, KEY_WORDS, LOG2_SLOTS, MAX_INSNS, MAX_KEY_PARTS,
    MAX_LINEAR_SLOTS, MAX_OPERANDS, MAX_PRECISION, MAX_STR_CONSTS, MAX_STRINGS, NO_OPERAND,
    Operand, PTR_ARRAY, PTR_FROM_ARG, Plan, SAVED_WORDS, SIGNED, STR_BYTES, agg, layout,
    log_linear_slots, op, operand,
};

use crate::{Error, Result};

/// Most cells (keys times slots) a keyed per-CPU array may hold before the hash serves
/// instead (1 MiB of 16-byte cells per CPU).
const MAX_ARRAY_CELLS: u64 = 65536;

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
        // A string whose pointer is an argument (`str(arg0)`) reads it from the scratch too.
        let string_of_arg = (matches!(new.kind, operand::USER_STR | operand::KERNEL_STR)
            && new.flags & PTR_FROM_ARG != 0)
            || (new.kind == operand::PATH_STR && new.index_offset == operand::ARG_PATH);
        if matches!(
            new.kind,
            operand::ARG | operand::ARG_DEREF | operand::ARG_PATH
        ) || string_of_arg
        {
            self.plan.raw_args = self.plan.raw_args.max(new.offset + 1);
        }
        if matches!(new.kind, operand::PID | operand::TID | operand::TASK) {
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

    /// Appends an instruction without an operand (`op::AND`, `op::OR`, `op::NOT`).
    pub fn push_op(&mut self, code: u32) -> Result<()> {
        self.push_insn(Insn {
            op: code,
            ..Insn::NONE
        })
    }

    /// The operands so far, to change in place (`engine::strings::whole_strings`).
    pub(crate) fn operands_mut(&mut self) -> &mut [Operand] {
        &mut self.plan.operands[..self.plan.n_operands as usize]
    }

    /// Whether the plan reads an operand of `kind` (`operand::USER_STACK`, ...).
    pub fn uses(&self, kind: u32) -> bool {
        self.plan.operands[..self.plan.n_operands as usize]
            .iter()
            .any(|o| o.kind == kind)
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

    /// Appends a group-key part. A comm part counts as one word here: the loader keys it by
    /// thread ([`crate::engine::names::key_by_task`]) where it can, and [`check_key_words`]
    /// refuses the plan at load when it stays a 4-word string that does not fit.
    pub fn key_part(&mut self, index: u32) -> Result<()> {
        let operand = self.plan.operands[index as usize];
        let words = if operand.kind == operand::COMM {
            1
        } else {
            operand.key_words()
        };
        let n = self.plan.n_key_parts as usize;
        if n == MAX_KEY_PARTS || self.key_words + words > KEY_WORDS {
            return Err(Error::usage(key_budget()));
        }
        self.plan.key_parts[n] = index;
        self.plan.n_key_parts += 1;
        self.key_words += words;
        Ok(())
    }

    /// Counts only events whose first key part is one of `rows` ([`Plan::key_set`]): the
    /// rows a request names when its program sees more. Rows at or above
    /// [`KEY_SET_BITS`] are left out of the set (and so never counted).
    pub fn key_set(&mut self, rows: impl IntoIterator<Item = u64>) {
        self.plan.key_set = [0; KEY_SET_WORDS];
        for row in rows.into_iter().filter(|&row| row < KEY_SET_BITS) {
            self.plan.key_set[(row / 64) as usize] |= 1 << (row % 64);
        }
        self.plan.key_set_used = 1;
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
    /// with [`saved_operand`] of the returned slot. A string takes the first four of the
    /// [`SAVED_WORDS`] (a comm, or one of 16 bytes or less, the first two) and must be saved
    /// first; numbers take the words left.
    ///
    /// # Errors
    /// A usage error for a second string or a string after numbers, a runtime error past
    /// the last word.
    pub fn save(&mut self, index: u32) -> Result<u32> {
        const STRING_FIRST: &str = "a start stage saves one string, before any number (a \
                                    string leaves room for 2 numbers, a comm for 4)";
        let is_comm = |plan: &Plan, index: u32| is_half_string(&plan.operands[index as usize]);
        if self.plan.operands[index as usize].is_string() {
            // Its bytes fill the first four saved words, a comm's the first two.
            let words = if is_comm(&self.plan, index) { 2 } else { 4 };
            if self.plan.saves.iter().any(|&s| s != NO_OPERAND) {
                return Err(Error::usage(STRING_FIRST));
            }
            self.plan.saves[..words].fill(index);
            return Ok(0);
        }
        let slot = (0..SAVED_WORDS)
            .find(|&slot| self.plan.saves[slot] == NO_OPERAND)
            .ok_or_else(|| {
                Error::runtime(format!(
                    "a start stage saves at most {SAVED_WORDS} words (a string takes 4, a comm 2)"
                ))
            })?;
        self.plan.saves[slot] = index;
        Ok(slot as u32)
    }

    /// Start stages whose correlation key is one thread id: starts of exiting threads are
    /// dropped, and new threads never inherit one.
    pub fn by_thread(&mut self) {
        self.plan.by_thread = 1;
    }

    /// Main stages whose events run in another task's context: no pid filter here.
    pub fn all_tasks(&mut self) {
        self.plan.all_tasks = 1;
    }

    /// Main stages: events need their start (for latency or a saved value).
    pub fn needs_start(&mut self) {
        self.plan.needs_start = 1;
    }

    /// Main stages with a start: read it and leave it for the next end event (the last
    /// value per key) instead of taking it away.
    pub fn keep_start(&mut self) {
        self.plan.keep_start = 1;
    }

    /// Divides the value by `div` before it picks a histogram slot (sums stay undivided).
    pub fn value_div(&mut self, div: u64) {
        self.plan.value_div = div.max(1);
    }

    /// Each event goes to userspace as a trace record instead of being aggregated.
    pub fn trace(&mut self) {
        self.plan.agg = agg::TRACE;
        // Every record carries its pid and tid, also in plans of any task's events.
        self.plan.needs_ids = 1;
    }

    /// Stores each allocation event's address instead of aggregating ([`agg::OUTSTANDING`]):
    /// the events of `release_events` (bit per event index) delete the address `release`
    /// reads (an argument or a field); `sizes` is each allocation event's size rule
    /// (`tracekit_common::engine::size_rule`).
    pub fn outstanding(
        &mut self,
        release_events: u64,
        release: Operand,
        sizes: [u32; tracekit_common::engine::MAX_ALLOC_EVENTS],
    ) {
        self.plan.agg = agg::OUTSTANDING;
        self.plan.release_events = release_events;
        self.plan.release = release;
        self.plan.alloc_size = sizes;
        if release.kind == operand::ARG {
            self.plan.raw_args = self.plan.raw_args.max(release.offset + 1);
        }
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

    /// A log-linear (HDR-style) histogram of the value with `precision` sub-bucket bits
    /// (`--precision`, 0..=7): relative resolution 2^-precision.
    pub fn log_linear(&mut self, precision: u32) -> Result<()> {
        if precision > MAX_PRECISION {
            return Err(Error::usage(format!(
                "--precision {precision}: expected 0 to {MAX_PRECISION} sub-bucket bits (4: \
                 buckets at most 6.25% wide, the default)"
            )));
        }
        self.plan.agg = agg::LOG_LINEAR;
        self.plan.precision = precision;
        self.plan.slots = log_linear_slots(precision);
        Ok(())
    }

    /// A linear histogram of the value: buckets of `step` from `min` up to `max`.
    pub fn linear(&mut self, min: i64, max: i64, step: u64) -> Result<()> {
        if step == 0 || max <= min {
            return Err(Error::usage(format!(
                "--linear {min},{max},{step}: needs MIN < MAX and a STEP above 0"
            )));
        }
        // In 128 bits: MAX - MIN overflows i64 for wide ranges (-2^63..2^63-1).
        let span = (i128::from(max) - i128::from(min)) as u128;
        let buckets = span.div_ceil(u128::from(step));
        if buckets + 2 > u128::from(MAX_LINEAR_SLOTS) {
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
            // A keyed array holds every key's every slot on every CPU: a log-linear
            // histogram (976 slots) by syscall would be megabytes per CPU, mostly zeros.
            Some(bound)
                if n <= 1
                    && (n == 0
                        || u64::from(bound + 1) * u64::from(self.plan.slots)
                            <= MAX_ARRAY_CELLS) =>
            {
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
            insn.op >= op::EQ && super::strings::reads_start(kind)
        };
        plan.filter_first = u32::from(
            plan.needs_start != 0
                && plan.n_insns > 0
                && !plan.insns[..plan.n_insns as usize].iter().any(from_start),
        );
        plan
    }
}

/// A plan as text, one line per part, for tests and `-vv` logs:
///
/// ```text
/// operands: #0 field@8:4 #1 field@16:8 #2 latency
/// corr: #0 #1 | key: - | saves: -
/// value: #2 /1000 | agg: log2 64 slots | layout: hash
/// filter: eq #0 8388608
/// flags: needs_start all_tasks
/// ```
pub fn disassemble(plan: &Plan) -> String {
    let operand_text = |o: &Operand| {
        let kind = match o.kind {
            operand::FIELD => "field",
            operand::FIELD_STRING => "field_string",
            operand::FIELD_DATA_LOC => "field_data_loc",
            operand::ARG => "arg",
            operand::ARG_DEREF => "arg_deref",
            operand::PID => "pid",
            operand::TID => "tid",
            operand::CPU => "cpu",
            operand::COMM => "comm",
            operand::LATENCY => "latency",
            operand::SAVED => "saved",
            operand::EVENT_INDEX => "event",
            operand::RETVAL => "retval",
            operand::FUNC_IP => "func_ip",
            operand::KERNEL_STACK => "kstack",
            operand::USER_STACK => "ustack",
            operand::REG => "reg",
            operand::USER_MEM => "user_mem",
            operand::USER_MEM_INDEXED => "user_mem",
            operand::CONST => "const",
            operand::CGROUP => "cgroup",
            operand::FIELD_BYTES => "field_bytes",
            operand::USER_STR => "user_str",
            operand::KERNEL_STR => "kernel_str",
            operand::SAVED_STR => "saved_str",
            operand::SAVED_USER_STR => "saved_user_str",
            operand::TASK => "task",
            operand::FOLLOWS => "follows",
            operand::ARG_PATH => "arg_path",
            operand::PATH_STR => "path_str",
            operand::TASK_PATH => "task_path",
            operand::FIELD_PATH => "field_path",
            operand::FD_PATH => "fd_path",
            operand::DIR_PATH => "dir_path",
            _ => "?",
        };
        let signed = if o.flags & SIGNED != 0 { "s" } else { "" };
        match o.kind {
            operand::FIELD
            | operand::FIELD_STRING
            | operand::FIELD_DATA_LOC
            | operand::FIELD_BYTES => {
                format!("{kind}@{}:{signed}{}", o.offset, o.size)
            }
            operand::ARG => format!("{kind}{}:{signed}{}", o.offset, o.size),
            operand::ARG_DEREF => format!("{kind}{}+{}:{signed}{}", o.offset, o.aux, o.size),
            operand::SAVED | operand::SAVED_USER_STR => format!("{kind}{}", o.offset),
            // The offsets are the running kernel's: only their count is shown.
            operand::ARG_PATH => format!("{kind}{}[{}]:{signed}{}", o.offset, o.aux, o.size),
            operand::TASK_PATH => format!("{kind}[{}]:{signed}{}", o.aux, o.size),
            operand::FIELD_PATH => format!("{kind}@{}[{}]:{signed}{}", o.offset, o.aux, o.size),
            // The descriptor field's width, then the path's.
            operand::FD_PATH => format!(
                "{kind}(@{}:s{})[{}]:{signed}{}",
                o.offset,
                if o.flags & FD_INT32 != 0 { 4 } else { 8 },
                o.aux,
                o.size
            ),
            operand::PATH_STR => format!(
                "{kind}({}{})[{}]:{}",
                match o.index_offset {
                    operand::TASK_PATH => "task",
                    operand::ARG_PATH => "arg",
                    _ => "field@",
                },
                if o.index_offset == operand::TASK_PATH {
                    String::new()
                } else {
                    o.offset.to_string()
                },
                o.aux,
                o.size
            ),
            operand::FOLLOWS => format!("{kind}(#{},#{},#{})", o.offset, o.aux, o.index_offset),
            operand::DIR_PATH if o.flags & tracekit_common::engine::AFTER_START != 0 => {
                format!("{kind}(#{}, after start)", o.aux)
            }
            operand::DIR_PATH => format!("{kind}(#{})", o.aux),
            operand::USER_STR | operand::KERNEL_STR if o.flags & PTR_FROM_ARG != 0 => {
                format!("{kind}@arg{}", o.offset)
            }
            operand::USER_STR | operand::KERNEL_STR if o.flags & PTR_ARRAY != 0 => {
                format!("{kind}@{}[{}]", o.offset, o.aux)
            }
            operand::USER_STR | operand::KERNEL_STR => format!("{kind}@{}", o.offset),
            operand::REG => format!("{kind}@{}:{signed}{}", o.offset, o.size),
            operand::USER_MEM => {
                format!("{kind}@{}{:+}:{signed}{}", o.offset, o.aux as i32, o.size)
            }
            operand::USER_MEM_INDEXED => format!(
                "{kind}@{}+{}*{}{:+}:{signed}{}",
                o.offset,
                o.index_offset,
                1u32 << (o.index_shift & 3),
                o.aux as i32,
                o.size
            ),
            operand::CONST => format!(
                "{kind}={}:{signed}{}",
                (u64::from(o.aux) << 32 | u64::from(o.offset)) as i64,
                o.size
            ),
            _ => kind.to_string(),
        }
    };
    let list = |items: &[u32]| {
        if items.is_empty() {
            "-".to_string()
        } else {
            items
                .iter()
                .map(|i| format!("#{i}"))
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    let operands: Vec<String> = plan.operands[..plan.n_operands as usize]
        .iter()
        .enumerate()
        .map(|(i, o)| format!("#{i} {}{}", operand_text(o), super::strings::listing(o)))
        .collect();
    let saves: Vec<String> = plan
        .saves
        .iter()
        .enumerate()
        .filter(|(_, s)| **s != NO_OPERAND)
        .map(|(slot, s)| format!("#{s}->{slot}"))
        .collect();
    let value = if plan.value == NO_OPERAND {
        "-".to_string()
    } else {
        format!("#{}", plan.value)
    };
    let div = if plan.value_div > 1 {
        format!(" /{}", plan.value_div)
    } else {
        String::new()
    };
    let aggregation = match plan.agg {
        agg::COUNT => "count".to_string(),
        agg::LOG2 => format!("log2 {} slots", plan.slots),
        agg::LINEAR => format!(
            "linear {} slots from {} step {}",
            plan.slots, plan.linear_min, plan.linear_step
        ),
        agg::TRACE => "trace".to_string(),
        agg::LOG_LINEAR => format!("log-linear {} slots p{}", plan.slots, plan.precision),
        agg::OUTSTANDING => format!(
            "outstanding, releases {:#x}, sizes {:x?}",
            plan.release_events, plan.alloc_size
        ),
        _ => "?".to_string(),
    };
    let layout = match plan.layout {
        layout::ARRAY => format!("array bound {}", plan.array_key_bound),
        _ => "hash".to_string(),
    };
    let filter: Vec<String> = plan.insns[..plan.n_insns as usize]
        .iter()
        .map(|insn| {
            let name = match insn.op {
                op::AND => return "and".to_string(),
                op::OR => return "or".to_string(),
                op::NOT => return "not".to_string(),
                op::EQ => "eq",
                op::NE => "ne",
                op::LT => "lt",
                op::LE => "le",
                op::GT => "gt",
                op::GE => "ge",
                op::SLT => "slt",
                op::SLE => "sle",
                op::SGT => "sgt",
                op::SGE => "sge",
                op::BITAND => "bitand",
                op::STR_EQ => "str_eq",
                op::STR_PREFIX => "str_prefix",
                op::STR_SUFFIX => "str_suffix",
                op::STR_CONTAINS => "str_contains",
                _ => "?",
            };
            format!("{name} #{} {}", insn.operand, insn.arg)
        })
        .collect();
    let mut flags = Vec::new();
    for (set, name) in [
        (plan.needs_start, "needs_start"),
        (plan.keep_start, "keep_start"),
        (plan.all_tasks, "all_tasks"),
        (plan.announce, "announce"),
        (plan.filter_first, "filter_first"),
        (plan.needs_ids, "needs_ids"),
        (plan.by_thread, "by_thread"),
    ] {
        if set != 0 {
            flags.push(name.to_string());
        }
    }
    if plan.raw_args > 0 {
        flags.push(format!("raw_args={}", plan.raw_args));
    }
    format!(
        "operands: {}\ncorr: {} | key: {} | saves: {}\nvalue: {value}{div} | agg: {aggregation} | layout: {layout}\nfilter: {}\nflags: {}\n",
        if operands.is_empty() {
            "-".to_string()
        } else {
            operands.join(" ")
        },
        list(&plan.corr_parts[..plan.n_corr_parts as usize]),
        list(&plan.key_parts[..plan.n_key_parts as usize])
            + &if plan.key_set_used != 0 {
                let rows: Vec<String> = (0..KEY_SET_BITS)
                    .filter(|&row| plan.key_set[(row / 64) as usize] >> (row % 64) & 1 != 0)
                    .map(|row| row.to_string())
                    .collect();
                format!(" in {{{}}}", rows.join(","))
            } else {
                String::new()
            },
        if saves.is_empty() {
            "-".to_string()
        } else {
            saves.join(" ")
        },
        if filter.is_empty() {
            "-".to_string()
        } else {
            filter.join(" ")
        },
        if flags.is_empty() {
            "-".to_string()
        } else {
            flags.join(" ")
        },
    )
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

/// Whether string operand `o` is at most 16 bytes (a comm, the current task's or a record's
/// `char comm[16]`, a `str(PATH, 16)`), so a start stage saves it in two words and four
/// numbers beside it.
fn is_half_string(o: &Operand) -> bool {
    o.kind == operand::COMM
        || (matches!(o.kind, operand::FIELD_STRING | operand::PATH_STR) && o.size <= 16)
}

/// The operand reading the string the start stage saved from `saved`, its operand (a
/// comm is 16 bytes, other strings [`STR_BYTES`]).
pub fn saved_string_operand(saved: &Operand) -> Operand {
    Operand {
        kind: operand::SAVED_STR,
        size: if is_half_string(saved) {
            16
        } else {
            STR_BYTES as u32
        },
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

/// The environment variable that, at `1`, runs every plan through the interpreter
/// (`engine_raw_tp`, `engine_tp_N`): the general path the tests hold the fast paths
/// (`engine_raw_tp_count_arg1`, the `simple` programs) to.
pub const INTERPRETER_ONLY: &str = "TRACEKIT_INTERPRETER";

/// Whether [`INTERPRETER_ONLY`] is set to `1`.
pub(crate) fn interpreter_only() -> bool {
    std::env::var_os(INTERPRETER_ONLY).is_some_and(|v| v == "1")
}

/// Whether `plan` only counts events by raw tracepoint argument 1 into the array layout
/// (`syscount` without options), so `engine_raw_tp_count_arg1` computes exactly what the
/// interpreter would, without interpreting.
pub(crate) fn fast_count_arg1(plan: &Plan) -> bool {
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

/// Whether `plan` is one the kernel's `engine::simple` computes exactly as the interpreter
/// would ([`Plan::simple`]): at most three operands, each an integer an entry point has at
/// hand (the event, a record field, an argument, the pid, the tid, the thread's name
/// generation, the CPU); keyed by at
/// most two of them (in the array only by one); counted, or a log2 histogram of one; behind
/// at most one integer comparison (`count EVENT --by pid`, `hist block:block_rq_issue
/// --value bytes --filter 'bytes > 4096'`).
pub(crate) fn fast_simple(plan: &Plan) -> bool {
    let n = plan.n_operands as usize;
    let parts = plan.n_key_parts as usize;
    let simple = |i: usize| {
        let operand = plan.operands[i];
        match operand.kind {
            operand::EVENT_INDEX | operand::PID | operand::TID | operand::TASK | operand::CPU => {
                true
            }
            operand::ARG => operand.flags & !SIGNED == 0 && operand.offset < 8,
            operand::FIELD => operand.flags & !SIGNED == 0,
            _ => false,
        }
    };
    let comparison = [
        op::EQ,
        op::NE,
        op::LT,
        op::LE,
        op::GT,
        op::GE,
        op::SLT,
        op::SLE,
        op::SGT,
        op::SGE,
        op::BITAND,
    ];
    let insn = plan.insns[0];
    n <= 3
        && (0..n).all(simple)
        && parts <= 2
        && (0..parts).all(|i| (plan.key_parts[i] as usize) < n)
        && (plan.layout == layout::HASH || parts <= 1)
        && (plan.n_insns == 0
            || (plan.n_insns == 1 && comparison.contains(&insn.op) && (insn.operand as usize) < n))
        && (plan.value == NO_OPERAND || (plan.value as usize) < n)
        && match plan.agg {
            agg::COUNT => plan.slots == 1,
            agg::LOG2 => plan.value != NO_OPERAND,
            _ => false,
        }
        && plan.value_div <= 1
        && plan.needs_start == 0
        && plan.announce == 0
}

/// Why a group key does not fit ([`PlanBuilder::key_part`], [`check_key_words`]).
fn key_budget() -> String {
    format!(
        "--by: the kernel engine keys a group by {KEY_WORDS} words at most (a number takes 1, \
         a string {}, an IPv6 address 2, the probe 1 when there are several)",
        STR_BYTES / 8
    )
}

/// The 64-bit words `plan`'s group key takes: 1 per number, [`STR_BYTES`]` / 8` per string,
/// raw bytes as many as they fill ([`Operand::key_words`]; a comm the loader keys by thread
/// is a number, [`operand::TASK`]).
pub fn key_words(plan: &Plan) -> usize {
    plan.key_parts[..(plan.n_key_parts as usize).min(MAX_KEY_PARTS)]
        .iter()
        .map(|&index| plan.operands[index as usize & (MAX_OPERANDS - 1)].key_words())
        .sum()
}

/// Refuses a plan whose group key does not fit [`KEY_WORDS`]: a comm part that stayed a
/// string (compared in the filter, under a start stage, or with no `task:task_rename`)
/// next to numbers that filled the room it would have taken.
///
/// # Errors
/// A usage error saying how many words a key holds.
pub fn check_key_words(plan: &Plan) -> Result<()> {
    if key_words(plan) > KEY_WORDS {
        return Err(Error::usage(format!(
            "{}; comm is a string here (compared, or this kernel has no \
             task:task_rename)",
            key_budget()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
