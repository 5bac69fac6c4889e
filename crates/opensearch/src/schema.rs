//! What the index mapping says about each field: the type the query
//! translation, the aggregations and the field listing go by.
//!
//! Read from `GET /<index>/_mapping` (every index the pattern matches) for
//! each request, so a field added by dynamic mapping a moment ago is known.
//! A field mapped with different kinds in different indices is refused
//! where its kind matters (a query on it cannot mean one thing).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use sluice_query::{BackendError, FieldType};

/// The kind of a mapped field, as far as the query language cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// `keyword`: exact value.
    Keyword,
    /// `text`: analysed.
    Text,
    /// `long`, `double`, … .
    Number,
    /// `boolean`.
    Boolean,
    /// `date`, `date_nanos`.
    Date,
    /// An object (has sub-fields).
    Object,
    /// Anything else (`nested`, `ip`, `geo_point`…): not supported in queries.
    Other,
}

impl Kind {
    fn of(t: &str) -> Kind {
        match t {
            "keyword" | "constant_keyword" | "wildcard" => Kind::Keyword,
            "text" | "match_only_text" => Kind::Text,
            "long" | "integer" | "short" | "byte" | "double" | "float" | "half_float" | "scaled_float"
            | "unsigned_long" => Kind::Number,
            "boolean" => Kind::Boolean,
            "date" | "date_nanos" => Kind::Date,
            "object" => Kind::Object,
            _ => Kind::Other,
        }
    }

    /// The type `/api/v1/fields` reports.
    pub fn field_type(self) -> Option<FieldType> {
        match self {
            Kind::Keyword => Some(FieldType::Keyword),
            Kind::Text => Some(FieldType::Text),
            Kind::Number => Some(FieldType::Number),
            Kind::Boolean => Some(FieldType::Boolean),
            Kind::Date => Some(FieldType::Date),
            Kind::Object | Kind::Other => None,
        }
    }
}

/// The fields of every index of the pattern.
#[derive(Clone, Debug, Default)]
pub struct Schema {
    kinds: BTreeMap<String, BTreeSet<Kind>>,
    /// Text fields whose every index has a `.keyword` sub-field.
    keyword_sub: BTreeSet<String>,
    /// Text fields lacking the sub-field in some index.
    no_keyword_sub: BTreeSet<String>,
}

impl Schema {
    /// Parses a `_mapping` answer (`{index: {mappings: {properties: …}}}`).
    pub fn from_mapping(v: &Value) -> Schema {
        let mut s = Schema::default();
        if let Some(indices) = v.as_object() {
            for idx in indices.values() {
                if let Some(props) = idx.pointer("/mappings/properties").and_then(Value::as_object) {
                    s.walk("", props);
                }
            }
        }
        s
    }

    fn walk(&mut self, prefix: &str, props: &serde_json::Map<String, Value>) {
        for (name, m) in props {
            let path = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
            let t = m.get("type").and_then(Value::as_str).unwrap_or("object");
            let kind = Kind::of(t);
            self.kinds.entry(path.clone()).or_default().insert(kind);
            if kind == Kind::Text {
                if m.pointer("/fields/keyword/type").and_then(Value::as_str) == Some("keyword") {
                    self.keyword_sub.insert(path.clone());
                } else {
                    self.no_keyword_sub.insert(path.clone());
                }
            }
            if let Some(sub) = m.get("properties").and_then(Value::as_object) {
                self.walk(&path, sub);
            }
        }
    }

    /// The one kind of `field`; `None` when no index maps it (no event has
    /// it); an error naming it when indices disagree.
    pub fn kind(&self, field: &str) -> Result<Option<Kind>, BackendError> {
        let Some(kinds) = self.kinds.get(field) else { return Ok(None) };
        let mut it = kinds.iter();
        match (it.next(), it.next()) {
            (Some(k), None) => Ok(Some(*k)),
            _ => Err(BackendError::BadRequest(format!(
                "field {field} has different types in different OpenSearch indices ({kinds:?}): a query on it cannot mean one thing"
            ))),
        }
    }

    /// Whether `field` (text) has a `.keyword` sub-field in every index.
    pub fn has_keyword_sub(&self, field: &str) -> bool {
        self.keyword_sub.contains(field) && !self.no_keyword_sub.contains(field)
    }

    /// Every mapped leaf field with its kinds (objects left out), by name.
    pub fn leaves(&self) -> impl Iterator<Item = (&str, &BTreeSet<Kind>)> {
        self.kinds.iter().filter(|(_, k)| !k.contains(&Kind::Object)).map(|(n, k)| (n.as_str(), k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flattens_and_detects_conflicts() {
        let m = serde_json::json!({
            "a": {"mappings": {"properties": {
                "http": {"properties": {"status": {"type": "long"}}},
                "app": {"type": "text", "fields": {"keyword": {"type": "keyword"}}},
                "x": {"type": "long"}
            }}},
            "b": {"mappings": {"properties": {"x": {"type": "text"}, "app": {"type": "text"}}}}
        });
        let s = Schema::from_mapping(&m);
        assert_eq!(s.kind("http.status").unwrap(), Some(Kind::Number));
        assert_eq!(s.kind("http").unwrap(), Some(Kind::Object));
        assert_eq!(s.kind("nope").unwrap(), None);
        assert!(s.kind("x").unwrap_err().to_string().contains("field x has different types"));
        assert!(!s.has_keyword_sub("app"), "index b has no app.keyword");
        assert_eq!(s.leaves().map(|(n, _)| n).collect::<Vec<_>>(), vec!["app", "http.status", "x"]);
    }
}
