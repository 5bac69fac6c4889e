//! Fuzzes JSON event decoding (every ndjson/http/bulk line goes through it)
//! and the queue's batch decoding; what decodes must re-encode and decode to
//! the same event. The lazy path (`event_from_json_bytes`, which keeps the
//! JSON text) must agree with the eager one on every input: same acceptance,
//! same fields, same timestamp, same output text. And what either accepts
//! is readable by every reader (issue #18): its output parses with
//! `serde_json` (the store's search and tail read it so) and nests at most
//! `sluice_core::json::MAX_DEPTH` levels.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use sluice_core::codec::{decode_batch, encode_batch, event_from_json, event_from_json_bytes, to_json_string};

fuzz_target!(|data: &[u8]| {
    let eager = event_from_json(data);
    let lazy = event_from_json_bytes(&Bytes::copy_from_slice(data));
    assert_eq!(eager.is_ok(), lazy.is_ok(), "lazy and eager disagree on acceptance");
    if let (Ok((e, bad)), Ok((l, lbad))) = (&eager, &lazy) {
        assert_eq!(bad, lbad);
        assert_eq!(l.fields(), e.fields());
        let (lt, et) = (to_json_string(l), to_json_string(e));
        serde_json::from_str::<serde_json::Value>(&lt).expect("accepted events must read back with serde_json");
        let (lb, _) = event_from_json(lt.as_bytes()).expect("lazy output must parse");
        assert_eq!(lb.fields(), e.fields(), "lazy output {lt} vs eager {et}");
        let mut buf = Vec::new();
        encode_batch(&[l.clone()], &mut buf);
        let events = decode_batch(&buf).expect("own lazy batch must decode");
        assert_eq!(events[0].fields(), e.fields());
    }
    if let Ok((e, _)) = eager {
        let text = to_json_string(&e);
        let read: serde_json::Value = serde_json::from_str(&text).expect("accepted events must read back with serde_json");
        assert!(read.is_object());
        let fields = sluice_core::Value::Object(e.fields().clone());
        assert!(sluice_core::json::depth(&fields) <= sluice_core::json::MAX_DEPTH, "accepted an event nested too deep");
        let (back, _) = event_from_json(text.as_bytes()).expect("own output must parse");
        assert_eq!(back.fields(), e.fields());
        let mut buf = Vec::new();
        encode_batch(&[e.clone()], &mut buf);
        let events = decode_batch(&buf).expect("own batch must decode");
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].fields(), e.fields());
    }
    if let Ok(events) = decode_batch(data) {
        for e in &events {
            let _ = to_json_string(e);
            let _ = e.fields();
        }
    }
});
