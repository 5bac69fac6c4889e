//! Conditions: the small expression language of conditional routing (`if` /
//! `else if` / `else` filter blocks and a sink's `when`).
//!
//! It is modelled on Logstash conditionals so Logstash users feel at home:
//!
//! ```text
//! [status] >= 500 and [service] == "api"
//! "_grokparsefailure" in [tags]
//! [message] =~ /timeout|refused/ or ![user][id]
//! [@group] in ["acme", "globex"] and exists([trace_id])
//! ```
//!
//! Conditions are parsed once at config time into an AST ([`Condition`]) with
//! pre-parsed field paths and pre-compiled regexes; [`Condition::eval`] then
//! runs per event without allocating.
//!
//! # Language
//!
//! - **Field references** are written in brackets only: `[field]`, `[a][b]`.
//!   A bare `a.b` is rejected (it would be ambiguous with keywords). Inside the
//!   brackets any characters but `[ ] , " '` are allowed; a bracket group
//!   without quotes or commas is always a field reference, so `[1]` is the
//!   field named `1`, not a list.
//! - **Special references** read the event's typed data: `[@timestamp]`
//!   (a number, nanoseconds since the epoch), `[@group]`, `[@subgroup]`,
//!   `[@host]`, `[@source]` (strings). They shadow fields of the same name and
//!   have no sub-fields. They always exist.
//! - **Literals**: strings `"..."` or `'...'` (escapes `\" \' \\ \n \t \r \0`),
//!   numbers (`42`, `-1.5`, `1e3`), `true`, `false`, `null`, lists
//!   `["a", 1, true]` and regexes `/.../` (`\/` is a literal slash; use `(?i)`
//!   for flags). A regex may only appear after `=~` or `!~`, where a string is
//!   also accepted and compiled as a regex.
//! - **Comparisons** `==`, `!=`, `<`, `<=`, `>`, `>=`: numbers compare
//!   numerically (integers exactly, `1 == 1.0`), strings lexicographically by
//!   bytes, booleans and `null` by equality, arrays element-wise and objects
//!   structurally. Values of different types are never equal and never
//!   ordered (`"200" == 200` is false) — this is never a run-time error. A
//!   missing field equals `null`. `!=` is exactly the negation of `==`, so
//!   `[missing] != "x"` is true.
//! - **Regex match** `=~` is true when the left value is a string that the
//!   regex matches (anywhere; anchor with `^…$`); non-strings never match.
//!   `!~` is its negation.
//! - **Membership** `in`: `x in [list literal]` or `x in [array field]` test
//!   equality with any element; `"foo" in [message]` on a string is a
//!   substring test; `"key" in [object field]` tests for a key. Anything else
//!   (missing haystack, number haystack) is false. `not in` is its negation,
//!   so `"_grokparsefailure" not in [tags]` is true when there are no tags.
//! - **Truthiness**: a bare value (`if [field]`) is true when it exists and is
//!   neither `null` nor `false`, as in Logstash (`""` and `0` are true).
//!   `exists([field])` is a pure existence test (true even for `null`).
//! - **Logic**: `and`, `nand`, `xor`, `or`, `!` / `not`, parentheses.
//!   Precedence, tightest first: `!`/`not` > comparison > `and`/`nand` >
//!   `xor` > `or`; binary operators are left-associative. Because `!` binds
//!   tighter than comparisons, `![a] == 1` is a parse error: write
//!   `!([a] == 1)` or `[a] != 1`.
//!
//! Parse errors carry the 0-based byte offset of the problem
//! (`expected ']' at position 9`).

mod lexer;

use self::lexer::{Lexer, Tok, Token};
use std::cmp::Ordering;
use std::fmt;

use crate::value::Value;
use regex::Regex;

use crate::event::Event;
use crate::path::FieldPath;

/// A condition that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at position {position}")]
pub struct ConditionError {
    /// 0-based byte offset into the condition text where the problem is.
    pub position: usize,
    /// What is wrong there (lowercase, no position).
    pub message: String,
}

impl ConditionError {
    fn new(position: usize, message: impl Into<String>) -> Self {
        Self { position, message: message.into() }
    }
}

/// A parsed condition, ready to be evaluated against events.
#[derive(Clone, Debug)]
pub struct Condition {
    source: Box<str>,
    root: Node,
}

/// The condition AST.
#[derive(Clone, Debug)]
enum Node {
    And(Box<Node>, Box<Node>),
    Nand(Box<Node>, Box<Node>),
    Xor(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Not(Box<Node>),
    /// A bare value: exists and is neither `null` nor `false`.
    Truthy(Operand),
    /// `exists([field])`.
    Exists(Ref),
    Compare(Operand, CmpOp, Operand),
    /// `value =~ regex` (or `!~` when `negated`).
    Match {
        value: Operand,
        regex: Regex,
        negated: bool,
    },
    /// `needle in haystack` (or `not in` when `negated`).
    In {
        needle: Operand,
        haystack: Operand,
        negated: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

#[derive(Clone, Debug)]
enum Operand {
    Ref(Ref),
    Lit(Literal),
}

#[derive(Clone, Debug)]
enum Ref {
    Field(FieldPath),
    Timestamp,
    Group,
    Subgroup,
    Host,
    Source,
}

#[derive(Clone, Debug)]
enum Literal {
    Str(Box<str>),
    Int(i64),
    Float(f64),
    Bool(bool),
    Null,
    List(Vec<Literal>),
}

impl Condition {
    /// Parses a condition.
    pub fn parse(source: &str) -> Result<Condition, ConditionError> {
        let mut parser = Parser { lexer: Lexer { src: source, pos: 0, list_depth: 0 }, peeked: None };
        let first = parser.peek()?;
        if matches!(first.tok, Tok::Eof) {
            return Err(ConditionError::new(0, "empty condition"));
        }
        let root = parser.parse_or()?;
        let next = parser.peek()?;
        if !matches!(next.tok, Tok::Eof) {
            return Err(ConditionError::new(
                next.pos,
                format!("expected 'and', 'or', 'xor', 'nand' or end of condition, found {}", next.tok.describe()),
            ));
        }
        Ok(Condition { source: source.into(), root })
    }

    /// The condition as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Evaluates the condition against an event. Never fails: type mismatches
    /// and missing fields make comparisons false.
    pub fn eval(&self, event: &Event) -> bool {
        self.root.eval(event)
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl std::str::FromStr for Condition {
    type Err = ConditionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Condition::parse(s)
    }
}

impl<'de> serde::Deserialize<'de> for Condition {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Condition::parse(&s).map_err(|e| serde::de::Error::custom(format!("invalid condition {s:?}: {e}")))
    }
}

impl serde::Serialize for Condition {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.source)
    }
}

// ---------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------

/// A number as read from an event or a literal.
#[derive(Clone, Copy, Debug)]
enum Num {
    I(i64),
    F(f64),
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            Num::I(i) => i as f64,
            Num::F(f) => f,
        }
    }

    fn as_i128(self) -> Option<i128> {
        match self {
            Num::I(i) => Some(i128::from(i)),
            Num::F(_) => None,
        }
    }

    fn compare(self, other: Num) -> Option<Ordering> {
        match (self.as_i128(), other.as_i128()) {
            (Some(a), Some(b)) => Some(a.cmp(&b)),
            _ => self.as_f64().partial_cmp(&other.as_f64()),
        }
    }
}

/// A borrowed view of a value during evaluation: no allocation, no copies.
#[derive(Clone, Copy, Debug)]
enum Val<'a> {
    Missing,
    Null,
    Bool(bool),
    Num(Num),
    Str(&'a str),
    Array(&'a [Value]),
    List(&'a [Literal]),
    Object(&'a Value),
}

impl<'a> Val<'a> {
    fn from_json(v: &'a Value) -> Val<'a> {
        match v {
            Value::Null => Val::Null,
            Value::Bool(b) => Val::Bool(*b),
            Value::Int(i) => Val::Num(Num::I(*i)),
            Value::Float(f) => Val::Num(Num::F(*f)),
            Value::String(s) => Val::Str(s.as_str()),
            Value::Array(a) => Val::Array(a.as_slice()),
            Value::Object(_) => Val::Object(v),
        }
    }

    fn from_literal(l: &'a Literal) -> Val<'a> {
        match l {
            Literal::Str(s) => Val::Str(s),
            Literal::Int(i) => Val::Num(Num::I(*i)),
            Literal::Float(f) => Val::Num(Num::F(*f)),
            Literal::Bool(b) => Val::Bool(*b),
            Literal::Null => Val::Null,
            Literal::List(items) => Val::List(items),
        }
    }

    fn truthy(self) -> bool {
        match self {
            Val::Missing | Val::Null => false,
            Val::Bool(b) => b,
            _ => true,
        }
    }

    /// Element count and accessor when this is a sequence (array field or list literal).
    fn seq_len(self) -> Option<usize> {
        match self {
            Val::Array(a) => Some(a.len()),
            Val::List(l) => Some(l.len()),
            _ => None,
        }
    }

    fn seq_get(self, i: usize) -> Val<'a> {
        match self {
            Val::Array(a) => a.get(i).map_or(Val::Missing, Val::from_json),
            Val::List(l) => l.get(i).map_or(Val::Missing, Val::from_literal),
            _ => Val::Missing,
        }
    }

    fn equals(self, other: Val<'_>) -> bool {
        match (self, other) {
            (Val::Missing | Val::Null, Val::Missing | Val::Null) => true,
            (Val::Bool(a), Val::Bool(b)) => a == b,
            (Val::Num(a), Val::Num(b)) => a.compare(b) == Some(Ordering::Equal),
            (Val::Str(a), Val::Str(b)) => a == b,
            (Val::Object(a), Val::Object(b)) => a == b,
            (Val::Array(_) | Val::List(_), Val::Array(_) | Val::List(_)) => {
                let (Some(n), Some(m)) = (self.seq_len(), other.seq_len()) else {
                    return false;
                };
                n == m && (0..n).all(|i| self.seq_get(i).equals(other.seq_get(i)))
            }
            _ => false,
        }
    }

    fn order(self, other: Val<'_>) -> Option<Ordering> {
        match (self, other) {
            (Val::Num(a), Val::Num(b)) => a.compare(b),
            (Val::Str(a), Val::Str(b)) => Some(a.cmp(b)),
            _ => None,
        }
    }

    /// Whether `self` (the haystack) contains `needle`.
    fn contains(self, needle: Val<'_>) -> bool {
        match self {
            Val::Array(_) | Val::List(_) => {
                let n = self.seq_len().unwrap_or(0);
                (0..n).any(|i| self.seq_get(i).equals(needle))
            }
            Val::Str(hay) => match needle {
                Val::Str(s) => hay.contains(s),
                _ => false,
            },
            Val::Object(obj) => match (needle, obj.as_object()) {
                (Val::Str(key), Some(o)) => o.get(&key).is_some(),
                _ => false,
            },
            _ => false,
        }
    }
}

impl Ref {
    fn resolve<'a>(&'a self, e: &'a Event) -> Val<'a> {
        match self {
            Ref::Field(path) => e.get(path).map_or(Val::Missing, Val::from_json),
            Ref::Timestamp => Val::Num(Num::I(e.timestamp)),
            Ref::Group => Val::Str(&e.identity.group),
            Ref::Subgroup => Val::Str(&e.identity.subgroup),
            Ref::Host => Val::Str(&e.identity.host),
            Ref::Source => Val::Str(&e.source),
        }
    }

    fn exists(&self, e: &Event) -> bool {
        match self {
            Ref::Field(path) => e.get(path).is_some(),
            _ => true,
        }
    }
}

impl Operand {
    fn resolve<'a>(&'a self, e: &'a Event) -> Val<'a> {
        match self {
            Operand::Ref(r) => r.resolve(e),
            Operand::Lit(l) => Val::from_literal(l),
        }
    }
}

impl Node {
    fn eval(&self, e: &Event) -> bool {
        match self {
            Node::And(a, b) => a.eval(e) && b.eval(e),
            Node::Nand(a, b) => !(a.eval(e) && b.eval(e)),
            Node::Xor(a, b) => a.eval(e) ^ b.eval(e),
            Node::Or(a, b) => a.eval(e) || b.eval(e),
            Node::Not(a) => !a.eval(e),
            Node::Truthy(v) => v.resolve(e).truthy(),
            Node::Exists(r) => r.exists(e),
            Node::Compare(l, op, r) => {
                let (l, r) = (l.resolve(e), r.resolve(e));
                match op {
                    CmpOp::Eq => l.equals(r),
                    CmpOp::Ne => !l.equals(r),
                    CmpOp::Lt => l.order(r) == Some(Ordering::Less),
                    CmpOp::Le => matches!(l.order(r), Some(Ordering::Less | Ordering::Equal)),
                    CmpOp::Gt => l.order(r) == Some(Ordering::Greater),
                    CmpOp::Ge => matches!(l.order(r), Some(Ordering::Greater | Ordering::Equal)),
                }
            }
            Node::Match { value, regex, negated } => {
                let matched = match value.resolve(e) {
                    Val::Str(s) => regex.is_match(s),
                    _ => false,
                };
                matched != *negated
            }
            Node::In { needle, haystack, negated } => haystack.resolve(e).contains(needle.resolve(e)) != *negated,
        }
    }
}

// ---------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------

/// The operator after a value, as decided by one token of lookahead.
enum OpKind {
    Cmp(CmpOp),
    Match { negated: bool },
    In { negated: bool },
}

struct Parser<'s> {
    lexer: Lexer<'s>,
    peeked: Option<Token>,
}

impl Parser<'_> {
    fn peek(&mut self) -> Result<&Token, ConditionError> {
        let t = match self.peeked.take() {
            Some(t) => t,
            None => self.lexer.next_token()?,
        };
        Ok(self.peeked.insert(t))
    }

    fn next(&mut self) -> Result<Token, ConditionError> {
        match self.peeked.take() {
            Some(t) => Ok(t),
            None => self.lexer.next_token(),
        }
    }

    fn expect(&mut self, want: fn(&Tok) -> bool, message: &str) -> Result<Token, ConditionError> {
        let t = self.next()?;
        if want(&t.tok) {
            Ok(t)
        } else {
            Err(ConditionError::new(t.pos, message))
        }
    }

    fn parse_or(&mut self) -> Result<Node, ConditionError> {
        let mut left = self.parse_xor()?;
        while matches!(self.peek()?.tok, Tok::Or) {
            self.next()?;
            let right = self.parse_xor()?;
            left = Node::Or(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn parse_xor(&mut self) -> Result<Node, ConditionError> {
        let mut left = self.parse_and()?;
        while matches!(self.peek()?.tok, Tok::Xor) {
            self.next()?;
            let right = self.parse_and()?;
            left = Node::Xor(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn parse_and(&mut self) -> Result<Node, ConditionError> {
        let mut left = self.parse_unary()?;
        loop {
            let nand = match self.peek()?.tok {
                Tok::And => false,
                Tok::Nand => true,
                _ => return Ok(left),
            };
            self.next()?;
            let right = self.parse_unary()?;
            left = if nand {
                Node::Nand(Box::new(left), Box::new(right))
            } else {
                Node::And(Box::new(left), Box::new(right))
            };
        }
    }

    fn parse_unary(&mut self) -> Result<Node, ConditionError> {
        if matches!(self.peek()?.tok, Tok::Bang | Tok::Not) {
            self.next()?;
            let inner = self.parse_unary_operand()?;
            return Ok(Node::Not(Box::new(inner)));
        }
        self.parse_primary(true)
    }

    /// What `!` applies to: another negation or a primary that is not compared.
    fn parse_unary_operand(&mut self) -> Result<Node, ConditionError> {
        if matches!(self.peek()?.tok, Tok::Bang | Tok::Not) {
            return self.parse_unary();
        }
        self.parse_primary(false)
    }

    /// A parenthesised condition, `exists(...)`, or a value optionally
    /// followed by a comparison (only when `allow_compare`).
    fn parse_primary(&mut self, allow_compare: bool) -> Result<Node, ConditionError> {
        match self.peek()?.tok {
            Tok::LParen => {
                self.next()?;
                let inner = self.parse_or()?;
                self.expect(|t| matches!(t, Tok::RParen), "expected ')'")?;
                return Ok(inner);
            }
            Tok::Exists => {
                self.next()?;
                self.expect(|t| matches!(t, Tok::LParen), "expected '(' after 'exists'")?;
                let t = self.next()?;
                let Tok::Ref(r) = t.tok else {
                    return Err(ConditionError::new(t.pos, "expected a field reference"));
                };
                self.expect(|t| matches!(t, Tok::RParen), "expected ')'")?;
                return Ok(Node::Exists(r));
            }
            _ => {}
        }
        let left = self.parse_operand("expected a condition")?;
        let op = self.peek()?;
        let kind = match op.tok {
            Tok::Cmp(cmp) => OpKind::Cmp(cmp),
            Tok::Match => OpKind::Match { negated: false },
            Tok::NotMatch => OpKind::Match { negated: true },
            Tok::In => OpKind::In { negated: false },
            Tok::Not => OpKind::In { negated: true },
            _ => return Ok(Node::Truthy(left)),
        };
        if !allow_compare {
            return Err(ConditionError::new(
                op.pos,
                format!("{} cannot follow a negated value; write !( ... ) around the comparison", op.tok.describe()),
            ));
        }
        self.next()?;
        match kind {
            OpKind::Cmp(cmp) => {
                let right = self.parse_operand("expected a value")?;
                Ok(Node::Compare(left, cmp, right))
            }
            OpKind::Match { negated } => {
                let t = self.next()?;
                let (Tok::Regex(src) | Tok::Str(src)) = t.tok else {
                    return Err(ConditionError::new(t.pos, "expected a regex /.../ or a string"));
                };
                let regex = Regex::new(&src).map_err(|e| ConditionError::new(t.pos, regex_message(&e)))?;
                Ok(Node::Match { value: left, regex, negated })
            }
            OpKind::In { negated } => {
                if negated {
                    self.expect(|t| matches!(t, Tok::In), "expected 'in' after 'not'")?;
                }
                let haystack = self.parse_operand("expected a value")?;
                Ok(Node::In { needle: left, haystack, negated })
            }
        }
    }

    fn parse_operand(&mut self, expected: &str) -> Result<Operand, ConditionError> {
        let t = self.next()?;
        if let Tok::Ref(r) = t.tok {
            return Ok(Operand::Ref(r));
        }
        self.literal_from(t, expected).map(Operand::Lit)
    }

    fn literal_from(&mut self, t: Token, expected: &str) -> Result<Literal, ConditionError> {
        Ok(match t.tok {
            Tok::Str(s) => Literal::Str(s.into()),
            Tok::Int(i) => Literal::Int(i),
            Tok::Float(f) => Literal::Float(f),
            Tok::True => Literal::Bool(true),
            Tok::False => Literal::Bool(false),
            Tok::Null => Literal::Null,
            Tok::ListOpen => self.list()?,
            Tok::Regex(_) => return Err(ConditionError::new(t.pos, "a regex may only follow '=~' or '!~'")),
            _ => return Err(ConditionError::new(t.pos, expected)),
        })
    }

    /// The rest of a list literal, after its `[`.
    fn list(&mut self) -> Result<Literal, ConditionError> {
        self.lexer.list_depth += 1;
        let result = self.list_items();
        self.lexer.list_depth -= 1;
        result
    }

    fn list_items(&mut self) -> Result<Literal, ConditionError> {
        let mut items = Vec::new();
        if matches!(self.peek()?.tok, Tok::RBracket) {
            self.next()?;
            return Ok(Literal::List(items));
        }
        loop {
            let t = self.next()?;
            if let Tok::Ref(_) = t.tok {
                return Err(ConditionError::new(t.pos, "lists may only hold literals, not field references"));
            }
            items.push(self.literal_from(t, "expected a literal")?);
            let sep = self.next()?;
            match sep.tok {
                Tok::Comma => {}
                Tok::RBracket => return Ok(Literal::List(items)),
                _ => return Err(ConditionError::new(sep.pos, "expected ',' or ']'")),
            }
        }
    }
}

/// The one-line cause from a regex error (the crate's messages span lines).
fn regex_message(e: &regex::Error) -> String {
    let text = e.to_string();
    let cause = text
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .map_or_else(|| text.split_whitespace().collect::<Vec<_>>().join(" "), str::to_string);
    format!("invalid regex: {cause}")
}

#[cfg(test)]
mod tests;
