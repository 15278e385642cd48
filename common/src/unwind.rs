//! Shared types of the in-kernel DWARF unwinder (`tracekit_ebpf::unwind`): user stacks walked
//! in the kernel from tables built out of `.eh_frame` / `.debug_frame` in userspace.
//!
//! Three maps hold the tables:
//! - `UNWIND_SHARDS`, an array of maps: shard `s` is an array of [`SHARD_ROWS`] [`UnwindRow`]s.
//!   Rows live in one global index space (`row = s * SHARD_ROWS + slot`); each binary's rows
//!   are a contiguous, sorted range of it, shared by every process that maps the binary.
//!   Shards are created on demand, so kernel memory follows what is loaded, up to a budget.
//! - `UNWIND_MAPPINGS`, an array of [`Mapping`]s: each process's executable mappings are a
//!   contiguous range of it, sorted by start address.
//! - `UNWIND_PROCESSES`, a hash map from pid (tgid) to its [`ProcessMappings`] range.
//!
//! Per frame the kernel finds the mapping of the PC (binary search in the process's range),
//! then the row (binary search in the binary's range), computes the canonical frame address
//! (CFA) from the row's rule, reads the return address at CFA - 8 and, if the row says so,
//! the caller's RBP, and goes on with the caller's registers.

/// log2 of [`SHARD_ROWS`].
pub const SHARD_ROWS_SHIFT: u32 = 16;
/// Rows per shard (512 KiB of kernel memory per shard at 8 bytes a row).
pub const SHARD_ROWS: u32 = 1 << SHARD_ROWS_SHIFT;
/// Most shards `UNWIND_SHARDS` can hold (a 512 MiB ceiling on the tables).
pub const MAX_SHARDS: u32 = 1024;
/// Default kernel memory for the rows, in bytes (`--unwind-table-budget`).
pub const DEFAULT_TABLE_BUDGET_BYTES: u64 = 64 << 20;
/// Executable mappings of all processes together (`UNWIND_MAPPINGS` entries, 32 bytes each).
pub const MAX_MAPPINGS: u32 = 65536;
/// Processes with a mapping table (`UNWIND_PROCESSES` entries).
pub const MAX_PROCESSES: u32 = 8192;
/// Most executable mappings of one process the kernel searches.
pub const MAX_PROCESS_MAPPINGS: u32 = 1024;
/// Binary search steps over one process's mappings (2^11 > [`MAX_PROCESS_MAPPINGS`]).
pub const MAPPING_SEARCH_STEPS: u32 = 11;
/// Binary search steps over one binary's rows: tables of up to 2^24 rows.
pub const ROW_SEARCH_STEPS: u32 = 24;
/// Most rows of one binary's table (see [`ROW_SEARCH_STEPS`]).
pub const MAX_TABLE_ROWS: u32 = 1 << ROW_SEARCH_STEPS;

/// How the CFA is computed ([`UnwindRow::cfa_rule`]'s low four bits, [`cfa::KIND`]; the
/// high four say where the return address is, [`ra`]).
pub mod cfa {
    /// The bits of [`super::UnwindRow::cfa_rule`] that hold one of these rules.
    pub const KIND: u8 = 0x0f;
    /// No unwind information covers this address (a gap between functions, or past the
    /// last one): the kernel steps by frame pointer.
    pub const NONE: u8 = 0;
    /// CFA = the stack pointer (x86_64's RSP, arm64's SP) + offset.
    pub const RSP: u8 = 1;
    /// CFA = the frame pointer (x86_64's RBP, arm64's x29) + offset.
    pub const RBP: u8 = 2;
    /// A PLT entry (GCC's `DW_CFA_def_cfa_expression` for `.plt`): CFA = RSP + 8, plus 8
    /// more when `(RIP & 15) >= offset` (the entry has pushed its relocation index).
    pub const PLT: u8 = 3;
    /// The return address is undefined: the outermost frame (`_start`, `clone3`).
    pub const END: u8 = 4;
    /// What the compact form cannot express (other DWARF expressions, other registers,
    /// signal frames, offsets that do not fit): the kernel steps by frame pointer.
    pub const UNSUPPORTED: u8 = 5;
}

/// Where a row's return address is: [`super::UnwindRow::cfa_rule`]'s high four bits
/// (`cfa_rule >> ra::SHIFT`). x86_64's calls push it at CFA - 8, always; arm64's `bl` leaves
/// it in the link register (x30), which a function saves where it likes, or not at all.
pub mod ra {
    /// The shift of the location in `cfa_rule`.
    pub const SHIFT: u8 = 4;
    /// At CFA - 8 (every x86_64 row). Values 1 to [`MAX_WORDS_BELOW`] - 1 mean: at
    /// CFA - (value + 1) × 8 (arm64 code that saves x30 among other registers).
    pub const CFA_MINUS_8: u8 = 0;
    /// The deepest slot below the CFA, in words, the values above express.
    pub const MAX_WORDS_BELOW: u8 = 14;
    /// In the frame record: 8 bytes above where the frame pointer was saved (arm64's
    /// `stp x29, x30`, at any depth).
    pub const FRAME_RECORD: u8 = 14;
    /// Still in the link register (arm64's leaves, and prologues before they save x30):
    /// only the first frame of a walk has its value.
    pub const LINK_REGISTER: u8 = 15;
}

/// One row of a binary's unwind table: from `pc` up to the next row's `pc`, how to find the
/// caller's registers. 8 bytes, no padding (BPF arrays round elements to 8 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct UnwindRow {
    /// The first address the row covers, as an ELF virtual address of the binary.
    pub pc: u32,
    /// The CFA's offset from its register; for [`cfa::PLT`], the threshold on `RIP & 15`.
    pub cfa_offset: u16,
    /// One of the [`cfa`] constants, with an [`ra`] location shifted by [`ra::SHIFT`].
    pub cfa_rule: u8,
    /// Where the caller's frame pointer (RBP, x29) was saved, in 8-byte words from the CFA
    /// (negative); 0 when it still holds the caller's value.
    pub rbp_offset_words: i8,
}

/// A frame's canonical frame address (CFA: its caller's stack pointer at the call), as
/// [`frame_cfa`] finds it from the frame's row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cfa {
    /// At this address.
    At(u64),
    /// The frame is the outermost ([`cfa::END`]).
    End,
    /// The row cannot say from the registers known: the walk steps by frame pointer.
    Unknown,
}

/// The CFA of the frame at `pc` whose row is `row`, from its stack pointer `sp` and frame
/// pointer `bp` (x86_64's RSP and RBP, arm64's SP and x29).
///
/// `sp_exact` false: `sp` is only a lower bound of the frame's stack pointer, as after an
/// arm64 frame-pointer step (x29 + 16 is the top of the frame record, which GCC puts at the
/// bottom of the frame, below the locals and the other saved registers; x86_64's record is
/// at the top, so there x29 + 16 is the CFA). Then a row based on the stack pointer is
/// reached through the frame record it saved instead ([`ra::FRAME_RECORD`]: x29 points at
/// it, at CFA + `rbp_offset_words` × 8), and one that saved none is [`Cfa::Unknown`].
#[inline(always)]
pub fn frame_cfa(row: &UnwindRow, pc: u64, sp: u64, bp: u64, sp_exact: bool) -> Cfa {
    let offset = u64::from(row.cfa_offset);
    match row.cfa_rule & cfa::KIND {
        cfa::RSP if sp_exact => Cfa::At(sp + offset),
        cfa::RSP if row.cfa_rule >> ra::SHIFT == ra::FRAME_RECORD && bp >= sp => {
            Cfa::At(bp.wrapping_sub((i64::from(row.rbp_offset_words) * 8) as u64))
        }
        cfa::RBP => Cfa::At(bp + offset),
        cfa::PLT if sp_exact => Cfa::At(sp + 8 + if pc & 15 >= offset { 8 } else { 0 }),
        cfa::END => Cfa::End,
        _ => Cfa::Unknown,
    }
}

/// One executable mapping of a process.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mapping {
    /// First address of the mapping.
    pub begin: u64,
    /// One past its last address.
    pub end: u64,
    /// Runtime address minus ELF virtual address (the load bias).
    pub bias: u64,
    /// The binary's first row in the global row index space.
    pub first_row: u32,
    /// The binary's number of rows; 0 when there is no table (JIT code, no `.eh_frame`, over
    /// budget): frames in this mapping are stepped by frame pointer.
    pub rows: u32,
}

/// A process's range of `UNWIND_MAPPINGS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessMappings {
    /// Index of its first mapping.
    pub first: u32,
    /// Number of mappings (at most [`MAX_PROCESS_MAPPINGS`]).
    pub count: u32,
}

/// Indices of the per-CPU counters in the `UNWIND_STATS` array.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnwindStat {
    /// User stacks walked by the unwinder.
    Stacks = 0,
    /// Of those, stacks that ended at an outermost frame (an undefined return address, or a
    /// zero frame pointer / return address).
    Complete = 1,
    /// Stacks cut at the frame budget ([`crate::cpu_sampler::MAX_STACK_DEPTH`] frames).
    Truncated = 2,
    /// Stacks of processes with no mapping table yet (walked by frame pointers alone).
    NoProcess = 3,
    /// Frames found through a table row.
    DwarfFrames = 4,
    /// Frames stepped by frame pointer because their mapping has no table.
    NoTableFrames = 5,
    /// Frames stepped by frame pointer because no known mapping holds their address.
    NoMappingFrames = 6,
    /// Frames stepped by frame pointer because their row is [`cfa::NONE`] or
    /// [`cfa::UNSUPPORTED`].
    UnsupportedFrames = 7,
    /// Stacks that ended because user memory could not be read (or the walk went nowhere).
    ReadErrors = 8,
    /// Samples taken inside `execve` whose user stack was not walked (its registers are
    /// the old image's call of exec, into memory the exec replaces).
    InExec = 9,
}

/// Number of [`UnwindStat`] counters.
pub const UNWIND_STAT_COUNT: u32 = 10;

/// `execve` and `execveat`'s numbers on x86_64 (arch/x86/entry/syscalls/syscall_64.tbl).
pub const EXEC_SYSCALLS_X86_64: [u32; 2] = [59, 322];
/// `execve` and `execveat`'s numbers on arm64 (include/uapi/asm-generic/unistd.h).
pub const EXEC_SYSCALLS_AARCH64: [u32; 2] = [221, 281];

crate::impl_pod!(UnwindRow, Mapping, ProcessMappings);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_have_no_padding() {
        assert_eq!(size_of::<UnwindRow>(), 8);
        assert_eq!(size_of::<Mapping>(), 32);
        assert_eq!(size_of::<ProcessMappings>(), 8);
        const { assert!(MAX_PROCESS_MAPPINGS <= 1 << MAPPING_SEARCH_STEPS) };
    }

    fn row(kind: u8, ra_at: u8, cfa_offset: u16, rbp_offset_words: i8) -> UnwindRow {
        UnwindRow {
            pc: 0x1000,
            cfa_offset,
            cfa_rule: kind | ra_at << ra::SHIFT,
            rbp_offset_words,
        }
    }

    #[test]
    fn cfa_from_exact_registers() {
        let (pc, sp, bp) = (0x40_1003, 0x7fff_0000, 0x7fff_0100);
        let sp_based = row(cfa::RSP, ra::CFA_MINUS_8, 48, -2);
        assert_eq!(frame_cfa(&sp_based, pc, sp, bp, true), Cfa::At(0x7fff_0030));
        let bp_based = row(cfa::RBP, ra::CFA_MINUS_8, 16, -2);
        assert_eq!(frame_cfa(&bp_based, pc, sp, bp, true), Cfa::At(0x7fff_0110));
        // A PLT entry at offset 3 of its 16 bytes, before and after its push.
        let plt = row(cfa::PLT, ra::CFA_MINUS_8, 11, 0);
        assert_eq!(frame_cfa(&plt, pc, sp, bp, true), Cfa::At(0x7fff_0008));
        assert_eq!(
            frame_cfa(&plt, 0x40_100b, sp, bp, true),
            Cfa::At(0x7fff_0010)
        );
        assert_eq!(
            frame_cfa(&row(cfa::END, 0, 0, 0), pc, sp, bp, true),
            Cfa::End
        );
        for kind in [cfa::NONE, cfa::UNSUPPORTED] {
            assert_eq!(
                frame_cfa(&row(kind, 0, 0, 0), pc, sp, bp, true),
                Cfa::Unknown
            );
        }
    }

    /// An arm64 caller reached by a frame-pointer step: GCC's `stp x29, x30, [sp, -64]!;
    /// mov x29, sp` put its frame record at its stack pointer, 64 bytes below its CFA, so the
    /// step's x29 + 16 is 48 bytes short of the CFA its row (CFA = SP + 64) counts from.
    #[test]
    fn cfa_after_an_arm64_frame_pointer_step() {
        let (pc, record) = (0x40_2000, 0x7fff_1000);
        let sp = 0x7fff_0f00 + 16;
        let gcc = row(cfa::RSP, ra::FRAME_RECORD, 64, -8);
        assert_eq!(frame_cfa(&gcc, pc, sp, record, false), Cfa::At(0x7fff_1040));
        // The same row with the stack pointer known reads it from there.
        assert_eq!(
            frame_cfa(&gcc, pc, record, record, true),
            Cfa::At(0x7fff_1040)
        );
        // A frame without a record (x30 saved alone, x29 still the caller's) cannot say.
        let no_record = row(cfa::RSP, 1, 32, 0);
        assert_eq!(frame_cfa(&no_record, pc, sp, record, false), Cfa::Unknown);
        // A record below the lower bound is not this frame's.
        assert_eq!(
            frame_cfa(&gcc, pc, record + 16, record, false),
            Cfa::Unknown
        );
        // x29-based rows need no stack pointer.
        let clang = row(cfa::RBP, ra::FRAME_RECORD, 16, -2);
        assert_eq!(
            frame_cfa(&clang, pc, sp, record, false),
            Cfa::At(0x7fff_1010)
        );
    }
}
