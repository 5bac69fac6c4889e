//! The list of filter types.

use sluice_core::component::FilterSpec;

pub mod conditional;
pub mod cost;
pub mod date;
pub mod drop;
pub mod grok;
pub mod json;
pub mod kv;
pub mod metrics;
pub mod mutate;
pub mod remap;

/// Every filter type, by config `type` name.
pub const SPECS: &[&FilterSpec] = &[
    &conditional::SPEC,
    &cost::SPEC,
    &date::SPEC,
    &drop::SPEC,
    &grok::SPEC,
    &json::SPEC,
    &kv::SPEC,
    &metrics::SPEC,
    &mutate::SPEC,
    &remap::SPEC,
];

/// The spec for a `type` name.
pub fn find(name: &str) -> Option<&'static FilterSpec> {
    SPECS.iter().copied().find(|s| s.name == name)
}

/// What a filter does with an event it cannot handle.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    /// Keep the event in the flow with the failure tags added (default).
    #[default]
    Tag,
    /// Tag it and send it only to the pipeline's `dead_letter` sinks.
    DeadLetter,
}

/// A filter's `Config` struct (`#[derive(Deserialize)]`,
/// `#[serde(deny_unknown_fields)]` given by the caller) with the fields it
/// names plus `tag_on_failure` and `on_failure`; and `Config::failure`, the
/// [`FailurePolicy`] they make with the filter's default tag. (A macro: the
/// configs deny unknown fields, which `#[serde(flatten)]` does not support.)
macro_rules! failure_config {
    ($(#[$m:meta])* struct $name:ident { $($(#[$fm:meta])* $f:ident : $t:ty,)* }) => {
        $(#[$m])*
        struct $name {
            $($(#[$fm])* $f: $t,)*
            /// Tags added on failure (default: the filter's own tag).
            #[serde(default)]
            tag_on_failure: Option<Vec<String>>,
            /// `tag` (default) or `dead_letter`.
            #[serde(default)]
            on_failure: $crate::filters::OnFailure,
        }

        impl $name {
            /// `tag_on_failure` (or `[default_tag]`) plus `on_failure`.
            fn failure(&self, default_tag: &str) -> $crate::filters::FailurePolicy {
                $crate::filters::FailurePolicy::new(self.tag_on_failure.clone(), default_tag, self.on_failure)
            }
        }
    };
}
pub(crate) use failure_config;

/// Tags and routing for failed events, shared by every filter that can fail.
#[derive(Debug, Clone)]
pub struct FailurePolicy {
    tags: Vec<String>,
    on_failure: OnFailure,
}

impl FailurePolicy {
    /// `tag_on_failure` (or `[default_tag]`) plus `on_failure`.
    pub fn new(tag_on_failure: Option<Vec<String>>, default_tag: &str, on_failure: OnFailure) -> Self {
        Self { tags: tag_on_failure.unwrap_or_else(|| vec![default_tag.to_string()]), on_failure }
    }

    /// Marks `event` as failed.
    pub fn apply(&self, event: &mut sluice_core::Event) {
        for t in &self.tags {
            event.add_tag(t);
        }
        if self.on_failure == OnFailure::DeadLetter {
            event.dead_letter = true;
        }
    }
}

/// Builds an ordered filter list (`filters = [...]`, or an `if` block's
/// branches). Each entry is a table with `type`, an optional `id` (default
/// `<index>_<type>`) and the filter's own keys. Every error is collected.
pub fn build_chain(
    list: &[toml::Value],
    cx: &sluice_core::component::BuildContext,
    path: &str,
    id_prefix: &str,
) -> Result<Vec<Box<dyn sluice_core::component::Filter>>, Vec<sluice_core::config::ConfigError>> {
    use sluice_core::config::ConfigError;
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, item) in list.iter().enumerate() {
        let item_path = format!("{path}[{i}]");
        let Some(table) = item.as_table() else {
            errors.push(ConfigError::new(item_path, "expected a table with a `type`"));
            continue;
        };
        let mut table = table.clone();
        let type_name = match table.remove("type") {
            Some(toml::Value::String(s)) => s,
            Some(_) => {
                errors.push(ConfigError::new(format!("{item_path}.type"), "expected a string"));
                continue;
            }
            None => {
                errors.push(ConfigError::new(item_path, "missing `type`"));
                continue;
            }
        };
        let id = match table.remove("id") {
            Some(toml::Value::String(s)) => s,
            Some(_) => {
                errors.push(ConfigError::new(format!("{item_path}.id"), "expected a string"));
                continue;
            }
            None => format!("{id_prefix}{i}_{type_name}"),
        };
        let Some(spec) = find(&type_name) else {
            let known: Vec<&str> = SPECS.iter().map(|s| s.name).collect();
            errors.push(ConfigError::new(
                format!("{item_path}.type"),
                format!("unknown filter type {type_name:?} (known: {})", known.join(", ")),
            ));
            continue;
        };
        let child = cx.child("filter", &id, spec.name, &item_path);
        match (spec.build)(toml::Value::Table(table), &child) {
            Ok(f) => out.push(f),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod registry_tests {
    use super::*;

    #[test]
    fn every_example_builds_and_names_are_unique() {
        // `remap` builds only with the `remap` feature (VRL); without it, its
        // own test checks the error.
        let built: Vec<&FilterSpec> = SPECS.iter().copied().filter(|s| s.name != "remap" || remap::AVAILABLE).collect();
        crate::testkit::check_registry(&built, crate::testkit::build_filter);
        for spec in SPECS {
            assert_eq!(find(spec.name).map(|s| s.name), Some(spec.name));
        }
    }

    /// A zero flush interval is refused when the table is parsed, naming the
    /// key with the same words as every other positive key (issue #19).
    #[test]
    fn a_zero_is_refused_naming_its_key() {
        let spec = find("metrics").unwrap();
        match crate::testkit::build_filter(spec, "flush_interval = \"0s\"\nmeter = [\"events\"]") {
            Ok(_) => panic!("metrics with flush_interval = 0s built"),
            Err(e) => assert_eq!(e.to_string(), "test.metrics.flush_interval: must be greater than 0"),
        }
    }
}
