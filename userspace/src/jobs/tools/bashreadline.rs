//! `tracekit bashreadline`: each command line interactive bash shells read (bcc's and
//! bpftrace's `bashreadline`): a return probe on `readline()` in `/bin/bash` (or the
//! library given), printing the line it returns (`str(retval)`, whole).

use super::{CLOCK, Column, EventTime, EventsJob, Flag, Group, ToolPlan, TIMESTAMP, Tool};
use crate::Result;

/// `tracekit bashreadline`.
pub const TOOL: Tool = Tool {
    name: "bashreadline",
    summary: "Print the command lines interactive bash shells read (bcc bashreadline)",
    examples: "  tracekit bashreadline -T          # every bash command line until Ctrl-C
  tracekit bashreadline --shared /lib/x86_64-linux-gnu/libreadline.so.8

Lines are shown whole (up to 4094 bytes; longer ones end in `...`).",
    flags: &[
        Flag::text(
            "shared",
            "PATH",
            "The binary or library whose readline() bash calls (default /bin/bash)",
        ),
        TIMESTAMP,
        CLOCK,
    ],
    groups: &[Group::Common, Group::Maps],
    plan: |values| bashreadline(values).map(ToolPlan::Events),
    metric: None,
};

/// The columns: libbpf-tools' `PID COMMAND`.
pub const COLUMNS: [Column; 2] = [
    Column {
        header: "PID",
        field: "pid",
    },
    Column {
        header: "COMMAND",
        field: "str(retval)",
    },
];

fn bashreadline(values: &super::FlagValues) -> Result<EventsJob> {
    let binary = values.text("shared").unwrap_or("/bin/bash");
    let mut job = EventsJob::new(&format!("uretprobe:{binary}:readline"), &COLUMNS);
    job.request.maps = values.maps;
    job.time = EventTime::of(values);
    Ok(job)
}
