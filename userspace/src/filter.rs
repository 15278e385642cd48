//! The perf/ftrace event filter language, compiled for the kernel engine.
//!
//! ```text
//! expr       := or
//! or         := and ("||" and)*
//! and        := unary ("&&" unary)*
//! unary      := "!" unary | "(" expr ")" | comparison
//! comparison := FIELD OP VALUE
//! OP         := "==" | "!=" | "<" | "<=" | ">" | ">=" | "&" | "~" | "!~"
//! VALUE      := number (decimal, 0x hex, negative) | "string" | 'string' | bare word
//! ```
//!
//! As in ftrace (`Documentation/trace/events.rst`, "Event filtering"): numeric fields compare
//! with numbers, `&` tests bits, strings compare with `==`/`!=` or glob-match with `~`
//! (`"abc"`, `"abc*"`, `"*abc"`, `"*abc*"`). Fields are the event's own, plus `pid`, `tid`,
//! `cpu` and `comm` where the event has no field of that name.
//!
//! [`compile`] type-checks against the event's fields and emits postfix
//! [`Insn`]s; every error is one line naming the offending
//! token, its column, and what would be valid.

use tracekit_common::engine::{Insn, op};

use crate::{
    Error, Result,
    engine::{FieldRef, Fields, PlanBuilder, ValueType},
};

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    BitAnd,
    Glob,
    NotGlob,
}

impl CmpOp {
    fn text(self) -> &'static str {
        match self {
            Self::Eq => "==",
            Self::Ne => "!=",
            Self::Lt => "<",
            Self::Le => "<=",
            Self::Gt => ">",
            Self::Ge => ">=",
            Self::BitAnd => "&",
            Self::Glob => "~",
            Self::NotGlob => "!~",
        }
    }
}

/// A literal on the right of a comparison.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Literal {
    /// A number (negative numbers are stored two's complement).
    Number(u64),
    /// A quoted string.
    Str(String),
    /// An unquoted word: a string if the field is one.
    Word(String),
}

/// A filter expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    Cmp {
        field: String,
        /// 1-based column of the field name.
        column: usize,
        op: CmpOp,
        value: Literal,
        /// 1-based column of the value.
        value_column: usize,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Ident(String),
    Number(u64),
    Str(String),
    Op(CmpOp),
    And,
    Or,
    Not,
    Open,
    Close,
}

fn describe(token: &Token) -> String {
    match token {
        Token::Ident(name) => format!("`{name}`"),
        Token::Number(n) => format!("`{n}`"),
        Token::Str(s) => format!("\"{s}\""),
        Token::Op(op) => format!("`{}`", op.text()),
        Token::And => "`&&`".into(),
        Token::Or => "`||`".into(),
        Token::Not => "`!`".into(),
        Token::Open => "`(`".into(),
        Token::Close => "`)`".into(),
    }
}

/// A parse error: what and where (1-based column).
#[derive(Debug, Clone, PartialEq, Eq)]
struct ParseError {
    column: usize,
    message: String,
}

fn tokenize(text: &str) -> std::result::Result<Vec<(Token, usize)>, ParseError> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    let error = |column: usize, message: String| ParseError { column, message };
    while i < chars.len() {
        let c = chars[i];
        let column = i + 1;
        let next = chars.get(i + 1).copied();
        let (token, width) = match c {
            ' ' | '\t' | '\n' => {
                i += 1;
                continue;
            }
            '(' => (Token::Open, 1),
            ')' => (Token::Close, 1),
            '&' if next == Some('&') => (Token::And, 2),
            '&' => (Token::Op(CmpOp::BitAnd), 1),
            '|' if next == Some('|') => (Token::Or, 2),
            '=' if next == Some('=') => (Token::Op(CmpOp::Eq), 2),
            '!' if next == Some('=') => (Token::Op(CmpOp::Ne), 2),
            '!' if next == Some('~') => (Token::Op(CmpOp::NotGlob), 2),
            '!' => (Token::Not, 1),
            '<' if next == Some('=') => (Token::Op(CmpOp::Le), 2),
            '<' => (Token::Op(CmpOp::Lt), 1),
            '>' if next == Some('=') => (Token::Op(CmpOp::Ge), 2),
            '>' => (Token::Op(CmpOp::Gt), 1),
            '~' => (Token::Op(CmpOp::Glob), 1),
            '"' | '\'' => {
                let end = chars[i + 1..].iter().position(|&d| d == c).ok_or_else(|| {
                    error(column, format!("unterminated string starting with {c}"))
                })?;
                let s: String = chars[i + 1..i + 1 + end].iter().collect();
                (Token::Str(s), end + 2)
            }
            '-' | '0'..='9' => {
                let len = chars[i + 1..]
                    .iter()
                    .position(|d| !(d.is_ascii_alphanumeric()))
                    .map_or(chars.len() - i, |p| p + 1);
                let word: String = chars[i..i + len].iter().collect();
                let (negative, digits) = match word.strip_prefix('-') {
                    Some(rest) => (true, rest),
                    None => (false, word.as_str()),
                };
                let parsed = match digits
                    .strip_prefix("0x")
                    .or_else(|| digits.strip_prefix("0X"))
                {
                    Some(hex) => u64::from_str_radix(hex, 16),
                    None => digits.parse::<u64>(),
                };
                let value =
                    parsed.map_err(|_| error(column, format!("`{word}` is not a number")))?;
                (
                    Token::Number(if negative {
                        value.wrapping_neg()
                    } else {
                        value
                    }),
                    len,
                )
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let len = chars[i..]
                    .iter()
                    .position(|d| !(d.is_ascii_alphanumeric() || *d == '_'))
                    .unwrap_or(chars.len() - i);
                (Token::Ident(chars[i..i + len].iter().collect()), len)
            }
            other => return Err(error(column, format!("unexpected `{other}`"))),
        };
        tokens.push((token, column));
        i += width;
    }
    Ok(tokens)
}

struct Parser {
    tokens: Vec<(Token, usize)>,
    pos: usize,
    end_column: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos).map(|(t, _)| t)
    }

    fn column(&self) -> usize {
        self.tokens
            .get(self.pos)
            .map_or(self.end_column, |(_, c)| *c)
    }

    fn next(&mut self) -> Option<(Token, usize)> {
        let token = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        token
    }

    fn error<T>(&self, message: impl Into<String>) -> std::result::Result<T, ParseError> {
        Err(ParseError {
            column: self.column(),
            message: message.into(),
        })
    }

    fn or(&mut self) -> std::result::Result<Expr, ParseError> {
        let mut left = self.and()?;
        while self.peek() == Some(&Token::Or) {
            self.pos += 1;
            left = Expr::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> std::result::Result<Expr, ParseError> {
        let mut left = self.unary()?;
        while self.peek() == Some(&Token::And) {
            self.pos += 1;
            left = Expr::And(Box::new(left), Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> std::result::Result<Expr, ParseError> {
        match self.peek() {
            Some(Token::Not) => {
                self.pos += 1;
                Ok(Expr::Not(Box::new(self.unary()?)))
            }
            Some(Token::Open) => {
                self.pos += 1;
                let inner = self.or()?;
                match self.next() {
                    Some((Token::Close, _)) => Ok(inner),
                    Some((token, column)) => Err(ParseError {
                        column,
                        message: format!("expected `)`, found {}", describe(&token)),
                    }),
                    None => self.error("expected `)` before the end"),
                }
            }
            _ => self.comparison(),
        }
    }

    fn comparison(&mut self) -> std::result::Result<Expr, ParseError> {
        let (field, column) = match self.next() {
            Some((Token::Ident(name), column)) => (name, column),
            Some((token, column)) => {
                return Err(ParseError {
                    column,
                    message: format!("expected a field name, found {}", describe(&token)),
                });
            }
            None => {
                self.pos -= 1;
                return self.error("expected a field name before the end");
            }
        };
        let op = match self.next() {
            Some((Token::Op(op), _)) => op,
            Some((token, column)) => {
                return Err(ParseError {
                    column,
                    message: format!(
                        "expected an operator (== != < <= > >= & ~ !~) after `{field}`, found {}",
                        describe(&token)
                    ),
                });
            }
            None => {
                self.pos -= 1;
                return self.error(format!(
                    "expected an operator (== != < <= > >= & ~ !~) after `{field}`"
                ));
            }
        };
        let (value, value_column) = match self.next() {
            Some((Token::Number(n), c)) => (Literal::Number(n), c),
            Some((Token::Str(s), c)) => (Literal::Str(s), c),
            Some((Token::Ident(w), c)) => (Literal::Word(w), c),
            Some((token, column)) => {
                return Err(ParseError {
                    column,
                    message: format!(
                        "expected a value after `{}`, found {}",
                        op.text(),
                        describe(&token)
                    ),
                });
            }
            None => {
                self.pos -= 1;
                return self.error(format!("expected a value after `{}`", op.text()));
            }
        };
        Ok(Expr::Cmp {
            field,
            column,
            op,
            value,
            value_column,
        })
    }
}

fn parse_expr(text: &str) -> std::result::Result<Expr, ParseError> {
    let tokens = tokenize(text)?;
    if tokens.is_empty() {
        return Err(ParseError {
            column: 1,
            message: "empty filter".into(),
        });
    }
    let mut parser = Parser {
        tokens,
        pos: 0,
        end_column: text.chars().count() + 1,
    };
    let expr = parser.or()?;
    if let Some((token, column)) = parser.next() {
        return Err(ParseError {
            column,
            message: format!("unexpected {} (missing && or ||?)", describe(&token)),
        });
    }
    Ok(expr)
}

/// Parses a filter into an expression (syntax only).
pub fn parse(text: &str) -> Result<Expr> {
    parse_expr(text).map_err(|err| {
        Error::usage(format!(
            "--filter '{text}': {} at column {}",
            err.message, err.column
        ))
    })
}

/// The field names an expression compares, in order of appearance.
pub fn fields(expr: &Expr) -> Vec<String> {
    match expr {
        Expr::And(a, b) | Expr::Or(a, b) => {
            let mut names = fields(a);
            names.extend(fields(b));
            names
        }
        Expr::Not(inner) => fields(inner),
        Expr::Cmp { field, .. } => vec![field.clone()],
    }
}

/// Type-checks `text` against `fields` and appends its instructions to `builder`.
pub fn compile(text: &str, fields: &dyn Fields, builder: &mut PlanBuilder) -> Result<()> {
    let expr = parse(text)?;
    let fail = |column: usize, message: String| {
        Error::usage(format!("--filter '{text}': {message} at column {column}"))
    };
    emit(&expr, fields, builder, &fail).map_err(|err| match err {
        Error::Usage(message) if !message.starts_with("--filter") => {
            Error::usage(format!("--filter '{text}': {message}"))
        }
        other => other,
    })
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
            let FieldRef { operand, ty } = fields.lookup(field).ok_or_else(|| {
                let near = crate::probe::nearest(field, &fields.names(), 1);
                fail(
                    *column,
                    format!(
                        "unknown field `{field}`{}; {} has {}",
                        if near.is_empty() {
                            String::new()
                        } else {
                            format!(" (did you mean {}?)", near[0])
                        },
                        fields.event_name(),
                        fields.describe()
                    ),
                )
            })?;
            let index = builder.operand(operand)?;
            match ty {
                ValueType::Str => {
                    let s = match value {
                        Literal::Str(s) | Literal::Word(s) => s,
                        Literal::Number(_) => {
                            return Err(fail(
                                *value_column,
                                format!("`{field}` is a string; compare it with a quoted string"),
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
                                        "glob \"{s}\" is not one the kernel engine matches; \
                                         valid: \"abc\", \"abc*\", \"*abc\", \"*abc*\""
                                    ),
                                )
                            })?;
                            (code, pattern, *cmp == CmpOp::NotGlob)
                        }
                        other => {
                            return Err(fail(
                                *column,
                                format!(
                                    "`{field}` is a string: use == != ~ !~, not {}",
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
                    let number = match value {
                        Literal::Number(n) => *n,
                        Literal::Str(s) | Literal::Word(s) => {
                            return Err(fail(
                                *value_column,
                                format!("`{field}` is a number; \"{s}\" is not"),
                            ));
                        }
                    };
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
                                format!("`{field}` is a number: {} matches strings", cmp.text()),
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
            let int = |offset, signed| FieldRef {
                operand: Operand {
                    kind: operand::FIELD,
                    offset,
                    size: 4,
                    flags: if signed { SIGNED } else { 0 },
                    ..Operand::NONE
                },
                ty: ValueType::Int { signed },
            };
            match name {
                "nr_sector" => Some(int(24, false)),
                "bytes" => Some(int(28, false)),
                "ret" => Some(int(32, true)),
                "rwbs" => Some(FieldRef {
                    operand: Operand {
                        kind: operand::FIELD_STRING,
                        offset: 34,
                        size: 10,
                        ..Operand::NONE
                    },
                    ty: ValueType::Str,
                }),
                _ => None,
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
    fn parses_precedence_and_parentheses() {
        assert_eq!(
            parse("a == 1 || b == 2 && !c == 3").unwrap(),
            Expr::Or(
                Box::new(Expr::Cmp {
                    field: "a".into(),
                    column: 1,
                    op: CmpOp::Eq,
                    value: Literal::Number(1),
                    value_column: 6
                }),
                Box::new(Expr::And(
                    Box::new(Expr::Cmp {
                        field: "b".into(),
                        column: 11,
                        op: CmpOp::Eq,
                        value: Literal::Number(2),
                        value_column: 16
                    }),
                    Box::new(Expr::Not(Box::new(Expr::Cmp {
                        field: "c".into(),
                        column: 22,
                        op: CmpOp::Eq,
                        value: Literal::Number(3),
                        value_column: 27
                    })))
                ))
            )
        );
        assert_eq!(
            parse("(a > 0x10)").unwrap(),
            Expr::Cmp {
                field: "a".into(),
                column: 2,
                op: CmpOp::Gt,
                value: Literal::Number(16),
                value_column: 6
            }
        );
        assert!(matches!(
            parse("x >= -1").unwrap(),
            Expr::Cmp { value: Literal::Number(n), .. } if n == u64::MAX
        ));
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
                "--filter '{long}': needs more than 32 kernel instructions, the engine runs at \
                 most 32; simplify it"
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
    fn glob_kinds() {
        assert_eq!(glob_kind("WS"), Some((op::STR_EQ, "WS")));
        assert_eq!(glob_kind("W*"), Some((op::STR_PREFIX, "W")));
        assert_eq!(glob_kind("*S"), Some((op::STR_SUFFIX, "S")));
        assert_eq!(glob_kind("*W*"), Some((op::STR_CONTAINS, "W")));
        assert_eq!(glob_kind("a*b"), None);
    }
}
