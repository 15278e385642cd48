//! `tracekit nfsdist`: [`fsdist --fs nfs`](super::fsdist), under bcc's and
//! libbpf-tools' alias name.

use super::{Tool, fsdist};

/// `tracekit nfsdist`.
pub const TOOL: Tool = fsdist::alias(
    "nfsdist",
    "nfs_operation_latency",
    "nfs operation latency histograms: read, write, open, fsync, getattr (libbpf-tools nfsdist)",
    "  tracekit nfsdist -d 10            # nfs latency per operation, in us
  tracekit nfsdist --unit ms -i 1
  tracekit nfsdist -- tar xf big.tar

fsdist --fs nfs: see tracekit fsdist --help.",
    |values| fsdist::plan(values, "nfs", "nfsdist"),
);
