//! The index template for events as the `elasticsearch` sink writes them
//! (`@timestamp` as RFC 3339 with nanoseconds, `@group`, `@subgroup`,
//! `@host`, `@source`, then the event's fields), chosen so that the query
//! DSL the [`crate::translate`] module builds has the meaning of
//! `docs/query-semantics.md`:
//!
//! - `@group`, `@subgroup`, `@host`, `@source`, `level`: `keyword` (exact,
//!   case-sensitive).
//! - `@timestamp`: `date_nanos` (nanosecond precision, like the embedded store).
//! - `message` and every dynamic string: `text` analysed by `sluice_text`
//!   (split on every character that is not a letter or digit, tokens of 40
//!   characters or more dropped with their position kept, lower-cased: the
//!   embedded store's analyser), plus a `keyword` sub-field `.keyword` for
//!   terms aggregations (values up to [`KEYWORD_IGNORE_ABOVE`] characters).
//!   `message` has no sub-field (a terms aggregation on it is refused, as in
//!   the embedded store).
//! - Numbers `long`/`double`, booleans `boolean` (OpenSearch's dynamic
//!   mapping); `date_detection` and `numeric_detection` off, so a string
//!   stays a string.
//! - At most [`TOTAL_FIELDS_LIMIT`] fields per index.
//!
//! The `sluice_text` analyser needs OpenSearch's `analysis-common` module
//! (the `pattern` tokenizer and `length` filter), part of every full
//! distribution.
//!
//! The `elasticsearch` sink installs the same mapping as its index template
//! (`crates/components/src/sinks/elasticsearch/template.json`; a test of the
//! sink checks that its `template` equals [`index_body`]).

use serde_json::{json, Value};

/// Keyword sub-fields index values up to this many characters.
pub const KEYWORD_IGNORE_ABOVE: u32 = 1024;
/// `index.mapping.total_fields.limit`.
pub const TOTAL_FIELDS_LIMIT: u32 = 1000;
/// The analyser of `message` and dynamic strings.
pub const TEXT_ANALYZER: &str = "sluice_text";

/// The identity keys, stored as keywords.
pub const KEYWORD_FIELDS: [&str; 5] = ["@group", "@subgroup", "@host", "@source", "level"];

/// Index settings and mappings (the body of `PUT /<index>` or the
/// `template` of an index template).
pub fn index_body() -> Value {
    let mut props = serde_json::Map::new();
    for f in KEYWORD_FIELDS {
        props.insert(f.into(), json!({"type": "keyword"}));
    }
    props.insert("@timestamp".into(), json!({"type": "date_nanos"}));
    props.insert("message".into(), json!({"type": "text", "analyzer": TEXT_ANALYZER}));
    json!({
        "settings": {
            "index.mapping.total_fields.limit": TOTAL_FIELDS_LIMIT,
            "analysis": {
                "tokenizer": {
                    "sluice_words": {"type": "pattern", "pattern": "[^\\p{L}\\p{N}]+"}
                },
                "filter": {
                    "sluice_short": {"type": "length", "max": 39}
                },
                "analyzer": {
                    TEXT_ANALYZER: {
                        "type": "custom",
                        "tokenizer": "sluice_words",
                        "filter": ["sluice_short", "lowercase"]
                    }
                }
            }
        },
        "mappings": {
            "date_detection": false,
            "numeric_detection": false,
            "dynamic_templates": [{
                "strings": {
                    "match_mapping_type": "string",
                    "mapping": {
                        "type": "text",
                        "analyzer": TEXT_ANALYZER,
                        "fields": {"keyword": {"type": "keyword", "ignore_above": KEYWORD_IGNORE_ABOVE}}
                    }
                }
            }],
            "properties": Value::Object(props)
        }
    })
}

/// The composable index template (`PUT /_index_template/<name>`) applying
/// [`index_body`] to every index matching `pattern`.
pub fn index_template(pattern: &str) -> Value {
    json!({"index_patterns": [pattern], "priority": 100, "template": index_body()})
}

#[cfg(test)]
mod tests {
    #[test]
    fn identity_fields_are_keywords_and_message_is_text() {
        let t = super::index_template("sluice-*");
        let p = &t["template"]["mappings"]["properties"];
        assert_eq!(p["@group"]["type"], "keyword");
        assert_eq!(p["level"]["type"], "keyword");
        assert_eq!(p["message"]["analyzer"], super::TEXT_ANALYZER);
        assert_eq!(p["@timestamp"]["type"], "date_nanos");
        assert_eq!(t["index_patterns"][0], "sluice-*");
    }
}
