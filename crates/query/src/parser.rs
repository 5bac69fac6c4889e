//! The query language parser: a hand-written recursive-descent parser for the
//! Lucene/Kibana-style language described in `docs/query-semantics.md`.
//!
//! ```text
//! query    := or? EOF
//! or       := and ( ("OR" | "||") and )*
//! and      := unary ( ("AND" | "&&")? unary )*        adjacent clauses are ANDed
//! unary    := ("NOT" | "!" | "-") unary | "+" unary | primary
//! primary  := "(" or ")" | phrase | word | field ":" value
//!           | range | comparison                      (only inside field:( … ))
//! value    := "(" or ")" | phrase | range | comparison | word   (word may contain ':')
//! range    := ("[" | "{") bound "TO" bound ("]" | "}")
//! comparison := (">" | ">=" | "<" | "<=") bound
//! ```
//!
//! The result is normalised: nested `And`/`Or` are flattened, a one-element
//! `And`/`Or` is its element, `*` inside an `And` is dropped and makes an `Or`
//! match everything. Errors carry the byte offset where parsing went wrong
//! (for an unbalanced parenthesis or an unterminated quote or range: the
//! offset of the opening character). Nesting (parentheses and prefix
//! operators) is limited to [`MAX_DEPTH`] levels so no input can exhaust the
//! stack; the parser never panics.

use crate::ast::{Bound, Literal, Query};

/// The deepest nesting of parentheses and prefix operators (`NOT`, `-`, `+`,
/// `!`) a query may have.
pub const MAX_DEPTH: usize = 64;

/// A query that does not parse, with the byte offset where it went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at position {position}")]
pub struct ParseError {
    /// What is wrong.
    pub message: String,
    /// Byte offset into the query string.
    pub position: usize,
}

/// Parses a query string.
///
/// An empty (or all-whitespace) query and `*` give [`Query::All`].
pub fn parse(input: &str) -> Result<Query, ParseError> {
    let mut p = Parser { src: input, pos: 0, depth: 0, default_field: None };
    p.skip_ws();
    if p.at_end() {
        return Ok(Query::All);
    }
    let q = p.parse_or()?;
    p.skip_ws();
    if !p.at_end() {
        // parse_or only stops at the end or at a ')'.
        return Err(p.err_at("unbalanced parenthesis: ')' without a matching '('", p.pos));
    }
    Ok(q)
}

/// Parses a number the way the query language writes them: an optional sign,
/// digits with an optional fraction, an optional exponent. Rejects `inf`,
/// `NaN` and anything that does not fit a finite `f64`.
pub fn parse_number(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    if b.is_empty()
        || !b.iter().any(u8::is_ascii_digit)
        || !b.iter().all(|c| c.is_ascii_digit() || matches!(c, b'+' | b'-' | b'.' | b'e' | b'E'))
        || !(b[0].is_ascii_digit() || matches!(b[0], b'+' | b'-' | b'.'))
    {
        return None;
    }
    s.parse::<f64>().ok().filter(|n| n.is_finite())
}

/// Whether `name` is a valid field name: non-empty dot-separated segments of
/// letters, digits, `@`, `_` and `-`.
pub fn is_valid_field_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .split('.')
            .all(|seg| !seg.is_empty() && seg.chars().all(|c| c.is_alphanumeric() || matches!(c, '@' | '_' | '-')))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    And,
    Or,
    Not,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::And => "AND",
            Op::Or => "OR",
            Op::Not => "NOT",
        }
    }
}

/// A bare word as read from the input.
struct Word {
    /// Offset of its first byte.
    start: usize,
    /// The text with escapes resolved.
    text: String,
    /// The text with `*`, `?` and `\` escaped by a backslash and unescaped
    /// wildcards kept: the form of [`Query::Wildcard::pattern`].
    pattern: String,
    /// Whether it holds an unescaped `*` or `?`.
    wildcard: bool,
}

struct Parser<'a> {
    src: &'a str,
    pos: usize,
    depth: usize,
    /// The field of an enclosing `field:( … )`.
    default_field: Option<String>,
}

impl<'a> Parser<'a> {
    fn err_at(&self, message: impl Into<String>, position: usize) -> ParseError {
        ParseError { message: message.into(), position }
    }

    fn rest(&self) -> &'a str {
        self.src.get(self.pos..).unwrap_or("")
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn peek2(&self) -> Option<char> {
        self.rest().chars().nth(1)
    }

    fn at_end(&self) -> bool {
        self.pos >= self.src.len()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn skip_ws(&mut self) {
        while let Some(c) = self.peek() {
            if !c.is_whitespace() {
                break;
            }
            self.pos += c.len_utf8();
        }
    }

    /// The operator at the current position, with its length in bytes.
    fn peek_op(&self) -> Option<(Op, usize)> {
        let rest = self.rest();
        if rest.starts_with("&&") {
            return Some((Op::And, 2));
        }
        if rest.starts_with("||") {
            return Some((Op::Or, 2));
        }
        if rest.starts_with('!') {
            return Some((Op::Not, 1));
        }
        for (kw, op) in [("AND", Op::And), ("OR", Op::Or), ("NOT", Op::Not)] {
            if let Some(after) = rest.strip_prefix(kw) {
                if after.chars().next().is_none_or(|c| c.is_whitespace() || matches!(c, '(' | ')' | '"')) {
                    return Some((op, kw.len()));
                }
            }
        }
        None
    }

    /// Whether a clause can start here (not the end, a `)` or `AND`/`OR`).
    fn at_clause_start(&self) -> bool {
        !self.at_end() && self.peek() != Some(')') && !matches!(self.peek_op(), Some((Op::And | Op::Or, _)))
    }

    fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err_at(format!("query nested too deeply (more than {MAX_DEPTH} levels)"), self.pos));
        }
        Ok(())
    }

    fn parse_or(&mut self) -> Result<Query, ParseError> {
        let mut items = vec![self.parse_and()?];
        loop {
            self.skip_ws();
            match self.peek_op() {
                Some((Op::Or, len)) => {
                    self.pos += len;
                    self.skip_ws();
                    self.expect_operand("OR")?;
                    items.push(self.parse_and()?);
                }
                _ => break,
            }
        }
        Ok(or(items))
    }

    fn parse_and(&mut self) -> Result<Query, ParseError> {
        let mut items = vec![self.parse_unary()?];
        loop {
            self.skip_ws();
            if self.at_end() || self.peek() == Some(')') {
                break;
            }
            match self.peek_op() {
                Some((Op::Or, _)) => break,
                Some((Op::And, len)) => {
                    self.pos += len;
                    self.skip_ws();
                    self.expect_operand("AND")?;
                }
                _ => {}
            }
            items.push(self.parse_unary()?);
        }
        Ok(and(items))
    }

    /// Fails unless a clause starts at the current position, which follows `after`.
    fn expect_operand(&self, after: &str) -> Result<(), ParseError> {
        if self.at_clause_start() {
            Ok(())
        } else {
            Err(self.err_at(format!("expected a term after {after}"), self.pos))
        }
    }

    fn parse_unary(&mut self) -> Result<Query, ParseError> {
        self.skip_ws();
        let q = match self.peek_op() {
            Some((Op::Not, len)) => {
                let name = if len == 1 { "'!'" } else { "NOT" };
                self.enter()?;
                self.pos += len;
                self.skip_ws();
                self.expect_operand(name)?;
                let inner = self.parse_unary()?;
                self.depth -= 1;
                Query::Not(Box::new(inner))
            }
            Some((op, _)) => return Err(self.err_at(format!("expected a term, found {}", op.name()), self.pos)),
            None => match self.peek() {
                Some(c @ ('-' | '+')) => {
                    self.enter()?;
                    self.pos += 1;
                    self.skip_ws();
                    self.expect_operand(if c == '-' { "'-'" } else { "'+'" })?;
                    let inner = self.parse_unary()?;
                    self.depth -= 1;
                    if c == '-' {
                        Query::Not(Box::new(inner))
                    } else {
                        inner
                    }
                }
                _ => self.parse_primary()?,
            },
        };
        Ok(q)
    }

    fn parse_primary(&mut self) -> Result<Query, ParseError> {
        let start = self.pos;
        match self.peek() {
            None => Err(self.err_at("expected a term", start)),
            Some('(') => self.parse_group(),
            Some('"') => {
                let text = self.parse_quoted()?;
                self.check_suffix()?;
                Ok(Query::Phrase { field: self.default_field.clone(), text })
            }
            Some(c @ ('[' | '{' | '>' | '<')) => match self.default_field.clone() {
                Some(field) => self.parse_range_or_comparison(field),
                None if c == '[' || c == '{' => Err(self.err_at("a range needs a field, as in field:[1 TO 5]", start)),
                None => Err(self.err_at("a comparison needs a field, as in field:>10", start)),
            },
            Some(':') => Err(self.err_at("expected a field name before ':'", start)),
            Some(c @ (')' | ']' | '}' | '^' | '~')) => Err(self.unexpected(c, start)),
            Some(_) => {
                let word = self.read_word(false)?;
                if self.peek() == Some(':') {
                    let colon = self.pos;
                    self.pos += 1;
                    if word.text == "*" && word.wildcard && self.rest().starts_with('*') {
                        // Lucene's `*:*`.
                        let save = self.pos;
                        self.pos += 1;
                        if self.at_end() || self.peek().is_some_and(|c| c.is_whitespace() || c == ')') {
                            return Ok(Query::All);
                        }
                        self.pos = save;
                    }
                    if word.wildcard || word.text != self.src[word.start..colon] || !is_valid_field_name(&word.text) {
                        return Err(self.err_at(
                            format!(
                                "invalid field name {:?}: use letters, digits, '.', '@', '_' and '-'",
                                &self.src[word.start..colon]
                            ),
                            word.start,
                        ));
                    }
                    self.parse_field_value(word.text)
                } else {
                    Ok(term(self.default_field.clone(), word))
                }
            }
        }
    }

    fn unexpected(&self, c: char, at: usize) -> ParseError {
        match c {
            ')' => self.err_at("unbalanced parenthesis: ')' without a matching '('", at),
            '^' => self.err_at("boosts ('^') are not supported; escape it as \\^", at),
            '~' => self.err_at("fuzzy and proximity searches ('~') are not supported; escape it as \\~", at),
            _ => self.err_at(format!("unexpected '{c}'"), at),
        }
    }

    /// After a word or phrase: reject `^` and `~` suffixes explicitly.
    fn check_suffix(&self) -> Result<(), ParseError> {
        match self.peek() {
            Some(c @ ('^' | '~')) => Err(self.unexpected(c, self.pos)),
            _ => Ok(()),
        }
    }

    /// `( … )`, applying the current default field inside.
    fn parse_group(&mut self) -> Result<Query, ParseError> {
        let open = self.pos;
        self.enter()?;
        self.pos += 1;
        self.skip_ws();
        if self.at_end() {
            return Err(self.err_at("unbalanced parenthesis: '(' is never closed", open));
        }
        if self.peek() == Some(')') {
            return Err(self.err_at("empty parentheses", open));
        }
        let q = self.parse_or()?;
        self.skip_ws();
        if self.peek() != Some(')') {
            return Err(self.err_at("unbalanced parenthesis: '(' is never closed", open));
        }
        self.pos += 1;
        self.depth -= 1;
        Ok(q)
    }

    /// What follows `field:`.
    fn parse_field_value(&mut self, field: String) -> Result<Query, ParseError> {
        self.skip_ws();
        if !self.at_clause_start() {
            return Err(self.err_at(format!("expected a value after '{field}:'"), self.pos));
        }
        let start = self.pos;
        if field == "_exists_" {
            let word = match self.peek() {
                Some('(' | '"' | '[' | '{' | '>' | '<' | ')' | ']' | '}' | '^' | '~') => None,
                _ => Some(self.read_word(true)?),
            };
            return match word {
                Some(w) if !w.wildcard && w.text == self.src[w.start..self.pos] && is_valid_field_name(&w.text) => {
                    Ok(Query::Exists { field: w.text })
                }
                _ => Err(self.err_at("_exists_ needs a field name, as in _exists_:http.status", start)),
            };
        }
        match self.peek() {
            Some('(') => {
                let saved = self.default_field.replace(field);
                let q = self.parse_group();
                self.default_field = saved;
                q
            }
            Some('"') => {
                let text = self.parse_quoted()?;
                self.check_suffix()?;
                Ok(Query::Phrase { field: Some(field), text })
            }
            Some('[' | '{' | '>' | '<') => self.parse_range_or_comparison(field),
            Some(c @ (')' | ']' | '}' | '^' | '~')) => Err(self.unexpected(c, start)),
            _ => {
                let word = self.read_word(true)?;
                Ok(term(Some(field), word))
            }
        }
    }

    /// A bare word: stops at whitespace, `(`, `)`, `"`, `&&`, `||`, and at
    /// `:` unless `colon_ok`; fails on an unescaped `^` or `~`.
    fn read_word(&mut self, colon_ok: bool) -> Result<Word, ParseError> {
        let start = self.pos;
        let mut text = String::new();
        let mut pattern = String::new();
        let mut wildcard = false;
        while let Some(c) = self.peek() {
            match c {
                '\\' => {
                    let at = self.pos;
                    self.pos += 1;
                    let Some(e) = self.bump() else {
                        return Err(self.err_at("a backslash at the end of the query escapes nothing", at));
                    };
                    text.push(e);
                    if matches!(e, '*' | '?' | '\\') {
                        pattern.push('\\');
                    }
                    pattern.push(e);
                }
                c if c.is_whitespace() => break,
                '(' | ')' | '"' => break,
                ':' if !colon_ok => break,
                '&' if self.peek2() == Some('&') => break,
                '|' if self.peek2() == Some('|') => break,
                '^' | '~' => return Err(self.unexpected(c, self.pos)),
                '*' | '?' => {
                    wildcard = true;
                    text.push(c);
                    pattern.push(c);
                    self.pos += 1;
                }
                _ => {
                    text.push(c);
                    pattern.push(c);
                    self.pos += c.len_utf8();
                }
            }
        }
        if self.pos == start {
            // INVARIANT-like guard: callers only read a word where one starts;
            // report rather than loop if that ever changes.
            return Err(self.err_at("expected a term", start));
        }
        Ok(Word { start, text, pattern, wildcard })
    }

    /// A `"…"` phrase; returns its text with escapes resolved.
    fn parse_quoted(&mut self) -> Result<String, ParseError> {
        let open = self.pos;
        self.pos += 1;
        let mut text = String::new();
        loop {
            match self.bump() {
                None => return Err(self.err_at("unterminated quoted phrase", open)),
                Some('"') => return Ok(text),
                Some('\\') => match self.bump() {
                    None => return Err(self.err_at("unterminated quoted phrase", open)),
                    Some(e) => text.push(e),
                },
                Some(c) => text.push(c),
            }
        }
    }

    /// `[a TO b]` (any mix of `[`/`{` and `]`/`}`) or `>a`, `>=a`, `<a`, `<=a`.
    fn parse_range_or_comparison(&mut self, field: String) -> Result<Query, ParseError> {
        let open = self.pos;
        match self.peek() {
            Some(c @ ('>' | '<')) => {
                self.pos += 1;
                let inclusive = self.rest().starts_with('=');
                if inclusive {
                    self.pos += 1;
                }
                let op = &self.src[open..self.pos];
                self.skip_ws();
                if self.at_end() || self.peek() == Some(')') {
                    return Err(self.err_at(format!("expected a value after '{op}'"), self.pos));
                }
                let value = self.parse_bound_value(&[')'])?;
                let bound = match value {
                    None => Bound::Unbounded,
                    Some(l) if inclusive => Bound::Inclusive(l),
                    Some(l) => Bound::Exclusive(l),
                };
                let (lower, upper) = if c == '>' { (bound, Bound::Unbounded) } else { (Bound::Unbounded, bound) };
                Ok(Query::Range { field, lower, upper })
            }
            _ => {
                let lower_inclusive = self.peek() == Some('[');
                self.pos += 1;
                self.skip_ws();
                self.range_not_ended(open)?;
                if matches!(self.peek(), Some(']' | '}')) {
                    return Err(self.err_at("expected a lower bound in the range", self.pos));
                }
                let lower = self.parse_bound_value(&[']', '}'])?;
                self.skip_ws();
                self.range_not_ended(open)?;
                let after_to = self.rest().strip_prefix("TO");
                if !after_to.is_some_and(|a| a.chars().next().is_none_or(|c| c.is_whitespace() || c == ']' || c == '}'))
                {
                    return Err(self.err_at("expected TO in the range", self.pos));
                }
                self.pos += 2;
                self.skip_ws();
                self.range_not_ended(open)?;
                if matches!(self.peek(), Some(']' | '}')) {
                    return Err(self.err_at("expected an upper bound after TO", self.pos));
                }
                let upper = self.parse_bound_value(&[']', '}'])?;
                self.skip_ws();
                self.range_not_ended(open)?;
                let upper_inclusive = match self.peek() {
                    Some(']') => true,
                    Some('}') => false,
                    _ => return Err(self.err_at("expected ']' or '}' to close the range", self.pos)),
                };
                self.pos += 1;
                let mk = |v: Option<Literal>, inclusive: bool| match v {
                    None => Bound::Unbounded,
                    Some(l) if inclusive => Bound::Inclusive(l),
                    Some(l) => Bound::Exclusive(l),
                };
                Ok(Query::Range { field, lower: mk(lower, lower_inclusive), upper: mk(upper, upper_inclusive) })
            }
        }
    }

    fn range_not_ended(&self, open: usize) -> Result<(), ParseError> {
        if self.at_end() {
            Err(self.err_at("unterminated range", open))
        } else {
            Ok(())
        }
    }

    /// One bound: a quoted string (always text) or a bare run of characters
    /// up to whitespace or one of `stop`; a bare `*` is `None` (open end).
    /// Unquoted numbers become [`Literal::Number`].
    fn parse_bound_value(&mut self, stop: &[char]) -> Result<Option<Literal>, ParseError> {
        if self.peek() == Some('"') {
            let text = self.parse_quoted()?;
            return Ok(Some(Literal::Text(text)));
        }
        let start = self.pos;
        let mut text = String::new();
        let mut escaped = false;
        while let Some(c) = self.peek() {
            if c.is_whitespace() || stop.contains(&c) {
                break;
            }
            if c == '\\' {
                let at = self.pos;
                self.pos += 1;
                let Some(e) = self.bump() else {
                    return Err(self.err_at("a backslash at the end of the query escapes nothing", at));
                };
                escaped = true;
                text.push(e);
            } else {
                text.push(c);
                self.pos += c.len_utf8();
            }
        }
        if self.pos == start {
            return Err(self.err_at("expected a value", start));
        }
        if text == "*" && !escaped {
            return Ok(None);
        }
        Ok(Some(match parse_number(&text) {
            Some(n) if !escaped => Literal::Number(n),
            _ => Literal::Text(text),
        }))
    }
}

/// A word as a term: `*` is everything (or `_exists_` with a field), other
/// wildcards are [`Query::Wildcard`].
fn term(field: Option<String>, word: Word) -> Query {
    if word.wildcard {
        if word.pattern == "*" {
            return match field {
                None => Query::All,
                Some(field) => Query::Exists { field },
            };
        }
        Query::Wildcard { field, pattern: word.pattern }
    } else {
        Query::Term { field, value: word.text }
    }
}

/// A normalised conjunction: nested `And`s flattened, `All` dropped, one
/// element returned as is.
pub(crate) fn and(items: Vec<Query>) -> Query {
    let mut out = Vec::with_capacity(items.len());
    for q in items {
        match q {
            Query::And(inner) => out.extend(inner),
            Query::All => {}
            q => out.push(q),
        }
    }
    match out.len() {
        0 => Query::All,
        1 => out.pop().unwrap_or(Query::All),
        _ => Query::And(out),
    }
}

/// A normalised disjunction: nested `Or`s flattened, `All` anywhere makes it
/// `All`, one element returned as is.
pub(crate) fn or(items: Vec<Query>) -> Query {
    let mut out = Vec::with_capacity(items.len());
    for q in items {
        match q {
            Query::Or(inner) => out.extend(inner),
            Query::All => return Query::All,
            q => out.push(q),
        }
    }
    if out.len() == 1 {
        return out.pop().unwrap_or(Query::All);
    }
    Query::Or(out)
}

#[cfg(test)]
mod tests;
