//! What can be traced here, as `perf list` shows it: hardware events (with whether this
//! machine counts them), software events, tracepoints, kernel functions; and the fields of
//! a probe with their types.

use crate::{
    Error, Result,
    counters::{self, HARDWARE, SOFTWARE},
    probe::{
        self, ProbeKind, ProbeSpec,
        fields::{BUILTINS, Fields as _, FunctionFields},
        functions::{self, KernelBtf},
        glob_match,
        tracefs::{self, EventFormat},
    },
};

fn line(out: &mut String, name: &str, kind: &str) {
    out.push_str(&format!("  {name:<50} [{kind}]\n"));
}

/// Which kinds of event to list: perf list's class words, or everything a glob matches.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    All,
    Hardware,
    Software,
    Tracepoint,
}

/// `perf list`: every event whose name matches `glob` (hardware, with whether this machine
/// counts it; software; tracepoints; kernel functions, where tracefs shows them), or one
/// class (`hw`/`hardware`, `sw`/`software`, `tracepoint`).
pub fn events(glob: Option<&str>) -> Result<String> {
    let (class, glob) = match glob {
        Some("hw" | "hardware") => (Class::Hardware, None),
        Some("sw" | "software") => (Class::Software, None),
        Some("tracepoint" | "tracepoints") => (Class::Tracepoint, None),
        other => (Class::All, other),
    };
    let listed = |c: Class| class == Class::All || class == c;
    let wanted = |name: &str| glob.is_none_or(|g| glob_match(g, name));
    let mut out =
        String::from("\nList of events (-e of stat, probes of the tracing commands):\n\n");
    for (name, config) in HARDWARE {
        if listed(Class::Hardware) && wanted(name) {
            let kind = if counters::hardware_supported(*config) {
                "Hardware event"
            } else {
                "Hardware event, not supported here"
            };
            line(&mut out, name, kind);
        }
    }
    for (name, _) in SOFTWARE {
        if listed(Class::Software) && wanted(name) {
            line(&mut out, name, "Software event");
        }
    }
    if listed(Class::Tracepoint) {
        match tracefs::root().and_then(|root| probe::all_tracepoints(&root)) {
            Ok(tracepoints) => {
                for tp in tracepoints
                    .iter()
                    .map(ToString::to_string)
                    .filter(|n| wanted(n))
                {
                    line(&mut out, &tp, "Tracepoint event");
                }
            }
            // Asked for tracepoints: say why there are none, as an error.
            Err(err) if class == Class::Tracepoint || glob.is_some_and(|g| g.contains(':')) => {
                return Err(err);
            }
            Err(err) => out.push_str(&format!("\n  (tracepoints are not listed: {err})\n")),
        }
    }
    // Kernel function names have no `:`; a `system:event` glob is about tracepoints.
    if class == Class::All && glob.is_none_or(|g| !g.contains(':')) {
        match functions::traceable_kernel_functions() {
            Some(names) => match glob {
                Some(_) => {
                    for name in names.iter().filter(|n| wanted(n)) {
                        line(&mut out, name, "Kernel function");
                    }
                }
                None => out.push_str(&format!(
                    "\n  ({} traceable kernel functions; give a GLOB to list them, e.g. tracekit list 'vfs_*')\n",
                    names.len()
                )),
            },
            None => out.push_str(
                "\n  (kernel functions are not listed: this kernel does not let tracefs show \
                 available_filter_functions)\n",
            ),
        }
    }
    out.push('\n');
    Ok(out)
}

/// The fields of `probe` with their types (tracepoints: offsets and sizes too), as
/// `--value`, `--by`, `--filter` and `--print` take them.
///
/// # Errors
/// A usage error for a bad spec, or a probe kind without fields.
pub fn fields(text: &str) -> Result<String> {
    let spec = ProbeSpec::parse(text)?;
    let mut out = String::new();
    match spec.kind {
        ProbeKind::Tracepoint => {
            let root = tracefs::root()?;
            let all = probe::all_tracepoints(&root)?;
            for tp in probe::expand_tracepoints(&spec.target, &all)? {
                let format = EventFormat::read(&root, &tp.system, &tp.event)?;
                out.push_str(&format!("{tp} (id {}):\n", format.id));
                for field in format.fields.iter().filter(|f| !f.is_common()) {
                    let ty = if field.is_dynamic() {
                        "string (__data_loc)".to_string()
                    } else {
                        match field.array_len {
                            Some(n) => format!("{}[{n}]", field.c_type),
                            None => field.c_type.clone(),
                        }
                    };
                    out.push_str(&format!(
                        "  {:<24} {:<24} offset {:<4} size {}{}\n",
                        field.name,
                        ty,
                        field.offset,
                        field.size,
                        if field.signed { ", signed" } else { "" }
                    ));
                }
                let builtins: Vec<&str> = BUILTINS
                    .iter()
                    .copied()
                    .filter(|b| format.field(b).is_none())
                    .collect();
                out.push_str(&format!("  built-in: {}\n\n", builtins.join(", ")));
            }
        }
        ProbeKind::Kprobe | ProbeKind::Kretprobe | ProbeKind::Fentry | ProbeKind::Fexit => {
            let is_return = matches!(spec.kind, ProbeKind::Kretprobe | ProbeKind::Fexit);
            let btf = KernelBtf::open();
            let found = functions::kernel_functions(&spec.target, btf.as_ref())?;
            for function in found {
                let params = btf
                    .as_ref()
                    .and_then(|btf| btf.params(&function))
                    .unwrap_or_default();
                let fields = FunctionFields {
                    event: format!("{}:{function}", spec.kind.name()),
                    is_return,
                    params,
                };
                out.push_str(&format!("{}: {}\n", fields.event_name(), fields.describe()));
            }
        }
        ProbeKind::Uprobe | ProbeKind::Uretprobe => {
            let fields = FunctionFields {
                event: spec.text.clone(),
                is_return: spec.kind == ProbeKind::Uretprobe,
                params: Vec::new(),
            };
            out.push_str(&format!("{}: {}\n", fields.event_name(), fields.describe()));
        }
        other => {
            return Err(Error::usage(format!(
                "--fields {text}: {} events carry no fields beyond {}",
                other.name(),
                BUILTINS.join(", ")
            )));
        }
    }
    Ok(out)
}
