//! `tracekit xfsdist`: [`fsdist --fs xfs`](super::fsdist), under bcc's and
//! libbpf-tools' alias name.

use super::{Tool, fsdist};

/// `tracekit xfsdist`.
pub const TOOL: Tool = fsdist::alias(
    "xfsdist",
    "xfs_operation_latency",
    "xfs operation latency histograms: read, write, open, fsync, getattr (libbpf-tools xfsdist)",
    "  tracekit xfsdist -d 10            # xfs latency per operation, in us
  tracekit xfsdist --unit ms -i 1
  tracekit xfsdist -- tar xf big.tar

fsdist --fs xfs: see tracekit fsdist --help.",
    |values| fsdist::plan(values, "xfs", "xfsdist"),
);
