//! The parsed form of a query.
//!
//! Field names are dotted paths into the event (`http.status`), plus the
//! reserved names `@timestamp`, `@group`, `@subgroup`, `@host`, `@source`
//! and `message`. A `field` of `None` means "the default field": free text
//! searches `message`.

use std::fmt;

use serde::Serialize;

/// A literal value in a range or comparison. Kept as written; the backend
/// decides whether it is a number, a timestamp or a string for the field.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Literal {
    /// A number as written (`404`, `-1.5`).
    Number(f64),
    /// Anything else (`"GET"`, `2026-01-01T00:00:00Z`, `abc`).
    Text(String),
}

/// One end of a range.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Bound {
    /// `[` / `]` or `>=` / `<=`.
    Inclusive(Literal),
    /// `{` / `}` or `>` / `<`.
    Exclusive(Literal),
    /// `*`: open end.
    Unbounded,
}

/// A query.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Query {
    /// Matches everything (empty query string or `*`).
    All,
    /// A single term: `error`, `status:404`, `host:web-01`. For text fields
    /// the value is analysed like the indexed text (lower-cased words; a
    /// value of several words becomes a phrase).
    Term { field: Option<String>, value: String },
    /// A quoted phrase: `"connection refused"`, `message:"user root"`.
    Phrase { field: Option<String>, text: String },
    /// A term with `*` (any run) and `?` (one character): `web-*`, `fail?d`.
    /// In `pattern` a backslash escapes a literal `*`, `?` or `\` (the
    /// query `a\*b*` gives the pattern `a\*b*`: a literal `a*b` followed by
    /// any run); every other character stands for itself.
    Wildcard { field: Option<String>, pattern: String },
    /// `field:[a TO b]`, `field:{a TO b]`, `field:>10`, `field:<=5`.
    Range { field: String, lower: Bound, upper: Bound },
    /// `_exists_:field`.
    Exists { field: String },
    /// All must match (`a AND b`, `a b` with implicit AND).
    And(Vec<Query>),
    /// Any must match.
    Or(Vec<Query>),
    /// `NOT a`, `-a`.
    Not(Box<Query>),
}

/// Prints the query in the query language, such that [`crate::parse`] gives
/// the same query back (for queries that came out of the parser: those are
/// normalised, with no empty `And`/`Or`).
impl fmt::Display for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Query::All => f.write_str("*"),
            Query::Term { field, value } => {
                write_field(f, field.as_deref())?;
                if matches!(value.as_str(), "AND" | "OR" | "NOT") {
                    // Escaped, so it stays a word and is not read as an operator.
                    f.write_str("\\")?;
                }
                for c in value.chars() {
                    write_word_char(f, c)?;
                }
                Ok(())
            }
            Query::Phrase { field, text } => {
                write_field(f, field.as_deref())?;
                write_quoted(f, text)
            }
            Query::Wildcard { field, pattern } => {
                write_field(f, field.as_deref())?;
                let mut chars = pattern.chars();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => match chars.next() {
                            Some(e) => write!(f, "\\{e}")?,
                            None => f.write_str("\\\\")?,
                        },
                        '*' | '?' => write!(f, "{c}")?,
                        c => write_word_char(f, c)?,
                    }
                }
                Ok(())
            }
            Query::Range { field, lower, upper } => {
                write!(f, "{field}:")?;
                let (open, lo) = match lower {
                    Bound::Inclusive(l) => ('[', Some(l)),
                    Bound::Exclusive(l) => ('{', Some(l)),
                    Bound::Unbounded => ('[', None),
                };
                let (close, hi) = match upper {
                    Bound::Inclusive(l) => (']', Some(l)),
                    Bound::Exclusive(l) => ('}', Some(l)),
                    Bound::Unbounded => (']', None),
                };
                write!(f, "{open}")?;
                write_bound(f, lo)?;
                f.write_str(" TO ")?;
                write_bound(f, hi)?;
                write!(f, "{close}")
            }
            // `_exists_:AND` would read `AND` as an operator; `AND:*` is the same query.
            Query::Exists { field } if matches!(field.as_str(), "AND" | "OR" | "NOT") => write!(f, "{field}:*"),
            Query::Exists { field } => write!(f, "_exists_:{field}"),
            Query::And(items) if items.is_empty() => f.write_str("*"),
            Query::Or(items) if items.is_empty() => f.write_str("NOT *"),
            Query::And(items) => write_joined(f, items, " AND ", |q| matches!(q, Query::And(_) | Query::Or(_))),
            Query::Or(items) => write_joined(f, items, " OR ", |q| matches!(q, Query::Or(_))),
            Query::Not(inner) => {
                f.write_str("NOT ")?;
                if matches!(**inner, Query::And(_) | Query::Or(_)) {
                    write!(f, "({inner})")
                } else {
                    write!(f, "{inner}")
                }
            }
        }
    }
}

fn write_field(f: &mut fmt::Formatter<'_>, field: Option<&str>) -> fmt::Result {
    match field {
        Some(name) => write!(f, "{name}:"),
        None => Ok(()),
    }
}

/// One character of a bare word, escaped when the parser would read it as syntax.
fn write_word_char(f: &mut fmt::Formatter<'_>, c: char) -> fmt::Result {
    if c.is_whitespace() || "+-&|!(){}[]^\"~*?:\\/<>=".contains(c) {
        write!(f, "\\{c}")
    } else {
        write!(f, "{c}")
    }
}

fn write_quoted(f: &mut fmt::Formatter<'_>, text: &str) -> fmt::Result {
    f.write_str("\"")?;
    for c in text.chars() {
        if c == '"' || c == '\\' {
            f.write_str("\\")?;
        }
        write!(f, "{c}")?;
    }
    f.write_str("\"")
}

fn write_bound(f: &mut fmt::Formatter<'_>, lit: Option<&Literal>) -> fmt::Result {
    match lit {
        None => f.write_str("*"),
        Some(Literal::Number(n)) => write!(f, "{n}"),
        Some(Literal::Text(s)) => {
            let bare = !s.is_empty()
                && s != "*"
                && crate::parser::parse_number(s).is_none()
                && !s.chars().any(|c| c.is_whitespace() || matches!(c, ']' | '}' | '"' | '\\'));
            if bare {
                f.write_str(s)
            } else {
                write_quoted(f, s)
            }
        }
    }
}

fn write_joined(
    f: &mut fmt::Formatter<'_>,
    items: &[Query],
    sep: &str,
    needs_parens: impl Fn(&Query) -> bool,
) -> fmt::Result {
    for (i, q) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(sep)?;
        }
        if needs_parens(q) {
            write!(f, "({q})")?;
        } else {
            write!(f, "{q}")?;
        }
    }
    Ok(())
}
