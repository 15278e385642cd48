use std::path::Path;

use super::*;

#[test]
fn demangles_only_mangled_names() {
    for plain in [
        "a",
        "b",
        "i",
        "v",
        "main",
        "leaf",
        "__libc_start_main",
        "_start",
    ] {
        assert_eq!(demangle(plain), plain);
    }
    assert_eq!(
        demangle("_ZN4core3ptr13drop_in_place17h6b3e1c5f9a1b2c3dE"),
        "core::ptr::drop_in_place"
    );
    assert_eq!(demangle("_RNvCs1234_7mycrate4main"), "mycrate::main");
    assert_eq!(
        demangle("_ZNSt6vectorIiSaIiEE9push_backERKi"),
        "std::vector<int, std::allocator<int> >::push_back(int const&)"
    );
    assert_eq!(demangle("_Znotvalid"), "_Znotvalid");
}

#[test]
fn return_addresses_step_back_into_the_call() {
    assert_eq!(
        lookup_addresses(&[0x1000, 0x2005, 0x3000]),
        [0x1000, 0x2004, 0x2fff]
    );
}

#[inline(never)]
fn marker_function_for_symbolization() -> u64 {
    std::hint::black_box(7)
}

#[test]
fn resolves_own_function_by_address() {
    let addr = marker_function_for_symbolization as *const () as u64;
    let frames = Symbolizer::default().user_stack(std::process::id(), &[addr]);
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert!(
        frames[0]
            .symbol
            .ends_with("marker_function_for_symbolization"),
        "{frames:?}"
    );
    assert_eq!(frames[0].kind, FrameKind::User);
}

/// Four processes mapping libc are symbolized through one opening of it: tracekit maps
/// the file once more, not once per process. Counted in /proc/self/maps, which every
/// test of this process that symbolizes libc changes too (it failed 1 of 20 runs of
/// the unit tier: "libc is mapped 2 more times"), so it runs alone, in a process of
/// its own: this test binary, exec'd.
#[test]
fn processes_share_one_opening_of_a_binary() {
    run_alone("symbolize::tests::processes_share_one_opening_of_a_binary_alone");
}

/// Runs the ignored test `name` of this test binary alone in a new process; fails with
/// its output unless it passed.
fn run_alone(name: &str) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--ignored", "--test-threads=1"])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{name}, run alone:\n{text}");
    assert!(text.contains("1 passed"), "{name} did not run:\n{text}");
}

#[test]
#[ignore = "counts this process's mappings: run alone by processes_share_one_opening_of_a_binary"]
fn processes_share_one_opening_of_a_binary_alone() {
    let mut children: Vec<_> = (0..4)
        .map(|_| {
            std::process::Command::new("sleep")
                .arg("30")
                .spawn()
                .expect("sleep runs")
        })
        .collect();
    // libc's executable mapping in `pid`, once its loader has mapped it.
    let libc_text = |pid: u32| -> Option<(u64, String)> {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
        maps.lines().find_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let path = fields.get(5)?;
            (fields[1].contains('x') && path.contains("/libc.so")).then(|| {
                let start = fields[0].split('-').next().unwrap();
                (u64::from_str_radix(start, 16).unwrap(), path.to_string())
            })
        })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let texts: Vec<(u32, u64, String)> = children
        .iter()
        .map(|child| {
            loop {
                if let Some((start, path)) = libc_text(child.id()) {
                    break (child.id(), start, path);
                }
                assert!(Instant::now() < deadline, "sleep never mapped libc");
                std::thread::sleep(Duration::from_millis(5));
            }
        })
        .collect();
    let path = texts[0].2.clone();
    let openings = || {
        std::fs::read_to_string("/proc/self/maps")
            .unwrap()
            .lines()
            .filter(|line| line.ends_with(&path))
            .count()
    };
    let before = openings();
    let symbolizer = Symbolizer::default();
    for (pid, start, _) in &texts {
        let frames = symbolizer.user_stack(*pid, &[start + 0x2000]);
        assert_eq!(
            frames[0].module.as_deref(),
            Some(path.as_str()),
            "{frames:?}"
        );
    }
    let after = openings();
    for child in &mut children {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(
        after <= before + 1,
        "libc is mapped {} more times after symbolizing 4 processes",
        after - before
    );
}

/// A live process whose stacks no interval needed for [`IDLE_RESOLVERS`] gives its
/// files' resolvers back (the binary unmapped, its symbols freed), and is named again
/// when it is sampled again; one symbolized in the interval keeps them.
#[test]
fn idle_process_resolvers_dropped_and_named_again() {
    use std::os::unix::fs::MetadataExt as _;
    let child = Child::fork();
    // The test binary, as the resolver that holds it open is keyed (other tests map
    // and unmap it meanwhile: /proc/self/maps would not tell).
    let exe = std::fs::metadata("/proc/self/exe").unwrap();
    let held = |symbolizer: &Symbolizer| {
        let state = symbolizer.state.borrow();
        state
            .elf_files
            .keys()
            .any(|&(dev, ino, _)| (dev, ino) == (exe.dev(), exe.ino()))
            && state.cache_keys.contains_key(&child.pid)
    };
    let addr = marker_function_for_symbolization as *const () as u64;
    let named = |symbolizer: &Symbolizer| {
        let frames = symbolizer.user_stack(child.pid, &[addr]);
        assert_eq!(
            frames[0].symbol, "tracekit::symbolize::tests::marker_function_for_symbolization",
            "{frames:?}"
        );
    };
    let mut symbolizer = Symbolizer {
        idle_resolvers: Duration::from_millis(200),
        ..Symbolizer::default()
    };
    named(&symbolizer);
    assert!(held(&symbolizer), "no resolver holds the test binary");
    // Symbolized in this interval: kept, however long ago.
    std::thread::sleep(Duration::from_millis(300));
    symbolizer.forget_exited();
    assert!(
        held(&symbolizer),
        "dropped in the interval it was symbolized in"
    );
    // No stack of it in the next interval, and 200 ms idle: dropped.
    std::thread::sleep(Duration::from_millis(300));
    symbolizer.forget_exited();
    assert!(
        !held(&symbolizer),
        "the idle process's binary is still held"
    );
    named(&symbolizer);
    assert!(held(&symbolizer));
}

/// Without DWARF ([`SymbolizerOptions::dwarf`] false), a function of this debug binary is
/// named from its symbol table (its file offset translated by the program headers),
/// through no resolver that parses DWARF.
#[test]
fn symbol_tables_alone_name_a_debug_binary() {
    use std::os::unix::fs::MetadataExt as _;
    let child = Child::fork();
    let symbolizer = Symbolizer::with_options(SymbolizerOptions {
        inlined: false,
        dwarf: false,
        ..SymbolizerOptions::default()
    });
    let addr = marker_function_for_symbolization as *const () as u64;
    let frames = symbolizer.user_stack(child.pid, &[addr]);
    assert_eq!(
        frames[0].symbol, "tracekit::symbolize::tests::marker_function_for_symbolization",
        "{frames:?}"
    );
    let exe = std::fs::metadata("/proc/self/exe").unwrap();
    let state = symbolizer.state.borrow();
    assert!(
        state.elf_files.is_empty(),
        "a DWARF resolver was opened: {:?}",
        state.elf_files.keys()
    );
    assert!(
        state.symbol_tables.contains_key(&(exe.dev(), exe.ino())),
        "no symbol table of the test binary"
    );
}

/// Processes announced, symbolized and exited leave nothing behind two intervals after
/// their exit: not in the symbolizer's state, blazesym's cached maps (a live process
/// named after them fails when a pid is reused), nor the pprof mappings.
#[test]
fn exited_processes_forgotten_entirely() {
    let mut symbolizer = Symbolizer::default();
    let addr = marker_function_for_symbolization as *const () as u64;
    let heap = || {
        // SAFETY: mallinfo2 has no preconditions.
        unsafe { libc::mallinfo2() }.uordblks as i64
    };
    let mut before = 0;
    let mut pids = Vec::new();
    for round in 0..600 {
        if round == 100 {
            symbolizer.forget_exited();
            symbolizer.forget_exited();
            before = heap();
        }
        let child = Child::fork();
        assert!(symbolizer.remember_process(child.pid));
        let frames = symbolizer.user_stack(child.pid, &[addr]);
        assert_eq!(
            frames[0].symbol,
            "tracekit::symbolize::tests::marker_function_for_symbolization"
        );
        pids.push(child.pid);
        drop(child);
        symbolizer.forget_exited();
    }
    symbolizer.forget_exited();
    symbolizer.forget_exited();
    let after = heap();
    eprintln!(
        "heap {} KiB -> {} KiB over 500 exited processes",
        before / 1024,
        after / 1024
    );
    let state = symbolizer.state.borrow();
    assert!(state.processes.is_empty(), "{:?}", state.processes.keys());
    assert!(state.cache_keys.is_empty(), "{:?}", state.cache_keys.keys());
    assert!(symbolizer.remembered.is_empty() && symbolizer.dying.is_empty());
    assert!(state.elf_files.is_empty() && state.files.is_empty());
}

/// A forked child of this test process (so this process's addresses are its own),
/// waiting to be told to exit. It holds nothing of the tests beside it: it closes every
/// fd it inherited but its two pipe ends (a listener another test's thread had open
/// stayed bound for as long as the child lived: the exporter server test's "still
/// listening").
struct Child {
    pid: u32,
    ready: [i32; 2],
    go: [i32; 2],
}

impl Child {
    fn fork() -> Self {
        let mut ready = [0; 2];
        let mut go = [0; 2];
        // SAFETY: plain pipes (close-on-exec, so no other test's exec'd command keeps
        // them); the child only closes, reads, writes and `_exit`s (async-signal-safe).
        let pid = unsafe {
            assert_eq!(libc::pipe2(ready.as_mut_ptr(), libc::O_CLOEXEC), 0);
            assert_eq!(libc::pipe2(go.as_mut_ptr(), libc::O_CLOEXEC), 0);
            let child = libc::fork();
            if child == 0 {
                close_all_but([ready[1], go[0]]);
                let byte = [1u8];
                libc::write(ready[1], byte.as_ptr().cast(), 1);
                let mut got = [0u8];
                libc::read(go[0], got.as_mut_ptr().cast(), 1);
                libc::_exit(0);
            }
            assert!(child > 0);
            let mut got = [0u8];
            assert_eq!(libc::read(ready[0], got.as_mut_ptr().cast(), 1), 1);
            child as u32
        };
        Self { pid, ready, go }
    }

    /// Lets the child exit and waits until it is a zombie (`/proc/PID/maps` exists
    /// and is empty, as while an exit tears the map down).
    fn exit_to_zombie(&self) {
        // SAFETY: wakes the child, which exits; it stays a zombie until dropped.
        unsafe { libc::write(self.go[1], [1u8].as_ptr().cast(), 1) };
        let stat = format!("/proc/{}/stat", self.pid);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !std::fs::read_to_string(&stat).is_ok_and(|s| s.contains(") Z ")) {
            assert!(
                Instant::now() < deadline,
                "child {} never became a zombie",
                self.pid
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// In a forked child: closes every file descriptor but the two in `keep`, with
/// close_range(2) (Linux 5.9), else close(2) up to RLIMIT_NOFILE. Allocates nothing
/// and calls only async-signal-safe functions (no /proc/self/fd listing).
///
/// # Safety
/// Only in a child between fork and `_exit`: every other fd is gone after it.
unsafe fn close_all_but(keep: [i32; 2]) {
    let close_range = |first: u32, last: u32| {
        // SAFETY: closes fds this process owns; none is used again (see above).
        unsafe {
            if libc::syscall(libc::SYS_close_range, first, last, 0) != 0 {
                let mut limit = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                let bound = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
                    limit.rlim_cur.min(1 << 20) as u32
                } else {
                    1 << 16
                };
                for fd in first..=last.min(bound) {
                    libc::close(fd as i32);
                }
            }
        }
    };
    let (low, high) = (keep[0].min(keep[1]) as u32, keep[0].max(keep[1]) as u32);
    let mut next = 0;
    for fd in [low, high] {
        if fd > next {
            close_range(next, fd - 1);
        }
        next = fd + 1;
    }
    close_range(next, u32::MAX);
}

/// The fds of a forked [`Child`] are its two pipe ends and nothing else: not the
/// listener this test holds open, nor the harness's stdout and stderr.
#[test]
fn forked_child_holds_only_its_pipe_ends() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let child = Child::fork();
    // An fd another test's thread closes between the listing and the read is skipped.
    let fds = |pid: u32| -> Vec<String> {
        let mut links: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .flatten()
            .filter_map(|entry| std::fs::read_link(entry.path()).ok())
            .map(|link| link.to_string_lossy().into_owned())
            .collect();
        links.sort();
        links
    };
    let ours = fds(std::process::id());
    let pipe_of = |fd: i32| {
        std::fs::read_link(format!("/proc/self/fd/{fd}"))
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };
    let mut want = vec![pipe_of(child.ready[1]), pipe_of(child.go[0])];
    want.sort();
    assert_eq!(fds(child.pid), want, "this process holds {ours:?}");
    drop(listener);
}

impl Drop for Child {
    fn drop(&mut self) {
        // SAFETY: reaps the child forked above; closes the pipes.
        unsafe {
            libc::kill(self.pid as i32, libc::SIGKILL);
            libc::waitpid(self.pid as i32, std::ptr::null_mut(), 0);
            for fd in self.ready.into_iter().chain(self.go) {
                libc::close(fd);
            }
        }
    }
}

/// A traced command that has exited but is not yet reaped (a zombie: `/proc/PID/maps`
/// exists and is empty) is symbolized from the map remembered at its announcement, as
/// after it is reaped (trace prints its last events while it is a zombie).
#[test]
fn zombie_process_keeps_names() {
    assert_marker_named_in_zombie(|symbolizer, pid| {
        // An announcement read as it exited does not replace the map remembered.
        assert!(!symbolizer.remember_process(pid));
    });
}

/// blazesym's cached map of a process can be one read while its exit tore it down
/// (empty: `is_alive` saw the map, blazesym's read a moment later did not; CI's
/// `unwind_leaf_caller_kept_in_both_modes` named none of a command's frames once in
/// ~30 runs). Its addresses still resolve, through the map tracekit read last.
#[test]
fn exited_process_named_through_its_last_map_when_blazesyms_is_empty() {
    assert_marker_named_in_zombie(|symbolizer, pid| {
        // What blazesym caches when it reads the map of an exiting process.
        symbolizer
            .inner
            .cache(&Cache::Process(CacheProcess::new(Pid::from(pid))))
            .unwrap();
    });
}

/// Remembers a forked child, lets it exit to a zombie, calls `then`, and asserts that
/// the marker function's address in the child is named.
fn assert_marker_named_in_zombie(then: impl FnOnce(&mut Symbolizer, u32)) {
    let child = Child::fork();
    let mut symbolizer = Symbolizer::default();
    assert!(symbolizer.remember_process(child.pid));
    child.exit_to_zombie();
    then(&mut symbolizer, child.pid);
    let addr = marker_function_for_symbolization as *const () as u64;
    let frames = symbolizer.user_stack(child.pid, &[addr]);
    assert!(
        frames[0]
            .symbol
            .ends_with("marker_function_for_symbolization"),
        "{frames:?}"
    );
}

/// A thread's outermost frames are libc's `start_thread`, a static function only the
/// separate debug file names (libc6-dbg): it resolves through that file's symbol table,
/// with libc itself as the module.
#[test]
fn libc_internals_resolve_through_the_debug_file() {
    for dwarf in [true, false] {
        libc_internals_resolve_through_the_debug_file_with(dwarf);
    }
}

fn libc_internals_resolve_through_the_debug_file_with(dwarf: bool) {
    let frames = std::thread::spawn(move || {
        let mut addrs = [std::ptr::null_mut(); 64];
        // SAFETY: backtrace(3) fills at most `addrs.len()` entries.
        let n = unsafe { libc::backtrace(addrs.as_mut_ptr(), addrs.len() as libc::c_int) };
        let leaf_first: Vec<u64> = addrs[..n as usize].iter().map(|&a| a as u64).collect();
        Symbolizer::with_options(SymbolizerOptions {
            inlined: false,
            dwarf,
            ..SymbolizerOptions::default()
        })
        .user_stack(std::process::id(), &leaf_first)
    })
    .join()
    .unwrap();
    let libc_frames: Vec<&Frame> = frames
        .iter()
        .filter(|f| f.module.as_deref().is_some_and(|m| m.contains("libc.so")))
        .collect();
    assert!(!libc_frames.is_empty(), "{frames:?}");
    let libc = libc_frames[0].module.clone().unwrap();
    let mut lookup = DebugInfo::new(DebugInfoOptions {
        offline: true,
        ..DebugInfoOptions::default()
    });
    if lookup.find(Path::new(&libc)).is_none() {
        eprintln!(
            "skipped: no separate debug file for {libc} in {} (libc6-dbg)",
            crate::symbolize::debuginfo::BUILD_ID_DIR
        );
        return;
    }
    assert!(
        libc_frames.iter().any(|f| f.symbol == "start_thread"),
        "dwarf {dwarf}: {frames:?}"
    );
    assert!(
        frames
            .iter()
            .all(|f| !f.module.as_deref().unwrap_or("").ends_with(".debug")),
        "frames name the debug file as their module: {frames:?}"
    );
}

/// Python 3.12+ `-X perf` writes a trampoline per Python function into
/// `/tmp/perf-PID.map`: their addresses are named `py::FUNCTION:FILE`, as JIT frames,
/// also after the process exited. (Whole Python stacks need frame pointers in the
/// interpreter, which pyenv's builds lack.)
#[test]
fn python_perf_trampolines_are_named_after_exit() {
    let Some(python) = std::env::var_os("HOME")
        .map(|home| Path::new(&home).join(".pyenv/versions"))
        .and_then(|dir| {
            ["3.13.0", "3.12.1"]
                .iter()
                .map(|v| dir.join(v).join("bin/python3"))
                .find(|p| p.exists())
        })
    else {
        eprintln!("skipped: no Python 3.12+ under ~/.pyenv/versions");
        return;
    };
    let script = "import sys, time\n\
                      def tk_trampoline_target():\n    return sum(range(1000))\n\
                      tk_trampoline_target()\n\
                      print('ready', flush=True)\n\
                      sys.stdin.readline()\n";
    let mut child = std::process::Command::new(&python)
        .args(["-X", "perf", "-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "ready");
    let mut symbolizer = Symbolizer::new(false);
    assert!(symbolizer.remember_process(pid));
    let map = std::fs::read_to_string(format!("/tmp/perf-{pid}.map")).unwrap();
    let (start, size, name) = map
        .lines()
        .filter_map(crate::symbolize::jit::parse_perf_map_line)
        .find(|(_, _, name)| name.contains("tk_trampoline_target"))
        .map(|(start, size, name)| (start, size, name.to_string()))
        .expect("the trampoline is in the perf map");
    assert!(name.starts_with("py::tk_trampoline_target:"), "{name}");
    // Let it exit: the map stays known.
    drop(child.stdin.take());
    child.wait().unwrap();
    let frames = symbolizer.user_stack(pid, &[start + size / 2]);
    assert_eq!(
        frames,
        [Frame {
            // JIT code is anonymous memory: an address, no file mapping.
            address: Some(crate::stacks::CodeAddress {
                address: start + size / 2,
                mapping: None,
                lines: None,
            }),
            symbol: name,
            module: Some(format!("/tmp/perf-{pid}.map")),
            kind: FrameKind::User,
            inlined: false,
            jit: true,
        }]
    );
    let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
}

/// An address in a mapped file with no symbol there is `module+0xOFFSET` (the ELF
/// address for ELF files, see `procmaps::elf_address`; a file offset for anything
/// else, as here); an address outside every mapping stays unknown.
#[test]
fn unnamed_frames_have_module_and_offset() {
    use std::os::fd::AsRawFd as _;
    let path = std::env::temp_dir().join(format!("tk-unnamed-{}", std::process::id()));
    std::fs::write(&path, vec![0x90u8; 3 * 4096]).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    // SAFETY: a fresh private read-only mapping of a file we own, unmapped below.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            2 * 4096,
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            file.as_raw_fd(),
            4096,
        )
    };
    assert_ne!(addr, libc::MAP_FAILED);
    let pid = std::process::id();
    let mut symbolizer = Symbolizer::new(false);
    assert!(symbolizer.remember_process(pid));
    let frames = symbolizer.user_stack(pid, &[addr as u64 + 0x10]);
    let name = path.file_name().unwrap().to_string_lossy();
    assert_eq!(frames[0].symbol, format!("{name}+0x1010"), "{frames:?}");
    assert_eq!(frames[0].module.as_deref(), path.to_str());
    assert!(!frames[0].jit);
    let frames = symbolizer.user_stack(pid, &[0x10]);
    assert_eq!(frames[0].symbol, UNKNOWN_SYMBOL);
    // SAFETY: the mapping made above.
    unsafe { libc::munmap(addr, 2 * 4096) };
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn map_file_paths_name_their_pid() {
    use super::process::pid_of_map_file;
    assert_eq!(
        pid_of_map_file(Path::new("/proc/4242/map_files/7f00-7f10")),
        Some(4242)
    );
    assert_eq!(pid_of_map_file(Path::new("/proc/self/map_files/1-2")), None);
    assert_eq!(pid_of_map_file(Path::new("/usr/lib/libc.so.6")), None);
}

/// A live process has a memory map; a pid that does not exist has none.
#[test]
fn liveness_is_read_from_the_memory_map() {
    assert!(is_alive(std::process::id()));
    assert!(!is_alive(u32::MAX - 1));
}

#[test]
fn function_bounds_keep_the_file_in_use_past_the_limit() {
    let mut cache = process::BoundsCache::default();
    let hot = Path::new("/usr/bin/python3.12");
    let mut parsed = 0;
    let mut bounds_of = |cache: &mut process::BoundsCache, path: &Path| {
        cache.get_or_parse(path, || {
            parsed += 1;
            vec![(0x1000, 0x1100)].into()
        })
    };
    // Each short-lived process maps the interpreter and one file of its own.
    for n in 0..3 * process::MAX_FUNCTION_BOUNDS_FILES {
        assert_eq!(&*bounds_of(&mut cache, hot), &[(0x1000, 0x1100)]);
        bounds_of(&mut cache, Path::new(&format!("/tmp/own-{n}.so")));
    }
    assert_eq!(cache.len(), process::MAX_FUNCTION_BOUNDS_FILES);
    // The interpreter parsed once; every other file once.
    assert_eq!(parsed, 1 + 3 * process::MAX_FUNCTION_BOUNDS_FILES);
}
