//! The table's checks: every tool complete, its plan compiling, its flags' values.

use super::*;

/// Every tool has a summary naming what it follows, examples of itself, a plan that
/// builds with its defaults unless it needs an argument, and, when that plan counts or
/// histograms, a metric the exporter serves by its name.
#[test]
fn every_tool_is_complete() {
    let mut names = std::collections::HashSet::new();
    for tool in TOOLS {
        assert!(names.insert(tool.name), "{} twice", tool.name);
        assert!(!tool.summary.is_empty() && !tool.summary.contains('\n'));
        assert!(!tool.summary.ends_with('.'), "{}", tool.name);
        let prefix = format!("  tracekit {}", tool.name);
        let examples: Vec<&str> = tool
            .examples
            .lines()
            .take_while(|l| !l.is_empty())
            .collect();
        assert!(examples.len() >= 2, "{}: {examples:?}", tool.name);
        for line in examples {
            assert!(line.starts_with(&prefix), "{}: {line}", tool.name);
        }
        let needs_argument = tool
            .flags
            .iter()
            .any(|f| matches!(f.kind, FlagKind::Positional { .. }));
        if needs_argument {
            assert!(
                (tool.plan)(&FlagValues::defaults(tool)).is_err(),
                "{}",
                tool.name
            );
            continue;
        }
        let plan = match (tool.plan)(&FlagValues::defaults(tool)) {
            // What this machine's kernel lacks (a filesystem module not loaded: nfsdist).
            Err(err @ crate::Error::Runtime { .. }) => {
                eprintln!("{}: not checked on this kernel: {err}", tool.name);
                continue;
            }
            plan => plan.unwrap(),
        };
        match plan {
            ToolPlan::Aggregate(_) => assert!(tool.metric.is_some(), "{}", tool.name),
            ToolPlan::Events(_) | ToolPlan::Memleak(_) => {
                assert!(tool.metric.is_none(), "{}", tool.name)
            }
        }
    }
}

/// Every tool's plan with its defaults, and with each of its switches on, compiles
/// against the checked-in tracefs format files of kernel 6.18 (tools that take a
/// function have their own tests; kernel functions have no format files).
#[test]
fn every_plan_compiles_against_the_format_files() {
    use crate::engine::compile::{Events, compile_in};
    let events = Events::test_6_18();
    for tool in TOOLS {
        if tool
            .flags
            .iter()
            .any(|f| matches!(f.kind, FlagKind::Positional { .. }))
        {
            continue;
        }
        let mut variants = vec![FlagValues::defaults(tool)];
        for flag in tool.flags {
            if let FlagKind::Switch = flag.kind {
                let mut values = FlagValues::defaults(tool);
                values.set(flag.long, Value::Switch(true));
                variants.push(values);
            }
        }
        for values in variants {
            let request = match (tool.plan)(&values) {
                // What this machine's kernel lacks, as above.
                Err(err @ crate::Error::Runtime { .. }) => {
                    eprintln!("{}: not compiled on this kernel: {err}", tool.name);
                    continue;
                }
                plan => plan.unwrap(),
            };
            let requests = match request {
                ToolPlan::Aggregate(job) => vec![job.request],
                // Every probe group (fsslower's opens and fsyncs).
                ToolPlan::Events(job) => std::iter::once(job.request)
                    .chain(job.parts.into_iter().map(|part| part.request))
                    .collect(),
                // Its specs are built from libc or the kmem format files when it runs.
                ToolPlan::Memleak(_) => continue,
            };
            for request in requests {
                if let Err(err) = compile_in(&request, &events) {
                    panic!("{}: {err}\n{values:?}", tool.name);
                }
            }
        }
    }
}

/// A tool that prints events is data too: an execsnoop-like table entry, its plan a
/// `Shape::Trace` request whose columns compile against the format files.
#[test]
fn event_tools_are_data() {
    use crate::engine::compile::{Events, compile_in};
    const EXECS: Tool = Tool {
        name: "execs",
        summary: "Print each exec (test)",
        examples: "  tracekit execs -d 5\n  tracekit execs --json",
        flags: &[Flag::text("name", "COMM", "Only this command name")],
        groups: &[Group::Common],
        plan: |values| {
            let mut job = EventsJob::new(
                "sched:sched_process_exec",
                &[
                    Column {
                        header: "PID",
                        field: "pid",
                    },
                    Column {
                        header: "OLDPID",
                        field: "old_pid",
                    },
                ],
            );
            job.request.filter = values.text("name").map(|c| format!("comm == \"{c}\""));
            Ok(ToolPlan::Events(job))
        },
        metric: None,
    };
    let mut values = FlagValues::defaults(&EXECS);
    values.set("name", Value::Text("sh".into()));
    let ToolPlan::Events(job) = (EXECS.plan)(&values).unwrap() else {
        panic!("events");
    };
    assert_eq!(job.request.print, ["old_pid"]);
    assert_eq!(job.request.filter.as_deref(), Some("comm == \"sh\""));
    let compiled = compile_in(&job.request, &Events::test_6_18()).unwrap();
    assert!(
        compiled.listing().contains("sched_process_exec"),
        "{}",
        compiled.listing()
    );
}

#[test]
fn values_default_to_the_flags_defaults() {
    let values = FlagValues::defaults(&syscount::TOOL);
    assert_eq!(values.number("top"), Some(10));
    assert!(!values.switch("latency"));
    assert_eq!(values.text("by"), None);
    let values = FlagValues::defaults(&runqlat::TOOL);
    assert_eq!(values.unit(), LatencyUnit::US);
    let mut values = FlagValues::defaults(&funclatency::TOOL);
    assert!(values.list("function").is_empty());
    values.set("unit", Value::Text("ms".into()));
    values.set("function", Value::List(vec!["vfs_read".into()]));
    assert_eq!(values.unit().header, "msecs");
    assert_eq!(values.text("function"), Some("vfs_read"));
}

#[test]
fn comm_filters_quote_the_name() {
    const T: Tool = Tool {
        name: "t",
        summary: "t",
        examples: "",
        flags: &[NAME],
        groups: &[Group::Common],
        plan: |_| Err(crate::Error::usage("t")),
        metric: None,
    };
    let filter = |comm: &str| {
        let mut values = FlagValues::defaults(&T);
        values.set("name", Value::Text(comm.into()));
        values.comm_filter().map_err(|e| e.to_string())
    };
    assert_eq!(FlagValues::defaults(&T).comm_filter().unwrap(), None);
    assert_eq!(filter("bash"), Ok(Some("comm == \"bash\"".into())));
    assert_eq!(filter("a\"b"), Ok(Some("comm == 'a\"b'".into())));
    assert_eq!(
        filter("a\"'b"),
        Err("--name a\"'b: a command name with both quote characters cannot be matched".into())
    );
}

#[test]
fn metric_labels_name_fields() {
    let metric = biolatency::TOOL.metric.unwrap();
    assert_eq!(metric.field("disk"), "dev");
    assert_eq!(metric.field("op"), "rwbs");
    assert_eq!(metric.field("comm"), "comm");
}
