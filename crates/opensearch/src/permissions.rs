//! The principal's allowed sources as an OpenSearch filter.
//!
//! Every request the backend sends puts [`principal_filter`] in `filter`
//! context next to the translated query (never inside it), so no query text
//! — `OR`, wildcards, identity field names, `_index` — can widen it: the
//! engine ANDs it with whatever the query matches.

use serde_json::{json, Value};
use sluice_query::principal::Glob;
use sluice_query::Principal;

/// Matches nothing.
pub fn match_none() -> Value {
    json!({"match_none": {}})
}

/// One identity glob on a keyword field: nothing for `*`, a `term` for an
/// exact value, a `wildcard` otherwise (the glob's other characters are
/// literal, so `\` is escaped).
fn glob_clause(field: &str, g: &Glob) -> Option<Value> {
    if g.is_any() {
        return None;
    }
    if g.is_exact() {
        return Some(json!({"term": {field: g.0}}));
    }
    let pattern = g.0.replace('\\', "\\\\");
    Some(json!({"wildcard": {field: {"value": pattern}}}))
}

/// The filter of events `principal` may read: any of its patterns; nothing
/// when it has none.
pub fn principal_filter(principal: &Principal) -> Value {
    if principal.allowed.is_empty() {
        return match_none();
    }
    let mut any = Vec::new();
    for p in &principal.allowed {
        let all: Vec<Value> = [("@group", &p.group), ("@subgroup", &p.subgroup), ("@host", &p.host)]
            .into_iter()
            .filter_map(|(f, g)| glob_clause(f, g))
            .collect();
        if all.is_empty() {
            return json!({"match_all": {}});
        }
        any.push(json!({"bool": {"filter": all}}));
    }
    json!({"bool": {"should": any, "minimum_should_match": 1}})
}

/// `query` restricted to what `principal` may read and to `extra` filters
/// (time range…): the principal's filter is a sibling in `filter` context.
pub fn restricted(principal: &Principal, query: Value, extra: Vec<Value>) -> Value {
    let mut filter = vec![principal_filter(principal), query];
    filter.extend(extra);
    json!({"bool": {"filter": filter}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_query::SourcePattern;

    #[test]
    fn patterns_become_keyword_clauses() {
        let p =
            Principal::new("p", vec![SourcePattern::new("acme", "w?b", "*"), SourcePattern::new("a\\b*", "*", "*")]);
        let f = principal_filter(&p);
        assert_eq!(f["bool"]["should"][0]["bool"]["filter"][0], json!({"term": {"@group": "acme"}}));
        assert_eq!(f["bool"]["should"][0]["bool"]["filter"][1], json!({"wildcard": {"@subgroup": {"value": "w?b"}}}));
        assert_eq!(f["bool"]["should"][1]["bool"]["filter"][0], json!({"wildcard": {"@group": {"value": "a\\\\b*"}}}));
        assert_eq!(principal_filter(&Principal::new("n", vec![])), match_none());
    }
}
