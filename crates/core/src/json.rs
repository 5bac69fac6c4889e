//! What JSON an event may hold: the one definition every decoder applies at
//! ingest, so that whatever a source accepts, every reader (the store's
//! search, fields and live tail, sinks, peers) can read back.
//!
//! Why: the search API reads stored events with `serde_json`, which refuses
//! numbers beyond `f64` (`1e400`) and nesting of 128 levels or more, while
//! the ingest parsers accepted both — one such event made every search page
//! holding it fail (issue #18). Deciding at ingest, once, keeps every later
//! reader simple; `docs/adr/0055-one-definition-of-a-valid-event.md`.
//!
//! The rules:
//! - **Numbers** stay numbers when they are 64-bit integers (an integer
//!   literal within `i64` or `u64`; above `i64::MAX` sluice holds it as a
//!   double, as before) or finite doubles (a literal with a fraction or an
//!   exponent). Any other number literal — an integer beyond 64 bits
//!   (`18446744073709551616`, `-9223372036854775809`), or a literal beyond
//!   the double range (`1e400`, `-1e400`, `1e99999`) — is kept as a **string
//!   of its literal text**, so no digit is lost and every JSON reader can
//!   read it. (Tiny literals such as `1e-400` round to `0`, as in every JSON
//!   parser.)
//! - **Nesting**: at most [`MAX_DEPTH`] levels of objects and arrays,
//!   counting the event object itself. A deeper line is not an event: the
//!   line sources keep it whole as `message` tagged `_jsonparsefailure` and
//!   count it (`events_failed`); `_bulk` answers that item with a `400`.
//!
//! The fast path ([`crate::raw::scan`]) refuses the same numbers and depths,
//! so such lines take the eager path here and come out the same.

use crate::value::{Object, Value};

/// Deepest nesting of objects and arrays in an event, the event object
/// itself counted as level 1 (`{"a":[{}]}` has three). Readers that cap at
/// 128 (`serde_json`) keep a margin.
pub const MAX_DEPTH: usize = 100;

/// Why JSON text is not an acceptable event value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonError {
    /// The text is not JSON.
    #[error("invalid json at byte {offset}: {message}")]
    Syntax {
        /// Byte offset of the problem, when known.
        offset: usize,
        /// The parser's message.
        message: String,
    },
    /// Valid JSON nested deeper than [`MAX_DEPTH`].
    #[error("json nested deeper than {limit} levels of objects and arrays")]
    TooDeep {
        /// The limit ([`MAX_DEPTH`]).
        limit: usize,
    },
}

fn syntax(e: sonic_rs::Error) -> JsonError {
    JsonError::Syntax { offset: e.column().saturating_sub(1), message: e.to_string() }
}

/// Parses JSON text into a [`Value`] under the rules above.
pub fn parse_value(bytes: &[u8]) -> Result<Value, JsonError> {
    match sonic_rs::from_slice::<Value>(bytes) {
        Ok(v) => match inspect(&v, 1) {
            Inspect::Fine => Ok(v),
            Inspect::TooDeep => Err(JsonError::TooDeep { limit: MAX_DEPTH }),
            // A float that may have come from an integer literal beyond i64:
            // look at the text; usually it was a float literal after all.
            Inspect::BigIntegral => match quote_unrepresentable(bytes) {
                None => Ok(v),
                Some(text) => reparse(&text),
            },
        },
        // A number beyond the double range is a parse error to sonic-rs.
        Err(e) => match quote_unrepresentable(bytes) {
            Some(text) => reparse(&text),
            None => Err(syntax(e)),
        },
    }
}

fn reparse(text: &[u8]) -> Result<Value, JsonError> {
    let v = sonic_rs::from_slice::<Value>(text).map_err(syntax)?;
    match inspect(&v, 1) {
        Inspect::TooDeep => Err(JsonError::TooDeep { limit: MAX_DEPTH }),
        Inspect::Fine | Inspect::BigIntegral => Ok(v),
    }
}

/// What a walk over a parsed value found.
#[derive(Debug, PartialEq, Eq)]
enum Inspect {
    Fine,
    TooDeep,
    /// An integral float beyond `i64` (from `1e19`, or from a long integer literal).
    BigIntegral,
}

/// Walks containers only; `level` is the nesting level of `v` if it is one.
fn inspect(v: &Value, level: usize) -> Inspect {
    let mut found = Inspect::Fine;
    let mut visit = |x: &Value| {
        match x {
            Value::Array(_) | Value::Object(_) => {
                if level + 1 > MAX_DEPTH {
                    return Inspect::TooDeep;
                }
                match inspect(x, level + 1) {
                    Inspect::TooDeep => return Inspect::TooDeep,
                    Inspect::BigIntegral => found = Inspect::BigIntegral,
                    Inspect::Fine => {}
                }
            }
            Value::Float(f) if is_big_integral(*f) => found = Inspect::BigIntegral,
            _ => {}
        }
        Inspect::Fine
    };
    let deep = match v {
        Value::Array(a) => a.iter().map(&mut visit).any(|r| r == Inspect::TooDeep),
        Value::Object(o) => o.iter().map(|(_, x)| x).map(&mut visit).any(|r| r == Inspect::TooDeep),
        other => visit(other) == Inspect::TooDeep,
    };
    if deep {
        Inspect::TooDeep
    } else {
        found
    }
}

fn is_big_integral(f: f64) -> bool {
    // From 2^64 up (or -2^63 down: the nearest double to -2^63 - 1 is -2^63)
    // a literal may have been an integer no 64-bit type holds; all such
    // doubles are integral.
    f >= 18_446_744_073_709_551_616.0 || f <= -9_223_372_036_854_775_808.0
}

/// Parses JSON text that must be an object (an event's fields).
pub fn parse_object(bytes: &[u8]) -> Result<Result<Object, &'static str>, JsonError> {
    Ok(match parse_value(bytes)? {
        Value::Object(o) => Ok(o),
        other => Err(other.type_name()),
    })
}

/// Whether a number literal (JSON grammar already checked) stays a number
/// under the rules above.
pub fn number_is_representable(literal: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(literal) else { return false };
    if literal.iter().any(|b| matches!(b, b'.' | b'e' | b'E')) {
        text.parse::<f64>().is_ok_and(f64::is_finite)
    } else {
        text.parse::<i64>().is_ok() || text.parse::<u64>().is_ok()
    }
}

/// A copy of `bytes` with every number literal outside strings that is not
/// [`number_is_representable`] wrapped in quotes; `None` when there is none
/// (or the text is not JSON enough to tell). Only lexes: grammar is the
/// parser's job.
fn quote_unrepresentable(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                i += 1;
                while i < bytes.len() && matches!(bytes[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') {
                    i += 1;
                }
                let literal = &bytes[start..i];
                if is_number_literal(literal) && !number_is_representable(literal) {
                    let o = out.get_or_insert_with(|| Vec::with_capacity(bytes.len() + 16));
                    o.extend_from_slice(&bytes[copied..start]);
                    o.push(b'"');
                    o.extend_from_slice(literal);
                    o.push(b'"');
                    copied = i;
                }
            }
            _ => i += 1,
        }
    }
    let mut o = out?;
    o.extend_from_slice(&bytes[copied.min(bytes.len())..]);
    Some(o)
}

/// Whether `b` is exactly one JSON number (RFC 8259 grammar).
fn is_number_literal(b: &[u8]) -> bool {
    let mut i = usize::from(b.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let s = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - s
    };
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            digits(&mut i);
        }
        _ => return false,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Nesting level of `v`: 0 for a scalar, 1 for a flat object or array.
pub fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.iter().map(|(_, x)| depth(x)).max().unwrap_or(0),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(text: &str, key: &str) -> Value {
        parse_value(text.as_bytes()).unwrap().as_object().unwrap().get(key).cloned().unwrap()
    }

    #[test]
    fn numbers_beyond_the_double_range_keep_their_text_as_a_string() {
        for lit in ["1e400", "-1e400", "1e99999", "1.5E+309", "-0.1e401"] {
            let text = format!(r#"{{"message":"p","a":{lit},"b":[{lit}]}}"#);
            assert_eq!(field(&text, "a"), Value::from(lit), "{text}");
            assert_eq!(field(&text, "b"), Value::Array(vec![Value::from(lit)]), "{text}");
            assert_eq!(field(&text, "message"), Value::from("p"));
        }
    }

    #[test]
    fn integers_beyond_64_bits_keep_their_digits() {
        for lit in ["18446744073709551616", "123456789012345678901234567890", "-9223372036854775809", &"7".repeat(400)]
        {
            let text = format!(r#"{{"a":{lit}}}"#);
            assert_eq!(field(&text, "a"), Value::from(lit), "{text}");
        }
        // The edges of i64 stay numbers; float literals stay floats.
        assert_eq!(field(r#"{"a":9223372036854775807}"#, "a"), Value::Int(i64::MAX));
        assert_eq!(field(r#"{"a":-9223372036854775808}"#, "a"), Value::Int(i64::MIN));
        assert_eq!(field(r#"{"a":18446744073709551615}"#, "a"), Value::Float(18446744073709551615.0));
        assert_eq!(field(r#"{"a":1e19}"#, "a"), Value::Float(1e19));
        assert_eq!(field(r#"{"a":1.7976931348623157e308}"#, "a"), Value::Float(f64::MAX));
        assert_eq!(field(r#"{"a":1e-400}"#, "a"), Value::Float(0.0));
        // Digits inside strings are never touched.
        let s = field(r#"{"a":"1e400 \" 99999999999999999999","b":1e400}"#, "a");
        assert_eq!(s.as_str(), Some("1e400 \" 99999999999999999999"));
    }

    #[test]
    fn nesting_is_limited_counting_the_event_object() {
        let nested = |levels: usize| format!("{{\"a\":{}1{}}}", "[".repeat(levels - 1), "]".repeat(levels - 1));
        assert!(parse_value(nested(MAX_DEPTH).as_bytes()).is_ok());
        assert_eq!(depth(&parse_value(nested(MAX_DEPTH).as_bytes()).unwrap()), MAX_DEPTH);
        for levels in [MAX_DEPTH + 1, 127, 128, 200, 255, 256, 300] {
            let e = parse_value(nested(levels).as_bytes()).unwrap_err();
            assert!(matches!(e, JsonError::TooDeep { limit: MAX_DEPTH } | JsonError::Syntax { .. }), "{levels}: {e}");
            if levels < 255 {
                assert_eq!(e.to_string(), "json nested deeper than 100 levels of objects and arrays");
            }
        }
        // Depth and a big number together: the rewrite does not hide the depth.
        let deep_big = format!("{{\"a\":{}1e400{}}}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(matches!(parse_value(deep_big.as_bytes()), Err(JsonError::TooDeep { .. })));
    }

    #[test]
    fn syntax_errors_stay_syntax_errors() {
        for text in ["{", r#"{"a":1e}"#, r#"{"a":--1}"#, r#"{"a":1e400"#, "\"\\", r#"{"a":1-2}"#, r#"{"a":01e400}"#] {
            assert!(matches!(parse_value(text.as_bytes()), Err(JsonError::Syntax { .. })), "{text}");
        }
    }

    #[test]
    fn every_accepted_value_is_read_back_by_serde_json() {
        for text in [
            r#"{"message":"p","a":1e400}"#,
            r#"{"a":-1e400,"b":1e99999,"c":123456789012345678901234567890,"d":[18446744073709551616]}"#,
        ] {
            let v = parse_value(text.as_bytes()).unwrap();
            let back: serde_json::Value = serde_json::from_str(&v.to_json()).unwrap();
            assert!(back.is_object(), "{text}");
        }
    }
}
