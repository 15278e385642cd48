//! USDT probes: the `.note.stapsdt` notes of a binary and their argument specs.
//!
//! `<sys/sdt.h>` (systemtap's, used by PostgreSQL, MySQL, the JVM, node, libc, Python...)
//! leaves a `nop` at each probe site and one ELF note per site (type 3, owner `stapsdt`)
//! saying where it is and where its arguments are, in assembler syntax
//! (<https://sourceware.org/systemtap/wiki/UserSpaceProbeImplementation>):
//!
//! ```text
//! pc (address of the nop), base (address of .stapsdt.base), semaphore (address or 0),
//! "provider\0" "name\0" "-4@%edi 8@-16(%rbp) 4@$5\0"
//! ```
//!
//! [`probes`] reads them (with the `object` crate) and adjusts the addresses for prelinking
//! as the spec says: by how far the `.stapsdt.base` section moved from the note's `base`.
//! [`parse_arg`] turns one argument spec into an [`Arg`]; [`Arg::operand`] into the engine
//! operand that reads it in the kernel (a register of the uprobe's `pt_regs`, user memory
//! at register + displacement or base + index × scale + displacement, or a constant).
//! Globals name a symbol, RIP-relative (`-8@counter(%rip)`, `-fPIE` code) or absolute with
//! an index (`-4@table(,%rax,4)`, `-no-pie` code): [`probes`] looks it up in the binary's
//! symbol table and keeps its distance from the probe site, which the kernel adds to the
//! probe's address (the `rip` a uprobe's handler sees), as that holds wherever the binary is
//! loaded. An operand it cannot read (thread-local `%fs:x@tpoff`, a symbol the symbol table
//! lacks) is an error naming the probe and the spec when a command uses that argument; the
//! probe's other arguments stay readable. `engine::attach::usdt` attaches them with the
//! semaphores counted by the kernel.

use std::{
    collections::HashMap,
    fmt,
    path::{Path, PathBuf},
};

use blazesym::inspect::{
    Inspector,
    source::{Elf, Source},
};

use tracekit_common::engine::{Operand, SIGNED, operand};

use super::glob_match;
use crate::{Error, Result, error::quote};

/// ELF note type of a USDT probe.
pub const NT_STAPSDT: u32 = 3;

/// One probe site of a binary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeSite {
    /// The binary or library holding it.
    pub binary: PathBuf,
    /// Provider (`postgresql`).
    pub provider: String,
    /// Probe name (`transaction__commit`).
    pub name: String,
    /// Virtual address of the probe's `nop` (prelink-adjusted).
    pub address: u64,
    /// Its offset in the file: what a uprobe attaches to.
    pub file_offset: u64,
    /// Virtual address of the semaphore (a `u16` the program tests before preparing the
    /// arguments), if the probe has one.
    pub semaphore: Option<u64>,
    /// The semaphore's offset in the file: the uprobe's `ref_ctr_offset`.
    pub semaphore_file_offset: Option<u64>,
    /// The argument specs as written in the note.
    pub arg_specs: String,
    /// The parsed arguments, in order (`arg0` first), one per spec: a spec that does not
    /// parse, or an operand form the kernel side cannot read, is
    /// [`Location::Unsupported`] and leaves the others readable.
    pub args: Vec<Arg>,
}

impl ProbeSite {
    /// `provider:name`.
    pub fn qualified_name(&self) -> String {
        format!("{}:{}", self.provider, self.name)
    }
}

/// An x86_64 register, as its offset in the uprobe's `struct pt_regs` (the uapi layout of
/// `arch/x86/include/uapi/asm/ptrace.h`, a stable ABI) and the bytes of it an alias names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Register {
    /// The 64-bit register's name (`rdi`, `r8`).
    pub name: &'static str,
    /// Byte offset of the named part in `struct pt_regs`: the 64-bit register's offset, + 1
    /// for `%ah`-style high bytes.
    pub pt_regs_offset: u32,
    /// Bytes the alias names: 8 (`%rdi`), 4 (`%edi`), 2 (`%di`), 1 (`%dil`, `%ah`).
    pub width: u32,
}

/// `struct pt_regs` of x86_64 (uapi), in order: the offset of each is 8 × its index.
const PT_REGS: [&str; 21] = [
    "r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax", "rcx", "rdx", "rsi",
    "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss",
];

/// The register an x86_64 assembler name (without `%`) means.
///
/// ```
/// use tracekit::probe::usdt::register;
/// let edi = register("edi").unwrap();
/// assert_eq!((edi.name, edi.pt_regs_offset, edi.width), ("rdi", 112, 4));
/// let ah = register("ah").unwrap();
/// assert_eq!((ah.name, ah.pt_regs_offset, ah.width), ("rax", 81, 1));
/// assert_eq!(register("r9d").unwrap().pt_regs_offset, 64);
/// assert!(register("xmm0").is_none());
/// ```
pub fn register(name: &str) -> Option<Register> {
    let (full, width, high) = match name {
        // The legacy eight, with their 32-, 16- and 8-bit aliases.
        "rax" | "eax" | "ax" | "al" | "ah" => ("rax", legacy_width(name), name == "ah"),
        "rbx" | "ebx" | "bx" | "bl" | "bh" => ("rbx", legacy_width(name), name == "bh"),
        "rcx" | "ecx" | "cx" | "cl" | "ch" => ("rcx", legacy_width(name), name == "ch"),
        "rdx" | "edx" | "dx" | "dl" | "dh" => ("rdx", legacy_width(name), name == "dh"),
        "rsi" | "esi" | "si" | "sil" => ("rsi", legacy_width(name), false),
        "rdi" | "edi" | "di" | "dil" => ("rdi", legacy_width(name), false),
        "rbp" | "ebp" | "bp" | "bpl" => ("rbp", legacy_width(name), false),
        "rsp" | "esp" | "sp" | "spl" => ("rsp", legacy_width(name), false),
        "rip" => ("rip", 8, false),
        _ => {
            // r8..r15 with d/w/b (or l) suffixes.
            let rest = name.strip_prefix('r')?;
            let digits = rest.trim_end_matches(['d', 'w', 'b', 'l']);
            let number: u32 = digits.parse().ok()?;
            if !(8..=15).contains(&number) {
                return None;
            }
            let width = match &rest[digits.len()..] {
                "" => 8,
                "d" => 4,
                "w" => 2,
                "b" | "l" => 1,
                _ => return None,
            };
            let full = PT_REGS
                .iter()
                .find(|r| r[1..] == *digits && r.starts_with('r'))?;
            (*full, width, false)
        }
    };
    let index = PT_REGS.iter().position(|r| *r == full)? as u32;
    Some(Register {
        name: PT_REGS[index as usize],
        pt_regs_offset: index * 8 + u32::from(high),
        width,
    })
}

/// Width of a legacy register alias: `rax` 8, `eax` 4, `ax` 2, `al`/`ah`/`sil` 1.
fn legacy_width(name: &str) -> u32 {
    if name.starts_with('r') {
        8
    } else if name.starts_with('e') {
        4
    } else if name.len() == 2 && !name.ends_with('l') && !name.ends_with('h') {
        2
    } else {
        1
    }
}

/// Where an argument's value is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// A constant (`$5`).
    Constant(i64),
    /// A register (`%edi`).
    Register(Register),
    /// Memory at `displacement(base, index, scale)`; `symbol` for `sym+8(%rip)` forms.
    Memory {
        /// Base register (`%rbp`, `%rip`); none in `sym(,%rax,4)`, the absolute addressing of
        /// position-dependent (`-no-pie`) code.
        base: Option<Register>,
        /// Index register, scaled by `scale`.
        index: Option<(Register, u8)>,
        /// Constant displacement in bytes.
        displacement: i64,
        /// A symbol the displacement is relative to (globals: `sym(%rip)`, `sym(,%rax,4)`).
        symbol: Option<String>,
    },
    /// Memory at a fixed distance from the probe's own address (+ index × scale): a global
    /// read RIP-relative (`-8@counter(%rip)`, `-fPIE` code) or absolute
    /// (`-4@table(,%rax,4)`, `-no-pie` code) whose symbol [`probes`] found in the binary's
    /// symbol table. The distance holds wherever the binary is loaded, so one constant per
    /// probe site reads it in every process.
    ProbeRelative {
        /// `symbol + displacement - probe address`, in bytes.
        from_probe: i64,
        /// The symbol, as the note writes it.
        symbol: String,
        /// Bytes past the symbol.
        displacement: i64,
        /// Index register, scaled by `scale` (`table(,%rax,4)`).
        index: Option<(Register, u8)>,
    },
    /// An operand the kernel side cannot read, and why (thread-local `%fs:` operands, a
    /// spec that does not parse): the probe's other arguments stay readable.
    Unsupported(String),
}

/// One USDT argument: its size, signedness and location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arg {
    /// Size in bytes (1, 2, 4, 8).
    pub size: u32,
    /// Whether it is signed (`-4@...`).
    pub signed: bool,
    /// Where it is.
    pub location: Location,
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.signed { "-" } else { "" };
        write!(f, "{sign}{}@", self.size)?;
        let symbolic = |f: &mut fmt::Formatter<'_>, symbol: &str, displacement: i64| {
            write!(f, "{symbol}")?;
            if displacement != 0 {
                write!(f, "{displacement:+}")?;
            }
            Ok(())
        };
        let registers = |f: &mut fmt::Formatter<'_>,
                         base: Option<&Register>,
                         index: &Option<(Register, u8)>| {
            write!(f, "({}", base.map_or("", |b| b.name))?;
            if let Some((index, scale)) = index {
                write!(f, ",{},{scale}", index.name)?;
            }
            write!(f, ")")
        };
        match &self.location {
            Location::Constant(value) => write!(f, "${value}"),
            Location::Register(reg) => write!(f, "{}", reg.name),
            Location::Memory {
                base,
                index,
                displacement,
                symbol,
            } => {
                match symbol {
                    Some(symbol) => symbolic(f, symbol, *displacement)?,
                    None => write!(f, "{displacement}")?,
                }
                registers(f, base.as_ref(), index)
            }
            Location::ProbeRelative {
                symbol,
                displacement,
                index,
                ..
            } => {
                symbolic(f, symbol, *displacement)?;
                match index {
                    None => write!(f, "(rip)"),
                    Some(_) => registers(f, None, index),
                }
            }
            Location::Unsupported(_) => write!(f, "?"),
        }
    }
}

impl Arg {
    /// The engine operand that reads this argument in a uprobe at the probe site:
    /// [`operand::REG`] for registers, [`operand::USER_MEM`] for memory at register +
    /// displacement and for resolved RIP-relative memory ([`Location::ProbeRelative`]: the
    /// `rip` a uprobe's handler sees is the probe's address), [`operand::USER_MEM_INDEXED`]
    /// for base + index × scale + displacement (the base is `rip` for `table(,%rax,4)`),
    /// [`operand::CONST`] for constants. Errors (usage): `USDT argument `ARG`: WHY`, WHY as
    /// [`Arg::try_operand`] gives it.
    pub fn operand(&self) -> Result<Operand> {
        self.try_operand()
            .map_err(|why| Error::usage(format!("USDT argument `{self}`: {why}")))
    }

    /// [`Arg::operand`], or why the kernel side cannot read this argument, without context
    /// (callers name the probe and the spec as the note writes it): a symbol the symbol table
    /// does not give, a symbol next to a base register other than `%rip`, `%rip` or an
    /// absolute address without a symbol, 32-bit address registers, a displacement beyond 32
    /// bits, or a [`Location::Unsupported`] form.
    pub fn try_operand(&self) -> std::result::Result<Operand, String> {
        let flags = if self.signed { SIGNED } else { 0 };
        let displacement = |value: i64| {
            i32::try_from(value).map_err(|_| format!("displacement {value} out of 32-bit range"))
        };
        let memory = |base: &Register, disp: i64| -> std::result::Result<Operand, String> {
            Ok(Operand {
                kind: operand::USER_MEM,
                offset: base.pt_regs_offset,
                size: self.size,
                flags,
                aux: displacement(disp)? as u32,
                ..Operand::NONE
            })
        };
        let indexed = |base: &Register,
                       (index, scale): &(Register, u8),
                       disp: i64|
         -> std::result::Result<Operand, String> {
            if base.width != 8 || index.width != 8 {
                return Err("32-bit address registers are not supported".into());
            }
            Ok(Operand {
                kind: operand::USER_MEM_INDEXED,
                offset: base.pt_regs_offset,
                size: self.size,
                flags,
                aux: displacement(disp)? as u32,
                index_offset: index.pt_regs_offset,
                index_shift: scale.trailing_zeros(),
                ..Operand::NONE
            })
        };
        match &self.location {
            Location::Constant(value) => Ok(Operand {
                kind: operand::CONST,
                offset: *value as u64 as u32,
                aux: ((*value as u64) >> 32) as u32,
                size: self.size,
                flags,
                ..Operand::NONE
            }),
            Location::Register(reg) => Ok(Operand {
                kind: operand::REG,
                offset: reg.pt_regs_offset,
                size: self.size.min(reg.width),
                flags,
                ..Operand::NONE
            }),
            Location::ProbeRelative {
                from_probe,
                index: None,
                ..
            } => memory(&RIP, *from_probe),
            Location::ProbeRelative {
                from_probe,
                index: Some(index),
                ..
            } => indexed(&RIP, index, *from_probe),
            Location::Unsupported(why) => Err(why.clone()),
            Location::Memory {
                base,
                symbol: Some(symbol),
                ..
            } if base.is_none_or(|b| b.name == "rip") => Err(format!(
                "the symbol `{symbol}` of this {} operand is not in the binary's symbol table \
                 (stripped?) or names several variables",
                if base.is_some() {
                    "RIP-relative"
                } else {
                    "absolute"
                }
            )),
            Location::Memory {
                symbol: Some(symbol),
                ..
            } => Err(format!(
                "a symbol (`{symbol}`) as the displacement of a register other than %rip is \
                 not supported"
            )),
            Location::Memory { base: None, .. } => {
                Err("an absolute address without a symbol is not supported".into())
            }
            Location::Memory {
                base: Some(base), ..
            } if base.name == "rip" => Err(
                "a RIP-relative operand without a symbol (its distance from the probe is unknown)"
                    .into(),
            ),
            Location::Memory {
                base: Some(base),
                index: Some(index),
                displacement: disp,
                symbol: None,
            } => indexed(base, index, *disp),
            Location::Memory {
                base: Some(base),
                index: None,
                displacement: disp,
                symbol: None,
            } => memory(base, *disp),
        }
    }
}

/// `%rip`: its slot in `pt_regs` holds the probe's address while a uprobe's handler runs.
const RIP: Register = Register {
    name: "rip",
    pt_regs_offset: 16 * 8,
    width: 8,
};

/// Parses one argument spec: `[-]SIZE@LOCATION` (systemtap's format), where LOCATION is
/// `%reg`, `$const`, `disp(%base)`, `disp(%base,%index,scale)` or `sym+disp(%rip)`. A spec
/// without `SIZE@` (old notes) is an unsigned 8-byte value. Errors (usage) name the bad part.
///
/// ```
/// use tracekit::probe::usdt::{parse_arg, Location};
/// let arg = parse_arg("-4@%edi").unwrap();
/// assert_eq!((arg.size, arg.signed), (4, true));
/// assert!(matches!(arg.location, Location::Register(r) if r.name == "rdi"));
/// let arg = parse_arg("8@-16(%rbp)").unwrap();
/// assert!(matches!(arg.location, Location::Memory { displacement: -16, .. }));
/// assert_eq!(parse_arg("4@$5").unwrap().location, Location::Constant(5));
/// assert!(parse_arg("3@%eax").is_err());
/// ```
pub fn parse_arg(spec: &str) -> Result<Arg> {
    let bad = |why: &str| {
        Err(Error::usage(format!(
            "USDT argument spec `{spec}`: {why}; valid: [-]SIZE@LOCATION with SIZE 1, 2, 4 \
             or 8 and LOCATION %reg, $const, disp(%reg), disp(%reg,%reg,scale) or symbol(%rip)"
        )))
    };
    let (size, signed, location) = match spec.split_once('@') {
        Some((size, location)) => {
            let (signed, digits) = match size.strip_prefix('-') {
                Some(digits) => (true, digits),
                None => (false, size),
            };
            match digits.parse::<u32>() {
                Ok(size @ (1 | 2 | 4 | 8)) => (size, signed, location),
                _ => return bad("the size is not 1, 2, 4 or 8"),
            }
        }
        None => (8, false, spec),
    };
    let location = if let Some(constant) = location.strip_prefix('$') {
        match parse_int(constant) {
            Some(value) => Location::Constant(value),
            None => return bad("the constant is not a number"),
        }
    } else if let Some((segment, _)) = location
        .split_once(':')
        .filter(|(segment, _)| SEGMENTS.contains(segment))
    {
        Location::Unsupported(format!(
            "segment-relative operands ({segment}:, thread-local variables) are not supported"
        ))
    } else if let Some(name) = location.strip_prefix('%') {
        match register(name) {
            Some(reg) => Location::Register(reg),
            None => return bad("unknown register"),
        }
    } else if let Some(open) = location.find('(') {
        let Some(inner) = location[open + 1..].strip_suffix(')') else {
            return bad("unbalanced parentheses");
        };
        let (displacement, symbol) = match parse_displacement(&location[..open]) {
            Some(parsed) => parsed,
            None => return bad("bad displacement"),
        };
        let mut parts = inner.split(',').map(str::trim);
        // `sym(,%rax,4)`: no base register, position-dependent code's absolute addressing.
        let base = match parts.next() {
            Some("") if inner.is_empty() || inner.starts_with(',') => None,
            base => match base.and_then(|b| b.strip_prefix('%')).and_then(register) {
                Some(base) => Some(base),
                None => return bad("unknown base register"),
            },
        };
        let index = match (parts.next(), parts.next()) {
            (None, _) => None,
            (Some(index), scale) => {
                let Some(index) = index.strip_prefix('%').and_then(register) else {
                    return bad("unknown index register");
                };
                let scale = match scale.map(str::parse::<u8>) {
                    None => 1,
                    Some(Ok(scale @ (1 | 2 | 4 | 8))) => scale,
                    Some(_) => return bad("the scale is not 1, 2, 4 or 8"),
                };
                Some((index, scale))
            }
        };
        if parts.next().is_some() {
            return bad("too many parts in parentheses");
        }
        if base.is_none() && index.is_none() {
            return bad("no base or index register");
        }
        Location::Memory {
            base,
            index,
            displacement,
            symbol,
        }
    } else {
        return bad("unknown location");
    };
    Ok(Arg {
        size,
        signed,
        location,
    })
}

/// Segment registers: `%fs:x@tpoff` reads a thread-local variable.
const SEGMENTS: [&str; 6] = ["%cs", "%ds", "%es", "%fs", "%gs", "%ss"];

/// Parses all argument specs of a note (space-separated); the first that does not parse is
/// the error.
pub fn parse_args(specs: &str) -> Result<Vec<Arg>> {
    specs.split_whitespace().map(parse_arg).collect()
}

/// The arguments of a note, one per spec: those that do not parse are
/// [`Location::Unsupported`] (with [`parse_arg`]'s error), sized by their `[-]SIZE@` if it
/// reads (8 bytes unsigned if not), so that the others stay readable.
pub fn parse_note_args(specs: &str) -> Vec<Arg> {
    specs
        .split_whitespace()
        .map(|spec| {
            parse_arg(spec).unwrap_or_else(|err| {
                let (signed, size) = match spec.split_once('@') {
                    Some((size, _)) => match size.strip_prefix('-') {
                        Some(digits) => (true, digits),
                        None => (false, size),
                    },
                    None => (false, "8"),
                };
                Arg {
                    size: size
                        .parse()
                        .ok()
                        .filter(|s| [1, 2, 4, 8].contains(s))
                        .unwrap_or(8),
                    signed,
                    location: Location::Unsupported(err.to_string()),
                }
            })
        })
        .collect()
}

/// A decimal or `0x` hex integer with an optional sign.
fn parse_int(text: &str) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let magnitude = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => u64::from_str_radix(hex, 16).ok()?,
        None => digits.parse::<u64>().ok()?,
    };
    Some(if negative {
        (magnitude as i64).wrapping_neg()
    } else {
        magnitude as i64
    })
}

/// A displacement: a sum of numbers and at most one symbol (`-16`, `counter+4`,
/// `40+CheckpointStats`), empty for 0.
fn parse_displacement(text: &str) -> Option<(i64, Option<String>)> {
    let text = text.trim();
    let mut total: i64 = 0;
    let mut symbol = None;
    let mut rest = text;
    let mut negative = false;
    while !rest.is_empty() {
        if let Some(tail) = rest.strip_prefix('-') {
            negative = true;
            rest = tail;
            continue;
        }
        if let Some(tail) = rest.strip_prefix('+') {
            rest = tail;
            continue;
        }
        let end = rest.find(['+', '-']).unwrap_or(rest.len());
        let (term, tail) = rest.split_at(end);
        rest = tail;
        if let Some(value) = parse_int(term) {
            total = total.wrapping_add(if negative {
                value.wrapping_neg()
            } else {
                value
            });
        } else {
            let valid = !term.is_empty()
                && !term.starts_with(|c: char| c.is_ascii_digit())
                && term
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$' | '@'));
            if !valid || negative || symbol.is_some() {
                return None;
            }
            symbol = Some(term.to_string());
        }
        negative = false;
    }
    Some((total, symbol))
}

/// Every USDT probe site of the ELF file at `binary` whose provider and name match the glob
/// patterns (`*` and `?`; `None` matches all), in note order. A binary without notes has no
/// sites. Errors: the file cannot be read or is not ELF, or a probe's address is outside
/// every loadable segment. Argument specs that do not parse are [`Location::Unsupported`].
pub fn probes(binary: &Path, provider: Option<&str>, name: Option<&str>) -> Result<Vec<ProbeSite>> {
    let data = std::fs::read(binary).map_err(|err| Error::Runtime {
        what: format!("reading {}", quote(&binary.to_string_lossy())),
        source: Some(Box::new(err)),
    })?;
    let notes = read_notes(&data)
        .map_err(|why| Error::usage(format!("{}: {why}", quote(&binary.to_string_lossy()))))?;
    let mut sites = Vec::new();
    let mut symbols = SymbolAddresses::new(binary);
    for note in notes {
        if !provider.is_none_or(|p| glob_match(p, &note.provider))
            || !name.is_none_or(|n| glob_match(n, &note.name))
        {
            continue;
        }
        let mut args = parse_note_args(&note.args);
        resolve_symbols(&mut args, note.pc, |name| symbols.get(name));
        sites.push(ProbeSite {
            binary: binary.to_path_buf(),
            provider: note.provider,
            name: note.name,
            address: note.pc,
            file_offset: note.pc_file_offset.ok_or_else(|| {
                Error::usage(format!(
                    "{}: probe address {:#x} is in no loadable segment",
                    quote(&binary.to_string_lossy()),
                    note.pc
                ))
            })?,
            semaphore: note.semaphore,
            semaphore_file_offset: note.semaphore_file_offset,
            arg_specs: note.args,
            args,
        });
    }
    Ok(sites)
}

/// Turns the arguments of the probe at `pc` that name a global, RIP-relative
/// (`-8@counter(%rip)`) or absolute with an index (`-4@table(,%rax,4)`), and whose symbol
/// `address_of` gives (its virtual address in the same file as `pc`), into
/// [`Location::ProbeRelative`]; the others stay as they are, and [`Arg::try_operand`] says
/// why they cannot be read.
pub fn resolve_symbols(args: &mut [Arg], pc: u64, mut address_of: impl FnMut(&str) -> Option<u64>) {
    for arg in args {
        let Location::Memory {
            base,
            index,
            displacement,
            symbol: Some(symbol),
        } = &arg.location
        else {
            continue;
        };
        // `sym(%rip)`, or `sym(,%index,scale)` of position-dependent code, whose absolute
        // address is the link-time one: reading both at the symbol's distance from the probe
        // also holds where the binary was moved.
        let global = match (base, index) {
            (Some(base), None) => base.name == "rip",
            (None, Some(_)) => true,
            _ => false,
        };
        if !global {
            continue;
        }
        if let Some(address) = address_of(symbol) {
            arg.location = Location::ProbeRelative {
                from_probe: (address as i64)
                    .wrapping_add(*displacement)
                    .wrapping_sub(pc as i64),
                symbol: symbol.clone(),
                displacement: *displacement,
                index: *index,
            };
        }
    }
}

/// Addresses of a binary's symbols by name (its symbol tables, through blazesym), looked up
/// once each: a name several symbols have at different addresses gives none.
struct SymbolAddresses<'a> {
    binary: &'a Path,
    inspector: Option<Inspector>,
    found: HashMap<String, Option<u64>>,
}

impl<'a> SymbolAddresses<'a> {
    fn new(binary: &'a Path) -> Self {
        Self {
            binary,
            inspector: None,
            found: HashMap::new(),
        }
    }

    fn get(&mut self, name: &str) -> Option<u64> {
        if let Some(found) = self.found.get(name) {
            return *found;
        }
        let inspector = self.inspector.get_or_insert_with(Inspector::new);
        let mut elf = Elf::new(self.binary);
        elf.debug_syms = false;
        let mut addresses: Vec<u64> = inspector
            .lookup(&Source::Elf(elf), &[name])
            .ok()
            .into_iter()
            .flatten()
            .flatten()
            .map(|sym| sym.addr)
            .collect();
        addresses.sort_unstable();
        addresses.dedup();
        let found = match addresses[..] {
            [one] => Some(one),
            _ => None,
        };
        self.found.insert(name.to_string(), found);
        found
    }
}

/// The target of a `usdt:` probe spec: `BINARY[:PROVIDER]:NAME` (bpftrace's spelling).
/// PROVIDER and NAME may hold `*` and `?` wildcards; no PROVIDER matches every provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsdtTarget<'a> {
    /// The binary or library as written (`postgres`, `libc`, `/usr/bin/node`).
    pub binary: &'a str,
    /// The provider pattern, if given.
    pub provider: Option<&'a str>,
    /// The probe name pattern.
    pub name: &'a str,
}

impl<'a> UsdtTarget<'a> {
    /// Splits `target` (what follows `usdt:`). Errors (usage) quote `spec`, the whole spec.
    ///
    /// ```
    /// use tracekit::probe::usdt::UsdtTarget;
    /// let t = UsdtTarget::parse("usdt:postgres:transaction__*", "postgres:transaction__*").unwrap();
    /// assert_eq!((t.binary, t.provider, t.name), ("postgres", None, "transaction__*"));
    /// let t = UsdtTarget::parse("U:libc:libc:setjmp", "libc:libc:setjmp").unwrap();
    /// assert_eq!((t.binary, t.provider, t.name), ("libc", Some("libc"), "setjmp"));
    /// assert!(UsdtTarget::parse("usdt:postgres", "postgres").is_err());
    /// ```
    pub fn parse(spec: &str, target: &'a str) -> Result<Self> {
        let parts: Vec<&str> = target.split(':').collect();
        let (binary, provider, name) = match parts[..] {
            [binary, name] => (binary, None, name),
            [binary, provider, name] => (binary, Some(provider), name),
            _ => ("", None, ""),
        };
        if binary.is_empty() || name.is_empty() || provider.is_some_and(str::is_empty) {
            return Err(Error::usage(format!(
                "probe `{}`: a USDT probe is usdt:BINARY[:PROVIDER]:NAME (e.g. \
                 usdt:postgres:transaction__commit)",
                quote(spec)
            )));
        }
        Ok(Self {
            binary,
            provider,
            name,
        })
    }

    /// `PROVIDER:NAME` or `NAME`, as written.
    pub fn pattern(&self) -> String {
        match self.provider {
            Some(provider) => format!("{provider}:{}", self.name),
            None => self.name.to_string(),
        }
    }
}

/// The probe sites of `binary` that `target` names, at least one. Errors (usage): none
/// matches (with the nearest probe names of the binary), or the binary has no USDT probes.
pub fn find(binary: &Path, target: &UsdtTarget<'_>) -> Result<Vec<ProbeSite>> {
    let sites = probes(binary, target.provider, Some(target.name))?;
    if !sites.is_empty() {
        return Ok(sites);
    }
    let all = probes(binary, None, None)?;
    if all.is_empty() {
        return Err(Error::usage(format!(
            "{} has no USDT probes (no .note.stapsdt notes; programs get them from \
             <sys/sdt.h> probes, e.g. PostgreSQL built with --enable-dtrace)",
            binary.display()
        )));
    }
    let mut names: Vec<String> = all.iter().map(ProbeSite::qualified_name).collect();
    names.dedup();
    let wanted = target.pattern();
    let mut near = super::nearest(&wanted.replace(['*', '?'], ""), &names, 3);
    if near.is_empty() {
        // Compare names without the provider too (`transaction_commit` vs `postgresql:...`).
        let bare: Vec<String> = all.iter().map(|s| s.name.clone()).collect();
        let hits = super::nearest(&target.name.replace(['*', '?'], ""), &bare, 3);
        near = names
            .iter()
            .filter(|n| {
                hits.iter()
                    .any(|h| n.ends_with(&format!(":{}", h.trim_matches('`'))))
            })
            .take(3)
            .map(|n| format!("`{n}`"))
            .collect();
    }
    Err(Error::usage(format!(
        "no USDT probe `{}` in {}; {}",
        quote(&wanted),
        binary.display(),
        if near.is_empty() {
            format!(
                "it has {} (`tracekit list usdt:{}` lists them)",
                crate::error::plural(names.len(), "probe", "probes"),
                binary.display()
            )
        } else {
            format!("did you mean {}?", near.join(", "))
        }
    )))
}

/// One note, addresses adjusted, file offsets computed.
struct Note {
    provider: String,
    name: String,
    args: String,
    pc: u64,
    pc_file_offset: Option<u64>,
    semaphore: Option<u64>,
    semaphore_file_offset: Option<u64>,
}

/// The `stapsdt` notes of an ELF file (`SHT_NOTE` sections, 32- or 64-bit).
fn read_notes(data: &[u8]) -> std::result::Result<Vec<Note>, String> {
    use object::{Object as _, ObjectSection as _, ObjectSegment as _};
    let file = object::File::parse(data).map_err(|err| format!("not an ELF file ({err})"))?;
    let (is_64, little) = (file.is_64(), file.is_little_endian());
    let base_section = file.section_by_name(".stapsdt.base").map(|s| s.address());
    let segments: Vec<(u64, u64, u64)> = file
        .segments()
        .filter_map(|s| {
            let (offset, size) = s.file_range();
            (size > 0).then_some((s.address(), offset, size))
        })
        .collect();
    let file_offset = |addr: u64| {
        segments
            .iter()
            .find(|(vaddr, _, size)| addr >= *vaddr && addr - vaddr < *size)
            .map(|(vaddr, offset, _)| addr - vaddr + offset)
    };
    let word = |bytes: &[u8], at: usize| -> Option<u64> {
        if is_64 {
            let raw: [u8; 8] = bytes.get(at..at + 8)?.try_into().ok()?;
            Some(if little {
                u64::from_le_bytes(raw)
            } else {
                u64::from_be_bytes(raw)
            })
        } else {
            let raw: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
            Some(u64::from(if little {
                u32::from_le_bytes(raw)
            } else {
                u32::from_be_bytes(raw)
            }))
        }
    };
    let word_size = if is_64 { 8 } else { 4 };
    let descs = if is_64 {
        stapsdt_descs::<object::elf::FileHeader64<object::Endianness>>(data)?
    } else {
        stapsdt_descs::<object::elf::FileHeader32<object::Endianness>>(data)?
    };
    let mut notes = Vec::new();
    for desc in descs {
        let (Some(pc), Some(base), Some(semaphore)) = (
            word(&desc, 0),
            word(&desc, word_size),
            word(&desc, 2 * word_size),
        ) else {
            continue;
        };
        let mut strings = desc[3 * word_size..].split(|&b| b == 0);
        let text = |s: Option<&[u8]>| String::from_utf8_lossy(s.unwrap_or_default()).into_owned();
        let provider = text(strings.next());
        let name = text(strings.next());
        let args = text(strings.next());
        // Prelink moved the sections: move the addresses by as much (the spec's rule).
        let bias = match base_section {
            Some(actual) if base != 0 => actual.wrapping_sub(base),
            _ => 0,
        };
        let pc = pc.wrapping_add(bias);
        let semaphore = (semaphore != 0).then(|| semaphore.wrapping_add(bias));
        notes.push(Note {
            provider,
            name,
            args,
            pc,
            pc_file_offset: file_offset(pc),
            semaphore,
            semaphore_file_offset: semaphore.and_then(file_offset),
        });
    }
    Ok(notes)
}

/// The descriptors of the `stapsdt` notes (type 3) in the `SHT_NOTE` sections.
fn stapsdt_descs<Elf: object::read::elf::FileHeader<Endian = object::Endianness>>(
    data: &[u8],
) -> std::result::Result<Vec<Vec<u8>>, String> {
    use object::read::elf::SectionHeader as _;
    let header = Elf::parse(data).map_err(|err| err.to_string())?;
    let endian = header.endian().map_err(|err| err.to_string())?;
    let sections = header
        .sections(endian, data)
        .map_err(|err| err.to_string())?;
    let mut descs = Vec::new();
    for section in sections.iter() {
        let Ok(Some(mut notes)) = section.notes(endian, data) else {
            continue;
        };
        while let Ok(Some(note)) = notes.next() {
            if note.name() == b"stapsdt" && note.n_type(endian) == NT_STAPSDT {
                descs.push(note.desc().to_vec());
            }
        }
    }
    Ok(descs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(name: &str) -> Register {
        register(name).unwrap()
    }

    #[test]
    fn registers_and_aliases() {
        let rows: Vec<(&str, &str, u32, u32)> = [
            "rax", "eax", "ax", "al", "ah", "rbx", "bh", "rcx", "cl", "dx", "rsi", "sil", "di",
            "edi", "rbp", "bpl", "rsp", "r8", "r8d", "r8w", "r8b", "r9d", "r10", "r11w", "r12",
            "r13d", "r14", "r15b", "rip",
        ]
        .iter()
        .map(|n| {
            let r = reg(n);
            (*n, r.name, r.pt_regs_offset, r.width)
        })
        .collect();
        assert_eq!(
            rows,
            [
                ("rax", "rax", 80, 8),
                ("eax", "rax", 80, 4),
                ("ax", "rax", 80, 2),
                ("al", "rax", 80, 1),
                ("ah", "rax", 81, 1),
                ("rbx", "rbx", 40, 8),
                ("bh", "rbx", 41, 1),
                ("rcx", "rcx", 88, 8),
                ("cl", "rcx", 88, 1),
                ("dx", "rdx", 96, 2),
                ("rsi", "rsi", 104, 8),
                ("sil", "rsi", 104, 1),
                ("di", "rdi", 112, 2),
                ("edi", "rdi", 112, 4),
                ("rbp", "rbp", 32, 8),
                ("bpl", "rbp", 32, 1),
                ("rsp", "rsp", 152, 8),
                ("r8", "r8", 72, 8),
                ("r8d", "r8", 72, 4),
                ("r8w", "r8", 72, 2),
                ("r8b", "r8", 72, 1),
                ("r9d", "r9", 64, 4),
                ("r10", "r10", 56, 8),
                ("r11w", "r11", 48, 2),
                ("r12", "r12", 24, 8),
                ("r13d", "r13", 16, 4),
                ("r14", "r14", 8, 8),
                ("r15b", "r15", 0, 1),
                ("rip", "rip", 128, 8),
            ]
        );
        for bad in ["r16", "r7", "e8", "xmm0", "r8q", ""] {
            assert!(register(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn arg_specs() {
        let parsed = parse_args("-4@%edi 8@-16(%rbp) 4@$5 8@%rax -2@$-3 1@%r9b 8@(%rsp) -8@0x10(%rbx,%rcx,8) 4@counter+4(%rip) 8@%ah -4@40+CheckpointStats(%rip)").unwrap();
        let shown: Vec<String> = parsed.iter().map(Arg::to_string).collect();
        assert_eq!(
            shown,
            [
                "-4@rdi",
                "8@-16(rbp)",
                "4@$5",
                "8@rax",
                "-2@$-3",
                "1@r9",
                "8@0(rsp)",
                "-8@16(rbx,rcx,8)",
                "4@counter+4(rip)",
                "8@rax",
                "-4@CheckpointStats+40(rip)"
            ]
        );
        assert_eq!(
            parsed[1],
            Arg {
                size: 8,
                signed: false,
                location: Location::Memory {
                    base: Some(reg("rbp")),
                    index: None,
                    displacement: -16,
                    symbol: None
                }
            }
        );
        assert_eq!(parsed[9].location, Location::Register(reg("ah")));
        // Old notes have no size: 8 bytes.
        assert_eq!(parse_arg("%rdi").unwrap().size, 8);
    }

    /// Every operand shape gcc writes into stapsdt notes (at -O0: registers, %rbp slots; at
    /// -O2 -fPIE: RIP-relative globals, base + index × scale; at -O2 -no-pie: absolute
    /// globals with an index; thread-local variables), parsed to exact locations.
    #[test]
    fn operand_shapes_gcc_writes() {
        let memory =
            |base: Option<&str>, index: Option<(&str, u8)>, displacement, symbol: Option<&str>| {
                Location::Memory {
                    base: base.map(reg),
                    index: index.map(|(name, scale)| (reg(name), scale)),
                    displacement,
                    symbol: symbol.map(str::to_string),
                }
            };
        let cases = [
            ("-4@%eax", 4, true, Location::Register(reg("eax"))),
            ("8@%rax", 8, false, Location::Register(reg("rax"))),
            ("-1@%sil", 1, true, Location::Register(reg("sil"))),
            ("4@$5", 4, false, Location::Constant(5)),
            ("-4@$-1", 4, true, Location::Constant(-1)),
            ("8@$0x10", 8, false, Location::Constant(16)),
            ("8@-8(%rbp)", 8, false, memory(Some("rbp"), None, -8, None)),
            ("8@(%rsp)", 8, false, memory(Some("rsp"), None, 0, None)),
            ("-4@12(%r12)", 4, true, memory(Some("r12"), None, 12, None)),
            (
                "8@foo(%rip)",
                8,
                false,
                memory(Some("rip"), None, 0, Some("foo")),
            ),
            (
                "8@16+foo(%rip)",
                8,
                false,
                memory(Some("rip"), None, 16, Some("foo")),
            ),
            (
                "-4@arr+12(%rip)",
                4,
                true,
                memory(Some("rip"), None, 12, Some("arr")),
            ),
            (
                "8@foo-8(%rip)",
                8,
                false,
                memory(Some("rip"), None, -8, Some("foo")),
            ),
            (
                "4@(%rax,%rdx,8)",
                4,
                false,
                memory(Some("rax"), Some(("rdx", 8)), 0, None),
            ),
            (
                "4@-4(%rbx,%rcx,4)",
                4,
                false,
                memory(Some("rbx"), Some(("rcx", 4)), -4, None),
            ),
            (
                "-4@(%rsp,%rax,4)",
                4,
                true,
                memory(Some("rsp"), Some(("rax", 4)), 0, None),
            ),
            (
                "2@(%r9,%r10)",
                2,
                false,
                memory(Some("r9"), Some(("r10", 1)), 0, None),
            ),
            (
                "-4@arr(,%rcx,4)",
                4,
                true,
                memory(None, Some(("rcx", 4)), 0, Some("arr")),
            ),
            (
                "8@8+tab(,%rax,8)",
                8,
                false,
                memory(None, Some(("rax", 8)), 8, Some("tab")),
            ),
            (
                "-8@%fs:tls@tpoff",
                8,
                true,
                Location::Unsupported(
                    "segment-relative operands (%fs:, thread-local variables) are not supported"
                        .into(),
                ),
            ),
        ];
        for (spec, size, signed, location) in cases {
            assert_eq!(
                parse_arg(spec).unwrap(),
                Arg {
                    size,
                    signed,
                    location
                },
                "{spec}"
            );
        }
        // Where a symbol is found, the operand is read at its distance from the probe: the
        // probe at 0x1200, foo at 0x4000, arr at 0x4100, tab at 0x4200.
        let specs = "8@16+foo(%rip) -4@arr(,%rcx,4) 8@8+tab(,%rax,8) 4@(%rax,%rdx,8) \
                     -8@%fs:tls@tpoff 4@%xmm0 8@nowhere(%rip)";
        let mut args = parse_note_args(specs);
        resolve_symbols(&mut args, 0x1200, |name| match name {
            "foo" => Some(0x4000),
            "arr" => Some(0x4100),
            "tab" => Some(0x4200),
            _ => None,
        });
        let rip_indexed = |size, flags, aux: i64, index_offset, index_shift| Operand {
            kind: operand::USER_MEM_INDEXED,
            offset: 128,
            size,
            flags,
            aux: aux as u32,
            index_offset,
            index_shift,
            ..Operand::NONE
        };
        let operands: Vec<_> = args.iter().map(Arg::try_operand).collect();
        assert_eq!(
            operands,
            [
                Ok(Operand {
                    kind: operand::USER_MEM,
                    offset: 128,
                    size: 8,
                    aux: 0x4010 - 0x1200,
                    ..Operand::NONE
                }),
                // rcx is pt_regs byte 88, rax 80.
                Ok(rip_indexed(4, SIGNED, 0x4100 - 0x1200, 88, 2)),
                Ok(rip_indexed(8, 0, 0x4208 - 0x1200, 80, 3)),
                Ok(Operand {
                    kind: operand::USER_MEM_INDEXED,
                    offset: 80,
                    size: 4,
                    index_offset: 96,
                    index_shift: 3,
                    ..Operand::NONE
                }),
                Err(
                    "segment-relative operands (%fs:, thread-local variables) are not supported"
                        .into()
                ),
                Err(
                    "USDT argument spec `4@%xmm0`: unknown register; valid: [-]SIZE@LOCATION \
                     with SIZE 1, 2, 4 or 8 and LOCATION %reg, $const, disp(%reg), \
                     disp(%reg,%reg,scale) or symbol(%rip)"
                        .into()
                ),
                Err(
                    "the symbol `nowhere` of this RIP-relative operand is not in the binary's \
                     symbol table (stripped?) or names several variables"
                        .into()
                ),
            ]
        );
        // A spec that does not parse keeps its size and sign.
        assert_eq!((args[5].size, args[5].signed), (4, false));
        let shown: Vec<String> = args.iter().map(Arg::to_string).collect();
        assert_eq!(
            shown,
            [
                "8@foo+16(rip)",
                "-4@arr(,rcx,4)",
                "8@tab+8(,rax,8)",
                "4@0(rax,rdx,8)",
                "-8@?",
                "4@?",
                "8@nowhere(rip)"
            ]
        );
        let unresolved = |spec: &str| parse_arg(spec).unwrap().try_operand().unwrap_err();
        assert_eq!(
            unresolved("-4@arr(,%rcx,4)"),
            "the symbol `arr` of this absolute operand is not in the binary's symbol table \
             (stripped?) or names several variables"
        );
        assert_eq!(
            unresolved("4@0x601040(,%rax,4)"),
            "an absolute address without a symbol is not supported"
        );
    }

    #[test]
    fn bad_arg_specs_say_what_is_wrong() {
        for (spec, why) in [
            ("3@%eax", "the size is not 1, 2, 4 or 8"),
            ("4@%xmm0", "unknown register"),
            ("4@$x", "the constant is not a number"),
            ("4@8(%rbp", "unbalanced parentheses"),
            ("4@8(%rbp,%rax,3)", "the scale is not 1, 2, 4 or 8"),
            ("4@8(%foo)", "unknown base register"),
            ("4@rbp", "unknown location"),
            ("4@8()", "no base or index register"),
            ("4@8(,%rax,3)", "the scale is not 1, 2, 4 or 8"),
        ] {
            let err = parse_arg(spec).unwrap_err().to_string();
            assert!(err.contains(why), "{spec}: {err}");
            assert!(err.contains(&format!("`{spec}`")), "{spec}: {err}");
        }
    }

    #[test]
    fn operands() {
        let op = |spec: &str| parse_arg(spec).unwrap().operand();
        let edi = op("-4@%edi").unwrap();
        assert_eq!(
            (edi.kind, edi.offset, edi.size, edi.flags),
            (operand::REG, 112, 4, SIGNED)
        );
        // An 8-byte argument in a 4-byte alias reads only the alias's bytes.
        assert_eq!(op("8@%eax").unwrap().size, 4);
        let mem = op("8@-16(%rbp)").unwrap();
        assert_eq!(
            (mem.kind, mem.offset, mem.size, mem.aux as i32),
            (operand::USER_MEM, 32, 8, -16)
        );
        let constant = op("-8@$-5").unwrap();
        assert_eq!(constant.kind, operand::CONST);
        assert_eq!(
            (u64::from(constant.aux) << 32 | u64::from(constant.offset)) as i64,
            -5
        );
    }

    /// Scale-index-base operands: base register + index register << log2(scale) +
    /// displacement, as gcc writes array elements (`-4@(%rsp,%rax,4)` at -O2).
    #[test]
    fn indexed_operands() {
        let op = |spec: &str| parse_arg(spec).unwrap().operand().unwrap();
        let indexed = |offset, size, flags, aux: i32, index_offset, index_shift| Operand {
            kind: operand::USER_MEM_INDEXED,
            offset,
            size,
            flags,
            aux: aux as u32,
            index_offset,
            index_shift,
            ..Operand::NONE
        };
        // rbp is pt_regs byte 32, rax 80, rsp 152, rcx 88, rbx 40, r12 24, r13 16.
        assert_eq!(op("-4@-8(%rbp,%rax,4)"), indexed(32, 4, SIGNED, -8, 80, 2));
        assert_eq!(op("-4@(%rsp,%rax,4)"), indexed(152, 4, SIGNED, 0, 80, 2));
        assert_eq!(
            op("-4@-40(%rsp,%rcx,4)"),
            indexed(152, 4, SIGNED, -40, 88, 2)
        );
        assert_eq!(op("1@(%rbx,%rcx)"), indexed(40, 1, 0, 0, 88, 0));
        assert_eq!(op("2@0x10(%rbx,%rcx,2)"), indexed(40, 2, 0, 16, 88, 1));
        assert_eq!(op("8@-16(%r12,%r13,8)"), indexed(24, 8, 0, -16, 16, 3));
        let err = parse_arg("4@(%esp,%eax,4)")
            .unwrap()
            .operand()
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "USDT argument `4@0(rsp,rax,4)`: 32-bit address registers are not supported"
        );
    }

    /// RIP-relative operands (`-fPIE` globals) become a distance from the probe's address,
    /// read in the kernel at the uprobe's `rip` (the probe's address) + that distance.
    #[test]
    fn rip_relative_operands() {
        let mut args = parse_args(
            "-8@tk_global(%rip) 4@tk_array+8(%rip) 2@tk_low-2(%rip) 8@gone(%rip) 4@%eax",
        )
        .unwrap();
        // The probe's nop at 0x11d5; tk_global at 0x4010, tk_array at 0x4040, tk_low at
        // 0x1000 (below the probe).
        resolve_symbols(&mut args, 0x11d5, |name| match name {
            "tk_global" => Some(0x4010),
            "tk_array" => Some(0x4040),
            "tk_low" => Some(0x1000),
            _ => None,
        });
        assert_eq!(
            args[0].location,
            Location::ProbeRelative {
                from_probe: 0x4010 - 0x11d5,
                symbol: "tk_global".into(),
                displacement: 0,
                index: None
            }
        );
        assert_eq!(
            args[1].location,
            Location::ProbeRelative {
                from_probe: 0x4048 - 0x11d5,
                symbol: "tk_array".into(),
                displacement: 8,
                index: None
            }
        );
        let shown: Vec<String> = args.iter().map(Arg::to_string).collect();
        assert_eq!(
            shown,
            [
                "-8@tk_global(rip)",
                "4@tk_array+8(rip)",
                "2@tk_low-2(rip)",
                "8@gone(rip)",
                "4@rax"
            ]
        );
        let rip_mem = |size, flags, aux: i64| Operand {
            kind: operand::USER_MEM,
            offset: 128,
            size,
            flags,
            aux: aux as i32 as u32,
            ..Operand::NONE
        };
        assert_eq!(
            args[0].operand().unwrap(),
            rip_mem(8, SIGNED, 0x4010 - 0x11d5)
        );
        assert_eq!(args[1].operand().unwrap(), rip_mem(4, 0, 0x4048 - 0x11d5));
        assert_eq!(args[2].operand().unwrap(), rip_mem(2, 0, 0x0ffe - 0x11d5));
        assert_eq!(
            args[3].operand().unwrap_err().to_string(),
            "USDT argument `8@gone(rip)`: the symbol `gone` of this RIP-relative operand is \
             not in the binary's symbol table (stripped?) or names several variables"
        );
        // Not resolved: other registers with a symbol, RIP without one, too far away.
        let err = |spec: &str| parse_arg(spec).unwrap().operand().unwrap_err().to_string();
        assert!(
            err("8@x(%rbx)").contains("a symbol (`x`) as the displacement of a register"),
            "{}",
            err("8@x(%rbx)")
        );
        assert!(err("8@8(%rip)").contains("without a symbol"));
        let mut far = parse_args("8@far(%rip)").unwrap();
        resolve_symbols(&mut far, 0x1000, |_| Some(0x1_0000_1000));
        assert_eq!(
            far[0].operand().unwrap_err().to_string(),
            "USDT argument `8@far(rip)`: displacement 4294967296 out of 32-bit range"
        );
    }

    #[test]
    fn globs() {
        assert!(glob_match("transaction__*", "transaction__commit"));
        assert!(glob_match("*", ""));
        assert!(glob_match("t?ans*com*", "transaction__commit"));
        assert!(!glob_match("transaction__", "transaction__commit"));
        assert!(!glob_match("*abort", "transaction__commit"));
    }

    /// Debian's PostgreSQL is built with `--enable-dtrace`: its notes have the
    /// `postgresql` provider's probes, with parseable arguments and semaphores.
    #[test]
    fn postgres_notes() {
        let Some(postgres) = ["/usr/lib/postgresql/15/bin/postgres"]
            .into_iter()
            .map(Path::new)
            .find(|p| p.exists())
        else {
            eprintln!("skipped: PostgreSQL 15 is not installed (apt-get install postgresql)");
            return;
        };
        let all = probes(postgres, None, None).unwrap();
        assert!(all.len() > 50, "{} probes", all.len());
        assert!(all.iter().all(|s| s.provider == "postgresql"));
        // Every argument is readable, the RIP-relative globals of checkpoint__done
        // (`-4@40+CheckpointStats(%rip)`, from the dynamic symbol table) included.
        let unreadable: Vec<String> = all
            .iter()
            .flat_map(|s| s.args.iter())
            .filter_map(|a| a.operand().err().map(|e| e.to_string()))
            .collect();
        assert!(unreadable.is_empty(), "{unreadable:#?}");
        let done = probes(postgres, None, Some("checkpoint__done")).unwrap();
        assert!(
            matches!(&done[0].args[0].location, Location::ProbeRelative { symbol, displacement: 40, .. } if symbol == "CheckpointStats"),
            "{:?}",
            done[0].args
        );
        // The other probe with a RIP-relative argument: `-4@NBuffers(%rip) -4@%eax -4@%r14d`.
        let sync = probes(postgres, None, Some("buffer__sync__done")).unwrap();
        assert!(
            matches!(&sync[0].args[0].location, Location::ProbeRelative { symbol, displacement: 0, index: None, .. } if symbol == "NBuffers"),
            "{:?}",
            sync[0].args
        );
        let commits = probes(postgres, Some("postgresql"), Some("transaction__commit")).unwrap();
        assert_eq!(commits.len(), 1, "{commits:?}");
        let commit = &commits[0];
        // TRACE_POSTGRESQL_TRANSACTION_COMMIT(LocalTransactionId): one 4-byte argument.
        assert_eq!(commit.args.len(), 1, "{}", commit.arg_specs);
        assert_eq!(commit.args[0].size, 4, "{}", commit.arg_specs);
        assert!(commit.args[0].operand().is_ok(), "{}", commit.arg_specs);
        let size = std::fs::metadata(postgres).unwrap().len();
        assert!(commit.file_offset > 0 && commit.file_offset < size);
        // The semaphore lives in the writable `.probes` section, in the file too.
        assert!(commit.semaphore.is_some(), "{commit:?}");
        assert!(
            commit.semaphore_file_offset.is_some_and(|o| o < size),
            "{commit:?}"
        );
        let wild = probes(postgres, None, Some("transaction__*")).unwrap();
        let mut names: Vec<&str> = wild.iter().map(|s| s.name.as_str()).collect();
        names.dedup();
        assert_eq!(
            names,
            [
                "transaction__start",
                "transaction__commit",
                "transaction__abort"
            ]
        );
    }
}
