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

    /// A zero in a count, size or duration that must be positive is refused
    /// when the table is parsed, naming the key (issue #19: one place for the
    /// check instead of one per component; beats, gelf and fluent_forward
    /// used to name a neighbouring key).
    #[test]
    fn a_zero_is_refused_naming_its_key() {
        let cases = [
            ("beats", "max_batch = 0", "test.beats.max_batch: must be at least 1"),
            ("beats", "max_decompressed_bytes = 0", "test.beats.max_decompressed_bytes: must be greater than 0"),
            (
                "fluent_forward",
                "max_decompressed_bytes = \"0MiB\"",
                "test.fluent_forward.max_decompressed_bytes: must be greater than 0",
            ),
            ("gelf", "max_pending_messages = 0", "test.gelf.max_pending_messages: must be at least 1"),
            ("gelf", "idle_timeout = \"0s\"", "test.gelf.idle_timeout: must be greater than 0"),
            ("loki", "max_labels = 0", "test.loki.max_labels: must be at least 1"),
            ("splunk_hec", "max_channels = 0", "test.splunk_hec.max_channels: must be at least 1"),
            ("generator", "batch_size = 0", "test.generator.batch_size: must be at least 1"),
            ("tcp", "max_line_bytes = 0", "test.tcp.max_line_bytes: must be greater than 0"),
            ("evtx", "scan_interval = \"0ms\"", "test.evtx.scan_interval: must be greater than 0"),
        ];
        crate::testkit::check_refused(SPECS, crate::testkit::build_source, &cases);
    }
}
