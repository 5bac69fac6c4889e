//! Fuzzes the strict RFC 5424 parser and auto-detection: must never panic,
//! and successful parses must satisfy basic invariants.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_parsers::syslog::{parse, parse_5424, Options};

fuzz_target!(|data: &[u8]| {
    let opts = Options::default();
    if let Ok(m) = parse_5424(data, &opts) {
        assert!(m.priority.is_none_or(|p| p <= 191));
        assert!(m.version.is_some());
        assert!(m.message.as_deref() != Some(""));
    }
    let _ = parse(data, &opts);
});
