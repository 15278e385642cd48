use super::*;

#[test]
fn versions_from_names_and_hex() {
    assert_eq!(minor_from_name("/usr/bin/python3.11"), Some(11));
    assert_eq!(
        minor_from_name("/root/.pyenv/versions/3.8.18/lib/libpython3.8.so.1.0"),
        Some(8)
    );
    assert_eq!(minor_from_name("/usr/lib/libpython3.7m.so.1.0"), Some(7));
    assert_eq!(minor_from_name("/usr/bin/python3"), None);
    assert_eq!(minor_from_name("/usr/bin/ruby3.1"), None);
    assert_eq!(minor_from_hex(0x030b_07f0), Some(11));
    assert_eq!(minor_from_hex(0x0201_0000), None);
}

/// pyenv's 3.13.0 states in its own `_Py_DebugOffsets` the offsets the table has.
#[test]
fn debug_offsets_of_3_13_match_the_table() {
    let path = "/root/.pyenv/versions/3.13.0/lib/libpython3.13.so.1.0";
    if !std::path::Path::new(path).exists() {
        eprintln!("skipped: no {path}");
        return;
    }
    use blazesym::inspect::{Inspector, source::Elf, source::Source};
    let inspector = Inspector::new();
    let found = inspector
        .lookup(&Source::Elf(Elf::new(path)), &["_PyRuntime"])
        .unwrap();
    let offset = found[0][0].file_offset.unwrap() as usize;
    let data = std::fs::read(path).unwrap();
    let table = *version(13).unwrap();
    let bytes = &data[offset..offset + DEBUG_OFFSETS_BYTES];
    let stated = apply_debug_offsets(table, bytes).unwrap();
    assert_eq!(stated, table);
    // Another version's layout is not guessed.
    let mut other = table;
    other.minor = 15;
    assert!(apply_debug_offsets(other, bytes).is_err());
    assert!(apply_debug_offsets(table, &[0; DEBUG_OFFSETS_BYTES]).is_err());
}

/// Debian's 3.14.10 states in its `_Py_DebugOffsets` (its first 656 bytes of `_PyRuntime`,
/// kept under `tests/data`) the offsets 3.14's table has; read with 3.13's field positions
/// they would be other offsets.
#[test]
fn debug_offsets_of_3_14_match_the_table() {
    let bytes = include_bytes!("../../../../tests/data/python/debug_offsets-3.14.10");
    assert_eq!(bytes.len(), DEBUG_OFFSETS_BYTES);
    let table = *version(14).unwrap();
    assert_eq!(apply_debug_offsets(table, bytes), Ok(table));
    let as_3_13 = Version { minor: 13, ..table };
    assert_ne!(apply_debug_offsets(as_3_13, bytes), Ok(as_3_13));
}

/// CPython 3.11 objects planted in this process's own memory, read back as the traced
/// process's are (`process_vm_readv`): a code object whose name, qualified name and file
/// are compact ASCII `str`s, and whose line table is a `bytes`. Each object is 8-aligned
/// words; the types are the addresses of two words of their own.
struct Planted {
    code: Box<[u64; 32]>,
    /// Boxed: each keeps its address as the vector grows.
    #[allow(clippy::vec_box)]
    strings: Vec<Box<[u64; 16]>>,
    table: Box<[u64; 8]>,
    types: Box<[u64; 2]>,
}

impl Planted {
    /// `name` in `file`, first line `first_line`, its ob_type the code type.
    fn new(name: &[u8], file: &[u8], first_line: i32) -> Self {
        let mut planted = Self {
            code: Box::new([0; 32]),
            strings: Vec::new(),
            table: Box::new([0; 8]),
            types: Box::new([0; 2]),
        };
        planted.code[1] = planted.code_type();
        // One location entry (code 13: no columns) of 8 units on the first line.
        planted.table[2] = 2;
        planted.table[4] = u64::from_le_bytes([0x80 | (13 << 3) | 7, 0, 0, 0, 0, 0, 0, 0]);
        planted.code[136 / 8] = &*planted.table as *const _ as u64;
        planted.set_first_line(first_line);
        planted.set_name(name);
        planted.set_file(file);
        planted
    }

    fn code_type(&self) -> u64 {
        &self.types[0] as *const u64 as u64
    }

    fn unicode_type(&self) -> u64 {
        &self.types[1] as *const u64 as u64
    }

    fn address(&self) -> u64 {
        &*self.code as *const _ as u64
    }

    /// A compact ASCII `str` of `text` (up to 80 bytes), flagged ASCII whatever it holds.
    fn string(&mut self, text: &[u8]) -> u64 {
        let mut object = Box::new([0u64; 16]);
        object[1] = self.unicode_type();
        object[2] = text.len() as u64;
        // state: kind 1, compact, ascii.
        object[4] = (1 << 2) | (1 << 5) | (1 << 6);
        let mut bytes = [0u8; 80];
        bytes[..text.len()].copy_from_slice(text);
        for (word, chunk) in object[6..].iter_mut().zip(bytes.chunks_exact(8)) {
            *word = u64::from_le_bytes(chunk.try_into().unwrap());
        }
        let address = &*object as *const _ as u64;
        self.strings.push(object);
        address
    }

    fn set_name(&mut self, name: &[u8]) {
        let name = self.string(name);
        self.code[120 / 8] = name;
        self.code[128 / 8] = name;
    }

    fn set_file(&mut self, file: &[u8]) {
        let file = self.string(file);
        self.code[112 / 8] = file;
    }

    fn set_first_line(&mut self, line: i32) {
        self.code[72 / 8] = u64::from(line as u32);
    }

    fn reader(&self) -> Reader {
        Reader {
            version: *version(11).unwrap(),
            code_type: self.code_type(),
            unicode_type: self.unicode_type(),
        }
    }

    /// The generation the kernel computes of the code object as it is now.
    fn generation(&self) -> u16 {
        tracekit_common::interp::python::code_generation(
            self.code[72 / 8] as u32 as i32,
            self.code[120 / 8],
            self.code[112 / 8],
        )
    }

    fn read(&self, generation: Option<u16>) -> Result<CodeInfo, Rejected> {
        read_code(
            std::process::id(),
            &self.reader(),
            self.address(),
            generation,
        )
    }
}

/// What is read of a code object names a frame only when it is one: a planted object
/// whose ob_type is not `PyCode_Type`, whose name is no text, or whose first line is not
/// positive is rejected with its reason.
#[test]
fn planted_code_objects_are_checked_before_they_name() {
    let mut planted = Planted::new(b"middle", b"/srv/app/chain.py", 17);
    let info = planted.read(None).unwrap();
    assert_eq!(
        (info.name.as_str(), info.file.as_str()),
        ("middle", "/srv/app/chain.py")
    );
    assert_eq!((info.first_line, info.line(3)), (17, 17));
    assert_eq!(planted.read(Some(planted.generation())), Ok(info));
    // Freed: the allocator's free-list link where ob_type was.
    planted.code[1] = 0x7f00_dead_0000;
    assert_eq!(planted.read(None), Err(Rejected::NotCode));
    planted.code[1] = planted.code_type();
    // Raw bytes flagged ASCII, and a name of no characters.
    planted.set_name(&[0xe0, 0x80, 0x9f, 0x41]);
    assert_eq!(planted.read(None), Err(Rejected::BadName));
    planted.set_name(b"");
    assert_eq!(planted.read(None), Err(Rejected::BadName));
    planted.set_name(b"middle");
    planted.set_first_line(-499_442_624);
    assert_eq!(planted.read(None), Err(Rejected::BadLine));
    planted.set_first_line(17);
    assert!(planted.read(None).is_ok());
}

/// A code object freed and its address taken by another: read with the first's
/// generation, the second is rejected; its own key (the address and its generation, as
/// the kernel announces a later generation) reads it.
#[test]
fn a_reused_address_reads_only_the_generation_asked() {
    use tracekit_common::interp::python::code_key;
    let mut planted = Planted::new(b"<module>", b"<string>", 1);
    let first = planted.generation();
    assert_eq!(planted.read(Some(first)).unwrap().name, "<module>");
    planted.set_name(b"middle");
    planted.set_first_line(17);
    let second = planted.generation();
    assert_ne!(first, second);
    assert_eq!(planted.read(Some(first)), Err(Rejected::Changed));
    let (pid, reader) = (std::process::id(), planted.reader());
    let keyed = |generation| read_code(pid, &reader, code_key(planted.address(), generation), None);
    assert_eq!(keyed(second).unwrap().name, "middle");
    assert_eq!(keyed(first), Err(Rejected::Changed));
}

/// A thread of this process, standing for a traced process: its id reads this process's
/// memory, and no other test registers it. It ends when the sender is dropped.
fn stand_in_process() -> (u32, std::sync::mpsc::Sender<()>) {
    let (tid_to, tid) = std::sync::mpsc::channel();
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        // SAFETY: no arguments; returns the calling thread's id.
        tid_to.send(unsafe { libc::gettid() } as u32).unwrap();
        let _ = stopped.recv();
    });
    (tid.recv().unwrap(), stop)
}

/// End to end, as the kernel records and announces them: a start-up code object's frames,
/// then those of another code object at its address (recorded with their generation word,
/// announced as its key), each named by its own object; a frame of an object whose ob_type
/// is not `PyCode_Type` is `[unknown]`, its reason counted for `-v`.
#[test]
fn frames_of_a_reused_address_are_named_by_their_own_object() {
    use std::sync::Arc;
    use tracekit_common::interp::{
        CodeKey, encode_frame,
        python::{code_key, encode_generation},
        runtime as tags,
    };

    use super::super::{frames, registry, runtime::Runtime as _, splice};
    let (pid, _stop) = stand_in_process();
    let mut planted = Planted::new(b"<module>", b"<string>", 1);
    registry::register(pid, Arc::new(planted.reader()));
    let announce = |code: u64, generation: u16| {
        PYTHON.announced(&CodeKey {
            pid,
            runtime: u16::from(tags::PYTHON),
            generation,
            code,
        })
    };
    let address = planted.address();
    announce(address, planted.generation());
    // Freed; another code object takes the address.
    planted.set_name(b"middle");
    planted.set_file(b"/srv/app/chain.py");
    planted.set_first_line(17);
    let second = planted.generation();
    announce(code_key(address, second), second);
    let word = encode_frame(tags::PYTHON, address, 2);
    let named = |next: Option<u64>| -> Vec<String> {
        frames(pid, word, next, false)
            .into_iter()
            .map(|frame| frame.symbol)
            .collect()
    };
    assert_eq!(
        named(Some(encode_generation(second))),
        ["middle (/srv/app/chain.py:17)"]
    );
    assert_eq!(named(None), ["<module> (<string>:1)"]);
    // The generation word is no frame of its own.
    let spliced = splice(pid, &[word, encode_generation(second)], |_| Vec::new());
    let symbols: Vec<&str> = spliced.iter().map(|frame| frame.symbol.as_str()).collect();
    assert_eq!(symbols, ["middle (/srv/app/chain.py:17)"]);
    // Not a code object: [unknown] in [python], counted.
    let before = checks::counted(Rejected::NotCode);
    let mut other = Planted::new(b"leaf", b"/srv/app/chain.py", 9);
    other.code[1] = planted.unicode_type();
    let word = encode_frame(tags::PYTHON, other.address(), 0);
    let frame = &frames(pid, word, None, true)[0];
    assert_eq!(frame.symbol, crate::stacks::UNKNOWN_SYMBOL);
    assert_eq!(frame.module.as_deref(), Some(MODULE));
    assert!(checks::counted(Rejected::NotCode) > before);
    assert!(checks::report().contains("not a code object (ob_type is not PyCode_Type)"));
    registry::registry().processes.remove(&pid);
}
