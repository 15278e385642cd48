//! Symbolized stacks and what is computed from them: folded stacks and self-time rankings.
//!
//! A [`Stack`] is one distinct call path with its sample count, outermost frame first, the
//! process's user frames followed by the kernel frames it was in (the order of `perf script`
//! piped through `stackcollapse-perf.pl`).

use std::{
    collections::{BTreeMap, HashMap},
    hash::{BuildHasher, RandomState},
    sync::Arc,
};

use serde::Serialize;

use crate::mappings::Mapping;

/// Where a frame's code runs.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum FrameKind {
    /// User space (perf marks it `[.]`).
    User,
    /// The kernel (perf marks it `[k]`; folded stacks suffix it with `_[k]`).
    Kernel,
}

/// The symbol printed for a frame that did not resolve, as perf prints it.
pub const UNKNOWN_SYMBOL: &str = "[unknown]";

/// One frame of a stack.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Frame {
    /// Where the frame's instruction is, for formats that keep addresses (pprof); `None`
    /// when not known. Not part of folded stacks or JSON.
    #[serde(skip)]
    pub address: Option<CodeAddress>,
    /// Function name, demangled; [`UNKNOWN_SYMBOL`] when unresolved.
    pub symbol: String,
    /// The binary or library holding the code (a path), `[kernel.kallsyms]` for the kernel;
    /// `None` when unknown.
    pub module: Option<String>,
    /// User or kernel.
    pub kind: FrameKind,
    /// Whether the compiler inlined this function into its caller (known from DWARF).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub inlined: bool,
    /// Whether the code was compiled at run time (named from `/tmp/perf-PID.map` or
    /// `jit-PID.dump`; the module is that file). Folded stacks suffix it with `_[j]`, as
    /// `stackcollapse-perf.pl --jit` does.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub jit: bool,
}

impl Frame {
    /// A user frame.
    pub fn user(symbol: impl Into<String>, module: Option<&str>) -> Self {
        Self {
            address: None,
            symbol: symbol.into(),
            module: module.map(str::to_string),
            kind: FrameKind::User,
            inlined: false,
            jit: false,
        }
    }

    /// A kernel frame in `[kernel.kallsyms]`.
    pub fn kernel(symbol: impl Into<String>) -> Self {
        Self {
            address: None,
            symbol: symbol.into(),
            module: Some(KERNEL_MODULE.to_string()),
            kind: FrameKind::Kernel,
            inlined: false,
            jit: false,
        }
    }

    /// The module's file name (`libc.so.6`), as perf's "Shared Object" column shows it.
    pub fn module_name(&self) -> &str {
        match &self.module {
            Some(module) => module.rsplit('/').next().unwrap_or(module),
            None => UNKNOWN_SYMBOL,
        }
    }
}

/// The module name perf gives kernel code.
pub const KERNEL_MODULE: &str = "[kernel.kallsyms]";

/// Where a frame's instruction is: the address looked up and the file mapping holding it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CodeAddress {
    /// The address looked up, in the process's address space (the kernel's for kernel
    /// frames): the sampled instruction for a stack's leaf, a return address minus one
    /// (inside the call instruction, as Go's profiles and perf record it) for its callers.
    /// A function and the functions inlined into it at that point share one address.
    pub address: u64,
    /// The executable file mapping holding `address`, for user frames of processes whose
    /// memory map was read ([`crate::mappings`]).
    pub mapping: Option<Arc<Mapping>>,
    /// The source file and line of each frame at this address (the function, then the
    /// functions inlined into it: the frames sharing it, outermost first), where DWARF gave
    /// them; `None` when no line was looked up (symbol tables only, kernel frames).
    pub lines: Option<Arc<[Option<FileLine>]>>,
}

/// A source file and line, as DWARF's line table names them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FileLine {
    /// The file, its directory joined when DWARF gives one.
    pub file: Arc<str>,
    /// 1-based.
    pub line: u32,
}

impl Frame {
    /// This frame's source file and line, where DWARF gave them ([`CodeAddress::lines`]):
    /// `position` is the frame's place among the frames sharing its address (0 for the
    /// function, 1 for the first function inlined into it...).
    pub fn file_line(&self, position: usize) -> Option<&FileLine> {
        self.address
            .as_ref()?
            .lines
            .as_ref()?
            .get(position)?
            .as_ref()
    }
}

/// Sets the [`CodeAddress`] of each frame of one stack resolved from `leaf_first`
/// addresses (the addresses looked up, leaf first) into `frames` (outermost first, each
/// address one frame, followed by the frames inlined into it). `mapping` finds the mapping
/// of an address. Frames that do not line up with the addresses are left without one.
pub fn set_addresses(
    frames: &mut [Frame],
    leaf_first: &[u64],
    mapping: impl Fn(u64) -> Option<Arc<Mapping>>,
) {
    let outermost_starts = frames
        .iter()
        .enumerate()
        .filter(|(i, frame)| *i == 0 || !frame.inlined)
        .count();
    if outermost_starts != leaf_first.len() {
        log::debug!(
            "{} frames for {} addresses: addresses not kept",
            outermost_starts,
            leaf_first.len()
        );
        return;
    }
    let mut addresses = leaf_first.iter().rev();
    let mut current = None;
    for (i, frame) in frames.iter_mut().enumerate() {
        if i == 0 || !frame.inlined {
            current = addresses.next().map(|&address| CodeAddress {
                address,
                mapping: mapping(address),
                lines: None,
            });
        }
        frame.address = current.clone();
    }
}

/// One distinct stack and how many samples (or other units) it collected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Stack {
    /// Process id (tgid).
    pub pid: u32,
    /// The thread's command name.
    pub comm: String,
    /// The thread's cgroup v2 path (`/system.slice/nginx.service`) when the profile was
    /// taken `--by cgroup`: folded stacks and flame graphs show it as the root frame, above
    /// the command name (as Parca and `perf report --sort cgroup` group by it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
    /// Outermost frame first; user frames, then kernel frames.
    pub frames: Vec<Frame>,
    /// Samples (or the unit of the profile) attributed to this stack.
    pub count: u64,
    /// The time slice the samples fell in, when the profile kept them (`profile --heatmap`):
    /// `CLOCK_MONOTONIC` divided by the profile's slice length. A stack then appears once
    /// per slice it was sampled in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_slice: Option<u32>,
}

/// Stacks summed by process, command name, frames and time slice, in the order first seen: the stacks
/// of several intervals (or cuts) added up into one profile. Each distinct stack is held
/// once (the index holds positions, not copies) and adding a known stack allocates nothing:
/// a profile window of a busy machine holds thousands of them.
#[derive(Debug, Default)]
pub struct StackSum {
    /// Positions in `stacks`, by the hash of pid, comm and frames.
    index: hashbrown::HashTable<usize>,
    hasher: RandomState,
    stacks: Vec<Stack>,
}

impl StackSum {
    /// Adds `stack`'s count to the stack with the same pid, comm, cgroup and frames.
    pub fn add(&mut self, stack: &Stack) {
        let key = |s: &Stack| {
            self.hasher
                .hash_one((s.pid, &s.comm, &s.cgroup, &s.frames, s.time_slice))
        };
        let hash = key(stack);
        let same = |&at: &usize| {
            let known = &self.stacks[at];
            known.pid == stack.pid
                && known.comm == stack.comm
                && known.cgroup == stack.cgroup
                && known.frames == stack.frames
                && known.time_slice == stack.time_slice
        };
        if let Some(&at) = self.index.find(hash, same) {
            self.stacks[at].count += stack.count;
            return;
        }
        let stacks = &self.stacks;
        self.index
            .insert_unique(hash, stacks.len(), |&at| key(&stacks[at]));
        self.stacks.push(stack.clone());
    }

    /// The summed stacks, in the order first seen.
    pub fn into_stacks(self) -> Vec<Stack> {
        self.stacks
    }
}

/// Stacks summed by command name, cgroup, time slice and the names of their frames (no
/// pid, no addresses): the whole run of `profile -i` written as folded stacks or a flame
/// graph. Each distinct frame, command name and cgroup is held once, and the stacks are
/// numbers in two flat arrays: ten minutes of 50 new Python processes a second sample tens
/// of thousands of distinct startup stacks of 40 frames; held as [`Stack`]s they took
/// 1.2 MB a second, and as many small allocations they kept the heap from shrinking
/// between intervals.
#[derive(Debug, Default)]
pub struct NamedStackSum {
    hasher: RandomState,
    /// Each distinct frame once (without its address), by number.
    frames: Vec<Frame>,
    /// Positions in `frames`, by the hash of the frame's names.
    frame_index: hashbrown::HashTable<u32>,
    /// Command names and cgroup paths, by number.
    names: Vec<String>,
    name_index: hashbrown::HashTable<u32>,
    /// Every stack's frame numbers, one after the other.
    frame_numbers: Vec<u32>,
    stacks: Vec<NamedStack>,
    /// Positions in `stacks`, by the hash of comm, cgroup, slice and frame numbers.
    stack_index: hashbrown::HashTable<usize>,
}

/// One stack of a [`NamedStackSum`]: its frames are `frame_numbers[start..start + len]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct NamedStack {
    comm: u32,
    /// `u32::MAX`: none.
    cgroup: u32,
    time_slice: Option<u32>,
    start: u32,
    len: u32,
    count: u64,
}

/// What a frame is by name: all of it but its address.
fn frame_names(f: &Frame) -> (&str, Option<&str>, FrameKind, bool, bool) {
    (&f.symbol, f.module.as_deref(), f.kind, f.inlined, f.jit)
}

impl NamedStackSum {
    /// The number of `frame` (its address left out), added when new.
    fn frame_number(&mut self, frame: &Frame) -> u32 {
        let hash = self.hasher.hash_one(frame_names(frame));
        let frames = &self.frames;
        let same = |&at: &u32| frame_names(&frames[at as usize]) == frame_names(frame);
        if let Some(&at) = self.frame_index.find(hash, same) {
            return at;
        }
        let at = self.frames.len() as u32;
        self.frames.push(Frame {
            address: None,
            ..frame.clone()
        });
        let (hasher, frames) = (&self.hasher, &self.frames);
        self.frame_index.insert_unique(hash, at, |&at| {
            hasher.hash_one(frame_names(&frames[at as usize]))
        });
        at
    }

    /// The number of command name or cgroup path `name`, added when new.
    fn name_number(&mut self, name: &str) -> u32 {
        let hash = self.hasher.hash_one(name);
        let names = &self.names;
        if let Some(&at) = self.name_index.find(hash, |&at| names[at as usize] == name) {
            return at;
        }
        let at = self.names.len() as u32;
        self.names.push(name.to_string());
        let (hasher, names) = (&self.hasher, &self.names);
        self.name_index
            .insert_unique(hash, at, |&at| hasher.hash_one(names[at as usize].as_str()));
        at
    }

    /// Adds `stack`'s count to the stack with the same comm, cgroup, time slice and frame
    /// names, whatever its process.
    pub fn add(&mut self, stack: &Stack) {
        let comm = self.name_number(&stack.comm);
        let cgroup = stack
            .cgroup
            .as_deref()
            .map_or(u32::MAX, |cgroup| self.name_number(cgroup));
        // The frames go at the end of `frame_numbers`, and leave again if the stack is known.
        let start = self.frame_numbers.len();
        for frame in &stack.frames {
            let number = self.frame_number(frame);
            self.frame_numbers.push(number);
        }
        fn key(
            numbers: &[u32],
            comm: u32,
            cgroup: u32,
            slice: Option<u32>,
        ) -> (u32, u32, Option<u32>, &[u32]) {
            (comm, cgroup, slice, numbers)
        }
        let new = &self.frame_numbers[start..];
        let hash = self
            .hasher
            .hash_one(key(new, comm, cgroup, stack.time_slice));
        let (stacks, numbers) = (&self.stacks, &self.frame_numbers);
        let frames_of = |known: &NamedStack| &numbers[known.start as usize..][..known.len as usize];
        let same = |&at: &usize| {
            let known = &stacks[at];
            key(frames_of(known), known.comm, known.cgroup, known.time_slice)
                == key(new, comm, cgroup, stack.time_slice)
        };
        if let Some(&at) = self.stack_index.find(hash, same) {
            self.stacks[at].count += stack.count;
            self.frame_numbers.truncate(start);
            return;
        }
        let (hasher, stacks) = (&self.hasher, &self.stacks);
        self.stack_index.insert_unique(hash, stacks.len(), |&at| {
            let known = &stacks[at];
            hasher.hash_one(key(
                frames_of(known),
                known.comm,
                known.cgroup,
                known.time_slice,
            ))
        });
        self.stacks.push(NamedStack {
            comm,
            cgroup,
            time_slice: stack.time_slice,
            start: start as u32,
            len: stack.frames.len() as u32,
            count: stack.count,
        });
    }

    /// The summed stacks, in the order first seen, with pid 0 and no addresses.
    pub fn into_stacks(self) -> Vec<Stack> {
        let name = |at: u32| self.names.get(at as usize).cloned();
        self.stacks
            .iter()
            .map(|named| Stack {
                pid: 0,
                comm: name(named.comm).unwrap_or_default(),
                cgroup: name(named.cgroup),
                frames: self.frame_numbers[named.start as usize..][..named.len as usize]
                    .iter()
                    .map(|&at| self.frames[at as usize].clone())
                    .collect(),
                count: named.count,
                time_slice: named.time_slice,
            })
            .collect()
    }
}

/// Folds stacks into `comm;outer;...;leaf` lines with their summed counts, sorted by line:
/// the input format of `flamegraph.pl` and inferno. Kernel frames end in `_[k]`, JIT frames
/// in `_[j]`. A stack with a cgroup (`--by cgroup`) starts with its path:
/// `/system.slice/app.service;comm;outer;...;leaf`.
///
/// ```
/// use tracekit::stacks::{Frame, Stack, fold};
/// let stack = Stack {
///     pid: 7,
///     comm: "burner".into(),
///     cgroup: None,
///     frames: vec![Frame::user("main", None), Frame::kernel("do_syscall_64")],
///     count: 3,
///     time_slice: None,
/// };
/// let in_cgroup = Stack { cgroup: Some("/app.slice".into()), ..stack.clone() };
/// assert_eq!(
///     fold(&[stack, in_cgroup]),
///     vec![
///         ("/app.slice;burner;main;do_syscall_64_[k]".to_string(), 3),
///         ("burner;main;do_syscall_64_[k]".to_string(), 3),
///     ]
/// );
/// ```
pub fn fold(stacks: &[Stack]) -> Vec<(String, u64)> {
    let mut folded: BTreeMap<String, u64> = BTreeMap::new();
    for stack in stacks {
        *folded.entry(folded_path(stack)).or_default() += stack.count;
    }
    folded.into_iter().collect()
}

/// The folded path of one stack, without its count.
pub fn folded_path(stack: &Stack) -> String {
    let mut line = match &stack.cgroup {
        Some(cgroup) => sanitize(cgroup) + ";",
        None => String::new(),
    };
    line.push_str(&sanitize(if stack.comm.is_empty() {
        UNKNOWN_SYMBOL
    } else {
        &stack.comm
    }));
    for frame in &stack.frames {
        line.push(';');
        line.push_str(&sanitize(&frame.symbol));
        if frame.kind == FrameKind::Kernel {
            line.push_str("_[k]");
        } else if frame.jit {
            line.push_str("_[j]");
        }
    }
    line
}

/// Folded-stack readers split on `;` and take the last space-separated token as the count;
/// names may hold spaces, but not `;` or line breaks.
fn sanitize(name: &str) -> String {
    name.replace(';', ":").replace(['\n', '\r'], " ")
}

/// A function ranked by self samples: the leaf frame of the stacks it ends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HotFunction {
    /// Self samples.
    pub samples: u64,
    /// The command name of the process.
    pub comm: String,
    /// The cgroup of the stacks (`--by cgroup`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
    /// The module's file name (`[kernel.kallsyms]` for the kernel).
    pub module: String,
    /// The function.
    pub symbol: String,
    /// User or kernel.
    pub kind: FrameKind,
}

/// Functions by self samples, hottest first (ties by name), as `perf report --no-children`
/// sorts by `comm,dso,sym`. Returns the ranking and the total sample count.
pub fn hottest(stacks: &[Stack]) -> (Vec<HotFunction>, u64) {
    type Function<'a> = (Option<&'a str>, &'a str, &'a str, &'a str, FrameKind);
    let mut by_function: HashMap<Function<'_>, u64> = HashMap::new();
    let mut total = 0;
    for stack in stacks {
        total += stack.count;
        let (module, symbol, kind) = match stack.frames.last() {
            Some(leaf) => (leaf.module_name(), leaf.symbol.as_str(), leaf.kind),
            None => (UNKNOWN_SYMBOL, UNKNOWN_SYMBOL, FrameKind::User),
        };
        *by_function
            .entry((
                stack.cgroup.as_deref(),
                stack.comm.as_str(),
                module,
                symbol,
                kind,
            ))
            .or_default() += stack.count;
    }
    let mut ranked: Vec<HotFunction> = by_function
        .into_iter()
        .map(
            |((cgroup, comm, module, symbol, kind), samples)| HotFunction {
                samples,
                comm: comm.to_string(),
                cgroup: cgroup.map(str::to_string),
                module: module.to_string(),
                symbol: symbol.to_string(),
                kind,
            },
        )
        .collect();
    ranked.sort_by(|a, b| {
        b.samples.cmp(&a.samples).then_with(|| {
            (&a.cgroup, &a.comm, &a.module, &a.symbol)
                .cmp(&(&b.cgroup, &b.comm, &b.module, &b.symbol))
        })
    });
    (ranked, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(comm: &str, frames: &[(&str, FrameKind)], count: u64) -> Stack {
        Stack {
            pid: 42,
            comm: comm.into(),
            cgroup: None,
            frames: frames
                .iter()
                .map(|&(name, kind)| match kind {
                    FrameKind::User => Frame::user(name, Some("/usr/bin/burner")),
                    FrameKind::Kernel => Frame::kernel(name),
                })
                .collect(),
            count,
            time_slice: None,
        }
    }

    use FrameKind::{Kernel as K, User as U};

    /// Stacks of several processes that differ only in pid and addresses add up; a frame
    /// that differs by kind, module or inlining keeps its stack apart; the frames come back
    /// whole, in first-seen order, with pid 0.
    #[test]
    fn named_stack_sum_adds_up_processes_by_frame_names() {
        let mut sum = NamedStackSum::default();
        let mut at = stack("burner", &[("main", U), ("b", U)], 3);
        at.frames[1].address = Some(CodeAddress {
            address: 0x1000,
            mapping: None,
            lines: None,
        });
        sum.add(&at);
        let mut other_pid = stack("burner", &[("main", U), ("b", U)], 2);
        other_pid.pid = 43;
        sum.add(&other_pid);
        sum.add(&stack("burner", &[("main", U), ("b", K)], 1));
        let mut inlined = stack("burner", &[("main", U), ("b", U)], 5);
        inlined.frames[1].inlined = true;
        sum.add(&inlined);
        sum.add(&stack("other", &[("main", U), ("b", U)], 4));
        let mut expected = vec![
            stack("burner", &[("main", U), ("b", U)], 5),
            stack("burner", &[("main", U), ("b", K)], 1),
            inlined,
            stack("other", &[("main", U), ("b", U)], 4),
        ];
        for stack in &mut expected {
            stack.pid = 0;
        }
        assert_eq!(sum.into_stacks(), expected);
    }

    #[test]
    fn stack_sum_adds_equal_stacks_in_first_seen_order() {
        let mut sum = StackSum::default();
        sum.add(&stack("burner", &[("main", U), ("b", U)], 3));
        sum.add(&stack("burner", &[("main", U), ("a", U)], 2));
        sum.add(&stack("other", &[("main", U), ("b", U)], 1));
        sum.add(&stack("burner", &[("main", U), ("b", U)], 4));
        assert_eq!(
            sum.into_stacks(),
            [
                stack("burner", &[("main", U), ("b", U)], 7),
                stack("burner", &[("main", U), ("a", U)], 2),
                stack("other", &[("main", U), ("b", U)], 1),
            ]
        );
    }

    #[test]
    fn stack_sum_keeps_counts_as_its_index_grows() {
        // Past several of the index's resizes, each of which rehashes the stacks held.
        let names: Vec<String> = (0..2000).map(|i| format!("f{i}")).collect();
        let mut sum = StackSum::default();
        for round in 1..=3 {
            for (i, name) in names.iter().enumerate() {
                let mut s = stack("burner", &[("main", U), (name, U)], round);
                s.pid = (i % 7) as u32;
                sum.add(&s);
            }
        }
        let stacks = sum.into_stacks();
        assert_eq!(stacks.len(), 2000);
        for (i, s) in stacks.iter().enumerate() {
            assert_eq!(
                (s.pid, s.frames[1].symbol.as_str()),
                ((i % 7) as u32, names[i].as_str())
            );
            assert_eq!(s.count, 1 + 2 + 3);
        }
    }

    #[test]
    fn folds_merges_and_sorts() {
        let stacks = [
            stack(
                "burner",
                &[("main", U), ("a", U), ("b", U), ("leaf", U)],
                90,
            ),
            stack("burner", &[("main", U), ("a", U)], 4),
            stack("burner", &[("main", U), ("a", U), ("b", U), ("leaf", U)], 6),
            stack(
                "sys",
                &[
                    ("main", U),
                    ("getppid", U),
                    ("entry_SYSCALL_64", K),
                    ("x64_sys_call", K),
                ],
                5,
            ),
            stack("", &[], 1),
        ];
        let lines: Vec<String> = fold(&stacks)
            .into_iter()
            .map(|(path, count)| format!("{path} {count}"))
            .collect();
        assert_eq!(
            lines,
            [
                "[unknown] 1",
                "burner;main;a 4",
                "burner;main;a;b;leaf 96",
                "sys;main;getppid;entry_SYSCALL_64_[k];x64_sys_call_[k] 5",
            ]
        );
    }

    #[test]
    fn addresses_follow_frames_and_their_inlined_functions() {
        let inlined = |name: &str| Frame {
            inlined: true,
            ..Frame::user(name, Some("/bin/x"))
        };
        // main at 0x10 (outermost), b at 0x20 with c inlined into it, the leaf d at 0x30.
        let mut frames = vec![
            Frame::user("main", Some("/bin/x")),
            Frame::user("b", Some("/bin/x")),
            inlined("c"),
            Frame::user("d", Some("/bin/x")),
        ];
        let mapping = Arc::new(Mapping {
            start: 0x20,
            end: 0x40,
            file_offset: 0,
            path: "/bin/x".into(),
            build_id: None,
        });
        set_addresses(&mut frames, &[0x30, 0x20, 0x10], |addr| {
            (addr >= 0x20).then(|| Arc::clone(&mapping))
        });
        let got: Vec<(u64, bool)> = frames
            .iter()
            .map(|f| {
                let a = f.address.as_ref().unwrap();
                (a.address, a.mapping.is_some())
            })
            .collect();
        assert_eq!(
            got,
            [(0x10, false), (0x20, true), (0x20, true), (0x30, true)]
        );

        // Frames that do not line up with the addresses get none.
        let mut frames = vec![Frame::user("main", None)];
        set_addresses(&mut frames, &[0x30, 0x20], |_| None);
        assert_eq!(frames[0].address, None);
    }

    #[test]
    fn folded_names_cannot_break_the_format() {
        let stacks = [stack("a;b", &[("weird;name\nx", U)], 2)];
        assert_eq!(fold(&stacks), [("a:b;weird:name x".to_string(), 2)]);
    }

    #[test]
    fn ranks_by_self_samples() {
        let stacks = [
            stack("burner", &[("main", U), ("leaf", U)], 30),
            stack("burner", &[("main", U), ("a", U), ("leaf", U)], 20),
            stack("burner", &[("main", U), ("a", U)], 10),
            stack("sys", &[("main", U), ("x64_sys_call", K)], 10),
        ];
        let (ranked, total) = hottest(&stacks);
        assert_eq!(total, 70);
        let rows: Vec<_> = ranked
            .iter()
            .map(|f| {
                (
                    f.samples,
                    f.comm.as_str(),
                    f.module.as_str(),
                    f.symbol.as_str(),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                (50, "burner", "burner", "leaf"),
                (10, "burner", "burner", "a"),
                (10, "sys", "[kernel.kallsyms]", "x64_sys_call"),
            ]
        );
    }
}
