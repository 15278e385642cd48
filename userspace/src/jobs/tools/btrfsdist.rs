//! `tracekit btrfsdist`: [`fsdist --fs btrfs`](super::fsdist), under bcc's and
//! libbpf-tools' alias name.

use super::{Tool, fsdist};

/// `tracekit btrfsdist`.
pub const TOOL: Tool = fsdist::alias(
    "btrfsdist",
    "btrfs_operation_latency",
    "btrfs operation latency histograms: read, write, open, fsync, getattr (libbpf-tools btrfsdist)",
    "  tracekit btrfsdist -d 10            # btrfs latency per operation, in us
  tracekit btrfsdist --unit ms -i 1
  tracekit btrfsdist -- tar xf big.tar

fsdist --fs btrfs: see tracekit fsdist --help.",
    |values| fsdist::plan(values, "btrfs", "btrfsdist"),
);
