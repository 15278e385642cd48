//! Stack profiles as OpenTelemetry profiles: an `ExportProfilesServiceRequest`
//! (`opentelemetry.proto.collector.profiles.v1development`, protos 1.10.0, the messages the
//! `opentelemetry-proto` crate generates), what `exporter --otlp-endpoint` sends and
//! `profile -o FILE.otlp.pb` writes (the request's protobuf bytes, not gzipped).
//!
//! Layout:
//! - one `ResourceProfiles` per process, its resource attributes `host.name`,
//!   `process.pid`, `process.executable.name`, `service.name` (`OTEL_SERVICE_NAME` from the
//!   process's environment, else `unknown_service:EXECUTABLE` as the resource conventions
//!   say), and, where its cgroup names them ([`crate::containers`]), `container.id` and
//!   `k8s.pod.uid`; one `Profile` in it, `samples`/`count` with period `cpu`/`nanoseconds`
//!   (`1e9 / HZ`);
//! - each sample a stack of the process with its count and the sample attribute
//!   `thread.name` (the thread's comm);
//! - one dictionary for the whole request: the tables' index 0 are the zero values the
//!   protocol asks for; a location is one address with its function and the functions
//!   inlined into it (innermost first, as `lines`), each line its function, file and line
//!   where known (DWARF for native code, the runtime for Python, Ruby, PHP, JavaScript and
//!   Java frames); a location's `profile.frame.type` attribute is `kernel`, `native`,
//!   `cpython`, ... as the profiling conventions name them; a user mapping carries its file,
//!   range, offset and `process.executable.build_id.gnu`.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
    time::{Duration, SystemTime},
};

use opentelemetry_proto::tonic::{
    collector::profiles::v1development::ExportProfilesServiceRequest,
    common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value},
    profiles::v1development as otlp,
    resource::v1::Resource,
};

use crate::{
    containers::{ProcessInfo, Workload},
    mappings::Mapping,
    output::pprof::SampleKind,
    stacks::{Frame, FrameKind, Stack},
};

/// What an OTLP profile says beside its stacks.
pub struct OtlpOptions<'a> {
    /// What the stacks' counts are: CPU samples at a rate, time off CPU, events.
    pub kind: SampleKind,
    /// When sampling started.
    pub start: SystemTime,
    /// How long it ran.
    pub duration: Duration,
    /// This machine's name (`host.name`).
    pub host: String,
    /// What is known of a process (read once per process per profile).
    pub process: &'a dyn Fn(u32) -> ProcessInfo,
}

/// The `profile.frame.type` of a frame, as the profiling semantic conventions name them.
fn frame_type(frame: &Frame) -> &'static str {
    match (frame.kind, frame.module.as_deref()) {
        (FrameKind::Kernel, _) => "kernel",
        (_, Some("[python]")) => "cpython",
        (_, Some("[ruby]")) => "ruby",
        (_, Some("[php]")) => "php",
        (_, Some("[javascript]")) => "v8js",
        (_, Some("[java]")) => "jvm",
        _ => "native",
    }
}

/// A string attribute.
fn string(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.into())),
        }),
        key_strindex: 0,
    }
}

/// A location by its mapping, address, lines (function and line) and frame type.
type LocationKey = (i32, u64, Vec<(i32, i64)>, i32);

/// Per process, each (stack, sample attributes) with its first position and its count.
type ByProcess = BTreeMap<u32, BTreeMap<(i32, Vec<i32>), (usize, i64)>>;

#[derive(Default)]
struct Dictionary {
    table: otlp::ProfilesDictionary,
    strings: HashMap<String, i32>,
    attributes: HashMap<(i32, String), i32>,
    functions: HashMap<(i32, i32, i32), i32>,
    mappings: HashMap<Option<Arc<Mapping>>, i32>,
    locations: HashMap<LocationKey, i32>,
    stacks: HashMap<Vec<i32>, i32>,
}

impl Dictionary {
    fn new() -> Self {
        let mut dictionary = Self::default();
        let table = &mut dictionary.table;
        table.string_table.push(String::new());
        table.mapping_table.push(otlp::Mapping::default());
        table.location_table.push(otlp::Location::default());
        table.function_table.push(otlp::Function::default());
        table.link_table.push(otlp::Link::default());
        table.attribute_table.push(otlp::KeyValueAndUnit::default());
        table.stack_table.push(otlp::Stack::default());
        dictionary.strings.insert(String::new(), 0);
        dictionary
    }

    fn string(&mut self, text: &str) -> i32 {
        if let Some(&at) = self.strings.get(text) {
            return at;
        }
        let at = self.table.string_table.len() as i32;
        self.table.string_table.push(text.to_string());
        self.strings.insert(text.to_string(), at);
        at
    }

    /// A string attribute in the attribute table.
    fn attribute(&mut self, key: &str, value: &str) -> i32 {
        let key = self.string(key);
        if let Some(&at) = self.attributes.get(&(key, value.to_string())) {
            return at;
        }
        let at = self.table.attribute_table.len() as i32;
        self.table.attribute_table.push(otlp::KeyValueAndUnit {
            key_strindex: key,
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue(value.into())),
            }),
            unit_strindex: 0,
        });
        self.attributes.insert((key, value.to_string()), at);
        at
    }

    fn function(&mut self, name: &str, system_name: &str, file: &str) -> i32 {
        let key = (
            self.string(name),
            self.string(system_name),
            self.string(file),
        );
        if let Some(&at) = self.functions.get(&key) {
            return at;
        }
        let at = self.table.function_table.len() as i32;
        self.table.function_table.push(otlp::Function {
            name_strindex: key.0,
            system_name_strindex: key.1,
            filename_strindex: key.2,
            start_line: 0,
        });
        self.functions.insert(key, at);
        at
    }

    fn mapping(&mut self, mapping: &Arc<Mapping>) -> i32 {
        let key = Some(Arc::clone(mapping));
        if let Some(&at) = self.mappings.get(&key) {
            return at;
        }
        let filename = self.string(&mapping.path);
        let build_id = mapping.build_id_hex();
        let attribute_indices = if build_id.is_empty() {
            vec![]
        } else {
            vec![self.attribute("process.executable.build_id.gnu", &build_id)]
        };
        let at = self.table.mapping_table.len() as i32;
        self.table.mapping_table.push(otlp::Mapping {
            memory_start: mapping.start,
            memory_limit: mapping.end,
            file_offset: mapping.file_offset,
            filename_strindex: filename,
            attribute_indices,
        });
        self.mappings.insert(key, at);
        at
    }

    /// The location of one address: `group` is its frame and the frames inlined into it,
    /// outermost first.
    fn location(&mut self, group: &[Frame]) -> i32 {
        let head = &group[0];
        let mapping = match head.address.as_ref().and_then(|a| a.mapping.as_ref()) {
            Some(mapping) => self.mapping(mapping),
            None => 0,
        };
        let address = head.address.as_ref().map_or(0, |a| a.address);
        let mut lines = Vec::with_capacity(group.len());
        for (position, frame) in group.iter().enumerate().rev() {
            let interpreted = crate::unwind::interp::is_interpreted(frame);
            let (name, file, line) = match crate::unwind::interp::source_of_symbol(&frame.symbol) {
                Some((function, file, line)) if interpreted => (function, file.to_string(), line),
                _ => match frame.file_line(position) {
                    Some(at) => (frame.symbol.as_str(), at.file.to_string(), at.line.into()),
                    None => (frame.symbol.as_str(), String::new(), 0),
                },
            };
            let function = self.function(name, name, &file);
            lines.push((function, line));
        }
        let frame_type = self.attribute("profile.frame.type", frame_type(head));
        let key = (mapping, address, lines, frame_type);
        if let Some(&at) = self.locations.get(&key) {
            return at;
        }
        let at = self.table.location_table.len() as i32;
        self.table.location_table.push(otlp::Location {
            mapping_index: mapping,
            address,
            lines: key
                .2
                .iter()
                .map(|&(function_index, line)| otlp::Line {
                    function_index,
                    line,
                    column: 0,
                })
                .collect(),
            attribute_indices: vec![frame_type],
        });
        self.locations.insert(key, at);
        at
    }

    fn stack(&mut self, frames: &[Frame]) -> i32 {
        let mut locations: Vec<i32> = frame_groups(frames)
            .map(|group| self.location(group))
            .collect();
        // Leaf first.
        locations.reverse();
        if let Some(&at) = self.stacks.get(&locations) {
            return at;
        }
        let at = self.table.stack_table.len() as i32;
        self.table.stack_table.push(otlp::Stack {
            location_indices: locations.clone(),
        });
        self.stacks.insert(locations, at);
        at
    }
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

/// A profile ID: 16 bytes, not all zero, from the start time, the pid and the host.
fn profile_id(start_nanos: u64, pid: u32, host: &str) -> Vec<u8> {
    use std::hash::{BuildHasher as _, BuildHasherDefault, DefaultHasher};
    let hasher = BuildHasherDefault::<DefaultHasher>::default();
    let high = hasher.hash_one((start_nanos, pid, host, 1u8));
    let low = hasher.hash_one((start_nanos, pid, host, 2u8)) | 1;
    [high.to_be_bytes(), low.to_be_bytes()].concat()
}

/// Builds the request for `stacks` (see the module docs for the layout). Samples of one
/// process keep the order of `stacks`; processes go by pid.
pub fn build(stacks: &[Stack], options: &OtlpOptions<'_>) -> ExportProfilesServiceRequest {
    let mut dictionary = Dictionary::new();
    let (sample_type, period_type, period, multiplier) = match options.kind {
        SampleKind::Cpu { hz } => (
            ("samples", "count"),
            Some(("cpu", "nanoseconds")),
            (1_000_000_000 / hz.max(1)) as i64,
            1,
        ),
        SampleKind::OffCpuMicros => (("off_cpu", "nanoseconds"), None, 0, 1000),
        SampleKind::Events => (("events", "count"), None, 0, 1),
    };
    let sample_type = otlp::ValueType {
        type_strindex: dictionary.string(sample_type.0),
        unit_strindex: dictionary.string(sample_type.1),
    };
    let period_type = period_type.map(|(kind, unit)| otlp::ValueType {
        type_strindex: dictionary.string(kind),
        unit_strindex: dictionary.string(unit),
    });
    let start_nanos = options
        .start
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as u64);
    let mut by_pid: ByProcess = BTreeMap::new();
    for (order, stack) in stacks.iter().enumerate() {
        let stack_index = dictionary.stack(&stack.frames);
        let thread = dictionary.attribute("thread.name", &stack.comm);
        let samples = by_pid.entry(stack.pid).or_default();
        let entry = samples
            .entry((stack_index, vec![thread]))
            .or_insert((order, 0));
        entry.1 = entry
            .1
            .saturating_add((stack.count as i64).saturating_mul(multiplier));
    }
    let mut resource_profiles = Vec::with_capacity(by_pid.len());
    for (pid, samples) in by_pid {
        let info = (options.process)(pid);
        let executable = info.executable.clone().unwrap_or_default();
        let mut attributes = vec![
            string("host.name", &options.host),
            KeyValue {
                key: "process.pid".into(),
                value: Some(AnyValue {
                    value: Some(any_value::Value::IntValue(pid.into())),
                }),
                key_strindex: 0,
            },
        ];
        if !executable.is_empty() {
            attributes.push(string("process.executable.name", &executable));
        }
        let service = info
            .service
            .clone()
            .unwrap_or_else(|| format!("unknown_service:{executable}"));
        attributes.push(string("service.name", &service));
        let workload = info
            .cgroup
            .as_deref()
            .map(Workload::from_cgroup)
            .unwrap_or_default();
        if let Some(id) = &workload.container_id {
            attributes.push(string("container.id", id));
        }
        if let Some(uid) = &workload.pod_uid {
            attributes.push(string("k8s.pod.uid", uid));
        }
        let mut samples: Vec<_> = samples.into_iter().collect();
        samples.sort_by_key(|(_, (order, _))| *order);
        let samples = samples
            .into_iter()
            .map(
                |((stack_index, attribute_indices), (_, count))| otlp::Sample {
                    stack_index,
                    attribute_indices,
                    link_index: 0,
                    values: vec![count],
                    timestamps_unix_nano: vec![],
                },
            )
            .collect();
        resource_profiles.push(otlp::ResourceProfiles {
            resource: Some(Resource {
                attributes,
                dropped_attributes_count: 0,
                entity_refs: vec![],
            }),
            scope_profiles: vec![otlp::ScopeProfiles {
                scope: Some(InstrumentationScope {
                    name: "tracekit".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    attributes: vec![],
                    dropped_attributes_count: 0,
                }),
                profiles: vec![otlp::Profile {
                    sample_type: Some(sample_type),
                    samples,
                    time_unix_nano: start_nanos,
                    duration_nano: options.duration.as_nanos() as u64,
                    period_type,
                    period,
                    profile_id: profile_id(start_nanos, pid, &options.host),
                    dropped_attributes_count: 0,
                    original_payload_format: String::new(),
                    original_payload: vec![],
                    attribute_indices: vec![],
                }],
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        });
    }
    ExportProfilesServiceRequest {
        resource_profiles,
        dictionary: Some(dictionary.table),
    }
}

/// The request's protobuf bytes.
pub fn encode(request: &ExportProfilesServiceRequest) -> Vec<u8> {
    prost::Message::encode_to_vec(request)
}

/// Writes the request for `stacks` to `out`, as `profile -o FILE.otlp.pb` does.
pub fn write(
    out: &mut (impl std::io::Write + ?Sized),
    stacks: &[Stack],
    options: &OtlpOptions<'_>,
) -> std::io::Result<()> {
    out.write_all(&encode(&build(stacks, options)))
}

/// Samples in a request: the sum of every sample's value.
pub fn sample_count(request: &ExportProfilesServiceRequest) -> u64 {
    request
        .resource_profiles
        .iter()
        .flat_map(|r| &r.scope_profiles)
        .flat_map(|s| &s.profiles)
        .flat_map(|p| &p.samples)
        .flat_map(|s| &s.values)
        .map(|&v| v.max(0) as u64)
        .sum()
}

#[cfg(test)]
mod tests;
