//! `tracekit xfsslower`: [`fsslower --fs xfs`](super::fsslower), under bcc's and
//! libbpf-tools' alias name.

use super::{Plan, Tool, fsslower};

/// `tracekit xfsslower`.
pub const TOOL: Tool = fsslower::alias(
    "xfsslower",
    "Print each XFS read and write slower than a threshold, with the file (libbpf-tools xfsslower)",
    "  tracekit xfsslower                 # XFS reads and writes over 10 ms
  tracekit xfsslower 1 -p 1234        # one process's, over 1 ms
  tracekit xfsslower 0 -- ./app       # every call while ./app runs

fsslower --fs xfs: see tracekit fsslower --help.",
    |values| fsslower::plan(values, "xfs").map(Plan::Events),
);
