//! Shared types of the `profile` program: on-CPU stack sampling on the `cpu-clock` perf event.
//!
//! The kernel program counts samples per [`SampleKey`] in the `PROFILE_COUNTS` hash map, keeps
//! each distinct stack's frames in the `PROFILE_STACKS` hash map under its [`stack_hash`], bumps the per-CPU [`Stat`] counters in
//! `PROFILE_STATS`, and announces each process it samples for the first time (and again after
//! each `exec`) with a [`ProcessEvent`] in the `PROFILE_EVENTS` ring buffer, so the loader can
//! capture the process's memory map while the process still lives.
//!
//! Interval runs keep the maps from filling over hours with generations: the kernel program
//! reads the current generation from the one-entry `PROFILE_GENERATION` array, counts under
//! [`SampleKey::generation`] and stores stacks under [`tag_stack_hash`]. At each interval
//! userspace bumps the generation, then reads and deletes every key and stack of the previous
//! one, which nothing counts into any more. Runs without `-i` stay in generation 0.

use crate::TASK_COMM_LEN;

/// Default number of distinct stacks `PROFILE_STACKS` holds (~1 KiB of kernel memory each).
pub const DEFAULT_STACK_MAP_ENTRIES: u32 = 16384;
/// Default number of distinct (process, comm, kernel stack, user stack) keys counted.
pub const DEFAULT_COUNT_MAP_ENTRIES: u32 = 40960;
/// Size of the ring buffer that announces new processes, in bytes (a power of two pages).
pub const EVENTS_RING_BYTES: u32 = 256 * 1024;
/// How many processes `-p`/`-- CMD` may select (children of `-- CMD` included).
pub const MAX_TARGET_PIDS: u32 = 8192;
/// How many processes the program remembers as already announced (LRU: a forgotten one is
/// announced again, which is harmless).
pub const MAX_KNOWN_PIDS: u32 = 16384;

/// What one sample is counted under: the process, the thread's `comm`, both stacks, and
/// (with `profile --by cgroup`) the thread's cgroup.
///
/// A stack is named by a 64-bit hash of its instruction pointers, the key of its frames in
/// the `PROFILE_STACKS` hash map. Unlike a `BPF_MAP_TYPE_STACK_TRACE` id, two different
/// stacks practically never share a key, so no stack is lost to a bucket collision.
/// [`STACK_NONE`] and [`STACK_ERROR`] are never hashes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SampleKey {
    /// Process id (the kernel's tgid).
    pub pid: u32,
    /// The generation that counted the sample (see the module docs): with `-i`, userspace
    /// drains one generation's keys while the kernel counts under the next.
    pub generation: u32,
    /// Kernel stack hash, or [`STACK_NONE`] / [`STACK_ERROR`].
    pub kernel_stack: u64,
    /// User stack hash, or [`STACK_NONE`] / [`STACK_ERROR`].
    pub user_stack: u64,
    /// The thread's cgroup v2 id (`bpf_get_current_cgroup_id()`, the inode of its cgroup2
    /// directory) with `--by cgroup`; 0 otherwise.
    pub cgroup: u64,
    /// The sampled thread's `comm`, NUL-padded.
    pub comm: [u8; TASK_COMM_LEN],
    /// With time slices on (`profile --heatmap`): `CLOCK_MONOTONIC` ns of the sample divided
    /// by the slice length (`PROFILE_TIME_SLICE_NS`), so samples stay counted in the kernel
    /// per (stack, slice); 0 when off.
    pub time_slice: u32,
    /// Zero; makes the padding explicit so equal keys hash equal in the kernel.
    pub padding: u32,
}

/// No stack of this kind: none was asked for, or there is none (no kernel stack for a sample
/// taken in user mode, no user stack for a kernel thread).
pub const STACK_NONE: u64 = 0;
/// The stack could not be recorded: walking it failed, or `PROFILE_STACKS` was full.
pub const STACK_ERROR: u64 = 1;

/// Deepest stack recorded, in frames (`PERF_MAX_STACK_DEPTH`, as perf's default).
pub const MAX_STACK_DEPTH: usize = 127;

/// The instruction pointers of one stack, leaf first, zero-padded after the last frame.
pub type StackFrames = [u64; MAX_STACK_DEPTH];

/// Hashes a stack's frames (FNV-1a over 64-bit words, then a final avalanche), mapping the
/// result away from [`STACK_NONE`] and [`STACK_ERROR`]. Kernel and userspace share it.
#[inline(always)]
pub fn stack_hash(frames: &StackFrames, len: usize) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < MAX_STACK_DEPTH {
        if i >= len {
            break;
        }
        hash ^= frames[i];
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^= hash >> 33;
    if hash <= STACK_ERROR { hash + 2 } else { hash }
}

/// The bit of a stored stack's hash that says which generation (its parity) stored it.
pub const STACK_GENERATION_BIT: u64 = 1 << 63;

/// `hash` (from [`stack_hash`]) tagged with the parity of `generation` in
/// [`STACK_GENERATION_BIT`], still never [`STACK_NONE`] or [`STACK_ERROR`].
#[inline(always)]
pub fn tag_stack_hash(hash: u64, generation: u32) -> u64 {
    let tagged = (hash & !STACK_GENERATION_BIT) | (u64::from(generation & 1) << 63);
    if tagged <= STACK_ERROR {
        tagged + 2
    } else {
        tagged
    }
}

/// Whether stack `hash` was stored in a generation of `generation`'s parity.
#[inline(always)]
pub fn stack_of_generation(hash: u64, generation: u32) -> bool {
    hash > STACK_ERROR && (hash >> 63) as u32 == generation & 1
}

/// Indices of the per-CPU counters in the `PROFILE_STATS` array: what the kernel program saw
/// and what it could not record.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stat {
    /// Samples counted into `PROFILE_COUNTS`.
    Samples = 0,
    /// Samples dropped because `PROFILE_COUNTS` was full.
    CountMapFull = 1,
    /// Stacks dropped because `PROFILE_STACKS` was full.
    StackMapFull = 2,
    /// Kernel stacks the kernel failed to walk (an error other than "there is none").
    KernelStackError = 3,
    /// User stacks the kernel failed to walk.
    UserStackError = 4,
    /// Spare slot, always 0.
    Reserved = 5,
    /// New-process announcements dropped because the ring buffer was full; such a process
    /// is announced again at its next sample.
    EventsLost = 6,
}

/// Number of [`Stat`] counters.
pub const STAT_COUNT: u32 = 7;

/// What a [`ProcessEvent`] announces.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessEventKind {
    /// The first sample of a process (or the first after it called `exec`).
    FirstSample = 1,
}

/// A record in the `PROFILE_EVENTS` ring buffer.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessEvent {
    /// Process id (tgid).
    pub pid: u32,
    /// A [`ProcessEventKind`] as `u32`.
    pub kind: u32,
}

crate::impl_pod!(SampleKey, ProcessEvent);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_depends_on_frames_and_length_and_avoids_reserved_values() {
        let mut frames = [0u64; MAX_STACK_DEPTH];
        frames[0] = 0xffff_ffff_8100_0000;
        frames[1] = 0xffff_ffff_8100_1000;
        let two = stack_hash(&frames, 2);
        assert_ne!(two, stack_hash(&frames, 1));
        frames[1] += 1;
        assert_ne!(two, stack_hash(&frames, 2));
        assert!(stack_hash(&[0; MAX_STACK_DEPTH], 0) > STACK_ERROR);
    }
}
