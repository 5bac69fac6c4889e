//! Events kept as their JSON text until a field is needed.
//!
//! Why: building an owned, mutable object out of a 400-byte JSON line costs
//! about 2 µs — most of what a passthrough pipeline spends per event. Most
//! events that arrive as JSON are never looked at field by field on the way
//! through (passthrough, forwarding, a queue on disk and back), so sources
//! validate the line once with a SIMD scan, keep its bytes (a slice of the read
//! buffer, no copy) and parse it into an [`Object`] only when something asks
//! for a field (`Event::fields`). Writers that only need the JSON text
//! (`codec::write_json`, the queue encoding) copy the bytes as they are.
//!
//! A [`RawJson`] is always a complete, valid JSON object. Its fields are the
//! object's members except the one member named by `skip`: the `@timestamp`
//! that became the event's typed timestamp. Objects with other reserved keys
//! (`@group`, `@host`, …, which must be removed because identity never comes
//! from the payload) are not kept raw: the source parses them eagerly.

use bytes::Bytes;

use crate::value::Object;

pub mod tape;

pub use tape::{Items, Members, Place, Tape, TapeValue};

/// The JSON text of an event's fields; see the module docs.
#[derive(Clone, Debug)]
pub struct RawJson {
    bytes: Bytes,
    /// Byte range of the member to leave out (`@timestamp`), including one
    /// adjacent comma, so `bytes` minus this range is still a valid object.
    skip: Option<(u32, u32)>,
}

/// What [`scan`] found in a JSON object.
pub struct Scanned {
    /// The object, trimmed of surrounding whitespace.
    pub raw: RawJson,
    /// Where the `@timestamp` member's string value is in `raw`'s bytes.
    ts: Option<(usize, usize)>,
}

impl Scanned {
    /// The `@timestamp` member's string value when present.
    pub fn timestamp(&self) -> Option<&str> {
        let (a, b) = self.ts?;
        std::str::from_utf8(self.raw.bytes.get(a..b)?).ok()
    }
}

/// Validates `line` as one JSON object cheaply and returns it as raw fields.
/// `None` means "parse it eagerly instead": the line is not a valid object,
/// or holds reserved keys other than a single string `@timestamp`, or uses
/// `\u` escapes (whose surrogate rules the full parser checks), or nests
/// deeper than [`crate::json::MAX_DEPTH`], or holds a number sluice does not
/// keep as a number (`1e400`, an integer beyond 64 bits). The eager path then
/// gives the exact error, removes the reserved keys, or keeps the number's
/// text as a string.
pub fn scan(line: &Bytes) -> Option<Scanned> {
    let text: &[u8] = line;
    let start = text.iter().position(|b| !is_ws(*b))?;
    let end = text.iter().rposition(|b| !is_ws(*b))? + 1;
    let obj = &text[start..end];
    if obj.first() != Some(&b'{') || obj.last() != Some(&b'}') {
        return None;
    }
    // Outside strings only ASCII is valid JSON, so this checks every string.
    std::str::from_utf8(obj).ok()?;
    let mut v = Validator { b: obj, i: 1 };
    let mut timestamp: Option<(usize, usize)> = None;
    let mut skip = None;
    let mut prev_end = 1usize;
    v.ws();
    if v.peek() == Some(b'}') {
        v.i += 1;
    } else {
        let mut first = true;
        loop {
            if v.peek() != Some(b'"') {
                return None;
            }
            let (ks, ke, escaped) = v.string()?;
            v.ws();
            if v.peek() != Some(b':') {
                return None;
            }
            v.i += 1;
            v.ws();
            let vstart = v.i;
            v.value(1)?;
            let vend = v.i;
            let key = &obj[ks..ke];
            if !escaped && key.first() == Some(&b'@') && is_reserved(key) {
                if key != b"@timestamp" || timestamp.is_some() || obj[vstart] != b'"' {
                    return None;
                }
                if obj[vstart + 1..vend - 1].contains(&b'\\') {
                    return None;
                }
                timestamp = Some((vstart + 1, vend - 1));
                v.ws();
                skip = Some(if first {
                    // Leave out `"@timestamp":…,` up to the next member.
                    (1, if v.peek() == Some(b',') { v.i + 1 } else { vend })
                } else {
                    // Leave out `,"@timestamp":…` after the previous member.
                    (prev_end, vend)
                });
            }
            prev_end = vend;
            first = false;
            v.ws();
            match v.peek()? {
                b',' => {
                    v.i += 1;
                    v.ws();
                }
                b'}' => {
                    v.i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    if v.i != obj.len() {
        return None;
    }
    let skip = match skip {
        Some((a, b)) => Some((u32::try_from(a).ok()?, u32::try_from(b).ok()?)),
        None => None,
    };
    Some(Scanned { raw: RawJson { bytes: line.slice(start..end), skip }, ts: timestamp })
}

#[inline]
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// A mask with bit 7 of a byte set where the little-endian word `w` holds
/// `"`, `\\` or a control character (below 0x20): the bytes a JSON string
/// scan stops at. Bytes above a flagged one may be flagged wrongly (borrows
/// propagate upwards); the lowest flagged byte is always right.
#[inline(always)]
fn special_mask(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let quote = zero_byte(w ^ (ONES * u64::from(b'"')));
    let backslash = zero_byte(w ^ (ONES * u64::from(b'\\')));
    // Bytes below 0x20 (high bit clear): subtracting 0x20 borrows into bit 7.
    let control = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
    quote | backslash | control
}

fn is_reserved(key: &[u8]) -> bool {
    crate::codec::RESERVED.iter().any(|r| r.as_bytes() == key)
}

/// Containers nested below the event object at this depth or deeper are
/// left to the eager path, which refuses them: the event object plus 99
/// levels is [`crate::json::MAX_DEPTH`].
const MAX_DEPTH: usize = crate::json::MAX_DEPTH;

/// A strict JSON (RFC 8259) grammar check over bytes known to be UTF-8.
struct Validator<'a> {
    b: &'a [u8],
    i: usize,
}

impl Validator<'_> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[inline]
    fn ws(&mut self) {
        while self.i < self.b.len() && is_ws(self.b[self.i]) {
            self.i += 1;
        }
    }

    /// At an opening quote: skips the string, returning the content's range
    /// and whether it holds escapes. `\u` escapes are refused.
    #[inline(always)]
    fn string(&mut self) -> Option<(usize, usize, bool)> {
        let b = self.b;
        let start = self.i + 1;
        let mut i = start;
        let mut escaped = false;
        loop {
            // Eight bytes at a time: the lowest flagged byte is the first special one.
            if let Some(chunk) = b.get(i..i + 8) {
                let mut w = [0u8; 8];
                w.copy_from_slice(chunk);
                let m = special_mask(u64::from_le_bytes(w));
                if m == 0 {
                    i += 8;
                    continue;
                }
                i += (m.trailing_zeros() / 8) as usize;
            } else {
                while i < b.len() && !matches!(b[i], b'"' | b'\\' | 0..=0x1f) {
                    i += 1;
                }
            }
            match *b.get(i)? {
                b'"' => {
                    self.i = i + 1;
                    return Some((start, i, escaped));
                }
                b'\\' => {
                    match b.get(i + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                        _ => return None,
                    }
                    escaped = true;
                    i += 2;
                }
                _ => return None,
            }
        }
    }

    /// At `{` or `[` (nested `depth` deep): consumes it and the white space
    /// after it; `Some(true)` when `close` follows at once (the empty
    /// container, consumed too), `Some(false)` when an item follows, `None`
    /// past [`MAX_DEPTH`].
    #[inline]
    fn open(&mut self, depth: usize, close: u8) -> Option<bool> {
        if depth >= MAX_DEPTH {
            return None;
        }
        self.i += 1;
        self.ws();
        if self.peek() == Some(close) {
            self.i += 1;
            return Some(true);
        }
        Some(false)
    }

    /// After an item of an object or array: `,` and the white space after
    /// it → `Some(false)` (another item follows), `close` → `Some(true)`
    /// (the end), anything else → `None`.
    #[inline]
    fn next_item(&mut self, close: u8) -> Option<bool> {
        self.ws();
        match self.peek()? {
            b',' => {
                self.i += 1;
                self.ws();
                Some(false)
            }
            c if c == close => {
                self.i += 1;
                Some(true)
            }
            _ => None,
        }
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' => {
                let mut done = self.open(depth, b'}')?;
                while !done {
                    if self.peek() != Some(b'"') {
                        return None;
                    }
                    self.string()?;
                    self.ws();
                    if self.peek() != Some(b':') {
                        return None;
                    }
                    self.i += 1;
                    self.ws();
                    self.value(depth + 1)?;
                    done = self.next_item(b'}')?;
                }
                Some(())
            }
            b'[' => {
                let mut done = self.open(depth, b']')?;
                while !done {
                    self.value(depth + 1)?;
                    done = self.next_item(b']')?;
                }
                Some(())
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            Some(())
        } else {
            None
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.i < self.b.len() && self.b[self.i].is_ascii_digit() {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Option<()> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        let int_digits = match self.peek()? {
            b'0' => {
                self.i += 1;
                1
            }
            b'1'..=b'9' => self.digits(),
            _ => return None,
        };
        let mut exponent = false;
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            exponent = true;
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        // Only long integers and exponents can leave the range sluice holds
        // numbers in (`crate::json`); those go to the eager path, which
        // keeps them as strings.
        if (exponent || int_digits >= 19) && !crate::json::number_is_representable(&self.b[start..self.i]) {
            return None;
        }
        Some(())
    }
}

impl RawJson {
    /// Raw fields from their parts, as [`RawJson::parts`] returns them (the
    /// queue decoder). The bytes are trusted to be what a scan produced.
    pub fn from_parts(bytes: Bytes, skip: Option<(u32, u32)>) -> Option<Self> {
        if bytes.len() < 2 {
            return None;
        }
        match skip {
            Some((a, b)) if a < 1 || a > b || b as usize > bytes.len() - 1 => None,
            _ => Some(Self { bytes, skip }),
        }
    }

    /// The object text and the skipped range.
    pub fn parts(&self) -> (&Bytes, Option<(u32, u32)>) {
        (&self.bytes, self.skip)
    }

    /// Parses the fields (the skipped member left out).
    pub fn parse(&self) -> Object {
        match sonic_rs::from_slice::<Object>(&self.bytes) {
            Ok(mut o) => {
                if self.skip.is_some() {
                    o.remove("@timestamp");
                }
                o
            }
            Err(_) => {
                // A scan validated these bytes, so this is unreachable short of
                // a bug; keep the text rather than lose it.
                let mut o = Object::with_capacity(2);
                o.insert(crate::event::MESSAGE, String::from_utf8_lossy(&self.bytes).as_ref());
                o.insert(crate::event::TAGS, crate::Value::Array(vec!["_jsonparsefailure".into()]));
                o
            }
        }
    }

    /// Appends the members (without the braces, without the skipped one),
    /// each preceded by a comma, to `out`: what follows the `@` keys in the
    /// ndjson output.
    pub fn write_members(&self, out: &mut Vec<u8>) {
        let b: &[u8] = &self.bytes;
        let inner_end = b.len() - 1;
        let (first, second): (&[u8], &[u8]) = match self.skip {
            Some((a, z)) => (&b[1..a as usize], &b[(z as usize).min(inner_end)..inner_end]),
            None => (&b[1..inner_end], &[]),
        };
        if first.iter().chain(second).any(|c| !c.is_ascii_whitespace()) {
            out.push(b',');
            out.extend_from_slice(first);
            out.extend_from_slice(second);
        }
    }

    /// Size of the JSON text in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Never true: an object has at least its braces.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Value;

    fn members(raw: &RawJson) -> String {
        let mut out = Vec::new();
        raw.write_members(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn keeps_valid_objects_and_leaves_out_the_timestamp() {
        let cases = [
            (r#"{"a":1,"b":"x"}"#, None, r#","a":1,"b":"x""#),
            (r#" {"@timestamp":"2016-05-18T08:44:34.737Z","a":1} "#, Some("2016-05-18T08:44:34.737Z"), r#","a":1"#),
            (r#"{"a":1, "@timestamp" : "t" ,"b":[1,{"c":null}]}"#, Some("t"), r#","a":1 ,"b":[1,{"c":null}]"#),
            (r#"{"a":1,"@timestamp":"t"}"#, Some("t"), r#","a":1"#),
            (r#"{"@timestamp":"t"}"#, Some("t"), ""),
            ("{}", None, ""),
            (
                r#"{"@version":"1","x":"é\"q\n","n":[-0.5e+3,0,1E2,true,false,null,{}]}"#,
                None,
                r#","@version":"1","x":"é\"q\n","n":[-0.5e+3,0,1E2,true,false,null,{}]"#,
            ),
        ];
        for (text, ts, out) in cases {
            let s = scan(&Bytes::from(text)).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(s.timestamp(), ts, "{text}");
            assert_eq!(members(&s.raw), out, "{text}");
            // The members form a valid object that parses to the same fields.
            let rebuilt = format!("{{{}}}", out.strip_prefix(',').unwrap_or(out));
            let parsed = Value::from_json(rebuilt.as_bytes()).unwrap();
            assert_eq!(parsed.as_object().unwrap(), &s.raw.parse(), "{text}");
        }
    }

    #[test]
    fn string_scan_finds_specials_at_every_offset() {
        for len in 0..40 {
            for at in 0..len {
                for (special, ok) in [("\\\"", true), ("\\n", true), ("\t", false), ("\\x", false), ("\u{1}", false)] {
                    let mut body: String = "a".repeat(len);
                    body.replace_range(at..at + 1, special);
                    let text = format!(r#"{{"k":"{body}","z":1}}"#);
                    let eager = crate::codec::event_from_json(text.as_bytes()).is_ok();
                    assert_eq!(eager, ok, "{text:?}");
                    assert_eq!(scan(&Bytes::from(text.clone())).is_some(), ok, "{text:?}");
                }
            }
        }
    }

    #[test]
    fn refuses_what_the_eager_path_must_handle() {
        for text in [
            "",
            "   ",
            "[1,2]",
            "\"s\"",
            "{",
            r#"{"a":1"#,
            r#"{"a":1}}"#,
            r#"{"a":1} x"#,
            r#"{"a":}"#,
            r#"{"a":tru}"#,
            r#"{"a":"\x"}"#,
            r#"{"a":1,}"#,
            r#"{"@group":"g"}"#,
            r#"{"@host":"h","a":1}"#,
            r#"{"@timestamp":1}"#,
            r#"{"@timestamp":"a","@timestamp":"b"}"#,
            r#"{"a":"\u00e9"}"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":-}"#,
            r#"{"a":1e}"#,
            r#"{"a":[1 2]}"#,
            r#"{"a":[1,]}"#,
            r#"{"a":[,1]}"#,
            r#"{"a":[1}"#,
            r#"{"a":{"b":1,}}"#,
            r#"{"a":{"b":1]}"#,
            r#"{"a" 1}"#,
            r#"{a:1}"#,
            "{\"a\":\"tab\there\"}",
            r#"{"a":nul}"#,
            r#"{"message":"p","a":1e400}"#,
            r#"{"a":[-1e400]}"#,
            r#"{"a":1e99999}"#,
            r#"{"a":18446744073709551616}"#,
            r#"{"a":-9223372036854775809}"#,
            r#"{"a":123456789012345678901234567890}"#,
        ] {
            assert!(scan(&Bytes::from(text)).is_none(), "{text:?} was accepted");
        }
        assert!(scan(&Bytes::from(&b"{\"a\":\"\xff\"}"[..])).is_none(), "invalid utf-8 accepted");
        // Nesting: up to the limit is accepted, one level more is not.
        let nested = |n: usize| format!("{{\"a\":{}1{}}}", "[".repeat(n), "]".repeat(n));
        assert!(scan(&Bytes::from(nested(MAX_DEPTH - 1))).is_some(), "nesting at the limit refused");
        assert!(scan(&Bytes::from(nested(MAX_DEPTH))).is_none(), "nesting past the limit accepted");
        assert!(
            scan(&Bytes::from(r#"{"a":{ },"b":[ ],"c":[{"d":[1, 2]} , {}]}"#)).is_some(),
            "empty containers refused"
        );
    }
}
