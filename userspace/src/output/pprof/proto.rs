//! pprof's `profile.proto` (package `perftools.profiles`, proto3) as prost messages.
//!
//! Derived by hand rather than generated: the schema is small and stable, and generating it
//! would need `protoc` (prost-build) or a protobuf compiler crate at build time for about
//! a hundred lines. Field numbers and types follow the published schema, `proto/profile.proto`
//! in github.com/google/pprof; the fields newer than every consumer we test with
//! (`Line.column`, breakdowns) are left out, and decoders skip fields they do not know.
//! Strings are indices into [`Profile::string_table`], whose entry 0 is "".

/// A profile: samples, the locations their stacks go through, and the tables they refer to.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Profile {
    /// What each value of a sample measures (`samples`/`count`, `cpu`/`nanoseconds`).
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    /// The samples.
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    /// Binaries mapped into the address space; `mapping[0]` is the main binary.
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    /// Program locations.
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    /// Functions the locations' lines name.
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    /// Every string, referred to by index; entry 0 is "".
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    /// Regexp (string index) of frames to drop with their callees.
    #[prost(int64, tag = "7")]
    pub drop_frames: i64,
    /// Regexp (string index) of frames to keep even if `drop_frames` matches.
    #[prost(int64, tag = "8")]
    pub keep_frames: i64,
    /// When the collection started, in nanoseconds since the Unix epoch.
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    /// How long the collection ran, in nanoseconds.
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    /// What the period counts (`cpu`/`nanoseconds`).
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    /// Events between samples, in `period_type` units.
    #[prost(int64, tag = "12")]
    pub period: i64,
    /// Free-form comments (string indices).
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    /// The type (string index) of the preferred sample value; 0 means the last one.
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

/// A measured quantity: its type and unit (string indices).
#[derive(Clone, Copy, PartialEq, Eq, Hash, prost::Message)]
pub struct ValueType {
    /// e.g. `cpu`.
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    /// e.g. `nanoseconds`.
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// One stack with its values.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// Location ids, the leaf at index 0.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    /// One value per [`Profile::sample_type`].
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    /// Labels (pid, comm, cgroup).
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

/// A sample label: a key with a string or a numeric value.
#[derive(Clone, PartialEq, Eq, Hash, prost::Message)]
pub struct Label {
    /// Key (string index).
    #[prost(int64, tag = "1")]
    pub key: i64,
    /// String value (string index), or 0.
    #[prost(int64, tag = "2")]
    pub str: i64,
    /// Numeric value.
    #[prost(int64, tag = "3")]
    pub num: i64,
    /// Unit of `num` (string index).
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

/// A binary mapped into memory.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Mapping {
    /// Unique nonzero id.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// First address mapped.
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    /// End of the mapped range.
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    /// The file offset mapped at `memory_start`.
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    /// The file (string index).
    #[prost(int64, tag = "5")]
    pub filename: i64,
    /// The build ID, hex (string index).
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    /// Locations in it name their functions.
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    /// Locations in it name source files.
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    /// Locations in it have line numbers.
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
    /// Locations in it expand inlined functions.
    #[prost(bool, tag = "10")]
    pub has_inline_frames: bool,
}

/// An instruction address and the functions it is in (several when inlined).
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Location {
    /// Unique nonzero id.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// The mapping holding it, 0 when unknown.
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    /// The instruction address, 0 when unknown.
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// The functions at this address, innermost first: the last is the caller into which
    /// the others were inlined.
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
    /// Several symbols share this address (identical code folding).
    #[prost(bool, tag = "5")]
    pub is_folded: bool,
}

/// A function and line of a location.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct Line {
    /// The function's id.
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    /// Source line, 0 when unknown.
    #[prost(int64, tag = "2")]
    pub line: i64,
}

/// A function.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Function {
    /// Unique nonzero id.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Human-readable (demangled) name (string index).
    #[prost(int64, tag = "2")]
    pub name: i64,
    /// Name as the system knows it, e.g. mangled (string index).
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    /// Source file (string index).
    #[prost(int64, tag = "4")]
    pub filename: i64,
    /// First line of the function in its source file.
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}
