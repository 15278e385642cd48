//! Symbols of code compiled at run time (JIT): `/tmp/perf-PID.map` and `jit-PID.dump`.
//!
//! Runtimes that compile code tell profilers what they compiled in one of two files, both
//! defined by perf (`tools/perf/Documentation/jit-interface.txt` and
//! `jitdump-specification.txt`):
//! - a perf map, `/tmp/perf-PID.map`: one line `START SIZE name` per function, hex numbers
//!   with or without `0x` (node `--perf-basic-prof`, the JVM's `-XX:+DumpPerfMapAtExit` and
//!   perf-map-agent, Python 3.12+ `-X perf`, .NET `DOTNET_PerfMapEnabled=1`);
//! - a jitdump, `jit-PID.dump`: binary records of code loads and moves (V8 `--perf-prof`,
//!   the JVM agents, .NET `DOTNET_PerfMapEnabled=1`), mapped executable by the runtime so
//!   that profilers find it in the process's memory map.
//!
//! Both files only grow while the process runs: a [`JitTable`] reads what was appended since
//! the last read, and the newest definition of an address wins (code is freed and its
//! addresses reused). `PID` is the process id in its own pid namespace.

use std::{
    collections::BTreeMap,
    fs::File,
    io::{Read as _, Seek as _, SeekFrom},
    sync::Arc,
};

/// Which kind of file a JIT symbol came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JitSource {
    /// `/tmp/perf-PID.map`.
    PerfMap,
    /// `jit-PID.dump`.
    JitDump,
}

/// One JIT-compiled function: `[start, end)` and its name.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Code {
    end: u64,
    name: Arc<str>,
    source: JitSource,
}

/// Address ranges of JIT code and their names, newest definition first: adding a range
/// replaces whatever overlapped it.
#[derive(Clone, Debug, Default)]
pub struct JitTable {
    /// Start address to range, non-overlapping.
    ranges: BTreeMap<u64, Code>,
}

impl JitTable {
    /// The function at `addr`, with the kind of file that named it.
    pub fn lookup(&self, addr: u64) -> Option<(&str, JitSource)> {
        let (_, code) = self.ranges.range(..=addr).next_back()?;
        (addr < code.end).then_some((&*code.name, code.source))
    }

    /// Number of functions.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether no function is known.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Defines `[start, start + size)` as `name`, cutting away older overlapping ranges.
    /// Empty ranges are ignored.
    pub fn insert(&mut self, start: u64, size: u64, name: &str, source: JitSource) {
        self.insert_shared(start, size, Arc::from(name), source);
    }

    fn insert_shared(&mut self, start: u64, size: u64, name: Arc<str>, source: JitSource) {
        let Some(end) = start.checked_add(size).filter(|_| size > 0) else {
            return;
        };
        // An older range starting before `start` and reaching into it keeps its head.
        if let Some((&before_start, before)) = self.ranges.range(..start).next_back()
            && before.end > start
        {
            let before = before.clone();
            self.ranges.insert(
                before_start,
                Code {
                    end: start,
                    ..before.clone()
                },
            );
            if before.end > end {
                self.ranges.insert(end, before);
            }
        }
        // Ranges starting inside the new one are dropped, or keep their tail.
        let inside: Vec<u64> = self.ranges.range(start..end).map(|(&s, _)| s).collect();
        for old_start in inside {
            let old = self.ranges.remove(&old_start).expect("key just listed");
            if old.end > end {
                self.ranges.insert(end, old);
            }
        }
        self.ranges.insert(start, Code { end, name, source });
    }

    /// Removes the range starting at `start` if it is `[start, start + size)` (a code move's
    /// old place).
    fn remove_exact(&mut self, start: u64, size: u64) -> Option<Arc<str>> {
        match self.ranges.get(&start) {
            Some(code) if code.end == start.wrapping_add(size) => {
                self.ranges.remove(&start).map(|code| code.name)
            }
            _ => None,
        }
    }
}

/// Parses one perf map line, `START SIZE name`, numbers in hex with an optional `0x`.
/// Returns `None` for a malformed line.
///
/// ```
/// use tracekit::symbolize::jit::parse_perf_map_line;
/// assert_eq!(
///     parse_perf_map_line("7f3e1c0a1040 1a8 LazyCompile:*hot /tmp/hot.js:1"),
///     Some((0x7f3e1c0a1040, 0x1a8, "LazyCompile:*hot /tmp/hot.js:1"))
/// );
/// assert_eq!(
///     parse_perf_map_line("0x00007f0b7d0cd7a0 0x00000000000000b8 void Hot.work()"),
///     Some((0x7f0b7d0cd7a0, 0xb8, "void Hot.work()"))
/// );
/// assert_eq!(parse_perf_map_line("zzz 10 f"), None);
/// ```
pub fn parse_perf_map_line(line: &str) -> Option<(u64, u64, &str)> {
    let hex = |text: &str| {
        let digits = text
            .strip_prefix("0x")
            .or_else(|| text.strip_prefix("0X"))
            .unwrap_or(text);
        u64::from_str_radix(digits, 16).ok()
    };
    let line = line.trim_end_matches(['\r', '\n']);
    let (start, rest) = line.trim_start().split_once(char::is_whitespace)?;
    let (size, name) = rest.trim_start().split_once(char::is_whitespace)?;
    let name = name.trim();
    if name.is_empty() {
        return None;
    }
    Some((hex(start)?, hex(size)?, name))
}

/// A JIT symbol file being followed: what was read of it so far, and how far.
#[derive(Debug)]
pub struct JitFile {
    file: File,
    source: JitSource,
    /// Bytes consumed: whole lines of a perf map, whole records of a jitdump.
    consumed: u64,
    /// A jitdump's byte order, known once its header is read.
    dump_header: Option<DumpHeader>,
    /// Code index to name and size, for code moves.
    loads: BTreeMap<u64, Arc<str>>,
    /// Malformed lines or records skipped.
    pub skipped: u64,
    /// A jitdump's `JIT_CODE_CLOSE` was seen: nothing more will come.
    closed: bool,
}

#[derive(Clone, Copy, Debug)]
struct DumpHeader {
    swap: bool,
}

impl JitFile {
    /// Follows `file`, an open perf map or jitdump, from its beginning.
    pub fn new(file: File, source: JitSource) -> Self {
        Self {
            file,
            source,
            consumed: 0,
            dump_header: None,
            loads: BTreeMap::new(),
            skipped: 0,
            closed: false,
        }
    }

    /// The kind of file.
    pub fn source(&self) -> JitSource {
        self.source
    }

    /// Reads what was appended since the last call into `table`. Returns whether anything
    /// new was read. An unreadable file reads as unchanged.
    pub fn refresh(&mut self, table: &mut JitTable) -> bool {
        if self.closed {
            return false;
        }
        let size = match self.file.metadata() {
            Ok(metadata) => metadata.len(),
            Err(_) => return false,
        };
        if size <= self.consumed {
            return false;
        }
        let mut bytes = Vec::with_capacity((size - self.consumed) as usize);
        if self.file.seek(SeekFrom::Start(self.consumed)).is_err()
            || (&mut self.file)
                .take(size - self.consumed)
                .read_to_end(&mut bytes)
                .is_err()
        {
            return false;
        }
        let used = match self.source {
            JitSource::PerfMap => self.read_perf_map(&bytes, table),
            JitSource::JitDump => self.read_jitdump(&bytes, table),
        };
        self.consumed += used as u64;
        used > 0
    }

    /// Reads whole lines; a last line without its newline waits for the next read.
    fn read_perf_map(&mut self, bytes: &[u8], table: &mut JitTable) -> usize {
        let Some(last_newline) = bytes.iter().rposition(|&b| b == b'\n') else {
            return 0;
        };
        let whole = &bytes[..=last_newline];
        for line in whole.split(|&b| b == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let line = String::from_utf8_lossy(line);
            match parse_perf_map_line(&line) {
                Some((start, size, name)) => table.insert(start, size, name, JitSource::PerfMap),
                None => self.skipped += 1,
            }
        }
        whole.len()
    }

    /// Reads whole records (`jitdump-specification.txt`); a record still being written waits
    /// for the next read.
    fn read_jitdump(&mut self, bytes: &[u8], table: &mut JitTable) -> usize {
        let mut at = 0;
        let header = match self.dump_header {
            Some(header) => header,
            None => match parse_dump_header(bytes) {
                Some((header, size)) => {
                    self.dump_header = Some(header);
                    at = size;
                    header
                }
                None => {
                    if bytes.len() >= DUMP_HEADER_BYTES {
                        // Not a jitdump: stop following it.
                        self.closed = true;
                        self.skipped += 1;
                    }
                    return 0;
                }
            },
        };
        let reader = Endian { swap: header.swap };
        while let Some(record) = bytes.get(at..at + RECORD_HEADER_BYTES) {
            let id = reader.u32(record, 0);
            let total = reader.u32(record, 4) as usize;
            if total < RECORD_HEADER_BYTES {
                self.closed = true;
                self.skipped += 1;
                break;
            }
            let Some(body) = bytes.get(at + RECORD_HEADER_BYTES..at + total) else {
                break;
            };
            at += total;
            match id {
                JIT_CODE_LOAD => match parse_code_load(&reader, body) {
                    Some(load) => {
                        let name: Arc<str> = Arc::from(load.name.as_str());
                        self.loads.insert(load.code_index, Arc::clone(&name));
                        table.insert_shared(
                            load.code_addr,
                            load.code_size,
                            name,
                            JitSource::JitDump,
                        );
                    }
                    None => self.skipped += 1,
                },
                JIT_CODE_MOVE => match parse_code_move(&reader, body) {
                    Some(moved) => {
                        let name = table
                            .remove_exact(moved.old_code_addr, moved.code_size)
                            .or_else(|| self.loads.get(&moved.code_index).cloned());
                        match name {
                            Some(name) => table.insert_shared(
                                moved.new_code_addr,
                                moved.code_size,
                                name,
                                JitSource::JitDump,
                            ),
                            None => self.skipped += 1,
                        }
                    }
                    None => self.skipped += 1,
                },
                JIT_CODE_CLOSE => {
                    self.closed = true;
                    break;
                }
                // Debug info (source lines), unwinding info, and future record kinds.
                _ => {}
            }
        }
        at
    }
}

/// `'JiTD'` as the writer's native `u32`.
const JITDUMP_MAGIC: u32 = 0x4a69_5444;
const DUMP_HEADER_BYTES: usize = 40;
const RECORD_HEADER_BYTES: usize = 16;
const JIT_CODE_LOAD: u32 = 0;
const JIT_CODE_MOVE: u32 = 1;
const JIT_CODE_CLOSE: u32 = 3;

struct Endian {
    swap: bool,
}

impl Endian {
    fn u32(&self, bytes: &[u8], at: usize) -> u32 {
        let raw = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        if self.swap { raw.swap_bytes() } else { raw }
    }

    fn u64(&self, bytes: &[u8], at: usize) -> u64 {
        let raw = u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        if self.swap { raw.swap_bytes() } else { raw }
    }
}

/// The file header: magic, version, header size, machine, pad, pid, timestamp, flags.
fn parse_dump_header(bytes: &[u8]) -> Option<(DumpHeader, usize)> {
    let head = bytes.get(..DUMP_HEADER_BYTES)?;
    let magic = u32::from_le_bytes(head[..4].try_into().ok()?);
    let swap = match magic {
        JITDUMP_MAGIC => false,
        m if m.swap_bytes() == JITDUMP_MAGIC => true,
        _ => return None,
    };
    let header = DumpHeader { swap };
    let size = (Endian { swap }.u32(head, 8) as usize).max(DUMP_HEADER_BYTES);
    bytes.get(..size)?;
    Some((header, size))
}

struct CodeLoad {
    code_addr: u64,
    code_size: u64,
    code_index: u64,
    name: String,
}

/// `JIT_CODE_LOAD`: pid, tid (u32), vma, code_addr, code_size, code_index (u64), name\0, code.
fn parse_code_load(reader: &Endian, body: &[u8]) -> Option<CodeLoad> {
    let fixed = body.get(..40)?;
    let name_bytes = &body[40..];
    let end = name_bytes.iter().position(|&b| b == 0)?;
    Some(CodeLoad {
        code_addr: reader.u64(fixed, 16),
        code_size: reader.u64(fixed, 24),
        code_index: reader.u64(fixed, 32),
        name: String::from_utf8_lossy(&name_bytes[..end]).into_owned(),
    })
}

struct CodeMove {
    old_code_addr: u64,
    new_code_addr: u64,
    code_size: u64,
    code_index: u64,
}

/// `JIT_CODE_MOVE`: pid, tid (u32), vma, old_code_addr, new_code_addr, code_size, code_index.
fn parse_code_move(reader: &Endian, body: &[u8]) -> Option<CodeMove> {
    let fixed = body.get(..48)?;
    Some(CodeMove {
        old_code_addr: reader.u64(fixed, 16),
        new_code_addr: reader.u64(fixed, 24),
        code_size: reader.u64(fixed, 32),
        code_index: reader.u64(fixed, 40),
    })
}

/// The file name of a jitdump: `jit-PID.dump`, `PID` as the process sees itself.
pub fn jitdump_name(ns_pid: u32) -> String {
    format!("jit-{ns_pid}.dump")
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    fn names(table: &JitTable) -> Vec<(u64, u64, String)> {
        table
            .ranges
            .iter()
            .map(|(&start, code)| (start, code.end, code.name.to_string()))
            .collect()
    }

    #[test]
    fn newest_definition_wins() {
        let mut table = JitTable::default();
        table.insert(0x100, 0x200, "old", JitSource::PerfMap);
        table.insert(0x150, 0x50, "mid", JitSource::PerfMap);
        assert_eq!(
            names(&table),
            [
                (0x100, 0x150, "old".into()),
                (0x150, 0x1a0, "mid".into()),
                (0x1a0, 0x300, "old".into())
            ]
        );
        table.insert(0x0f0, 0x100, "over", JitSource::PerfMap);
        assert_eq!(
            names(&table),
            [(0x0f0, 0x1f0, "over".into()), (0x1f0, 0x300, "old".into())]
        );
        assert_eq!(table.lookup(0x1f0), Some(("old", JitSource::PerfMap)));
        assert_eq!(table.lookup(0x300), None);
        assert_eq!(table.lookup(0x0ef), None);
        table.insert(0x400, 0, "empty", JitSource::PerfMap);
        assert_eq!(table.lookup(0x400), None);
    }

    #[test]
    fn perf_map_is_read_incrementally_by_whole_lines() {
        let dir = std::env::temp_dir().join(format!("tk-jit-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("perf-1.map");
        let mut writer = File::create(&path).unwrap();
        write!(writer, "1000 10 first\nbad line\n2000 20 sec").unwrap();
        let mut followed = JitFile::new(File::open(&path).unwrap(), JitSource::PerfMap);
        let mut table = JitTable::default();
        assert!(followed.refresh(&mut table));
        assert_eq!(table.lookup(0x1005), Some(("first", JitSource::PerfMap)));
        assert_eq!(table.lookup(0x2005), None, "a partial line waits");
        assert_eq!(followed.skipped, 1);
        assert!(!followed.refresh(&mut table));
        writeln!(writer, "ond one").unwrap();
        assert!(followed.refresh(&mut table));
        assert_eq!(
            table.lookup(0x2005),
            Some(("second one", JitSource::PerfMap))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn record(id: u32, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&((RECORD_HEADER_BYTES + body.len()) as u32).to_le_bytes());
        out.extend_from_slice(&7u64.to_le_bytes());
        out.extend_from_slice(body);
        out
    }

    fn load(addr: u64, size: u64, index: u64, name: &str) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&9u32.to_le_bytes());
        body.extend_from_slice(&9u32.to_le_bytes());
        for value in [addr, addr, size, index] {
            body.extend_from_slice(&value.to_le_bytes());
        }
        body.extend_from_slice(name.as_bytes());
        body.push(0);
        body.extend(std::iter::repeat_n(0xcc, size as usize));
        record(JIT_CODE_LOAD, &body)
    }

    fn moved(old: u64, new: u64, size: u64, index: u64) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&9u32.to_le_bytes());
        body.extend_from_slice(&9u32.to_le_bytes());
        for value in [new, old, new, size, index] {
            body.extend_from_slice(&value.to_le_bytes());
        }
        record(JIT_CODE_MOVE, &body)
    }

    fn dump_header() -> Vec<u8> {
        let mut out = Vec::new();
        for value in [JITDUMP_MAGIC, 1, DUMP_HEADER_BYTES as u32, 62, 0, 9] {
            out.extend_from_slice(&value.to_le_bytes());
        }
        out.extend_from_slice(&0u64.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
        out
    }

    #[test]
    fn jitdump_loads_moves_and_close() {
        let dir = std::env::temp_dir().join(format!("tk-jitdump-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("jit-9.dump");
        let mut writer = File::create(&path).unwrap();
        writer.write_all(&dump_header()).unwrap();
        writer.write_all(&load(0x5000, 0x40, 1, "JS:*hot")).unwrap();
        let second = load(0x6000, 0x20, 2, "JS:cold");
        writer.write_all(&second[..30]).unwrap();
        let mut followed = JitFile::new(File::open(&path).unwrap(), JitSource::JitDump);
        let mut table = JitTable::default();
        assert!(followed.refresh(&mut table));
        assert_eq!(table.lookup(0x503f), Some(("JS:*hot", JitSource::JitDump)));
        assert_eq!(table.lookup(0x6000), None, "a partial record waits");
        writer.write_all(&second[30..]).unwrap();
        writer.write_all(&moved(0x5000, 0x7000, 0x40, 1)).unwrap();
        writer.write_all(&record(JIT_CODE_CLOSE, &[])).unwrap();
        writer
            .write_all(&load(0x8000, 0x10, 3, "after close"))
            .unwrap();
        assert!(followed.refresh(&mut table));
        assert_eq!(table.lookup(0x6010), Some(("JS:cold", JitSource::JitDump)));
        assert_eq!(table.lookup(0x5000), None, "moved away");
        assert_eq!(table.lookup(0x7010), Some(("JS:*hot", JitSource::JitDump)));
        assert_eq!(table.lookup(0x8000), None, "after JIT_CODE_CLOSE");
        assert_eq!(followed.skipped, 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn not_a_jitdump_is_dropped() {
        let mut followed = JitFile::new(File::open("/proc/self/exe").unwrap(), JitSource::JitDump);
        let mut table = JitTable::default();
        assert!(!followed.refresh(&mut table));
        assert!(table.is_empty());
        assert_eq!(followed.skipped, 1);
    }

    #[test]
    fn jitdump_names() {
        assert_eq!(jitdump_name(42), "jit-42.dump");
    }
}
