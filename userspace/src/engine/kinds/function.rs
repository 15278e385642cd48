//! Kernel functions (kprobe, kretprobe, fentry, fexit) and user functions (uprobe,
//! uretprobe): six kinds, one compile step. The kernel's take BTF parameters as fields, all
//! take `retval` and `latency` at the return.

pub mod fentry;
pub mod kernel_function;
pub mod kprobe;
pub mod kprobe_multi;
pub mod kretprobe_event;
pub mod uprobe;

use std::{collections::BTreeMap, sync::Arc};

use tracekit_common::engine::operand;

use crate::{
    Error, Result,
    engine::{
        Stage,
        attach::Attach,
        compile::{
            body::*,
            start::{EventAttach, StartStage, compile_start},
            *,
        },
        keys::{KeyColumn, KeyKind},
        kinds::{
            Kind, ProbeSpec,
            function::{kernel_function::KernelFunctions, uprobe::Uprobes},
        },
        plan::{PlanBuilder, saved_operand, saved_string_operand, simple_operand},
        request::Request,
        spec::KernelAttach,
    },
    error::quote,
    probe::{
        fields::{FieldRef, Fields, FunctionFields, ValueType, builtin},
        functions::{self, KernelBtf},
    },
};

/// A kernel function's entry or return, through kprobes or BPF trampolines.
#[derive(Debug)]
pub struct KernelFunctionKind {
    names: &'static [&'static str],
    pub(super) is_return: bool,
    pub(super) trampoline: bool,
}

/// `kprobe:`/`k:`: kernel function entry, through kprobes (or trampolines where `--how`
/// asks).
pub static KPROBE: KernelFunctionKind = KernelFunctionKind {
    names: &["kprobe", "k"],
    is_return: false,
    trampoline: false,
};
/// `kretprobe:`/`kr:`: kernel function return, through kretprobes.
pub static KRETPROBE: KernelFunctionKind = KernelFunctionKind {
    names: &["kretprobe", "kr"],
    is_return: true,
    trampoline: false,
};
/// `fentry:`/`f:`/`kfunc:`: kernel function entry, through BPF trampolines.
pub static FENTRY: KernelFunctionKind = KernelFunctionKind {
    names: &["fentry", "f", "kfunc"],
    is_return: false,
    trampoline: true,
};
/// `fexit:`/`fr:`/`kretfunc:`: kernel function return, through BPF trampolines.
pub static FEXIT: KernelFunctionKind = KernelFunctionKind {
    names: &["fexit", "fr", "kretfunc"],
    is_return: true,
    trampoline: true,
};

impl Kind for KernelFunctionKind {
    fn names(&self) -> &'static [&'static str] {
        self.names
    }

    fn compile(&self, specs: &[ProbeSpec], request: &Request, _: &Events) -> Result<Compiled> {
        function_specs(&specs[0], request, self.is_return, false, self.trampoline)
    }

    /// A kernel function's entry begins a pair (filelife: a file's creation, paired with
    /// its unlink by the dentry); its BTF parameters are its fields.
    fn begin_event(
        &self,
        spec: &ProbeSpec,
        _tracefs: &std::path::Path,
    ) -> Result<(Box<dyn Fields>, EventAttach)> {
        if self.is_return {
            return Err(Error::usage(format!(
                "probe `{}`: a start stage begins at a function's entry (kprobe:, fentry:)",
                quote(&spec.text)
            )));
        }
        let btf = KernelBtf::open();
        let found = functions::kernel_functions(&spec.target, btf.as_ref())?;
        let params = match (&btf, found.as_slice()) {
            (Some(btf), [one]) => btf.params(one).unwrap_or_default(),
            _ => Vec::new(),
        };
        let fields = FunctionFields {
            event: spec.text.clone(),
            is_return: false,
            params,
            user: false,
        };
        Ok((
            Box::new(fields),
            EventAttach::Function {
                functions: found,
                trampoline: self.trampoline,
            },
        ))
    }

    fn needs_tracefs(&self) -> bool {
        false
    }

    /// Each function's BTF parameters (where the kernel has BTF), `retval` and `latency`.
    fn fields(
        &self,
        spec: &ProbeSpec,
        _pid: Option<u32>,
        _tracefs: &dyn Fn() -> Result<std::path::PathBuf>,
    ) -> Result<String> {
        let mut out = String::new();
        let btf = KernelBtf::open();
        let found = functions::kernel_functions(&spec.target, btf.as_ref())?;
        for function in found {
            let params = btf
                .as_ref()
                .and_then(|btf| btf.params(&function))
                .unwrap_or_default();
            let fields = FunctionFields {
                event: format!("{}:{function}", self.name()),
                is_return: self.is_return,
                params,
                user: false,
            };
            out.push_str(&format!("{}: {}\n", fields.event_name(), fields.describe()));
        }
        Ok(out)
    }
}

/// A user function's entry or return, through uprobes.
#[derive(Debug)]
pub struct UserFunctionKind {
    names: &'static [&'static str],
    pub(super) is_return: bool,
}

/// `uprobe:`/`u:`: user function entry.
pub static UPROBE: UserFunctionKind = UserFunctionKind {
    names: &["uprobe", "u"],
    is_return: false,
};
/// `uretprobe:`/`ur:`: user function return.
pub static URETPROBE: UserFunctionKind = UserFunctionKind {
    names: &["uretprobe", "ur"],
    is_return: true,
};

impl Kind for UserFunctionKind {
    fn names(&self) -> &'static [&'static str] {
        self.names
    }

    fn compile(&self, specs: &[ProbeSpec], request: &Request, _: &Events) -> Result<Compiled> {
        function_specs(&specs[0], request, self.is_return, true, false)
    }

    /// `retval` and `latency` at the return; arguments by register (`arg0`..).
    fn fields(
        &self,
        spec: &ProbeSpec,
        _pid: Option<u32>,
        _tracefs: &dyn Fn() -> Result<std::path::PathBuf>,
    ) -> Result<String> {
        let fields = FunctionFields {
            event: spec.text.clone(),
            is_return: self.is_return,
            params: Vec::new(),
            user: true,
        };
        Ok(format!("{}: {}\n", fields.event_name(), fields.describe()))
    }
}

/// Kernel (kprobe, kretprobe, fentry, fexit) and user (uprobe, uretprobe) functions.
fn function_specs(
    spec: &ProbeSpec,
    request: &Request,
    is_return: bool,
    user: bool,
    trampoline: bool,
) -> Result<Compiled> {
    // A start stage of its own (kernel function entries): this probe is its end event.
    let explicit: Option<StartStage> = match &request.start {
        Some(start) if !user && !is_return => {
            Some(compile_start(start, request, std::path::Path::new(""))?)
        }
        _ => {
            no_start(spec, request)?;
            None
        }
    };
    let names_used = request.names();
    let entry_values: Vec<&String> = names_used
        .iter()
        .filter(|n| n.starts_with("start.") && explicit.is_none())
        .collect();
    let uses_latency = explicit.is_none()
        && (names_used.iter().any(|n| n == "latency") || !entry_values.is_empty());
    if uses_latency && !is_return {
        return Err(Error::usage(format!(
            "probe `{}`: latency and start.ARG are known at the function's return; use \
             kretprobe:, fexit: or uretprobe:",
            quote(&spec.text)
        )));
    }
    let target = request.target;
    let (names, params, entry_attach, main_attach, what): (_, _, Attach, Attach, _) = if user {
        let (path, pattern) = spec.target.rsplit_once(':').ok_or_else(|| {
            Error::usage(format!(
                "probe `{}`: a user probe is {}:BINARY:FUNCTION (e.g. uprobe:libc:malloc)",
                quote(&spec.text),
                spec.kind.name()
            ))
        })?;
        let binary = functions::resolve_binary(path, target.pid)?;
        let found = functions::user_functions(&binary, pattern)?;
        let offsets: Vec<u64> = found.iter().map(|f| f.file_offset).collect();
        let names: Vec<String> = found.into_iter().map(|f| f.name).collect();
        let attach = |ret| -> Attach {
            Arc::new(Uprobes {
                binary: binary.clone(),
                offsets: offsets.clone(),
                pid: target.pid,
                ret,
            })
        };
        let what = format!(
            "{}:{}:{pattern} ({} function{})",
            spec.kind.name(),
            binary.display(),
            names.len(),
            if names.len() == 1 { "" } else { "s" }
        );
        (names, Vec::new(), attach(false), attach(is_return), what)
    } else {
        let btf = KernelBtf::open();
        let found = functions::kernel_functions(&spec.target, btf.as_ref())?;
        // One function's parameters; a few functions' when they are the same
        // (`tcp_v*_syn_recv_sock`), so that their names and paths read alike in each.
        let params = match &btf {
            Some(btf) if (1..=8).contains(&found.len()) => {
                let all: Vec<_> = found
                    .iter()
                    .map(|f| btf.params(f).unwrap_or_default())
                    .collect();
                if all.windows(2).all(|pair| pair[0] == pair[1]) {
                    all.into_iter().next().unwrap_or_default()
                } else {
                    Vec::new()
                }
            }
            _ => Vec::new(),
        };
        let how = if trampoline {
            KernelAttach::Fentry
        } else {
            target.how
        };
        // A struct passed by value takes as many words as it has (BTF's
        // `btf_distill_func_proto`).
        let param_words = params.iter().map(|p| p.size.div_ceil(8).max(1)).sum();
        let attach = |ret| -> Attach {
            Arc::new(KernelFunctions {
                functions: found.clone(),
                ret,
                how,
                param_words,
            })
        };
        let what = if found.len() == 1 {
            spec.text.clone()
        } else {
            format!(
                "{} ({})",
                spec.text,
                crate::error::plural(found.len(), "function", "functions")
            )
        };
        (
            found.clone(),
            params,
            attach(false),
            attach(is_return),
            what,
        )
    };
    let fields = FunctionFields {
        event: spec.text.clone(),
        is_return,
        params,
        user,
    };
    // Which function fired: the attach cookie (uprobes) or the function's address (kernel).
    let several = names.len() > 1;
    if several {
        several_functions_supported(&spec.text, user)?;
    }
    let function_key = if user || !several {
        simple_operand(operand::EVENT_INDEX)
    } else {
        simple_operand(operand::FUNC_IP)
    };
    // Before 5.15 a kprobe's function is known at entry only: the return reads the one its
    // thread's entry saved (an entry stage of its own when nothing else needs one), and
    // entry and return meet by thread alone, as bcc's funclatency pairs several functions
    // (nested calls of two of them then pair wrongly).
    let function_saved = several && !user && is_return && !crate::bpf::features::probes().func_ip;
    let entry_stage = uses_latency || function_saved;
    let mut return_function = None;
    // The entry's values the return reads (`start.str(arg0)`, `start.arg1`), saved with
    // the entry's time.
    let mut start = PlanBuilder::new();
    let mut saved = BTreeMap::new();
    if entry_stage {
        let entry = FunctionFields {
            event: fields.event.clone(),
            is_return: false,
            params: fields.params.clone(),
            user: fields.user,
        };
        let tid = builtin("tid").expect("builtin").operand;
        let tid_start = start.operand(tid)?;
        start.corr_part(tid_start);
        if several && !function_saved {
            let key_start = start.operand(function_key)?;
            start.corr_part(key_start);
        }
        // Strings first: a saved string takes the first four words (16 bytes or less: two).
        let mut fields = Vec::new();
        for name in &entry_values {
            let field = resolve(&entry, "start", &name["start.".len()..])?;
            fields.push((field.ty != ValueType::Str, *name, field));
        }
        fields.sort_by_key(|(number, ..)| *number);
        for (_, name, field) in fields {
            if saved.contains_key(name) {
                continue;
            }
            let index = start.operand(field.operand)?;
            let slot = start.save(index)?;
            let operand = if field.ty == ValueType::Str {
                saved_string_operand(&field.operand)
            } else {
                saved_operand(slot)
            };
            saved.insert(name.clone(), FieldRef { operand, ..field });
        }
        if function_saved {
            let entry_function = start.operand(function_key)?;
            return_function = Some(saved_operand(start.save(entry_function)?));
        }
    }
    let mut main = PlanBuilder::new();
    let mut columns = Vec::new();
    if request.by_event || several {
        let index = main.operand(return_function.unwrap_or(function_key))?;
        main.key_part(index)?;
        let by_index = function_key.kind == operand::EVENT_INDEX;
        columns.push(Column {
            column: KeyColumn {
                name: "function".into(),
                kind: if by_index {
                    KeyKind::Event(
                        names
                            .iter()
                            .cloned()
                            .enumerate()
                            .map(|(i, n)| (i as u64, n))
                            .collect(),
                    )
                } else {
                    KeyKind::KernelFunction
                },
            },
            bound: by_index.then_some(names.len() as u32),
        });
    }
    let key_operand = if request.by_event || several {
        main.plan().key_parts[0]
    } else {
        0
    };
    if let Some(stage) = &explicit {
        saved = stage.saved.clone();
    }
    let end_fields = EndFields {
        fields: &fields,
        saved: &saved,
    };
    if let (Some(_), Some(start)) = (&explicit, &request.start) {
        for name in &start.end_pair {
            let field = resolve(&end_fields, "end", name)?;
            let index = main.operand(field.operand)?;
            main.corr_part(index);
        }
        main.needs_start();
        if start.keep {
            main.keep_start();
        }
    }
    let body_fields: &dyn Fields = if uses_latency || explicit.is_some() {
        &end_fields
    } else {
        &fields
    };
    let (more, prints) = compile_body(&mut main, body_fields, request)?;
    columns.extend(more);
    let events = if function_key.kind == operand::FUNC_IP {
        EventNames::ByFunctionIp(key_operand)
    } else {
        EventNames::ByIndex(
            names
                .iter()
                .enumerate()
                .map(|(i, n)| (i as u32, format!("{}:{n}", spec.kind.name())))
                .collect(),
        )
    };
    let start = if entry_stage {
        // Entry and return meet per thread (and per function when there are several).
        let tid = builtin("tid").expect("builtin").operand;
        if !several || function_saved {
            start.by_thread();
        }
        let tid_main = main.operand(tid)?;
        main.corr_part(tid_main);
        if several && !function_saved {
            let key_main = main.operand(function_key)?;
            main.corr_part(key_main);
        }
        start.layout(None);
        main.needs_start();
        Some(Stage {
            plan: start.plan(),
            attach: entry_attach,
        })
    } else {
        explicit.map(|stage| stage.stage)
    };
    finish_layout(&mut main, &columns);
    Ok(Compiled {
        specs: vec![spec_of(main.plan(), main_attach, start, request)],
        columns: columns_of(columns),
        what,
        prints: vec![prints],
        events: vec![events],
    })
}

/// Whether the kernel tells several user functions of one probe apart: by attach cookie
/// (5.15+). Kernel functions always are: by `bpf_get_func_ip` (5.15+), else by the kprobe's
/// instruction pointer at entry, saved for the return.
///
/// # Errors
/// One line naming the helper and the kernel that has it, where the kernel lacks it.
fn several_functions_supported(probe: &str, user: bool) -> Result<()> {
    if user && !crate::bpf::features::probes().attach_cookie {
        return Err(Error::runtime(format!(
            "{probe}: telling several user functions apart needs bpf_get_attach_cookie              (Linux 5.15+), which this kernel lacks; probe one function at a time"
        )));
    }
    Ok(())
}
