//! `json`: parses a field holding JSON text (default `message`) into fields,
//! at the root or under `target`. Invalid JSON is tagged `_jsonparsefailure`
//! (or dead-lettered) and counted; the original field is kept.

use std::sync::Arc;

use serde::Deserialize;
use sluice_core::component::{BuildContext, Filter, FilterSpec};
use sluice_core::config::{parse_table, ConfigError};
use sluice_core::metrics::ComponentMetrics;
use sluice_core::path::FieldPath;
use sluice_core::{Event, Value};

use super::{failure_config, FailurePolicy};

/// Registry entry.
pub const SPEC: FilterSpec = FilterSpec {
    name: "json",
    summary: "parse JSON text in a field into structured fields",
    example: "source = \"message\"\n",
    build,
};

failure_config! {
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Field holding the JSON text.
    #[serde(default = "default_source")]
    source: FieldPath,
    /// Put the parsed value under this field instead of merging into the root.
    #[serde(default)]
    target: Option<FieldPath>,
    /// Leave events with invalid JSON untouched and untagged.
    #[serde(default)]
    skip_on_invalid_json: bool,
    /// Remove the source field after a successful parse.
    #[serde(default)]
    remove_source: bool,
}
}

fn default_source() -> FieldPath {
    FieldPath::key("message")
}

fn build(value: toml::Value, cx: &BuildContext) -> Result<Box<dyn Filter>, ConfigError> {
    let c: Config = parse_table(value, &cx.path)?;
    let failure = c.failure("_jsonparsefailure");
    Ok(Box::new(Json { c, failure, metrics: Arc::clone(&cx.metrics) }))
}

struct Json {
    c: Config,
    failure: FailurePolicy,
    metrics: Arc<ComponentMetrics>,
}

impl Json {
    fn one(&self, e: &mut Event) -> bool {
        let parsed: Value = match e.get(&self.c.source).and_then(|v| v.as_str()) {
            // The same rules as every source (`sluice_core::json`): no
            // number or nesting a reader of the store could not read back.
            Some(text) => match sluice_core::json::parse_value(text.as_bytes()) {
                Ok(v) => v,
                Err(_) => return false,
            },
            None => return true, // nothing to parse is not a failure (Logstash)
        };
        if self.c.remove_source {
            e.remove(&self.c.source);
        }
        match &self.c.target {
            Some(t) => e.insert(t, parsed),
            None => match parsed.into_object() {
                Some(obj) => {
                    for (k, v) in obj.iter() {
                        e.fields_mut().insert(k, v.clone());
                    }
                }
                None => return false, // a scalar cannot be merged into the root
            },
        }
        true
    }
}

impl Filter for Json {
    fn process(&self, events: &mut Vec<Event>) {
        self.metrics.events_in.add(events.len() as u64);
        for e in events.iter_mut() {
            if !self.one(e) {
                self.metrics.events_failed.inc();
                if !self.c.skip_on_invalid_json {
                    self.failure.apply(e);
                }
            }
        }
        self.metrics.events_out.add(events.len() as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::run_filter;
    use sluice_core::codec::to_json_string;

    #[test]
    fn parses_into_root_and_target() {
        let out = run_filter(&SPEC, "", vec![Event::from_message(r#"{"a":1,"b":{"c":"d"}}"#)]);
        assert_eq!(out[0].get(&FieldPath::parse("b.c").unwrap()).and_then(|v| v.as_str()), Some("d"));
        let out = run_filter(&SPEC, "target = \"doc\"\nremove_source = true", vec![Event::from_message(r#"[1,2]"#)]);
        let j = to_json_string(&out[0]);
        assert!(j.ends_with(r#""doc":[1,2]}"#), "{j}");
        assert!(out[0].message().is_none());
    }

    #[test]
    fn failures_are_tagged_or_dead_lettered() {
        let out = run_filter(&SPEC, "", vec![Event::from_message("{nope"), Event::from_message("5")]);
        assert!(out.iter().all(|e| e.has_tag("_jsonparsefailure") && !e.dead_letter));
        assert_eq!(out[0].message(), Some("{nope"));
        let out = run_filter(
            &SPEC,
            "on_failure = \"dead_letter\"\ntag_on_failure = [\"bad\"]",
            vec![Event::from_message("{")],
        );
        assert!(out[0].dead_letter && out[0].has_tag("bad"));
        let out = run_filter(&SPEC, "skip_on_invalid_json = true", vec![Event::from_message("{")]);
        assert!(!out[0].has_tag("_jsonparsefailure"));
    }
}
