use super::*;

/// A process's code objects stop being cached at the limit, counted; exited processes
/// are freed at the second `forget_exited` after their exit.
#[test]
fn code_caches_are_bounded_and_freed() {
    // Other tests' symbolizers call forget_exited at any time (the registry is global):
    // the bound is checked on a live process (this one), which no call frees, and the
    // freeing on a process that does not exist.
    let live = std::process::id();
    register(live, Runtime::Python(*python::version(12).unwrap()));
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
    register(gone, Runtime::Python(*python::version(12).unwrap()));
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
    register(pid, Runtime::Python(*python::version(12).unwrap()));
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
    assert!(names_report().contains("held two compiled methods"));
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
    let python = |code| encode_frame(runtime::PYTHON, code, 0);
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
    let detected = detect(path, std::path::Path::new(path));
    eprintln!("{detected:?} in {:?}", started.elapsed());
    assert!(matches!(detected, Detected::Python(_)));
}
