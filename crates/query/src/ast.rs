//! The parsed form of a query.
//!
//! Field names are dotted paths into the event (`http.status`), plus the
//! reserved names `@timestamp`, `@group`, `@subgroup`, `@host`, `@source`
//! and `message`. A `field` of `None` means "the default field": free text
//! searches `message`.

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
