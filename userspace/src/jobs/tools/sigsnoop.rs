//! `tracekit sigsnoop`: each signal the kernel generates, whoever sends it (libbpf-tools'
//! `sigsnoop`), at `signal:signal_generate` (include/trace/events/signal.h): the sender (the
//! current task: `kill(2)`, `tgkill(2)`, or the kernel on its behalf, as SIGCHLD at exit or
//! SIGSEGV at a fault), the signal, the target and what became of it.

use super::{CLOCK, Column, EventsJob, FAILURES, Flag, FlagValues, Group, NAME, ToolPlan, TIMESTAMP, Tool};
use crate::{Error, Result, jobs::events::signal_name};

/// `tracekit sigsnoop`.
pub const TOOL: Tool = Tool {
    name: "sigsnoop",
    summary: "Print each signal generated, with its sender, target and result (bcc sigsnoop)",
    examples: "  tracekit sigsnoop                 # every signal of the machine until Ctrl-C
  tracekit sigsnoop -x              # only signals that were not delivered
  tracekit sigsnoop -k -s SIGTERM   # only SIGTERMs sent by kill(2)
  tracekit sigsnoop -p 1234 --signal-name -T

PID and COMM are the sender (for SIGCHLD, the exiting child; for a fault, the faulting task),
TPID the target. RESULT is the kernel's verdict (TRACE_SIGNAL_* of
include/trace/events/signal.h): 0 delivered, 1 ignored, 2 already pending, 3 queue overflow,
4 delivered without its siginfo, 5 lost to a wrong pid namespace.",
    flags: &[
        FAILURES.help("Only signals that were not delivered (RESULT not 0)"),
        Flag::switch("kill", "Only signals sent by kill(2) (si_code SI_USER)").short('k'),
        Flag::text(
            "signal",
            "SIG",
            "Only this signal, by number or name (9, KILL, SIGKILL)",
        )
        .short('s'),
        Flag::switch("signal-name", "Show SIG by name (SIGKILL) instead of number"),
        NAME,
        TIMESTAMP,
        CLOCK,
    ],
    groups: &[Group::Common, Group::Maps],
    plan: |values| sigsnoop(values).map(ToolPlan::Events),
    metric: None,
};

/// The columns: libbpf-tools' `PID COMM SIG TPID RESULT` (the record's `pid`/`comm` are
/// the sender; the tracepoint's own `pid` is the target).
pub const COLUMNS: [Column; 5] = [
    Column {
        header: "PID",
        field: "pid",
    },
    Column {
        header: "COMM",
        field: "comm",
    },
    Column {
        header: "SIG",
        field: "sig",
    },
    Column {
        header: "TPID",
        field: "field(pid)",
    },
    Column {
        header: "RESULT",
        field: "result",
    },
];

/// `si_code` of a signal sent by `kill(2)` (include/uapi/asm-generic/siginfo.h).
const SI_USER: i32 = 0;

fn sigsnoop(values: &FlagValues) -> Result<EventsJob> {
    let mut columns = COLUMNS;
    if values.switch("signal-name") {
        columns[2].field = "signal(sig)";
    }
    let mut filters = Vec::new();
    if values.switch(FAILURES.long) {
        filters.push("result != 0".to_string());
    }
    if values.switch("kill") {
        filters.push(format!("code == {SI_USER}"));
    }
    if let Some(signal) = values.text("signal") {
        filters.push(format!("sig == {}", signal_number(signal)?));
    }
    EventsJob::new("signal:signal_generate", &columns).with_flags(filters, values)
}

/// The number of signal `text`: digits (1-64), or a name with or without `SIG` (`KILL`,
/// `SIGKILL`, `SIGRTMIN+3`), case-insensitive.
///
/// # Errors
/// A usage error naming `text` and what is valid.
pub fn signal_number(text: &str) -> Result<i32> {
    let bad = || {
        Error::usage(format!(
            "--signal {}: not a signal; give a number from 1 to 64 or a name (KILL, SIGTERM, \
             SIGRTMIN+1)",
            crate::error::quote(text)
        ))
    };
    if let Ok(number) = text.parse::<i32>() {
        return (1..=64).contains(&number).then_some(number).ok_or_else(bad);
    }
    let upper = text.to_ascii_uppercase();
    let name = if upper.starts_with("SIG") {
        upper
    } else {
        format!("SIG{upper}")
    };
    (1..=64)
        .find(|&number| signal_name(number) == name)
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(set: &[(&'static str, super::super::Value)]) -> Result<EventsJob> {
        let mut values = FlagValues::defaults(&TOOL);
        for (long, value) in set {
            values.set(long, value.clone());
        }
        match (TOOL.plan)(&values)? {
            ToolPlan::Events(job) => Ok(job),
            _ => panic!("sigsnoop prints events"),
        }
    }

    #[test]
    fn flags_become_filters_on_the_tracepoint() {
        use super::super::Value::{Switch, Text};
        let job = plan(&[
            ("failures", Switch(true)),
            ("kill", Switch(true)),
            ("signal", Text("term".into())),
        ])
        .unwrap();
        assert_eq!(job.request.probes, vec!["signal:signal_generate".to_string()]);
        assert_eq!(
            job.request.filter.as_deref(),
            Some("result != 0 && code == 0 && sig == 15")
        );
        assert_eq!(job.request.print, ["sig", "pid", "result"]);
        let named = plan(&[("signal-name", Switch(true))]).unwrap();
        assert_eq!(named.request.filter, None);
        assert_eq!(named.columns[2].field, "signal(sig)");
    }

    #[test]
    fn signals_are_read_by_number_or_name() {
        assert_eq!(signal_number("9").unwrap(), 9);
        assert_eq!(signal_number("KILL").unwrap(), 9);
        assert_eq!(signal_number("sigusr1").unwrap(), 10);
        assert_eq!(signal_number("SIGRTMIN+1").unwrap(), 35);
        assert_eq!(
            signal_number("65").unwrap_err().to_string(),
            "--signal 65: not a signal; give a number from 1 to 64 or a name (KILL, SIGTERM, \
             SIGRTMIN+1)"
        );
        assert!(signal_number("NOPE").is_err());
        assert!(signal_number("0").is_err());
    }
}
