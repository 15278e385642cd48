//! Stack profiles as pprof profiles (`profile.proto`, gzipped): what `go tool pprof`,
//! Pyroscope, Parca and speedscope read.
//!
//! The layout follows Go's own CPU profiles (`runtime/pprof`), so tools that special-case
//! them treat ours the same:
//! - CPU samples at `HZ`: sample types `samples`/`count` and `cpu`/`nanoseconds`, period type
//!   `cpu`/`nanoseconds` with a period of `1e9 / HZ`; each stack's values are its sample
//!   count and count × period.
//! - Off-CPU time (counted in microseconds): `offcpu`/`nanoseconds`, the time × 1000.
//! - Event counts (`stackcount`): `events`/`count`.
//!
//! Each distinct (address, mapping, functions) is one `Location`; a function and those the
//! compiler inlined into it at that address are one location with several `Line`s, the
//! innermost first. A sample's locations go leaf first. User code gets the `Mapping` it was
//! loaded from (address range, file offset, build ID), kernel code one `[kernel.kallsyms]`
//! mapping spanning the kernel addresses seen. Every mapping is marked as symbolized
//! (`has_functions`), so consumers do not try to name the addresses again. Samples carry
//! string labels `pid`, `comm` and, where known, `cgroup`, and the `container_id` and
//! `pod_uid` the cgroup's path names ([`crate::containers`]).
//!
//! ```
//! use std::time::{Duration, UNIX_EPOCH};
//! use tracekit::output::pprof::{self, PprofOptions, SampleKind};
//! use tracekit::stacks::{Frame, Stack};
//!
//! let stacks = [Stack {
//!     pid: 7,
//!     comm: "burner".into(),
//!     cgroup: None,
//!     frames: vec![Frame::user("main", None), Frame::user("leaf", None)],
//!     count: 3,
//!     time_slice: None,
//! }];
//! let options = PprofOptions::new(SampleKind::Cpu { hz: 100 }, UNIX_EPOCH, Duration::from_secs(1));
//! let profile = pprof::build(&stacks, &options);
//! assert_eq!(profile.sample[0].value, [3, 30_000_000]);
//! let gzipped = pprof::encode(&profile);
//! assert_eq!(pprof::decode(&gzipped).unwrap(), profile);
//! ```

pub mod proto;

use std::{
    collections::HashMap,
    io::{self, Read as _, Write},
    sync::Arc,
    time::{Duration, SystemTime},
};

use flate2::{Compression, read::GzDecoder, write::GzEncoder};
use prost::Message as _;

use crate::{
    mappings::Mapping,
    stacks::{Frame, FrameKind, KERNEL_MODULE, Stack},
};

/// What a stack's count measures, and so the profile's sample types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleKind {
    /// CPU samples taken `hz` times a second per CPU (`tracekit profile`).
    Cpu {
        /// Samples per second.
        hz: u64,
    },
    /// Time off CPU in microseconds (`tracekit offcpu`).
    OffCpuMicros,
    /// Events counted (`tracekit stackcount`).
    Events,
}

/// What a pprof profile says beside its stacks.
pub struct PprofOptions<'a> {
    /// What the stacks' counts are.
    pub kind: SampleKind,
    /// When collection started (`time_nanos`).
    pub start: SystemTime,
    /// How long it ran (`duration_nanos`).
    pub duration: Duration,
    /// The cgroup of a process, for the `cgroup` label (`None`: no label).
    pub cgroup: &'a dyn Fn(u32) -> Option<String>,
    /// Whether inlined functions were expanded into frames (`has_inline_frames`).
    pub inline_frames: bool,
    /// Free-form comments (`go tool pprof -comments` prints them).
    pub comments: Vec<String>,
}

impl<'a> PprofOptions<'a> {
    /// Options with no cgroups, no comments, inline frames expanded.
    pub fn new(kind: SampleKind, start: SystemTime, duration: Duration) -> Self {
        Self {
            kind,
            start,
            duration,
            cgroup: &|_| None,
            inline_frames: true,
            comments: Vec::new(),
        }
    }
}

/// Builds the pprof profile of `stacks` (see the module docs for the layout).
pub fn build(stacks: &[Stack], options: &PprofOptions<'_>) -> proto::Profile {
    let mut builder = Builder::default();
    builder.strings.index("");
    let (sample_types, period_type, period, multipliers): (&[(&str, &str)], _, i64, Vec<i64>) =
        match options.kind {
            SampleKind::Cpu { hz } => {
                let period = (1_000_000_000 / hz.max(1)) as i64;
                (
                    &[("samples", "count"), ("cpu", "nanoseconds")],
                    ("cpu", "nanoseconds"),
                    period,
                    vec![1, period],
                )
            }
            SampleKind::OffCpuMicros => (
                &[("offcpu", "nanoseconds")],
                ("offcpu", "nanoseconds"),
                1,
                vec![1000],
            ),
            SampleKind::Events => (&[("events", "count")], ("events", "count"), 1, vec![1]),
        };
    let sample_type = sample_types
        .iter()
        .map(|&(kind, unit)| builder.value_type(kind, unit))
        .collect();
    let period_type = Some(builder.value_type(period_type.0, period_type.1));

    // Kernel frames share one mapping over the kernel addresses seen.
    let kernel_range = stacks
        .iter()
        .flat_map(|stack| &stack.frames)
        .filter(|frame| frame.kind == FrameKind::Kernel)
        .filter_map(|frame| frame.address.as_ref().map(|a| a.address))
        .fold(None, |range: Option<(u64, u64)>, addr| match range {
            None => Some((addr, addr)),
            Some((low, high)) => Some((low.min(addr), high.max(addr))),
        });

    let mut samples: HashMap<(Vec<u64>, Vec<proto::Label>), Vec<i64>> = HashMap::new();
    let mut order = Vec::new();
    let mut cgroups: HashMap<u32, Option<String>> = HashMap::new();
    for stack in stacks {
        let mut locations: Vec<u64> = frame_groups(&stack.frames)
            .map(|group| builder.location(group, kernel_range, options.inline_frames))
            .collect();
        locations.reverse();
        let mut labels = vec![
            builder.label("pid", &stack.pid.to_string()),
            builder.label("comm", &stack.comm),
        ];
        // The cgroup the kernel saw the sample in (`--by cgroup`), else the process's now.
        let cgroup = match &stack.cgroup {
            Some(cgroup) => Some(cgroup),
            None => cgroups
                .entry(stack.pid)
                .or_insert_with(|| (options.cgroup)(stack.pid))
                .as_ref(),
        };
        if let Some(cgroup) = cgroup {
            labels.push(builder.label("cgroup", cgroup));
            // The container and pod the cgroup names, as Parca and Alloy label them.
            let workload = crate::containers::Workload::from_cgroup(cgroup);
            if let Some(id) = &workload.container_id {
                labels.push(builder.label("container_id", id));
            }
            if let Some(uid) = &workload.pod_uid {
                labels.push(builder.label("pod_uid", uid));
            }
        }
        let key = (locations, labels);
        let values = samples.entry(key.clone()).or_insert_with(|| {
            order.push(key);
            vec![0; multipliers.len()]
        });
        for (value, multiplier) in values.iter_mut().zip(&multipliers) {
            *value = value.saturating_add((stack.count as i64).saturating_mul(*multiplier));
        }
    }
    let sample: Vec<proto::Sample> = order
        .into_iter()
        .map(|key| {
            let value = samples[&key].clone();
            let (location_id, label) = key;
            proto::Sample {
                location_id,
                value,
                label,
            }
        })
        .collect();
    let comment = options
        .comments
        .iter()
        .map(|comment| builder.strings.index(comment))
        .collect();
    let mut mapping = builder.mappings;
    main_binary_first(
        &mut mapping,
        &builder.locations,
        &sample,
        &builder.strings.table,
    );
    let time_nanos = options
        .start
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as i64);
    proto::Profile {
        sample_type,
        sample,
        mapping,
        location: builder.locations,
        function: builder.functions,
        string_table: builder.strings.table,
        drop_frames: 0,
        keep_frames: 0,
        time_nanos,
        duration_nanos: options.duration.as_nanos() as i64,
        period_type,
        period,
        comment,
        default_sample_type: 0,
    }
}

/// Moves the main binary to `mapping[0]`, where pprof looks for it ("File:" in its
/// reports): of the mappings that are not shared libraries or pseudo files (`[vdso]`,
/// `[kernel.kallsyms]`), the one most samples went through.
fn main_binary_first(
    mappings: &mut [proto::Mapping],
    locations: &[proto::Location],
    samples: &[proto::Sample],
    strings: &[String],
) {
    let mut weight: HashMap<u64, i64> = HashMap::new();
    for sample in samples {
        let mut ids: Vec<u64> = sample
            .location_id
            .iter()
            .map(|&id| locations[id as usize - 1].mapping_id)
            .filter(|&id| id != 0)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        for id in ids {
            *weight.entry(id).or_default() += sample.value.first().copied().unwrap_or(0);
        }
    }
    let is_library = |path: &str| {
        let name = path.rsplit('/').next().unwrap_or(path);
        name.starts_with('[') || name.ends_with(".so") || name.contains(".so.")
    };
    let main = (0..mappings.len())
        .filter(|&i| !is_library(&strings[mappings[i].filename as usize]))
        .max_by_key(|&i| {
            (
                weight.get(&mappings[i].id).copied().unwrap_or(0),
                std::cmp::Reverse(i),
            )
        });
    if let Some(main) = main {
        mappings[..=main].rotate_right(1);
    }
}

/// Encodes a profile as pprof files hold it: protobuf, gzipped.
pub fn encode(profile: &proto::Profile) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    // Writing to a Vec cannot fail.
    gz.write_all(&profile.encode_to_vec())
        .expect("writing to memory");
    gz.finish().expect("writing to memory")
}

/// Writes the gzipped pprof profile of `stacks` to `out`.
pub fn write(out: &mut impl Write, stacks: &[Stack], options: &PprofOptions<'_>) -> io::Result<()> {
    out.write_all(&encode(&build(stacks, options)))
}

/// Decodes a pprof profile, gzipped or not.
pub fn decode(bytes: &[u8]) -> io::Result<proto::Profile> {
    let mut raw = Vec::new();
    let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
        GzDecoder::new(bytes).read_to_end(&mut raw)?;
        &raw[..]
    } else {
        bytes
    };
    proto::Profile::decode(bytes).map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err))
}

/// Splits frames (outermost first) into one group per address: a frame and the frames
/// inlined into it.
fn frame_groups(frames: &[Frame]) -> impl Iterator<Item = &[Frame]> {
    let mut rest = frames;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let len = 1 + rest[1..].iter().take_while(|f| f.inlined).count();
        let (group, tail) = rest.split_at(len);
        rest = tail;
        Some(group)
    })
}

#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn index(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

/// What identifies a mapping: the mapping itself, or the kernel's.
#[derive(PartialEq, Eq, Hash)]
enum MappingKey {
    User(Arc<Mapping>),
    Kernel,
}

#[derive(Default)]
struct Builder {
    strings: Strings,
    mappings: Vec<proto::Mapping>,
    mapping_ids: HashMap<MappingKey, u64>,
    functions: Vec<proto::Function>,
    function_ids: HashMap<String, u64>,
    locations: Vec<proto::Location>,
    location_ids: HashMap<(u64, u64, Vec<u64>), u64>,
}

impl Builder {
    fn value_type(&mut self, kind: &str, unit: &str) -> proto::ValueType {
        proto::ValueType {
            r#type: self.strings.index(kind),
            unit: self.strings.index(unit),
        }
    }

    fn label(&mut self, key: &str, value: &str) -> proto::Label {
        proto::Label {
            key: self.strings.index(key),
            str: self.strings.index(value),
            num: 0,
            num_unit: 0,
        }
    }

    /// The function `name`; `interpreted`: a frame of interpreted code, whose symbol is
    /// `function (file:LINE)`.
    fn function(&mut self, name: &str, interpreted: bool) -> u64 {
        if let Some(&id) = self.function_ids.get(name) {
            return id;
        }
        let id = self.functions.len() as u64 + 1;
        // An interpreter frame's symbol is `function (file:LINE)`: the function is named
        // and filed as such, the line goes to the location.
        let (function, file) = match crate::unwind::interp::source_of_symbol(name) {
            Some((function, file, _)) if interpreted => (function, file),
            _ => (name, ""),
        };
        let name_index = self.strings.index(function);
        let filename = if file.is_empty() {
            0
        } else {
            self.strings.index(file)
        };
        // An interpreted function's system name is `function (file)`: a name equal to its
        // system name is demangled by pprof readers, and go tool pprof's heuristics take
        // `<module>`, `<lambda>` and Java's `<init>` for C++ template arguments and strip
        // them whole (shown as `<unknown>`); a different one is kept as it is.
        let system_name = if file.is_empty() {
            name_index
        } else {
            self.strings.index(&format!("{function} ({file})"))
        };
        self.functions.push(proto::Function {
            id,
            name: name_index,
            system_name,
            filename,
            start_line: 0,
        });
        self.function_ids.insert(name.to_string(), id);
        id
    }

    fn mapping(
        &mut self,
        key: MappingKey,
        kernel_range: Option<(u64, u64)>,
        inline_frames: bool,
    ) -> u64 {
        if let Some(&id) = self.mapping_ids.get(&key) {
            return id;
        }
        let id = self.mappings.len() as u64 + 1;
        let mapping = match &key {
            MappingKey::User(m) => proto::Mapping {
                id,
                memory_start: m.start,
                memory_limit: m.end,
                file_offset: m.file_offset,
                filename: self.strings.index(&m.path),
                build_id: self.strings.index(&m.build_id_hex()),
                has_functions: true,
                has_filenames: false,
                has_line_numbers: false,
                has_inline_frames: inline_frames,
            },
            MappingKey::Kernel => {
                let (low, high) = kernel_range.unwrap_or((0, 0));
                proto::Mapping {
                    id,
                    memory_start: low,
                    memory_limit: high.saturating_add(1),
                    file_offset: 0,
                    filename: self.strings.index(KERNEL_MODULE),
                    build_id: 0,
                    has_functions: true,
                    has_filenames: false,
                    has_line_numbers: false,
                    has_inline_frames: false,
                }
            }
        };
        self.mappings.push(mapping);
        self.mapping_ids.insert(key, id);
        id
    }

    /// The location of one address: `group` is its frame and the frames inlined into it,
    /// outermost first.
    fn location(
        &mut self,
        group: &[Frame],
        kernel_range: Option<(u64, u64)>,
        inline_frames: bool,
    ) -> u64 {
        let head = &group[0];
        let address = head.address.as_ref();
        let mapping_key = match (head.kind, address.and_then(|a| a.mapping.as_ref())) {
            (FrameKind::Kernel, _) if address.is_some() => Some(MappingKey::Kernel),
            (FrameKind::User, Some(mapping)) => Some(MappingKey::User(Arc::clone(mapping))),
            _ => None,
        };
        let mapping_id =
            mapping_key.map_or(0, |key| self.mapping(key, kernel_range, inline_frames));
        let address = address.map_or(0, |a| a.address);
        let functions: Vec<u64> = group
            .iter()
            .rev()
            .map(|frame| self.function(&frame.symbol, crate::unwind::interp::is_interpreted(frame)))
            .collect();
        let lines: Vec<i64> = group
            .iter()
            .rev()
            .map(|frame| match crate::unwind::interp::is_interpreted(frame) {
                true => {
                    crate::unwind::interp::source_of_symbol(&frame.symbol).map_or(0, |(_, _, l)| l)
                }
                false => 0,
            })
            .collect();
        let key = (mapping_id, address, functions);
        if let Some(&id) = self.location_ids.get(&key) {
            return id;
        }
        let id = self.locations.len() as u64 + 1;
        self.locations.push(proto::Location {
            id,
            mapping_id,
            address,
            line: key
                .2
                .iter()
                .zip(&lines)
                .map(|(&function_id, &line)| proto::Line { function_id, line })
                .collect(),
            is_folded: false,
        });
        self.location_ids.insert(key, id);
        id
    }
}

#[cfg(test)]
mod tests;
