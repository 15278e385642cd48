use std::time::UNIX_EPOCH;

use super::*;
use crate::stacks::CodeAddress;

fn at(mut frame: Frame, address: u64, mapping: Option<&Arc<Mapping>>) -> Frame {
    frame.address = Some(CodeAddress {
        address,
        mapping: mapping.cloned(),
        lines: None,
    });
    frame
}

fn inlined(frame: Frame) -> Frame {
    Frame {
        inlined: true,
        ..frame
    }
}

fn burner() -> Arc<Mapping> {
    Arc::new(Mapping {
        start: 0x5000,
        end: 0x6000,
        file_offset: 0x1000,
        path: "/usr/bin/tk_burner".into(),
        build_id: Some(Arc::from([0xde, 0xad, 0xbe, 0xef])),
    })
}

fn libc() -> Arc<Mapping> {
    Arc::new(Mapping {
        start: 0x7000,
        end: 0x8000,
        file_offset: 0x26000,
        path: "/usr/lib/x86_64-linux-gnu/libc.so.6".into(),
        build_id: None,
    })
}

fn s(profile: &proto::Profile, index: i64) -> &str {
    &profile.string_table[index as usize]
}

fn mapping(profile: &proto::Profile, id: u64) -> Option<&proto::Mapping> {
    profile.mapping.iter().find(|m| m.id == id)
}

/// A readable view of a profile: each sample as its values, labels, and the locations'
/// (mapping file, address, functions innermost first), leaf first.
fn view(profile: &proto::Profile) -> Vec<String> {
    let location = |id: u64| &profile.location[id as usize - 1];
    let function = |id: u64| s(profile, profile.function[id as usize - 1].name);
    profile
        .sample
        .iter()
        .map(|sample| {
            let labels: Vec<String> = sample
                .label
                .iter()
                .map(|l| format!("{}={}", s(profile, l.key), s(profile, l.str)))
                .collect();
            let locations: Vec<String> = sample
                .location_id
                .iter()
                .map(|&id| {
                    let loc = location(id);
                    let file = match mapping(profile, loc.mapping_id) {
                        None => "-",
                        Some(m) => s(profile, m.filename),
                    };
                    let names: Vec<&str> =
                        loc.line.iter().map(|l| function(l.function_id)).collect();
                    format!("{file}@{:#x}:{}", loc.address, names.join("+"))
                })
                .collect();
            format!(
                "{:?} {} | {}",
                sample.value,
                labels.join(","),
                locations.join(" < ")
            )
        })
        .collect()
}

fn profile_of(stacks: &[Stack], kind: SampleKind) -> proto::Profile {
    let cgroup = |pid: u32| (pid == 42).then(|| "/system.slice/burner.service".to_string());
    let options = PprofOptions {
        cgroup: &cgroup,
        comments: vec!["tracekit profile".into()],
        ..PprofOptions::new(
            kind,
            UNIX_EPOCH + Duration::from_secs(1_700_000_000),
            Duration::from_millis(2500),
        )
    };
    build(stacks, &options)
}

fn burner_stacks() -> Vec<Stack> {
    let burner = burner();
    let libc = libc();
    let user = |name: &str, address| {
        at(
            Frame::user(name, Some("/usr/bin/tk_burner")),
            address,
            Some(&burner),
        )
    };
    let start = at(
        Frame::user("__libc_start_call_main", Some("/usr/lib/libc.so.6")),
        0x7100,
        Some(&libc),
    );
    // libc's start -> main -> a -> b (with c inlined into b) -> leaf.
    let chain = vec![
        start,
        user("main", 0x5100),
        user("a", 0x5200),
        user("b", 0x5300),
        inlined(user("c", 0x5300)),
        user("leaf", 0x5400),
    ];
    let mut into_kernel = chain.clone();
    into_kernel.push(at(
        Frame::kernel("asm_sysvec_apic_timer_interrupt"),
        0xffff_8000,
        None,
    ));
    vec![
        Stack {
            pid: 42,
            comm: "tk_burner".into(),
            cgroup: None,
            frames: into_kernel,
            count: 5,
            time_slice: None,
        },
        // The same path without the kernel part: shares every user location.
        Stack {
            pid: 42,
            comm: "tk_burner".into(),
            cgroup: None,
            frames: chain,
            count: 90,
            time_slice: None,
        },
        // Another process; an unknown frame without an address or mapping.
        Stack {
            pid: 7,
            comm: "other".into(),
            cgroup: None,
            frames: vec![Frame::user("[unknown]", None)],
            count: 2,
            time_slice: None,
        },
    ]
}

#[test]
fn cpu_profile_as_go_writes_it() {
    let profile = profile_of(&burner_stacks(), SampleKind::Cpu { hz: 99 });
    assert_eq!(profile.string_table[0], "");
    let types: Vec<(&str, &str)> = profile
        .sample_type
        .iter()
        .map(|t| (s(&profile, t.r#type), s(&profile, t.unit)))
        .collect();
    assert_eq!(types, [("samples", "count"), ("cpu", "nanoseconds")]);
    let period_type = profile.period_type.unwrap();
    assert_eq!(
        (
            s(&profile, period_type.r#type),
            s(&profile, period_type.unit)
        ),
        ("cpu", "nanoseconds")
    );
    assert_eq!(profile.period, 10_101_010);
    assert_eq!(profile.time_nanos, 1_700_000_000_000_000_000);
    assert_eq!(profile.duration_nanos, 2_500_000_000);
    assert_eq!(profile.comment.len(), 1);
    assert_eq!(s(&profile, profile.comment[0]), "tracekit profile");

    assert_eq!(
        view(&profile),
        [
            "[5, 50505050] pid=42,comm=tk_burner,cgroup=/system.slice/burner.service | \
             [kernel.kallsyms]@0xffff8000:asm_sysvec_apic_timer_interrupt < \
             /usr/bin/tk_burner@0x5400:leaf < /usr/bin/tk_burner@0x5300:c+b < \
             /usr/bin/tk_burner@0x5200:a < /usr/bin/tk_burner@0x5100:main < \
             /usr/lib/x86_64-linux-gnu/libc.so.6@0x7100:__libc_start_call_main",
            "[90, 909090900] pid=42,comm=tk_burner,cgroup=/system.slice/burner.service | \
             /usr/bin/tk_burner@0x5400:leaf < /usr/bin/tk_burner@0x5300:c+b < \
             /usr/bin/tk_burner@0x5200:a < /usr/bin/tk_burner@0x5100:main < \
             /usr/lib/x86_64-linux-gnu/libc.so.6@0x7100:__libc_start_call_main",
            "[2, 20202020] pid=7,comm=other | -@0x0:[unknown]",
        ]
    );
    // Shared locations: 5 user + 1 kernel + 1 unknown.
    assert_eq!(profile.location.len(), 7);
    assert_eq!(profile.function.len(), 8);

    // The main binary first (pprof's "File:"), though libc was met first.
    let ids: Vec<u64> = profile.mapping.iter().map(|m| m.id).collect();
    assert_eq!(ids, [2, 1, 3]);
    let user = &profile.mapping[0];
    assert_eq!(
        (
            user.id,
            user.memory_start,
            user.memory_limit,
            user.file_offset
        ),
        (2, 0x5000, 0x6000, 0x1000)
    );
    assert_eq!(s(&profile, user.filename), "/usr/bin/tk_burner");
    assert_eq!(s(&profile, user.build_id), "deadbeef");
    assert!(user.has_functions && user.has_inline_frames);
    let libc = &profile.mapping[1];
    assert_eq!(
        (
            libc.memory_start,
            libc.file_offset,
            s(&profile, libc.build_id)
        ),
        (0x7000, 0x26000, "")
    );
    let kernel = &profile.mapping[2];
    assert_eq!(s(&profile, kernel.filename), "[kernel.kallsyms]");
    assert_eq!(
        (kernel.memory_start, kernel.memory_limit),
        (0xffff_8000, 0xffff_8001)
    );
    assert!(kernel.has_functions);
}

#[test]
fn same_path_and_labels_merge_into_one_sample() {
    let mut stacks = burner_stacks();
    stacks.push(stacks[1].clone());
    let profile = profile_of(&stacks, SampleKind::Events);
    assert_eq!(profile.sample.len(), 3);
    assert_eq!(profile.sample[1].value, [180]);
    let t = profile.sample_type[0];
    assert_eq!(
        (s(&profile, t.r#type), s(&profile, t.unit)),
        ("events", "count")
    );
    assert_eq!(profile.period, 1);
}

/// Interpreted frames: the function is named alone, filed under its source, its line on the
/// location; the system name (`function (file)`) differs from the name so that readers
/// keep `<module>` as it is.
#[test]
fn interpreted_frames_keep_their_names_files_and_lines() {
    let python = |symbol: &str| Frame::user(symbol, Some(crate::unwind::interp::PYTHON_MODULE));
    let stacks = [Stack {
        pid: 9,
        comm: "python3".into(),
        cgroup: None,
        frames: vec![
            python("<module> (/srv/app.py:32)"),
            python("leaf (/srv/app.py:12)"),
        ],
        count: 3,
        time_slice: None,
    }];
    let profile = profile_of(&stacks, SampleKind::Events);
    let functions: Vec<(&str, &str, &str)> = profile
        .function
        .iter()
        .map(|f| {
            (
                s(&profile, f.name),
                s(&profile, f.system_name),
                s(&profile, f.filename),
            )
        })
        .collect();
    assert_eq!(
        functions,
        [
            ("<module>", "<module> (/srv/app.py)", "/srv/app.py"),
            ("leaf", "leaf (/srv/app.py)", "/srv/app.py"),
        ]
    );
    let lines: Vec<i64> = profile.sample[0]
        .location_id
        .iter()
        .map(|&id| profile.location[id as usize - 1].line[0].line)
        .collect();
    assert_eq!(lines, [12, 32]);
}

#[test]
fn offcpu_microseconds_become_nanoseconds() {
    let profile = profile_of(&burner_stacks()[2..], SampleKind::OffCpuMicros);
    let t = profile.sample_type[0];
    assert_eq!(
        (s(&profile, t.r#type), s(&profile, t.unit)),
        ("offcpu", "nanoseconds")
    );
    assert_eq!(profile.sample[0].value, [2000]);
}

#[test]
fn gzip_round_trip() {
    let profile = profile_of(&burner_stacks(), SampleKind::Cpu { hz: 99 });
    let bytes = encode(&profile);
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip magic");
    assert_eq!(decode(&bytes).unwrap(), profile);
    assert_eq!(decode(&profile.encode_to_vec()).unwrap(), profile);
    assert!(decode(b"\x1f\x8bnot gzip").is_err());
}

#[inline(never)]
fn marker_function_for_pprof() -> u64 {
    std::hint::black_box(11)
}

/// A real stack of this process, named by the symbolizer: its location has the
/// address looked up and this test binary's mapping, with its build ID.
#[test]
fn symbolized_own_code_keeps_address_and_mapping() {
    let addr = marker_function_for_pprof as *const () as u64;
    let mut symbolizer = crate::symbolize::Symbolizer::default();
    let pid = std::process::id();
    symbolizer.remember_process(pid);
    let frames = symbolizer.user_stack(pid, &[addr]);
    let stacks = [Stack {
        pid,
        comm: "test".into(),
        cgroup: None,
        frames,
        count: 1,
        time_slice: None,
    }];
    let profile = build(
        &stacks,
        &PprofOptions::new(SampleKind::Events, UNIX_EPOCH, Duration::ZERO),
    );
    let location = &profile.location[profile.sample[0].location_id[0] as usize - 1];
    assert_eq!(location.address, addr);
    let function = &profile.function[location.line[0].function_id as usize - 1];
    assert!(s(&profile, function.name).ends_with("marker_function_for_pprof"));
    let mapping = mapping(&profile, location.mapping_id).unwrap();
    let exe = std::fs::read_link("/proc/self/exe").unwrap();
    assert_eq!(s(&profile, mapping.filename), exe.to_str().unwrap());
    assert!(mapping.memory_start <= addr && addr < mapping.memory_limit);
    let build_id = blazesym::helper::read_elf_build_id(&exe).unwrap().unwrap();
    let hex: String = build_id.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(s(&profile, mapping.build_id), hex);
}

/// The wire format itself, byte for byte, for one small message: field numbers and
/// wire types as profile.proto has them (ValueType 1 and 2 varints; Sample location_id
/// 1 and value 2 packed).
#[test]
fn wire_format_matches_profile_proto() {
    let value_type = proto::ValueType { r#type: 1, unit: 2 };
    assert_eq!(value_type.encode_to_vec(), [0x08, 1, 0x10, 2]);
    let sample = proto::Sample {
        location_id: vec![3, 4],
        value: vec![5],
        label: vec![],
    };
    assert_eq!(sample.encode_to_vec(), [0x0a, 2, 3, 4, 0x12, 1, 5]);
    let mapping = proto::Mapping {
        id: 1,
        has_functions: true,
        ..Default::default()
    };
    assert_eq!(mapping.encode_to_vec(), [0x08, 1, 0x38, 1]);
}
