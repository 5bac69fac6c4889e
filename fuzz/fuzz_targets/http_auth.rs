//! Fuzzes the `Authorization` header decoders (Bearer, ApiKey raw or
//! base64 `id:key`, Basic): never panics, and a presented secret is never
//! longer than the header it came from.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_parsers::http_auth::{base64, presented, Scheme};

fuzz_target!(|data: &[u8]| {
    if let Some(p) = presented(data) {
        assert!(p.secrets.len() <= 2);
        for s in &p.secrets {
            assert!(s.len() <= data.len());
        }
        if p.scheme == Scheme::Basic {
            assert_eq!(p.secrets.len(), 1);
        }
    }
    if let Ok(s) = std::str::from_utf8(data) {
        if let Some(d) = base64(s) {
            assert!(d.len() <= s.len() * 3 / 4 + 1);
        }
    }
});
