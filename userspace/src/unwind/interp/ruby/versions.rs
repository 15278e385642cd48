//! The layouts of the CRuby versions whose frames are named, one entry per minor version,
//! each offset with its source. Debian ships no debug information for `libruby` reachable
//! here (`libruby3.3-dbgsym` is not on the mirror), so they are read from Ruby's headers at
//! the release's tag, and checked against the release's own code where it reads them (an
//! exported accessor's `mov` offset, quoted per entry).

/// Where a `String`'s length and bytes are (`include/ruby/internal/core/rstring.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StringLayout {
    /// Up to 3.1: an embedded string's length is in `flags` bits 14-18
    /// (`RSTRING_EMBED_LEN_MASK`), its bytes at 16; a heap string's `as.heap.len` at 16,
    /// `as.heap.ptr` at 24.
    LengthInFlags,
    /// From 3.2 (variable-width allocation): `len` at 16 for both; an embedded string's bytes
    /// (`as.embed.ary`) and a heap string's `as.heap.ptr` at 24.
    LengthField,
}

/// One minor version's layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Version {
    /// `3.minor`.
    pub minor: u8,
    /// The tag of the release the offsets were read at (`v3_3_8`).
    pub tag: &'static str,
    /// `sizeof(rb_control_frame_t)` (`vm_core.h`).
    pub cfp_size: u16,
    /// `rb_iseq_constant_body.iseq_size` (an `unsigned int`, in `VALUE`s).
    pub body_size: u64,
    /// `rb_iseq_constant_body.location.pathobj`.
    pub body_pathobj: u64,
    /// `rb_iseq_constant_body.location.label`.
    pub body_label: u64,
    /// `rb_iseq_constant_body.location.first_lineno`.
    pub body_first_lineno: u64,
    /// Whether `first_lineno` is a Fixnum `VALUE` (`(n << 1) | 1`, up to 3.1) or an `int`.
    pub first_lineno_fixnum: bool,
    /// `rb_iseq_constant_body.insns_info.body`.
    pub body_insns_info: u64,
    /// `rb_iseq_constant_body.insns_info.size`.
    pub body_insns_info_size: u64,
    /// `rb_iseq_constant_body.insns_info.succ_index_table`.
    pub body_succ_index_table: u64,
    /// `sizeof(struct iseq_insn_info_entry)` (`iseq.h`; `line_no` first).
    pub insn_info_entry: u64,
    /// Strings' layout.
    pub string: StringLayout,
}

/// The versions known, by minor version.
pub const VERSIONS: [Version; 2] = [
    // Ruby 3.1 (`vm_core.h` at v3_1_2): `rb_control_frame_t` is pc, sp, iseq, self, ep,
    // block_code, __bp__, jit_return (64 bytes); `rb_iseq_location_t` (at 64 in the body,
    // after `type`, `iseq_size`, `iseq_encoded` and the 48-byte `param`) is pathobj,
    // base_label, label, first_lineno (a `VALUE`), node_id, code_location (56 bytes), so
    // `insns_info` is at 120. Agrees with the OpenTelemetry profiler's table for 3.1.
    Version {
        minor: 1,
        tag: "v3_1_2",
        cfp_size: 64,
        body_size: 4,
        body_pathobj: 64,
        body_label: 80,
        body_first_lineno: 88,
        first_lineno_fixnum: true,
        body_insns_info: 120,
        body_insns_info_size: 136,
        body_succ_index_table: 144,
        insn_info_entry: 12,
        string: StringLayout::LengthInFlags,
    },
    // Ruby 3.3 (`vm_core.h` at v3_3_8): `rb_control_frame_t` lost `__bp__` in 3.2 (pc, sp,
    // iseq, self, ep, block_code, jit_return: 56 bytes; `bp_check` only with
    // VM_DEBUG_BP_CHECK, 0); `first_lineno` became an `int` (location: pathobj 64,
    // base_label 72, label 80, first_lineno 88, node_id 92, code_location 96-111), so
    // `insns_info` (body, positions, size, succ_index_table) is at 112. `iseq.h`:
    // `iseq_insn_info_entry` is line_no, node_id, events (12 bytes). Debian's 3.3.8 reads
    // the same: `rb_iseq_first_lineno` does `movslq 0x58(body)`, `rb_iseq_label`
    // `mov 0x50(body)`, `rb_iseq_path` `mov 0x40(body)`, and the line table walk
    // `0x70(body)` with `0x80(body)` entries of 12 bytes.
    Version {
        minor: 3,
        tag: "v3_3_8",
        cfp_size: 56,
        body_size: 4,
        body_pathobj: 64,
        body_label: 80,
        body_first_lineno: 88,
        first_lineno_fixnum: false,
        body_insns_info: 112,
        body_insns_info_size: 128,
        body_succ_index_table: 136,
        insn_info_entry: 12,
        string: StringLayout::LengthField,
    },
];

/// The layout of `3.minor`, if known.
pub fn version(major: u8, minor: u8) -> Option<&'static Version> {
    if major != 3 {
        return None;
    }
    VERSIONS.iter().find(|v| v.minor == minor)
}

/// The versions known, as messages list them (`3.1, 3.3`).
pub fn known() -> String {
    let known: Vec<String> = VERSIONS.iter().map(|v| format!("3.{}", v.minor)).collect();
    known.join(", ")
}

/// `(major, minor)` of a `ruby_version` string (`3.1.2`).
pub fn version_of(text: &str) -> Option<(u8, u8)> {
    let mut parts = text.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    parts.next()?.parse::<u16>().ok()?;
    Some((major, minor))
}

/// `(major, minor)` of a `libruby` file name (`libruby-3.3.so.3.3.8`, `libruby.so.3.4`):
/// the first `X.Y` after `libruby`.
pub fn version_of_name(name: &str) -> Option<(u8, u8)> {
    let rest = name.strip_prefix("libruby")?;
    let start = rest.find(|c: char| c.is_ascii_digit())?;
    let mut parts = rest[start..].split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_from_strings_and_names() {
        assert_eq!(version_of("3.1.2"), Some((3, 1)));
        assert_eq!(version_of("3.3.8"), Some((3, 3)));
        assert_eq!(version_of("2.7.8"), Some((2, 7)));
        assert_eq!(version_of("3.1"), None);
        assert_eq!(version_of("3.4.x"), None);
        assert_eq!(version_of_name("libruby-3.3.so.3.3.8"), Some((3, 3)));
        assert_eq!(version_of_name("libruby.so.3.4"), Some((3, 4)));
        assert_eq!(version_of_name("libruby-3.1.so.3.1"), Some((3, 1)));
        assert_eq!(version_of_name("ruby3.3"), None);
        assert_eq!(version_of_name("libruby.so"), None);
    }

    #[test]
    fn known_versions_and_their_offsets() {
        assert_eq!(known(), "3.1, 3.3");
        assert!(version(3, 2).is_none());
        assert!(version(3, 4).is_none());
        assert!(version(2, 3).is_none());
        let v31 = version(3, 1).unwrap();
        assert_eq!(
            (v31.cfp_size, v31.body_insns_info, v31.body_succ_index_table),
            (64, 120, 144)
        );
        assert!(v31.first_lineno_fixnum);
        let v33 = version(3, 3).unwrap();
        assert_eq!(v33.tag, "v3_3_8");
        assert_eq!(
            (
                v33.cfp_size,
                v33.body_pathobj,
                v33.body_label,
                v33.body_first_lineno,
                v33.body_insns_info,
                v33.body_insns_info_size,
                v33.body_succ_index_table,
                v33.insn_info_entry
            ),
            (56, 64, 80, 88, 112, 128, 136, 12)
        );
        assert!(!v33.first_lineno_fixnum);
        assert_eq!(v33.string, StringLayout::LengthField);
    }
}
