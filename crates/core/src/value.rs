//! The JSON value type of event fields.
//!
//! Why not `serde_json::Value` or `sonic_rs::Value`: measured here, building
//! and mutating events dominated the cost of parsing. `serde_json` allocates a
//! `String` per string and a B-tree node per few keys; `sonic_rs::Value` parses
//! into an arena but turns an object into a hash map (re-allocating every key)
//! on its first mutation — inserting a dozen grok captures cost ≈ 5 µs per
//! event. This type keeps objects as a small vector of pairs (insertion order
//! preserved, linear lookup — events have tens of keys, not thousands) and
//! strings as `CompactString` (up to 24 bytes inline, no allocation). Parsing
//! still uses sonic-rs's SIMD deserializer through serde.

use std::fmt;

use compact_str::CompactString;

use crate::text::Text;
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A string stored inline when short (object keys; [`Text`] for values).
pub type Str = CompactString;

/// A JSON value.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Value {
    /// `null`.
    #[default]
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer that fits in `i64`.
    Int(i64),
    /// Any other number.
    Float(f64),
    /// A string: owned, or a slice of a shared line ([`Text`]).
    String(Text),
    /// An array.
    Array(Vec<Value>),
    /// An object.
    Object(Object),
}

/// A JSON object: key/value pairs in insertion order, unique keys.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Object(Vec<(Str, Value)>);

impl Value {
    /// The string, if this is one.
    #[inline]
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s.as_str()),
            _ => None,
        }
    }
    /// The integer, if this is one (or a float with an exact integer value).
    #[inline]
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Float(f) if f.fract() == 0.0 && *f >= i64::MIN as f64 && *f <= i64::MAX as f64 => Some(*f as i64),
            _ => None,
        }
    }
    /// The integer, if this is a non-negative integer.
    #[inline]
    pub fn as_u64(&self) -> Option<u64> {
        self.as_i64().and_then(|i| u64::try_from(i).ok())
    }
    /// The number as `f64`, if this is a number.
    #[inline]
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }
    /// The boolean, if this is one.
    #[inline]
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
    /// The array, if this is one.
    #[inline]
    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
    /// The array, mutably.
    #[inline]
    pub fn as_array_mut(&mut self) -> Option<&mut Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
    /// The object, if this is one.
    #[inline]
    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }
    /// The object, mutably.
    #[inline]
    pub fn as_object_mut(&mut self) -> Option<&mut Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }
    /// The value at `key` when this is an object.
    pub fn get<Q: AsRef<str> + ?Sized>(&self, key: &Q) -> Option<&Value> {
        self.as_object()?.get(key)
    }
    /// Takes the object out.
    pub fn into_object(self) -> Option<Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }
    /// Takes the array out.
    pub fn into_array(self) -> Option<Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
    /// `null`?
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
    /// An array?
    pub fn is_array(&self) -> bool {
        matches!(self, Value::Array(_))
    }
    /// An object?
    pub fn is_object(&self) -> bool {
        matches!(self, Value::Object(_))
    }
    /// A string?
    pub fn is_str(&self) -> bool {
        matches!(self, Value::String(_))
    }
    /// A number?
    pub fn is_number(&self) -> bool {
        matches!(self, Value::Int(_) | Value::Float(_))
    }
    /// A float value, `None` for NaN and infinities (not representable in JSON).
    pub fn new_f64(f: f64) -> Option<Value> {
        f.is_finite().then_some(Value::Float(f))
    }
    /// The JSON type name (`null`, `boolean`, `number`, `string`, `array`, `object`).
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) | Value::Float(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
    /// Parses JSON text.
    pub fn from_json(bytes: &[u8]) -> Result<Value, sonic_rs::Error> {
        sonic_rs::from_slice(bytes)
    }
    /// Serialises to a JSON string.
    pub fn to_json(&self) -> String {
        let mut out = Vec::new();
        self.write_json(&mut out);
        String::from_utf8(out).unwrap_or_default()
    }
    /// Appends this value as JSON to `out`.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Value::Null => out.extend_from_slice(b"null"),
            Value::Bool(true) => out.extend_from_slice(b"true"),
            Value::Bool(false) => out.extend_from_slice(b"false"),
            Value::Int(i) => out.extend_from_slice(itoa_buf(*i).as_bytes()),
            Value::Float(f) => {
                if f.is_finite() {
                    let _ = sonic_rs::to_writer(&mut *out, f);
                } else {
                    out.extend_from_slice(b"null");
                }
            }
            Value::String(s) => write_json_str(out, s.as_str()),
            Value::Array(a) => {
                out.push(b'[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    v.write_json(out);
                }
                out.push(b']');
            }
            Value::Object(o) => {
                out.push(b'{');
                for (i, (k, v)) in o.0.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write_json_str(out, k);
                    out.push(b':');
                    v.write_json(out);
                }
                out.push(b'}');
            }
        }
    }
}

fn itoa_buf(i: i64) -> String {
    i.to_string()
}

/// Appends `s` as a JSON string literal.
pub fn write_json_str(out: &mut Vec<u8>, s: &str) {
    // Fast path: nothing to escape.
    if !s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        return;
    }
    let _ = sonic_rs::to_writer(&mut *out, s);
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::String(s) => f.write_str(s),
            other => f.write_str(&other.to_json()),
        }
    }
}

impl Object {
    /// An empty object.
    pub fn new() -> Self {
        Self(Vec::new())
    }
    /// An empty object with room for `n` keys.
    pub fn with_capacity(n: usize) -> Self {
        Self(Vec::with_capacity(n))
    }
    #[inline]
    fn position(&self, key: &str) -> Option<usize> {
        self.0.iter().position(|(k, _)| k.as_str() == key)
    }
    /// The value at `key`.
    #[inline]
    pub fn get<Q: AsRef<str> + ?Sized>(&self, key: &Q) -> Option<&Value> {
        let key = key.as_ref();
        self.0.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
    }
    /// The value at `key`, mutably.
    #[inline]
    pub fn get_mut<Q: AsRef<str> + ?Sized>(&mut self, key: &Q) -> Option<&mut Value> {
        let key = key.as_ref();
        self.0.iter_mut().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
    }
    /// Whether `key` is present.
    pub fn contains_key<Q: AsRef<str> + ?Sized>(&self, key: &Q) -> bool {
        self.position(key.as_ref()).is_some()
    }
    /// Sets `key`, returning the previous value. New keys go last.
    pub fn insert<K: AsRef<str> + ?Sized, V: Into<Value>>(&mut self, key: &K, value: V) -> Option<Value> {
        let key = key.as_ref();
        match self.position(key) {
            Some(i) => Some(std::mem::replace(&mut self.0[i].1, value.into())),
            None => {
                self.0.push((Str::new(key), value.into()));
                None
            }
        }
    }
    /// Makes room for `n` more keys.
    pub fn reserve(&mut self, n: usize) {
        self.0.reserve(n);
    }
    /// Appends a key known to be absent (parsers building fresh objects).
    // Inlined: called out of line, the pair travels through the stack and
    // its reload stalls on store forwarding (8 % of the grok case's CPU,
    // docs/benchmarks/journal.md 2026-11-27).
    #[inline(always)]
    pub fn push_unique(&mut self, key: Str, value: Value) {
        self.0.push((key, value));
    }
    /// The value at `key`, inserted with `default()` if absent.
    pub fn get_or_insert_with<K: AsRef<str> + ?Sized>(
        &mut self,
        key: &K,
        default: impl FnOnce() -> Value,
    ) -> &mut Value {
        let key = key.as_ref();
        let i = match self.position(key) {
            Some(i) => i,
            None => {
                self.0.push((Str::new(key), default()));
                self.0.len() - 1
            }
        };
        &mut self.0[i].1
    }
    /// Removes `key`, keeping the order of the others.
    pub fn remove<Q: AsRef<str> + ?Sized>(&mut self, key: &Q) -> Option<Value> {
        let i = self.position(key.as_ref())?;
        Some(self.0.remove(i).1)
    }
    /// Number of keys.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// No keys?
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Pairs in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }
    /// Pairs in order, values mutable.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&str, &mut Value)> {
        self.0.iter_mut().map(|(k, v)| (k.as_str(), v))
    }
    /// Keeps the pairs for which `f` is true.
    pub fn retain(&mut self, mut f: impl FnMut(&str, &mut Value) -> bool) {
        self.0.retain_mut(|(k, v)| f(k, v));
    }
    /// Wraps into a [`Value`].
    pub fn into_value(self) -> Value {
        Value::Object(self)
    }
}

impl IntoIterator for Object {
    type Item = (Str, Value);
    type IntoIter = std::vec::IntoIter<(Str, Value)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl FromIterator<(Str, Value)> for Object {
    fn from_iter<T: IntoIterator<Item = (Str, Value)>>(iter: T) -> Self {
        let mut o = Object::new();
        for (k, v) in iter {
            o.insert(&k, v);
        }
        o
    }
}

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Self { Value::Int(v as i64) }
        }
    )*};
}
from_int!(i8, i16, i32, i64, u8, u16, u32, isize);

impl From<u64> for Value {
    fn from(v: u64) -> Self {
        i64::try_from(v).map(Value::Int).unwrap_or(Value::Float(v as f64))
    }
}
impl From<usize> for Value {
    fn from(v: usize) -> Self {
        Value::from(v as u64)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::new_f64(v).unwrap_or(Value::Null)
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::String(Text::new(v))
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::String(Text::from(v))
    }
}
impl From<Str> for Value {
    fn from(v: Str) -> Self {
        Value::String(Text::from(v))
    }
}
impl From<Text> for Value {
    fn from(v: Text) -> Self {
        Value::String(v)
    }
}
impl From<Object> for Value {
    fn from(v: Object) -> Self {
        Value::Object(v)
    }
}
impl From<Vec<Value>> for Value {
    fn from(v: Vec<Value>) -> Self {
        Value::Array(v)
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(i) => s.serialize_i64(*i),
            Value::Float(f) => s.serialize_f64(*f),
            Value::String(v) => s.serialize_str(v),
            Value::Array(a) => {
                let mut seq = s.serialize_seq(Some(a.len()))?;
                for v in a {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Value::Object(o) => o.serialize(s),
        }
    }
}

impl Serialize for Object {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k.as_str(), v)?;
        }
        m.end()
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(Text::new(v)))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Value, E> {
        Ok(Value::String(Text::new(v)))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(Text::from(v)))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(x) = seq.next_element()? {
            v.push(x);
        }
        Ok(Value::Array(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
        ObjectVisitor.visit_map(map).map(Value::Object)
    }
}

struct ObjectVisitor;

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = Object;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Object, A::Error> {
        let mut o = Object::with_capacity(map.size_hint().unwrap_or(16).min(256));
        // Duplicate keys: the last one wins, as in most JSON parsers. A 64-bit
        // signature of (length, first and last byte) skips the linear search
        // for keys that cannot have been seen (almost all of them).
        let mut seen: u64 = 0;
        while let Some(k) = map.next_key::<KeyStr>()? {
            let v: Value = map.next_value()?;
            let bytes = k.0.as_bytes();
            let sig = 1u64
                << ((bytes.len() as u64)
                    .wrapping_mul(31)
                    .wrapping_add(u64::from(bytes.first().copied().unwrap_or(0)))
                    .wrapping_add(u64::from(bytes.last().copied().unwrap_or(0)) << 3)
                    & 63);
            if seen & sig != 0 {
                if let Some(i) = o.position(&k.0) {
                    o.0[i].1 = v;
                    continue;
                }
            }
            seen |= sig;
            o.0.push((k.0, v));
        }
        Ok(o)
    }
}

struct KeyStr(Str);

impl<'de> Deserialize<'de> for KeyStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KV;
        impl<'de> Visitor<'de> for KV {
            type Value = KeyStr;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_str<E>(self, v: &str) -> Result<KeyStr, E> {
                Ok(KeyStr(Str::new(v)))
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<KeyStr, E> {
                Ok(KeyStr(Str::new(v)))
            }
            fn visit_string<E>(self, v: String) -> Result<KeyStr, E> {
                Ok(KeyStr(Str::from(v)))
            }
        }
        d.deserialize_str(KV)
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

impl<'de> Deserialize<'de> for Object {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ObjectVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_keeps_order_and_types() {
        let text = r#"{"z":1,"a":"x","n":null,"f":1.5,"b":true,"arr":[1,"two",{"k":[]}],"big":18446744073709551615,"esc":"q\"\n"}"#;
        let v = Value::from_json(text.as_bytes()).unwrap();
        let o = v.as_object().unwrap();
        assert_eq!(o.iter().map(|(k, _)| k).collect::<Vec<_>>(), ["z", "a", "n", "f", "b", "arr", "big", "esc"]);
        assert_eq!(o.get("z").and_then(Value::as_i64), Some(1));
        assert_eq!(o.get("big").and_then(Value::as_f64), Some(18446744073709551615.0));
        let back = v.to_json();
        assert_eq!(Value::from_json(back.as_bytes()).unwrap(), v);
        assert!(back.starts_with(r#"{"z":1,"a":"x","n":null,"f":1.5,"b":true,"arr":[1,"two",{"k":[]}]"#), "{back}");
        assert_eq!(sonic_rs::to_string(&v).unwrap(), back);
    }

    #[test]
    fn shared_strings_keep_the_value_size() {
        // `Text` is 32 bytes; the enum packs its tag into `Text`'s niche.
        assert_eq!(std::mem::size_of::<Value>(), 32);
    }

    #[test]
    fn object_ops() {
        let mut o = Object::new();
        assert!(o.insert("a", 1).is_none());
        assert_eq!(o.insert("a", 2), Some(Value::Int(1)));
        o.insert("b", "s");
        assert_eq!(o.remove("a"), Some(Value::Int(2)));
        assert_eq!(o.len(), 1);
        *o.get_or_insert_with("c", || Value::Array(vec![])) = Value::Bool(true);
        assert_eq!(o.get("c"), Some(&Value::Bool(true)));
        let dup = Value::from_json(br#"{"a":1,"a":2}"#).unwrap();
        assert_eq!(dup.as_object().unwrap().len(), 1);
    }
}
