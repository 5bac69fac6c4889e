//! Fuzzes the lenient RFC 3164 parser: never panics; it only fails on empty
//! input or a malformed `<PRI>`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_parsers::syslog::{parse_3164, Options, SyslogError};

fuzz_target!(|data: &[u8]| {
    let opts = Options {
        year: Some(2024),
        ..Options::default()
    };
    match parse_3164(data, &opts) {
        Ok(m) => assert!(m.message.as_deref() != Some("")),
        Err(
            SyslogError::Empty
            | SyslogError::InvalidPriority { .. }
            | SyslogError::PriorityOutOfRange { .. },
        ) => {}
        Err(e) => panic!("unexpected 3164 error: {e}"),
    }
});
