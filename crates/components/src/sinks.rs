//! The list of sink types.

use sluice_core::component::SinkSpec;

pub mod blackhole;
pub mod elasticsearch;
pub mod encoding;
pub mod file;
pub mod http;
#[cfg(feature = "kafka")]
pub mod kafka;
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
    #[cfg(feature = "kafka")]
    &kafka::SPEC,
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

    /// A zero where a positive value is needed is refused when the table is
    /// parsed, naming the key (issue #19).
    #[test]
    fn a_zero_is_refused_naming_its_key() {
        let cases = [
            ("http", "timeout = \"0s\"", "test.http.timeout: must be greater than 0"),
            ("elasticsearch", "total_fields_limit = 0", "test.elasticsearch.total_fields_limit: must be at least 1"),
            ("sluice", "block_timeout = \"0s\"", "test.sluice.block_timeout: must be greater than 0"),
        ];
        crate::testkit::check_refused(SPECS, crate::testkit::build_sink, &cases);
    }
}
