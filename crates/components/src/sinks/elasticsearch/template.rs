//! The index template the sink installs before its first document
//! (`PUT _index_template/<template_name>`), so every index it creates has
//! the mapping sluice's OpenSearch search backend queries
//! (`sluice_opensearch::mapping::index_body`, checked equal by a test):
//! identity fields and `level` as `keyword`, `message` and every other
//! string as `text` analysed like the embedded store (`sluice_text`: split
//! on every character that is not a letter or digit, tokens of 40
//! characters or more dropped, lower-cased), other strings with a
//! `.keyword` sub-field (up to 1024 characters), `@timestamp` as
//! `date_nanos`, and at most `total_fields_limit` fields per index. The body
//! is `template.json` beside this file, with `index_patterns` set to the
//! `index` setting's literal prefix followed by `*` (docs/specs/opensearch-index.md).

/// The template as shipped (`index_patterns` = `["sluice-*"]`).
pub(super) const TEMPLATE_JSON: &str = include_str!("template.json");

/// The template body for indices starting with `prefix`, with a limit of
/// `total_fields` mapped fields per index.
pub(super) fn body(prefix: &str, total_fields: u32) -> Vec<u8> {
    // INVARIANT: template.json is valid JSON (the tests parse it).
    let mut t: serde_json::Value = serde_json::from_str(TEMPLATE_JSON).expect("template.json is JSON");
    t["index_patterns"] = serde_json::json!([format!("{prefix}*")]);
    t["template"]["settings"]["index.mapping.total_fields.limit"] = serde_json::json!(total_fields);
    t.to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_template_has_the_documented_mapping() {
        let t: serde_json::Value = serde_json::from_slice(&body("logs-", 500)).unwrap();
        assert_eq!(t["index_patterns"], serde_json::json!(["logs-*"]));
        assert_eq!(t["template"]["settings"]["index.mapping.total_fields.limit"], 500);
        let p = &t["template"]["mappings"]["properties"];
        for k in ["@group", "@subgroup", "@host", "@source", "level"] {
            assert_eq!(p[k]["type"], "keyword", "{k}");
        }
        assert_eq!(p["message"]["type"], "text");
        assert_eq!(p["@timestamp"]["type"], "date_nanos");
        let d = &t["template"]["mappings"]["dynamic_templates"][0]["strings"];
        assert_eq!(d["mapping"]["type"], "text");
        assert_eq!(d["mapping"]["fields"]["keyword"]["type"], "keyword");
    }

    /// The sink writes the mapping the OpenSearch search backend translates
    /// queries for: one mapping, two crates (issue #20).
    #[test]
    fn the_template_is_the_search_backends_mapping() {
        let t: serde_json::Value = serde_json::from_str(TEMPLATE_JSON).unwrap();
        assert_eq!(t["template"], sluice_opensearch::mapping::index_body());
    }
}
