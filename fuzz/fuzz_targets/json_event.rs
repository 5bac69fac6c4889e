//! Fuzzes JSON event decoding (every ndjson/http/bulk line goes through it)
//! and the queue's batch decoding; what decodes must re-encode and decode to
//! the same event. The lazy path (`event_from_json_bytes`, which keeps the
//! JSON text) must agree with the eager one on every input: same acceptance,
//! same fields, same timestamp, same output text. And what either accepts
//! is readable by every reader (issue #18): its output parses with
//! `serde_json` (the store's search and tail read it so) and nests at most
//! `sluice_core::json::MAX_DEPTH` levels. The store's tape
//! (`sluice_core::raw::Tape`) over a lazy event's output either refuses it
//! or reads the same fields as the parser (integers as `f64`), and never
//! accepts text that is not a JSON object.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use sluice_core::codec::{decode_batch, encode_batch, event_from_json, event_from_json_bytes, to_json_string, RESERVED};
use sluice_core::raw::{Tape, TapeValue};
use sluice_core::{Object, Value};

/// A tape value as a [`Value`], numbers as `Float`.
fn tape_value(v: TapeValue<'_>) -> Value {
    match v {
        TapeValue::Null => Value::Null,
        TapeValue::Bool(b) => Value::Bool(b),
        TapeValue::Number(x) => Value::Float(x),
        TapeValue::Str(s) => Value::from(s),
        TapeValue::Array(items) => Value::Array(items.map(tape_value).collect()),
        TapeValue::Object(m) => {
            let mut o = Object::default();
            m.for_each(|(k, v)| {
                o.insert(k, tape_value(v));
            });
            Value::Object(o)
        }
    }
}

/// `v` with every integer as `Float`.
fn floats(v: &Value) -> Value {
    match v {
        Value::Int(i) => Value::Float(*i as f64),
        Value::Array(a) => Value::Array(a.iter().map(floats).collect()),
        Value::Object(o) => {
            let mut out = Object::default();
            o.iter().for_each(|(k, v)| {
                out.insert(k, floats(v));
            });
            Value::Object(out)
        }
        other => other.clone(),
    }
}

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
        if l.raw().is_some() {
            if let Ok(tape) = Tape::build(lt.clone()) {
                let mut read = Object::default();
                tape.members().filter(|(k, _)| !RESERVED.contains(k)).for_each(|(k, v)| {
                    read.insert(k, tape_value(v));
                });
                let mut parsed = Object::default();
                e.fields().iter().filter(|(k, _)| !RESERVED.contains(k)).for_each(|(k, v)| {
                    parsed.insert(k, floats(v));
                });
                assert_eq!(read, parsed, "tape of {lt}");
            }
        }
    }
    if let Ok(tape) = Tape::build(String::from_utf8_lossy(data).into_owned()) {
        let read: serde_json::Value = serde_json::from_str(tape.text()).expect("a tape is built over JSON only");
        assert!(read.is_object());
        assert_eq!(tape.members().count(), read.as_object().map_or(0, |o| o.len()));
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
