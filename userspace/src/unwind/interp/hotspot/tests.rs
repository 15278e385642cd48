use super::*;

/// A process image: one flat buffer at `BASE`.
struct Image(Vec<u8>);

const BASE: u64 = 0x10_0000;

impl Memory for Image {
    fn read(&self, address: u64, length: usize) -> Option<Vec<u8>> {
        let start = usize::try_from(address.checked_sub(BASE)?).ok()?;
        // Reads past the end come back short-filled with zeros only up to the buffer's end.
        let end = (start + length).min(self.0.len());
        (start < end).then(|| {
            let mut out = self.0[start..end].to_vec();
            out.resize(length, 0);
            out
        })
    }
}

impl Image {
    fn put(&mut self, at: u64, bytes: &[u8]) {
        let start = (at - BASE) as usize;
        if self.0.len() < start + bytes.len() {
            self.0.resize(start + bytes.len(), 0);
        }
        self.0[start..start + bytes.len()].copy_from_slice(bytes);
    }

    fn set_u64(&mut self, at: u64, value: u64) {
        self.put(at, &value.to_le_bytes());
    }

    /// Appends a C string in the string area, returning its address.
    fn string(&mut self, next: &mut u64, text: &str) -> u64 {
        let at = *next;
        let mut bytes = text.as_bytes().to_vec();
        bytes.push(0);
        self.put(at, &bytes);
        *next += bytes.len() as u64;
        at
    }
}

/// Globals at 0x10_0000.., entries at 0x10_1000 (structs), 0x10_8000 (types), 0x10_9000
/// (int constants), strings at 0x11_0000: the JDK 17 entry layouts (stride 48 and 40, 16).
fn image(
    fields: &[(&str, &str, bool, u64)],
    types: &[(&str, u64)],
    ints: &[(&str, i32)],
) -> (Image, HashMap<String, u64>) {
    let mut memory = Image(Vec::new());
    let mut globals = HashMap::new();
    let mut strings = 0x11_0000u64;
    let layout = [
        ("gHotSpotVMStructEntryTypeNameOffset", 0),
        ("gHotSpotVMStructEntryFieldNameOffset", 8),
        ("gHotSpotVMStructEntryTypeStringOffset", 16),
        ("gHotSpotVMStructEntryIsStaticOffset", 24),
        ("gHotSpotVMStructEntryOffsetOffset", 32),
        ("gHotSpotVMStructEntryAddressOffset", 40),
        ("gHotSpotVMStructEntryArrayStride", 48),
        ("gHotSpotVMTypeEntryTypeNameOffset", 0),
        ("gHotSpotVMTypeEntrySuperclassNameOffset", 8),
        ("gHotSpotVMTypeEntryIsOopTypeOffset", 16),
        ("gHotSpotVMTypeEntryIsIntegerTypeOffset", 20),
        ("gHotSpotVMTypeEntryIsUnsignedOffset", 24),
        ("gHotSpotVMTypeEntrySizeOffset", 32),
        ("gHotSpotVMTypeEntryArrayStride", 40),
        ("gHotSpotVMIntConstantEntryNameOffset", 0),
        ("gHotSpotVMIntConstantEntryValueOffset", 8),
        ("gHotSpotVMIntConstantEntryArrayStride", 16),
        ("gHotSpotVMStructs", 0x10_1000),
        ("gHotSpotVMTypes", 0x10_8000),
        ("gHotSpotVMIntConstants", 0x10_9000),
    ];
    for (i, (name, value)) in layout.iter().enumerate() {
        let at = BASE + 8 * i as u64;
        memory.set_u64(at, *value);
        globals.insert(name.to_string(), at);
    }
    for (i, (type_name, field, is_static, value)) in fields.iter().enumerate() {
        let entry = 0x10_1000 + 48 * i as u64;
        let type_ptr = memory.string(&mut strings, type_name);
        let field_ptr = memory.string(&mut strings, field);
        memory.set_u64(entry, type_ptr);
        memory.set_u64(entry + 8, field_ptr);
        memory.put(entry + 24, &i32::from(*is_static).to_le_bytes());
        memory.set_u64(entry + if *is_static { 40 } else { 32 }, *value);
    }
    memory.set_u64(0x10_1000 + 48 * fields.len() as u64, 0);
    for (i, (name, size)) in types.iter().enumerate() {
        let entry = 0x10_8000 + 40 * i as u64;
        let name_ptr = memory.string(&mut strings, name);
        memory.set_u64(entry, name_ptr);
        memory.set_u64(entry + 32, *size);
    }
    memory.set_u64(0x10_8000 + 40 * types.len() as u64, 0);
    for (i, (name, value)) in ints.iter().enumerate() {
        let entry = 0x10_9000 + 16 * i as u64;
        let name_ptr = memory.string(&mut strings, name);
        memory.set_u64(entry, name_ptr);
        memory.put(entry + 8, &value.to_le_bytes());
    }
    memory.set_u64(0x10_9000 + 16 * ints.len() as u64, 0);
    (memory, globals)
}

/// The fields a JDK 17 x86_64 libjvm.so (Debian 17.0.15) states, with its instance offsets
/// (as `a_running_jvm_gives_its_layout` read them); the static addresses are made up.
const JDK17: &[(&str, &str, bool, u64)] = &[
    ("CodeCache", "_heaps", true, 0x7f00_0000_1000),
    ("CodeCache", "_low_bound", true, 0x7f00_0000_1008),
    ("CodeCache", "_high_bound", true, 0x7f00_0000_1010),
    ("GrowableArrayBase", "_len", false, 0),
    ("GrowableArray<int>", "_data", false, 8),
    ("CodeHeap", "_memory", false, 0x8),
    ("CodeHeap", "_segmap", false, 0x78),
    ("CodeHeap", "_log2_segment_size", false, 0x100),
    ("VirtualSpace", "_low", false, 0x10),
    ("VirtualSpace", "_high", false, 0x18),
    ("CodeBlob", "_name", false, 0x60),
    ("CodeBlob", "_frame_size", false, 0x1c),
    ("CodeBlob", "_code_begin", false, 0x20),
    ("CodeBlob", "_size", false, 0xc),
    ("CompiledMethod", "_method", false, 0x70),
    ("Method", "_constMethod", false, 0x8),
    ("ConstMethod", "_constants", false, 0x8),
    ("ConstMethod", "_name_index", false, 0x22),
    ("ConstMethod", "_signature_index", false, 0x24),
    ("ConstantPool", "_pool_holder", false, 0x18),
    ("Klass", "_name", false, 0x18),
    ("Symbol", "_length", false, 0x4),
    ("Symbol", "_body", false, 0x6),
];

#[test]
fn a_jdk17_table_gives_every_offset() {
    let (memory, globals) = image(
        JDK17,
        &[("ConstantPool", 0x48), ("Method", 0x58)],
        &[("frame::interpreter_frame_last_sp_offset", -2)],
    );
    let tables = read_vmstructs(&memory, &|name| globals[name]).unwrap();
    assert_eq!(tables.fields.len(), JDK17.len());
    assert_eq!(
        tables.fields["CodeCache::_heaps"],
        Field::Static(0x7f00_0000_1000)
    );
    assert_eq!(tables.fields["CodeBlob::_frame_size"], Field::Offset(0x1c));
    assert_eq!(tables.sizes["Method"], 0x58);
    let layout = Layout::of(&tables).unwrap();
    assert_eq!(layout.code_cache_heaps, 0x7f00_0000_1000);
    assert_eq!(
        layout.code_cache_bounds,
        (0x7f00_0000_1008, 0x7f00_0000_1010)
    );
    assert_eq!(layout.code_heap, (0x8, 0x78, 0x100));
    assert_eq!(layout.code_blob, (0x60, 0x1c, 0x20, 0xc));
    assert!(!layout.code_begin_is_offset);
    assert_eq!(layout.nmethod_method, 0x70);
    assert_eq!(layout.const_method, (0x8, 0x22, 0x24));
    assert_eq!(layout.constant_pool, (0x18, 0x48));
    assert_eq!(layout.symbol, (0x4, 0x6));
    assert_eq!(layout.interpreter_frame, (-3, -8));
}

#[test]
fn a_jdk8_table_takes_the_older_names() {
    let mut fields: Vec<_> = JDK17
        .iter()
        .filter(|(t, f, ..)| {
            !matches!(
                (*t, *f),
                ("CodeBlob", "_code_begin") | ("CompiledMethod", _) | ("GrowableArrayBase", _)
            )
        })
        .copied()
        .collect();
    fields.push(("CodeBlob", "_code_offset", false, 0x18));
    fields.push(("nmethod", "_method", false, 0x60));
    fields.push(("GenericGrowableArray", "_len", false, 0x4));
    let (memory, globals) = image(&fields, &[("ConstantPool", 0x50)], &[]);
    let tables = read_vmstructs(&memory, &|name| globals[name]).unwrap();
    let layout = Layout::of(&tables).unwrap();
    assert!(layout.code_begin_is_offset);
    assert_eq!(layout.code_blob.2, 0x18);
    assert_eq!(layout.nmethod_method, 0x60);
    assert_eq!(layout.growable_array.0, 0x4);
    // No frame constant: x86_64's known slots.
    assert_eq!(layout.interpreter_frame, (-3, -8));
}

#[test]
fn missing_fields_are_named() {
    let fields: Vec<_> = JDK17
        .iter()
        .filter(|(t, ..)| *t != "Symbol")
        .copied()
        .collect();
    let (memory, globals) = image(&fields, &[], &[]);
    let tables = read_vmstructs(&memory, &|name| globals[name]).unwrap();
    let err = Layout::of(&tables).unwrap_err();
    assert_eq!(
        err,
        "HotSpot layout incomplete: Symbol::_length, Symbol::_body, sizeof(ConstantPool) missing"
    );
}

#[test]
fn a_jvm_not_yet_started_says_so() {
    let (mut memory, globals) = image(JDK17, &[], &[]);
    memory.set_u64(globals["gHotSpotVMStructEntryArrayStride"], 0);
    let err = read_vmstructs(&memory, &|name| globals[name]).unwrap_err();
    assert!(err.contains("has not started yet"), "{err}");
}

#[test]
fn an_unreadable_table_names_the_entry() {
    let (memory, mut globals) = image(JDK17, &[], &[]);
    // gHotSpotVMStructs points outside the image.
    let bogus = BASE + 0x20_0000;
    globals.insert("gHotSpotVMStructs".into(), bogus);
    let err = read_vmstructs(&memory, &|name| globals[name]).unwrap_err();
    assert_eq!(err, "gHotSpotVMStructs is unreadable");
}

/// A real JVM (when `java` is installed): its libjvm.so is detected and the layout read
/// from its memory has plausible offsets.
#[test]
fn a_running_jvm_gives_its_layout() {
    let Ok(java) = std::process::Command::new("java")
        .args(["-Xint", "-XX:+UseSerialGC", "-Xshare:auto", "-version"])
        .output()
    else {
        eprintln!("skipped: no java on PATH (HotSpot's layout cannot be read)");
        return;
    };
    assert!(java.status.success());
    // jshell-free way to keep a JVM alive: a source-file launch that sleeps.
    let dir = std::env::temp_dir().join(format!("tk-hotspot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("Sleep.java");
    std::fs::write(
        &source,
        "public class Sleep { public static void main(String[] a) throws Exception { \
         System.out.println(\"ready\"); Thread.sleep(60000); } }",
    )
    .unwrap();
    let mut child = std::process::Command::new("java")
        .arg(&source)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "ready");
    let pid = child.id();
    let result = (|| {
        let mappings = crate::unwind::process::exec_mappings(pid).map_err(|e| e.to_string())?;
        for mapping in &mappings {
            let crate::unwind::process::Backing::File { path, .. } = &mapping.backing else {
                continue;
            };
            if !is_libjvm(path.rsplit('/').next().unwrap_or(path)) {
                continue;
            }
            let link = format!(
                "/proc/{pid}/map_files/{:x}-{:x}",
                mapping.begin, mapping.end
            );
            let Some(binary) = detect(std::path::Path::new(&link)).binary::<Binary>() else {
                return Err(format!("{path} not detected"));
            };
            let (layout, summary) = probe(pid, &binary, mapping).map_err(|e| e.reason)?;
            let (low, high) = layout.code_cache_bounds;
            let bounds = (Process(pid).u64(low), Process(pid).u64(high));
            return Ok((layout, summary, bounds));
        }
        Err("no libjvm.so mapped".to_string())
    })();
    child.kill().ok();
    child.wait().ok();
    std::fs::remove_dir_all(&dir).ok();
    let (layout, summary, bounds) = result.unwrap();
    eprintln!("{summary}\n{layout:x?}");
    assert!(summary.starts_with("HotSpot layout read ("), "{summary}");
    assert_eq!(layout.interpreter_frame, (-3, -8));
    assert!(layout.constant_pool.1 >= 0x40, "{layout:?}");
    // JDK 17 states where lines and source files are.
    let lines = layout.lines.expect("the line layout");
    assert!(lines.source_file_index.is_some(), "{lines:?}");
    // The code cache's bounds, read through the static fields' addresses, are a range.
    let (Some(low), Some(high)) = bounds else {
        panic!("code cache bounds unreadable: {bounds:?}");
    };
    assert!(0 < low && low < high, "{low:#x}..{high:#x}");
    // Its heaps (1, or 3 when segmented) are inside those bounds, each with a segment map.
    let cache = layout.code_cache.expect("the code heaps");
    assert!((1..=3).contains(&cache.count), "{cache:?}");
    for heap in &cache.heaps[..cache.count as usize] {
        assert!(
            low <= heap.low && heap.high <= high && heap.segmap != 0,
            "{cache:?}"
        );
    }
    assert_eq!(cache.heap_block_size, 16);
}

/// A `Symbol` at `at` holding `text` (JDK 17: `_length` at 4, `_body` at 6).
fn put_symbol(memory: &mut Image, at: u64, text: &str) {
    memory.put(at + 4, &(text.len() as u16).to_le_bytes());
    memory.put(at + 6, text.as_bytes());
}

/// A `Method*` whose class was unloaded and whose metaspace a class of the same
/// shape took (the JReuse fixture's `P0` then `P1`: the same `ConstMethod`, pool and
/// indexes, another class name) is named by the method of the frame's fingerprint, or not
/// at all: never by the method that holds it now.
#[test]
fn a_reused_method_is_named_only_by_its_own_fingerprint() {
    use tracekit_common::interp::hotspot::{fingerprint, method_key};
    let (mut memory, globals) = image(JDK17, &[("ConstantPool", 0x48)], &[]);
    let tables = read_vmstructs(&memory, &|name| globals[name]).unwrap();
    let mut layout = Layout::of(&tables).unwrap();
    layout.lines = None;
    let (method, const_method, pool, klass) = (0x12_0000, 0x12_1000, 0x12_2000, 0x12_3000);
    let (run, p0, p1) = (0x12_4000, 0x12_4100, 0x12_4200);
    memory.set_u64(method + 0x8, const_method);
    memory.set_u64(const_method + 0x8, pool);
    memory.put(const_method + 0x22, &2u16.to_le_bytes());
    memory.put(const_method + 0x24, &3u16.to_le_bytes());
    memory.set_u64(pool + 0x18, klass);
    memory.set_u64(pool + 0x48 + 8 * 2, run);
    memory.set_u64(klass + 0x18, p0);
    put_symbol(&mut memory, run, "run");
    put_symbol(&mut memory, p0, "JReuse$P0");
    put_symbol(&mut memory, p1, "JReuse$P1");
    let first = fingerprint(const_method, pool, p0, 2, 3);
    assert_eq!(method_fingerprint(&memory, &layout, method), Some(first));
    let name = |memory: &Image, key| read_method_key(memory, &layout, key).map(|info| info.name);
    assert_eq!(
        name(&memory, method_key(method, first)).as_deref(),
        Some("JReuse$P0.run")
    );
    // P0 unloaded, P1 laid out in its place: only its class's name differs.
    memory.set_u64(klass + 0x18, p1);
    let second = fingerprint(const_method, pool, p1, 2, 3);
    assert_ne!(first, second);
    assert_eq!(method_fingerprint(&memory, &layout, method), Some(second));
    assert_eq!(name(&memory, method_key(method, first)), None);
    assert_eq!(
        name(&memory, method_key(method, second)).as_deref(),
        Some("JReuse$P1.run")
    );
    // A bare Method* (a frame whose fingerprint word was cut off) is no method key.
    assert_eq!(name(&memory, method), None);
    // Unreadable metadata: no fingerprint, no name.
    assert_eq!(method_fingerprint(&memory, &layout, 0x40_0000), None);
    assert_eq!(name(&memory, method_key(0x40_0000, first)), None);
}

/// The code object of each word of a recorded stack: an interpreted HotSpot frame is named
/// by its `Method*` and the fingerprint in the word after it.
#[test]
fn interpreted_frames_are_keyed_by_their_fingerprint_word() {
    use tracekit_common::interp::{
        encode_frame,
        hotspot::{encode_fingerprint, method_key},
    };
    let method = 0x7f10_0000_2b10;
    let frame = encode_frame(runtime::HOTSPOT, method, 12);
    let fingerprint = encode_fingerprint(Some(0x1234));
    assert_eq!(
        frame_code(frame, Some(fingerprint)),
        Some(method_key(method, 0x1234))
    );
    assert_eq!(
        frame_code(frame, Some(fingerprint)),
        Some(0x8246_8FE2_0000_0562)
    );
    // Its fingerprint was unreadable: named by nothing.
    assert_eq!(frame_code(frame, Some(encode_fingerprint(None))), None);
    // Cut off at the stack's end, or followed by another frame: the bare Method*.
    assert_eq!(frame_code(frame, None), Some(method));
    assert_eq!(frame_code(frame, Some(0x40_1000)), Some(method));
    // The fingerprint word itself and native addresses name nothing.
    assert_eq!(frame_code(fingerprint, Some(0x40_1000)), None);
    assert_eq!(frame_code(0x40_1000, None), None);
    // Compiled frames and other runtimes: their code pointer.
    let python = encode_frame(runtime::PYTHON, 0x7f00_1000, 4);
    assert_eq!(frame_code(python, Some(fingerprint)), Some(0x7f00_1000));
}

/// JDK 17's interpreter frame slots on both architectures: x86_64 states its last sp slot,
/// arm64 states none (its `Method*` at x29 - 24, its bcp at x29 - 72).
#[test]
fn interpreter_frames_are_laid_out_per_architecture() {
    assert_eq!(interpreter_frame(Some(-2), false), (-3, -8));
    assert_eq!(interpreter_frame(None, false), (-3, -8));
    assert_eq!(interpreter_frame(None, true), (-3, -9));
}
