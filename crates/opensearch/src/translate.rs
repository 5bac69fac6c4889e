//! sluice's query AST to the OpenSearch query DSL, with the meaning of
//! `docs/query-semantics.md` over the mapping of [`crate::mapping`].
//!
//! Each field's kind comes from the live mapping ([`Schema`]): a term on a
//! keyword is a `term`, on analysed text a `match_phrase` (the field's own
//! analyser splits the value exactly as the indexed text was split, so one
//! token is a term and several a phrase; none matches nothing), on a number
//! a numeric `term` when the value is a number, and so on. A field no index
//! maps has no value in any event: the clause matches nothing. A field whose
//! kind differs between indices, or whose type the language has no meaning
//! for (`nested`, `ip`…), is a [`BackendError::BadRequest`] naming it.
//!
//! The result goes into `filter` context beside the principal's filter
//! ([`crate::permissions::restricted`]); nothing here scores.

use serde_json::{json, Value};
use sluice_core::codec::format_timestamp;
use sluice_query::matcher::timestamp_bound_ns;
use sluice_query::parser::parse_number;
use sluice_query::{BackendError, Bound, Literal, Query};

use crate::permissions::match_none;
use crate::schema::{Kind, Schema};

/// The identity keys: exist only when non-empty (the sink writes `""`).
const IDENTITY: [&str; 4] = ["@group", "@subgroup", "@host", "@source"];

/// Translates `q`.
pub fn translate(q: &Query, schema: &Schema) -> Result<Value, BackendError> {
    Ok(match q {
        Query::All => json!({"match_all": {}}),
        Query::Term { field, value } => value_clause(field_of(field), value, schema)?,
        Query::Phrase { field, text } => value_clause(field_of(field), text, schema)?,
        Query::Wildcard { field, pattern } => wildcard(field_of(field), pattern, schema)?,
        Query::Range { field, lower, upper } => range(field, lower, upper, schema)?,
        Query::Exists { field } => exists(field, schema)?,
        Query::And(items) => {
            let all = items.iter().map(|i| translate(i, schema)).collect::<Result<Vec<_>, _>>()?;
            json!({"bool": {"filter": all}})
        }
        Query::Or(items) if items.is_empty() => match_none(),
        Query::Or(items) => {
            let any = items.iter().map(|i| translate(i, schema)).collect::<Result<Vec<_>, _>>()?;
            json!({"bool": {"should": any, "minimum_should_match": 1}})
        }
        Query::Not(inner) => json!({"bool": {"must_not": [translate(inner, schema)?]}}),
    })
}

fn field_of(f: &Option<String>) -> &str {
    f.as_deref().unwrap_or("message")
}

/// The kind of `field`, refusing kinds the language cannot use.
fn kind(field: &str, schema: &Schema) -> Result<Option<Kind>, BackendError> {
    match schema.kind(field)? {
        Some(Kind::Other) => Err(BackendError::BadRequest(format!(
            "field {field} has an OpenSearch type the query language has no meaning for"
        ))),
        k => Ok(k),
    }
}

/// A time value on a `date_nanos` field: RFC 3339 with nanoseconds; `None`
/// before 1970 (such a field holds nothing earlier).
fn nanos_text(ns: i64) -> Option<String> {
    (ns >= 0).then(|| format_timestamp(ns))
}

/// A term or phrase on `field` (on keywords both are the whole value; on
/// text both go through the field's analyser).
fn value_clause(field: &str, value: &str, schema: &Schema) -> Result<Value, BackendError> {
    Ok(match kind(field, schema)? {
        None | Some(Kind::Object) => match_none(),
        Some(Kind::Keyword) => json!({"term": {field: value}}),
        Some(Kind::Text) => json!({"match_phrase": {field: {"query": value}}}),
        Some(Kind::Number) => match parse_number(value) {
            Some(n) => json!({"term": {field: n}}),
            None => match_none(),
        },
        Some(Kind::Boolean) => match value.to_ascii_lowercase().as_str() {
            "true" => json!({"term": {field: true}}),
            "false" => json!({"term": {field: false}}),
            _ => match_none(),
        },
        Some(Kind::Date) => match timestamp_bound_ns(&Literal::Text(value.to_string())).and_then(nanos_text) {
            Some(t) => json!({"term": {field: t}}),
            None => match_none(),
        },
        Some(Kind::Other) => match_none(), // refused by `kind`
    })
}

fn wildcard(field: &str, pattern: &str, schema: &Schema) -> Result<Value, BackendError> {
    if pattern == "*" {
        return exists(field, schema);
    }
    Ok(match kind(field, schema)? {
        Some(Kind::Keyword) => json!({"wildcard": {field: {"value": pattern}}}),
        Some(Kind::Text) => json!({"wildcard": {field: {"value": pattern.to_lowercase()}}}),
        // Wildcards never match numbers, booleans, times or objects.
        _ => match_none(),
    })
}

fn exists(field: &str, schema: &Schema) -> Result<Value, BackendError> {
    if field == "@timestamp" {
        return Ok(json!({"match_all": {}}));
    }
    if kind(field, schema)?.is_none() {
        return Ok(match_none());
    }
    if IDENTITY.contains(&field) {
        return Ok(json!({"bool": {"filter": [{"exists": {"field": field}}], "must_not": [{"term": {field: ""}}]}}));
    }
    Ok(json!({"exists": {"field": field}}))
}

/// One bound converted for the field's kind; `None` when it cannot be.
type Conv = fn(&Literal) -> Option<Value>;

fn as_number(l: &Literal) -> Option<Value> {
    match l {
        Literal::Number(n) => Some(json!(n)),
        Literal::Text(s) => parse_number(s).map(|n| json!(n)),
    }
}

fn as_keyword(l: &Literal) -> Option<Value> {
    match l {
        Literal::Number(n) => Some(json!(format!("{n}"))),
        Literal::Text(s) => Some(json!(s)),
    }
}

fn as_time(l: &Literal) -> Option<Value> {
    timestamp_bound_ns(l).map(|ns| json!(format_timestamp(ns.max(0))))
}

fn range(field: &str, lower: &Bound, upper: &Bound, schema: &Schema) -> Result<Value, BackendError> {
    let conv: Conv = match kind(field, schema)? {
        Some(Kind::Number) => as_number,
        Some(Kind::Keyword) => as_keyword,
        Some(Kind::Date) => as_time,
        // Ranges over analysed strings, booleans, objects: nothing.
        _ => return Ok(match_none()),
    };
    // An upper bound before 1970 on a date_nanos field: nothing can be below it.
    if field_is_date(field, schema) {
        if let Bound::Inclusive(l) | Bound::Exclusive(l) = upper {
            if timestamp_bound_ns(l).is_some_and(|ns| ns < 0) {
                return Ok(match_none());
            }
        }
    }
    let mut r = serde_json::Map::new();
    for (b, incl, excl) in [(lower, "gte", "gt"), (upper, "lte", "lt")] {
        let (op, lit) = match b {
            Bound::Unbounded => continue,
            Bound::Inclusive(l) => (incl, l),
            Bound::Exclusive(l) => (excl, l),
        };
        match conv(lit) {
            Some(v) => {
                r.insert(op.into(), v);
            }
            // A bound that cannot be converted for the field matches nothing.
            None => return Ok(match_none()),
        }
    }
    if r.is_empty() {
        return exists(field, schema);
    }
    Ok(json!({"range": {field: Value::Object(r)}}))
}

fn field_is_date(field: &str, schema: &Schema) -> bool {
    matches!(schema.kind(field), Ok(Some(Kind::Date)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Schema {
        Schema::from_mapping(&json!({"i": {"mappings": {"properties": {
            "@group": {"type": "keyword"},
            "@timestamp": {"type": "date_nanos"},
            "message": {"type": "text"},
            "n": {"type": "long"},
            "flag": {"type": "boolean"},
            "geo": {"type": "geo_point"}
        }}}}))
    }

    fn t(q: &str) -> Value {
        translate(&sluice_query::parse(q).unwrap(), &schema()).unwrap()
    }

    #[test]
    fn each_kind_gets_its_clause() {
        assert_eq!(t("@group:acme"), json!({"term": {"@group": "acme"}}));
        assert_eq!(t("error"), json!({"match_phrase": {"message": {"query": "error"}}}));
        assert_eq!(t("n:5"), json!({"term": {"n": 5.0}}));
        assert_eq!(t("n:abc"), match_none());
        assert_eq!(t("flag:TRUE"), json!({"term": {"flag": true}}));
        assert_eq!(t("nope:x"), match_none());
        assert_eq!(t("Fail*"), json!({"wildcard": {"message": {"value": "fail*"}}}));
        assert_eq!(t("n:[1 TO 5}"), json!({"range": {"n": {"gte": 1.0, "lt": 5.0}}}));
        assert_eq!(t("n:[a TO 5]"), match_none());
        assert_eq!(t("message:[a TO z]"), match_none());
        assert_eq!(t("@group:[b TO 5]"), json!({"range": {"@group": {"gte": "b", "lte": "5"}}}));
        let e = translate(&sluice_query::parse("geo:x").unwrap(), &schema()).unwrap_err();
        assert!(e.to_string().contains("field geo has an OpenSearch type"), "{e}");
    }
}
