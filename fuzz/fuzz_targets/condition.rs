//! Fuzzes the condition language: parsing arbitrary text never panics and an
//! error points inside the input; a parsed condition `S` obeys the logic the
//! language documents, on several events: `!(S)` is its negation,
//! `(S) and (S)` and `(S) or (S)` are `S`, `(S) xor (S)` is false and
//! `(S) nand (S)` is `!(S)` — so parentheses, precedence and every operator
//! agree with each other, not only "no crash".
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use sluice_core::codec::event_from_json;
use sluice_core::condition::Condition;
use sluice_core::Event;

fn samples() -> &'static [Event] {
    static EVENTS: OnceLock<Vec<Event>> = OnceLock::new();
    EVENTS.get_or_init(|| {
        [
            &br#"{"a":1,"b":"x","tags":["t"],"n":{"m":[1,2.5,null,true]}}"#[..],
            br#"{"status":503,"service":"api","message":"connection refused","tags":["_grokparsefailure"],"ok":false}"#,
            br#"{}"#,
        ]
        .iter()
        .map(|j| event_from_json(j).expect("sample event").0)
        .collect()
    })
}

fn law(src: &str, e: &Event, want: bool) {
    let c = Condition::parse(src).unwrap_or_else(|err| panic!("{src:?} must parse: {err}"));
    assert_eq!(c.eval(e), want, "{src:?}");
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match Condition::parse(text) {
        Ok(c) => {
            for e in samples() {
                let v = c.eval(e);
                law(&format!("!({text})"), e, !v);
                law(&format!("({text}) and ({text})"), e, v);
                law(&format!("({text}) or ({text})"), e, v);
                law(&format!("({text}) xor ({text})"), e, false);
                law(&format!("({text}) nand ({text})"), e, !v);
                law(&format!(" ( {text} ) "), e, v);
            }
        }
        Err(e) => assert!(e.position <= text.len() && text.is_char_boundary(e.position), "{text:?}: {e}"),
    }
});
