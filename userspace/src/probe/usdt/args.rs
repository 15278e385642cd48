//! USDT argument specs (x86_64: `-4@%edi`, `8@-16(%rbp)`, `4@$5`, `-8@counter(%rip)`; arm64:
//! `-4@x0`, `8@[sp, 16]`, `4@5`): registers, locations, and the engine operands that read
//! them.

use std::fmt;

use tracekit_common::engine::{Operand, SIGNED, operand};

use crate::{Error, Result};
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

/// arm64's general registers as `struct user_pt_regs` (the uapi layout of
/// `arch/arm64/include/uapi/asm/ptrace.h`, a stable ABI: `regs[31]`, `sp`, `pc`, `pstate`)
/// holds them: the offset of each is 8 × its index.
const ARM64_REGS: [&str; 32] = [
    "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14",
    "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27",
    "x28", "x29", "x30", "sp",
];

/// The register an arm64 assembler name means: `x0`-`x30`, their 32-bit views `w0`-`w30`
/// (the low half: little-endian, at the same offset), `sp`.
///
/// ```
/// use tracekit::probe::usdt::register_arm64;
/// let w1 = register_arm64("w1").unwrap();
/// assert_eq!((w1.name, w1.pt_regs_offset, w1.width), ("x1", 8, 4));
/// assert_eq!(register_arm64("sp").unwrap().pt_regs_offset, 248);
/// assert!(register_arm64("x31").is_none());
/// assert!(register_arm64("rdi").is_none());
/// ```
pub fn register_arm64(name: &str) -> Option<Register> {
    let (index, width) = if name == "sp" {
        (31, 8)
    } else {
        let (width, digits) = match name.split_at_checked(1)? {
            ("x", digits) => (8, digits),
            ("w", digits) => (4, digits),
            _ => return None,
        };
        if digits.starts_with('0') && digits.len() > 1 {
            return None;
        }
        let index: usize = digits.parse().ok().filter(|n| *n <= 30)?;
        (index, width)
    };
    Some(Register {
        name: ARM64_REGS[index],
        pt_regs_offset: index as u32 * 8,
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
    /// (`-4@table(,%rax,4)`, `-no-pie` code) whose symbol [`probes`](super::probes) found in the binary's
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

/// Parses one argument spec: `[-]SIZE@LOCATION` (systemtap's format), where LOCATION is, on
/// x86_64, `%reg`, `$const`, `disp(%base)`, `disp(%base,%index,scale)` or `sym+disp(%rip)`,
/// and on arm64 `reg`, `const`, `[base]` or `[base, offset]`. The two syntaxes do not
/// overlap, so both parse anywhere. A spec without `SIZE@` (old notes) is an unsigned 8-byte
/// value. Errors (usage) name the bad part.
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
/// let arg = parse_arg("-4@[x0, -8]").unwrap();
/// assert!(matches!(arg.location, Location::Memory { displacement: -8, .. }));
/// assert_eq!(parse_arg("4@5").unwrap().location, Location::Constant(5));
/// ```
pub fn parse_arg(spec: &str) -> Result<Arg> {
    let bad = |why: &str| {
        Err(Error::usage(format!(
            "USDT argument spec `{spec}`: {why}; valid: [-]SIZE@LOCATION with SIZE 1, 2, 4 \
             or 8 and LOCATION %reg, $const, disp(%reg), disp(%reg,%reg,scale) or symbol(%rip) \
             (x86_64), reg, const, [reg] or [reg, offset] (arm64)"
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
    } else if let Some(inner) = location.strip_prefix('[') {
        let Some(inner) = inner.strip_suffix(']') else {
            return bad("unbalanced brackets");
        };
        let (base, offset) = inner.split_once(',').unwrap_or((inner, "0"));
        let Some(base) = register_arm64(base.trim()) else {
            return bad("unknown base register");
        };
        let offset = offset.trim();
        let Some(displacement) = parse_int(offset.strip_prefix('#').unwrap_or(offset)) else {
            return bad("bad offset");
        };
        Location::Memory {
            base: Some(base),
            index: None,
            displacement,
            symbol: None,
        }
    } else if let Some(reg) = register_arm64(location) {
        Location::Register(reg)
    } else if let Some(value) = parse_int(location) {
        Location::Constant(value)
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
    split_specs(specs).map(parse_arg).collect()
}

/// A note's argument specs: separated by spaces, except inside arm64's brackets
/// (`-4@[x0, 8]` is one).
fn split_specs(specs: &str) -> impl Iterator<Item = &str> {
    let mut depth = 0u32;
    specs
        .split(move |c: char| {
            match c {
                '[' => depth += 1,
                ']' => depth = depth.saturating_sub(1),
                _ => {}
            }
            c.is_whitespace() && depth == 0
        })
        .filter(|spec| !spec.is_empty())
}

/// The arguments of a note, one per spec: those that do not parse are
/// [`Location::Unsupported`] (with [`parse_arg`]'s error), sized by their `[-]SIZE@` if it
/// reads (8 bytes unsigned if not), so that the others stay readable.
pub fn parse_note_args(specs: &str) -> Vec<Arg> {
    split_specs(specs)
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
