//! Where an nmethod keeps its debug information: its metadata (`Metadata*` words), its
//! scopes and its `PcDesc`s ([`super::compiled`] decodes them). Two layouts, told apart by
//! the fields a JVM's `gHotSpotVMStructs` states:
//! - JDK 9-22, all of it inside the nmethod: the metadata from `nmethod + _metadata_offset`
//!   to the scopes, the scopes from `CompiledMethod::_scopes_data_begin` (a pointer) to
//!   the `PcDesc`s, the `PcDesc`s from `nmethod + _scopes_pcs_offset` to
//!   `nmethod + _dependencies_offset` (i32 offsets);
//! - JDK 25, on the C heap (`src/hotspot/share/code/nmethod.hpp` at jdk-25): the
//!   `PcDesc`s from `_immutable_data + _scopes_pcs_offset` to
//!   `_immutable_data + _scopes_data_offset`, the scopes from there to at most
//!   `_immutable_data + _immutable_data_size` (JVMCI's speculations and a reference count
//!   follow them), the metadata from `CodeBlob::_mutable_data + _relocation_size` to at
//!   most `_mutable_data + _mutable_data_size` (JVMCI's data may follow it).
//!
//! A scope names its method by a 1-based index into the metadata and its caller by a
//! decode offset into the scopes, so bounds past a section's end only allow reading a
//! little more than the JVM wrote, never another method's data.

use super::Memory;

/// The most bytes of one section read from one nmethod.
const MAX_SECTION_BYTES: u64 = 4 << 20;

/// Where an nmethod's debug sections are (byte offsets from the nmethod, from
/// `gHotSpotVMStructs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sections {
    /// JDK 9-22: `nmethod::_metadata_offset`, `CompiledMethod::_scopes_data_begin`,
    /// `nmethod::_scopes_pcs_offset`, `nmethod::_dependencies_offset`.
    InBlob {
        metadata: u64,
        scopes_begin: u64,
        pcs: u64,
        pcs_end: u64,
    },
    /// JDK 25: `nmethod::_immutable_data` (a pointer), `_immutable_data_size`,
    /// `_scopes_pcs_offset`, `_scopes_data_offset` (i32s); `CodeBlob::_mutable_data` (a
    /// pointer), `_mutable_data_size`, `_relocation_size` (i32s).
    Apart {
        immutable: u64,
        immutable_size: u64,
        pcs: u64,
        scopes: u64,
        mutable: u64,
        mutable_size: u64,
        relocation_size: u64,
    },
}

/// An nmethod's sections in the process: `[begin, end)` each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ranges {
    pub metadata: (u64, u64),
    pub scopes: (u64, u64),
    pub pcs: (u64, u64),
}

impl Sections {
    /// The layout stated by `offset(Type::_field)`; `None` when neither is whole.
    pub fn of(offset: impl Fn(&str) -> Option<u64>) -> Option<Self> {
        let in_blob = || {
            Some(Self::InBlob {
                metadata: offset("nmethod::_metadata_offset")?,
                scopes_begin: offset("CompiledMethod::_scopes_data_begin")?,
                pcs: offset("nmethod::_scopes_pcs_offset")?,
                pcs_end: offset("nmethod::_dependencies_offset")?,
            })
        };
        let apart = || {
            Some(Self::Apart {
                immutable: offset("nmethod::_immutable_data")?,
                immutable_size: offset("nmethod::_immutable_data_size")?,
                pcs: offset("nmethod::_scopes_pcs_offset")?,
                scopes: offset("nmethod::_scopes_data_offset")?,
                mutable: offset("CodeBlob::_mutable_data")?,
                mutable_size: offset("CodeBlob::_mutable_data_size")?,
                relocation_size: offset("CodeBlob::_relocation_size")?,
            })
        };
        in_blob().or_else(apart)
    }

    /// The sections of the nmethod at `blob`; `None` when unreadable, out of order or
    /// larger than 4 MiB.
    pub fn ranges(&self, memory: &impl Memory, blob: u64) -> Option<Ranges> {
        let int = |at: u64| u64::try_from(memory.i32(blob + at)?).ok();
        let ranges = match *self {
            Self::InBlob {
                metadata,
                scopes_begin,
                pcs,
                pcs_end,
            } => {
                let (metadata, pcs, pcs_end) = (
                    blob + int(metadata)?,
                    blob + int(pcs)?,
                    blob + int(pcs_end)?,
                );
                let scopes = memory.u64(blob + scopes_begin)?;
                Ranges {
                    metadata: (metadata, scopes),
                    scopes: (scopes, pcs),
                    pcs: (pcs, pcs_end),
                }
            }
            Self::Apart {
                immutable,
                immutable_size,
                pcs,
                scopes,
                mutable,
                mutable_size,
                relocation_size,
            } => {
                let data = memory.u64(blob + immutable)?;
                let (pcs, scopes) = (data + int(pcs)?, data + int(scopes)?);
                let data_end = data + int(immutable_size)?;
                let mutable = memory.u64(blob + mutable)?;
                Ranges {
                    metadata: (
                        mutable + int(relocation_size)?,
                        mutable + int(mutable_size)?,
                    ),
                    scopes: (scopes, data_end),
                    pcs: (pcs, scopes),
                }
            }
        };
        [ranges.metadata, ranges.scopes, ranges.pcs]
            .iter()
            .all(|&(begin, end)| begin != 0 && begin <= end && end - begin <= MAX_SECTION_BYTES)
            .then_some(ranges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Words(Vec<(u64, Vec<u8>)>);

    impl Memory for Words {
        fn read(&self, address: u64, length: usize) -> Option<Vec<u8>> {
            self.0.iter().find_map(|(at, bytes)| {
                let from = usize::try_from(address.checked_sub(*at)?).ok()?;
                bytes.get(from..from + length).map(<[u8]>::to_vec)
            })
        }
    }

    /// JDK 25's offsets (Debian testing's 25.0, read from its `gHotSpotVMStructs`).
    fn jdk25(name: &str) -> Option<u64> {
        let fields = [
            ("nmethod::_immutable_data", 96),
            ("nmethod::_immutable_data_size", 160),
            ("nmethod::_scopes_pcs_offset", 196),
            ("nmethod::_scopes_data_offset", 200),
            ("CodeBlob::_mutable_data", 16),
            ("CodeBlob::_mutable_data_size", 48),
            ("CodeBlob::_relocation_size", 28),
        ];
        fields
            .iter()
            .find(|(field, _)| *field == name)
            .map(|&(_, at)| at)
    }

    #[test]
    fn jdk_25_sections_are_on_the_c_heap() {
        let sections = Sections::of(jdk25).unwrap();
        let mut nmethod = vec![0u8; 224];
        let mut put =
            |at: usize, bytes: &[u8]| nmethod[at..at + bytes.len()].copy_from_slice(bytes);
        put(96, &0x5000u64.to_le_bytes());
        put(160, &0x300i32.to_le_bytes());
        put(196, &0x100i32.to_le_bytes());
        put(200, &0x180i32.to_le_bytes());
        put(16, &0x9000u64.to_le_bytes());
        put(48, &0x58i32.to_le_bytes());
        put(28, &0x40i32.to_le_bytes());
        let memory = Words(vec![(0x1000, nmethod)]);
        assert_eq!(
            sections.ranges(&memory, 0x1000),
            Some(Ranges {
                metadata: (0x9040, 0x9058),
                scopes: (0x5180, 0x5300),
                pcs: (0x5100, 0x5180),
            })
        );
        // Sections out of order (a half-built nmethod) are not read.
        let mut nmethod = memory.0[0].1.clone();
        nmethod[200..204].copy_from_slice(&0x80i32.to_le_bytes());
        assert_eq!(
            sections.ranges(&Words(vec![(0x1000, nmethod)]), 0x1000),
            None
        );
    }

    #[test]
    fn a_partial_layout_is_none() {
        assert_eq!(
            Sections::of(|name| (name != "CodeBlob::_mutable_data")
                .then(|| jdk25(name))
                .flatten()),
            None
        );
    }
}
