//! The names of the programs, maps and globals of the embedded objects that the loader uses,
//! one module per object (and one for what several objects share): the kernel side defines
//! them (`ebpf/src/bin/`, `ebpf/src/engine/maps.rs`, `ebpf/src/unwind/mod.rs`), the loader names
//! them only through these constants.
//!
//! A name here that its object lacks would show only when a load as root fails (aya's
//! `program_mut`, `take_map`, `override_global` by name); the unit test
//! `every_name_is_in_its_object` parses each embedded object (no root, nothing loaded) and
//! finds every name in it.

/// Declares an object's names: a constant each, and the lists the test reads.
macro_rules! names {
    (
        programs { $($(#[$pdoc:meta])* $program:ident = $pname:literal,)* }
        maps { $($(#[$mdoc:meta])* $map:ident = $mname:literal,)* }
        globals { $($(#[$gdoc:meta])* $global:ident = $gname:literal,)* }
    ) => {
        $($(#[$pdoc])* pub const $program: &str = $pname;)*
        $($(#[$mdoc])* pub const $map: &str = $mname;)*
        $($(#[$gdoc])* pub const $global: &str = $gname;)*

        /// Every program named above.
        pub const PROGRAMS: &[&str] = &[$($program),*];
        /// Every map named above.
        pub const MAPS: &[&str] = &[$($map),*];
        /// Every global named above.
        pub const GLOBALS: &[&str] = &[$($global),*];
    };
}

/// What every object has: the switch of the kernel programs' debug logs (`ebpf/src/log.rs`)
/// and aya-log's ring buffer.
pub mod kernel_log {
    names! {
        programs {}
        maps {
            /// aya-log's ring buffer of log records.
            AYA_LOGS = "AYA_LOGS",
        }
        globals {
            /// 1: the programs log (a read-only global, so with it 0 the verifier prunes
            /// every log call).
            KERNEL_LOG = "TRACEKIT_KERNEL_LOG",
        }
    }
}

/// The DWARF unwinder's and the interpreter unwinders' maps (`unwind_maps!`), in each object
/// that unwinds user stacks: `cpu_sampler` and `engine`.
pub mod unwind {
    names! {
        programs {}
        maps {
            SHARDS = "UNWIND_SHARDS",
            MAPPINGS = "UNWIND_MAPPINGS",
            PROCESSES = "UNWIND_PROCESSES",
            STATS = "UNWIND_STATS",
            INTERP_PROCESSES = "INTERP_PROCESSES",
            INTERP_CONFIG = "INTERP_CONFIG",
            INTERP_STATS = "INTERP_STATS",
            INTERP_CODES = "INTERP_CODES",
            HOTSPOT_CODE = "HOTSPOT_CODE",
        }
        globals {
            /// 1: the kernel has `bpf_loop` (5.17+); 0: the unwinder steps in a bounded loop.
            BPF_LOOP = "UNWIND_BPF_LOOP",
            /// Where the user registers are when `bpf_task_pt_regs` is missing (before 5.15).
            TASK_STACK_OFFSET = "UNWIND_TASK_STACK_OFFSET",
            /// arm64: where a task's saved registers keep its syscall number.
            SYSCALLNO_OFFSET = "UNWIND_SYSCALLNO_OFFSET",
        }
    }
}

/// `cpu_sampler`: on-CPU stack sampling.
pub mod cpu_sampler {
    names! {
        programs {
            /// The sampler, on `cpu-clock` of every CPU.
            CPU_CLOCK = "profile_cpu_clock",
            /// `sched:sched_process_exec`: announces new processes.
            SCHED_EXEC = "profile_sched_exec",
            /// `syscalls:sys_enter_mmap`: announces executable mappings.
            MMAP_EXEC = "profile_mmap_exec",
            /// `sched:sched_process_fork`: follows `-- CMD`'s children.
            SCHED_FORK = "profile_sched_fork",
        }
        maps {
            TARGETS = "PROFILE_TARGETS",
            EVENTS = "PROFILE_EVENTS",
            GENERATION = "PROFILE_GENERATION",
            COUNTS = "PROFILE_COUNTS",
            STACKS = "PROFILE_STACKS",
            STATS = "PROFILE_STATS",
        }
        globals {
            SELF_PID = "PROFILE_SELF_PID",
            FILTER_PIDS = "PROFILE_FILTER_PIDS",
            CGROUP_ID = "PROFILE_CGROUP_ID",
            CGROUP_LEVEL = "PROFILE_CGROUP_LEVEL",
            INCLUDE_IDLE = "PROFILE_INCLUDE_IDLE",
            KERNEL_STACKS = "PROFILE_KERNEL_STACKS",
            USER_STACKS = "PROFILE_USER_STACKS",
            USER_UNWIND = "PROFILE_USER_UNWIND",
            BY_CGROUP = "PROFILE_BY_CGROUP",
            FORK_CHILD_PID_OFFSET = "PROFILE_FORK_CHILD_PID_OFFSET",
            MMAP_PROT_OFFSET = "PROFILE_MMAP_PROT_OFFSET",
            TIME_SLICE_NS = "PROFILE_TIME_SLICE_NS",
        }
    }
}

/// `engine`: the aggregation engine. Its classic tracepoint entry points are numbered, one
/// per tracepoint of a stage: [`engine::tracepoint`], [`engine::simple_tracepoint`],
/// [`engine::start_tracepoint`].
pub mod engine {
    names! {
        programs {
            RAW_TP = "engine_raw_tp",
            RAW_TP_SIMPLE = "engine_raw_tp_simple",
            RAW_TP_COUNT_ARG1 = "engine_raw_tp_count_arg1",
            RAW_TP_START = "engine_raw_tp_start",
            KPROBE = "engine_kprobe",
            KRETPROBE = "engine_kretprobe",
            KPROBE_START = "engine_kprobe_start",
            UPROBE = "engine_uprobe",
            URETPROBE = "engine_uretprobe",
            UPROBE_START = "engine_uprobe_start",
            FENTRY = "engine_fentry",
            FEXIT = "engine_fexit",
            FENTRY_START = "engine_fentry_start",
            PERF_EVENT = "engine_perf_event",
            // The helpers, which serve neither stage.
            SCHED_EXEC = "engine_sched_exec",
            MMAP_EXEC = "engine_mmap_exec",
            SCHED_FORK = "engine_sched_fork",
            START_EXIT = "engine_start_exit",
            START_FORK = "engine_start_fork",
            TASK_RENAME = "engine_task_rename",
            TASK_EXIT = "engine_task_exit",
            EMPTY = "engine_empty",
        }
        maps {
            TASK_GENS = "ENGINE_TASK_GENS",
            TASK_NAMES = "ENGINE_TASK_NAMES",
            ARRAY = "ENGINE_ARRAY",
            HASH = "ENGINE_HASH",
            CACHE = "ENGINE_CACHE",
            STARTS = "ENGINE_STARTS",
            STATS = "ENGINE_STATS",
            TARGETS = "ENGINE_TARGETS",
            STACKS = "ENGINE_STACKS",
            TRACE = "ENGINE_TRACE",
            ANNOUNCE = "ENGINE_ANNOUNCE",
            OUTSTANDING = "ENGINE_OUTSTANDING",
            FOLLOWS = "ENGINE_FOLLOWS",
        }
        globals {
            PLAN = "ENGINE_PLAN",
            START_PLAN = "ENGINE_START_PLAN",
            SELF_PID = "ENGINE_SELF_PID",
            FILTER_PIDS = "ENGINE_FILTER_PIDS",
            CGROUP_ID = "ENGINE_CGROUP_ID",
            CGROUP_LEVEL = "ENGINE_CGROUP_LEVEL",
            FORK_CHILD_PID_OFFSET = "ENGINE_FORK_CHILD_PID_OFFSET",
            MMAP_PROT_OFFSET = "ENGINE_MMAP_PROT_OFFSET",
            USER_UNWIND = "ENGINE_USER_UNWIND",
            DENTRY_WALK = "ENGINE_DENTRY_WALK",
            RENAME_PID_OFFSET = "ENGINE_RENAME_PID_OFFSET",
            /// 1: kprobes have `bpf_get_func_ip` (5.15+).
            FUNC_IP = "KERNEL_FUNC_IP",
            /// 1: probes have `bpf_get_attach_cookie` (5.15+).
            ATTACH_COOKIE = "KERNEL_ATTACH_COOKIE",
        }
    }

    /// The programs that serve neither stage (announcements, `-- CMD`'s children,
    /// start-map hygiene, benchmarks).
    pub const HELPERS: &[&str] = &[
        SCHED_EXEC,
        MMAP_EXEC,
        SCHED_FORK,
        START_EXIT,
        START_FORK,
        TASK_RENAME,
        TASK_EXIT,
        EMPTY,
    ];

    /// The main stage's entry point for its `index`th classic tracepoint
    /// (below `MAX_TRACEPOINTS`).
    pub fn tracepoint(index: usize) -> String {
        format!("engine_tp_{index}")
    }

    /// The fexit entry point for a function whose parameters take `words` 8-byte words
    /// (below [`FEXIT_WORDS`]; [`FEXIT`] reads the return value with `bpf_get_func_ret`).
    pub fn fexit(words: u32) -> String {
        format!("engine_fexit_{words}")
    }

    /// Parameter words up to which [`fexit`] has an entry point (x86-64 trampolines took
    /// six before 6.1).
    pub const FEXIT_WORDS: u32 = 7;

    /// [`tracepoint`] with a simple plan's path inlined (below `SIMPLE_TRACEPOINTS`).
    pub fn simple_tracepoint(index: usize) -> String {
        format!("engine_tp_simple_{index}")
    }

    /// The start stage's entry point for its `index`th classic tracepoint (below
    /// `MAX_START_TRACEPOINTS`).
    pub fn start_tracepoint(index: usize) -> String {
        match index {
            0 => "engine_tp_start".to_string(),
            _ => format!("engine_tp_start_{index}"),
        }
    }
}

/// `ksyms`: kernel addresses to names, by the kernel.
pub mod ksyms {
    names! {
        programs {
            LOOKUP = "ksyms_lookup",
        }
        maps {
            ADDRS = "KSYMS_ADDRS",
            NAMES = "KSYMS_NAMES",
        }
        globals {}
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use object::{Object as _, ObjectSymbol as _};
    use tracekit_common::engine::{MAX_START_TRACEPOINTS, MAX_TRACEPOINTS, SIMPLE_TRACEPOINTS};

    use super::*;
    use crate::bpf::Object;

    /// The programs, maps and global symbols of an embedded object, or `None` when this
    /// build has none.
    fn contents(which: Object) -> Option<[BTreeSet<String>; 3]> {
        let bytes = crate::bpf::object(which).ok()?;
        let parsed = aya_obj::Object::parse(bytes).unwrap();
        let programs = parsed.programs.keys().cloned().collect();
        let maps = parsed.maps.keys().cloned().collect();
        let elf = object::File::parse(bytes).unwrap();
        let symbols = elf
            .symbols()
            .filter_map(|symbol| symbol.name().ok().map(str::to_string))
            .collect();
        Some([programs, maps, symbols])
    }

    /// Every program, map and global the loader names is in the object it loads (the
    /// embedded objects parsed with aya-obj, as aya parses them before loading).
    #[test]
    fn every_name_is_in_its_object() {
        let engine_programs: Vec<String> = engine::PROGRAMS
            .iter()
            .map(|name| name.to_string())
            .chain((0..MAX_TRACEPOINTS).map(engine::tracepoint))
            .chain((0..SIMPLE_TRACEPOINTS).map(engine::simple_tracepoint))
            .chain((0..MAX_START_TRACEPOINTS).map(engine::start_tracepoint))
            .chain((0..engine::FEXIT_WORDS).map(engine::fexit))
            .collect();
        let owned = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let objects = [
            (
                Object::CpuSampler,
                owned(cpu_sampler::PROGRAMS),
                [cpu_sampler::MAPS, unwind::MAPS, kernel_log::MAPS].concat(),
                [cpu_sampler::GLOBALS, unwind::GLOBALS, kernel_log::GLOBALS].concat(),
            ),
            (
                Object::Engine,
                engine_programs,
                [engine::MAPS, unwind::MAPS, kernel_log::MAPS].concat(),
                [engine::GLOBALS, unwind::GLOBALS, kernel_log::GLOBALS].concat(),
            ),
            (
                Object::Ksyms,
                owned(ksyms::PROGRAMS),
                [ksyms::MAPS, kernel_log::MAPS].concat(),
                kernel_log::GLOBALS.to_vec(),
            ),
        ];
        let mut checked = 0;
        let mut missing = Vec::new();
        for (which, programs, maps, globals) in objects {
            let Some([has_programs, has_maps, has_symbols]) = contents(which) else {
                eprintln!("skipped: this build has no kernel programs (TRACEKIT_EBPF=require)");
                return;
            };
            for name in &programs {
                checked += 1;
                if !has_programs.contains(name) {
                    missing.push(format!("{which:?}: program {name}"));
                }
            }
            for name in maps {
                checked += 1;
                if !has_maps.contains(name) {
                    missing.push(format!("{which:?}: map {name}"));
                }
            }
            for name in globals {
                checked += 1;
                if !has_symbols.contains(name) {
                    missing.push(format!("{which:?}: global {name}"));
                }
            }
        }
        assert!(missing.is_empty(), "not in the objects: {missing:#?}");
        assert!(checked > 150, "{checked}");
    }

    /// The helper programs are programs of the engine, and no stage's entry point is one.
    #[test]
    fn helpers_are_engine_programs() {
        for helper in engine::HELPERS {
            assert!(engine::PROGRAMS.contains(helper), "{helper}");
        }
        assert_eq!(engine::start_tracepoint(0), "engine_tp_start");
        assert_eq!(engine::start_tracepoint(2), "engine_tp_start_2");
        assert_eq!(engine::simple_tracepoint(1), "engine_tp_simple_1");
        assert_eq!(engine::tracepoint(63), "engine_tp_63");
    }
}
