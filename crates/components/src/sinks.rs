//! The list of sink types.

use sluice_core::component::SinkSpec;

pub mod blackhole;
pub mod elasticsearch;
pub mod encoding;
pub mod file;
pub mod http;
pub mod sluice;
pub mod stdout;
pub mod store;
pub mod tcp;
pub mod udp;

/// Every sink type, by config `type` name.
pub const SPECS: &[&SinkSpec] = &[
    &blackhole::SPEC,
    &elasticsearch::SPEC,
    &file::SPEC,
    &http::SPEC,
    &sluice::SPEC,
    &stdout::SPEC,
    &store::SPEC,
    &tcp::SPEC,
    &udp::SPEC,
];

/// The spec for a `type` name.
pub fn find(name: &str) -> Option<&'static SinkSpec> {
    SPECS.iter().copied().find(|s| s.name == name)
}

#[cfg(test)]
mod registry_tests {
    use super::*;

    #[test]
    fn every_example_builds_and_names_are_unique() {
        crate::testkit::check_registry(SPECS, crate::testkit::build_sink);
        for spec in SPECS {
            assert_eq!(find(spec.name).map(|s| s.name), Some(spec.name));
        }
    }
}
