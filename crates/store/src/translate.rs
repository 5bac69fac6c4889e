//! Translation of the engine-independent [`Query`] AST (and a principal's
//! source patterns) into tantivy queries, per `docs/query-semantics.md`.
//!
//! | AST on …        | `message`                 | keyword (`@group` …)   | dynamic (`attrs.<path>`)                        | `@timestamp` |
//! |-----------------|---------------------------|------------------------|------------------------------------------------|--------------|
//! | Term            | term / phrase of tokens   | exact term             | column scan: tokens (phrase), number, boolean  | equality     |
//! | Phrase          | phrase of tokens          | exact term             | column scan, as Term                           | equality     |
//! | Wildcard        | regex on each token       | regex on whole keyword | column scan: glob on each token                | nothing      |
//! | Range           | nothing                   | lexicographic          | numeric (f64) when both bounds are numbers     | ns range     |
//! | Exists          | `_present:message`        | fast column present    | any fast column under the path                 | everything   |
//!
//! A query that can never match (no tokens, a range over text) becomes an
//! [`EmptyQuery`], not an error.

use std::ops::Bound as StdBound;
use std::sync::Arc;

use sluice_query::ast::{Bound, Literal, Query};
use sluice_query::matcher::{TextMatcher, WildcardMatcher};
use sluice_query::principal::{Glob, Principal};
use tantivy::query::doc_predicate_query::{DocPredicateBoxable, DocPredicateQuery};
use tantivy::query::{
    AllQuery, BooleanQuery, EmptyQuery, ExistsQuery, Occur, PhraseQuery, Query as TQuery, RangeQuery, RegexQuery,
    TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::Term;

use crate::columns::{ColumnPredicate, ColumnQuery, Test};
use crate::schema::{names, tokens, Fields};

/// A query that cannot run as given (an HTTP 400).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct TranslateError(pub String);

type Q = Box<dyn TQuery>;

enum Target {
    Message,
    Keyword(Field),
    Timestamp,
    Dynamic(String),
}

fn target(f: &Fields, field: Option<&str>) -> Result<Target, TranslateError> {
    match field {
        None | Some(names::MESSAGE) => Ok(Target::Message),
        Some("@timestamp") => Ok(Target::Timestamp),
        Some(name) => {
            if name.is_empty() || name.starts_with('.') || name.ends_with('.') || name.contains("..") {
                return Err(TranslateError(format!("invalid field name {name:?}")));
            }
            Ok(match f.keyword(name) {
                Some(field) => Target::Keyword(field),
                None => Target::Dynamic(name.to_string()),
            })
        }
    }
}

fn empty() -> Q {
    Box::new(EmptyQuery)
}

fn all() -> Q {
    Box::new(AllQuery)
}

fn term_query(t: Term) -> Q {
    Box::new(TermQuery::new(t, IndexRecordOption::Basic))
}

fn should(mut qs: Vec<Q>) -> Q {
    match qs.len() {
        0 => empty(),
        1 => qs.pop().unwrap_or_else(empty),
        _ => Box::new(BooleanQuery::new(qs.into_iter().map(|q| (Occur::Should, q)).collect())),
    }
}

fn must(mut qs: Vec<Q>) -> Q {
    match qs.len() {
        0 => all(),
        1 => qs.pop().unwrap_or_else(all),
        _ => Box::new(BooleanQuery::new(qs.into_iter().map(|q| (Occur::Must, q)).collect())),
    }
}

fn not(q: Q) -> Q {
    Box::new(BooleanQuery::new(vec![(Occur::Must, all()), (Occur::MustNot, q)]))
}

fn json_f64_term(f: &Fields, path: &str, v: f64) -> Term {
    let mut t = Term::from_field_json_path(f.attrs, path, true);
    t.append_type_and_fast_value(v);
    t
}

/// Term or phrase of pre-built terms.
fn terms_query(terms: Vec<Term>) -> Q {
    match terms.len() {
        0 => empty(),
        1 => terms.into_iter().next().map(term_query).unwrap_or_else(empty),
        _ => Box::new(PhraseQuery::new(terms)),
    }
}

fn message_query(f: &Fields, text: &str) -> Q {
    terms_query(tokens(text).iter().map(|tok| Term::from_field_text(f.message, tok)).collect())
}

/// A term, phrase or wildcard on a dynamic field: evaluated on its fast
/// columns (see [`crate::columns`]).
fn column_query(path: &str, test: Test, window: Window) -> Q {
    let predicate = ColumnPredicate::new(format!("{}.{path}", names::ATTRS), test, window);
    Box::new(DocPredicateQuery::from(Arc::new(ColumnQuery(predicate)) as Arc<dyn DocPredicateBoxable>))
}

/// The time range `[from, to)` (ns) a query is restricted to, when known:
/// column scans skip the segments outside it.
pub type Window = Option<(i64, i64)>;

fn parse_number(s: &str) -> Option<f64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

fn time_of(lit: &Literal) -> Result<i64, TranslateError> {
    match lit {
        Literal::Number(ms) => Ok((*ms * 1_000_000.0) as i64),
        Literal::Text(s) => sluice_query::parse_time(s, sluice_core::event::now_ns())
            .map_err(|e| TranslateError(format!("@timestamp: {}", e.0))),
    }
}

fn ts_range(f: &Fields, lo: StdBound<i64>, hi: StdBound<i64>) -> Q {
    let lo = match lo {
        StdBound::Unbounded => StdBound::Included(Term::from_field_i64(f.ts, i64::MIN)),
        StdBound::Included(v) => StdBound::Included(Term::from_field_i64(f.ts, v)),
        StdBound::Excluded(v) => StdBound::Excluded(Term::from_field_i64(f.ts, v)),
    };
    let hi = match hi {
        StdBound::Unbounded => StdBound::Included(Term::from_field_i64(f.ts, i64::MAX)),
        StdBound::Included(v) => StdBound::Included(Term::from_field_i64(f.ts, v)),
        StdBound::Excluded(v) => StdBound::Excluded(Term::from_field_i64(f.ts, v)),
    };
    Box::new(RangeQuery::new(lo, hi))
}

/// `_ts` in `[from, to)`; `None` when the range is unbounded on both sides.
pub fn time_range(f: &Fields, from_ns: Option<i64>, to_ns: Option<i64>) -> Option<Q> {
    if from_ns.is_none() && to_ns.is_none() {
        return None;
    }
    Some(ts_range(
        f,
        from_ns.map_or(StdBound::Unbounded, StdBound::Included),
        to_ns.map_or(StdBound::Unbounded, StdBound::Excluded),
    ))
}

/// Converts a glob (`*`, `?`) to an anchored regex over the whole term.
pub fn glob_regex(glob: &str) -> String {
    let mut out = String::with_capacity(glob.len() + 8);
    for c in glob.chars() {
        match c {
            '*' => out.push_str(".*"),
            '?' => out.push('.'),
            c => out.push_str(&regex_syntax_escape(c)),
        }
    }
    out
}

fn regex_syntax_escape(c: char) -> String {
    match c {
        '\0' => "\\x00".into(),
        '\u{1}' => "\\x01".into(),
        c if "\\.+*?()|[]{}^$#&-~\"<>@".contains(c) => format!("\\{c}"),
        c => c.to_string(),
    }
}

fn regex_query(pattern: &str, field: Field) -> Result<Q, TranslateError> {
    RegexQuery::from_pattern(pattern, field)
        .map(|q| Box::new(q) as Q)
        .map_err(|e| TranslateError(format!("invalid wildcard: {e}")))
}

fn exists(f: &Fields, field: &str) -> Result<Q, TranslateError> {
    Ok(match target(f, Some(field))? {
        Target::Message => term_query(Term::from_field_text(f.present, names::MESSAGE)),
        Target::Timestamp => all(),
        Target::Keyword(_) => Box::new(ExistsQuery::new(field.to_string(), false)),
        Target::Dynamic(path) => Box::new(ExistsQuery::new(format!("{}.{path}", names::ATTRS), true)),
    })
}

fn literal_number(l: &Literal) -> Option<f64> {
    match l {
        Literal::Number(n) => Some(*n),
        Literal::Text(s) => parse_number(s),
    }
}

fn literal_text(l: &Literal) -> String {
    match l {
        Literal::Number(n) => format_number(*n),
        Literal::Text(s) => s.clone(),
    }
}

fn format_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}

fn map_bound<T>(b: &Bound, conv: impl Fn(&Literal) -> Option<T>) -> Option<StdBound<T>> {
    Some(match b {
        Bound::Unbounded => StdBound::Unbounded,
        Bound::Inclusive(l) => StdBound::Included(conv(l)?),
        Bound::Exclusive(l) => StdBound::Excluded(conv(l)?),
    })
}

fn range(f: &Fields, field: &str, lower: &Bound, upper: &Bound) -> Result<Q, TranslateError> {
    Ok(match target(f, Some(field))? {
        Target::Message => empty(),
        Target::Timestamp => {
            let conv = |l: &Literal| time_of(l).ok();
            let (Some(lo), Some(hi)) = (map_bound(lower, conv), map_bound(upper, conv)) else {
                return Err(TranslateError(
                    "@timestamp: range bounds must be RFC 3339 times or epoch milliseconds".into(),
                ));
            };
            ts_range(f, lo, hi)
        }
        Target::Keyword(kw) => {
            let conv = |l: &Literal| Some(Term::from_field_text(kw, &literal_text(l)));
            match (map_bound(lower, conv), map_bound(upper, conv)) {
                (Some(StdBound::Unbounded), Some(StdBound::Unbounded)) => exists(f, field)?,
                (Some(lo), Some(hi)) => {
                    let lo = match lo {
                        StdBound::Unbounded => StdBound::Included(Term::from_field_text(kw, "")),
                        b => b,
                    };
                    Box::new(RangeQuery::new(lo, hi))
                }
                _ => empty(),
            }
        }
        Target::Dynamic(path) => {
            let conv = |l: &Literal| literal_number(l).map(|v| json_f64_term(f, &path, v));
            match (map_bound(lower, conv), map_bound(upper, conv)) {
                (Some(lo), Some(hi)) => {
                    let lo = match lo {
                        StdBound::Unbounded => StdBound::Included(json_f64_term(f, &path, f64::NEG_INFINITY)),
                        b => b,
                    };
                    let hi = match hi {
                        StdBound::Unbounded => StdBound::Included(json_f64_term(f, &path, f64::INFINITY)),
                        b => b,
                    };
                    Box::new(RangeQuery::new(lo, hi))
                }
                // A bound that is not a number: a range over analysed strings matches nothing.
                _ => empty(),
            }
        }
    })
}

/// Translates a query.
pub fn translate(f: &Fields, q: &Query) -> Result<Q, TranslateError> {
    translate_in(f, q, None)
}

/// Translates a query that is ANDed with the time range `window`.
fn translate_in(f: &Fields, q: &Query, window: Window) -> Result<Q, TranslateError> {
    Ok(match q {
        Query::All => all(),
        Query::Term { field, value } => {
            let t = target(f, field.as_deref())?;
            match &t {
                Target::Message => message_query(f, value),
                Target::Keyword(kw) => term_query(Term::from_field_text(*kw, value)),
                Target::Timestamp => {
                    let ns = time_of(&Literal::Text(value.clone()))?;
                    ts_range(f, StdBound::Included(ns), StdBound::Included(ns))
                }
                Target::Dynamic(path) => column_query(path, Test::Text(TextMatcher::new(value)), window),
            }
        }
        Query::Phrase { field, text } => {
            let t = target(f, field.as_deref())?;
            match &t {
                Target::Message => message_query(f, text),
                Target::Keyword(kw) => term_query(Term::from_field_text(*kw, text)),
                Target::Timestamp => {
                    let ns = time_of(&Literal::Text(text.clone()))?;
                    ts_range(f, StdBound::Included(ns), StdBound::Included(ns))
                }
                Target::Dynamic(path) => column_query(path, Test::Text(TextMatcher::new(text)), window),
            }
        }
        Query::Wildcard { field, pattern } => {
            if pattern == "*" {
                return match field {
                    Some(name) => exists(f, name),
                    None => Ok(all()),
                };
            }
            match target(f, field.as_deref())? {
                Target::Message => regex_query(&glob_regex(&pattern.to_lowercase()), f.message)?,
                Target::Keyword(kw) => regex_query(&glob_regex(pattern), kw)?,
                Target::Timestamp => empty(),
                Target::Dynamic(path) => {
                    column_query(&path, Test::Wildcard(WildcardMatcher::new(pattern, true)), window)
                }
            }
        }
        Query::Range { field, lower, upper } => range(f, field, lower, upper)?,
        Query::Exists { field } => exists(f, field)?,
        Query::And(qs) => must(qs.iter().map(|q| translate_in(f, q, window)).collect::<Result<_, _>>()?),
        Query::Or(qs) => should(qs.iter().map(|q| translate_in(f, q, window)).collect::<Result<_, _>>()?),
        Query::Not(q) => not(translate_in(f, q, window)?),
    })
}

fn glob_query(f: &Fields, name: &str, field: Field, glob: &Glob) -> Result<Option<Q>, TranslateError> {
    if glob.is_any() {
        return Ok(None);
    }
    if glob.0.is_empty() {
        // Events without this identity part.
        return Ok(Some(not(exists(f, name)?)));
    }
    if glob.is_exact() {
        return Ok(Some(term_query(Term::from_field_text(field, &glob.0))));
    }
    Ok(Some(regex_query(&glob_regex(&glob.0), field)?))
}

/// The principal's visibility filter: OR over its source patterns, each an
/// AND of group / subgroup / host; an empty list matches nothing.
pub fn principal_filter(f: &Fields, p: &Principal) -> Result<Q, TranslateError> {
    let mut alts = Vec::with_capacity(p.allowed.len());
    for pat in &p.allowed {
        let mut parts = Vec::new();
        for (name, field, glob) in [
            (names::GROUP, f.group, &pat.group),
            (names::SUBGROUP, f.subgroup, &pat.subgroup),
            (names::HOST, f.host, &pat.host),
        ] {
            if let Some(q) = glob_query(f, name, field, glob)? {
                parts.push(q);
            }
        }
        if parts.is_empty() {
            return Ok(all());
        }
        alts.push(must(parts));
    }
    Ok(should(alts))
}

/// The full filter: query AND principal AND time range.
pub fn full_query(
    f: &Fields,
    p: &Principal,
    q: &Query,
    from_ns: Option<i64>,
    to_ns: Option<i64>,
) -> Result<Q, TranslateError> {
    let window =
        (from_ns.is_some() || to_ns.is_some()).then(|| (from_ns.unwrap_or(i64::MIN), to_ns.unwrap_or(i64::MAX)));
    let mut parts = vec![principal_filter(f, p)?, translate_in(f, q, window)?];
    if let Some(r) = time_range(f, from_ns, to_ns) {
        parts.push(r);
    }
    Ok(must(parts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_become_anchored_regexes() {
        assert_eq!(glob_regex("web-*"), "web\\-.*");
        assert_eq!(glob_regex("w?b.1"), "w.b\\.1");
    }

    #[test]
    fn numbers_format_as_written() {
        assert_eq!(format_number(404.0), "404");
        assert_eq!(format_number(1.5), "1.5");
    }
}
