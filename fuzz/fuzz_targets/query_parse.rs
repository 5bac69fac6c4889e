//! Fuzzes the search query language: parsing arbitrary text never panics,
//! an error points inside the input, a parsed query prints back to the same
//! query, and it evaluates on a sample event without panicking.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use sluice_core::codec::event_from_json;
use sluice_core::Event;
use sluice_query::{matcher, parse};

fn sample() -> &'static Event {
    static EVENT: OnceLock<Event> = OnceLock::new();
    EVENT.get_or_init(|| {
        let (e, _) = event_from_json(
            br#"{"message":"Failed password for root from 10.0.0.1","a":1,"b":"x y","tags":["t"],"n":{"m":[1,2.5,null,true]}}"#,
        )
        .expect("sample event");
        e
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match parse(text) {
        Ok(q) => {
            let printed = q.to_string();
            assert_eq!(parse(&printed).as_ref(), Ok(&q), "{text:?} printed as {printed:?}");
            let _ = matcher::matches(&q, sample());
        }
        Err(e) => assert!(text.is_char_boundary(e.position), "{text:?}: {e}"),
    }
});
