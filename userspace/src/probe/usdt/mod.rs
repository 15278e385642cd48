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
//! probe's other arguments stay readable. `engine::kinds::usdt::attach` attaches them with the
//! semaphores counted by the kernel.

mod args;
mod notes;

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
};

use blazesym::inspect::{
    Inspector,
    source::{Elf, Source},
};

pub use self::args::*;
use self::notes::read_notes;
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

#[cfg(test)]
mod tests;
