use std::sync::Arc;

use super::{
    registry::{Registry, registry, remember_code},
    *,
};

/// A process's code objects stop being cached at the limit, counted; exited processes
/// are freed at the second `forget_exited` after their exit.
#[test]
fn code_caches_are_bounded_and_freed() {
    // Other tests' symbolizers call forget_exited at any time (the registry is global):
    // the bound is checked on a live process (this one), which no call frees, and the
    // freeing on a process that does not exist.
    let live = std::process::id();
    register(live, Arc::new(*python::version(12).unwrap()));
    for code in 0..MAX_CODES_PER_PROCESS as u64 + 10 {
        remember_code(live, 0x1000 + code * 16, None); // unmapped here: every read fails fast
    }
    {
        let registry = registry();
        assert_eq!(registry.processes[&live].codes.len(), MAX_CODES_PER_PROCESS);
        assert!(registry.over_limit >= 10);
    }
    assert!(names_report().contains("not named: their process had 65536 cached"));
    registry().processes.remove(&live);
    let gone = u32::MAX - 27;
    register(gone, Arc::new(*python::version(12).unwrap()));
    remember_code(gone, 0x1000, None);
    assert!(registry().processes.contains_key(&gone));
    // Seen exited at one call, freed at the next (whoever makes them).
    forget_exited();
    forget_exited();
    assert!(!registry().processes.contains_key(&gone));
}

/// A code pointer announced again with another generation (two HotSpot compiled methods
/// at one address whose frames carry the same low bits of their `_compile_id`) is named by
/// neither; announced again with its own generation (the kernel's LRU forgot it), it keeps
/// its name.
#[test]
fn a_code_pointer_of_two_generations_is_named_by_neither() {
    // A pid no process has: only a forget_exited of another test twice within this test
    // would free it.
    let pid = u32::MAX - 41;
    register(pid, Arc::new(*python::version(12).unwrap()));
    let code = 0x7f00_0000_1010;
    let info = CodeInfo {
        name: "A.run".into(),
        file: String::new(),
        first_line: 0,
        linetable: Vec::new(),
        minor: 0,
        compiled: Vec::new(),
    };
    let named = |registry: &Registry| registry.processes[&pid].codes[&code].is_some();
    {
        let mut registry = registry();
        let process = registry.processes.get_mut(&pid).unwrap();
        process.codes.insert(code, Some(Arc::new(info)));
        process.generations.insert(code, 0x0107);
    }
    remember_code(pid, code, Some(0x0107));
    remember_code(pid, code, None);
    assert!(named(&registry()));
    let before = registry().ambiguous;
    remember_code(pid, code, Some(0x0117));
    assert!(!named(&registry()));
    assert_eq!(registry().ambiguous, before + 1);
    assert!(names_report().contains("held two code objects"));
    registry().processes.remove(&pid);
}

#[test]
fn interpreter_symbols_split_into_function_file_and_line() {
    assert_eq!(
        source_of_symbol("leaf (/srv/app/x.py:12)"),
        Some(("leaf", "/srv/app/x.py", 12))
    );
    assert_eq!(
        source_of_symbol("Cls.run (<frozen importlib._bootstrap>:1027)"),
        Some(("Cls.run", "<frozen importlib._bootstrap>", 1027))
    );
    assert_eq!(
        source_of_symbol("block (2 levels) in run (app/x.rb:7)"),
        Some(("block (2 levels) in run", "app/x.rb", 7))
    );
    assert_eq!(
        source_of_symbol("Worker::{closure} (/srv/x.php:4)"),
        Some(("Worker::{closure}", "/srv/x.php", 4))
    );
    assert_eq!(source_of_symbol("_PyEval_EvalFrameDefault"), None);
    assert_eq!(source_of_symbol("operator()(int)"), None);
}

/// Native runs are symbolized as stacks of their own (a run after the leaf from its
/// return address minus one), interpreter frames in their place, outermost first.
#[test]
fn native_runs_and_interpreter_frames_keep_their_order() {
    use tracekit_common::interp::encode_frame;
    let python = |code| encode_frame(tags::PYTHON, code, 0);
    let leaf_first = [
        0x1000,
        0x2000,
        python(0x7000),
        python(0x8000),
        0x3000,
        0x4000,
    ];
    let mut runs = Vec::new();
    let frames = splice(0, &leaf_first, |run| {
        runs.push(run.to_vec());
        run.iter()
            .rev()
            .map(|addr| Frame::user(format!("{addr:#x}"), Some("native")))
            .collect()
    });
    assert_eq!(runs, vec![vec![0x2fff, 0x4000], vec![0x1000, 0x2000]]);
    let names: Vec<(&str, &str)> = frames
        .iter()
        .map(|f| (f.symbol.as_str(), f.module.as_deref().unwrap_or("")))
        .collect();
    assert_eq!(
        names,
        [
            ("0x4000", "native"),
            ("0x2fff", "native"),
            ("[unknown]", PYTHON_MODULE),
            ("[unknown]", PYTHON_MODULE),
            ("0x2000", "native"),
            ("0x1000", "native"),
        ]
    );
}

#[test]
fn detects_pyenv_311() {
    let path = "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0";
    if !std::path::Path::new(path).exists() {
        eprintln!("skipped: no {path}");
        return;
    }
    let started = std::time::Instant::now();
    let detected = runtime::detect(path, std::path::Path::new(path));
    eprintln!("{detected:?} in {:?}", started.elapsed());
    assert!(detected.binary::<python::Binary>().is_some());
}

/// Tests' code objects: what [`fake_code`] reads.
#[derive(Debug)]
struct Fake;

impl CodeReader for Fake {
    fn read_code(&self, _pid: u32, code: u64, generation: Option<u16>) -> Option<CodeInfo> {
        fake_code(code, generation)
    }

    fn same(&self, _other: &dyn CodeReader) -> bool {
        false
    }
}

/// What [`fake_code`] reads at any code address: one of two functions' code, or nothing.
static FAKE_MEMORY: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// A runtime's read of code object `code` with `generation` whose memory holds
/// [`FAKE_MEMORY`]'s code: 1 and 2 are `a` (moved: 2 is its generation after the move), 3
/// is `b`, others are no code. As V8's read does, a generation that is not the memory's
/// reads nothing.
fn fake_code(_code: u64, generation: Option<u16>) -> Option<CodeInfo> {
    let memory = FAKE_MEMORY.load(Ordering::Relaxed);
    let (name, memory_generation) = match memory {
        1 => ("a", 1),
        2 => ("a", 2),
        3 => ("b", 3),
        _ => return None,
    };
    if generation.is_some_and(|generation| generation != memory_generation) {
        return None;
    }
    Some(CodeInfo {
        name: name.into(),
        file: "/t/a.js".into(),
        first_line: 1,
        linetable: Vec::new(),
        minor: 3,
        compiled: vec![(0, vec![format!("{name} (/t/a.js:2)")])],
    })
}

/// A code address announced again with another generation is read again: the same code
/// (moved) keeps its name, other code at the address (freed and reused) is named by
/// neither, and a read whose generation is not the memory's (reused again since the
/// announcement) names nothing.
#[test]
fn a_reused_code_address_is_read_again_never_misnamed() {
    let pid = u32::MAX - 43;
    let name = |code: u64| {
        registry().processes[&pid].codes[&code]
            .as_ref()
            .map(|info| info.name.clone())
    };
    register(pid, Arc::new(Fake));
    FAKE_MEMORY.store(1, Ordering::Relaxed);
    remember_code(pid, 0x1000, Some(1));
    assert_eq!(name(0x1000).as_deref(), Some("a"));
    // Moved: announced with the generation of its new instructions, read again, the same.
    FAKE_MEMORY.store(2, Ordering::Relaxed);
    let before = registry().ambiguous;
    remember_code(pid, 0x1000, Some(2));
    assert_eq!(name(0x1000).as_deref(), Some("a"));
    assert_eq!(registry().ambiguous, before);
    // Its old generation again (the kernel's LRU forgot it): the same again.
    FAKE_MEMORY.store(1, Ordering::Relaxed);
    remember_code(pid, 0x1000, Some(1));
    assert_eq!(name(0x1000).as_deref(), Some("a"));
    // Reused by `b`: frames recorded before and after cannot be told apart.
    FAKE_MEMORY.store(3, Ordering::Relaxed);
    remember_code(pid, 0x1000, Some(3));
    assert_eq!(name(0x1000), None);
    assert_eq!(registry().ambiguous, before + 1);
    // And stays so, whatever is announced next.
    remember_code(pid, 0x1000, Some(1));
    remember_code(pid, 0x1000, None);
    assert_eq!(name(0x1000), None);
    // Announced as `a`'s generation but reused by `b` before it was read: not named `b`.
    remember_code(pid, 0x2000, Some(1));
    assert_eq!(name(0x2000), None);
    // A frame with no generation (a V8 `SharedFunctionInfo`) is read as it is.
    remember_code(pid, 0x3000, None);
    assert_eq!(name(0x3000).as_deref(), Some("b"));
    registry().processes.remove(&pid);
}

/// A HotSpot interpreted frame's fingerprint word is named with it (no frame of its own)
/// and ends the native run after it like a frame.
#[test]
fn fingerprint_words_are_no_frames() {
    use tracekit_common::interp::{encode_frame, hotspot::encode_fingerprint};
    let leaf_first = [
        0x1000,
        encode_frame(tags::HOTSPOT, 0x7f10_0000_2b10, 5),
        encode_fingerprint(Some(7)),
        0x3000,
    ];
    let mut runs = Vec::new();
    let frames = splice(0, &leaf_first, |run| {
        runs.push(run.to_vec());
        run.iter()
            .rev()
            .map(|addr| Frame::user(format!("{addr:#x}"), Some("native")))
            .collect()
    });
    assert_eq!(runs, vec![vec![0x2fff], vec![0x1000]]);
    let names: Vec<(&str, &str)> = frames
        .iter()
        .map(|f| (f.symbol.as_str(), f.module.as_deref().unwrap_or("")))
        .collect();
    assert_eq!(
        names,
        [
            ("0x2fff", "native"),
            ("[unknown]", JAVA_MODULE),
            ("0x1000", "native"),
        ]
    );
}
