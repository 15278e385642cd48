use std::time::UNIX_EPOCH;

use prost::Message as _;

use super::*;
use crate::stacks::{CodeAddress, FileLine};

fn burner() -> Arc<Mapping> {
    Arc::new(Mapping {
        start: 0x5000,
        end: 0x6000,
        file_offset: 0x1000,
        path: "/usr/bin/tk_burner".into(),
        build_id: Some(Arc::from([0xde, 0xad, 0xbe, 0xef])),
    })
}

fn line(file: &str, line: u32) -> Option<FileLine> {
    Some(FileLine {
        file: file.into(),
        line,
    })
}

/// main -> burn (with spin inlined into it) -> a kernel frame; a Python frame in pid 8.
fn stacks() -> Vec<Stack> {
    let mapping = burner();
    let main = Frame {
        address: Some(CodeAddress {
            address: 0x5010,
            mapping: Some(Arc::clone(&mapping)),
            lines: Some(Arc::from([line("/src/tk_burner.c", 40)])),
        }),
        ..Frame::user("main", Some("/usr/bin/tk_burner"))
    };
    let shared: Arc<[Option<FileLine>]> =
        Arc::from([line("/src/tk_burner.c", 21), line("/src/tk_burner.c", 12)]);
    let at_burn = CodeAddress {
        address: 0x5020,
        mapping: Some(mapping),
        lines: Some(shared),
    };
    let burn = Frame {
        address: Some(at_burn.clone()),
        ..Frame::user("burn", Some("/usr/bin/tk_burner"))
    };
    let spin = Frame {
        address: Some(at_burn),
        inlined: true,
        ..Frame::user("spin", Some("/usr/bin/tk_burner"))
    };
    let kernel = Frame {
        address: Some(CodeAddress {
            address: 0xffff_ffff_8100_0000,
            mapping: None,
            lines: None,
        }),
        ..Frame::kernel("asm_sysvec_apic_timer_interrupt")
    };
    vec![
        Stack {
            pid: 7,
            comm: "tk_burner".into(),
            cgroup: None,
            frames: vec![main.clone(), burn.clone(), spin.clone(), kernel.clone()],
            count: 3,
            time_slice: None,
        },
        Stack {
            pid: 7,
            comm: "worker".into(),
            cgroup: None,
            frames: vec![main, burn, spin, kernel],
            count: 2,
            time_slice: None,
        },
        Stack {
            pid: 8,
            comm: "python3".into(),
            cgroup: None,
            frames: vec![Frame::user("work (/app/job.py:9)", Some("[python]"))],
            count: 5,
            time_slice: None,
        },
    ]
}

fn info(pid: u32) -> ProcessInfo {
    match pid {
        7 => ProcessInfo {
            executable: Some("tk_burner".into()),
            service: Some("burner-svc".into()),
            cgroup: Some(format!(
                "/kubepods.slice/kubepods-pod0f3b5a1c_2d4e_4f60_8a9b_1c2d3e4f5a6b.slice/\
                 cri-containerd-{}.scope",
                "ab".repeat(32)
            )),
        },
        _ => ProcessInfo {
            executable: Some("python3.12".into()),
            service: None,
            cgroup: Some("/user.slice".into()),
        },
    }
}

fn attributes(resource: &otlp::ResourceProfiles) -> Vec<String> {
    resource
        .resource
        .as_ref()
        .unwrap()
        .attributes
        .iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(any_value::Value::StringValue(s)) => s.clone(),
                Some(any_value::Value::IntValue(i)) => i.to_string(),
                other => format!("{other:?}"),
            };
            format!("{}={value}", kv.key)
        })
        .collect()
}

/// Each sample's stack, leaf first, as `function file:line` per line of each location.
fn named(request: &ExportProfilesServiceRequest, sample: &otlp::Sample) -> Vec<String> {
    let dictionary = request.dictionary.as_ref().unwrap();
    let string = |i: i32| dictionary.string_table[i as usize].as_str();
    let stack = &dictionary.stack_table[sample.stack_index as usize];
    stack
        .location_indices
        .iter()
        .flat_map(|&l| &dictionary.location_table[l as usize].lines)
        .map(|line| {
            let function = &dictionary.function_table[line.function_index as usize];
            format!(
                "{} {}:{}",
                string(function.name_strindex),
                string(function.filename_strindex),
                line.line
            )
        })
        .collect()
}

#[test]
fn processes_are_resources_and_frames_have_lines() {
    let options = OtlpOptions {
        kind: SampleKind::Cpu { hz: 100 },
        start: UNIX_EPOCH + Duration::from_secs(1_700_000_000),
        duration: Duration::from_secs(15),
        host: "web1".into(),
        process: &info,
    };
    let request = build(&stacks(), &options);
    assert_eq!(sample_count(&request), 10);
    assert_eq!(request.resource_profiles.len(), 2);
    assert_eq!(
        attributes(&request.resource_profiles[0]),
        [
            "host.name=web1",
            "process.pid=7",
            "process.executable.name=tk_burner",
            "service.name=burner-svc",
            &format!("container.id={}", "ab".repeat(32)),
            "k8s.pod.uid=0f3b5a1c-2d4e-4f60-8a9b-1c2d3e4f5a6b",
        ]
    );
    assert_eq!(
        attributes(&request.resource_profiles[1]),
        [
            "host.name=web1",
            "process.pid=8",
            "process.executable.name=python3.12",
            "service.name=unknown_service:python3.12",
        ]
    );
    let profile = &request.resource_profiles[0].scope_profiles[0].profiles[0];
    assert_eq!(profile.period, 10_000_000);
    assert_eq!(profile.time_unix_nano, 1_700_000_000_000_000_000);
    assert_eq!(profile.duration_nano, 15_000_000_000);
    assert_eq!(profile.profile_id.len(), 16);
    let values: Vec<_> = profile.samples.iter().map(|s| s.values.clone()).collect();
    assert_eq!(values, [vec![3], vec![2]]);
    assert_eq!(
        named(&request, &profile.samples[0]),
        [
            "asm_sysvec_apic_timer_interrupt :0",
            "spin /src/tk_burner.c:12",
            "burn /src/tk_burner.c:21",
            "main /src/tk_burner.c:40",
        ]
    );
    // The same stack in another thread: the same stack index, another thread.name.
    assert_eq!(
        profile.samples[0].stack_index,
        profile.samples[1].stack_index
    );
    assert_ne!(
        profile.samples[0].attribute_indices,
        profile.samples[1].attribute_indices
    );
    let python = &request.resource_profiles[1].scope_profiles[0].profiles[0];
    assert_eq!(named(&request, &python.samples[0]), ["work /app/job.py:9"]);
    let dictionary = request.dictionary.as_ref().unwrap();
    // The zero values at index 0 of every table.
    assert_eq!(dictionary.string_table[0], "");
    assert_eq!(dictionary.location_table[0], otlp::Location::default());
    assert_eq!(dictionary.mapping_table.len(), 2);
    let mapping = &dictionary.mapping_table[1];
    assert_eq!(
        dictionary.string_table[mapping.filename_strindex as usize],
        "/usr/bin/tk_burner"
    );
    let types: Vec<_> = dictionary
        .location_table
        .iter()
        .skip(1)
        .map(|l| {
            let kv = &dictionary.attribute_table[l.attribute_indices[0] as usize];
            match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(any_value::Value::StringValue(s)) => s.clone(),
                _ => String::new(),
            }
        })
        .collect();
    assert_eq!(types, ["native", "native", "kernel", "cpython"]);
    // Round trip through the wire format.
    let bytes = encode(&request);
    assert_eq!(
        ExportProfilesServiceRequest::decode(bytes.as_slice()).unwrap(),
        request
    );
}
