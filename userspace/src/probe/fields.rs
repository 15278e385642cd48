//! The names an event offers to `--value`, `--by`, `--filter` and `--print`, resolved to the
//! operands the kernel engine reads.
//!
//! - Tracepoints: the fields of their format file (`/sys/kernel/tracing/events/SYS/EV/format`);
//! - function probes: `arg0`..`arg5` (64-bit, or with a width and sign: `arg1:u32`,
//!   `arg0:s16`), `retval` (return probes), `latency` (entry to return, in ns), BTF parameter
//!   names (kernel functions);
//! - every event: the built-ins `pid`, `tid`, `cpu`, `comm`.

use tracekit_common::engine::{
    ALL_STRINGS, MAX_ARGS, Operand, PTR_ARRAY, SIGNED, STR_BYTES, operand,
};

use crate::{
    Error, Result,
    probe::{
        Tracepoint,
        functions::Param,
        pointers::{STRING_POINTERS, indexed, is_char_pointer, is_char_pointer_array},
        tracefs::{EventFormat, Field},
    },
};

/// How a value reads: an integer or a string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    /// An integer, signed or not.
    Int { signed: bool },
    /// A string.
    Str,
}

/// What a value means beyond its type, for showing it as a group key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Hint {
    /// A plain number or string.
    #[default]
    Plain,
    /// A block device (`dev_t` as the block tracepoints record it).
    Disk,
    /// A syscall number of this architecture.
    Syscall,
    /// A stack, by the hash the engine stores it under.
    Stack,
    /// A kernel stack (`kstack`), likewise; as a group key it is shown by its frames'
    /// names.
    KernelStack,
    /// A cgroup v2 id, shown as the cgroup's path.
    Cgroup,
    /// A softirq vector (`irq:softirq_*`'s `vec`), shown as its name (`TIMER`, `NET_RX`).
    Softirq,
    /// A hardware interrupt number (`irq:irq_handler_*`'s `irq`), shown as its handlers'
    /// names.
    Irq,
    /// An address (a pointer field: a lock's, a futex word's), shown in hex.
    Address,
    /// An IPv4 address: a 4-byte field (`__u8 saddr[4]`) read as a `u32`, network order
    /// in memory ([`crate::engine::addr::ipv4_text`]).
    Ipv4,
    /// An IPv6 address, or an IPv4-mapped one shown as IPv4: a 16-byte field
    /// (`__u8 saddr_v6[16]`) read as raw bytes into a string slot
    /// ([`crate::engine::addr::ip_text`]).
    Ip,
    /// A TCP state (`oldstate`, `newstate`, `state` of the sock and tcp tracepoints), shown
    /// by name ([`crate::engine::addr::tcp_state_name`]); filters compare the number.
    TcpState,
    /// A port in network byte order (`__be16`: `sin_port`, `skc_dport`), shown in host
    /// order; filters compare the raw number.
    NetPort,
    /// A socket's two ports in one `u32` (`skc_portpair`: `skc_dport`, network order, in
    /// the low 16 bits, `skc_num`, host order, in the high 16): one key word, shown as two
    /// key columns, the local port and the remote one ([`crate::engine::KeyKind::LocalPort`]).
    PortPair,
    /// An inode's `i_mode` shown as its file type, as libbpf-tools' `filetop` T column:
    /// `R` regular, `S` socket, `O` any other (`ftype(FIELD)` in `--by`).
    FileType,
}

/// A name resolved to the operand that reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldRef {
    /// How the kernel reads it.
    pub operand: Operand,
    /// Its type.
    pub ty: ValueType,
    /// What it means, for display.
    pub hint: Hint,
    /// Values are below this bound (a syscall number, an event index), so a per-CPU array
    /// indexed by it can hold a count per value; `None`: unbounded.
    pub bound: Option<u32>,
}

impl FieldRef {
    /// A plain, unbounded value read by `operand`.
    pub fn new(operand: Operand, ty: ValueType) -> Self {
        Self {
            operand,
            ty,
            hint: Hint::Plain,
            bound: None,
        }
    }

    /// The same value, shown as `hint`.
    pub fn hinted(self, hint: Hint) -> Self {
        Self { hint, ..self }
    }

    /// The same value, known to be below `bound`.
    pub fn bounded(self, bound: u32) -> Self {
        Self {
            bound: Some(bound),
            ..self
        }
    }
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
    /// Why `name`, which [`Fields::lookup`] did not find, cannot be read, when there is
    /// more to say than that it is unknown (a BTF path's error).
    fn why_not(&self, name: &str) -> Option<String> {
        path_ref(name, &|_| None).and_then(Result::err)
    }
}

/// Names every event has: `pid`, `tid`, `cpu`, `comm`, `cgroup` (of the current task).
pub const BUILTINS: [&str; 5] = ["pid", "tid", "cpu", "comm", CGROUP];

/// The stacks of the current task, by the hash the engine stores them under (bpftrace's
/// names): group keys of `stackcount` and `offcpu`, printed by `trace -K`/`-U`.
pub const STACKS: [&str; 2] = ["kstack", "ustack"];

/// The current task's cgroup (v2), shown as its path (`/system.slice/nginx.service`,
/// `/docker/ID`): the group key of containers and services (`--by cgroup`).
pub const CGROUP: &str = "cgroup";

/// The built-in operand named `name` (one of [`BUILTINS`], [`STACKS`] or [`CGROUP`]).
pub fn builtin(name: &str) -> Option<FieldRef> {
    if let Some(path) = path_ref(name, &|_| None) {
        return path.ok();
    }
    if name == CGROUP {
        let field = FieldRef::new(
            Operand {
                kind: operand::CGROUP,
                size: 8,
                ..Operand::NONE
            },
            ValueType::Int { signed: false },
        );
        return Some(field.hinted(Hint::Cgroup));
    }
    let (kind, ty) = match name {
        "pid" => (operand::PID, ValueType::Int { signed: false }),
        "tid" => (operand::TID, ValueType::Int { signed: false }),
        "cpu" => (operand::CPU, ValueType::Int { signed: false }),
        "comm" => (operand::COMM, ValueType::Str),
        "kstack" => (operand::KERNEL_STACK, ValueType::Int { signed: false }),
        "ustack" => (operand::USER_STACK, ValueType::Int { signed: false }),
        _ => return None,
    };
    let field = FieldRef::new(
        Operand {
            kind,
            size: if ty == ValueType::Str { 16 } else { 8 },
            ..Operand::NONE
        },
        ty,
    );
    Some(if name == "kstack" {
        field.hinted(Hint::KernelStack)
    } else if STACKS.contains(&name) {
        field.hinted(Hint::Stack)
    } else {
        field
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

/// Softirq vectors are below this (NR_SOFTIRQS is 10 since 3.x; room to grow), so a
/// per-CPU array counts them.
pub const SOFTIRQ_BOUND: u32 = 16;

/// The operand reading a record field, if the engine can read it: integers of 1, 2, 4 or 8
/// bytes and `char` arrays.
pub fn field_ref(field: &Field) -> Option<FieldRef> {
    if field.is_string() {
        let kind = if field.is_dynamic() {
            operand::FIELD_DATA_LOC
        } else {
            operand::FIELD_STRING
        };
        return Some(FieldRef::new(
            Operand {
                kind,
                offset: field.offset,
                size: if field.is_dynamic() {
                    STR_BYTES as u32
                } else {
                    field.size.min(STR_BYTES as u32)
                },
                ..Operand::NONE
            },
            ValueType::Str,
        ));
    }
    if let Some(address) = address_ref(field) {
        return Some(address);
    }
    if field.array_len.is_some() || field.is_dynamic() || !matches!(field.size, 1 | 2 | 4 | 8) {
        return None;
    }
    let shown = if field.c_type == "dev_t" {
        Hint::Disk
    } else if field.name == "__syscall_nr" {
        Hint::Syscall
    } else if field.c_type.ends_with('*') && field.size == 8 {
        Hint::Address
    } else {
        Hint::Plain
    };
    Some(
        FieldRef::new(
            Operand {
                kind: operand::FIELD,
                offset: field.offset,
                size: field.size,
                flags: if field.signed { SIGNED } else { 0 },
                ..Operand::NONE
            },
            ValueType::Int {
                signed: field.signed,
            },
        )
        .hinted(shown),
    )
}

/// An address field of the network tracepoints: a byte array (`__u8`, `u8`, `unsigned
/// char`) of 4 or 16 whose name says `addr` (`saddr`, `daddr_v6`). 4 bytes read as an
/// integer shown as IPv4; 16 as raw bytes shown as IPv6 (or IPv4 when IPv4-mapped).
fn address_ref(field: &Field) -> Option<FieldRef> {
    let byte = matches!(
        field.c_type.as_str(),
        "__u8" | "u8" | "unsigned char" | "uint8_t"
    );
    if !byte || !field.name.contains("addr") || field.is_dynamic() {
        return None;
    }
    match (field.array_len, field.size) {
        (Some(4), 4) => Some(
            FieldRef::new(
                Operand {
                    kind: operand::FIELD,
                    offset: field.offset,
                    size: 4,
                    ..Operand::NONE
                },
                ValueType::Int { signed: false },
            )
            .hinted(Hint::Ipv4),
        ),
        (Some(16), 16) => Some(
            FieldRef::new(
                Operand {
                    kind: operand::FIELD_BYTES,
                    offset: field.offset,
                    size: 16,
                    ..Operand::NONE
                },
                ValueType::Str,
            )
            .hinted(Hint::Ip),
        ),
        _ => None,
    }
}

impl TracepointFields {
    /// A pointer field's offset and the struct its type points to, for paths.
    fn pointer_field(&self, name: &str) -> Option<(u32, Option<String>)> {
        let field = self.format.field(name)?;
        if field.is_common() || field.size != 8 || !field.c_type.ends_with('*') {
            return None;
        }
        Some((field.offset, pointee_struct(&field.c_type)))
    }

    /// An 8-byte integer field's or a 4-byte signed one's offset and width: the descriptor
    /// of `sock(FIELD)`/`file(FIELD)` (`ret` of a syscall's exit, `res` of
    /// `io_uring:io_uring_complete`, an `int` read sign-extended).
    fn fd_field(&self, name: &str) -> Option<(u32, u32)> {
        let field = self.format.field(name)?;
        let integer = field.array_len.is_none() && !field.is_dynamic() && !field.is_string();
        let width = field.size == 8 || (field.size == 4 && field.signed);
        (!field.is_common() && width && integer).then_some((field.offset, field.size))
    }
}

/// The struct a pointer's C type points to (`const struct sock *`: `sock`).
fn pointee_struct(c_type: &str) -> Option<String> {
    c_type
        .trim_end_matches('*')
        .trim()
        .trim_start_matches("const ")
        .strip_prefix("struct ")
        .map(|s| s.trim().to_string())
}

impl TracepointFields {
    /// The string a pointer field points to: user memory for `syscalls:*` (the syscall's
    /// own arguments), kernel memory elsewhere; `index`: the field is an array of pointers
    /// (`argv`) and the string is that element's (past the array's end, an empty string).
    fn string_at(&self, field: &Field, index: Option<u32>) -> Option<FieldRef> {
        if field.size != 8 || field.array_len.is_some() || field.is_dynamic() {
            return None;
        }
        let kind = if self.tracepoint.system == "syscalls" {
            operand::USER_STR
        } else {
            operand::KERNEL_STR
        };
        Some(FieldRef::new(
            Operand {
                kind,
                offset: field.offset,
                size: STR_BYTES as u32,
                flags: if index.is_some() { PTR_ARRAY } else { 0 },
                aux: index.unwrap_or(0),
                ..Operand::NONE
            },
            ValueType::Str,
        ))
    }
}

impl Fields for TracepointFields {
    fn why_not(&self, name: &str) -> Option<String> {
        let path = |name: &str| {
            path_ref_in(name, &|base| self.pointer_field(base), &|base| {
                self.fd_field(base)
            })
        };
        strings::path_string(name, &path)
            .or_else(|| path(name))
            .and_then(Result::err)
    }

    fn lookup(&self, name: &str) -> Option<FieldRef> {
        let path = |name: &str| {
            path_ref_in(name, &|base| self.pointer_field(base), &|base| {
                self.fd_field(base)
            })
        };
        if let Some(string) = strings::path_string(name, &path) {
            return string.ok();
        }
        if let Some(path) = path(name) {
            return path.ok();
        }
        // `str(NAME)`, `str(NAME[I])`: the string behind a pointer field, as bpftrace's
        // `str()`; `NAME[I]` of a `char` pointer array (`argv[1]`).
        if let Some(inner) = name.strip_prefix("str(").and_then(|r| r.strip_suffix(')')) {
            return match indexed(inner) {
                Some((base, index)) => {
                    let field = self.format.field(base).filter(|f| !f.is_common())?;
                    self.string_at(field, Some(index))
                }
                None => {
                    let field = self.format.field(inner).filter(|f| !f.is_common())?;
                    self.string_at(field, None)
                }
            };
        }
        // `NAME[..N]`: every string of a `char` pointer array up to its end, at most N of
        // them (execsnoop's `argv[..20]`; one string, `NAME[0]`, outside trace plans).
        if let Some((base, max)) = name
            .strip_suffix(']')
            .and_then(|rest| rest.split_once("[.."))
            .and_then(|(base, max)| Some((base, max.parse::<u32>().ok()?)))
            .filter(|&(_, max)| (1..=MAX_ARGS).contains(&max))
        {
            let field = self.format.field(base).filter(|f| !f.is_common())?;
            if !is_char_pointer_array(&field.c_type) {
                return None;
            }
            let mut all = self.string_at(field, Some(0))?;
            all.operand.flags |= ALL_STRINGS;
            all.operand.aux = max;
            return Some(all);
        }
        if let Some((base, index)) = indexed(name) {
            let field = self.format.field(base).filter(|f| !f.is_common())?;
            return if is_char_pointer_array(&field.c_type) {
                self.string_at(field, Some(index))
            } else {
                None
            };
        }
        match self.format.field(name) {
            Some(field)
                if self.tracepoint.system == "syscalls"
                    && field.c_type.starts_with("const ")
                    && is_char_pointer(&field.c_type)
                    && STRING_POINTERS.contains(&field.name.as_str()) =>
            {
                self.string_at(field, None)
            }
            // raw_syscalls' `id` is the syscall number (include/trace/events/syscalls.h).
            Some(field) if self.tracepoint.system == "raw_syscalls" && name == "id" => {
                field_ref(field).map(|f| f.hinted(Hint::Syscall))
            }
            // include/trace/events/irq.h: softirq vectors below NR_SOFTIRQS, irq numbers.
            Some(field) if self.tracepoint.system == "irq" && name == "vec" => {
                field_ref(field).map(|f| f.hinted(Hint::Softirq).bounded(SOFTIRQ_BOUND))
            }
            Some(field) if self.tracepoint.system == "irq" && name == "irq" => {
                field_ref(field).map(|f| f.hinted(Hint::Irq))
            }
            // The TCP states of include/net/tcp_states.h.
            Some(field)
                if matches!(self.tracepoint.system.as_str(), "sock" | "tcp")
                    && matches!(name, "oldstate" | "newstate" | "state") =>
            {
                field_ref(field).map(|f| f.hinted(Hint::TcpState))
            }
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

/// The names of one function probe.
pub struct FunctionFields {
    /// For messages (`kprobe:vfs_read`).
    pub event: String,
    /// Entry probes read arguments; return probes read `retval` (and `latency`).
    pub is_return: bool,
    /// BTF parameters (kernel functions), if known.
    pub params: Vec<Param>,
    /// A user function (uprobes): `str(argN)` reads user memory, else kernel memory.
    pub user: bool,
}

/// Parses `argN` or `argN:TYPE` (TYPE: u8 u16 u32 u64 s8 s16 s32 s64).
pub fn parse_arg(name: &str) -> Option<(u32, u32, bool)> {
    let (head, ty) = match name.split_once(':') {
        Some((head, ty)) => (head, Some(ty)),
        None => (name, None),
    };
    let index: u32 = head.strip_prefix("arg")?.parse().ok()?;
    let (size, signed) = match ty {
        None | Some("u64") => (8, false),
        Some("s64") => (8, true),
        Some("u32") => (4, false),
        Some("s32") => (4, true),
        Some("u16") => (2, false),
        Some("s16") => (2, true),
        Some("u8") => (1, false),
        Some("s8") => (1, true),
        Some(_) => return None,
    };
    Some((index, size, signed))
}

/// An integer read by an operand of `kind`.
pub fn int(kind: u32, offset: u32, size: u32, signed: bool) -> FieldRef {
    FieldRef::new(
        Operand {
            kind,
            offset,
            size,
            flags: if signed { SIGNED } else { 0 },
            ..Operand::NONE
        },
        ValueType::Int { signed },
    )
}

impl Fields for FunctionFields {
    fn why_not(&self, name: &str) -> Option<String> {
        let path = |name: &str| self.param_path(name).or_else(|| path_ref(name, &|_| None));
        strings::path_string(name, &path)
            .or_else(|| path(name))
            .and_then(Result::err)
    }

    fn lookup(&self, name: &str) -> Option<FieldRef> {
        if let Some(field) = builtin(name) {
            return Some(field);
        }
        if !self.user {
            let path = |name: &str| self.param_path(name).or_else(|| path_ref(name, &|_| None));
            if let Some(string) = strings::path_string(name, &path) {
                return string.ok();
            }
        }
        if let Some(path) = self.param_path(name) {
            return path.ok();
        }
        if let Some(inner) = name.strip_prefix("str(").and_then(|r| r.strip_suffix(')')) {
            return self.string_arg(inner);
        }
        if self.is_return {
            // `retval:s32`: a narrower return type (an `int` function's -errno).
            if let Some(ty) = name.strip_prefix("retval:") {
                return parse_arg(&format!("arg0:{ty}"))
                    .map(|(_, size, signed)| int(operand::RETVAL, 0, size, signed));
            }
            return match name {
                "retval" => Some(int(operand::RETVAL, 0, 8, true)),
                "latency" => Some(int(operand::LATENCY, 0, 8, false)),
                _ => None,
            };
        }
        if let Some((index, size, signed)) = parse_arg(name) {
            return (index < 6).then(|| int(operand::ARG, index, size, signed));
        }
        self.params
            .iter()
            .position(|p| p.name == name)
            .filter(|&index| index < 6)
            .map(|index| {
                let param = &self.params[index];
                int(operand::ARG, index as u32, param.size, param.signed)
            })
    }

    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = if self.is_return {
            vec!["retval".into(), "latency".into()]
        } else {
            let mut names: Vec<String> = (0..6).map(|i| format!("arg{i}")).collect();
            names.extend(self.params.iter().map(|p| p.name.clone()));
            names
        };
        names.extend(BUILTINS.iter().map(|b| b.to_string()));
        names
    }

    fn describe(&self) -> String {
        let own = if self.is_return {
            "retval, latency".to_string()
        } else if self.params.is_empty() {
            "arg0..arg5 (arg0:u32 etc. for a width and sign)".to_string()
        } else {
            let params: Vec<String> = self
                .params
                .iter()
                .enumerate()
                .map(|(i, p)| format!("{} (arg{i}, {})", p.name, p.c_type))
                .collect();
            format!("{}, arg0..arg5", params.join(", "))
        };
        format!("{own}; and {}", BUILTINS.join(", "))
    }

    fn event_name(&self) -> String {
        self.event.clone()
    }
}

/// The arguments of a USDT probe site: `arg0..argN` as its ELF note describes them (size,
/// sign, register, memory or constant; `arg1:u32` narrows), plus the built-ins.
pub struct UsdtFields {
    /// For messages (`usdt:postgresql:transaction__commit`).
    pub event: String,
    /// The site's arguments, `arg0` first.
    pub args: Vec<crate::probe::usdt::Arg>,
    /// The argument specs as the note writes them (`-4@%edi`), for messages.
    pub specs: Vec<String>,
}

impl UsdtFields {
    /// The fields of `site`.
    pub fn of(event: impl Into<String>, site: &crate::probe::usdt::ProbeSite) -> Self {
        Self {
            event: event.into(),
            args: site.args.clone(),
            specs: site
                .arg_specs
                .split_whitespace()
                .map(str::to_string)
                .collect(),
        }
    }

    /// The field named `name` (`argN`, `argN:TYPE`), or the error reading it would be:
    /// `Ok(None)` for names that are not arguments of this probe.
    ///
    /// # Errors
    /// A usage error when the kernel side cannot read the argument, naming the field, the
    /// probe and the spec as the note writes it (`arg4: usdt:tk:forms cannot read its
    /// argument `-8@%fs:tls@tpoff`: ...`, reasons as
    /// [`crate::probe::usdt::Arg::try_operand`] gives them).
    pub fn arg(&self, name: &str) -> Result<Option<FieldRef>> {
        let Some((index, size, signed)) = parse_arg(name) else {
            return Ok(None);
        };
        let Some(arg) = self.args.get(index as usize) else {
            return Ok(None);
        };
        let mut operand = arg.try_operand().map_err(|why| {
            Error::usage(format!(
                "{name}: {} cannot read its argument `{}`: {why}",
                self.event,
                self.specs.get(index as usize).map_or("", String::as_str)
            ))
        })?;
        let signed = if name.contains(':') {
            operand.size = operand.size.min(size);
            operand.flags = if signed { SIGNED } else { 0 };
            signed
        } else {
            arg.signed
        };
        Ok(Some(FieldRef::new(operand, ValueType::Int { signed })))
    }
}

impl Fields for UsdtFields {
    fn lookup(&self, name: &str) -> Option<FieldRef> {
        builtin(name).or_else(|| self.arg(name).ok().flatten())
    }

    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = (0..self.args.len()).map(|i| format!("arg{i}")).collect();
        names.extend(BUILTINS.iter().map(|b| b.to_string()));
        names
    }

    fn describe(&self) -> String {
        let args: Vec<String> = self
            .args
            .iter()
            .enumerate()
            .map(|(i, arg)| {
                let spec = self.specs.get(i).map_or("", String::as_str);
                let unreadable = match arg.try_operand() {
                    Ok(_) => String::new(),
                    Err(why) => format!(", unreadable: {why}"),
                };
                format!(
                    "arg{i} ({}{} bytes, {spec}{unreadable})",
                    if arg.signed { "signed, " } else { "" },
                    arg.size
                )
            })
            .collect();
        if args.is_empty() {
            format!("no arguments; and {}", BUILTINS.join(", "))
        } else {
            format!("{}; and {}", args.join(", "), BUILTINS.join(", "))
        }
    }

    fn event_name(&self) -> String {
        self.event.clone()
    }
}

mod params;
mod paths;
mod strings;

pub use paths::{FdField, NO_BTF, PointerField, path_ref, path_ref_in};

#[cfg(test)]
mod tests;
