//! `ksyms`: kernel addresses named by the kernel's own kallsyms lookup.
//!
//! Userspace writes up to [`BATCH`] addresses into a [`KsymAddrs`], runs the program once
//! (`BPF_PROG_TEST_RUN`), and reads one NUL-terminated name per address from [`KsymNames`].

/// Addresses per run of the program.
pub const BATCH: usize = 128;

/// Bytes per name, NUL included: `bpf_snprintf` truncates longer ones (kernel names are
/// rarely over 60 bytes; KSYM_NAME_LEN allows 512).
pub const NAME_BYTES: usize = 96;

/// The addresses to name: `addrs[..len]`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct KsymAddrs {
    /// How many of `addrs` are set.
    pub len: u64,
    /// Kernel addresses.
    pub addrs: [u64; BATCH],
}

/// What `%ps` printed for each address: `name`, `name [module]`, or `0x...` when the
/// address is in no symbol.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct KsymNames {
    /// NUL-terminated names, one per address.
    pub names: [[u8; NAME_BYTES]; BATCH],
}

crate::impl_pod!(KsymAddrs, KsymNames);
