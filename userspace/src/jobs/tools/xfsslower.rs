//! `tracekit xfsslower`: [`fsslower --fs xfs`](super::fsslower), under bcc's and
//! libbpf-tools' alias name.

use super::{ToolPlan, Tool, fsslower};

/// `tracekit xfsslower`.
pub const TOOL: Tool = fsslower::alias(
    "xfsslower",
    "Print each XFS read, write, open and fsync slower than a threshold, with the file (libbpf-tools xfsslower)",
    "  tracekit xfsslower                 # XFS reads, writes, opens and fsyncs over 10 ms
  tracekit xfsslower 1 -p 1234        # one process's, over 1 ms
  tracekit xfsslower 0 -- ./app       # every call while ./app runs

fsslower --fs xfs: see tracekit fsslower --help.",
    |values| fsslower::plan(values, "xfs").map(ToolPlan::Events),
);
