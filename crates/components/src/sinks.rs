//! The list of sink types.

use sluice_core::component::SinkSpec;

pub mod blackhole;
pub mod file;
pub mod stdout;

/// Every sink type, by config `type` name.
pub const SPECS: &[&SinkSpec] = &[&blackhole::SPEC, &file::SPEC, &stdout::SPEC];

/// The spec for a `type` name.
pub fn find(name: &str) -> Option<&'static SinkSpec> {
    SPECS.iter().copied().find(|s| s.name == name)
}
