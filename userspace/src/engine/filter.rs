//! The filter language (`probe::filter`) compiled for the kernel engine: type-checked
//! against the event's fields, emitted as postfix [`Insn`]s.
//!
//! Numbers must fit the field they compare with: `-1` is no `u32`, `300` no `u8`
//! (the kernel reads a field at its width, so such a comparison would silently be always
//! or never true). A bit test (`&`) takes any bit pattern of the field's width.

use tracekit_common::engine::{Insn, op};

use crate::{
    Error, Result,
    engine::PlanBuilder,
    error::{quote, quote_at},
    probe::{
        fields::{FieldRef, Fields, ValueType},
        filter::{CmpOp, Expr, Literal, parse},
    },
};

/// Type-checks `text` against `fields` and appends its instructions to `builder`.
pub fn compile(text: &str, fields: &dyn Fields, builder: &mut PlanBuilder) -> Result<()> {
    let expr = parse(text)?;
    let fail = |column: usize, message: String| {
        Error::usage(format!(
            "--filter '{}': {message} at column {column}",
            quote_at(text, column)
        ))
    };
    emit(&expr, fields, builder, &fail).map_err(|err| match err {
        Error::Usage(message) if !message.starts_with("--filter") => {
            Error::usage(format!("--filter '{}': {message}", quote(text)))
        }
        other => other,
    })
}

/// The values an integer operand of `size` bytes holds, as the engine reads it
/// (sign-extended when signed), and the name of its type (`s32`).
fn int_range(size: u32, signed: bool) -> (i128, i128, String) {
    let bits = 8 * size.clamp(1, 8);
    let name = format!("{}{bits}", if signed { 's' } else { 'u' });
    if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1, name)
    } else {
        (0, (1i128 << bits) - 1, name)
    }
}

fn emit(
    expr: &Expr,
    fields: &dyn Fields,
    builder: &mut PlanBuilder,
    fail: &dyn Fn(usize, String) -> Error,
) -> Result<()> {
    let simple = |op| Insn {
        op,
        operand: 0,
        arg: 0,
    };
    match expr {
        Expr::And(a, b) | Expr::Or(a, b) => {
            emit(a, fields, builder, fail)?;
            emit(b, fields, builder, fail)?;
            let code = if matches!(expr, Expr::And(..)) {
                op::AND
            } else {
                op::OR
            };
            builder.push_insn(simple(code))
        }
        Expr::Not(inner) => {
            emit(inner, fields, builder, fail)?;
            builder.push_insn(simple(op::NOT))
        }
        Expr::Cmp {
            field,
            column,
            op: cmp,
            value,
            value_column,
        } => {
            let FieldRef {
                operand, ty, hint, ..
            } = fields.lookup(field).ok_or_else(|| {
                let near = crate::probe::nearest(field, &fields.names(), 1);
                fail(
                    *column,
                    format!(
                        "unknown field `{}`{}; {} has {}",
                        quote(field),
                        if near.is_empty() {
                            String::new()
                        } else {
                            format!(" (did you mean {}?)", near[0])
                        },
                        quote(&fields.event_name()),
                        fields.describe()
                    ),
                )
            })?;
            if hint == crate::probe::fields::Hint::Ip {
                return Err(fail(
                    *column,
                    format!(
                        "`{}` is a 16-byte address, which filters cannot compare yet; filter on \
                         the 4-byte IPv4 field (`daddr == \"127.0.0.1\"`) or the ports",
                        quote(field)
                    ),
                ));
            }
            let index = builder.operand(operand)?;
            match ty {
                ValueType::Str => {
                    let s = match value {
                        Literal::Str(s) | Literal::Word(s) => s,
                        Literal::Number(_) => {
                            return Err(fail(
                                *value_column,
                                format!(
                                    "`{}` is a string; compare it with a quoted string",
                                    quote(field)
                                ),
                            ));
                        }
                    };
                    let (code, pattern, negate) = match cmp {
                        CmpOp::Eq => (op::STR_EQ, s.as_str(), false),
                        CmpOp::Ne => (op::STR_EQ, s.as_str(), true),
                        CmpOp::Glob | CmpOp::NotGlob => {
                            let (code, pattern) = glob_kind(s).ok_or_else(|| {
                                fail(
                                    *value_column,
                                    format!(
                                        "glob \"{}\" is not one the kernel engine matches; \
                                         valid: \"abc\", \"abc*\", \"*abc\", \"*abc*\"",
                                        quote(s)
                                    ),
                                )
                            })?;
                            (code, pattern, *cmp == CmpOp::NotGlob)
                        }
                        other => {
                            return Err(fail(
                                *column,
                                format!(
                                    "`{}` is a string: use == != ~ !~, not {}",
                                    quote(field),
                                    other.text()
                                ),
                            ));
                        }
                    };
                    let constant = builder
                        .string_constant(pattern)
                        .map_err(|message| fail(*value_column, message))?;
                    builder.push_insn(Insn {
                        op: code,
                        operand: index,
                        arg: u64::from(constant),
                    })?;
                    if negate {
                        builder.push_insn(simple(op::NOT))?;
                    }
                    Ok(())
                }
                ValueType::Int { signed } => {
                    let address = match value {
                        Literal::Str(s) | Literal::Word(s)
                            if hint == crate::probe::fields::Hint::Ipv4 =>
                        {
                            crate::engine::addr::ipv4_value(s)
                        }
                        Literal::Str(s) | Literal::Word(s)
                            if hint == crate::probe::fields::Hint::TcpState =>
                        {
                            crate::engine::addr::tcp_state_value(s)
                        }
                        _ => None,
                    };
                    let number = match value {
                        _ if address.is_some() => address.map_or(0, i128::from),
                        Literal::Number(n) => *n,
                        Literal::Str(s) | Literal::Word(s) => {
                            return Err(fail(
                                *value_column,
                                format!("`{}` is a number; \"{}\" is not", quote(field), quote(s)),
                            ));
                        }
                    };
                    let (low, high, type_name) = int_range(operand.size, signed);
                    // A bit mask is a bit pattern: signed or not, as long as it fits.
                    let (low, high) = if *cmp == CmpOp::BitAnd {
                        (
                            int_range(operand.size, true).0,
                            int_range(operand.size, false).1,
                        )
                    } else {
                        (low, high)
                    };
                    if !(low..=high).contains(&number) {
                        return Err(fail(
                            *value_column,
                            format!(
                                "{number} is out of range for `{}` ({type_name}: {low} to {high})",
                                quote(field)
                            ),
                        ));
                    }
                    // Two's complement, as the engine holds sign-extended values.
                    let number = number as u64;
                    let code = match (cmp, signed) {
                        (CmpOp::Eq, _) => op::EQ,
                        (CmpOp::Ne, _) => op::NE,
                        (CmpOp::Lt, false) => op::LT,
                        (CmpOp::Le, false) => op::LE,
                        (CmpOp::Gt, false) => op::GT,
                        (CmpOp::Ge, false) => op::GE,
                        (CmpOp::Lt, true) => op::SLT,
                        (CmpOp::Le, true) => op::SLE,
                        (CmpOp::Gt, true) => op::SGT,
                        (CmpOp::Ge, true) => op::SGE,
                        (CmpOp::BitAnd, _) => op::BITAND,
                        (CmpOp::Glob | CmpOp::NotGlob, _) => {
                            return Err(fail(
                                *column,
                                format!(
                                    "`{}` is a number: {} matches strings",
                                    quote(field),
                                    cmp.text()
                                ),
                            ));
                        }
                    };
                    builder.push_insn(Insn {
                        op: code,
                        operand: index,
                        arg: number,
                    })
                }
            }
        }
    }
}

/// The engine opcode and literal text of a glob the kernel can match.
fn glob_kind(pattern: &str) -> Option<(u32, &str)> {
    if pattern.contains(['?', '[', ']']) {
        return None;
    }
    let inner = pattern.trim_matches('*');
    if inner.contains('*') {
        return None;
    }
    let starts = pattern.starts_with('*');
    let ends = pattern.len() > usize::from(starts) && pattern.ends_with('*');
    Some(match (starts, ends) {
        (false, false) => (op::STR_EQ, inner),
        (false, true) => (op::STR_PREFIX, inner),
        (true, false) => (op::STR_SUFFIX, inner),
        (true, true) => (op::STR_CONTAINS, inner),
    })
}

#[cfg(test)]
mod tests {
    use tracekit_common::engine::{Operand, SIGNED, operand};

    use super::*;

    struct TestFields;

    impl Fields for TestFields {
        fn lookup(&self, name: &str) -> Option<FieldRef> {
            let int = |offset, signed| {
                FieldRef::new(
                    Operand {
                        kind: operand::FIELD,
                        offset,
                        size: 4,
                        flags: if signed { SIGNED } else { 0 },
                        ..Operand::NONE
                    },
                    ValueType::Int { signed },
                )
            };
            match name {
                "nr_sector" => Some(int(24, false)),
                "bytes" => Some(int(28, false)),
                "ret" => Some(int(32, true)),
                "rwbs" => Some(FieldRef::new(
                    Operand {
                        kind: operand::FIELD_STRING,
                        offset: 34,
                        size: 10,
                        ..Operand::NONE
                    },
                    ValueType::Str,
                )),
                _ => crate::probe::fields::builtin(name),
            }
        }
        fn names(&self) -> Vec<String> {
            ["nr_sector", "bytes", "ret", "rwbs"]
                .map(String::from)
                .to_vec()
        }
        fn describe(&self) -> String {
            "nr_sector (unsigned int), bytes (unsigned int), ret (int), rwbs (char[10])".into()
        }
        fn event_name(&self) -> String {
            "block:test".into()
        }
    }

    fn compiled(text: &str) -> Result<Vec<(u32, u32, u64)>> {
        let mut builder = PlanBuilder::new();
        compile(text, &TestFields, &mut builder)?;
        let plan = builder.plan();
        Ok(plan.insns[..plan.n_insns as usize]
            .iter()
            .map(|i| (i.op, i.operand, i.arg))
            .collect())
    }

    #[test]
    fn compiles_the_seed_filters() {
        assert_eq!(compiled("nr_sector > 200").unwrap(), [(op::GT, 0, 200)]);
        assert_eq!(compiled("rwbs == \"WS\"").unwrap(), [(op::STR_EQ, 0, 0)]);
        assert_eq!(
            compiled("rwbs ~ \"*W*\"").unwrap(),
            [(op::STR_CONTAINS, 0, 0)]
        );
        assert_eq!(
            compiled("bytes >= 65536 && !(ret < 0 || rwbs != R)").unwrap(),
            [
                (op::GE, 0, 65536),
                (op::SLT, 1, 0),
                (op::STR_EQ, 2, 0),
                (op::NOT, 0, 0),
                (op::OR, 0, 0),
                (op::NOT, 0, 0),
                (op::AND, 0, 0),
            ]
        );
        assert_eq!(compiled("bytes & 0x200").unwrap(), [(op::BITAND, 0, 512)]);
    }

    #[test]
    fn exact_error_messages() {
        let cases = [
            (
                "nr_sectr > 200",
                "--filter 'nr_sectr > 200': unknown field `nr_sectr` (did you mean `nr_sector`?); \
                 block:test has nr_sector (unsigned int), bytes (unsigned int), ret (int), \
                 rwbs (char[10]) at column 1",
            ),
            (
                "rwbs == 5",
                "--filter 'rwbs == 5': `rwbs` is a string; compare it with a quoted string at column 9",
            ),
            (
                "bytes > \"big\"",
                "--filter 'bytes > \"big\"': `bytes` is a number; \"big\" is not at column 9",
            ),
            (
                "bytes > 1 &&",
                "--filter 'bytes > 1 &&': expected a field name before the end at column 13",
            ),
            (
                "bytes 100",
                "--filter 'bytes 100': expected an operator (== != < <= > >= & ~ !~) after \
                 `bytes`, found `100` at column 7",
            ),
            (
                "(bytes > 1",
                "--filter '(bytes > 1': expected `)` before the end at column 11",
            ),
            (
                "bytes > 1 bytes",
                "--filter 'bytes > 1 bytes': unexpected `bytes` (missing && or ||?) at column 11",
            ),
            (
                "rwbs ~ \"W?\"",
                "--filter 'rwbs ~ \"W?\"': glob \"W?\" is not one the kernel engine matches; \
                 valid: \"abc\", \"abc*\", \"*abc\", \"*abc*\" at column 8",
            ),
            (
                "rwbs < \"W\"",
                "--filter 'rwbs < \"W\"': `rwbs` is a string: use == != ~ !~, not < at column 1",
            ),
            (
                "bytes ~ 4",
                "--filter 'bytes ~ 4': `bytes` is a number: ~ matches strings at column 1",
            ),
            (
                "bytes > 12x",
                "--filter 'bytes > 12x': `12x` is not a number at column 9",
            ),
            (
                "rwbs == \"W",
                "--filter 'rwbs == \"W': unterminated string starting with \" at column 9",
            ),
        ];
        for (text, message) in cases {
            assert_eq!(compiled(text).unwrap_err().to_string(), message, "{text}");
        }
    }

    #[test]
    fn refuses_filters_over_the_engine_limits() {
        let long = vec!["bytes > 1"; 17].join(" && ");
        assert_eq!(
            compiled(&long).unwrap_err().to_string(),
            format!(
                "--filter '{}b… && bytes > 1 && bytes > 1': needs more than 32 kernel \
                 instructions, the engine runs at most 32; simplify it",
                "bytes > 1 && ".repeat(4)
            )
        );
        assert_eq!(
            compiled("rwbs == \"0123456789012345678901234567890123\"")
                .unwrap_err()
                .to_string(),
            "--filter 'rwbs == \"0123456789012345678901234567890123\"': string constants are at \
             most 31 bytes in the kernel engine at column 9"
        );
    }

    #[test]
    fn numbers_must_fit_the_field() {
        // `bytes` is u32, `ret` s32 (TestFields), `pid` a u64 built-in.
        let cases = [
            (
                "ret > -2147483649",
                "--filter 'ret > -2147483649': -2147483649 is out of range for `ret` \
                 (s32: -2147483648 to 2147483647) at column 7",
            ),
            (
                "bytes != -1",
                "--filter 'bytes != -1': -1 is out of range for `bytes` (u32: 0 to 4294967295) \
                 at column 10",
            ),
            (
                "bytes == 0x100000000",
                "--filter 'bytes == 0x100000000': 4294967296 is out of range for `bytes` \
                 (u32: 0 to 4294967295) at column 10",
            ),
            (
                "pid > 18446744073709551616",
                "--filter 'pid > 18446744073709551616': `18446744073709551616` is out of range: \
                 numbers are 64-bit, -18446744073709551615 to 18446744073709551615 at column 7",
            ),
            (
                "pid > -1",
                "--filter 'pid > -1': -1 is out of range for `pid` (u64: 0 to \
                 18446744073709551615) at column 7",
            ),
        ];
        for (text, message) in cases {
            assert_eq!(compiled(text).unwrap_err().to_string(), message, "{text}");
        }
        // The edges are in range, stored as the engine reads them (sign-extended).
        assert_eq!(
            compiled("ret >= -2147483648").unwrap(),
            [(op::SGE, 0, (-2147483648i64) as u64)]
        );
        assert_eq!(
            compiled("bytes <= 4294967295").unwrap(),
            [(op::LE, 0, 4294967295)]
        );
        assert_eq!(
            compiled("pid == 18446744073709551615").unwrap(),
            [(op::EQ, 0, u64::MAX)]
        );
        // A bit mask may be any pattern of the width, written signed or not.
        assert_eq!(
            compiled("ret & 0x80000000").unwrap(),
            [(op::BITAND, 0, 0x8000_0000)]
        );
        assert_eq!(compiled("bytes & -1").unwrap(), [(op::BITAND, 0, u64::MAX)]);
    }

    #[test]
    fn hostile_filters_get_short_errors() {
        let deep = format!("{}bytes > 1{}", "(".repeat(10_000), ")".repeat(10_000));
        assert_eq!(
            compiled(&deep[..4000]).unwrap_err().to_string(),
            format!(
                "--filter '{}…': more than 32 levels of `(` and `!`; filters nest at most 32 \
                 deep at column 33",
                "(".repeat(79)
            )
        );
        assert_eq!(
            compiled(&deep).unwrap_err().to_string(),
            format!(
                "--filter '{}…{}': 20009 bytes long; a filter is at most 4096 bytes",
                "(".repeat(53),
                ")".repeat(26)
            )
        );
        let nots = format!("{}bytes > 1", "!".repeat(33));
        assert_eq!(
            compiled(&nots).unwrap_err().to_string(),
            format!(
                "--filter '{nots}': more than 32 levels of `(` and `!`; filters nest at most 32 \
                 deep at column 33"
            )
        );
        // 32 deep parses, and runs into the engine's instruction limit only if it must.
        let parens = format!("{}bytes > 1{}", "(".repeat(32), ")".repeat(32));
        assert_eq!(compiled(&parens).unwrap(), [(op::GT, 0, 1)]);
        // A long unknown name is quoted short, where it is.
        let name = "x".repeat(3000);
        assert_eq!(
            compiled(&format!("bytes > 1 && {name} == 1"))
                .unwrap_err()
                .to_string(),
            format!(
                "--filter 'bytes > 1 && {}…': unknown field `{}…{}`; block:test has \
                 nr_sector (unsigned int), bytes (unsigned int), ret (int), rwbs (char[10]) \
                 at column 14",
                "x".repeat(66),
                "x".repeat(53),
                "x".repeat(26)
            )
        );
    }

    #[test]
    fn glob_kinds() {
        assert_eq!(glob_kind("WS"), Some((op::STR_EQ, "WS")));
        assert_eq!(glob_kind("W*"), Some((op::STR_PREFIX, "W")));
        assert_eq!(glob_kind("*S"), Some((op::STR_SUFFIX, "S")));
        assert_eq!(glob_kind("*W*"), Some((op::STR_CONTAINS, "W")));
        assert_eq!(glob_kind("a*b"), None);
    }
}
