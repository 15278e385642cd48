use super::*;
use tracekit_common::engine::{Operand, SIGNED, operand};

fn reg(name: &str) -> Register {
    register(name).unwrap()
}

#[test]
fn registers_and_aliases() {
    let rows: Vec<(&str, &str, u32, u32)> = [
        "rax", "eax", "ax", "al", "ah", "rbx", "bh", "rcx", "cl", "dx", "rsi", "sil", "di", "edi",
        "rbp", "bpl", "rsp", "r8", "r8d", "r8w", "r8b", "r9d", "r10", "r11w", "r12", "r13d", "r14",
        "r15b", "rip",
    ]
    .iter()
    .map(|n| {
        let r = reg(n);
        (*n, r.name, r.pt_regs_offset, r.width)
    })
    .collect();
    assert_eq!(
        rows,
        [
            ("rax", "rax", 80, 8),
            ("eax", "rax", 80, 4),
            ("ax", "rax", 80, 2),
            ("al", "rax", 80, 1),
            ("ah", "rax", 81, 1),
            ("rbx", "rbx", 40, 8),
            ("bh", "rbx", 41, 1),
            ("rcx", "rcx", 88, 8),
            ("cl", "rcx", 88, 1),
            ("dx", "rdx", 96, 2),
            ("rsi", "rsi", 104, 8),
            ("sil", "rsi", 104, 1),
            ("di", "rdi", 112, 2),
            ("edi", "rdi", 112, 4),
            ("rbp", "rbp", 32, 8),
            ("bpl", "rbp", 32, 1),
            ("rsp", "rsp", 152, 8),
            ("r8", "r8", 72, 8),
            ("r8d", "r8", 72, 4),
            ("r8w", "r8", 72, 2),
            ("r8b", "r8", 72, 1),
            ("r9d", "r9", 64, 4),
            ("r10", "r10", 56, 8),
            ("r11w", "r11", 48, 2),
            ("r12", "r12", 24, 8),
            ("r13d", "r13", 16, 4),
            ("r14", "r14", 8, 8),
            ("r15b", "r15", 0, 1),
            ("rip", "rip", 128, 8),
        ]
    );
    for bad in ["r16", "r7", "e8", "xmm0", "r8q", ""] {
        assert!(register(bad).is_none(), "{bad}");
    }
}

#[test]
fn arg_specs() {
    let parsed = parse_args("-4@%edi 8@-16(%rbp) 4@$5 8@%rax -2@$-3 1@%r9b 8@(%rsp) -8@0x10(%rbx,%rcx,8) 4@counter+4(%rip) 8@%ah -4@40+CheckpointStats(%rip)").unwrap();
    let shown: Vec<String> = parsed.iter().map(Arg::to_string).collect();
    assert_eq!(
        shown,
        [
            "-4@rdi",
            "8@-16(rbp)",
            "4@$5",
            "8@rax",
            "-2@$-3",
            "1@r9",
            "8@0(rsp)",
            "-8@16(rbx,rcx,8)",
            "4@counter+4(rip)",
            "8@rax",
            "-4@CheckpointStats+40(rip)"
        ]
    );
    assert_eq!(
        parsed[1],
        Arg {
            size: 8,
            signed: false,
            location: Location::Memory {
                base: Some(reg("rbp")),
                index: None,
                displacement: -16,
                symbol: None
            }
        }
    );
    assert_eq!(parsed[9].location, Location::Register(reg("ah")));
    // Old notes have no size: 8 bytes.
    assert_eq!(parse_arg("%rdi").unwrap().size, 8);
}

/// Every operand shape gcc writes into stapsdt notes (at -O0: registers, %rbp slots; at
/// -O2 -fPIE: RIP-relative globals, base + index × scale; at -O2 -no-pie: absolute
/// globals with an index; thread-local variables), parsed to exact locations.
#[test]
fn operand_shapes_gcc_writes() {
    let memory =
        |base: Option<&str>, index: Option<(&str, u8)>, displacement, symbol: Option<&str>| {
            Location::Memory {
                base: base.map(reg),
                index: index.map(|(name, scale)| (reg(name), scale)),
                displacement,
                symbol: symbol.map(str::to_string),
            }
        };
    let cases = [
        ("-4@%eax", 4, true, Location::Register(reg("eax"))),
        ("8@%rax", 8, false, Location::Register(reg("rax"))),
        ("-1@%sil", 1, true, Location::Register(reg("sil"))),
        ("4@$5", 4, false, Location::Constant(5)),
        ("-4@$-1", 4, true, Location::Constant(-1)),
        ("8@$0x10", 8, false, Location::Constant(16)),
        ("8@-8(%rbp)", 8, false, memory(Some("rbp"), None, -8, None)),
        ("8@(%rsp)", 8, false, memory(Some("rsp"), None, 0, None)),
        ("-4@12(%r12)", 4, true, memory(Some("r12"), None, 12, None)),
        (
            "8@foo(%rip)",
            8,
            false,
            memory(Some("rip"), None, 0, Some("foo")),
        ),
        (
            "8@16+foo(%rip)",
            8,
            false,
            memory(Some("rip"), None, 16, Some("foo")),
        ),
        (
            "-4@arr+12(%rip)",
            4,
            true,
            memory(Some("rip"), None, 12, Some("arr")),
        ),
        (
            "8@foo-8(%rip)",
            8,
            false,
            memory(Some("rip"), None, -8, Some("foo")),
        ),
        (
            "4@(%rax,%rdx,8)",
            4,
            false,
            memory(Some("rax"), Some(("rdx", 8)), 0, None),
        ),
        (
            "4@-4(%rbx,%rcx,4)",
            4,
            false,
            memory(Some("rbx"), Some(("rcx", 4)), -4, None),
        ),
        (
            "-4@(%rsp,%rax,4)",
            4,
            true,
            memory(Some("rsp"), Some(("rax", 4)), 0, None),
        ),
        (
            "2@(%r9,%r10)",
            2,
            false,
            memory(Some("r9"), Some(("r10", 1)), 0, None),
        ),
        (
            "-4@arr(,%rcx,4)",
            4,
            true,
            memory(None, Some(("rcx", 4)), 0, Some("arr")),
        ),
        (
            "8@8+tab(,%rax,8)",
            8,
            false,
            memory(None, Some(("rax", 8)), 8, Some("tab")),
        ),
        (
            "-8@%fs:tls@tpoff",
            8,
            true,
            Location::Unsupported(
                "segment-relative operands (%fs:, thread-local variables) are not supported".into(),
            ),
        ),
    ];
    for (spec, size, signed, location) in cases {
        assert_eq!(
            parse_arg(spec).unwrap(),
            Arg {
                size,
                signed,
                location
            },
            "{spec}"
        );
    }
    // Where a symbol is found, the operand is read at its distance from the probe: the
    // probe at 0x1200, foo at 0x4000, arr at 0x4100, tab at 0x4200.
    let specs = "8@16+foo(%rip) -4@arr(,%rcx,4) 8@8+tab(,%rax,8) 4@(%rax,%rdx,8) \
                 -8@%fs:tls@tpoff 4@%xmm0 8@nowhere(%rip)";
    let mut args = parse_note_args(specs);
    resolve_symbols(&mut args, 0x1200, |name| match name {
        "foo" => Some(0x4000),
        "arr" => Some(0x4100),
        "tab" => Some(0x4200),
        _ => None,
    });
    let rip_indexed = |size, flags, aux: i64, index_offset, index_shift| Operand {
        kind: operand::USER_MEM_INDEXED,
        offset: 128,
        size,
        flags,
        aux: aux as u32,
        index_offset,
        index_shift,
        ..Operand::NONE
    };
    let operands: Vec<_> = args.iter().map(Arg::try_operand).collect();
    assert_eq!(
        operands,
        [
            Ok(Operand {
                kind: operand::USER_MEM,
                offset: 128,
                size: 8,
                aux: 0x4010 - 0x1200,
                ..Operand::NONE
            }),
            // rcx is pt_regs byte 88, rax 80.
            Ok(rip_indexed(4, SIGNED, 0x4100 - 0x1200, 88, 2)),
            Ok(rip_indexed(8, 0, 0x4208 - 0x1200, 80, 3)),
            Ok(Operand {
                kind: operand::USER_MEM_INDEXED,
                offset: 80,
                size: 4,
                index_offset: 96,
                index_shift: 3,
                ..Operand::NONE
            }),
            Err(
                "segment-relative operands (%fs:, thread-local variables) are not supported".into()
            ),
            Err(
                "USDT argument spec `4@%xmm0`: unknown register; valid: [-]SIZE@LOCATION \
                 with SIZE 1, 2, 4 or 8 and LOCATION %reg, $const, disp(%reg), \
                 disp(%reg,%reg,scale) or symbol(%rip) (x86_64), reg, const, [reg] or \
                 [reg, offset] (arm64)"
                    .into()
            ),
            Err(
                "the symbol `nowhere` of this RIP-relative operand is not in the binary's \
                 symbol table (stripped?) or names several variables"
                    .into()
            ),
        ]
    );
    // A spec that does not parse keeps its size and sign.
    assert_eq!((args[5].size, args[5].signed), (4, false));
    let shown: Vec<String> = args.iter().map(Arg::to_string).collect();
    assert_eq!(
        shown,
        [
            "8@foo+16(rip)",
            "-4@arr(,rcx,4)",
            "8@tab+8(,rax,8)",
            "4@0(rax,rdx,8)",
            "-8@?",
            "4@?",
            "8@nowhere(rip)"
        ]
    );
    let unresolved = |spec: &str| parse_arg(spec).unwrap().try_operand().unwrap_err();
    assert_eq!(
        unresolved("-4@arr(,%rcx,4)"),
        "the symbol `arr` of this absolute operand is not in the binary's symbol table \
         (stripped?) or names several variables"
    );
    assert_eq!(
        unresolved("4@0x601040(,%rax,4)"),
        "an absolute address without a symbol is not supported"
    );
}

#[test]
fn bad_arg_specs_say_what_is_wrong() {
    for (spec, why) in [
        ("3@%eax", "the size is not 1, 2, 4 or 8"),
        ("4@%xmm0", "unknown register"),
        ("4@$x", "the constant is not a number"),
        ("4@8(%rbp", "unbalanced parentheses"),
        ("4@8(%rbp,%rax,3)", "the scale is not 1, 2, 4 or 8"),
        ("4@8(%foo)", "unknown base register"),
        ("4@rbp", "unknown location"),
        ("4@8()", "no base or index register"),
        ("4@8(,%rax,3)", "the scale is not 1, 2, 4 or 8"),
    ] {
        let err = parse_arg(spec).unwrap_err().to_string();
        assert!(err.contains(why), "{spec}: {err}");
        assert!(err.contains(&format!("`{spec}`")), "{spec}: {err}");
    }
}

#[test]
fn operands() {
    let op = |spec: &str| parse_arg(spec).unwrap().operand();
    let edi = op("-4@%edi").unwrap();
    assert_eq!(
        (edi.kind, edi.offset, edi.size, edi.flags),
        (operand::REG, 112, 4, SIGNED)
    );
    // An 8-byte argument in a 4-byte alias reads only the alias's bytes.
    assert_eq!(op("8@%eax").unwrap().size, 4);
    let mem = op("8@-16(%rbp)").unwrap();
    assert_eq!(
        (mem.kind, mem.offset, mem.size, mem.aux as i32),
        (operand::USER_MEM, 32, 8, -16)
    );
    let constant = op("-8@$-5").unwrap();
    assert_eq!(constant.kind, operand::CONST);
    assert_eq!(
        (u64::from(constant.aux) << 32 | u64::from(constant.offset)) as i64,
        -5
    );
}

/// Scale-index-base operands: base register + index register << log2(scale) +
/// displacement, as gcc writes array elements (`-4@(%rsp,%rax,4)` at -O2).
#[test]
fn indexed_operands() {
    let op = |spec: &str| parse_arg(spec).unwrap().operand().unwrap();
    let indexed = |offset, size, flags, aux: i32, index_offset, index_shift| Operand {
        kind: operand::USER_MEM_INDEXED,
        offset,
        size,
        flags,
        aux: aux as u32,
        index_offset,
        index_shift,
        ..Operand::NONE
    };
    // rbp is pt_regs byte 32, rax 80, rsp 152, rcx 88, rbx 40, r12 24, r13 16.
    assert_eq!(op("-4@-8(%rbp,%rax,4)"), indexed(32, 4, SIGNED, -8, 80, 2));
    assert_eq!(op("-4@(%rsp,%rax,4)"), indexed(152, 4, SIGNED, 0, 80, 2));
    assert_eq!(
        op("-4@-40(%rsp,%rcx,4)"),
        indexed(152, 4, SIGNED, -40, 88, 2)
    );
    assert_eq!(op("1@(%rbx,%rcx)"), indexed(40, 1, 0, 0, 88, 0));
    assert_eq!(op("2@0x10(%rbx,%rcx,2)"), indexed(40, 2, 0, 16, 88, 1));
    assert_eq!(op("8@-16(%r12,%r13,8)"), indexed(24, 8, 0, -16, 16, 3));
    let err = parse_arg("4@(%esp,%eax,4)")
        .unwrap()
        .operand()
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "USDT argument `4@0(rsp,rax,4)`: 32-bit address registers are not supported"
    );
}

/// RIP-relative operands (`-fPIE` globals) become a distance from the probe's address,
/// read in the kernel at the uprobe's `rip` (the probe's address) + that distance.
#[test]
fn rip_relative_operands() {
    let mut args =
        parse_args("-8@tk_global(%rip) 4@tk_array+8(%rip) 2@tk_low-2(%rip) 8@gone(%rip) 4@%eax")
            .unwrap();
    // The probe's nop at 0x11d5; tk_global at 0x4010, tk_array at 0x4040, tk_low at
    // 0x1000 (below the probe).
    resolve_symbols(&mut args, 0x11d5, |name| match name {
        "tk_global" => Some(0x4010),
        "tk_array" => Some(0x4040),
        "tk_low" => Some(0x1000),
        _ => None,
    });
    assert_eq!(
        args[0].location,
        Location::ProbeRelative {
            from_probe: 0x4010 - 0x11d5,
            symbol: "tk_global".into(),
            displacement: 0,
            index: None
        }
    );
    assert_eq!(
        args[1].location,
        Location::ProbeRelative {
            from_probe: 0x4048 - 0x11d5,
            symbol: "tk_array".into(),
            displacement: 8,
            index: None
        }
    );
    let shown: Vec<String> = args.iter().map(Arg::to_string).collect();
    assert_eq!(
        shown,
        [
            "-8@tk_global(rip)",
            "4@tk_array+8(rip)",
            "2@tk_low-2(rip)",
            "8@gone(rip)",
            "4@rax"
        ]
    );
    let rip_mem = |size, flags, aux: i64| Operand {
        kind: operand::USER_MEM,
        offset: 128,
        size,
        flags,
        aux: aux as i32 as u32,
        ..Operand::NONE
    };
    assert_eq!(
        args[0].operand().unwrap(),
        rip_mem(8, SIGNED, 0x4010 - 0x11d5)
    );
    assert_eq!(args[1].operand().unwrap(), rip_mem(4, 0, 0x4048 - 0x11d5));
    assert_eq!(args[2].operand().unwrap(), rip_mem(2, 0, 0x0ffe - 0x11d5));
    assert_eq!(
        args[3].operand().unwrap_err().to_string(),
        "USDT argument `8@gone(rip)`: the symbol `gone` of this RIP-relative operand is \
         not in the binary's symbol table (stripped?) or names several variables"
    );
    // Not resolved: other registers with a symbol, RIP without one, too far away.
    let err = |spec: &str| parse_arg(spec).unwrap().operand().unwrap_err().to_string();
    assert!(
        err("8@x(%rbx)").contains("a symbol (`x`) as the displacement of a register"),
        "{}",
        err("8@x(%rbx)")
    );
    assert!(err("8@8(%rip)").contains("without a symbol"));
    let mut far = parse_args("8@far(%rip)").unwrap();
    resolve_symbols(&mut far, 0x1000, |_| Some(0x1_0000_1000));
    assert_eq!(
        far[0].operand().unwrap_err().to_string(),
        "USDT argument `8@far(rip)`: displacement 4294967296 out of 32-bit range"
    );
}

#[test]
fn globs() {
    assert!(glob_match("transaction__*", "transaction__commit"));
    assert!(glob_match("*", ""));
    assert!(glob_match("t?ans*com*", "transaction__commit"));
    assert!(!glob_match("transaction__", "transaction__commit"));
    assert!(!glob_match("*abort", "transaction__commit"));
}

/// Debian's PostgreSQL is built with `--enable-dtrace`: its notes have the
/// `postgresql` provider's probes, with parseable arguments and semaphores.
#[test]
fn postgres_notes() {
    let Some(postgres) = ["/usr/lib/postgresql/15/bin/postgres"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.exists())
    else {
        eprintln!("skipped: PostgreSQL 15 is not installed (apt-get install postgresql)");
        return;
    };
    let all = probes(postgres, None, None).unwrap();
    assert!(all.len() > 50, "{} probes", all.len());
    assert!(all.iter().all(|s| s.provider == "postgresql"));
    // Every argument is readable, the RIP-relative globals of checkpoint__done
    // (`-4@40+CheckpointStats(%rip)`, from the dynamic symbol table) included.
    let unreadable: Vec<String> = all
        .iter()
        .flat_map(|s| s.args.iter())
        .filter_map(|a| a.operand().err().map(|e| e.to_string()))
        .collect();
    assert!(unreadable.is_empty(), "{unreadable:#?}");
    let done = probes(postgres, None, Some("checkpoint__done")).unwrap();
    assert!(
        matches!(&done[0].args[0].location, Location::ProbeRelative { symbol, displacement: 40, .. } if symbol == "CheckpointStats"),
        "{:?}",
        done[0].args
    );
    // The other probe with a RIP-relative argument: `-4@NBuffers(%rip) -4@%eax -4@%r14d`.
    let sync = probes(postgres, None, Some("buffer__sync__done")).unwrap();
    assert!(
        matches!(&sync[0].args[0].location, Location::ProbeRelative { symbol, displacement: 0, index: None, .. } if symbol == "NBuffers"),
        "{:?}",
        sync[0].args
    );
    let commits = probes(postgres, Some("postgresql"), Some("transaction__commit")).unwrap();
    assert_eq!(commits.len(), 1, "{commits:?}");
    let commit = &commits[0];
    // TRACE_POSTGRESQL_TRANSACTION_COMMIT(LocalTransactionId): one 4-byte argument.
    assert_eq!(commit.args.len(), 1, "{}", commit.arg_specs);
    assert_eq!(commit.args[0].size, 4, "{}", commit.arg_specs);
    assert!(commit.args[0].operand().is_ok(), "{}", commit.arg_specs);
    let size = std::fs::metadata(postgres).unwrap().len();
    assert!(commit.file_offset > 0 && commit.file_offset < size);
    // The semaphore lives in the writable `.probes` section, in the file too.
    assert!(commit.semaphore.is_some(), "{commit:?}");
    assert!(
        commit.semaphore_file_offset.is_some_and(|o| o < size),
        "{commit:?}"
    );
    let wild = probes(postgres, None, Some("transaction__*")).unwrap();
    let mut names: Vec<&str> = wild.iter().map(|s| s.name.as_str()).collect();
    names.dedup();
    assert_eq!(
        names,
        [
            "transaction__start",
            "transaction__commit",
            "transaction__abort"
        ]
    );
}

/// arm64's specs as GCC writes them in `stapsdt` notes: registers (`x0`, `w1`, `sp`),
/// memory at a register with or without an offset (`[sp, 16]`, `[x2]`), constants without
/// `$`; a note's specs split at spaces outside the brackets. Each reads the slot of
/// `struct user_pt_regs` (`regs[31]`, `sp`) its register names.
#[test]
fn arm64_specs_and_their_operands() {
    let args = parse_args("-4@w0 8@x1 -8@[sp, 16] 4@[x2] 2@[x29, -12] 4@7 8@sp").unwrap();
    let operands: Vec<(u32, u32, u32, u32, bool)> = args
        .iter()
        .map(|arg| {
            let op = arg.operand().unwrap();
            (op.kind, op.offset, op.size, op.aux, op.flags & SIGNED != 0)
        })
        .collect();
    assert_eq!(
        operands,
        [
            (operand::REG, 0, 4, 0, true),
            (operand::REG, 8, 8, 0, false),
            (operand::USER_MEM, 248, 8, 16, true),
            (operand::USER_MEM, 16, 4, 0, false),
            (operand::USER_MEM, 232, 2, -12i32 as u32, false),
            (operand::CONST, 7, 4, 0, false),
            (operand::REG, 248, 8, 0, false),
        ]
    );
    let note = parse_note_args("-4@[x0, 8] 4@[q9, 4] 8@x3");
    assert_eq!(note.len(), 3);
    assert!(
        matches!(&note[1].location, Location::Unsupported(why) if why.contains("unknown base register"))
    );
    assert!(matches!(note[2].location, Location::Register(r) if r.name == "x3"));
    for bad in ["4@[x0, 8", "4@[x31]", "4@w31", "4@[x0, q]"] {
        assert!(parse_arg(bad).is_err(), "{bad}");
    }
}
