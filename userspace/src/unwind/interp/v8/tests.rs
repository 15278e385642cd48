//! Unit tests of [`super`] (V8 layouts and naming).
use super::*;

/// Debian's node 20: V8 11.3, the postmortem symbols and the builtins found.
#[test]
fn detects_debian_node() {
    let path = "/usr/bin/node";
    if !std::path::Path::new(path).exists() {
        eprintln!("skipped: no {path} (apt-get install nodejs)");
        return;
    }
    let started = std::time::Instant::now();
    let Some(binary) = detect(std::path::Path::new(path)).binary::<Binary>() else {
        panic!("{path} not detected as V8");
    };
    eprintln!("{binary:?} in {:?}", started.elapsed());
    assert_eq!(binary.version.major, 11);
    assert_eq!(binary.version.fp_function, 16);
    assert_eq!(binary.version.fp_context, 8);
    assert!(binary.builtins.1 > 1 << 20);
    assert!(binary.version.type_function > 0 && binary.version.type_shared_function_info > 0);
    // Lines: BytecodeArray's source positions at the third word after its length (no
    // symbol since V8 9.4), its first bytecode at 54; cached external strings read.
    let lines = binary.version.lines.expect("V8 11.3's line layout");
    assert_eq!(
        (
            lines.function_data,
            lines.array_length,
            lines.bytecode_positions
        ),
        (Some(8), 8, 32)
    );
    assert_eq!((lines.bytecode_data, lines.script_line_ends), (54, 56));
    assert!(!lines.fixed_positions);
    assert_eq!(binary.version.external.map(|e| e.resource), Some(16));
    // Optimized code: the table and deoptimization data stated, the rest V8 11.3's
    // layout (checked on a live node 20).
    let compiled = binary.version.compiled.expect("V8 11.3's compiled layout");
    assert_eq!(binary.compiled_missing, None);
    assert_eq!(
        (
            compiled.function_code,
            compiled.source_positions,
            compiled.deoptimization_data,
            compiled.instruction_start,
            compiled.flags,
            compiled.instruction_size
        ),
        (48, 24, 16, 40, 48, 56)
    );
    assert_eq!((compiled.type_code, compiled.kind_baseline), (245, 11));
    assert_eq!(
        (
            compiled.deopt_shared,
            compiled.deopt_literals,
            compiled.deopt_inlining
        ),
        (6, 2, 7)
    );
}

/// A V8 without postmortem symbols, or with pointer compression, is not unwound, and
/// the reason names what is missing.
#[test]
fn unreadable_layouts_say_why() {
    let mut symbols = Symbols {
        builtins: Some((0x1000, 0x1000)),
        builtins_size: Some(0x1000),
        defines_v8: true,
        ..Symbols::default()
    };
    assert_eq!(
        binary(&symbols),
        Err("V8 without postmortem symbols (v8dbg_*)".to_string())
    );
    symbols.values.insert("v8dbg_TaggedSize".into(), 4);
    symbols.values.insert("v8dbg_SystemPointerSize".into(), 8);
    assert!(
        binary(&symbols)
            .unwrap_err()
            .contains("pointer compression")
    );
    symbols.values.insert("v8dbg_TaggedSize".into(), 8);
    assert_eq!(
        binary(&symbols),
        Err("no v8dbg_HeapObjectTag symbol".to_string())
    );
}

/// V8 13's `Tagged_..._` spellings are found by the field's name; two spellings of one
/// field that disagree are an error naming both; a longer field name is not a match.
#[test]
fn class_fields_whatever_their_type() {
    let mut symbols = Symbols::default();
    let name = "v8dbg_class_SharedFunctionInfo__name_or_scope_info__Tagged_NameOrScopeInfoT_";
    symbols.values.insert(name.into(), 24);
    symbols.values.insert(
        "v8dbg_class_SharedFunctionInfo__script_or_debug_info_x__Object".into(),
        7,
    );
    assert_eq!(
        class_field(&symbols, "SharedFunctionInfo", "name_or_scope_info"),
        Ok(Some((name.to_string(), 24)))
    );
    assert_eq!(
        class_field(&symbols, "SharedFunctionInfo", "script_or_debug_info"),
        Ok(None)
    );
    symbols
        .values
        .insert("v8dbg_class_JSFunction__context__Context".into(), 8);
    symbols.values.insert(
        "v8dbg_class_JSFunction__context__Tagged_Context_".into(),
        16,
    );
    assert!(
        class_field(&symbols, "JSFunction", "context")
            .unwrap_err()
            .contains("Tagged_Context_ = 16")
    );
}

#[test]
fn node_names() {
    assert!(is_node("node"));
    assert!(is_node("libnode.so.115"));
    assert!(!is_node("nodemon"));
}

/// A young object moved by a scavenge is read at its new copy, through the forwarding
/// address in its old copy's map word; anything else in a map word is no object.
#[test]
fn moved_objects_are_read_at_their_new_copy() {
    let memory: std::collections::HashMap<u64, u64> = [
        (0x1000, 0x5001), // an object in place: its map, tagged
        (0x2000, 0x3000), // moved: its new copy's address, untagged
        (0x3000, 0x5001), // the new copy's map
        (0x4000, 0x2000), // moved to a copy that is itself forwarded: not followed
        (0x6000, 0x5003), // a weak reference where a map belongs
        (0x7000, 0),      // zeroed memory
        (0x8000, 0x9000), // forwarded to unreadable memory
        (0xb000, 0x3004), // an address not 8-byte aligned: no object is there
    ]
    .into_iter()
    .collect();
    let word = |address: u64| memory.get(&address).copied();
    let copy = |object| reader::current_copy(object, 0, word);
    assert_eq!(copy(0x1000), Some((0x1000, 0x5001)));
    assert_eq!(copy(0x2000), Some((0x3000, 0x5001)));
    assert_eq!(copy(0x4000), None);
    assert_eq!(copy(0x6000), None);
    assert_eq!(copy(0x7000), None);
    assert_eq!(copy(0x8000), None);
    assert_eq!(copy(0xa000), None);
    assert_eq!(copy(0xb000), None);
    // The map word's offset is honoured.
    assert_eq!(reader::current_copy(0xff8, 8, word), Some((0xff8, 0x5001)));
    assert_eq!(reader::current_copy(0x1ff8, 8, word), None);
}

/// The trixie root's file `path` (relative), if the root is there (`TRACEKIT_ROOTS`, else
/// the workspace's `target/roots`).
fn trixie_file(path: &str) -> Option<std::path::PathBuf> {
    let roots = std::env::var_os("TRACEKIT_ROOTS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/roots")
        });
    let file = roots.join("trixie").join(path);
    if !file.is_file() {
        eprintln!(
            "skipped: no {} (cargo xtask test makes the root)",
            file.display()
        );
        return None;
    }
    Some(file)
}

/// Debian 13's libnode.so.115: V8 11.3 from its dynamic symbols, the builtins through
/// their accessors, in the library's text; its small `node` holds no V8 (not a runtime).
#[test]
fn detects_debian_libnode() {
    let Some(library) = trixie_file("usr/lib/x86_64-linux-gnu/libnode.so.115") else {
        return;
    };
    let binary = detect(&library).binary::<Binary>();
    let binary = binary.unwrap_or_else(|| panic!("{}: {:?}", library.display(), detect(&library)));
    assert_eq!((binary.version.major, binary.version.minor), (11, 3));
    assert_eq!(binary.compiled_missing, None);
    assert!(binary.version.lines.is_some() && binary.version.replaced.is_some());
    // Page-aligned, over 1 MiB, at its ELF address's offset in the file (a shared library's
    // text is mapped at its address).
    let (start, size) = binary.builtins;
    assert_eq!(start % 4096, 0);
    assert!(size > 1 << 20, "{size}");
    assert_eq!(binary.builtins_file_offset, start);
    if let Some(node) = trixie_file("usr/bin/node") {
        assert!(
            matches!(detect(&node), Detected::None),
            "{:?}",
            detect(&node)
        );
    }
}

/// Where both are there (the host's node), the accessors find the builtins the
/// `v8_Default_embedded_blob_code_` symbols state.
#[test]
fn builtins_accessors_agree_with_the_symbols() {
    use object::{Object as _, ObjectSymbol as _};
    let path = "/usr/bin/node";
    let Ok(data) = std::fs::read(path) else {
        eprintln!("skipped: no {path}");
        return;
    };
    let symbols = read_symbols(&data).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let at = |name: &str| {
        file.dynamic_symbols()
            .chain(file.symbols())
            .find(|symbol| symbol.name() == Ok(name))
            .map(|symbol| symbol.address())
    };
    let (Some(code_at), Some(size_at), Some(builtins)) = (
        at(embedded::CODE_ACCESSOR),
        at(embedded::SIZE_ACCESSOR),
        symbols.builtins,
    ) else {
        eprintln!("skipped: {path} lacks the builtins' symbols or their accessors");
        return;
    };
    let (start, file_offset, size) = embedded::from_accessors(&file, code_at, size_at).unwrap();
    assert_eq!((start, file_offset), builtins);
    assert_eq!(Some(size as i64), symbols.builtins_size);
}

/// Where the symbols are there (the host's node), the code without unwind information
/// after V8's `int3` label is the builtins they state, up to a page of padding more.
#[test]
fn builtins_without_symbols_agree_with_the_symbols() {
    let path = "/usr/bin/node";
    let Ok(data) = std::fs::read(path) else {
        eprintln!("skipped: no {path}");
        return;
    };
    let symbols = read_symbols(&data).unwrap();
    let (Some(builtins), Some(size)) = (symbols.builtins, symbols.builtins_size) else {
        eprintln!("skipped: {path} lacks the builtins' symbols");
        return;
    };
    let file = object::File::parse(&*data).unwrap();
    let bounds = crate::unwind::table::function_bounds(&file);
    let (start, file_offset, found) = embedded::from_unwind_gap(&file, &bounds).unwrap();
    assert_eq!((start, file_offset), builtins);
    let size = size as u64;
    assert!(
        (size..size + 4096).contains(&found),
        "{found:#x} bytes, {size:#x} stated"
    );
}

/// A file with no V8 at all is not a runtime; one with V8 but no postmortem symbols is
/// one tracekit cannot read, and says so.
#[test]
fn no_v8_is_no_runtime() {
    let symbols = Symbols::default();
    assert_eq!(binary(&symbols), Ok(None));
    let symbols = Symbols {
        defines_v8: true,
        ..Symbols::default()
    };
    assert_eq!(
        binary(&symbols),
        Err("V8 without postmortem symbols (v8dbg_*)".to_string())
    );
}
