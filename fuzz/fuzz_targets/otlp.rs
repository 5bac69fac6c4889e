//! Fuzzes the OTLP logs decoder: OTLP/JSON and protobuf
//! `ExportLogsServiceRequest`s never panic, keep their limits, and account
//! for every record (kept + rejected). The first byte picks the encoding:
//! even → JSON, odd → protobuf.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_parsers::otlp::{decode_json, decode_protobuf, response_json, response_protobuf, Limits};

const LIMITS: Limits = Limits { max_records: 64, max_attributes: 16, max_depth: 8 };

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let decoded = if mode % 2 == 0 { decode_json(rest, LIMITS) } else { decode_protobuf(rest, LIMITS) };
    if let Ok(d) = decoded {
        assert!(d.records.len() as u64 + d.rejected <= LIMITS.max_records as u64);
        assert_eq!(d.rejected > 0, d.error.is_some());
        let _ = (response_json(&d), response_protobuf(&d));
    }
});
