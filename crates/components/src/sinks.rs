//! The list of sink types.

use sluice_core::component::SinkSpec;

pub mod blackhole;
pub mod encoding;
pub mod file;
pub mod http;
pub mod stdout;
pub mod tcp;
pub mod udp;

/// Every sink type, by config `type` name.
pub const SPECS: &[&SinkSpec] = &[&blackhole::SPEC, &file::SPEC, &http::SPEC, &stdout::SPEC, &tcp::SPEC, &udp::SPEC];

/// The spec for a `type` name.
pub fn find(name: &str) -> Option<&'static SinkSpec> {
    SPECS.iter().copied().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_example_builds_and_names_are_unique() {
        let mut names: Vec<&str> = SPECS.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SPECS.len());
        for spec in SPECS {
            if let Err(e) = crate::testkit::build_sink(spec, spec.example) {
                panic!("example of {} does not build: {e}", spec.name);
            }
            assert_eq!(find(spec.name).map(|s| s.name), Some(spec.name));
        }
    }
}
