//! The embedded builtins of a V8 that does not export `v8_Default_embedded_blob_code_`:
//! Debian's `libnode.so` (node 18, 20, 24) keeps the blob's symbols hidden and strips its
//! static symbol table, but exports the two accessors V8 defines beside the blob in
//! `src/execution/isolate.cc` (V8 8 to 13; read in node 20.19's V8 11.3):
//!
//! ```c++
//! const uint8_t* DefaultEmbeddedBlobCode() { return v8_Default_embedded_blob_code_; }
//! uint32_t DefaultEmbeddedBlobCodeSize() { return v8_Default_embedded_blob_code_size_; }
//! ```
//!
//! Each compiles to one load of its symbol and a return, so the symbols' addresses are read
//! from those instructions (x86-64 only: the forms gcc and clang emit for a shared library,
//! a position-independent and a fixed-address executable). Debian 12's libnode.so.108 (node
//! 18, V8 10.2) loads the blob's address from a pointer in `.data.rel.ro`, which the dynamic
//! linker fills from an `R_X86_64_RELATIVE` relocation: its addend is the address.
//!
//! Debian testing's libnode.so.137 (node 24, V8 13.6) exports neither accessor. There the
//! builtins are found by where V8's generated assembly (`embedded.S`) puts them: x86-64 code
//! with no unwind information (V8 emits none on Linux), in the largest part of `.text` no
//! FDE describes, after a one-byte `int3` function (`v8_code_start_for_profiler_`,
//! `src/snapshot/embedded/embedded-file-writer.cc`) and at the next page (V8 aligns the
//! blob to a page on x86-64 Linux to remap it). Checked against node 20's symbols and
//! accessors: the static build's `v8_code_start_for_profiler_` 0x18c3000, blob 0x18c4000;
//! Debian 13's libnode.so.115 int3 at 0xe42000, blob 0xe43000, as the accessor says.

use object::{Object as _, ObjectSection as _, SectionKind};

/// `v8::internal::DefaultEmbeddedBlobCode()`.
pub(super) const CODE_ACCESSOR: &str = "_ZN2v88internal23DefaultEmbeddedBlobCodeEv";
/// `v8::internal::DefaultEmbeddedBlobCodeSize()`.
pub(super) const SIZE_ACCESSOR: &str = "_ZN2v88internal27DefaultEmbeddedBlobCodeSizeEv";

/// `endbr64`, which a build with `-fcf-protection` puts first in every function.
const ENDBR64: [u8; 4] = [0xf3, 0x0f, 0x1e, 0xfa];
const RET: u8 = 0xc3;

/// `body` (the bytes at ELF address `at`) past a leading `endbr64`, and its address.
fn past_endbr(at: u64, body: &[u8]) -> (u64, &[u8]) {
    match body.strip_prefix(&ENDBR64) {
        Some(rest) => (at + ENDBR64.len() as u64, rest),
        None => (at, body),
    }
}

/// The address `DefaultEmbeddedBlobCode`'s body returns, the body being the bytes at ELF
/// address `at`: `lea rax, [rip + disp32]; ret` (position-independent) or
/// `mov eax, imm32; ret` (fixed address); `None` for any other body.
pub(super) fn returned_address(at: u64, body: &[u8]) -> Option<u64> {
    match past_endbr(at, body) {
        (at, [0x48, 0x8d, 0x05, d0, d1, d2, d3, RET, ..]) => {
            Some((at + 7).wrapping_add_signed(i32::from_le_bytes([*d0, *d1, *d2, *d3]).into()))
        }
        (_, [0xb8, i0, i1, i2, i3, RET, ..]) => {
            Some(u64::from(u32::from_le_bytes([*i0, *i1, *i2, *i3])))
        }
        _ => None,
    }
}

/// The address of the pointer `DefaultEmbeddedBlobCode`'s body (at ELF address `at`) loads
/// and returns: `lea rax, [rip + disp32]; mov rax, [rax]; ret` (Debian 12's libnode); `None`
/// for any other body.
pub(super) fn pointer_address(at: u64, body: &[u8]) -> Option<u64> {
    match past_endbr(at, body) {
        (at, [0x48, 0x8d, 0x05, d0, d1, d2, d3, 0x48, 0x8b, 0x00, RET, ..]) => {
            Some((at + 7).wrapping_add_signed(i32::from_le_bytes([*d0, *d1, *d2, *d3]).into()))
        }
        _ => None,
    }
}

/// The address the pointer at ELF address `slot` of `file` holds once loaded: the addend of
/// its `R_X86_64_RELATIVE` relocation, or, with no relocation there, the file's own bytes.
fn relocated_pointer(file: &object::File, slot: u64) -> Option<u64> {
    const R_X86_64_RELATIVE: u32 = 8;
    let relocated = file.dynamic_relocations().and_then(|mut relocations| {
        relocations.find_map(|(offset, relocation)| {
            let object::RelocationFlags::Elf { r_type } = relocation.flags() else {
                return None;
            };
            (offset == slot && r_type == R_X86_64_RELATIVE)
                .then(|| u64::try_from(relocation.addend()).ok())
                .flatten()
        })
    });
    relocated.or_else(|| {
        let bytes = bytes_at(file, slot, 8)?;
        Some(u64::from_le_bytes(bytes.try_into().ok()?)).filter(|&address| address != 0)
    })
}

/// The address of the 4-byte value `DefaultEmbeddedBlobCodeSize`'s body (at ELF address
/// `at`) returns: `mov eax, [rip + disp32]; ret`, or `lea rax, [rip + disp32];
/// mov eax, [rax]; ret` (Debian's libnode); `None` for any other body.
pub(super) fn loaded_address(at: u64, body: &[u8]) -> Option<u64> {
    let (at, body) = past_endbr(at, body);
    let (next, d) = match body {
        [0x8b, 0x05, d0, d1, d2, d3, RET, ..] => (at + 6, [*d0, *d1, *d2, *d3]),
        [0x48, 0x8d, 0x05, d0, d1, d2, d3, 0x8b, 0x00, RET, ..] => (at + 7, [*d0, *d1, *d2, *d3]),
        _ => return None,
    };
    Some(next.wrapping_add_signed(i32::from_le_bytes(d).into()))
}

/// The embedded builtins' code of ELF `file` from its accessors at ELF addresses `code_at`
/// and `size_at` ([`CODE_ACCESSOR`], [`SIZE_ACCESSOR`]): the code's ELF address, its file
/// offset and its size in bytes, or why they cannot be read.
pub(super) fn from_accessors(
    file: &object::File,
    code_at: u64,
    size_at: u64,
) -> Result<(u64, u64, u64), String> {
    if file.architecture() != object::Architecture::X86_64 {
        return Err(format!(
            "{CODE_ACCESSOR} not read on {:?}",
            file.architecture()
        ));
    }
    let unknown = |name: &str| format!("{name}'s instructions are not the load expected");
    let code_body = bytes_at(file, code_at, 16).unwrap_or_default();
    let start = match returned_address(code_at, code_body) {
        Some(start) => start,
        None => {
            let slot = pointer_address(code_at, code_body).ok_or_else(|| unknown(CODE_ACCESSOR))?;
            relocated_pointer(file, slot).ok_or_else(|| {
                format!("{CODE_ACCESSOR} loads a pointer at {slot:#x} that no relocation fills")
            })?
        }
    };
    let size_address = loaded_address(size_at, bytes_at(file, size_at, 16).unwrap_or_default())
        .ok_or_else(|| unknown(SIZE_ACCESSOR))?;
    let size = bytes_at(file, size_address, 4)
        .and_then(|bytes| Some(u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?)))
        .filter(|&size| size > 0)
        .ok_or_else(|| format!("{SIZE_ACCESSOR} reads no size from the file"))?;
    let section = section_at(file, start)
        .filter(|section| start + u64::from(size) <= section.address() + section.size())
        .ok_or_else(|| format!("{CODE_ACCESSOR} returns {start:#x}, outside the file's code"))?;
    let (file_offset, _) = section
        .file_range()
        .ok_or_else(|| format!("{CODE_ACCESSOR} returns {start:#x}, in no file data"))?;
    Ok((
        start,
        start - section.address() + file_offset,
        u64::from(size),
    ))
}

/// Page size V8 aligns the x86-64 blob to (`.balign 4096`).
const BLOB_ALIGNMENT: u64 = 4096;

/// A region without unwind information smaller than this is not taken for the builtins
/// (node 20's and 24's are 1.6-2 MiB).
const MIN_BLOB: u64 = 256 * 1024;

/// `int3`, the one byte of `v8_code_start_for_profiler_`.
const INT3: u8 = 0xcc;

/// The embedded builtins of ELF `file` found without symbols (the module's docs): the
/// largest range of `.text` no FDE of `bounds` (from
/// [`crate::unwind::table::function_bounds`]) covers, whose first page starts with
/// `v8_code_start_for_profiler_`'s `int3`; the builtins are the next page up to the range's
/// end (the blob's own size, a hidden symbol, is at most a page less). The code's ELF
/// address, file offset and size in bytes, or why they were not found.
pub(super) fn from_unwind_gap(
    file: &object::File,
    bounds: &[(u64, u64)],
) -> Result<(u64, u64, u64), String> {
    if file.architecture() != object::Architecture::X86_64 {
        return Err(format!(
            "no builtins found without symbols on {:?}",
            file.architecture()
        ));
    }
    let text = file
        .section_by_name(".text")
        .ok_or("no .text section".to_string())?;
    let (begin, end) = (text.address(), text.address() + text.size());
    let (start, gap_end) = largest_gap(bounds, begin, end);
    let label = start.next_multiple_of(BLOB_ALIGNMENT);
    let blob = label + BLOB_ALIGNMENT;
    if gap_end < blob + MIN_BLOB {
        return Err(format!(
            "no code without unwind information large enough for them \
             (the largest: {start:#x}-{gap_end:#x})"
        ));
    }
    if bytes_at(file, label, 1) != Some(&[INT3]) {
        return Err(format!(
            "the code without unwind information at {start:#x}-{gap_end:#x} does not start \
             with V8's v8_code_start_for_profiler_"
        ));
    }
    let (file_offset, _) = text
        .file_range()
        .ok_or("no file data for .text".to_string())?;
    Ok((blob, blob - begin + file_offset, gap_end - blob))
}

/// The largest `[start, end)` of `[begin, end)` that no range of sorted `bounds` covers.
fn largest_gap(bounds: &[(u64, u64)], begin: u64, end: u64) -> (u64, u64) {
    let mut best = (begin, begin);
    let mut covered = begin;
    for &(from, to) in bounds.iter().chain([(end, end)].iter()) {
        let from = from.clamp(begin, end);
        if from > covered && from - covered > best.1 - best.0 {
            best = (covered, from);
        }
        covered = covered.max(to.min(end));
    }
    best
}

/// `v8::IsolateGroup::GetDefault()` (V8 13: the public API's default group).
pub(super) const GET_DEFAULT: &str = "_ZN2v812IsolateGroup10GetDefaultEv";

/// The address of `IsolateGroup::default_isolate_group_` that `GetDefault`'s body (at ELF
/// address `at`) loads the group from: its first `lea rax, [rip + disp32]; mov rax, [rax]`
/// (Debian testing's libnode.so.137, after the frame set-up) or `mov rax, [rip + disp32]`;
/// `None` when neither is in its first 64 bytes.
pub(super) fn default_isolate_group(at: u64, body: &[u8]) -> Option<u64> {
    let body = &body[..body.len().min(64)];
    (0..body.len()).find_map(|i| {
        let (disp, next) = match body[i..] {
            [0x48, 0x8d, 0x05, d0, d1, d2, d3, 0x48, 0x8b, 0x00, ..] => ([d0, d1, d2, d3], 7),
            [0x48, 0x8b, 0x05, d0, d1, d2, d3, ..] => ([d0, d1, d2, d3], 7),
            _ => return None,
        };
        Some((at + i as u64 + next).wrapping_add_signed(i32::from_le_bytes(disp).into()))
    })
}

/// [`default_isolate_group`] of `file`'s `GetDefault` at ELF address `at`.
pub(super) fn isolate_group_of(file: &object::File, at: u64) -> Option<u64> {
    if file.architecture() != object::Architecture::X86_64 {
        return None;
    }
    default_isolate_group(at, bytes_at(file, at, 64)?)
}

/// The section of `file` with data that holds ELF address `address`.
fn section_at<'a>(file: &'a object::File, address: u64) -> Option<object::Section<'a, 'a>> {
    file.sections().find(|section| {
        section.kind() != SectionKind::UninitializedData
            && (section.address()..section.address() + section.size()).contains(&address)
    })
}

/// Up to `len` bytes of `file`'s data at ELF address `address` (fewer at its section's end).
fn bytes_at<'a>(file: &'a object::File, address: u64, len: u64) -> Option<&'a [u8]> {
    let section = section_at(file, address)?;
    let data = section.data().ok()?;
    let from = usize::try_from(address - section.address()).ok()?;
    let to = data.len().min(from.saturating_add(len as usize));
    data.get(from..to)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The accessors of Debian 13's libnode.so.115 (node 20.19), at their ELF addresses.
    #[test]
    fn debian_libnode_accessors() {
        let code = [0x48, 0x8d, 0x05, 0xa9, 0x9d, 0xcd, 0xff, 0xc3, 0x0f, 0x1f];
        assert_eq!(returned_address(0x116_9250, &code), Some(0xe4_3000));
        let size = [0x48, 0x8d, 0x05, 0x61, 0xc6, 0xf2, 0x01, 0x8b, 0x00, 0xc3];
        assert_eq!(loaded_address(0x116_9260, &size), Some(0x309_58c8));
    }

    /// Debian 12's libnode.so.108 (node 18.20): the code accessor loads a pointer (filled
    /// by a relative relocation), the size accessor as Debian 13's.
    #[test]
    fn debian_12_libnode_accessors() {
        let code = [
            0x48, 0x8d, 0x05, 0x19, 0x85, 0xdc, 0x01, 0x48, 0x8b, 0x00, 0xc3,
        ];
        assert_eq!(returned_address(0xf6_7e10, &code), None);
        assert_eq!(pointer_address(0xf6_7e10, &code), Some(0x2d3_0330));
        let size = [0x48, 0x8d, 0x05, 0xc9, 0xa5, 0x9a, 0x01, 0x8b, 0x00, 0xc3];
        assert_eq!(loaded_address(0xf6_7e20, &size), Some(0x291_23f0));
        assert_eq!(pointer_address(0xf6_7e20, &size), None);
    }

    /// A fixed-address node (nodesource's 20.20): an immediate address, a RIP-relative
    /// load; and the same behind `endbr64`.
    #[test]
    fn fixed_address_accessors() {
        let code = [0xb8, 0x00, 0x40, 0x8c, 0x01, 0xc3, 0x66];
        assert_eq!(returned_address(0x106_2150, &code), Some(0x18c_4000));
        let size = [0x8b, 0x05, 0x52, 0x11, 0xce, 0x01, 0xc3];
        assert_eq!(loaded_address(0x106_2160, &size), Some(0x2d4_32b8));
        let code = [
            0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x8d, 0x05, 0x10, 0, 0, 0, 0xc3,
        ];
        assert_eq!(returned_address(0x1000, &code), Some(0x1000 + 4 + 7 + 0x10));
    }

    /// Debian testing's libnode.so.137 (node 24): `GetDefault` sets up its frame, then
    /// loads the group through `default_isolate_group_`'s address.
    #[test]
    fn debian_libnode_137_default_isolate_group() {
        let body = [
            0x55, 0x48, 0x89, 0xe5, 0x53, 0x48, 0x89, 0xfb, 0x48, 0x83, 0xec, 0x18, 0x48, 0x8d,
            0x05, 0xed, 0xc6, 0x93, 0x03, 0x48, 0x8b, 0x00, 0xf0, 0x83, 0x00, 0x01,
        ];
        assert_eq!(default_isolate_group(0xcc_30e0, &body), Some(0x45f_f7e0));
        let direct = [0x48, 0x8b, 0x05, 0x10, 0, 0, 0, 0xc3];
        assert_eq!(
            default_isolate_group(0x1000, &direct),
            Some(0x1000 + 7 + 0x10)
        );
        assert_eq!(default_isolate_group(0x1000, &body[..14]), None);
    }

    /// The largest range no function covers, functions overlapping or not, the text's
    /// end included.
    #[test]
    fn largest_gap_between_functions() {
        let bounds = [(0x1000, 0x1100), (0x1080, 0x1200), (0x5000, 0x5010)];
        assert_eq!(largest_gap(&bounds, 0x1000, 0x6000), (0x1200, 0x5000));
        assert_eq!(largest_gap(&bounds, 0x1000, 0x20000), (0x5010, 0x20000));
        assert_eq!(largest_gap(&[], 0x1000, 0x2000), (0x1000, 0x2000));
    }

    /// Any other body (a call, a load without its return, a cut body) reads nothing.
    #[test]
    fn other_bodies_read_nothing() {
        assert_eq!(returned_address(0x1000, &[0xe8, 0, 0, 0, 0, 0xc3]), None);
        assert_eq!(
            returned_address(0x1000, &[0x48, 0x8d, 0x05, 1, 0, 0, 0]),
            None
        );
        assert_eq!(
            returned_address(0x1000, &[0x48, 0x8d, 0x05, 1, 0, 0, 0, 0x90]),
            None
        );
        assert_eq!(loaded_address(0x1000, &[0x8b, 0x05, 1, 0, 0]), None);
        assert_eq!(
            loaded_address(0x1000, &[0x48, 0x8d, 0x05, 1, 0, 0, 0, 0xc3]),
            None
        );
        assert_eq!(loaded_address(0x1000, &[]), None);
    }
}
