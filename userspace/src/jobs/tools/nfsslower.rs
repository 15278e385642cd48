//! `tracekit nfsslower`: [`fsslower --fs nfs`](super::fsslower), under bcc's and
//! libbpf-tools' alias name.

use super::{ToolPlan, Tool, fsslower};

/// `tracekit nfsslower`.
pub const TOOL: Tool = fsslower::alias(
    "nfsslower",
    "Print each NFS read, write, open and fsync slower than a threshold, with the file (libbpf-tools nfsslower)",
    "  tracekit nfsslower                 # NFS reads, writes, opens and fsyncs over 10 ms
  tracekit nfsslower 1 -p 1234        # one process's, over 1 ms
  tracekit nfsslower 0 -- ./app       # every call while ./app runs

fsslower --fs nfs: see tracekit fsslower --help.",
    |values| fsslower::plan(values, "nfs").map(ToolPlan::Events),
);
