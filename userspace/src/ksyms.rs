//! Kernel addresses to function names, by the kernel itself (the `ksyms` BPF program).
//!
//! blazesym names kernel addresses from `/proc/kallsyms`, and reading that file makes the
//! kernel format all of its 120k+ symbols: ~60 ms of CPU per run on a distro kernel, the
//! largest part of a short profile's cost (bcc and bpftrace pay it too). The `ksyms` program
//! asks the kernel for just the addresses a profile holds, through `bpf_snprintf("%ps")`, which
//! runs the kernel's own kallsyms lookup: the same table `/proc/kallsyms` prints, BPF programs
//! and trampolines included as they are at the time of the lookup. Kernels where the program
//! does not load (before 5.13, or without BPF test runs for raw tracepoints) fall back to
//! blazesym.

use std::{
    collections::{HashMap, HashSet},
    os::fd::{AsFd as _, AsRawFd as _},
    sync::{Arc, Mutex},
};

use aya::{
    Ebpf,
    maps::{Array, MapData},
    programs::RawTracePoint,
};
use aya_obj::generated::{bpf_attr, bpf_cmd};
use tracekit_common::ksyms::{BATCH, KsymAddrs, KsymNames};

use crate::bpf::{Object, load_without_kernel_btf, names::ksyms as names, object, sys_bpf};

/// The loaded program, its maps, and every name looked up so far.
struct Lookup {
    /// Keeps the program loaded.
    ebpf: Ebpf,
    addrs: Array<MapData, KsymAddrs>,
    names: Array<MapData, KsymNames>,
    known: Known,
}

/// Names by address, each name held once: a function's call sites are distinct addresses of
/// one name (a profile under process churn meets dozens of `copy_process`'s), and a name
/// per address held its text once per call site.
#[derive(Default)]
struct Known {
    by_addr: HashMap<u64, Option<Arc<str>>>,
    names: HashSet<Arc<str>>,
}

impl Known {
    fn contains(&self, addr: u64) -> bool {
        self.by_addr.contains_key(&addr)
    }

    fn insert(&mut self, addr: u64, name: Option<String>) {
        let name = name.map(|name| match self.names.get(name.as_str()) {
            Some(held) => Arc::clone(held),
            None => {
                let held: Arc<str> = Arc::from(name);
                self.names.insert(Arc::clone(&held));
                held
            }
        });
        self.by_addr.insert(addr, name);
    }

    fn get(&self, addr: u64) -> Option<String> {
        self.by_addr.get(&addr)?.as_deref().map(str::to_owned)
    }

    /// Forgets every name when `incoming` more addresses would pass [`MAX_KNOWN`].
    fn make_room(&mut self, incoming: usize) {
        if make_room(&mut self.by_addr, incoming) {
            self.names = HashSet::new();
        }
    }
}

/// Names kept for later lookups at most: a daemon (`tracekit exporter`) that profiles for
/// days sees ever more distinct kernel addresses, and the cache must not grow with them.
const MAX_KNOWN: usize = 1 << 15;

/// Forgets every known name when `incoming` more would pass [`MAX_KNOWN`] (they are looked up
/// again when needed: a few ms per thousand); returns whether it did.
fn make_room<V>(known: &mut HashMap<u64, V>, incoming: usize) -> bool {
    let full = known.len() + incoming > MAX_KNOWN;
    if full {
        *known = HashMap::new();
    }
    full
}

/// `None` until first used; `Some(None)` when the program cannot run here.
static LOOKUP: Mutex<Option<Option<Lookup>>> = Mutex::new(None);

/// The names of kernel addresses `addrs`, in order: `Some(name)` for an address inside a
/// kernel symbol (module suffixes dropped), `None` for one outside any. Returns `None` as a
/// whole when the kernel cannot run the lookup program (the caller falls back to kallsyms).
pub fn names(addrs: &[u64]) -> Option<Vec<Option<String>>> {
    let mut guard = LOOKUP.lock().unwrap_or_else(|poison| poison.into_inner());
    let lookup = guard
        .get_or_insert_with(|| match Lookup::load() {
            Ok(lookup) => Some(lookup),
            Err(err) => {
                log::debug!("naming kernel addresses through /proc/kallsyms: {err}");
                None
            }
        })
        .as_mut()?;
    let mut missing: Vec<u64> = addrs
        .iter()
        .copied()
        .filter(|&addr| !lookup.known.contains(addr))
        .collect();
    missing.sort_unstable();
    missing.dedup();
    lookup.known.make_room(missing.len());
    for chunk in missing.chunks(BATCH) {
        if let Err(err) = lookup.run(chunk) {
            log::debug!("kernel address lookup failed: {err}; using /proc/kallsyms");
            *guard = Some(None);
            return None;
        }
    }
    Some(addrs.iter().map(|&addr| lookup.known.get(addr)).collect())
}

impl Lookup {
    fn load() -> Result<Self, String> {
        let mut ebpf =
            load_without_kernel_btf(object(Object::Ksyms).map_err(|e| e.to_string())?, |_| {})
                .map_err(|err| err.to_string())?;
        let program: &mut RawTracePoint = ebpf
            .program_mut(names::LOOKUP)
            .ok_or("no ksyms_lookup program")?
            .try_into()
            .map_err(|err: aya::programs::ProgramError| err.to_string())?;
        program.load().map_err(|err| err.to_string())?;
        let addrs = Array::try_from(ebpf.take_map(names::ADDRS).ok_or("no KSYMS_ADDRS")?)
            .map_err(|err| err.to_string())?;
        let names = Array::try_from(ebpf.take_map(names::NAMES).ok_or("no KSYMS_NAMES")?)
            .map_err(|err| err.to_string())?;
        Ok(Self {
            ebpf,
            addrs,
            names,
            known: Known::default(),
        })
    }

    /// Names up to [`BATCH`] addresses with one run of the program.
    fn run(&mut self, chunk: &[u64]) -> Result<(), String> {
        let mut batch = KsymAddrs {
            len: chunk.len() as u64,
            addrs: [0; BATCH],
        };
        batch.addrs[..chunk.len()].copy_from_slice(chunk);
        self.addrs
            .set(0, batch, 0)
            .map_err(|err| format!("writing addresses: {err}"))?;
        let program: &RawTracePoint = self
            .ebpf
            .program(names::LOOKUP)
            .ok_or("no ksyms_lookup program")?
            .try_into()
            .map_err(|err: aya::programs::ProgramError| err.to_string())?;
        let fd = program.fd().map_err(|err| err.to_string())?;
        // A raw tracepoint program takes its context as an array of u64 arguments.
        let context = [0u64; 1];
        // SAFETY: bpf_attr is plain data; all-zero is its "unset" value.
        let mut attr: bpf_attr = unsafe { std::mem::zeroed() };
        // SAFETY: writing the BPF_PROG_TEST_RUN member of the union.
        let test = unsafe { &mut attr.test };
        test.prog_fd = fd.as_fd().as_raw_fd() as u32;
        test.ctx_in = context.as_ptr() as u64;
        test.ctx_size_in = std::mem::size_of_val(&context) as u32;
        sys_bpf(bpf_cmd::BPF_PROG_TEST_RUN, &mut attr)
            .map_err(|err| format!("BPF_PROG_TEST_RUN: {err}"))?;
        // SAFETY: reading back the member just written.
        let retval = unsafe { attr.test.retval };
        if retval != 0 {
            return Err(format!("the program returned {retval}"));
        }
        let names = self
            .names
            .get(&0, 0)
            .map_err(|err| format!("reading names: {err}"))?;
        for (&addr, raw) in chunk.iter().zip(names.names.iter()) {
            self.known.insert(addr, parse_name(raw));
        }
        Ok(())
    }
}

/// What `%ps` printed: `name`, `name [module]`, or the address in hex when no symbol holds
/// it (lib/vsprintf.c `symbol_string`).
fn parse_name(raw: &[u8]) -> Option<String> {
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    let text = std::str::from_utf8(&raw[..end]).ok()?;
    let name = text.split_once(' ').map_or(text, |(name, _module)| name);
    (!name.is_empty() && !name.starts_with("0x")).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_names_stay_bounded() {
        let mut known: HashMap<u64, ()> = (0..MAX_KNOWN as u64 - 10).map(|a| (a, ())).collect();
        assert!(!make_room(&mut known, 10));
        assert_eq!(known.len(), MAX_KNOWN - 10);
        assert!(make_room(&mut known, 11));
        assert!(known.is_empty());
    }

    /// Call sites of one function hold its name once; unknown addresses hold none; making
    /// room forgets the names too.
    #[test]
    fn names_held_once() {
        let mut known = Known::default();
        known.insert(0x10, Some("copy_process".into()));
        known.insert(0x20, Some("copy_process".into()));
        known.insert(0x30, Some("do_exit".into()));
        known.insert(0x40, None);
        assert_eq!(known.names.len(), 2);
        let (a, b) = (&known.by_addr[&0x10], &known.by_addr[&0x20]);
        assert!(Arc::ptr_eq(a.as_ref().unwrap(), b.as_ref().unwrap()));
        assert_eq!(known.get(0x20).as_deref(), Some("copy_process"));
        assert_eq!(known.get(0x40), None);
        assert!(known.contains(0x40) && !known.contains(0x50));
        known.make_room(MAX_KNOWN);
        assert!(known.by_addr.is_empty() && known.names.is_empty());
    }

    fn raw(text: &str) -> [u8; 96] {
        let mut buf = [0u8; 96];
        buf[..text.len()].copy_from_slice(text.as_bytes());
        buf
    }

    #[test]
    fn parses_what_percent_ps_prints() {
        assert_eq!(
            parse_name(&raw("do_syscall_64")).as_deref(),
            Some("do_syscall_64")
        );
        assert_eq!(
            parse_name(&raw("virtnet_poll [virtio_net]")).as_deref(),
            Some("virtnet_poll")
        );
        assert_eq!(
            parse_name(&raw("bpf_prog_6deef7357e7b4530_engine_raw_tp")).as_deref(),
            Some("bpf_prog_6deef7357e7b4530_engine_raw_tp")
        );
        assert_eq!(parse_name(&raw("0xffffffffc0a01234")), None);
        assert_eq!(parse_name(&raw("")), None);
    }
}
