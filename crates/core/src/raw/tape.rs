//! A JSON object's members as a flat list ("tape"), for a reader that walks
//! every value of an event once without changing it: the store's indexer.
//!
//! Why: parsing an event into an [`crate::Object`] costs an allocation per
//! object, array and long string, and freeing them again; for the store,
//! which only reads each value once on its way into the index, that was ≈ 12 %
//! of indexing's CPU (docs/benchmarks/journal.md, 2026-11-27 night). A
//! [`Tape`] is one `Vec` of fixed-size nodes over the JSON text it was built
//! from, which it owns: strings are slices of that text (unescaped copies only
//! where the text has escapes), numbers are decoded while building.
//!
//! [`Tape::build`] accepts exactly what the raw scan ([`super::scan`]) does —
//! strict RFC 8259, no `\u` escapes, nesting within [`crate::json::MAX_DEPTH`],
//! numbers sluice keeps as numbers — and in addition refuses an object with a
//! duplicate key (where [`crate::Object`] keeps the last value). When it
//! refuses, the caller parses the event as usual: the tape is a shortcut,
//! never a second definition of an event. Values read the same as from the
//! parsed object (integers as their `f64`, as the store indexes them).

use super::{is_ws, Validator};

/// Node kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Null,
    False,
    True,
    Number,
    Str,
    Array,
    Object,
}

/// Where a string is: `text[start..end]`, or `unescaped[start..end]` when
/// [`Span::ESCAPED`] is set in `start`.
#[derive(Clone, Copy, Debug, Default)]
struct Span {
    start: u32,
    end: u32,
}

impl Span {
    const ESCAPED: u32 = 1 << 31;
}

/// One value, with the key it has in its object (an empty span in arrays).
#[derive(Clone, Copy, Debug)]
struct Node {
    key: Span,
    /// A string's span, or a number's `f64` bits.
    val: u64,
    /// The index of the first node after this value (its contents included).
    end: u32,
    kind: Kind,
}

/// A JSON object's members as a flat list of nodes; see the module docs.
#[derive(Clone, Debug)]
pub struct Tape {
    text: String,
    /// Strings that had escapes, unescaped.
    unescaped: String,
    /// `nodes[0]` is the object itself.
    nodes: Vec<Node>,
}

/// A value read from a [`Tape`].
#[derive(Clone, Debug)]
pub enum TapeValue<'a> {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number (an integer as its nearest `f64`).
    Number(f64),
    /// A string.
    Str(&'a str),
    /// An array's items.
    Array(Items<'a>),
    /// An object's members.
    Object(Members<'a>),
}

/// The members of an object on a [`Tape`], in the text's order.
#[derive(Clone, Debug)]
pub struct Members<'a> {
    tape: &'a Tape,
    at: u32,
    end: u32,
}

/// Where a member is on its [`Tape`]: [`Tape::at`] reads it again without a search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place(u32);

/// The items of an array on a [`Tape`].
#[derive(Clone, Debug)]
pub struct Items<'a> {
    tape: &'a Tape,
    at: u32,
    end: u32,
}

impl Tape {
    /// The tape of the JSON object `text` (white space around it allowed);
    /// `Err(text)` gives the text back when it is not an object the tape
    /// takes (see the module docs).
    pub fn build(text: String) -> Result<Tape, String> {
        let mut tape = Tape { text, unescaped: String::new(), nodes: Vec::new() };
        match tape.fill() {
            Some(()) => Ok(tape),
            None => Err(tape.text),
        }
    }

    fn fill(&mut self) -> Option<()> {
        let text = std::mem::take(&mut self.text);
        let r = (|| {
            let b = text.as_bytes();
            u32::try_from(b.len()).ok().filter(|n| n & Span::ESCAPED == 0)?;
            let start = b.iter().position(|c| !is_ws(*c))?;
            if b[start] != b'{' {
                return None;
            }
            self.nodes.reserve(b.len() / 24 + 4);
            let mut v = Validator { b, i: start };
            self.value(&text, &mut v, Span::default(), 0)?;
            v.ws();
            (v.i == b.len()).then_some(())
        })();
        self.text = text;
        r
    }

    /// Appends the value at `v` (and its contents) as nodes.
    fn value(&mut self, text: &str, v: &mut Validator<'_>, key: Span, depth: usize) -> Option<()> {
        let at = self.nodes.len();
        let mut node = Node { key, val: 0, end: 0, kind: Kind::Null };
        match v.peek()? {
            b'"' => {
                node.kind = Kind::Str;
                node.val = self.string(text, v).map(pack)?;
            }
            b'{' => {
                node.kind = Kind::Object;
                self.nodes.push(node);
                let mut done = v.open(depth, b'}')?;
                // Keys seen, by a 64-bit signature of (length, first and last
                // byte): only a collision searches the members for a duplicate.
                let mut seen = 0u64;
                while !done {
                    if v.peek() != Some(b'"') {
                        return None;
                    }
                    let key = self.string(text, v)?;
                    let k = self.str_at(text, key);
                    let sig = signature(k);
                    if seen & sig != 0 && self.has_key(text, at, k) {
                        return None;
                    }
                    seen |= sig;
                    v.ws();
                    if v.peek() != Some(b':') {
                        return None;
                    }
                    v.i += 1;
                    v.ws();
                    self.value(text, v, key, depth + 1)?;
                    done = v.next_item(b'}')?;
                }
                self.nodes[at].end = u32::try_from(self.nodes.len()).ok()?;
                return Some(());
            }
            b'[' => {
                node.kind = Kind::Array;
                self.nodes.push(node);
                let mut done = v.open(depth, b']')?;
                while !done {
                    self.value(text, v, Span::default(), depth + 1)?;
                    done = v.next_item(b']')?;
                }
                self.nodes[at].end = u32::try_from(self.nodes.len()).ok()?;
                return Some(());
            }
            b't' => {
                v.literal(b"true")?;
                node.kind = Kind::True;
            }
            b'f' => {
                v.literal(b"false")?;
                node.kind = Kind::False;
            }
            b'n' => v.literal(b"null")?,
            b'-' | b'0'..=b'9' => {
                let start = v.i;
                v.number()?;
                node.kind = Kind::Number;
                node.val = number(text.get(start..v.i)?)?.to_bits();
            }
            _ => return None,
        }
        node.end = u32::try_from(at + 1).ok()?;
        self.nodes.push(node);
        Some(())
    }

    /// At an opening quote: the string's span, unescaped into
    /// `self.unescaped` when it has escapes.
    #[inline]
    fn string(&mut self, text: &str, v: &mut Validator<'_>) -> Option<Span> {
        let (start, end, escaped) = v.string()?;
        if !escaped {
            return Some(Span { start: start as u32, end: end as u32 });
        }
        self.unescape(text, start, end)
    }

    /// `text[start..end]`, a string's content with escapes, unescaped into `self.unescaped`.
    #[cold]
    fn unescape(&mut self, text: &str, start: usize, end: usize) -> Option<Span> {
        let from = self.unescaped.len();
        let raw = text.get(start..end)?;
        let mut rest = raw;
        while let Some(i) = rest.find('\\') {
            self.unescaped.push_str(&rest[..i]);
            let c = match rest.as_bytes().get(i + 1)? {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                // `\u` is refused by the scan above; nothing else is JSON.
                _ => return None,
            };
            self.unescaped.push(c);
            rest = &rest[i + 2..];
        }
        self.unescaped.push_str(rest);
        let to = u32::try_from(self.unescaped.len()).ok().filter(|n| n & Span::ESCAPED == 0)?;
        Some(Span { start: from as u32 | Span::ESCAPED, end: to })
    }

    #[inline]
    fn str_at<'a>(&'a self, text: &'a str, s: Span) -> &'a str {
        let (a, b) = ((s.start & !Span::ESCAPED) as usize, s.end as usize);
        let whole = if s.start & Span::ESCAPED != 0 { self.unescaped.as_str() } else { text };
        // Spans are made from `&str` slices at quotes (char boundaries).
        whole.get(a..b).unwrap_or_default()
    }

    /// Whether the object node `at`, while it is being built, has the key `k` already.
    fn has_key(&self, text: &str, at: usize, k: &str) -> bool {
        // Node indices fit in u32: the text is shorter than 2^31 bytes.
        let mut i = at as u32 + 1;
        while let Some((_, n)) = self.step(&mut i, u32::MAX) {
            let len = n.key.end.wrapping_sub(n.key.start & !Span::ESCAPED) as usize;
            if len == k.len() && self.str_at(text, n.key) == k {
                return true;
            }
        }
        false
    }

    /// The JSON text the tape was built from.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Gives the JSON text back.
    pub fn into_text(self) -> String {
        self.text
    }

    /// The object's members.
    pub fn members(&self) -> Members<'_> {
        Members { tape: self, at: 1, end: self.nodes.first().map_or(1, |n| n.end) }
    }

    /// The value of the object's member `key`.
    pub fn get(&self, key: &str) -> Option<TapeValue<'_>> {
        self.members().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The node at `*at` when it is before `end`, with its index; moves `*at`
    /// past it and its contents (to its next sibling).
    #[inline]
    fn step(&self, at: &mut u32, end: u32) -> Option<(u32, &Node)> {
        if *at >= end {
            return None;
        }
        let here = *at;
        let n = self.nodes.get(here as usize)?;
        *at = n.end.max(here + 1);
        Some((here, n))
    }

    /// The value of the member at `place` (from [`Members::with_places`] on this tape).
    #[inline]
    pub fn at(&self, place: Place) -> TapeValue<'_> {
        self.read(place.0)
    }

    #[inline]
    fn read(&self, at: u32) -> TapeValue<'_> {
        let Some(n) = self.nodes.get(at as usize) else { return TapeValue::Null };
        match n.kind {
            Kind::Null => TapeValue::Null,
            Kind::False => TapeValue::Bool(false),
            Kind::True => TapeValue::Bool(true),
            Kind::Number => TapeValue::Number(f64::from_bits(n.val)),
            Kind::Str => TapeValue::Str(self.str_at(&self.text, unpack(n.val))),
            Kind::Array => TapeValue::Array(Items { tape: self, at: at + 1, end: n.end }),
            Kind::Object => TapeValue::Object(Members { tape: self, at: at + 1, end: n.end }),
        }
    }
}

impl<'a> Members<'a> {
    /// The members with their places.
    pub fn with_places(self) -> impl Iterator<Item = (Place, &'a str, TapeValue<'a>)> + 'a {
        let mut m = self;
        std::iter::from_fn(move || {
            let place = Place(m.at);
            m.next().map(|(k, v)| (place, k, v))
        })
    }
}

impl<'a> Iterator for Members<'a> {
    type Item = (&'a str, TapeValue<'a>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let (here, n) = self.tape.step(&mut self.at, self.end)?;
        Some((self.tape.str_at(&self.tape.text, n.key), self.tape.read(here)))
    }
}

impl<'a> Iterator for Items<'a> {
    type Item = TapeValue<'a>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let (here, _) = self.tape.step(&mut self.at, self.end)?;
        Some(self.tape.read(here))
    }
}

fn pack(s: Span) -> u64 {
    u64::from(s.start) << 32 | u64::from(s.end)
}

fn unpack(v: u64) -> Span {
    Span { start: (v >> 32) as u32, end: v as u32 }
}

/// One bit of 64 for a key, from its length and first and last byte (as
/// [`crate::Object`]'s parser does).
#[inline]
fn signature(k: &str) -> u64 {
    let b = k.as_bytes();
    1u64 << ((b.len() as u64)
        .wrapping_mul(31)
        .wrapping_add(u64::from(b.first().copied().unwrap_or(0)))
        .wrapping_add(u64::from(b.last().copied().unwrap_or(0)) << 3)
        & 63)
}

/// A number literal the scan accepted, as the parsed object holds it read
/// as `f64`: an integer that fits 64 bits via the integer, any other number
/// as a double.
fn number(lit: &str) -> Option<f64> {
    if !lit.bytes().any(|c| matches!(c, b'.' | b'e' | b'E')) {
        if let Ok(i) = lit.parse::<i64>() {
            return Some(i as f64);
        }
        if let Ok(u) = lit.parse::<u64>() {
            return Some(u as f64);
        }
    }
    lit.parse::<f64>().ok().filter(|x| x.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Object, Value};

    /// The tape's members as an [`Object`], integers as `f64` (as the store reads them).
    fn to_object(m: Members<'_>) -> Object {
        let mut o = Object::default();
        for (k, v) in m {
            o.insert(k, to_value(v));
        }
        o
    }

    fn to_value(v: TapeValue<'_>) -> Value {
        match v {
            TapeValue::Null => Value::Null,
            TapeValue::Bool(b) => Value::Bool(b),
            TapeValue::Number(x) => Value::Float(x),
            TapeValue::Str(s) => Value::from(s),
            TapeValue::Array(items) => Value::Array(items.map(to_value).collect()),
            TapeValue::Object(m) => Value::Object(to_object(m)),
        }
    }

    /// The parsed object with integers as `f64`.
    fn floats(v: &Value) -> Value {
        match v {
            Value::Int(i) => Value::Float(*i as f64),
            Value::Array(a) => Value::Array(a.iter().map(floats).collect()),
            Value::Object(o) => {
                Value::Object(o.iter().map(|(k, v)| (k, floats(v))).fold(Object::default(), |mut acc, (k, v)| {
                    acc.insert(k, v);
                    acc
                }))
            }
            other => other.clone(),
        }
    }

    #[test]
    fn reads_what_the_parser_reads() {
        let cases = [
            r#"{"message":"2016-05-18 10:44:30:045 INFO LogGenerator run This is lognumber 1","@version":"1","@timestamp":"2016-05-18T08:44:34.737Z","source":"/home/kakor/log.log","offset":0,"type":"log","input_type":"log","beat":{"hostname":"ubuntu-1","name":"ubuntu-1"},"count":1,"fields":null,"host":"ubuntu-1","tags":["beats_input_codec_plain_applied"],"creation":"2016-05-18 10:44:30:045","logcount":"1"}"#,
            r#"{}"#,
            r#"  {"a" : 1 , "b":[ ]}  "#,
            r#"{"x":"é\"q\n\\/\t\b\f\r","k\"ey":{"n":[-0.5e+3,0,1E2,true,false,null,{},[]]}}"#,
            r#"{"big":18446744073709551615,"neg":-9223372036854775808,"f":1.7976931348623157e308,"tiny":5e-324}"#,
            r#"{"deep":{"a":{"b":{"c":[1,[2,[3,{"d":"e"}]]]}}},"after":"z"}"#,
        ];
        for text in cases {
            let tape = Tape::build(text.to_string()).unwrap_or_else(|t| panic!("refused {t}"));
            let parsed = Value::from_json(text.as_bytes()).unwrap();
            assert_eq!(Value::Object(to_object(tape.members())), floats(&parsed), "{text}");
            assert_eq!(tape.text(), text);
        }
    }

    #[test]
    fn get_finds_top_level_members_only() {
        let tape = Tape::build(r#"{"a":{"message":"inner"},"message":"outer\n","n":404}"#.to_string()).unwrap();
        assert!(matches!(tape.get("message"), Some(TapeValue::Str("outer\n"))));
        assert!(matches!(tape.get("n"), Some(TapeValue::Number(x)) if x == 404.0));
        assert!(tape.get("missing").is_none());
        assert_eq!(tape.members().count(), 3);
        let places: Vec<_> = tape.members().with_places().map(|(p, k, _)| (p, k)).collect();
        assert_eq!(places.iter().map(|(_, k)| *k).collect::<Vec<_>>(), ["a", "message", "n"]);
        assert!(matches!(tape.at(places[1].0), TapeValue::Str("outer\n")));
        assert!(matches!(tape.at(places[0].0), TapeValue::Object(m) if m.clone().count() == 1));
    }

    #[test]
    fn refuses_what_it_does_not_take_and_gives_the_text_back() {
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(100), "]".repeat(100));
        for text in [
            "",
            "[1]",
            r#"{"a":1,"a":2}"#,
            r#"{"o":{"k":1,"j":2,"k":3}}"#,
            r#"{"a":"\u0041"}"#,
            r#"{"a":1e400}"#,
            r#"{"a":123456789012345678901234567890}"#,
            r#"{"a":1,}"#,
            r#"{"a":1} x"#,
            r#"{"a":01}"#,
            r#"{"a":"tab	inside"}"#,
            deep.as_str(),
        ] {
            assert_eq!(Tape::build(text.to_string()).err().as_deref(), Some(text), "{text}");
            // Everything but a duplicate key is what the scan refuses too.
            if !text.contains(r#""a":2"#) && !text.contains(r#""k":3"#) {
                assert!(crate::raw::scan(&bytes::Bytes::from(text.to_string())).is_none(), "{text}");
            }
        }
        // 99 levels below the event object are taken, as by the scan.
        let ok = format!("{{\"a\":{}1{}}}", "[".repeat(99), "]".repeat(99));
        assert!(crate::raw::scan(&bytes::Bytes::from(ok.clone())).is_some());
        assert!(Tape::build(ok).is_ok());
    }

    #[test]
    fn keys_colliding_in_the_signature_are_not_duplicates() {
        // Same length, first and last byte: same signature, different keys.
        let tape = Tape::build(r#"{"axb":1,"ayb":2,"azb":{"axb":3}}"#.to_string()).unwrap();
        let keys: Vec<&str> = tape.members().map(|(k, _)| k).collect();
        assert_eq!(keys, ["axb", "ayb", "azb"]);
    }
}
