//! Fuzzes the Splunk HEC body decoder: concatenated event objects and raw
//! lines never panic and keep their limits. The first byte picks the
//! endpoint: even → `/services/collector/event`, odd → `/raw`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_parsers::splunk_hec::{decode_events, split_raw, Limits};

const LIMITS: Limits = Limits { max_events: 64, max_depth: 16 };

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode % 2 == 0 {
        if let Ok(events) = decode_events(rest, LIMITS) {
            assert!(!events.is_empty() && events.len() <= LIMITS.max_events);
        }
    } else if let Ok(lines) = split_raw(rest, LIMITS, 100) {
        assert!(!lines.is_empty() && lines.len() <= LIMITS.max_events);
        assert!(lines.iter().all(|l| l.len() <= 100));
    }
});
