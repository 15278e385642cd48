//! `tracekit btrfsslower`: [`fsslower --fs btrfs`](super::fsslower), under bcc's and
//! libbpf-tools' alias name.

use super::{ToolPlan, Tool, fsslower};

/// `tracekit btrfsslower`.
pub const TOOL: Tool = fsslower::alias(
    "btrfsslower",
    "Print each btrfs read, write, open and fsync slower than a threshold, with the file (libbpf-tools btrfsslower)",
    "  tracekit btrfsslower                 # btrfs reads, writes, opens and fsyncs over 10 ms
  tracekit btrfsslower 1 -p 1234        # one process's, over 1 ms
  tracekit btrfsslower 0 -- ./app       # every call while ./app runs

fsslower --fs btrfs: see tracekit fsslower --help.",
    |values| fsslower::plan(values, "btrfs").map(ToolPlan::Events),
);
