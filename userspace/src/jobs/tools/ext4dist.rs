//! `tracekit ext4dist`: [`fsdist --fs ext4`](super::fsdist), under bcc's and
//! libbpf-tools' alias name.

use super::{Tool, fsdist};

/// `tracekit ext4dist`.
pub const TOOL: Tool = fsdist::alias(
    "ext4dist",
    "ext4_operation_latency",
    "ext4 operation latency histograms: read, write, open, fsync, getattr (libbpf-tools ext4dist)",
    "  tracekit ext4dist -d 10            # ext4 latency per operation, in us
  tracekit ext4dist --unit ms -i 1
  tracekit ext4dist -- tar xf big.tar

fsdist --fs ext4: see tracekit fsdist --help.",
    |values| fsdist::plan(values, "ext4", "ext4dist"),
);
