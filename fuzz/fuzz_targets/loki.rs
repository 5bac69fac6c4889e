//! Fuzzes the Loki push decoder: JSON bodies, snappy-compressed protobuf
//! and label sets never panic and keep their limits. The first byte picks
//! the part: 0 mod 3 → JSON, 1 → snappy protobuf, 2 → a label set.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_parsers::loki::{decode_json, decode_protobuf, parse_labels, Limits};

const LIMITS: Limits = Limits { max_entries: 64, max_labels: 16, max_depth: 16, max_decompressed: 64 << 10 };

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    match mode % 3 {
        0 => {
            if let Ok(e) = decode_json(rest, LIMITS) {
                assert!(e.len() <= LIMITS.max_entries);
            }
        }
        1 => {
            if let Ok(e) = decode_protobuf(rest, LIMITS) {
                assert!(e.len() <= LIMITS.max_entries);
            }
        }
        _ => {
            if let Ok(l) = parse_labels(&String::from_utf8_lossy(rest), LIMITS.max_labels) {
                assert!(l.len() <= LIMITS.max_labels);
            }
        }
    }
});
