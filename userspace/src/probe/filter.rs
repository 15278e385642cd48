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
//! `cpu` and `comm` where the event has no field of that name. A BTF path
//! ([`crate::probe::btf_path`]) is one field name, with or without a cast in front:
//! `task->real_parent->tgid`, `sock(ret)->__sk_common.skc_num`, `(struct io_kiocb
//! *)req->opcode` (a `(` opens a cast only when `struct NAME *)` and a path follow it).
//!
//! [`parse`] checks the syntax; `engine::filter::compile` type-checks against the event's
//! fields (numbers against the field's range) and emits the kernel engine's instructions.
//! Every error is one line naming the offending token, its column, and what would be valid;
//! it quotes at most 80 characters of the filter around that column ([`crate::error::quote_at`]).
//!
//! Limits: a filter is at most [`MAX_FILTER_BYTES`] long and nests `(` and `!` at most
//! [`MAX_DEPTH`] deep (the kernel engine runs at most 32 instructions, one per comparison,
//! `!`, `&&` and `||`, so deeper filters could not run anyway); numbers are 64-bit.

use crate::{
    Error, Result,
    error::{quote, quote_at},
};

/// The longest filter, in bytes: 32 instructions' worth of comparisons with long field
/// names and 31-byte strings fit in far less.
pub const MAX_FILTER_BYTES: usize = 4096;

/// How deep `(` and `!` nest: as many as the kernel engine's instructions.
pub const MAX_DEPTH: usize = 32;

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
    pub fn text(self) -> &'static str {
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
    /// A number as written: -18446744073709551615 to 18446744073709551615 (a 64-bit
    /// magnitude and a sign); the compiler checks it against the field's range.
    Number(i128),
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
    Number(i128),
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
        Token::Ident(name) => format!("`{}`", quote(name)),
        Token::Number(n) => format!("`{n}`"),
        Token::Str(s) => format!("\"{}\"", quote(s)),
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
            '(' => match cast_path(&chars[i..]) {
                // A cast starts a path (`(struct io_kiocb *)req->opcode`): one name.
                Some(Ok((name, width))) => (Token::Ident(name), width),
                Some(Err(message)) => return Err(error(column, message)),
                None => (Token::Open, 1),
            },
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
                let (digits, radix) = match digits
                    .strip_prefix("0x")
                    .or_else(|| digits.strip_prefix("0X"))
                {
                    Some(hex) => (hex, 16),
                    None => (digits, 10),
                };
                let magnitude = u64::from_str_radix(digits, radix).map_err(|err| {
                    let message = match err.kind() {
                        std::num::IntErrorKind::PosOverflow => format!(
                            "`{}` is out of range: numbers are 64-bit, -{} to {}",
                            quote(&word),
                            u64::MAX,
                            u64::MAX
                        ),
                        _ => format!("`{}` is not a number", quote(&word)),
                    };
                    error(column, message)
                })?;
                let value = i128::from(magnitude);
                (Token::Number(if negative { -value } else { value }), len)
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let word = |at: usize| {
                    chars[at.min(chars.len())..]
                        .iter()
                        .position(|d| !(d.is_ascii_alphanumeric() || *d == '_'))
                        .unwrap_or(chars.len().saturating_sub(at))
                };
                let mut len = word(i);
                // A descriptor base (`sock(ret)->...`, `file(fd)->...`) starts a path.
                let base: String = chars[i..i + len].iter().collect();
                if matches!(base.as_str(), "sock" | "file") && chars.get(i + len) == Some(&'(') {
                    let inner = word(i + len + 1);
                    let close = i + len + 1 + inner;
                    if inner > 0
                        && chars.get(close) == Some(&')')
                        && chars.get(close + 1..close + 3) == Some(&['-', '>'])
                    {
                        len += inner + 2;
                    }
                }
                len = path_len(&chars, i, len);
                (Token::Ident(chars[i..i + len].iter().collect()), len)
            }
            other => {
                return Err(error(
                    column,
                    format!("unexpected `{}`", quote(&other.to_string())),
                ));
            }
        };
        tokens.push((token, column));
        i += width;
    }
    Ok(tokens)
}

/// The length of the name at `chars[start..]` whose first word is `len` long, with the
/// steps of a BTF path after it (`task->real_parent->tgid`, `->a.b` after an arrow).
fn path_len(chars: &[char], start: usize, mut len: usize) -> usize {
    let word = |at: usize| {
        chars[at.min(chars.len())..]
            .iter()
            .position(|d| !(d.is_ascii_alphanumeric() || *d == '_'))
            .unwrap_or(chars.len().saturating_sub(at))
    };
    let mut arrow = false;
    loop {
        let at = start + len;
        let step = match chars.get(at..at + 2) {
            Some(['-', '>']) => 2,
            Some(['.', _]) if arrow => 1,
            _ => break,
        };
        let member = word(at + step);
        if member == 0 || chars[at + step].is_ascii_digit() {
            break;
        }
        arrow |= step == 2;
        len += step + member;
    }
    len
}

/// A cast and the path it starts at the beginning of `chars` (`(struct io_kiocb
/// *)req->opcode`, spaces as C allows them): the name as [`crate::probe::btf_path`] reads
/// it (`(struct io_kiocb *)req->opcode`) and the characters it takes. `None` when `chars`
/// opens no cast (a parenthesised filter: `(a == 1 || b == 2)`); an error when a `(struct`
/// opens no cast of a path.
fn cast_path(chars: &[char]) -> Option<std::result::Result<(String, usize), String>> {
    let mut at = 1;
    let skip = |at: &mut usize| {
        while chars.get(*at).is_some_and(|c| *c == ' ' || *c == '\t') {
            *at += 1;
        }
    };
    let word = |at: usize| -> String {
        chars[at.min(chars.len())..]
            .iter()
            .take_while(|d| d.is_ascii_alphanumeric() || **d == '_')
            .collect()
    };
    skip(&mut at);
    if word(at) != "struct" {
        return None;
    }
    at += "struct".len();
    Some((|| {
        let bad = || "a cast is `(struct NAME *)` before a path: (struct NAME *)FIELD->MEMBER";
        skip(&mut at);
        let name = word(at);
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(bad().to_string());
        }
        at += name.len();
        skip(&mut at);
        for close in ['*', ')'] {
            if chars.get(at) != Some(&close) {
                return Err(bad().to_string());
            }
            at += 1;
            skip(&mut at);
        }
        let base = word(at);
        let len = if base.is_empty() || base.starts_with(|c: char| c.is_ascii_digit()) {
            0
        } else {
            path_len(chars, at, base.len())
        };
        if len == base.len() {
            return Err(bad().to_string());
        }
        let path: String = chars[at..at + len].iter().collect();
        Ok((format!("(struct {name} *){path}"), at + len))
    })())
}

struct Parser {
    tokens: Vec<(Token, usize)>,
    pos: usize,
    end_column: usize,
    /// `(` and `!` open around the current token.
    depth: usize,
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
        let nests = matches!(self.peek(), Some(Token::Not | Token::Open));
        if nests && self.depth == MAX_DEPTH {
            return self.error(format!(
                "more than {MAX_DEPTH} levels of `(` and `!`; filters nest at most {MAX_DEPTH} deep"
            ));
        }
        self.depth += usize::from(nests);
        let expr = self.nested();
        self.depth -= usize::from(nests);
        expr
    }

    fn nested(&mut self) -> std::result::Result<Expr, ParseError> {
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
                        "expected an operator (== != < <= > >= & ~ !~) after `{}`, found {}",
                        quote(&field),
                        describe(&token)
                    ),
                });
            }
            None => {
                self.pos -= 1;
                return self.error(format!(
                    "expected an operator (== != < <= > >= & ~ !~) after `{}`",
                    quote(&field)
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
        depth: 0,
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
///
/// # Errors
/// A usage error, one line: `--filter 'TEXT': WHAT at column N`, TEXT at most 80 characters
/// around column N.
pub fn parse(text: &str) -> Result<Expr> {
    if text.len() > MAX_FILTER_BYTES {
        return Err(Error::usage(format!(
            "--filter '{}': {} bytes long; a filter is at most {MAX_FILTER_BYTES} bytes",
            quote(text),
            text.len()
        )));
    }
    parse_expr(text).map_err(|err| {
        Error::usage(format!(
            "--filter '{}': {} at column {}",
            quote_at(text, err.column),
            err.message,
            err.column
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

#[cfg(test)]
mod tests {
    use super::*;

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
            Expr::Cmp {
                value: Literal::Number(-1),
                ..
            }
        ));
    }

    /// A cast and the path after it are one field name, spaces as C allows them; a `(` that
    /// opens no cast of a path stays a parenthesis.
    #[test]
    fn casts_start_paths() {
        let expr = parse(
            "(struct io_kiocb *)req->opcode == 13 && ( struct  io_accept*) req->file_slot == 0",
        )
        .unwrap();
        assert_eq!(
            expr,
            Expr::And(
                Box::new(Expr::Cmp {
                    field: "(struct io_kiocb *)req->opcode".into(),
                    column: 1,
                    op: CmpOp::Eq,
                    value: Literal::Number(13),
                    value_column: 35
                }),
                Box::new(Expr::Cmp {
                    field: "(struct io_accept *)req->file_slot".into(),
                    column: 41,
                    op: CmpOp::Eq,
                    value: Literal::Number(0),
                    value_column: 81
                })
            )
        );
        assert_eq!(
            fields(&parse("((struct sock *)skaddr->__sk_common.skc_num > 1 || res < 0)").unwrap()),
            ["(struct sock *)skaddr->__sk_common.skc_num", "res"]
        );
        // No path after the cast, or no cast: one line, at the `(`.
        for text in [
            "(struct sock *)skaddr == 1",
            "x == 1 || (struct sock)x->y == 1",
            "(struct *)x->y == 1",
        ] {
            let column = text.find('(').unwrap() + 1;
            assert_eq!(
                parse(text).unwrap_err().to_string(),
                format!(
                    "--filter '{text}': a cast is `(struct NAME *)` before a path: (struct NAME \
                     *)FIELD->MEMBER at column {column}"
                ),
            );
        }
    }
}
