//! Fuzzes JSON event decoding (every ndjson/http/bulk line goes through it)
//! and the queue's batch decoding; what decodes must re-encode and decode to
//! the same event.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_core::codec::{decode_batch, encode_batch, event_from_json, to_json_string};

fuzz_target!(|data: &[u8]| {
    if let Ok((e, _)) = event_from_json(data) {
        let text = to_json_string(&e);
        let (back, _) = event_from_json(text.as_bytes()).expect("own output must parse");
        assert_eq!(back.fields, e.fields);
        let mut buf = Vec::new();
        encode_batch(&[e.clone()], &mut buf);
        let events = decode_batch(&buf).expect("own batch must decode");
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].fields, e.fields);
    }
    let _ = decode_batch(data);
});
