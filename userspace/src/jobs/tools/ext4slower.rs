//! `tracekit ext4slower`: [`fsslower --fs ext4`](super::fsslower), under bcc's and
//! libbpf-tools' alias name.

use super::{ToolPlan, Tool, fsslower};

/// `tracekit ext4slower`.
pub const TOOL: Tool = fsslower::alias(
    "ext4slower",
    "Print each ext4 read, write, open and fsync slower than a threshold, with the file (libbpf-tools ext4slower)",
    "  tracekit ext4slower                 # ext4 reads, writes, opens and fsyncs over 10 ms
  tracekit ext4slower 1 -p 1234        # one process's, over 1 ms
  tracekit ext4slower 0 -- ./app       # every call while ./app runs

fsslower --fs ext4: see tracekit fsslower --help.",
    |values| fsslower::plan(values, "ext4").map(ToolPlan::Events),
);
