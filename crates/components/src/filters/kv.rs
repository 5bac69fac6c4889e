//! `kv`: extracts `key=value` pairs from a text field (default `message`)
//! into fields, at the root or under `target`, with the options (and names)
//! of Logstash's kv filter: `field_split`, `value_split`, `include_keys`,
//! `exclude_keys`, `prefix`, `trim_key`, `trim_value`, `remove_char_key`,
//! `remove_char_value`, `transform_key`, `transform_value`,
//! `include_brackets`, `allow_duplicate_values`, `allow_empty_values`,
//! `whitespace`, `default_keys`.
//!
//! Values are strings; a key seen twice becomes an array, as in Logstash.
//! Nothing to parse (missing field, no pairs) is not a failure; a source field
//! that is not text is tagged `_kv_filter_error` (or dead-lettered) and
//! counted in `events_failed`.
//!
//! Why a wrapper: the parsing lives in `sluice_parsers::kv` (pure, fuzzed);
//! this file only maps config names and merges pairs into the event.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use sluice_core::component::{BuildContext, Filter, FilterSpec};
use sluice_core::config::{parse_table, ConfigError};
use sluice_core::metrics::ComponentMetrics;
use sluice_core::path::FieldPath;
use sluice_core::{Event, Object, Str, Value};
use sluice_parsers::kv::{KvOptions, KvParser, Transform, Whitespace};

use super::{failure_config, FailurePolicy};

/// Registry entry.
pub const SPEC: FilterSpec = FilterSpec {
    name: "kv",
    summary: "extract key=value pairs from a text field",
    example: "source = \"message\"\nfield_split = \" &\"\nprefix = \"kv_\"\n",
    build,
};

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum TransformName {
    Lowercase,
    Uppercase,
    Capitalize,
}

impl From<TransformName> for Transform {
    fn from(t: TransformName) -> Self {
        match t {
            TransformName::Lowercase => Transform::Lowercase,
            TransformName::Uppercase => Transform::Uppercase,
            TransformName::Capitalize => Transform::Capitalize,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
enum WhitespaceName {
    #[default]
    Lenient,
    Strict,
}

failure_config! {
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Field holding the text.
    #[serde(default = "default_source")]
    source: FieldPath,
    /// Put the pairs under this field instead of the root.
    #[serde(default)]
    target: Option<FieldPath>,
    /// Characters separating pairs (default `" "`).
    #[serde(default)]
    field_split: Option<String>,
    /// Characters separating key from value (default `"="`).
    #[serde(default)]
    value_split: Option<String>,
    #[serde(default)]
    include_brackets: Option<bool>,
    #[serde(default)]
    trim_key: String,
    #[serde(default)]
    trim_value: String,
    #[serde(default)]
    remove_char_key: String,
    #[serde(default)]
    remove_char_value: String,
    #[serde(default)]
    transform_key: Option<TransformName>,
    #[serde(default)]
    transform_value: Option<TransformName>,
    #[serde(default)]
    include_keys: Vec<String>,
    #[serde(default)]
    exclude_keys: Vec<String>,
    #[serde(default)]
    prefix: String,
    #[serde(default)]
    allow_duplicate_values: Option<bool>,
    #[serde(default)]
    allow_empty_values: bool,
    #[serde(default)]
    whitespace: WhitespaceName,
    /// Fields set when the text does not contain them.
    #[serde(default)]
    default_keys: BTreeMap<String, String>,
}
}

fn default_source() -> FieldPath {
    FieldPath::key("message")
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Filter>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let failure = c.failure("_kv_filter_error");
    let d = KvOptions::default();
    let opts = KvOptions {
        field_split: c.field_split.unwrap_or(d.field_split),
        value_split: c.value_split.unwrap_or(d.value_split),
        include_brackets: c.include_brackets.unwrap_or(d.include_brackets),
        trim_key: c.trim_key,
        trim_value: c.trim_value,
        remove_char_key: c.remove_char_key,
        remove_char_value: c.remove_char_value,
        transform_key: c.transform_key.map(Transform::from),
        transform_value: c.transform_value.map(Transform::from),
        include_keys: c.include_keys,
        exclude_keys: c.exclude_keys,
        prefix: c.prefix,
        allow_duplicate_values: c.allow_duplicate_values.unwrap_or(d.allow_duplicate_values),
        allow_empty_values: c.allow_empty_values,
        whitespace: match c.whitespace {
            WhitespaceName::Lenient => Whitespace::Lenient,
            WhitespaceName::Strict => Whitespace::Strict,
        },
    };
    let parser = KvParser::new(opts).map_err(|e| {
        let key = if e.to_string().starts_with("value_split") { "value_split" } else { "field_split" };
        cx.error(key, e.to_string())
    })?;
    Ok(Box::new(Kv {
        parser,
        source: c.source,
        target: c.target,
        default_keys: c.default_keys.into_iter().collect(),
        failure,
        metrics: Arc::clone(&cx.metrics),
    }))
}

struct Kv {
    parser: KvParser,
    source: FieldPath,
    target: Option<FieldPath>,
    default_keys: Vec<(String, String)>,
    failure: FailurePolicy,
    metrics: Arc<ComponentMetrics>,
}

/// Adds a pair to `obj`; a repeated key becomes an array of its values.
fn add_pair(obj: &mut Object, key: &str, value: &str) {
    match obj.get_mut(key) {
        None => obj.push_unique(Str::new(key), Value::from(value)),
        Some(Value::Array(arr)) => arr.push(Value::from(value)),
        Some(existing) => {
            let old = std::mem::take(existing);
            *existing = Value::Array(vec![old, Value::from(value)]);
        }
    }
}

impl Kv {
    /// Parses `e`'s source into an object; `Err` if the source is not text.
    fn extract(&self, e: &Event) -> Result<Object, ()> {
        let mut obj = Object::new();
        match e.get(&self.source) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => {
                for (k, v) in self.parser.parse(s) {
                    add_pair(&mut obj, &k, &v);
                }
            }
            // Logstash parses each string of an array.
            Some(Value::Array(arr)) => {
                for item in arr {
                    let s = item.as_str().ok_or(())?;
                    for (k, v) in self.parser.parse(s) {
                        add_pair(&mut obj, &k, &v);
                    }
                }
            }
            Some(_) => return Err(()),
        }
        for (k, v) in &self.default_keys {
            if !obj.contains_key(k) {
                obj.push_unique(Str::new(k), Value::from(v.as_str()));
            }
        }
        Ok(obj)
    }

    fn one(&self, e: &mut Event) -> bool {
        let obj = match self.extract(e) {
            Ok(o) => o,
            Err(()) => return false,
        };
        if obj.is_empty() {
            return true;
        }
        let dest = match &self.target {
            None => e.fields_mut(),
            Some(t) => {
                if !e.get(t).is_some_and(Value::is_object) {
                    e.insert(t, Value::Object(Object::with_capacity(obj.len())));
                }
                // Just made an object, so the `else` cannot happen.
                let Some(o) = e.get_mut(t).and_then(Value::as_object_mut) else { return false };
                o
            }
        };
        for (k, v) in obj {
            dest.insert(&k, v);
        }
        true
    }
}

impl Filter for Kv {
    fn process(&self, events: &mut Vec<Event>) {
        self.metrics.events_in.add(events.len() as u64);
        for e in events.iter_mut() {
            if !self.one(e) {
                self.metrics.events_failed.inc();
                self.failure.apply(e);
            }
        }
        self.metrics.events_out.add(events.len() as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{build_filter, run_filter};
    use sluice_core::codec::{event_from_json, to_json_string};

    fn s(e: &Event, p: &str) -> String {
        e.get(&FieldPath::parse(p).unwrap()).map(|v| v.to_json()).unwrap_or_else(|| "<none>".into())
    }

    #[test]
    fn typical_line_values_are_strings() {
        let out = run_filter(&SPEC, "", vec![Event::from_message(r#"a=1 b="two words" c=x=y d="#)]);
        let e = &out[0];
        assert_eq!(s(e, "a"), r#""1""#);
        assert_eq!(s(e, "b"), r#""two words""#);
        assert_eq!(s(e, "c"), r#""x=y""#);
        assert_eq!(s(e, "d"), "<none>", "empty values are skipped by default");
        assert_eq!(e.message(), Some(r#"a=1 b="two words" c=x=y d="#));
        assert!(!e.has_tag("_kv_filter_error"));
    }

    #[test]
    fn prefix_include_exclude_target() {
        let line = r#"a=1 b="two words" c=3 d=4"#;
        let out = run_filter(
            &SPEC,
            "prefix = \"kv_\"\ninclude_keys = [\"a\", \"b\", \"c\"]\nexclude_keys = [\"c\"]",
            vec![Event::from_message(line)],
        );
        let j = to_json_string(&out[0]);
        assert!(j.ends_with(r#""message":"a=1 b=\"two words\" c=3 d=4","kv_a":"1","kv_b":"two words"}"#), "{j}");
        let out = run_filter(&SPEC, "target = \"[kv][pairs]\"", vec![Event::from_message("x=1 y=2")]);
        assert_eq!(s(&out[0], "kv.pairs"), r#"{"x":"1","y":"2"}"#);
    }

    #[test]
    fn splits_trim_transform_duplicates_defaults() {
        let out = run_filter(
            &SPEC,
            "source = \"q\"\nfield_split = \"&\"\nvalue_split = \":\"\ntrim_value = \"<>\"\ntransform_key = \"uppercase\"\ndefault_keys = { FROM = \"nobody\", Z = \"zz\" }",
            vec![event_from_json(br#"{"q":"k:<v>&k:w&z:9"}"#).unwrap().0],
        );
        assert_eq!(s(&out[0], "K"), r#"["v","w"]"#);
        assert_eq!(s(&out[0], "Z"), r#""9""#);
        assert_eq!(s(&out[0], "FROM"), r#""nobody""#);
    }

    #[test]
    fn non_text_source_is_a_failure_but_nothing_to_parse_is_not() {
        let out = run_filter(&SPEC, "source = \"n\"", vec![event_from_json(br#"{"n":5}"#).unwrap().0]);
        assert!(out[0].has_tag("_kv_filter_error"));
        assert_eq!(s(&out[0], "n"), "5");
        let out =
            run_filter(&SPEC, "source = \"n\"", vec![Event::from_message("a=1"), Event::from_message("no pairs")]);
        assert!(out.iter().all(|e| !e.has_tag("_kv_filter_error")));
        assert_eq!(s(&out[0], "a"), "<none>");
        let out = run_filter(
            &SPEC,
            "on_failure = \"dead_letter\"",
            vec![event_from_json(br#"{"message":{"a":1}}"#).unwrap().0],
        );
        assert!(out[0].dead_letter && out[0].has_tag("_kv_filter_error"));
    }

    #[test]
    fn config_errors() {
        let e = build_filter(&SPEC, "field_split = \"=\"").err().unwrap();
        assert_eq!(e.to_string(), "test.kv.field_split: character '=' is in both field_split and value_split");
        let e = build_filter(&SPEC, "recursive = true").err().unwrap();
        assert!(e.to_string().contains("unknown field `recursive`"), "{e}");
        let e = build_filter(&SPEC, "transform_key = \"snake\"").err().unwrap();
        assert_eq!(e.path, "test.kv.transform_key");
    }
}
