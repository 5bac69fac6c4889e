//! The list of source types.

use sluice_core::component::SourceSpec;

pub mod generator;
pub mod http;
pub mod tcp;

/// Every source type, by config `type` name.
pub const SPECS: &[&SourceSpec] = &[&generator::SPEC, &http::SPEC, &tcp::SPEC];

/// The spec for a `type` name.
pub fn find(name: &str) -> Option<&'static SourceSpec> {
    SPECS.iter().copied().find(|s| s.name == name)
}
