//! The list of filter types.

use sluice_core::component::FilterSpec;

pub mod drop;
pub mod json;
pub mod mutate;

/// Every filter type, by config `type` name.
pub const SPECS: &[&FilterSpec] = &[&drop::SPEC, &json::SPEC, &mutate::SPEC];

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
