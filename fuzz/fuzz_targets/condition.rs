//! Fuzzes the condition language: parsing arbitrary text never panics, and a
//! parsed condition evaluates on a sample event without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_core::codec::event_from_json;
use sluice_core::condition::Condition;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(c) = Condition::parse(text) {
        let (e, _) = event_from_json(br#"{"a":1,"b":"x","tags":["t"],"n":{"m":[1,2.5,null,true]}}"#)
            .expect("sample event");
        let _ = c.eval(&e);
    }
});
