//! The list of source types.

use sluice_core::component::SourceSpec;

pub mod generator;
pub mod http;
mod syslog_event;
pub mod syslog_tcp;
pub mod syslog_udp;
pub mod tcp;

/// Every source type, by config `type` name.
pub const SPECS: &[&SourceSpec] = &[&generator::SPEC, &http::SPEC, &syslog_tcp::SPEC, &syslog_udp::SPEC, &tcp::SPEC];

/// The spec for a `type` name.
pub fn find(name: &str) -> Option<&'static SourceSpec> {
    SPECS.iter().copied().find(|s| s.name == name)
}
