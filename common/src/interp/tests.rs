use super::*;

#[test]
fn layouts_have_no_padding() {
    assert_eq!(size_of::<InterpProcess>(), 80);
    assert_eq!(size_of::<InterpConfig>(), 8);
    assert_eq!(size_of::<hotspot::CodeCache>(), 128);
    assert_eq!(size_of::<CodeKey>(), 16);
}

#[test]
fn blobs_carry_their_generation_in_their_known_low_bits() {
    use hotspot::{decode_blob, encode_blob, generation_bits};
    // JDK 17: 128-byte segments, 16-byte block headers: 4 bits.
    let blob = 0x7f65_7333_4590;
    assert_eq!(generation_bits(7, 16), 4);
    let (old, new) = (encode_blob(blob, 107, 7, 16), encode_blob(blob, 140, 7, 16));
    assert_ne!(old, new);
    // Still in the blob's segment, so still in the code cache.
    assert_eq!(old & !127, blob & !127);
    assert_eq!(decode_blob(old, 7, 16), (blob, 107 & 15));
    assert_eq!(decode_blob(new, 7, 16), (blob, 140 & 15));
    // 32-byte segments keep 2 bits; bits beyond them wrap.
    assert_eq!(generation_bits(5, 16), 2);
    assert_eq!(
        decode_blob(encode_blob(0x1010, 7, 5, 16), 5, 16),
        (0x1010, 3)
    );
    // Nothing fits: the blob as it is.
    assert_eq!(generation_bits(4, 16), 0);
    assert_eq!(encode_blob(0x1010, 7, 4, 16), 0x1010);
    assert_eq!(decode_blob(0x1010, 4, 16), (0x1010, 0));
    // Large segments are capped.
    assert_eq!(generation_bits(16, 16), hotspot::MAX_GENERATION_BITS);
    assert_eq!(
        decode_blob(encode_blob(0x1_0010, 0xFFFF, 16, 16), 16, 16),
        (0x1_0010, 0xFFF)
    );
}

/// A V8 `Code`'s generation is never 0 (a `SharedFunctionInfo`'s), and other
/// instructions (a start 16 bytes on, or a size one byte more) give another one.
#[test]
fn v8_code_generations_tell_other_instructions_apart() {
    use v8::code_generation;
    let (start, size) = (0x0e4a_f3c0_2040, 1184);
    let generation = code_generation(start, size);
    assert_ne!(generation, 0);
    assert_eq!(code_generation(start, size), generation);
    assert_ne!(code_generation(start + 16, size), generation);
    assert_ne!(code_generation(start, size + 1), generation);
    // Over a spread of starts, sizes: almost all distinct, none 0.
    let mut seen = [false; 1 << 16];
    let mut distinct = 0;
    for i in 0..1000u64 {
        let generation = code_generation(start + 64 * i, 1184 + (i as u32 % 7));
        assert_ne!(generation, 0);
        distinct += usize::from(!seen[usize::from(generation)]);
        seen[usize::from(generation)] = true;
    }
    assert!(distinct >= 990, "{distinct} of 1000");
}

#[test]
fn interpreted_frames_carry_their_methods_fingerprint() {
    use hotspot::{
        decode_fingerprint, encode_fingerprint, fingerprint, method_key, split_method_key,
    };
    // Two classes whose metadata was laid out alike (the JReuse fixture's P0 and P1):
    // the same ConstMethod, pool and indexes, another class name.
    let p0 = fingerprint(0x7f10_0000_2a08, 0x7f10_0000_1c40, 0x7f22_0001_3e50, 17, 18);
    let p1 = fingerprint(0x7f10_0000_2a08, 0x7f10_0000_1c40, 0x7f22_0001_3e70, 17, 18);
    assert_ne!(p0, p1);
    assert_ne!(
        p0,
        fingerprint(0x7f10_0000_2a08, 0x7f10_0000_1c40, 0x7f22_0001_3e50, 17, 20)
    );
    assert_eq!(
        p0,
        fingerprint(0x7f10_0000_2a08, 0x7f10_0000_1c40, 0x7f22_0001_3e50, 17, 18)
    );
    for fp in [Some(0), Some(p0), Some(u16::MAX), None] {
        let word = encode_fingerprint(fp);
        assert!(word >= 1 << 47);
        assert_eq!(decode_fingerprint(word), Some(fp));
    }
    // Frames of methods and blobs are not fingerprints.
    let method = 0x7f10_0000_2b10;
    assert_eq!(
        decode_fingerprint(encode_frame(runtime::HOTSPOT, method, 8)),
        None
    );
    assert_eq!(
        decode_fingerprint(encode_frame(runtime::PYTHON, 8, 3)),
        None
    );
    assert_eq!(decode_fingerprint(method), None);
    let key = method_key(method, 0xBEEF);
    assert_eq!(key, 0x97DD_EFE2_0000_0562);
    assert_eq!(split_method_key(key), Some((method, 0xBEEF)));
    assert_ne!(key, method_key(method, 0xBEEE));
    assert_eq!(split_method_key(method), None);
}

#[test]
fn method_keys_keep_arm64_metaspace_addresses() {
    use hotspot::{method_key, split_method_key};
    // arm64 user addresses reach 2^48: a JVM's metaspace there is above 2^47.
    for method in [0xffff_8a12_3450_u64, 0xaaaa_e000_0008, 0x7f3a_1c20_1238] {
        for fingerprint in [0, 0xBEEF, u16::MAX] {
            assert_eq!(
                split_method_key(method_key(method, fingerprint)),
                Some((method, fingerprint)),
                "{method:#x}"
            );
        }
    }
}

#[test]
fn frames_round_trip_and_never_look_like_user_addresses() {
    let code = 0x7f3a_1c20_1238;
    let word = encode_frame(runtime::PYTHON, code, 37);
    assert!(word >= 1 << 47);
    assert_eq!(decode_frame(word), Some((runtime::PYTHON, code, 37)));
    assert_eq!(decode_frame(0x7fff_ffff_f000), None);
    // arm64's user addresses reach 2^48 (mmap from 0xffff...): their bit 47 is kept.
    let high = 0xffff_8a3c_1238;
    let word = encode_frame(runtime::V8_REPLACED, high, FRAME_OFFSET_MAX.into());
    assert!(word >= 1 << 48);
    assert_eq!(
        decode_frame(word),
        Some((runtime::V8_REPLACED, high, FRAME_OFFSET_MAX))
    );
    assert_eq!(decode_frame(0xffff_ffff_f000), None);
    // Offsets past the field saturate instead of spilling into the runtime.
    let big = encode_frame(runtime::PYTHON, code, 1 << 20);
    assert_eq!(
        decode_frame(big),
        Some((runtime::PYTHON, code, FRAME_OFFSET_MAX))
    );
}

/// A CPython frame of a later generation at an address is named by its own key: the
/// generation word after it is no frame, and the key gives back address and generation.
#[test]
fn python_generations_key_their_code_objects() {
    use python::{code_key, decode_generation, encode_generation, split_code_key};
    let code = 0x7f3a_2b1c_0d40;
    let word = encode_generation(0xbeef);
    assert_eq!(decode_generation(word), Some(0xbeef));
    assert_eq!(
        decode_generation(encode_frame(runtime::PYTHON, code, 12)),
        None
    );
    assert_eq!(
        decode_generation(hotspot::encode_fingerprint(Some(0xbeef))),
        None
    );
    assert_eq!(decode_generation(0x5555_5555_1234), None);
    let key = code_key(code, 0xbeef);
    assert_ne!(key, code);
    assert_ne!(key, code_key(code, 0xbeee));
    assert_eq!(split_code_key(key), Some((code, 0xbeef)));
    assert_eq!(split_code_key(code), None);
}

/// Each pc of an arm64 prologue and epilogue of both frame sizes (words from GNU as), told
/// apart by [`hotspot::arm64_edge`].
#[test]
fn arm64_prologues_and_epilogues_say_where_the_caller_is() {
    use hotspot::{Edge, arm64_edge};
    // Every pc of `code`, with the words before it (0 before the code's start).
    fn edges<const N: usize>(code: [u32; N], prologue: bool) -> [Edge; N] {
        core::array::from_fn(|at| {
            let before = core::array::from_fn(|back| {
                at.checked_sub(back + 1).map_or(0, |index| code[index])
            });
            arm64_edge(code[at], before, prologue)
        })
    }
    use Edge::{AllocatedLinkRegister, LinkRegister, SavedRbp, Whole};
    // nop; sub x9, sp, #0x14, lsl #12; str xzr, [x9] (the stack bang); sub sp, sp, #0x30;
    // stp x29, x30, [sp, #32]; add x29, sp, #32 (-XX:+PreserveFramePointer).
    let small = [
        0xd503201f, 0xd14053e9, 0xf900013f, 0xd100c3ff, 0xa9027bfd, 0x910083fd,
    ];
    assert_eq!(
        edges(small, true),
        [
            LinkRegister,
            LinkRegister,
            LinkRegister,
            LinkRegister,
            AllocatedLinkRegister,
            Whole
        ]
    );
    // stp x29, x30, [sp, #-16]!; mov x29, sp; mov x8, #0x1230; sub sp, sp, x8.
    let large = [0xa9bf7bfd, 0x910003fd, 0xd2824608, 0xcb2863ff];
    assert_eq!(
        edges(large, true),
        [LinkRegister, SavedRbp, SavedRbp, SavedRbp]
    );
    // ldr x0, [x1]; ldp x29, x30, [sp, #32]; add sp, sp, #0x30; ldr x8, [x28, #832];
    // cmp sp, x8; b.hi; ret.
    let small = [
        0xf9400020, 0xa9427bfd, 0x9100c3ff, 0xf941a388, 0xeb2863ff, 0x54000008, 0xd65f03c0,
    ];
    assert_eq!(
        edges(small, false),
        [
            Whole,
            Whole,
            AllocatedLinkRegister,
            LinkRegister,
            LinkRegister,
            LinkRegister,
            LinkRegister
        ]
    );
    // ldr x0, [x1]; add sp, sp, x8; ldp x29, x30, [sp], #16; ldr x8, [x28, #832]; ret.
    let large = [0xf9400020, 0x8b2863ff, 0xa8c17bfd, 0xf941a388, 0xd65f03c0];
    assert_eq!(
        edges(large, false),
        [Whole, Whole, SavedRbp, LinkRegister, LinkRegister]
    );
    // A body's own pair stores and loads are not the frame record's.
    assert_eq!(arm64_edge(0xa90153f3, [0xa9bd7bfd, 0, 0, 0], false), Whole);
}
