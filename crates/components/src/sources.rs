//! The list of source types.

use sluice_core::component::SourceSpec;

pub mod beats;
pub mod evtx;
pub mod file;
pub mod fluent_forward;
pub mod gelf;
pub mod generator;
pub mod http;
pub mod internal_metrics;
#[cfg(feature = "kafka")]
pub mod kafka;
pub mod loki;
pub mod otlp;
pub mod sluice;
pub mod splunk_hec;
pub mod syslog_tcp;
pub mod syslog_udp;
pub mod syslog_unix;
pub mod tcp;

/// Every source type, by config `type` name.
pub const SPECS: &[&SourceSpec] = &[
    &beats::SPEC,
    &evtx::SPEC,
    &file::SPEC,
    &fluent_forward::SPEC,
    &gelf::SPEC,
    &generator::SPEC,
    &http::SPEC,
    &internal_metrics::SPEC,
    #[cfg(feature = "kafka")]
    &kafka::SPEC,
    &loki::SPEC,
    &otlp::SPEC,
    &sluice::SPEC,
    &splunk_hec::SPEC,
    &syslog_tcp::SPEC,
    &syslog_udp::SPEC,
    &syslog_unix::SPEC,
    &tcp::SPEC,
];

/// The spec for a `type` name.
pub fn find(name: &str) -> Option<&'static SourceSpec> {
    SPECS.iter().copied().find(|s| s.name == name)
}

#[cfg(test)]
mod registry_tests {
    use super::*;

    #[test]
    fn every_example_builds_and_names_are_unique() {
        crate::testkit::check_registry(SPECS, crate::testkit::build_source);
        for spec in SPECS {
            assert_eq!(find(spec.name).map(|s| s.name), Some(spec.name));
        }
    }
}
